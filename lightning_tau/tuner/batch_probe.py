"""The batch-size axis's trials: how each point's global batch is set (the model's ``batch_size``, as
``BatchSizeFinder`` sets it, or gradient accumulation) and its model at the scaled lr.

More: docs/finder.rst, "Along the batch size".
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities.parsing import lightning_getattr, lightning_hasattr, lightning_setattr
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.trial import loader_like

__all__ = [
    "ATTRIBUTE",
    "ACCUMULATION",
    "BatchedModel",
    "HeldBeta2",
    "adam_beta2s",
    "batch_setting",
    "check_held_beta2",
    "lr_attribute",
    "rebatched",
]

#: how a point's batch is set: the model's ``batch_size``, or gradient accumulation over the loader's batch
ATTRIBUTE = "the model's batch_size"
ACCUMULATION = "gradient accumulation"


def batch_setting(probe: pl.LightningModule, loader_batch: int, batch_sizes: Sequence[int]) -> str:
    """:data:`ATTRIBUTE` where ``probe`` has a ``batch_size`` attribute or hparam, else :data:`ACCUMULATION`, each
    of ``batch_sizes`` then a whole multiple of ``loader_batch`` (else a one-line error naming it)."""
    if lightning_hasattr(probe, "batch_size"):
        return ATTRIBUTE
    for b in batch_sizes:
        if b % loader_batch:
            raise TimescaleError(
                f"`TimescaleFinder(batch_sizes={list(batch_sizes)!r})`: {b} is not a whole multiple of the train"
                f" loader's batch_size {loader_batch}, and the model has no `batch_size` attribute or hparam to set,"
                " so the batch is set by gradient accumulation: give multiples of the loader's batch, or give the"
                " model a `batch_size` (as Lightning's BatchSizeFinder expects)."
            )
    return ACCUMULATION


def lr_attribute(probe: pl.LightningModule, lr_scaling: str) -> str:
    """The model's lr attribute (``lr`` or ``learning_rate``, as Lightning's ``LearningRateFinder`` looks them up),
    else a one-line error naming ``lr_scaling``."""
    for name in ("lr", "learning_rate"):
        if lightning_hasattr(probe, name):
            return name
    raise TimescaleError(
        f"`TimescaleFinder(lr_scaling={lr_scaling!r})` needs the model's learning rate as an `lr` or `learning_rate`"
        f" attribute or hparam (its {type(probe).__name__!r} has neither) to scale it across the batch sizes: add one"
        " that configure_optimizers reads, or leave `lr_scaling` out."
    )


def rebatched(loader: DataLoader, batch_size: int) -> DataLoader:
    """A copy of the plain ``loader`` (the finder's subset loader) at ``batch_size``."""
    return loader_like(loader, loader.dataset, batch_size=batch_size, shuffle=isinstance(loader.sampler, RandomSampler))


class BatchedModel:
    """Makes a trial's model at one batch-axis point: ``make()``, then its ``batch_size`` set to ``batch_size`` (where
    the batch is set so) and its lr attribute multiplied by ``lr_factor`` (where it is not 1), in its hparams too, and
    in the hparams its loggers log (TensorBoard's hparams, ``hparams.yaml``): the batch and lr the trial trains with,
    not those the model was built with. Pickles when ``make`` does (a worker process builds its own)."""

    def __init__(
        self, make: Callable[[], Any], batch_size: int | None, lr_name: str | None, lr_factor: float
    ) -> None:
        self.make, self.batch_size, self.lr_name, self.lr_factor = make, batch_size, lr_name, lr_factor

    def __call__(self) -> pl.LightningModule:
        model = self.make()
        if self.batch_size is not None:
            _set_in_force(model, "batch_size", self.batch_size)
        if self.lr_name is not None and self.lr_factor != 1.0:
            _set_in_force(model, self.lr_name, lightning_getattr(model, self.lr_name) * self.lr_factor)
        return model


def _set_in_force(model: pl.LightningModule, name: str, value: Any) -> None:
    """``model``'s attribute or hparam ``name`` set to ``value`` (``lightning_setattr``), and so is the hparam the
    Trainer's loggers log, where ``name`` is one. Lightning logs ``hparams_initial``, a copy taken by
    ``save_hyperparameters`` that ``lightning_setattr`` leaves as it was, and has no public way to change it: its
    private ``_hparams_initial`` is the copy (without this, a trial at ``B = 128`` and ``lr x 2`` logs the batch and lr
    it was built with)."""
    lightning_setattr(model, name, value)
    initial = getattr(model, "_hparams_initial", None)
    if isinstance(initial, MutableMapping) and name in initial:
        initial[name] = value


def check_held_beta2(beta2s: Sequence[float], largest: float, beta2: str) -> None:
    """Refuse, in one line naming ``beta2`` and the value, an optimizer ``β₂`` that held in samples at ``largest``
    (``B_max / B_0``) rounds to 1 or falls to 0 or below (``β₂ ** largest`` outside ``(0, 1)``, which Adam cannot
    use): checked before any trial trains a step, so no smaller batch trains first.

    Example:
        >>> check_held_beta2([0.999, 0.99], 64.0, "held")
        >>> check_held_beta2([1e-6], 64.0, "both")
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(beta2='both')`: the optimizer's β₂ = 1e-06 held in samples at the largest batch (64 times the smallest) is 0.0, which Adam cannot use (it must lie in (0, 1)): give the optimizer a β₂ nearer 1 (β₂^64 must stay above 0), a narrower batch_sizes range, or beta2='fixed'.
    """  # noqa: E501
    for value in beta2s:
        held = float(value) ** largest
        if not 0.0 < held < 1.0:
            raise TimescaleError(
                f"`TimescaleFinder(beta2={beta2!r})`: the optimizer's β₂ = {value!r} held in samples at the largest"
                f" batch ({largest:g} times the smallest) is {held!r}, which Adam cannot use (it must lie in (0, 1)):"
                f" give the optimizer a β₂ {'below 1' if held >= 1 else 'nearer 1'}"
                f" (β₂^{largest:g} must stay {'below 1' if held >= 1 else 'above 0'}), a narrower batch_sizes range,"
                " or beta2='fixed'."
            )


def adam_beta2s(optimizers: Sequence[Any]) -> list[float]:
    """Every Adam-like group's (one with a ``betas`` pair) ``β₂`` in ``optimizers``."""
    return [float(g["betas"][1]) for o in optimizers for g in o.param_groups if "betas" in g]


class HeldBeta2(Callback):
    """``beta2="held"``: Adam's ``β₂`` window held in samples (Marek et al. 2025) at a batch ``ratio = B / B_0`` times
    the smallest: at train start every Adam-like group's (one with a ``betas`` pair) ``β₂`` becomes
    ``β₂ ** ratio``. First, before any step, it checks every group's ``β₂`` held at ``largest`` (``B_max / B_0``;
    :func:`check_held_beta2`), so that whichever trial starts first refuses a ``β₂`` no batch of the sweep could use,
    in one line naming ``beta2`` (the finder's setting, ``"held"`` or ``"both"``). ``ratio=1`` (``beta2="both"``'s
    sweep, at the optimizer's ``β₂``) leaves ``β₂`` as it is and only checks."""

    def __init__(self, ratio: float, largest: float | None = None, beta2: str = "held") -> None:
        self.ratio, self.largest, self.beta2 = ratio, max(ratio, largest or ratio), beta2

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        check_held_beta2(adam_beta2s(trainer.optimizers), self.largest, self.beta2)
        if self.ratio == 1.0:
            return
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                if "betas" in group:
                    beta1, beta2 = group["betas"]
                    group["betas"] = (beta1, float(beta2) ** self.ratio)
