"""The width demo: does μP's learning rate transfer across widths under AdamW, with and without the callback?

μP (the ``mup`` package: ``set_base_shapes``, ``MuReadout``, ``MuAdamW``) gives the hidden ``width x width``
matrices of a model ``s`` times wider than the base model the learning rate ``lr / s``. With the weight decay ``λ``
held fixed across widths their AdamW timescale ``tau_iter = 1 / (lr λ)`` grows ``s``-fold, and Wang & Aitchison
(ICML 2025, Sec. 4.2, Fig. "AdamW breaks the learning rate scaling of μP") find that the best learning rate then
drifts with width late in training; holding ``tau_iter`` (``λ = s λ_base``) restores the transfer.

This module sweeps ``width x lr x seed`` for two arms on scikit-learn's bundled digits
(:class:`~lightning_tau.demos.digits.DigitsDataModule`, nothing downloaded):

- ``fixed``: ``MuAdamW`` with every decaying group's weight decay set back to ``λ_base`` after mup 1.0.0 multiplied
  the hidden groups' by ``s`` — the same ``λ`` at every width (the paper's Eq. standard_mup; what newer mup's
  ``MuAdamW(decoupled_wd=True)`` and nanoGPT-mup do). Hidden ``tau_iter = s / (lr λ_base)``.
- ``timescale``: the same optimizer plus :class:`~lightning_tau.TimescaleCallback` with
  ``tau_epoch = B / (lr λ_base N)`` — the base model's timescale at that ``lr``. The callback computes each group's
  weight decay from the group's own learning rate, so the hidden groups get ``s λ_base`` and ``tau_iter`` is the
  same at every width (Eq. improved_mup; also what mup 1.0.0's unmodified ``MuAdamW`` does).

At the base width (``s = 1``) the two arms are the same run. The model is a μP MLP: a LayerNorm after every hidden
linear layer (so the hidden matrices are scale-invariant and their weight decay acts only through the timescale) and a
``MuReadout`` head, whose weight does not decay. ``lightning-tau demo --axis width`` runs :func:`run_width_demo`;
``docs/width_demo.rst`` shows and discusses its result.
"""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import timescale as tau_math
from lightning_tau._table import table_lines
from lightning_tau.callback import TimescaleCallback
from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO, DigitsDataModule, DigitsMLP
from lightning_tau.diagnostics import TimescaleMonitor

__all__ = [
    "ARMS",
    "BREAK_FACTOR",
    "Arm",
    "GroupRecord",
    "MuDigitsMLP",
    "WidthConfig",
    "WidthOptimum",
    "describe_width",
    "find_width_optima",
    "format_width_optima",
    "load_width_results",
    "lr_spread",
    "plot_width_sweep",
    "run_one_width",
    "run_width_demo",
    "width_run_name",
]

Arm = Literal["fixed", "timescale"]

#: The two arms, in the order the sweep, the table and the figure use.
ARMS: tuple[Arm, ...] = ("fixed", "timescale")

#: A line "breaks" at the first lr above its best where the metric exceeds this multiple of the best.
BREAK_FACTOR = 2.0

#: File names the width demo writes into its sweep directory.
FIGURE_STEM = "width_sweep"
SUMMARY_NAME = "summary.json"


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
        readout = {id(p) for p in self.readout.parameters()} if not self.decay_readout else set()
        matrices = [p for p in self.parameters() if p.ndim >= 2 and id(p) not in readout]
        vectors = [p for p in self.parameters() if p.ndim < 2 or id(p) in readout]
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
    """One width sweep: every ``(arm, width, lr, seed)`` combination is a run.

    Attributes:
        widths: hidden widths; the smallest is μP's base width (``s = width / min(widths)``).
        lrs: base learning rates (the hidden matrices get ``lr / s``).
        weight_decay: ``λ_base``; the timescale arm's ``tau_epoch`` at each ``lr`` is ``B / (lr λ_base N)``.
        seeds: seeds (init and batch order); runs of the same setting are averaged.
        epochs: training epochs per run.
        batch_size: ``B``.
        train_size: training digits ``N`` (at most 1400).
        depth: linear layers before the readout.
        schedule: ``"cosine"`` (to ``0.1 * lr``) or ``"constant"``.
        arms: which arms to run.
        label_noise: fraction of training labels randomized (see :class:`~lightning_tau.demos.digits.DigitsDataModule`).
        decay_readout: see :class:`MuDigitsMLP`.
        other_lr: see :class:`MuDigitsMLP`.
    """

    widths: list[int] = field(default_factory=lambda: [32, 128, 512])
    lrs: list[float] = field(default_factory=lambda: [5e-4, 1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2])
    weight_decay: float = 4.0
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    epochs: int = 30
    batch_size: int = 64
    train_size: int = 1400
    depth: int = 3
    schedule: str = "cosine"
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    label_noise: float = 0.0
    decay_readout: bool = False
    other_lr: float | None = None

    @property
    def base_width(self) -> int:
        return min(self.widths)

    @property
    def num_runs(self) -> int:
        return len(self.arms) * len(self.widths) * len(self.lrs) * len(self.seeds)

    def tau_epoch(self, lr: float) -> float:
        """The timescale arm's ``tau_epoch`` at base learning rate ``lr``: the base width's under ``λ_base``.

        In the optimizer steps Lightning really runs per epoch (``ceil(N / B)``, the last batch partial), which is
        what the callback divides by, so that at the base width the two arms step with the same weight decay.
        """
        return tau_math.tau_iter(lr, self.weight_decay) / _steps_per_epoch(self)


def describe_width(config: WidthConfig) -> str:
    """What the width sweep runs, and how many hidden-weight timescales each arm covers.

    Example:
        >>> config = WidthConfig(widths=[32, 256], lrs=[1e-3, 1e-2], weight_decay=1.0, seeds=[0], epochs=10)
        >>> print(describe_width(config))
        Width sweep: 2 arms x 2 widths x 2 lrs x 1 seeds = 8 runs x 10 epochs; N=1400, B=64, λ_base=1, cosine, depth 3.
          base width 32; hidden matrices get lr / s and, per arm, weight decay λ_base (fixed) or s λ_base (timescale).
          timescales the hidden weights cover (sum of lr_t λ over the run, lr 0.001 .. 0.01):
            width 32 (s=1): fixed 0.121 .. 1.21, timescale 0.121 .. 1.21
            width 256 (s=8): fixed 0.0151 .. 0.151, timescale 0.121 .. 1.21
    """
    lines = [
        f"Width sweep: {len(config.arms)} arms x {len(config.widths)} widths x {len(config.lrs)} lrs x"
        f" {len(config.seeds)} seeds = {config.num_runs} runs x {config.epochs} epochs; N={config.train_size},"
        f" B={config.batch_size}, λ_base={config.weight_decay:g}, {config.schedule}, depth {config.depth}.",
        f"  base width {config.base_width}; hidden matrices get lr / s and, per arm, weight decay λ_base (fixed) or"
        " s λ_base (timescale).",
        f"  timescales the hidden weights cover (sum of lr_t λ over the run, lr {min(config.lrs):g} .."
        f" {max(config.lrs):g}):",
    ]
    for width in config.widths:
        s = width / config.base_width
        covered = {
            arm: [
                _timescales_covered(config, lr / s, config.weight_decay * (s if arm == "timescale" else 1.0))
                for lr in (min(config.lrs), max(config.lrs))
            ]
            for arm in ARMS
        }
        lines.append(
            f"    width {width} (s={s:g}): "
            + ", ".join(f"{arm} {lo:.3g} .. {hi:.3g}" for arm, (lo, hi) in covered.items())
        )
    return "\n".join(lines)


def _steps_per_epoch(config: WidthConfig) -> int:
    return math.ceil(config.train_size / config.batch_size)


def _timescales_covered(config: WidthConfig, lr: float, weight_decay: float) -> float:
    """``sum_t lr_t λ`` over the run: how many EMA timescales the weights live through."""
    steps = config.epochs * _steps_per_epoch(config)
    mean_factor = 1.0 if config.schedule == "constant" else (1 + COSINE_FINAL_LR_RATIO) / 2
    return lr * weight_decay * steps * mean_factor


def width_run_name(arm: str, width: int, lr: float, seed: int) -> tuple[str, str]:
    """TensorBoard ``(name, version)`` of one run.

    Example:
        >>> width_run_name("fixed", 128, 0.003, 1)
        ('fixed/w0128', 'lr=0.003_seed1')
    """
    return f"{arm}/w{width:04d}", f"lr={lr:g}_seed{seed}"


@dataclass(frozen=True)
class GroupRecord:
    """What one param group's optimizer step used: read by a step post-hook at the first and at the last step."""

    name: str
    width_mult: float
    lr: float
    weight_decay: float


class _RecordSteps(Callback):
    """Reads, with a torch optimizer step post-hook, each decaying group's lr and weight decay at the first step
    (``first``) and the last (``last``), and writes the run's HParams record at train end."""

    def __init__(self, config: WidthConfig, arm: str, width: int, lr: float, seed: int) -> None:
        self.config, self.arm, self.width, self.lr, self.seed = config, arm, width, lr, seed
        self.first: list[GroupRecord] = []
        self.last: list[GroupRecord] = []
        self.logged: dict[str, Any] = {}
        self._handle: Any = None

    @staticmethod
    def _read(optimizer: torch.optim.Optimizer) -> list[GroupRecord]:
        records = []
        for index, group in enumerate(optimizer.param_groups):
            if group["weight_decay"] <= 0:
                continue
            mult = max(
                (p.infshape.width_mult() if p.infshape.ninf() == 2 else 1.0 for p in group["params"]), default=1.0
            )
            name = f"hidden_s{mult:g}" if mult != 1.0 else f"pg{index + 1}"
            records.append(GroupRecord(name, float(mult), float(group["lr"]), float(group["weight_decay"])))
        return records

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        optimizer = trainer.optimizers[0]

        def hook(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self.last = self._read(opt)
            if not self.first:
                self.first = self.last

        self._handle = optimizer.register_step_post_hook(hook)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._handle is not None:
            self._handle.remove()
        hidden = [g for g in self.first if g.width_mult != 1.0] or self.first
        config = self.config
        base_tau_epoch = config.tau_epoch(self.lr)
        hparams: dict[str, Any] = {
            "arm": self.arm,
            "width": self.width,
            "width_mult": self.width / config.base_width,
            "lr": self.lr,
            "weight_decay_base": config.weight_decay,
            "hidden_lr": hidden[0].lr,
            "hidden_weight_decay": hidden[0].weight_decay,
            "hidden_tau_iter": tau_math.tau_iter(hidden[0].lr, hidden[0].weight_decay),
            "hidden_timescales_covered": _timescales_covered(config, hidden[0].lr, hidden[0].weight_decay),
            "tau_epoch": base_tau_epoch,
            "dataset_size": config.train_size,
            "batch_size": config.batch_size,
            "epochs": config.epochs,
            "schedule": config.schedule,
            "depth": config.depth,
            "seed": self.seed,
        }
        metrics = {
            "hp/val_loss": float(trainer.callback_metrics["val/loss"]),
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
    lr: float,
    seed: int,
    sweep_dir: Path | None,
    extra_callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Fit one run (logging to ``sweep_dir/<arm>/w<width>/lr=<lr>_seed<seed>``, or nowhere if ``sweep_dir`` is
    ``None``); returns its hparams and final metrics, with ``first_step_groups`` (a list of :class:`GroupRecord`
    as dicts: what each decaying group's first optimizer step used)."""
    if arm not in ARMS:
        raise ValueError(f"`arm={arm!r}` is not an arm of the width demo. Use 'fixed' or 'timescale'.")
    pl.seed_everything(seed, verbose=False)
    data = DigitsDataModule(train_size=config.train_size, batch_size=config.batch_size, label_noise=config.label_noise)
    model = MuDigitsMLP(
        width=width,
        depth=config.depth,
        lr=lr,
        weight_decay=config.weight_decay,
        schedule=config.schedule,  # type: ignore[arg-type]
        arm=arm,  # type: ignore[arg-type]
        decay_readout=config.decay_readout,
        other_lr=config.other_lr,
    ).set_base_shapes(config.base_width)
    record = _RecordSteps(config, arm, width, lr, seed)
    # both arms log the same EMA diagnostics (per-group tau_iter, weight RMS); `record` writes the HParams record
    # (TensorBoard keeps a run's first), so the monitor writes none of its own
    callbacks: list[Callback] = [record, *extra_callbacks]
    if sweep_dir is not None:
        callbacks.insert(1, TimescaleMonitor(log_hparams=False))
    if arm == "timescale":
        callbacks.insert(0, TimescaleCallback(tau_epoch=config.tau_epoch(lr), verbose=False))
    logger: Any = False
    if sweep_dir is not None:
        name, version = width_run_name(arm, width, lr, seed)
        logger = TensorBoardLogger(save_dir=str(sweep_dir), name=name, version=version, default_hp_metric=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=config.epochs,
        logger=logger,
        callbacks=callbacks,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        log_every_n_steps=_steps_per_epoch(config),
    )
    trainer.fit(model, datamodule=data)
    return {**record.logged, "first_step_groups": [asdict(g) for g in record.first]}


@dataclass(frozen=True)
class WidthOptimum:
    """The best base learning rate of one ``(arm, width)`` line, by the seed-averaged metric.

    Attributes:
        arm: ``"fixed"`` or ``"timescale"``.
        width: hidden width.
        lr: best base learning rate on the grid.
        metric: seed-averaged metric there.
        at_edge: the best lr is the smallest or largest on the grid, so the true one may lie outside.
        breaks_at: the smallest grid lr above the best whose seed-averaged metric is more than
            :data:`BREAK_FACTOR` times the best (``None`` if none is): where the high-lr side of the curve turns up.
    """

    arm: str
    width: int
    lr: float
    metric: float
    at_edge: bool
    breaks_at: float | None = None


def _curves(results: Sequence[dict[str, Any]], metric: str) -> dict[tuple[str, int], dict[float, list[float]]]:
    """``{(arm, width): {lr: [metric per seed]}}``; a non-finite metric (a diverged run) counts as ``inf``."""
    curves: dict[tuple[str, int], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        value = float(r[metric])
        curves[(str(r["arm"]), int(r["width"]))][float(r["lr"])].append(value if math.isfinite(value) else math.inf)
    return {
        key: dict(sorted(points.items()))
        for key, points in sorted(
            curves.items(), key=lambda kv: (ARMS.index(kv[0][0]) if kv[0][0] in ARMS else len(ARMS), kv[0][1])
        )
    }


def find_width_optima(results: Sequence[dict[str, Any]], metric: str = "hp/val_loss") -> list[WidthOptimum]:
    """Per ``(arm, width)``, the base learning rate with the lowest seed-averaged ``metric``.

    Example:
        >>> rows = [{"arm": "fixed", "width": w, "lr": lr, "loss": abs(lr - 0.01 * w / 32)}
        ...         for w in (32, 128) for lr in (0.01, 0.04, 0.16)]
        >>> [(o.width, o.lr, o.at_edge) for o in find_width_optima(rows, "loss")]
        [(32, 0.01, True), (128, 0.04, False)]
    """
    optima = []
    for (arm, width), points in _curves(results, metric).items():
        lrs = list(points)
        means = [sum(v) / len(v) for v in points.values()]
        best = means.index(min(means))
        breaks_at = next((lr for lr, m in zip(lrs[best:], means[best:]) if m > BREAK_FACTOR * means[best]), None)
        at_edge = len(lrs) > 1 and best in (0, len(lrs) - 1)
        optima.append(WidthOptimum(arm, width, lrs[best], means[best], at_edge, breaks_at))
    return optima


def lr_spread(optima: Sequence[WidthOptimum], of: Literal["lr", "breaks_at"] = "lr") -> dict[str, float]:
    """Per arm, ``max / min`` of the best learning rate across widths (1 = it transfers exactly on this grid);
    ``of="breaks_at"`` takes :attr:`WidthOptimum.breaks_at` instead (lines without one are left out).

    Example:
        >>> lr_spread([WidthOptimum("fixed", 32, 0.01, 0.1, False), WidthOptimum("fixed", 512, 0.04, 0.1, False)])
        {'fixed': 4.0}
    """
    by_arm: dict[str, list[float]] = defaultdict(list)
    for o in optima:
        value = getattr(o, of)
        if value is not None:
            by_arm[o.arm].append(value)
    return {arm: max(lrs) / min(lrs) for arm, lrs in by_arm.items()}


def format_width_optima(optima: Sequence[WidthOptimum], metric: str = "hp/val_loss") -> str:
    """The table of the best learning rate per width per arm, and the spread per arm.

    Example:
        >>> rows = [WidthOptimum("fixed", 32, 0.01, 0.1, False, 0.04),
        ...         WidthOptimum("fixed", 512, 0.04, 0.12, False, 0.16),
        ...         WidthOptimum("timescale", 512, 0.001, 0.12, True)]
        >>> print(format_width_optima(rows))  # doctest: +NORMALIZE_WHITESPACE
        Best base lr per width (mean hp/val_loss over seeds):
          arm       | width | s  | best lr           | hp/val_loss | > 2x best from lr
          fixed     | 32    | 1  | 0.01              | 0.1         | 0.04
          fixed     | 512   | 16 | 0.04              | 0.12        | 0.16
          timescale | 512   | 16 | 0.001 (grid edge) | 0.12        | -
        Spread of the best lr across widths (max / min): fixed x4, timescale x1.
        Spread of the lr where hp/val_loss passes 2x its best across widths (max / min): fixed x4.
        An optimum at the grid edge may lie beyond it: widen the lr grid to be sure.
    """
    base = min((o.width for o in optima), default=1)
    rows = [
        [
            o.arm,
            str(o.width),
            f"{o.width / base:g}",
            f"{o.lr:g}" + (" (grid edge)" if o.at_edge else ""),
            f"{o.metric:.4g}",
            "-" if o.breaks_at is None else f"{o.breaks_at:g}",
        ]
        for o in optima
    ]
    lines = [f"Best base lr per width (mean {metric} over seeds):"]
    header = ["arm", "width", "s", "best lr", metric, f"> {BREAK_FACTOR:g}x best from lr"]
    lines += table_lines(header, rows, rule=False, indent="  ")
    for label, of in (("the best lr", "lr"), (f"the lr where {metric} passes {BREAK_FACTOR:g}x its best", "breaks_at")):
        spread = lr_spread(optima, of)  # type: ignore[arg-type]
        if spread:
            lines.append(
                f"Spread of {label} across widths (max / min): "
                + ", ".join(f"{arm} x{value:.3g}" for arm, value in spread.items())
                + "."
            )
    if any(o.at_edge for o in optima):
        lines.append("An optimum at the grid edge may lie beyond it: widen the lr grid to be sure.")
    return "\n".join(lines)


def plot_width_sweep(
    results: Sequence[dict[str, Any]], out: Path, metric: str = "hp/val_loss", formats: Sequence[str] = ("png",)
) -> dict[str, Path]:
    """Draw ``metric`` against the base lr (log x), one line per width, one panel per arm, each optimum starred, into
    ``out/width_sweep.<fmt>``; returns the paths by format."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    curves = _curves(results, metric)
    optima = {(o.arm, o.width): o for o in find_width_optima(results, metric)}
    arms = [arm for arm in ARMS if any(key[0] == arm for key in curves)]
    widths = sorted({key[1] for key in curves})
    colors = plt.get_cmap("viridis")
    fig, axes = plt.subplots(
        1, len(arms), figsize=(4.6 * len(arms) + 1.8, 4.2), sharey=True, constrained_layout=True, squeeze=False
    )
    finite = [v for points in curves.values() for values in points.values() for v in values if math.isfinite(v)]
    for ax, arm in zip(axes[0], arms):
        for k, width in enumerate(widths):
            if (arm, width) not in curves:
                continue
            color = colors(k / max(1, len(widths) - 1) * 0.85)
            points = curves[(arm, width)]
            lrs = list(points)
            means = [sum(v) / len(v) for v in points.values()]
            ax.plot(lrs, means, "o-", color=color, markersize=4, label=f"width {width} (s={width / widths[0]:g})")
            for lr, values in points.items():
                if len(values) > 1:
                    ax.plot([lr] * len(values), values, ".", color=color, alpha=0.35, markersize=3)
            o = optima[(arm, width)]
            ax.plot([o.lr], [o.metric], "*", color=color, markersize=15, markeredgecolor="black", zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("base learning rate η_base (hidden matrices: η_base / s)")
        ax.grid(True, which="both", alpha=0.3)
        title = {
            "fixed": "fixed λ across widths (τ_iter ∝ s)",
            "timescale": "TimescaleCallback (λ ∝ s, τ_iter fixed)",
        }.get(arm, arm)
        ax.set_title(title, fontsize="medium")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    for ax in axes[0]:
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if finite and min(finite) > 0:
        # a diverged run sits near ln(10) = 2.3 while the optima are near 0.05: a log axis shows both
        axes[0][0].set_yscale("log")
        axes[0][0].yaxis.set_major_formatter(plain)
        axes[0][0].yaxis.set_minor_formatter(plain)
    axes[0][0].set_ylabel(f"final {metric}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title="★ best lr", fontsize="small", loc="outside right upper")
    fig.suptitle(
        f"μP MLP on digits: final {metric} against learning rate (mean over seeds; dots: seeds)", fontsize="medium"
    )
    paths = {}
    out.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = out / f"{FIGURE_STEM}.{fmt}"
        fig.savefig(path, dpi=120)
        paths[fmt] = path
    plt.close(fig)
    return paths


def load_width_results(sweep_dir: Path) -> list[dict[str, Any]]:
    """Each run of a width sweep read back from its TensorBoard logs (HParams record and last scalars), in the form
    :func:`run_one_width` returns; for redrawing a finished sweep with :func:`plot_width_sweep`."""
    from lightning_tau.cli.plot import load_runs

    return [
        {**run.hparams, **run.scalars}
        for run in load_runs(sweep_dir)
        if {"arm", "width", "lr"} <= set(run.hparams) and "hp/val_loss" in run.scalars
    ]


def write_width_summary(
    optima: Sequence[WidthOptimum], config: WidthConfig, path: Path, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write ``{"axis": "width", "optimum": [{"arm", "width", "lr", "metric"}, ...], ...}`` to ``path``."""
    summary: dict[str, Any] = {
        "axis": "width",
        "metric": "hp/val_loss",
        "optimum": [{"arm": o.arm, "width": o.width, "lr": o.lr, "metric": o.metric} for o in optima],
        "lr_spread": lr_spread(optima),
        "breaks_at": [{"arm": o.arm, "width": o.width, "lr": o.breaks_at} for o in optima],
        "breaks_at_spread": lr_spread(optima, "breaks_at"),
        "config": asdict(config),
        **(extra or {}),
    }
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_width_demo(
    config: WidthConfig,
    sweep_dir: Path,
    *,
    plot: bool = True,
    extra_callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Run the width sweep into ``sweep_dir`` (which must exist), print its optimum table, write ``summary.json`` and
    (unless ``plot=False``) ``width_sweep.png``; returns the summary."""
    print(describe_width(config))
    start = time.perf_counter()
    results = []
    for arm in config.arms:
        for width in config.widths:
            for lr in config.lrs:
                for seed in config.seeds:
                    results.append(run_one_width(config, arm, width, lr, seed, sweep_dir, extra_callbacks))
    elapsed = time.perf_counter() - start
    print(f"{config.num_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
    optima = find_width_optima(results)
    print(format_width_optima(optima))
    summary = write_width_summary(optima, config, sweep_dir / SUMMARY_NAME, {"seconds": round(elapsed, 1)})
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        for path in plot_width_sweep(results, sweep_dir).values():
            print(f"Figure: {path}")
    return summary
