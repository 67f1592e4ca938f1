"""Tune small, train big: carry a tuned run's EMA timescale to a bigger run, per param group (pure math).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lightning_tau import _checks, timescale
from lightning_tau._table import table_lines
from lightning_tau.width import model_width_mult

__all__ = [
    "GroupTransfer",
    "TargetRun",
    "TunedRun",
    "check_exponents",
    "format_transfer_table",
    "target_tau_epoch",
    "transfer_groups",
]


@dataclass(frozen=True)
class TunedRun:
    """A run whose learning rate and weight decay were tuned.

    Attributes:
        lr: the base learning rate (the width-multiplier-1 groups' lr; what you pass to ``MuAdamW``).
        weight_decay: the base weight decay (likewise: the width-multiplier-1 groups' value).
        dataset_size: ``N``, samples (or tokens) per epoch.
        batch_size: global ``B``, same unit as ``N``.
        width: the model width, if widths are to be compared (any unit: hidden size, channels, ...).

    Example:
        >>> run = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100)
        >>> run.tau_epoch, run.tau_iter
        (20.0, 10000.0)
        >>> TunedRun(lr=1e-3, weight_decay=0.0, dataset_size=50_000, batch_size=100)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `weight_decay` must be a positive finite number, got 0.0.
    """

    lr: float
    weight_decay: float
    dataset_size: float
    batch_size: float
    width: float | None = None

    def __post_init__(self) -> None:
        for name in ("lr", "weight_decay", "dataset_size", "batch_size"):
            timescale.check_positive(name, getattr(self, name))
        if self.width is not None:
            timescale.check_positive("width", self.width)

    @property
    def tau_iter(self) -> float:
        """The tuned EMA timescale in optimizer steps, ``1 / (lr * weight_decay)``."""
        return timescale.tau_iter(self.lr, self.weight_decay)

    @property
    def tau_epoch(self) -> float:
        """The tuned EMA timescale in epochs, ``B / (lr * weight_decay * N)``."""
        return timescale.tau_epoch(self.lr, self.weight_decay, self.dataset_size, self.batch_size)


@dataclass(frozen=True)
class TargetRun:
    """The run to transfer to; every field left ``None`` keeps the tuned run's value.

    Attributes:
        lr: base learning rate of the target (muP keeps it across width: that is the point).
        dataset_size: ``N`` of the target.
        batch_size: global ``B`` of the target.
        width: model width of the target, in the tuned run's unit.
    """

    lr: float | None = None
    dataset_size: float | None = None
    batch_size: float | None = None
    width: float | None = None

    def __post_init__(self) -> None:
        for name in ("lr", "dataset_size", "batch_size", "width"):
            if getattr(self, name) is not None:
                timescale.check_positive(name, getattr(self, name))


@dataclass(frozen=True)
class GroupTransfer:
    """One row of the target's table: what one param group should get.

    Attributes:
        name: the group (``"all"``, or ``"vector-like"`` / ``"matrix-like"`` across widths, or your names).
        width_mult: the group's muP width multiplier ``s`` in the target (``1`` for vector-like parameters).
        lr: its learning rate, ``lr_target / s``.
        weight_decay: its weight decay, ``B' / (lr * N' * tau_epoch)``.
        tau_iter: its timescale in steps (the same for every group at ``width_exponent=1``; else times
            ``S ** (1 - width_exponent)``, ``S`` the target's width multiplier, for every group).
        tau_epoch: its timescale in epochs: the tuned run's, times ``(N' / N) ** size_exponent``,
            ``(B' / B) ** batch_exponent`` and ``S ** (1 - width_exponent)``.
    """

    name: str
    width_mult: float
    lr: float
    weight_decay: float
    tau_iter: float
    tau_epoch: float


def transfer_groups(
    tuned: TunedRun,
    target: TargetRun | None = None,
    *,
    base_width: float | None = None,
    width_mults: Mapping[str, float] | None = None,
    size_exponent: float = 0.0,
    width_exponent: float = 1.0,
    batch_exponent: float = 0.0,
) -> list[GroupTransfer]:
    """The target run's per-group learning rate and weight decay at the tuned run's ``tau_epoch``.

    .. math:: \\lambda'_g = \\frac{B' \\, S^{\\alpha - 1}}{\\eta'_g N' \\tau_{epoch} (N'/N)^{e}}
        = \\frac{B' \\, s_g \\, S^{\\alpha - 1}}{\\eta' N' \\tau_{epoch} (N'/N)^{e}},
        \\qquad \\eta'_g = \\eta' / s_g

    ``S`` is the target's width multiplier, the largest ``s_g`` (:func:`lightning_tau.width.model_width_mult`, as
    ``TimescaleCallback`` reads it): every group's timescale moves by ``S ** (1 - alpha)``, the hidden ones
    (``s_g = S``) to ``λ ∝ S ** alpha``, the vector-like ones with them, which is what the finder's width axis
    measures. At the paper's rules (``e = 0``, ``alpha = 1``) every group holds the tuned ``tau_epoch``.

    Groups: ``width_mults`` when given (name -> the target's multiplier ``s``); else, when ``target.width`` is
    given, ``"vector-like"`` (``s = 1``: embeddings, biases, norms, mup's readout) and ``"matrix-like"``
    (``s = target.width / base_width``, the hidden weights); else one group ``"all"``.

    Args:
        tuned: the tuned run.
        target: the target run (``None``: same as the tuned run).
        base_width: muP's base width, the width at which ``s = 1``; defaults to ``tuned.width``. The tuned
            ``lr`` and ``weight_decay`` are its width-multiplier-1 values either way.
        width_mults: explicit groups and their multipliers in the target.
        size_exponent: ``e`` of ``tau_epoch ∝ N ** e`` from the tuned ``N`` to the target's (0 keeps ``tau_epoch``;
            -0.5 the 1/2 rules; -1 keeps the weight decay at fixed lr and ``B``), a finite number in [-2, 2].
        width_exponent: ``alpha`` of ``weight_decay ∝ S ** alpha`` for hidden weights (1 the
            paper's rule; 0.5 Fan et al.; 0 a fixed weight decay), a finite number.
        batch_exponent: ``e`` of ``tau_epoch ∝ B ** e`` from the tuned global ``B`` to the target's (0 keeps
            ``tau_epoch``, ``λ ∝ B`` at a fixed lr; 1 keeps the weight decay at a fixed lr and ``N``; with
            ``lr ∝ B^m`` and ``λ ∝ B^k``, ``1 - k - m``), a finite number in [-2, 2]; times the size factor.

    Raises:
        ValueError: for ``target.width`` without ``tuned.width`` or ``base_width``, or a bad number.

    Example:
        >>> tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100, width=256)
        >>> # ten times the data: one tenth of the weight decay
        >>> [(g.name, g.lr, round(g.weight_decay, 12)) for g in transfer_groups(tuned, TargetRun(dataset_size=500_000))]
        [('all', 0.001, 0.01)]
        >>> # four times wider under muP: hidden weights get lr / 4 and weight decay x 4
        >>> rows = transfer_groups(tuned, TargetRun(width=1024))
        >>> [(g.name, g.width_mult, g.lr, round(g.weight_decay, 12), g.tau_iter) for g in rows]
        [('vector-like', 1.0, 0.001, 0.1, 10000.0), ('matrix-like', 4.0, 0.00025, 0.4, 10000.0)]
        >>> # four times the data by the 1/2 rules (tau_epoch x 4^-0.5), 4x wider by Fan et al. (tau x 4^0.5)
        >>> rows = transfer_groups(tuned, TargetRun(dataset_size=200_000, width=1024), size_exponent=-0.5,
        ...                        width_exponent=0.5)
        >>> [(g.name, round(g.weight_decay, 12), g.tau_epoch) for g in rows]
        [('vector-like', 0.025, 20.0), ('matrix-like', 0.1, 20.0)]
    """
    size_exponent, width_exponent = check_exponents(size_exponent, width_exponent)
    batch_exponent = _checks.batch_exponent("transfer_groups", batch_exponent)
    target = TargetRun() if target is None else target
    lr = tuned.lr if target.lr is None else target.lr
    n = tuned.dataset_size if target.dataset_size is None else target.dataset_size
    b = tuned.batch_size if target.batch_size is None else target.batch_size
    tau_epoch = target_tau_epoch(tuned, n, size_exponent, batch_size=b, batch_exponent=batch_exponent)
    tau_iter = timescale.tau_iter_from_tau_epoch(tau_epoch, n, b)

    if width_mults is not None:
        mults = {str(k): timescale.check_positive(f"width_mults[{k!r}]", v) for k, v in width_mults.items()}
        if not mults:
            raise ValueError("`width_mults` is empty: give at least one group, for example {'hidden': 4.0}.")
    elif target.width is not None:
        base = tuned.width if base_width is None else timescale.check_positive("base_width", base_width)
        if base is None:
            raise ValueError(
                f"`TargetRun(width={target.width!r})` needs the tuned run's width to compare with: set"
                " `TunedRun(width=...)` or `base_width`."
            )
        mults = {"vector-like": 1.0, "matrix-like": target.width / base}
    else:
        mults = {"all": 1.0}
    factor = model_width_mult(mults.items()) ** (1.0 - width_exponent)  # S ** (1 - alpha), every group
    return [
        GroupTransfer(
            name=name,
            width_mult=s,
            lr=lr / s,
            weight_decay=timescale.weight_decay_for_tau_iter(lr / s, tau_iter * factor),
            tau_iter=tau_iter * factor,
            tau_epoch=tau_epoch * factor,
        )
        for name, s in mults.items()
    ]


#: The widest ``|size_exponent|`` taken, as ``TimescaleCallback`` takes it
#: (:func:`lightning_tau._checks.size_exponent`).
SIZE_EXPONENT_LIMIT = _checks.SIZE_EXPONENT_LIMIT


def check_exponents(
    size_exponent: object, width_exponent: object, owner: str = "transfer_groups"
) -> tuple[float, float]:
    """``size_exponent`` a finite number in [-2, 2], ``width_exponent`` a finite number; as floats.

    Example:
        >>> check_exponents(-0.5, 1)
        (-0.5, 1.0)
        >>> check_exponents(-3, 1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `transfer_groups(size_exponent=-3)` is not valid: use a finite number ...
    """
    size = _checks.size_exponent(owner, size_exponent)
    width = _checks.finite_number(
        owner,
        "width_exponent",
        width_exponent,
        "use a finite number alpha (weight decay ∝ s ** alpha across muP widths; 1 is the paper's rule, 0.5 Fan et"
        " al., 0 a fixed weight decay).",
    )
    return size, width


def target_tau_epoch(
    tuned: TunedRun,
    dataset_size: float,
    size_exponent: float = 0.0,
    *,
    batch_size: float | None = None,
    batch_exponent: float = 0.0,
) -> float:
    """The ``tau_epoch`` the target run holds at ``N' = dataset_size`` and ``B' = batch_size``:
    ``tuned.tau_epoch * (N' / N) ** size_exponent * (B' / B) ** batch_exponent``.

    Example:
        >>> tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100)
        >>> target_tau_epoch(tuned, 200_000, -0.5), target_tau_epoch(tuned, 50_000, batch_size=400, batch_exponent=1)
        (10.0, 80.0)
    """
    held = tuned.tau_epoch
    if size_exponent != 0.0:
        held *= (dataset_size / tuned.dataset_size) ** size_exponent
    if batch_exponent != 0.0 and batch_size is not None:
        held *= (batch_size / tuned.batch_size) ** batch_exponent
    return held


def format_transfer_table(
    tuned: TunedRun,
    target: TargetRun | None,
    rows: Sequence[GroupTransfer],
    *,
    size_exponent: float = 0.0,
    width_exponent: float = 1.0,
    batch_exponent: float = 0.0,
) -> str:
    """Render :func:`transfer_groups`' rows as the fixed-width table ``lightning-tau transfer`` prints (give the
    exponents the rows were computed with: the header says how ``tau_epoch`` and the weight decay moved).

    Example:
        >>> tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100)
        >>> target = TargetRun(dataset_size=500_000)
        >>> print(format_transfer_table(tuned, target, transfer_groups(tuned, target)))
        Tuned:  lr=0.001, weight_decay=0.1, N=50,000, B=100 -> tau_epoch=20 (tau_iter=10000 steps)
        Target: lr=0.001, N=500,000, B=100, M=N/B=5000 steps/epoch -> same tau_epoch=20 (tau_iter=100000 steps)
        Group | Width mult | lr    | Weight decay | tau_iter | tau_epoch
        ----------------------------------------------------------------
        all   | 1          | 0.001 | 0.01         | 100000   | 20
    """
    target = TargetRun() if target is None else target
    lr = tuned.lr if target.lr is None else target.lr
    n = tuned.dataset_size if target.dataset_size is None else target.dataset_size
    b = tuned.batch_size if target.batch_size is None else target.batch_size
    width = f", width={_num(tuned.width)}" if tuned.width is not None else ""
    target_width = f", width={_num(target.width)}" if target.width is not None else ""
    tau_epoch = target_tau_epoch(tuned, n, size_exponent, batch_size=b, batch_exponent=batch_exponent)
    tau_iter = timescale.tau_iter_from_tau_epoch(tau_epoch, n, b)
    if size_exponent == 0.0 and batch_exponent == 0.0:
        held = f"same tau_epoch={_num(tuned.tau_epoch)}"
    else:
        factors = [
            f" x ({new:.10g}/{old:.10g})^{e:g}"
            for new, old, e in ((n, tuned.dataset_size, size_exponent), (b, tuned.batch_size, batch_exponent))
            if e != 0.0
        ]
        held = f"tau_epoch {_num(tuned.tau_epoch)}{''.join(factors)} = {_num(tau_epoch)}"
    lines = [
        f"Tuned:  lr={_num(tuned.lr)}, weight_decay={_num(tuned.weight_decay)}, N={tuned.dataset_size:,.0f},"
        f" B={tuned.batch_size:,.0f}{width} -> tau_epoch={_num(tuned.tau_epoch)} (tau_iter={_num(tuned.tau_iter)}"
        " steps)",
        f"Target: lr={_num(lr)}, N={n:,.0f}, B={b:,.0f}{target_width}, M=N/B={_num(n / b)} steps/epoch -> {held}"
        f" (tau_iter={_num(tau_iter)} steps)",
    ]
    if width_exponent != 1.0:
        s = model_width_mult((r.name, r.width_mult) for r in rows)
        lines.append(
            f"width_exponent={width_exponent:g} at the target's width multiplier S={s:g}: every group holds tau_iter x"
            f" S^{1 - width_exponent:g} (weight decay ∝ S^{width_exponent:g} for the hidden weights)."
        )
    columns = ["Group", "Width mult", "lr", "Weight decay", "tau_iter", "tau_epoch"]
    cells = [
        [r.name, _num(r.width_mult), _num(r.lr), _num(r.weight_decay), _num(r.tau_iter), _num(r.tau_epoch)]
        for r in rows
    ]
    return "\n".join([*lines, *table_lines(columns, cells)])


def _num(value: float | None) -> str:
    """Six significant digits, no exponent below a million: enough to paste back into a config."""
    if value is None:
        return "-"
    return f"{value:.6g}"
