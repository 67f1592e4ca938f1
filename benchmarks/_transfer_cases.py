"""The cases of ``benchmarks/eval_transfer.py``: seeded synthetic tasks, their data and their models.

Nothing is downloaded; every number comes from a case's ``data_seed``. Three kinds of task, each drawn by
:func:`task_tensors`:

- ``classify``: a teacher network labels Gaussian inputs, as in :mod:`lightning_tau.demos.synthetic`
  (``p(y | x) = softmax(sharpness * tanh(x W1 + b1) W2)``, training labels drawn from it, validation scored
  against ``p(y | x)`` itself); a lower ``sharpness`` is noisier labels.
- ``regress``: the same teacher's first logit, scaled to unit variance, plus Gaussian label noise of s.d.
  ``noise``; validation is scored against the noiseless target (the mean squared error is then the excess risk plus
  nothing: no label noise in it).
- ``mixture``: ``classify`` on a fraction ``1 - anchor_share`` of the samples; the rest sit on one of ``anchors``
  fixed points (a small jitter around each), whose labels are drawn from the anchor's own class distribution (peaked
  on a random class, with probability ``anchor_peak``). With few samples per anchor its labels are noise that only
  memorization fits; once each anchor holds several samples the same labels become a learnable signal. The
  effective label noise therefore falls as ``N`` grows, and the best ``tau_epoch`` need not follow one power law
  in ``N`` (the benchmark checks it on its reference sweep).

Training inputs and labels are the first ``n`` of one long stream fixed by ``data_seed`` (``MAX_TRAIN`` samples),
so a larger training set holds a smaller one; the validation set is drawn from a stream of its own, the same at
every ``n``.

Models: :class:`TransferMLP`, a plain or LayerNorm MLP trained with AdamW (``decay`` / ``no_decay`` groups);
:func:`mu_mlp`, the same MLP under μP (mup's ``MuReadout``, ``set_base_shapes`` against a fixed base width, and
``MuAdamW``), which the width axis calls with each width; and :class:`BatchedMLP`, the MLP with a ``batch_size``
attribute, which the batch-size axis sets as Lightning's ``BatchSizeFinder`` does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader

from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO, BatchedTensors, as_batch
from lightning_tau.tuner.axes.batch_size import LR_SCALINGS

__all__ = ["CASES", "BatchedMLP", "Case", "TaskSpec", "TransferData", "TransferMLP", "mu_mlp", "task_tensors"]

#: The longest training stream any case draws (its first ``n`` samples are the training set of size ``n``).
MAX_TRAIN = 16384

Kind = Literal["classify", "regress", "mixture"]


@dataclass(frozen=True)
class TaskSpec:
    """A synthetic task (see the module's text).

    Attributes:
        kind: ``"classify"``, ``"regress"`` or ``"mixture"``.
        dim: input dimension.
        teacher_hidden: the teacher's hidden units.
        classes: classes (``classify``, ``mixture``).
        sharpness: the teacher's logit scale; lower is noisier labels.
        noise: ``regress``: the label noise's standard deviation.
        anchors: ``mixture``: fixed points that carry their own labels.
        anchor_share: ``mixture``: the share of samples drawn at an anchor.
        anchor_peak: ``mixture``: an anchor's probability of its own class.
        val_size: validation samples.
        data_seed: the seed of the teacher and every sample.
    """

    kind: Kind = "classify"
    dim: int = 16
    teacher_hidden: int = 32
    classes: int = 4
    sharpness: float = 6.0
    noise: float = 0.5
    anchors: int = 128
    anchor_share: float = 0.5
    anchor_peak: float = 0.8
    val_size: int = 2048
    data_seed: int = 0

    @property
    def outputs(self) -> int:
        return 1 if self.kind == "regress" else self.classes


def task_tensors(spec: TaskSpec, n_train: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_train, y_train, x_val, y_val)`` of ``spec`` with ``n_train`` training samples (at most :data:`MAX_TRAIN`).

    Classification: ``y_train`` int64 labels, ``y_val`` float class probabilities. Regression: float ``(n, 1)``
    targets, noisy for training and clean for validation.

    Example:
        >>> x, y, xv, yv = task_tensors(TaskSpec(), 100)
        >>> tuple(x.shape), tuple(y.shape), tuple(xv.shape), tuple(yv.shape)
        ((100, 16), (100,), (2048, 16), (2048, 4))
        >>> bool(torch.equal(task_tensors(TaskSpec(), 300)[0][:100], x))  # nested: the first 100 of 300
        True
        >>> bool(torch.equal(task_tensors(TaskSpec(), 300)[2], xv))  # the same validation set at every n
        True
        >>> x, y, xv, yv = task_tensors(TaskSpec(kind="regress"), 50)
        >>> tuple(y.shape), tuple(yv.shape), y.dtype
        ((50, 1), (2048, 1), torch.float32)
    """
    if not 0 < n_train <= MAX_TRAIN:
        raise ValueError(f"`task_tensors(n_train={n_train})` is not valid: use 1 to {MAX_TRAIN}.")
    teacher = torch.Generator().manual_seed(spec.data_seed)
    w1 = torch.randn(spec.dim, spec.teacher_hidden, generator=teacher) / math.sqrt(spec.dim)
    b1 = torch.randn(spec.teacher_hidden, generator=teacher) * 0.5
    w2 = torch.randn(spec.teacher_hidden, spec.classes, generator=teacher) / math.sqrt(spec.teacher_hidden)
    anchor_x = torch.randn(spec.anchors, spec.dim, generator=teacher)
    anchor_class = torch.randint(spec.classes, (spec.anchors,), generator=teacher)
    anchor_p = torch.full((spec.anchors, spec.classes), (1 - spec.anchor_peak) / (spec.classes - 1))
    anchor_p[torch.arange(spec.anchors), anchor_class] = spec.anchor_peak
    scale = float((torch.tanh(torch.randn(4096, spec.dim, generator=teacher) @ w1 + b1) @ w2)[:, 0].std())

    def draw(n: int, stream: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Inputs, class probabilities, sampled labels and the clean regression target of ``n`` samples."""
        g = torch.Generator().manual_seed(1000 * spec.data_seed + stream)
        x = torch.randn(n, spec.dim, generator=g)
        at = torch.rand(n, generator=g) < (spec.anchor_share if spec.kind == "mixture" else 0.0)
        which = torch.randint(spec.anchors, (n,), generator=g)
        x = torch.where(at[:, None], anchor_x[which] + 0.05 * torch.randn(n, spec.dim, generator=g), x)
        z = torch.tanh(x @ w1 + b1) @ w2
        probs = torch.where(at[:, None], anchor_p[which], torch.softmax(spec.sharpness * z, dim=1))
        labels = torch.multinomial(probs, 1, generator=g).squeeze(1)
        return x, probs, labels, z[:, :1] / scale

    x, _, labels, clean = draw(MAX_TRAIN, 1)
    x_val, p_val, _, clean_val = draw(spec.val_size, 2)
    if spec.kind == "regress":
        noisy = clean + spec.noise * torch.randn(MAX_TRAIN, 1, generator=torch.Generator().manual_seed(spec.data_seed))
        return x[:n_train], noisy[:n_train], x_val, clean_val
    return x[:n_train], labels[:n_train], x_val, p_val


class TransferData(pl.LightningDataModule):
    """``spec``'s task with ``train_size`` training samples (the first of its stream) and its fixed validation set.

    Example:
        >>> dm = TransferData(TaskSpec(), train_size=96, batch_size=32)
        >>> dm.setup("fit")
        >>> len(dm.train_dataloader()), len(dm.val_dataloader())
        (3, 1)
    """

    def __init__(self, spec: TaskSpec, train_size: int, batch_size: int) -> None:
        super().__init__()
        self.spec, self.train_size, self.batch_size = spec, train_size, batch_size
        self.train_set: BatchedTensors | None = None
        self.val_set: BatchedTensors | None = None

    def setup(self, stage: str) -> None:
        if self.train_set is None:
            x, y, x_val, y_val = task_tensors(self.spec, self.train_size)
            self.train_set, self.val_set = BatchedTensors(x, y), BatchedTensors(x_val, y_val)

    def train_dataloader(self) -> DataLoader:
        assert self.train_set is not None, "call setup() first"
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=as_batch)

    def val_dataloader(self) -> DataLoader:
        assert self.val_set is not None, "call setup() first"
        return DataLoader(self.val_set, batch_size=len(self.val_set), collate_fn=as_batch)


class TransferMLP(pl.LightningModule):
    """An MLP student: ``depth`` hidden layers of ``hidden`` units (each followed by a LayerNorm with
    ``norm="layer"``, its linear layer then bias-free) and ReLU, then a linear readout (mup's ``MuReadout`` with
    ``mup_readout``). Cross-entropy for ``task="classify"`` (validation against class probabilities), mean squared
    error for ``"regress"``; logs ``val/loss``.

    Plain: AdamW with a ``decay`` group (every matrix) and a ``no_decay`` group (biases, norms). μP
    (``mup_readout``, base shapes set by :func:`mu_mlp`): ``MuAdamW`` with the input and hidden matrices decaying
    and the readout and vectors not, as :class:`~lightning_tau.demos.width.MuDigitsMLP`. The learning rate follows a
    per-step cosine to ``0.1 * lr``; :class:`~lightning_tau.TimescaleCallback` replaces ``weight_decay``.

    Example:
        >>> model = TransferMLP(inputs=4, outputs=3, hidden=8, depth=2, norm="layer")
        >>> tuple(model(torch.randn(5, 4)).shape)
        (5, 3)
        >>> [g["name"] for g in model.configure_optimizers()["optimizer"].param_groups]
        ['decay', 'no_decay']
    """

    def __init__(
        self,
        inputs: int = 16,
        outputs: int = 4,
        hidden: int = 64,
        depth: int = 2,
        norm: Literal["none", "layer"] = "none",
        task: Literal["classify", "regress"] = "classify",
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        mup_readout: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        layers: list[torch.nn.Module] = []
        fan_in = inputs
        for _ in range(depth):
            layers.append(torch.nn.Linear(fan_in, hidden, bias=norm == "none"))
            if norm == "layer":
                layers.append(torch.nn.LayerNorm(hidden))
            layers.append(torch.nn.ReLU())
            fan_in = hidden
        self.body = torch.nn.Sequential(*layers)
        if mup_readout:
            import mup

            self.readout: torch.nn.Module = mup.MuReadout(hidden, outputs)
        else:
            self.readout = torch.nn.Linear(hidden, outputs)
        self.task, self.lr, self.weight_decay, self.mup_readout = task, lr, weight_decay, mup_readout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))

    def _loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.task == "regress":
            return torch.nn.functional.mse_loss(out, y)
        return torch.nn.functional.cross_entropy(out, y)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._loss(self(batch[0]), batch[1])

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        self.log("val/loss", self._loss(self(batch[0]), batch[1]))

    def configure_optimizers(self) -> dict[str, Any]:
        if self.mup_readout:
            import mup

            kept = {id(p) for p in self.readout.parameters()}
            matrices = [p for p in self.parameters() if p.ndim >= 2 and id(p) not in kept]
            vectors = [p for p in self.parameters() if p.ndim < 2 or id(p) in kept]
            optimizer: torch.optim.Optimizer = mup.MuAdamW(
                [{"params": matrices, "weight_decay": self.weight_decay}, {"params": vectors, "weight_decay": 0.0}],
                lr=self.lr,
            )
        else:
            decay = [p for p in self.parameters() if p.ndim >= 2]
            rest = [p for p in self.parameters() if p.ndim < 2]
            optimizer = torch.optim.AdamW(
                [
                    {"params": decay, "weight_decay": self.weight_decay, "name": "decay"},
                    {"params": rest, "weight_decay": 0.0, "name": "no_decay"},
                ],
                lr=self.lr,
            )
        if self._trainer is None:
            return {"optimizer": optimizer}
        total = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, functools.partial(_cosine, total=total))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def _cosine(step: int, total: int) -> float:
    progress = min(step, total) / total
    return COSINE_FINAL_LR_RATIO + (1 - COSINE_FINAL_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))


def mu_mlp(width: int, base_width: int = 16, **kwargs: Any) -> TransferMLP:
    """:class:`TransferMLP` of ``hidden=width`` under μP: ``MuReadout``, and mup's ``set_base_shapes`` against the
    same MLP at ``base_width`` (``2 * base_width`` as the delta), so a hidden matrix's width multiplier is
    ``width / base_width`` at every width the benchmark trains (the finder's and the reference's).

    Example:
        >>> groups = mu_mlp(64, base_width=16, inputs=4, outputs=2).configure_optimizers()["optimizer"].param_groups
        >>> sorted({round(g["lr"] / 3e-3, 4) for g in groups})  # hidden matrices at lr / 4
        [0.25, 1.0]
    """
    import mup

    model = TransferMLP(hidden=width, mup_readout=True, **kwargs)
    base = TransferMLP(hidden=base_width, mup_readout=True, **kwargs)
    delta = TransferMLP(hidden=2 * base_width, mup_readout=True, **kwargs)
    mup.set_base_shapes(model, base, delta=delta)
    return model


class BatchedMLP(TransferMLP):
    """:class:`TransferMLP` with a ``batch_size`` attribute (and hparam): the batch-size axis finds it and sets each
    point's global batch through it, as Lightning's ``BatchSizeFinder`` does (the finder rebuilds the train loader at
    that batch). Nothing else reads it.

    Example:
        >>> model = BatchedMLP(batch_size=64, inputs=4, outputs=2)
        >>> model.batch_size, model.hparams["batch_size"], model.hparams["inputs"]
        (64, 64, 4)
    """

    def __init__(self, batch_size: int = 32, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batch_size = batch_size
        self.save_hyperparameters()


@dataclass(frozen=True)
class Case:
    """One held-out case: a task, a model, the axis the finder measures and the two targets beyond it.

    Attributes:
        name: the case's name (``--cases``).
        about: one line on what it tests.
        axis: ``"dataset_size"``, ``"width"`` or ``"batch_size"``.
        spec: the task.
        scales: the measured scales (training-set sizes, widths, or global batch sizes), increasing.
        targets: the two scales beyond them the reference sweeps (2x and 4-8x the largest measured).
        tau_epochs: the finder's ``tau_epoch`` grid (log-spaced; the reference extends it by the same ratio).
        hidden: the MLP's width (size axis; the width axis sweeps it).
        depth: hidden layers.
        norm: ``"none"`` or ``"layer"``.
        lr: AdamW's (base) learning rate; on the batch axis the smallest batch's, times ``(B / scales[0]) ** m`` at
            ``B`` (:meth:`lr_at`).
        batch_size: ``B`` (the size and width axes; the batch axis sweeps it).
        epochs: epochs per run.
        train_size: width and batch axes: the training samples every run trains on.
        base_width: width axis: μP's base width (the smallest measured width, so the callback's ``tau_epoch``
            is the smallest width's best).
        lr_scaling: batch axis: ``"none"``, ``"sqrt"`` or ``"linear"``, the lr as ``B^m`` (m = 0, 1/2, 1) across
            every batch, the finder's and the reference's.
    """

    name: str
    about: str
    axis: Literal["dataset_size", "width", "batch_size"]
    spec: TaskSpec
    scales: tuple[int, ...]
    targets: tuple[int, int]
    tau_epochs: tuple[float, ...]
    hidden: int = 64
    depth: int = 2
    norm: Literal["none", "layer"] = "none"
    lr: float = 3e-3
    batch_size: int = 32
    epochs: int = 16
    train_size: int = 512
    base_width: int = 16
    lr_scaling: Literal["none", "sqrt", "linear"] = "none"
    extra: dict[str, Any] = field(default_factory=dict)

    def model_kwargs(self) -> dict[str, Any]:
        task = "regress" if self.spec.kind == "regress" else "classify"
        return {
            "inputs": self.spec.dim,
            "outputs": self.spec.outputs,
            "depth": self.depth,
            "norm": self.norm,
            "task": task,
            "lr": self.lr,
        }

    def lr_at(self, batch_size: int) -> float:
        """Batch axis: the lr a run at global batch ``batch_size`` trains at, ``lr * (B / scales[0]) ** m`` (the
        finder's ``lr_scaling``).

        Example:
            >>> case = CASES["batch-cls-sqrt"]  # lr ∝ √B from the smallest batch, 16
            >>> case.lr_at(256) / case.lr, case.lr_at(16) == case.lr, CASES["batch-cls"].lr_at(256) == case.lr
            (4.0, True, True)
        """
        return self.lr * (batch_size / self.scales[0]) ** LR_SCALINGS[self.lr_scaling]

    def finder_model(self) -> Callable[..., TransferMLP]:
        """The finder's ``model``: a factory of the size axis's MLP, the width axis's ``make_model(width)``, or the
        batch axis's :class:`BatchedMLP` at the smallest batch and lr (the finder sets each point's)."""
        if self.axis == "width":
            return functools.partial(mu_mlp, base_width=self.base_width, **self.model_kwargs())
        if self.axis == "batch_size":
            return functools.partial(BatchedMLP, batch_size=self.scales[0], hidden=self.hidden, **self.model_kwargs())
        return functools.partial(TransferMLP, hidden=self.hidden, **self.model_kwargs())

    def finder_data(self) -> TransferData:
        """The finder's training set: on the size axis the largest target's (the finder subsets it to each measured
        size, so its ``full_tau_epoch`` is the prediction there); on the width axis ``train_size``; on the batch axis
        ``train_size`` loaded at the smallest batch (the finder rebuilds the loader at each)."""
        if self.axis == "batch_size":
            return TransferData(self.spec, self.train_size, self.scales[0])
        n = max(self.targets) if self.axis == "dataset_size" else self.train_size
        return TransferData(self.spec, n, self.batch_size)

    def fractions(self) -> tuple[float, ...]:
        """Size axis: the measured sizes as fractions of :meth:`finder_data`'s (each keeps exactly its ``N``)."""
        return tuple(n / max(self.targets) for n in self.scales)

    def reference_model(self, target: int) -> Callable[[], TransferMLP]:
        """The model the reference sweep at ``target`` trains: the target width's μP MLP on the width axis; on the
        batch axis :class:`BatchedMLP` at batch ``target`` and its lr (:meth:`lr_at`)."""
        if self.axis == "width":
            return functools.partial(mu_mlp, target, base_width=self.base_width, **self.model_kwargs())
        if self.axis == "batch_size":
            kwargs = {**self.model_kwargs(), "lr": self.lr_at(target)}
            return functools.partial(BatchedMLP, batch_size=target, hidden=self.hidden, **kwargs)
        return self.finder_model()

    def reference_data(self, target: int) -> TransferData:
        """The reference's training set: ``target`` samples (size axis), or ``train_size`` (width axis; batch axis,
        loaded at batch ``target``)."""
        if self.axis == "batch_size":
            return TransferData(self.spec, self.train_size, target)
        return TransferData(self.spec, target if self.axis == "dataset_size" else self.train_size, self.batch_size)

    def steps(self, scale: int) -> int:
        """Optimizer steps of one run at ``scale`` (on the batch axis: at global batch ``scale``)."""
        n = scale if self.axis == "dataset_size" else self.train_size
        return self.epochs * math.ceil(n / (scale if self.axis == "batch_size" else self.batch_size))

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "spec"}
        out["spec"] = asdict(self.spec)
        return out


def _grid(low: float, ratio: float, num: int) -> tuple[float, ...]:
    return tuple(round(low * ratio**k, 6) for k in range(num))


_SQRT2 = math.sqrt(2.0)
_SIZES, _SIZE_TARGETS = (128, 256, 512), (1024, 2048)
_WIDTHS, _WIDTH_TARGETS = (16, 32, 64), (128, 256)
_BATCHES, _BATCH_TARGETS = (16, 32, 64), (128, 256)
#: Every case's finder grid: 2 to 32 by sqrt(2) (placed after a first run of ``cls`` on 1 to 11.3, whose best sat at
#: the top edge at N = 128 and 256; the reference sweeps extend it by the same ratio as needed).
_GRID = _grid(2.0, _SQRT2, 9)

#: The batch axis's training samples: every batch, measured or target, trains on the same set for the same epochs
#: (fewer steps at a larger batch); ``batch-reg-sqrt`` half of it (its run had to fit a shared 2-core machine).
_BATCH_N = 2048

#: The benchmark's cases, by name (at least 8; see ``benchmarks/README.md``).
CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case(
            "cls",
            "teacher-student classification, plain MLP (labels from the teacher's softmax, sharpness 6)",
            "dataset_size",
            TaskSpec(kind="classify", sharpness=6.0, data_seed=11),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
        ),
        Case(
            "cls-noisy",
            "as cls with noisier labels (sharpness 2.5)",
            "dataset_size",
            TaskSpec(kind="classify", sharpness=2.5, data_seed=12),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
        ),
        Case(
            "cls-ln",
            "teacher-student classification, MLP with LayerNorm after every hidden layer",
            "dataset_size",
            TaskSpec(kind="classify", sharpness=6.0, data_seed=13),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
            norm="layer",
        ),
        Case(
            "reg",
            "teacher-student regression, Gaussian label noise s.d. 0.5, plain MLP",
            "dataset_size",
            TaskSpec(kind="regress", noise=0.5, data_seed=14),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
        ),
        Case(
            "reg-noisy",
            "teacher-student regression, Gaussian label noise s.d. 1.0, MLP with LayerNorm",
            "dataset_size",
            TaskSpec(kind="regress", noise=1.0, data_seed=15),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
            norm="layer",
        ),
        Case(
            "mixture",
            "classification where half the samples sit on 128 anchors with their own labels: noise at small N,"
            " signal once each anchor repeats (the effective noise falls with N)",
            "dataset_size",
            TaskSpec(kind="mixture", sharpness=6.0, anchors=128, anchor_share=0.5, anchor_peak=0.8, data_seed=16),
            _SIZES,
            _SIZE_TARGETS,
            _GRID,
        ),
        Case(
            "mup-cls-ln",
            "μP width axis (mup set_base_shapes + MuAdamW), classification, LayerNorm MLP, N=512",
            "width",
            TaskSpec(kind="classify", sharpness=3.0, data_seed=17),
            _WIDTHS,
            _WIDTH_TARGETS,
            _GRID,
            norm="layer",
        ),
        Case(
            "mup-reg",
            "μP width axis, regression (label noise s.d. 1.0), plain MLP, N=512",
            "width",
            TaskSpec(kind="regress", noise=1.0, data_seed=18),
            _WIDTHS,
            _WIDTH_TARGETS,
            _GRID,
        ),
        Case(
            "batch-cls",
            "batch-size axis, classification (sharpness 6), plain MLP, N=2048, the same lr at every B",
            "batch_size",
            TaskSpec(kind="classify", sharpness=6.0, data_seed=19),
            _BATCHES,
            _BATCH_TARGETS,
            _GRID,
            train_size=_BATCH_N,
        ),
        Case(
            "batch-cls-sqrt",
            "batch-size axis, as batch-cls with lr ∝ √B (lr_scaling='sqrt')",
            "batch_size",
            TaskSpec(kind="classify", sharpness=6.0, data_seed=20),
            _BATCHES,
            _BATCH_TARGETS,
            _GRID,
            train_size=_BATCH_N,
            lr_scaling="sqrt",
        ),
        Case(
            "batch-reg-sqrt",
            "batch-size axis, regression (label noise s.d. 0.5), MLP with LayerNorm, N=1024, lr ∝ √B",
            "batch_size",
            TaskSpec(kind="regress", noise=0.5, data_seed=21),
            _BATCHES,
            _BATCH_TARGETS,
            _GRID,
            norm="layer",
            train_size=_BATCH_N // 2,
            lr_scaling="sqrt",
        ),
    )
}
