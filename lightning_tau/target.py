"""The target timescale a run is asked to hold, as checked (pure; no torch, no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from lightning_tau import _checks, timescale
from lightning_tau._numbers import exponent
from lightning_tau.errors import TimescaleError

__all__ = [
    "SIZE_EXPONENT_LIMIT",
    "Target",
    "WidthExponent",
    "batch_scaled_tau_epoch",
    "batch_scaling_text",
    "check_batch_rule",
    "check_size_rule",
    "check_target",
    "check_width_exponent",
    "size_scaled_tau_epoch",
    "size_scaling_text",
]

#: One exponent ``alpha`` for every group (``tau_iter x S ** (1 - alpha)``), or one per group name (others keep 1).
WidthExponent = float | Mapping[str, float]


@dataclass(frozen=True)
class Target:
    """The timescale to hold, as the callback's arguments gave it (each checked by the functions below).

    Attributes:
        tau_epoch: the target in epochs, at ``reference_dataset_size`` under a size rule (``None``: a target in steps).
        tau_iter: the target in optimizer steps (``None``: a target in epochs).
        width_exponent: ``alpha``: each decaying group holds ``tau_iter * S ** (1 - alpha)`` at the model's muP
            width multiplier ``S`` (``weight_decay ∝ S ** alpha`` for a hidden group), one for every group or one per
            group name (:func:`check_width_exponent`).
        size_exponent: ``e`` of ``tau_epoch ∝ N ** e`` (:func:`check_size_rule`; 0 holds ``tau_epoch`` at every ``N``).
        reference_dataset_size: the ``N`` at which ``tau_epoch`` is the given one (needed where ``e != 0``).
        batch_exponent: ``e`` of ``tau_epoch ∝ B ** e`` (:func:`check_batch_rule`; 0 holds ``tau_epoch`` at every
            global ``B``).
        reference_batch_size: the global ``B`` at which ``tau_epoch`` is the given one (needed where ``e != 0``).

    Example:
        >>> Target(tau_epoch=8.0, size_exponent=-0.5, reference_dataset_size=12_500).scaling_text(50_000)
        'tau_epoch 8 x (50000/12500)^-0.5 = 4'
        >>> Target(tau_epoch=8.0, size_exponent=-0.5, reference_dataset_size=12_500, batch_exponent=1.0,
        ...        reference_batch_size=128).scaling_text(50_000, 256)
        'tau_epoch 8 x (50000/12500)^-0.5 = 4; tau_epoch 4 x (256/128)^1 = 8'
    """

    tau_epoch: float | None = None
    tau_iter: float | None = None
    width_exponent: WidthExponent = 1.0
    size_exponent: float = 0.0
    reference_dataset_size: float | None = None
    batch_exponent: float = 0.0
    reference_batch_size: float | None = None

    def scaling_text(self, dataset_size: float | None, batch_size: float | None = None) -> str | None:
        """How the ``tau_epoch`` held at ``N`` and ``B`` came from the given one (:func:`size_scaling_text`, then
        :func:`batch_scaling_text` from its result; ``None`` without a rule, or a ``tau_epoch``)."""
        if self.tau_epoch is None:
            return None
        size = size_scaling_text(
            self.tau_epoch,
            dataset_size,
            size_exponent=self.size_exponent,
            reference_dataset_size=self.reference_dataset_size,
        )
        at_n = self.size_held(dataset_size)
        assert at_n is not None
        batch = batch_scaling_text(
            at_n, batch_size, batch_exponent=self.batch_exponent, reference_batch_size=self.reference_batch_size
        )
        return "; ".join(t for t in (size, batch) if t is not None) or None

    def size_held(self, dataset_size: float | None) -> float | None:
        """The ``tau_epoch`` held at ``N`` by the size rule alone, before any batch rule (``None`` for a target in
        steps; the given one at exponent 0 or without an ``N``).

        Example:
            >>> Target(8.0, size_exponent=-0.5, reference_dataset_size=100).size_held(400)
            4.0
        """
        if self.tau_epoch is None or dataset_size is None:
            return self.tau_epoch
        return size_scaled_tau_epoch(
            self.tau_epoch,
            dataset_size,
            size_exponent=self.size_exponent,
            reference_dataset_size=self.reference_dataset_size,
        )

    def scaled_by(self) -> str:
        """What the held ``tau_epoch`` moves with: ``"N"``, ``"B"`` or ``"N and B"`` (``"N"`` with neither rule).

        Example:
            >>> Target(8.0, batch_exponent=1, reference_batch_size=64).scaled_by()
            'B'
        """
        by = [x for x, e in (("N", self.size_exponent), ("B", self.batch_exponent)) if e != 0.0]
        return " and ".join(by) or "N"


def check_target(tau_epoch: object, tau_iter: object, *, token_budget: object) -> tuple[float | None, float | None]:
    """``TimescaleCallback(tau_epoch=..., tau_iter=...)``: exactly one of them, or neither with a ``token_budget``;
    a positive finite number; ``tau_iter`` more than one optimizer step.

    Returns ``(tau_epoch, tau_iter)`` as floats (``None`` where not given).

    Example:
        >>> check_target(5, None, token_budget=None), check_target(None, 100, token_budget=None)
        ((5.0, None), (None, 100.0))
        >>> check_target(None, 1, token_budget=None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(tau_iter=1)` is not valid: a timescale of one ...
    """
    if token_budget is None and (tau_epoch is None) == (tau_iter is None):
        raise TimescaleError(
            "`TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and `token_budget`,"
            f" got tau_epoch={tau_epoch!r} and tau_iter={tau_iter!r}."
        )
    epochs = None if tau_epoch is None else _positive("tau_epoch", tau_epoch)
    steps = None if tau_iter is None else _positive("tau_iter", tau_iter)
    if steps is not None and steps <= 1:
        raise _checks.invalid(
            "TimescaleCallback",
            "tau_iter",
            tau_iter,
            "a timescale of one optimizer step or less makes `lr * weight_decay >= 1`, which zeroes or flips the"
            " weights every step. Use `tau_iter > 1`.",
        )
    return epochs, steps


#: The largest ``|size_exponent|`` accepted (:data:`lightning_tau._checks.SIZE_EXPONENT_LIMIT`).
SIZE_EXPONENT_LIMIT = _checks.SIZE_EXPONENT_LIMIT


def check_size_rule(
    size_exponent: object,
    reference_dataset_size: object,
    *,
    owner: str = "TimescaleCallback",
    tau_iter: object = None,
    token_budget: object = None,
) -> tuple[float, int | None]:
    """``size_exponent`` and ``reference_dataset_size``: how the held ``tau_epoch`` moves with ``N``.

    ``size_exponent`` is a finite number in ``[-2, 2]`` (:data:`SIZE_EXPONENT_LIMIT`); a nonzero one needs a
    ``reference_dataset_size`` (a positive whole number, the ``N`` the given ``tau_epoch`` was measured at, in the
    unit of the run's ``N``: samples, or tokens when ``dataset_size`` is given in tokens) and a ``tau_epoch``
    target: a ``tau_iter`` target is in steps, not epochs, and a ``token_budget`` already picks the timescale from
    the tokens per parameter, so scaling it with ``N`` as well would count the data twice. At exponent 0 (the
    paper's rule, the default) ``reference_dataset_size`` is optional and changes nothing.

    Returns ``(size_exponent, reference_dataset_size)`` as a float and an int (or ``None``).

    Example:
        >>> check_size_rule(-0.5, 12_500), check_size_rule(0, None)
        ((-0.5, 12500), (0.0, None))
        >>> check_size_rule(-0.5, None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(size_exponent=-0.5)` is not valid: a nonzero ...
    """
    exponent = _checks.size_exponent(owner, size_exponent)
    reference = None
    if reference_dataset_size is not None:
        ok = (
            isinstance(reference_dataset_size, (int, float))
            and not isinstance(reference_dataset_size, bool)
            and timescale.is_positive_integer(reference_dataset_size)
        )
        if not ok:
            raise _checks.invalid(
                owner,
                "reference_dataset_size",
                reference_dataset_size,
                "use a positive whole number: the dataset size N (samples, or tokens when the run's dataset_size"
                " is in tokens) the given tau_epoch was measured at.",
            )
        reference = int(reference_dataset_size)
    if exponent == 0.0:
        return 0.0, reference
    if reference is None:
        raise _checks.invalid(
            owner,
            "size_exponent",
            size_exponent,
            "a nonzero `size_exponent` needs `reference_dataset_size`, the dataset size N the given tau_epoch"
            " was measured at (the finder's `AxisResult.callback()` passes both).",
        )
    if token_budget is not None:
        raise _checks.invalid(
            owner,
            "size_exponent",
            size_exponent,
            f"`token_budget={token_budget!r}` already picks the timescale from the tokens per parameter; scaling it"
            " with N as well would count the data twice. Use `tau_epoch` with `size_exponent`, or `token_budget`"
            " alone.",
        )
    if tau_iter is not None:
        raise _checks.invalid(
            owner,
            "size_exponent",
            size_exponent,
            f"`size_exponent` scales a `tau_epoch` target with N, and `tau_iter={tau_iter!r}` is in optimizer steps."
            " Give the target as `tau_epoch`.",
        )
    return exponent, reference


def size_scaled_tau_epoch(
    tau_epoch: float, dataset_size: float, *, size_exponent: float, reference_dataset_size: float | None
) -> float:
    r"""The ``tau_epoch`` held at dataset size ``N``: :math:`\tau_{epoch} (N / N_{ref})^{e}` (``tau_epoch`` at
    ``e = 0``).

    Example:
        >>> size_scaled_tau_epoch(8.0, 50_000, size_exponent=-0.5, reference_dataset_size=12_500)
        4.0
        >>> size_scaled_tau_epoch(8.0, 50_000, size_exponent=0.0, reference_dataset_size=None)
        8.0
    """
    if size_exponent == 0.0:
        return tau_epoch
    assert reference_dataset_size is not None  # check_size_rule refuses a nonzero exponent without it
    return tau_epoch * (dataset_size / reference_dataset_size) ** size_exponent


def size_scaling_text(
    tau_epoch: float, dataset_size: float | None, *, size_exponent: float, reference_dataset_size: float | None
) -> str | None:
    """How the held ``tau_epoch`` came from the given one, as the summary says it (``None`` at exponent 0).

    Example:
        >>> size_scaling_text(8.0, 50_000, size_exponent=-0.5, reference_dataset_size=12_500)
        'tau_epoch 8 x (50000/12500)^-0.5 = 4'
    """
    if size_exponent == 0.0 or dataset_size is None or reference_dataset_size is None:
        return None
    held = size_scaled_tau_epoch(
        tau_epoch, dataset_size, size_exponent=size_exponent, reference_dataset_size=reference_dataset_size
    )
    return (  # the exponent as the finder's table spells it (lightning_tau._numbers); the value held is exact
        f"tau_epoch {tau_epoch:.4g} x ({dataset_size:.10g}/{reference_dataset_size:.10g})"
        f"^{exponent(size_exponent, sign=False)} = {held:.4g}"
    )


def check_batch_rule(
    batch_exponent: object,
    reference_batch_size: object,
    *,
    owner: str = "TimescaleCallback",
    tau_iter: object = None,
    token_budget: object = None,
) -> tuple[float, int | None]:
    """``batch_exponent`` and ``reference_batch_size``: how the held ``tau_epoch`` moves with the global batch ``B``.

    ``batch_exponent`` is a finite number in ``[-2, 2]``; a nonzero one needs a ``reference_batch_size`` (a positive
    whole number, the global ``B`` the given ``tau_epoch`` was measured at, in the unit of the run's ``B``) and a
    ``tau_epoch`` target, as :func:`check_size_rule` does for ``N``. With ``lr ∝ B^m`` and ``lambda ∝ B^k`` the
    best ``tau_epoch`` moves as ``B^(1-k-m)`` (THEORY.md §13): ``tau_epoch`` constant (0, the default) is
    ``k = 1 - m``; a fixed ``lambda`` at a fixed lr is exponent 1.

    Returns ``(batch_exponent, reference_batch_size)`` as a float and an int (or ``None``).

    Example:
        >>> check_batch_rule(1, 128), check_batch_rule(0, None)
        ((1.0, 128), (0.0, None))
        >>> check_batch_rule(-0.5, None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(batch_exponent=-0.5)` is not valid: a nonzero ...
    """
    exponent = _checks.batch_exponent(owner, batch_exponent)
    reference = None
    if reference_batch_size is not None:
        ok = (
            isinstance(reference_batch_size, (int, float))
            and not isinstance(reference_batch_size, bool)
            and timescale.is_positive_integer(reference_batch_size)
        )
        if not ok:
            raise _checks.invalid(
                owner,
                "reference_batch_size",
                reference_batch_size,
                "use a positive whole number: the global batch size B (devices x per-device batch x accumulation,"
                " in the unit of the run's B) the given tau_epoch was measured at.",
            )
        reference = int(reference_batch_size)
    if exponent == 0.0:
        return 0.0, reference
    if reference is None:
        raise _checks.invalid(
            owner,
            "batch_exponent",
            batch_exponent,
            "a nonzero `batch_exponent` needs `reference_batch_size`, the global batch size B the given tau_epoch"
            " was measured at (the finder's `AxisResult.callback()` passes both).",
        )
    if token_budget is not None:
        raise _checks.invalid(
            owner,
            "batch_exponent",
            batch_exponent,
            f"`token_budget={token_budget!r}` already picks the timescale as a fraction of the planned steps;"
            " use `tau_epoch` with `batch_exponent`, or `token_budget` alone.",
        )
    if tau_iter is not None:
        raise _checks.invalid(
            owner,
            "batch_exponent",
            batch_exponent,
            f"`batch_exponent` scales a `tau_epoch` target with B, and `tau_iter={tau_iter!r}` is in optimizer steps."
            " Give the target as `tau_epoch`.",
        )
    return exponent, reference


def batch_scaled_tau_epoch(
    tau_epoch: float, batch_size: float, *, batch_exponent: float, reference_batch_size: float | None
) -> float:
    r"""The ``tau_epoch`` held at global batch ``B``: :math:`\tau_{epoch} (B / B_{ref})^{e}` (``tau_epoch`` at
    ``e = 0``).

    Example:
        >>> batch_scaled_tau_epoch(8.0, 512, batch_exponent=-0.5, reference_batch_size=128)
        4.0
        >>> batch_scaled_tau_epoch(8.0, 512, batch_exponent=0.0, reference_batch_size=None)
        8.0
    """
    if batch_exponent == 0.0:
        return tau_epoch
    assert reference_batch_size is not None  # check_batch_rule refuses a nonzero exponent without it
    return tau_epoch * (batch_size / reference_batch_size) ** batch_exponent


def batch_scaling_text(
    tau_epoch: float, batch_size: float | None, *, batch_exponent: float, reference_batch_size: float | None
) -> str | None:
    """How the ``tau_epoch`` held at ``B`` came from ``tau_epoch`` (``None`` at exponent 0 or without a ``B``).

    Example:
        >>> batch_scaling_text(8.0, 256, batch_exponent=1.0, reference_batch_size=128)
        'tau_epoch 8 x (256/128)^1 = 16'
    """
    if batch_exponent == 0.0 or batch_size is None or reference_batch_size is None:
        return None
    held = batch_scaled_tau_epoch(
        tau_epoch, batch_size, batch_exponent=batch_exponent, reference_batch_size=reference_batch_size
    )
    return (  # the exponent as the finder's table spells it (lightning_tau._numbers); the value held is exact
        f"tau_epoch {tau_epoch:.4g} x ({batch_size:.10g}/{reference_batch_size:.10g})"
        f"^{exponent(batch_exponent, sign=False)} = {held:.4g}"
    )


def _positive(name: str, value: object) -> float:
    """A positive finite number, with the callback's name in the message."""
    return _checks.positive_number("TimescaleCallback", name, value, f"`{name}` must be a positive finite number.")


def check_width_exponent(value: object, owner: str = "TimescaleCallback") -> WidthExponent:
    """Validate a width exponent: a finite number, or a mapping from group name (str) to a finite number.

    Returns a float, or a new ``dict`` of floats.

    Raises:
        ValueError: naming ``owner``, the argument and the bad value.

    Example:
        >>> check_width_exponent(0.5), check_width_exponent({"hidden": 0})
        (0.5, {'hidden': 0.0})
        >>> check_width_exponent("half")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(width_exponent='half')` is not valid: use a finite ...
    """
    usage = (
        " use a finite number alpha (weight decay ∝ s ** alpha across widths; 1 is the paper's muP rule) or a"
        " mapping from param group name to alpha, e.g. {'hidden': 0.5}."
    )
    if isinstance(value, Mapping):
        out = {}
        for name, alpha in value.items():
            if not isinstance(name, str) or not _finite_number(alpha):
                raise TimescaleError(
                    f"`{owner}(width_exponent={dict(value)!r})` is not valid: entry {name!r}: {alpha!r};" + usage
                )
            out[name] = float(alpha)
        return out
    if not _finite_number(value):
        raise TimescaleError(f"`{owner}(width_exponent={value!r})` is not valid:" + usage)
    return float(value)  # type: ignore[arg-type]


def _finite_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
