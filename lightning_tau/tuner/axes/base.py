"""What a finder axis is: the :class:`Axis` base every axis module subclasses, and the published :class:`Rule` record.

Pure (the standard library only): nothing here, nor in the axis modules beside it, imports anything above it in
the tuner (the lowest floor of ``lightning_tau.tuner``; the rules are decided in
:mod:`lightning_tau.tuner.analysis.rules`). The module map: ``docs/architecture.rst``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

__all__ = ["Axis", "Rule", "frac"]


def frac(value: float) -> str:
    """``-0.5`` as ``-1/2``; a whole number without a point.

    Example:
        >>> frac(-0.5), frac(1.0), frac(0.25)
        ('-1/2', '1', '1/4')
    """
    f = Fraction(value).limit_denominator(8)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


@dataclass(frozen=True)
class Rule:
    """A published rule: its name, its exponent on the axis, where it is published and what it prescribes.

    Attributes:
        name: e.g. ``"Wang & Aitchison"``.
        exponent: the exponent of the best ``x`` in the scale that the rule predicts on this axis.
        source: where it is published.
        says: what following it means, in words (``"α = 1/2: λ ∝ √s"``, ``"tau_epoch constant, so λ ∝ 1/N"``).
    """

    name: str
    exponent: float
    source: str
    says: str


_INSTANCES: dict[type, Axis] = {}


class Axis:
    """One axis of :class:`~lightning_tau.tuner.finder.TimescaleFinder`: what it varies, what it is called and how its
    result is read. Each axis is a subclass in its own module of :mod:`lightning_tau.tuner.axes`, with one instance
    in the registry (:func:`~lightning_tau.tuner.axes.resolve_axis`); the finder resolves the user's ``axis`` string
    to it once, and every module downstream reads its attributes instead of comparing names.

    **What an axis must define** (class attributes; a new axis is one module plus its rules, registered in
    ``axes/__init__.py``):

    - ``name`` (the name studies, JSON and ``AxisResult.axis`` hold) and ``spellings`` (every string
      ``TimescaleFinder(axis=...)`` and ``--axis`` accept for it, ``name`` first), ``description`` (a few words
      for the error that lists the axes);
    - ``scaling``: whether it sweeps several points and fits an exponent of the best value against their scale
      (``False`` only for the fraction axis: one point, no rules, no tolerance); then also
    - ``values_argument`` (the finder's argument that lists its points, e.g. ``"widths"``) and ``value_key`` (the
      key of a point's value in its study key, e.g. ``"width"``), ``value_type`` (``int`` or ``float``), and for
      the errors ``values_needed`` (what the argument must hold) and ``values_elsewhere`` (what to do instead when
      it is given along another axis);
    - how a trial applies the point's value: ``model_per_point`` (``True``: the value is passed to ``make_model``
      and every point trains on one subset, the full run being the model at μP's base width; ``False``: the value
      is the training subset's fraction, the full run training on the whole set), or ``batch_per_point``
      (``True``: the value is the global batch size every point's one model trains at, on one subset);
    - the words: ``point_noun`` (``"width"``, ``"size"``), ``point_nouns``, ``scale_symbol`` (``"width"``,
      ``"N"``), ``scale_words``, ``x_name`` / ``x_label`` / ``x_words`` / ``best_words`` (the swept quantity);
    - ``rules``: its published rules (:class:`Rule`), in the order the tables list them;
    - ``x_falls_with_tau``: whether the swept ``x`` is ``λ_base ∝ 1 / tau_epoch`` (its grid reversed), and
      ``anchor_smallest``: whether the callback's ``tau_epoch`` comes from the smallest point (else the largest);
    - :meth:`callback_kwargs` (the exponent as ``TimescaleCallback`` settings: what a result's exponent *means*),
      ``paper_setting`` (Wang & Aitchison's rule as that setting), :meth:`alpha` (an exponent as ``α``, where the
      rules are said so), :meth:`follow_text` / :meth:`measured_text` (the verdict's advice), ``range_noun`` (what
      a wider range would be of: ``"widths"``, ``"N"``), and :meth:`scale_text` / :meth:`span_text` /
      :meth:`from_to_text` / :meth:`point_name` (a scale, a range and a point in words).

    What a prediction's ``scale`` means follows: a point's scale is its value where ``model_per_point`` (a width),
    else the training samples ``N`` of its subset; ``sign``, :meth:`anchor` and ``x_falls_with_tau`` tell
    ``AxisResult.predict`` how the best ``x`` maps to ``tau_epoch`` and which point it starts from.

    Instances hold no state (``__slots__ = ()``): an axis is frozen, one instance per class, compared by identity.
    """

    __slots__ = ()

    name: ClassVar[str]
    spellings: ClassVar[tuple[str, ...]]
    description: ClassVar[str]
    scaling: ClassVar[bool]
    values_argument: ClassVar[str | None] = None
    values_needed: ClassVar[str] = ""
    values_elsewhere: ClassVar[str] = ""
    value_key: ClassVar[str | None] = None
    value_type: ClassVar[Callable[[Any], Any]] = float
    model_per_point: ClassVar[bool] = False
    batch_per_point: ClassVar[bool] = False
    point_noun: ClassVar[str | None] = None
    point_nouns: ClassVar[str] = ""
    range_noun: ClassVar[str] = ""
    scale_symbol: ClassVar[str] = ""
    scale_words: ClassVar[str] = ""
    x_name: ClassVar[str] = "tau_epoch"
    x_label: ClassVar[str] = "tau_epoch"
    x_words: ClassVar[str] = "τ_epoch (epochs)"
    best_words: ClassVar[str] = "best τ_epoch"
    rules: ClassVar[tuple[Rule, ...]] = ()
    x_falls_with_tau: ClassVar[bool] = False
    anchor_smallest: ClassVar[bool] = False
    paper_setting: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<axis {self.name!r}>"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        """An axis equals itself and each of its spellings, so code written for the string (``finder.axis ==
        "width"``) keeps its meaning."""
        if isinstance(other, str):
            return other in self.spellings
        return self is other

    def __hash__(self) -> int:
        return hash(self.name)

    def __new__(cls) -> Axis:  # one instance per axis class: compared by identity, also after a pickle
        made = _INSTANCES.get(cls)
        if made is None:
            made = _INSTANCES[cls] = super().__new__(cls)
        return made

    def __reduce__(self) -> Any:  # pickled (to a worker process) as its class: the same instance there
        return type(self), ()

    @property
    def subsets_per_point(self) -> bool:
        """Whether each point trains on a subset of its own (the points are fractions, the ``fraction`` argument
        unused): a scaling axis whose points are not models."""
        return self.scaling and not self.model_per_point and not self.batch_per_point

    @property
    def scale_is_value(self) -> bool:
        """Whether a point's scale is its value as given (a width, a batch size), not its subset's ``N``."""
        return self.model_per_point or self.batch_per_point

    @property
    def sign(self) -> float:
        """``-1`` where ``x`` falls as ``tau_epoch`` grows (an exponent of ``x`` is minus one of ``tau_epoch``)."""
        return -1.0 if self.x_falls_with_tau else 1.0

    def anchor(self, points: int) -> int:
        """The index of the point the callback's ``tau_epoch`` comes from, of ``points``."""
        return 0 if self.anchor_smallest else points - 1

    def callback_kwargs(self, tau_epoch: float, exponent: float, reference_size: int) -> dict[str, Any]:
        """The ``TimescaleCallback`` settings that apply ``exponent`` along this axis from ``tau_epoch`` (at the
        anchor point, whose training subset holds ``reference_size`` samples)."""
        raise NotImplementedError(f"the {self.name!r} axis fits no exponent: it has no callback settings of its own")

    def alpha(self, exponent: float) -> float | None:
        """The ``α`` of ``λ ∝ s ** α`` that ``exponent`` is, where the axis's rules are said so; else ``None``."""
        return None

    def follow_text(self, exponent: float) -> str:
        """What ``result.callback()`` does to follow a rule of ``exponent``, in words."""
        raise NotImplementedError(f"the {self.name!r} axis follows no rule")

    def measured_text(self, exponent: float) -> str:
        """The measured ``exponent`` as the callback's setting, in words."""
        raise NotImplementedError(f"the {self.name!r} axis fits no exponent")

    def scale_text(self, scale: str) -> str:
        """A scale, formatted already, in words: ``"width 128"``, ``"N = 8000"``."""
        return f"{self.scale_symbol} {scale}"

    def span_text(self, lo: float, hi: float) -> str:
        """The measured range in words, e.g. ``"widths 64 to 512"``."""
        return f"{self.point_nouns} {lo:g} to {hi:g}"

    def from_to_text(self, lo: float, hi: float) -> str:
        """Over the range, e.g. ``"from width 64 to width 512"``."""
        return f"from {self.scale_symbol} {lo:g} to {self.scale_symbol} {hi:g}"

    def point_name(self, value: float, scale: float) -> str:
        """One point, e.g. ``"width 64"`` or ``"N=150"``: of its ``value`` (as given) and its ``scale``."""
        return f"{self.point_noun} {value:g}"
