"""The finder's width and dataset-size axes: the result of a ``tau_epoch`` sweep at several widths or data sizes.

:class:`AxisResult` is the data and its numbers (:mod:`lightning_tau.tuner.analysis.axis_data`) with its text and its
figure. No Lightning import (numpy; matplotlib when it plots).

More: docs/finder.rst, 'Along width and dataset size: measure the rule on your model'.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from lightning_tau.tuner.analysis.axis_data import AxisData
from lightning_tau.tuner.analysis.axis_figure import axis_figure
from lightning_tau.tuner.analysis.axis_table import axis_table
from lightning_tau.tuner.analysis.plain import save_figure

__all__ = ["AxisResult"]


class AxisResult(AxisData):
    """What the finder found along the width or dataset-size axis: one :class:`FinderResult` per point, the
    exponent of the best ``λ_base`` (width) or ``tau_epoch`` (dataset size) against the scale, each published rule
    decided at a tolerance with the loss it costs, and the verdict.

    Its attributes, :meth:`build`, the numbers (:attr:`exponent`, :attr:`tau_epoch`, :meth:`callback_kwargs`, ...) and
    :meth:`to_json` are :class:`~lightning_tau.tuner.analysis.axis_data.AxisData`'s; this class adds :meth:`table`,
    :meth:`figure`, :meth:`plot` and :meth:`callback`.

    Example:
        A dataset-size axis whose best ``tau_epoch`` is 8 at every size (three seeds, exact parabolas):

        >>> import math
        >>> from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult
        >>> from lightning_tau.tuner.analysis.verdicts import cost_text
        >>> taus = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> def point(size):
        ...     curve = [CurvePoint(t, [(math.log(t / 8)) ** 2 + 0.01 * s for s in range(3)], [0, 1, 2], {}, [size])
        ...              for t in taus]
        ...     return FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
        ...         reduce="last", fraction=size / 1000, dataset_size=1000, subset_size=size, batch_size=10,
        ...         epochs=1, full_cost=500)
        >>> result = AxisResult.build("dataset_size", [0.1, 0.5], [point(100), point(500)])
        >>> round(result.exponent, 6) + 0, round(result.tau_epoch, 6)
        (0.0, 8.0)
        >>> for r in result.rules:  # the decision at x1.25 over N = 100 to 500, and the loss following it costs
        ...     print(f"{r.name}: {r.decision}, {cost_text(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason)}")
        Wang & Aitchison: holds, +0.000 [+0.000, +0.000]
        the 1/2 rules: excluded, +0.7125 [+0.7125, +0.7125]
        fixed λ: excluded, not measured: the rule puts tau_epoch at 1.6, below the grid (from 2)
        >>> {k: round(v, 6) for k, v in result.callback_kwargs().items()}  # Wang & Aitchison's exponent 0
        {'tau_epoch': 8.0, 'size_exponent': 0.0, 'reference_dataset_size': 500}
    """

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run: :meth:`callback_kwargs`, with ``kwargs``
        added or put in their place. Warns (``UserWarning``) when its ``tau_epoch`` comes from a grid-edge value
        (:meth:`edge_warning`), and when it follows the paper's rule because the measured exponent has no interval
        (:attr:`unbacked`)."""
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        edge = self.edge_warning()
        if edge is not None:
            warnings.warn(f"`AxisResult.callback()`: {edge}", UserWarning, stacklevel=2)
        unbacked = self.unbacked
        if unbacked is not None:
            setting = self.axis_object.paper_setting
            warnings.warn(
                f"`AxisResult.callback()`: {unbacked}, so the callback follows the paper's rule, Wang & Aitchison"
                f" ({setting}), not the measured exponent.",
                UserWarning,
                stacklevel=2,
            )
        return TimescaleCallback(**{**self.callback_kwargs(), **kwargs})

    # --- output -----------------------------------------------------------------------------------------------

    def table(self) -> str:
        """The curve per point, the optima, the exponent, each published rule with its decision and loss cost, the
        verdict and the callback, as text (numbers rounded for people; :meth:`to_json` holds them exactly;
        :func:`~lightning_tau.tuner.analysis.axis_table.axis_table`)."""
        return axis_table(self)

    def plot(self, path: str | Path) -> Path:  # pragma: no mutate block (drawing; see benchmarks/mutation_survivors.md)
        """Draw :meth:`figure` into ``path`` (``.png``, ``.svg``, ...); returns it."""
        return save_figure(self.figure(), path)

    def figure(self) -> Any:  # pragma: no mutate block (drawing; tests/tuner/analysis/test_axis_figure.py reads it back)
        """The matplotlib figure :meth:`plot` saves (Agg backend; :func:`~lightning_tau.tuner.analysis.axis_figure.axis_figure`
        says what it shows)."""
        return axis_figure(self)
