"""The width demo: under μP, how does the best AdamW weight decay move with width, with and without the callback?

Wang & Aitchison (ICML 2025, Sec. 4.2) show their width claim by sweeping the base weight decay ``λ_base`` at a
fixed base learning rate ``η_base`` for each width, in two arms. μP (the ``mup`` package: ``set_base_shapes``,
``MuReadout``, ``MuAdamW``) gives the hidden ``width x width`` matrices of a model ``s`` times wider than the base
the learning rate ``η_base / s``. Then:

- ``fixed``: ``λ = λ_base`` at every width (the paper's Eq. standard_mup; what newer mup's
  ``MuAdamW(decoupled_wd=True)`` and nanoGPT-mup do). mup 1.0.0's ``MuAdamW`` multiplies the hidden groups' weight
  decay by ``s``; this arm sets it back. Hidden ``tau_iter = s / (η_base λ_base)``.
- ``timescale``: the same optimizer plus :class:`~lightning_tau.TimescaleCallback` with
  ``tau_epoch = 1 / (η_base M λ_base)`` (``M`` optimizer steps per epoch): each group's weight decay comes from the
  group's own learning rate, so the hidden matrices get ``s λ_base`` and their ``tau_iter = 1 / (η_base λ_base)``
  is the same at every width (Eq. improved_mup).

If the best ``tau_iter`` of the hidden weights does not depend on width, the best ``λ_base`` scales as ``s^0`` in
the ``timescale`` arm and ``s^1`` in the ``fixed`` arm. :mod:`lightning_tau.demos.width_curves` turns the runs into
that exponent, with a bootstrap interval over seeds, and checks first that each curve has an interior optimum.

The task is scikit-learn's bundled digits (:class:`~lightning_tau.demos.digits.DigitsDataModule`, nothing
downloaded) and a μP MLP (:class:`MuDigitsMLP`) with a LayerNorm after every linear layer, so the decayed
matrices are scale-invariant; the ``MuReadout`` does not decay. At the base width the two arms are the same run,
trained once. ``lightning-tau demo --axis width`` runs :func:`run_width_demo`; ``docs/width_demo.rst`` shows and
discusses its result.
"""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import timescale as tau_math
from lightning_tau._table import table_lines
from lightning_tau.callback import TimescaleCallback
from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO, DigitsDataModule, DigitsMLP
from lightning_tau.demos.width_curves import summarize_arm
from lightning_tau.diagnostics import TimescaleMonitor

__all__ = [
    "arm_lines",
    "ARMS",
    "BASE_ARM",
    "MuDigitsMLP",
    "WidthConfig",
    "describe_width",
    "draw_width_sweep",
    "format_width_summary",
    "load_width_results",
    "plot_width_sweep",
    "run_one_width",
    "run_width_demo",
    "width_run_name",
    "width_summary",
]

Arm = Literal["fixed", "timescale"]

#: The two arms, in the order the sweep, the table and the figure use.
ARMS: tuple[Arm, ...] = ("fixed", "timescale")

#: Where the base width's runs log: they are the same run in both arms, trained once.
BASE_ARM = "both"

#: File names the width demo writes into its sweep directory.
FIGURE_STEM = "width_sweep"
SUMMARY_NAME = "summary.json"

#: The metric the sweep compares (the final validation loss, logged with each run's HParams record).
METRIC = "hp/val_loss"


def _import_mup() -> Any:
    try:
        import mup
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The width demo needs the `mup` package (μP): `pip install --no-deps 'mup>=1.0.0' pyyaml`."
        ) from err
    return mup


class MuDigitsMLP(pl.LightningModule):
    """A μP MLP for 8x8 digits: ``64 -> width`` then ``depth - 1`` hidden ``width x width`` layers, each followed by a
    LayerNorm and a ReLU, then a ``MuReadout`` head; trained with ``MuAdamW``.

    Call :meth:`set_base_shapes` (the sweep does) before training. The input and hidden matrices decay with
    ``weight_decay`` (``λ_base``); LayerNorm parameters and the readout do not. ``arm="fixed"`` undoes mup
    1.0.0's ``λ x s`` on the hidden matrices, so every decaying group has ``λ_base`` at every width.
    ``arm="timescale"`` builds the same optimizer; add :class:`~lightning_tau.TimescaleCallback` to the Trainer
    and it rewrites each group's weight decay from that group's learning rate.

    Logs ``train/loss``, ``val/loss`` and ``val/error``.

    Args:
        width: hidden width.
        depth: number of linear layers before the readout (``depth - 1`` of them are ``width x width``).
        lr: base learning rate (``MuAdamW`` divides it by ``s`` for the hidden matrices).
        weight_decay: ``λ_base``, the weight decay of every decaying group before any width scaling.
        schedule: ``"cosine"`` (to ``0.1 * lr`` per step) or ``"constant"``.
        arm: ``"fixed"`` or ``"timescale"`` (see above).
        decay_readout: also decay the ``MuReadout`` weight (by default it does not: it is the one decayed matrix
            the output is not invariant to the scale of, and both arms would treat it alike).
        decay_input: decay the ``64 -> width`` input matrix (the default). It is vector-like in μP (its fan-in does
            not grow), so it keeps ``lr`` and ``λ_base`` in both arms; ``False`` leaves only the hidden matrices
            decaying.
        other_lr: learning rate of the parameters that do not decay (LayerNorm, readout); ``None`` is ``lr``.
            A fixed value makes ``lr`` the learning rate of the scale-invariant matrices only, as in the seed's
            Theorem 1.

    Example:
        >>> model = MuDigitsMLP(width=64, depth=3).set_base_shapes(base_width=16)
        >>> groups = model.configure_optimizers()["optimizer"].param_groups
        >>> [(g["lr"], g["weight_decay"]) for g in groups]  # hidden (s=4), input layer, no decay (norms, readout)
        [(0.00075, 0.01), (0.003, 0.01), (0.003, 0.0)]
    """

    def __init__(
        self,
        width: int = 128,
        depth: int = 3,
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        schedule: Literal["constant", "cosine"] = "cosine",
        arm: Arm = "fixed",
        decay_readout: bool = False,
        other_lr: float | None = None,
        decay_input: bool = True,
    ) -> None:
        super().__init__()
        for name, value in (("width", width), ("depth", depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"`MuDigitsMLP({name}={value!r})` is not valid: use a positive integer.")
        if depth < 2:
            raise ValueError(
                f"`MuDigitsMLP(depth={depth})` has no hidden width x width matrix, the only weights μP's lr / s"
                " touches: use depth >= 2."
            )
        if not (lr > 0 and math.isfinite(lr)):
            raise ValueError(f"`MuDigitsMLP(lr={lr!r})` is not valid: use a positive learning rate.")
        if not (weight_decay > 0 and math.isfinite(weight_decay)):
            raise ValueError(f"`MuDigitsMLP(weight_decay={weight_decay!r})` is not valid: use a positive value.")
        if schedule not in ("constant", "cosine"):
            raise ValueError(f"`MuDigitsMLP(schedule={schedule!r})` is not supported. Use 'constant' or 'cosine'.")
        if arm not in ARMS:
            raise ValueError(f"`MuDigitsMLP(arm={arm!r})` is not supported. Use 'fixed' or 'timescale'.")
        mup = _import_mup()
        self.save_hyperparameters()
        layers: list[torch.nn.Module] = []
        fan_in = 64
        for _ in range(depth):
            # a LayerNorm follows, so a bias would break scale invariance (the norm's own bias takes its place)
            layers += [torch.nn.Linear(fan_in, width, bias=False), torch.nn.LayerNorm(width), torch.nn.ReLU()]
            fan_in = width
        self.body = torch.nn.Sequential(*layers)
        self.readout = mup.MuReadout(width, 10)
        self.width, self.depth, self.lr, self.weight_decay = width, depth, lr, weight_decay
        self.schedule, self.arm, self.decay_readout, self.other_lr = schedule, arm, decay_readout, other_lr
        self.decay_input = decay_input

    def set_base_shapes(self, base_width: int) -> MuDigitsMLP:
        """``mup.set_base_shapes`` against the same model at ``base_width`` (and ``2 * base_width`` as the delta)."""
        mup = _import_mup()
        base = MuDigitsMLP(base_width, self.depth)
        delta = MuDigitsMLP(2 * base_width, self.depth)
        mup.set_base_shapes(self, base, delta=delta)
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))

    # the dataset-size demo's steps: the same loss and the same logged keys
    training_step = DigitsMLP.training_step
    validation_step = DigitsMLP.validation_step

    def configure_optimizers(self) -> dict[str, Any]:
        mup = _import_mup()
        kept = {id(p) for p in self.readout.parameters()} if not self.decay_readout else set()
        if not self.decay_input:
            kept.add(id(self.body[0].weight))
        matrices = [p for p in self.parameters() if p.ndim >= 2 and id(p) not in kept]
        vectors = [p for p in self.parameters() if p.ndim < 2 or id(p) in kept]
        # mup 1.0.0 splits off the hidden (matrix-like, ninf == 2) weights: lr / s and weight_decay * s
        optimizer = mup.MuAdamW(
            [
                {"params": matrices, "weight_decay": self.weight_decay},
                {"params": vectors, "weight_decay": 0.0, "lr": self.lr if self.other_lr is None else self.other_lr},
            ],
            lr=self.lr,
        )
        for group in optimizer.param_groups:
            if group["weight_decay"] > 0:
                # undo mup's x s: the same λ at every width (fixed arm); the callback rewrites it (timescale arm)
                group["weight_decay"] = self.weight_decay
        if self.schedule == "constant" or self._trainer is None:
            return {"optimizer": optimizer}
        total_steps = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _cosine(total_steps))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def _cosine(total_steps: int) -> Any:
    """Per-step factor of a cosine from 1 to ``COSINE_FINAL_LR_RATIO`` (each group keeps its own μP lr ratio)."""

    def factor(step: int) -> float:
        progress = min(step, total_steps) / total_steps
        return COSINE_FINAL_LR_RATIO + (1 - COSINE_FINAL_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


@dataclass
class WidthConfig:
    """One λ_base sweep: every ``(arm, width, λ_base, seed)`` is a run, the base width's once for both arms.

    Attributes:
        widths: hidden widths; the smallest is μP's base width (``s = width / min(widths)``).
        weight_decays: the ``λ_base`` grid (increasing).
        lr: ``η_base``, the base learning rate, fixed for the whole sweep (the hidden matrices get ``η_base / s``).
        seeds: seeds (init and batch order); runs of the same setting are averaged.
        epochs: training epochs per run.
        batch_size: ``B``.
        train_size: training digits ``N`` (at most 1400).
        depth: linear layers before the readout (``depth - 1`` hidden ``width x width`` matrices).
        schedule: ``"cosine"`` (to ``0.1 η``) or ``"constant"``; the weight decay is not scheduled.
        label_noise: fraction of training labels randomized (see :class:`~lightning_tau.demos.digits.DigitsDataModule`).
        decay_input: see :class:`MuDigitsMLP`.
        decay_readout: see :class:`MuDigitsMLP`.
        other_lr: see :class:`MuDigitsMLP`.
    """

    widths: list[int] = field(default_factory=lambda: [16, 64, 256])
    weight_decays: list[float] = field(default_factory=lambda: [8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0])
    lr: float = 3e-4
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    epochs: int = 30
    batch_size: int = 64
    train_size: int = 1400
    depth: int = 3
    schedule: str = "cosine"
    label_noise: float = 0.0
    decay_input: bool = True
    decay_readout: bool = False
    other_lr: float | None = None

    #: The task's name in ``summary.json`` and each run's hparams (the digits sweep writes none).
    task: ClassVar[str | None] = None
    #: The figure's title.
    title: ClassVar[str] = "μP MLP on digits: final loss against the base weight decay"

    @property
    def base_width(self) -> int:
        return min(self.widths)

    def describe(self) -> str:
        """:func:`describe_width` of this sweep."""
        return describe_width(self)

    def datamodule(self) -> DigitsDataModule:
        """The sweep's data."""
        return DigitsDataModule(train_size=self.train_size, batch_size=self.batch_size, label_noise=self.label_noise)

    def model(self, width: int, weight_decay: float, arm: Arm) -> MuDigitsMLP:
        """The μP model of one run, its base shapes set."""
        return MuDigitsMLP(
            width=width,
            depth=self.depth,
            lr=self.lr,
            weight_decay=weight_decay,
            schedule=self.schedule,  # type: ignore[arg-type]
            arm=arm,
            decay_readout=self.decay_readout,
            other_lr=self.other_lr,
            decay_input=self.decay_input,
        ).set_base_shapes(self.base_width)

    def timescales_covered(self, lr: float, weight_decay: float) -> float:
        """``sum_t η_t λ`` over the run: how many EMA timescales the weights live through."""
        steps = self.epochs * _steps_per_epoch(self)
        mean_factor = 1.0 if self.schedule == "constant" else (1 + COSINE_FINAL_LR_RATIO) / 2
        return lr * weight_decay * steps * mean_factor

    def _hidden_lr(self, width: int, first_lr: dict[str, float]) -> float:
        return first_lr["hidden"]

    def _task_hparams(self) -> dict[str, Any]:
        """The run's hparams that are the task's own (between the common ones and ``seed``)."""
        return {
            "dataset_size": self.train_size,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
            "schedule": self.schedule,
            "depth": self.depth,
            "label_noise": self.label_noise,
            "decay_input": self.decay_input,
        }

    def _timescale_kwargs(self, data: Any) -> dict[str, Any]:
        return {}

    def _trainer_kwargs(self) -> dict[str, Any]:
        return {"accelerator": "cpu", "log_every_n_steps": _steps_per_epoch(self)}

    def runs(self) -> list[tuple[str, int, float, int]]:
        """Every ``(arm, width, λ_base, seed)`` the sweep trains; the base width's arm is :data:`BASE_ARM`.

        Example:
            >>> WidthConfig(widths=[16, 64], weight_decays=[1.0], seeds=[0]).runs()
            [('both', 16, 1.0, 0), ('fixed', 64, 1.0, 0), ('timescale', 64, 1.0, 0)]
        """
        base = [(BASE_ARM, self.base_width, lam, seed) for lam in self.weight_decays for seed in self.seeds]
        wider = [
            (arm, width, lam, seed)
            for arm in ARMS
            for width in sorted(self.widths)
            if width != self.base_width
            for lam in self.weight_decays
            for seed in self.seeds
        ]
        return base + wider

    @property
    def num_runs(self) -> int:
        return len(self.runs())

    def tau_epoch(self, weight_decay: float) -> float:
        """The ``timescale`` arm's ``tau_epoch`` for ``λ_base``: the base width's, ``1 / (η_base M λ_base)``.

        ``M`` is the optimizer steps Lightning really runs per epoch (``ceil(N / B)``, the last batch partial),
        which is what the callback divides by, so the base width's hidden matrices step with exactly ``λ_base``.
        """
        return tau_math.tau_iter(self.lr, weight_decay) / _steps_per_epoch(self)


def describe_width(config: WidthConfig) -> str:
    """What the width sweep runs, and how many EMA timescales the hidden weights cover in each arm.

    Example:
        >>> config = WidthConfig(widths=[16, 256], weight_decays=[8.0, 512.0], seeds=[0, 1], epochs=30)
        >>> print(describe_width(config))  # doctest: +NORMALIZE_WHITESPACE
        Width sweep of λ_base at η_base = 0.0003: 2 widths x 2 λ_base x 2 seeds, 2 arms (the base width once) = 12
          runs x 30 epochs; N=1400, B=64, cosine, depth 3, label noise 0.
          hidden matrices: lr η_base / s; weight decay λ_base (fixed) or s λ_base (timescale).
          timescales the hidden weights cover (sum of η_t λ over the run, λ_base 8 .. 512):
            width 16 (s=1): fixed 0.871 .. 55.8, timescale 0.871 .. 55.8
            width 256 (s=16): fixed 0.0544 .. 3.48, timescale 0.871 .. 55.8
    """
    lams = sorted(config.weight_decays)
    lines = [
        f"Width sweep of λ_base at η_base = {config.lr:g}: {len(config.widths)} widths x {len(lams)} λ_base x"
        f" {len(config.seeds)} seeds, 2 arms (the base width once) = {config.num_runs} runs x {config.epochs} epochs;"
        f" N={config.train_size}, B={config.batch_size}, {config.schedule}, depth {config.depth},"
        f" label noise {config.label_noise:g}.",
    ]
    return "\n".join(lines + arm_lines(config))


def arm_lines(config: Any) -> list[str]:
    """The lines of a width sweep's description that say what each arm does to the hidden matrices and how many
    EMA timescales they cover at each width (a digits or a text width config: ``widths``, ``weight_decays``,
    ``lr``, ``base_width``, ``timescales_covered``)."""
    lams = sorted(config.weight_decays)
    lines = [
        "  hidden matrices: lr η_base / s; weight decay λ_base (fixed) or s λ_base (timescale).",
        f"  timescales the hidden weights cover (sum of η_t λ over the run, λ_base {lams[0]:g} .. {lams[-1]:g}):",
    ]
    for width in sorted(config.widths):
        s = width / config.base_width
        covered = {
            arm: [
                config.timescales_covered(config.lr / s, lam * (s if arm == "timescale" else 1.0))
                for lam in (lams[0], lams[-1])
            ]
            for arm in ARMS
        }
        lines.append(
            f"    width {width} (s={s:g}): "
            + ", ".join(f"{arm} {lo:.3g} .. {hi:.3g}" for arm, (lo, hi) in covered.items())
        )
    return lines


def _steps_per_epoch(config: WidthConfig) -> int:
    return math.ceil(config.train_size / config.batch_size)


def width_run_name(arm: str, width: int, weight_decay: float, seed: int) -> tuple[str, str]:
    """TensorBoard ``(name, version)`` of one run.

    Example:
        >>> width_run_name("fixed", 128, 64.0, 1)
        ('fixed/w0128', 'wd=64_seed1')
    """
    return f"{arm}/w{width:04d}", f"wd={weight_decay:g}_seed{seed}"


def _group_name(group: dict[str, Any]) -> str:
    """``hidden`` for mup's matrix-like (``ninf == 2``) group, ``vector_like`` for the others."""
    return "hidden" if any(p.infshape.ninf() == 2 for p in group["params"]) else "vector_like"


class _RecordSteps(Callback):
    """Reads, with a torch optimizer step post-hook, the weight decay every decaying group used at every optimizer
    step (the distinct values, per group) and its first step's lr; writes the run's HParams record at train end."""

    def __init__(self, config: WidthConfig, arm: str, width: int, weight_decay: float, seed: int) -> None:
        self.config, self.arm, self.width, self.weight_decay, self.seed = config, arm, width, weight_decay, seed
        self.weight_decays: dict[str, set[float]] = defaultdict(set)
        self.first_lr: dict[str, float] = {}
        self.steps = 0
        self.logged: dict[str, Any] = {}
        self._handle: Any = None

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        def hook(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self.steps += 1
            for group in opt.param_groups:
                # mup 1.0.0 leaves an empty vector-like group where a group had only hidden matrices
                if group["params"] and (group["weight_decay"] > 0 or _group_name(group) == "hidden"):
                    name = _group_name(group)
                    self.weight_decays[name].add(float(group["weight_decay"]))
                    self.first_lr.setdefault(name, float(group["lr"]))

        self._handle = trainer.optimizers[0].register_step_post_hook(hook)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._handle is not None:
            self._handle.remove()
        config = self.config
        hidden_lr = config._hidden_lr(self.width, self.first_lr)
        hidden_wd = max(self.weight_decays["hidden"])
        hparams: dict[str, Any] = {
            **({"task": config.task} if config.task else {}),
            "arm": self.arm,
            "width": self.width,
            "width_mult": self.width / config.base_width,
            "lr_base": config.lr,
            "weight_decay_base": self.weight_decay,
            "hidden_lr": hidden_lr,
            "hidden_weight_decay": hidden_wd,
            "vector_like_weight_decay": max(self.weight_decays.get("vector_like", {0.0})),
            "hidden_tau_iter": tau_math.tau_iter(hidden_lr, hidden_wd),
            "hidden_timescales_covered": config.timescales_covered(hidden_lr, hidden_wd),
            **config._task_hparams(),
            "seed": self.seed,
        }
        metrics = {
            METRIC: float(trainer.callback_metrics["val/loss"]),
            "hp/val_error": float(trainer.callback_metrics["val/error"]),
            "hp/train_loss": float(trainer.callback_metrics["train/loss"]),
        }
        for logger in trainer.loggers:
            logger.log_hyperparams(hparams, metrics=metrics, step=trainer.global_step)
        self.logged = {**hparams, **metrics}


def run_one_width(
    config: WidthConfig,
    arm: str,
    width: int,
    weight_decay: float,
    seed: int,
    sweep_dir: Path | None,
    extra_callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Fit one run (logging to ``sweep_dir/<arm>/w<width>/wd=<λ_base>_seed<seed>``, or nowhere if ``sweep_dir`` is
    ``None``); returns its hparams and final metrics, with ``step_weight_decays`` (per decaying group, the sorted
    distinct weight decays its optimizer steps used), ``first_lr`` (per group) and ``optimizer_steps``.

    ``arm`` is ``"fixed"``, ``"timescale"`` or, at the base width only, :data:`BASE_ARM` (the two arms' shared run).
    The data, the model and the task's own hparams come from ``config`` (a :class:`WidthConfig`, or the text task's
    :class:`~lightning_tau.demos.text_width.TextWidthConfig`).
    """
    if arm not in (*ARMS, BASE_ARM):
        raise ValueError(f"`arm={arm!r}` is not an arm of the width demo. Use 'fixed' or 'timescale'.")
    if arm == BASE_ARM and width != config.base_width:
        raise ValueError(f"`arm={BASE_ARM!r}` is the base width's ({config.base_width}) shared run, not width {width}.")
    pl.seed_everything(seed, verbose=False)
    data = config.datamodule()
    model = config.model(width, weight_decay, "timescale" if arm == "timescale" else "fixed")
    record = _RecordSteps(config, arm, width, weight_decay, seed)
    # every run logs the same EMA diagnostics (per-group tau_iter, weight RMS); `record` writes the HParams record
    # (TensorBoard keeps a run's first), so the monitor writes none of its own
    callbacks: list[Callback] = [record, *extra_callbacks]
    if arm == "timescale":
        monitor: bool | TimescaleMonitor = TimescaleMonitor(log_hparams=False) if sweep_dir is not None else False
        timescale = TimescaleCallback(
            tau_epoch=config.tau_epoch(weight_decay), verbose=False, monitor=monitor, **config._timescale_kwargs(data)
        )
        callbacks.insert(0, timescale)
    elif sweep_dir is not None:
        callbacks.insert(1, TimescaleMonitor(log_hparams=False))
    logger: Any = False
    if sweep_dir is not None:
        name, version = width_run_name(arm, width, weight_decay, seed)
        logger = TensorBoardLogger(save_dir=str(sweep_dir), name=name, version=version, default_hp_metric=False)
    trainer = pl.Trainer(
        devices=1,
        max_epochs=config.epochs,
        logger=logger,
        callbacks=callbacks,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        **config._trainer_kwargs(),
    )
    trainer.fit(model, datamodule=data)
    return {
        **record.logged,
        "step_weight_decays": {name: sorted(values) for name, values in record.weight_decays.items()},
        "first_lr": dict(record.first_lr),
        "optimizer_steps": record.steps,
    }


def width_summary(results: Sequence[dict[str, Any]], config: WidthConfig) -> dict[str, Any]:
    """The sweep's ``summary.json`` from its runs (each with ``arm``, ``width``, ``weight_decay_base``, ``seed``
    and :data:`METRIC`): per arm the curves, smoothed optima, interior flags and the exponent with its interval.

    The base width's runs (arm :data:`BASE_ARM`) are the first line of both arms. A run that diverged (a non-finite
    metric) makes its curve point ``inf`` (``null`` in the JSON).

    Example:
        >>> config = WidthConfig(widths=[16, 64], weight_decays=[1.0, 2.0, 4.0], seeds=[0])
        >>> loss = {1.0: 0.9, 2.0: 0.5, 4.0: 0.8}
        >>> rows = [{"arm": a, "width": w, "weight_decay_base": lam, "seed": 0, "hp/val_loss": loss[lam]}
        ...         for a, w, lam, _ in config.runs()]
        >>> summary = width_summary(rows, config)
        >>> fixed = summary["arms"]["fixed"]
        >>> summary["sweep"], summary["lr_base"], fixed["interior"], abs(round(fixed["exponent"], 6))
        ('lambda_base', 0.0003, {'16': True, '64': True}, 0.0)
    """
    seeds = {seed: i for i, seed in enumerate(config.seeds)}
    values: dict[tuple[str, int], dict[float, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [math.nan] * len(seeds))
    )
    for r in results:
        value = float(r[METRIC])
        arms = ARMS if r["arm"] == BASE_ARM else (str(r["arm"]),)
        for arm in arms:
            line = values[(arm, int(r["width"]))][float(r["weight_decay_base"])]
            line[seeds[int(r["seed"])]] = value if math.isfinite(value) else math.inf
    widths = sorted(config.widths)
    mults = {width / config.base_width: width for width in widths}
    arms = {}
    for arm in ARMS:
        lines = {width / config.base_width: values[(arm, width)] for width in widths if (arm, width) in values}
        if len(lines) >= 2:
            arms[arm] = summarize_arm(lines, {m: mults[m] for m in lines})
    return {
        "axis": "width",
        "sweep": "lambda_base",
        "metric": METRIC,
        "lr_base": config.lr,
        "widths": widths,
        "width_mults": {str(w): w / config.base_width for w in widths},
        "arms": arms,
        "config": asdict(config),
    }


def format_width_summary(summary: dict[str, Any]) -> str:
    """The table of each line's best ``λ_base`` and the exponent per arm, from a :func:`width_summary`.

    Example:
        >>> arm = {"curves": {"16": [[1.0, 0.9, 0.1], [2.0, 0.5, 0.1], [4.0, 0.8, 0.1]]},
        ...        "best_lambda_base": {"16": 2.1}, "interior": {"16": True}, "bracketed": {"16": True},
        ...        "exponent": 0.05, "exponent_ci": [-0.2, 0.3]}
        >>> print(format_width_summary({"arms": {"fixed": arm}, "metric": "hp/val_loss", "width_mults": {"16": 1.0}}))
        ... # doctest: +NORMALIZE_WHITESPACE
        Best λ_base per width (mean hp/val_loss over seeds; smoothed = the finder's parabola in log λ):
          arm   | width | s | best λ_base (grid) | smoothed | hp/val_loss ± std | interior | bracketed
          fixed | 16    | 1 | 2                  | 2.1      | 0.5 ± 0.1         | yes      | yes
        Exponent of best λ_base in s (slope on log s; 95% bootstrap interval over seeds):
          fixed: 0.05 [-0.2, 0.3]
    """
    metric = summary.get("metric", METRIC)
    rows = []
    for arm, part in summary["arms"].items():
        for width, curve in part["curves"].items():
            finite = [row for row in curve if row[1] is not None]
            best = min(finite, key=lambda row: row[1])
            rows.append(
                [
                    arm,
                    width,
                    f"{summary['width_mults'][width]:g}",
                    f"{best[0]:g}",
                    f"{part['best_lambda_base'][width]:.3g}",
                    f"{best[1]:.4g} ± {best[2]:.2g}",
                    "yes" if part["interior"][width] else "no",
                    "yes" if part["bracketed"][width] else "no",
                ]
            )
    lines = [f"Best λ_base per width (mean {metric} over seeds; smoothed = the finder's parabola in log λ):"]
    header = ["arm", "width", "s", "best λ_base (grid)", "smoothed", f"{metric} ± std", "interior", "bracketed"]
    lines += table_lines(header, rows, rule=False, indent="  ")
    lines.append("Exponent of best λ_base in s (slope on log s; 95% bootstrap interval over seeds):")
    for arm, part in summary["arms"].items():
        low, high = part["exponent_ci"]
        lines.append(f"  {arm}: {part['exponent']:.3g} [{low:.3g}, {high:.3g}]")
    if any(not flag for part in summary["arms"].values() for flag in part["interior"].values()):
        lines.append(
            "interior: both grid neighbours of the best point are worse by more than the seed std; bracketed: some"
            " point on each side is. A line that is neither does not locate its best λ_base (widen the grid)."
        )
    return "\n".join(lines)


def plot_width_sweep(summary: dict[str, Any], out: Path, formats: Sequence[str] = ("png", "svg")) -> dict[str, Path]:
    """Save :func:`draw_width_sweep`'s figure into ``out/width_sweep.<fmt>``; returns the paths by format."""
    import matplotlib.pyplot as plt

    fig = draw_width_sweep(summary)
    paths = {}
    out.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = out / f"{FIGURE_STEM}.{fmt}"
        fig.savefig(path, dpi=120)
        paths[fmt] = path
    plt.close(fig)
    return paths


def draw_width_sweep(summary: dict[str, Any]) -> Any:
    """The width sweep's figure: the mean metric against ``λ_base`` (log x, error bars: std over seeds), one curve
    per width, one panel per arm, each smoothed optimum starred (titled ``summary["title"]`` when it has one).

    Returns the ``matplotlib`` figure (close it when done)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    arms = list(summary["arms"])
    widths = [str(w) for w in summary["widths"]]
    colors = plt.get_cmap("viridis")
    fig, axes = plt.subplots(
        1, len(arms), figsize=(4.8 * len(arms) + 1.8, 4.3), sharey=True, constrained_layout=True, squeeze=False
    )
    titles = {
        "fixed": "fixed λ = λ_base (hidden τ_iter ∝ s)",
        "timescale": "TimescaleCallback: hidden λ = s λ_base (τ_iter fixed)",
    }
    for ax, arm in zip(axes[0], arms):
        part = summary["arms"][arm]
        for k, width in enumerate(widths):
            if width not in part["curves"]:
                continue
            color = colors(k / max(1, len(widths) - 1) * 0.85)
            rows = [row for row in part["curves"][width] if row[1] is not None]
            lams, means, stds = (np.asarray([row[i] for row in rows], dtype=float) for i in range(3))
            label = f"width {width} (s={summary['width_mults'][width]:g})"
            ax.errorbar(lams, means, yerr=stds, fmt="o-", color=color, markersize=4, capsize=2, label=label)
            best = part["best_lambda_base"][width]
            y = float(np.interp(math.log(best), np.log(lams), means))
            ax.plot([best], [y], "*", color=color, markersize=15, markeredgecolor="black", zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"λ_base (η_base = {summary['lr_base']:g})")
        ax.grid(True, which="both", alpha=0.3)
        low, high = part["exponent_ci"]
        ax.set_title(
            f"{titles.get(arm, arm)}\nexponent of best λ_base in s: {part['exponent']:.2f} [{low:.2f}, {high:.2f}]",
            fontsize="medium",
        )
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0][0].set_ylabel(f"final {summary.get('metric', METRIC)} (mean ± std over seeds)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title="★ smoothed best λ_base", fontsize="small", loc="outside right upper")
    fig.suptitle(summary.get("title", "μP MLP on digits: final loss against the base weight decay"), fontsize="medium")
    return fig


def load_width_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """Each run of a width sweep read back from its TensorBoard logs (its HParams record and last scalars), in the
    form :func:`width_summary` takes: ``width_summary(load_width_results(d), config)`` redoes a finished sweep's
    summary (``config`` as recorded in its ``summary.json``)."""
    from lightning_tau.cli.plot import load_runs

    return [
        {**run.hparams, **run.scalars}
        for run in load_runs(sweep_dir)
        if {"arm", "width", "weight_decay_base", "seed"} <= set(run.hparams) and METRIC in run.scalars
    ]


def run_width_demo(
    config: WidthConfig,
    sweep_dir: Path,
    *,
    plot: bool = True,
    extra_callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Run the λ_base sweep into ``sweep_dir`` (which must exist), print its table, write ``summary.json`` and
    (unless ``plot=False``) ``width_sweep.png`` / ``.svg``; returns the summary (with ``"task"`` first when the
    config names one, as the text task's does)."""
    print(config.describe())
    start = time.perf_counter()
    results = [
        run_one_width(config, arm, width, lam, seed, sweep_dir, extra_callbacks)
        for arm, width, lam, seed in config.runs()
    ]
    elapsed = time.perf_counter() - start
    print(f"{config.num_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
    task = {"task": config.task} if config.task else {}
    summary = {**task, **width_summary(results, config), "seconds": round(elapsed, 1)}
    (sweep_dir / SUMMARY_NAME).write_text(json.dumps(summary, indent=2) + "\n")
    print(format_width_summary(summary))
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        for path in plot_width_sweep({**summary, "title": config.title}, sweep_dir).values():
            print(f"Figure: {path}")
    return summary
