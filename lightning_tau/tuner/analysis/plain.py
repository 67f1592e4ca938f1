"""Numbers and names as a person reads them, and plain tick labels, for the finder's tables and figures.

Pure (numpy and the standard library; matplotlib only inside the tick functions, which are handed its axes). Used by
:class:`~lightning_tau.tuner.analysis.finder_result.FinderResult` and :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lightning_tau import outputs

__all__ = ["metric_words", "plain", "plain_ticks", "save_figure", "thin_ticks", "wrap"]


def plain(value: float) -> str:
    """A number rounded for people: a whole number as it is (``2048``, not ``2050``), else three significant digits,
    positional (``0.312``, ``10.1``), never ``1e-05`` or ``1.23e+03``; ``nan`` and ``inf`` as such.

    Example:
        >>> plain(12.0), plain(10.079368), plain(1e-5), plain(1234.5), plain(2048.0), plain(float("nan"))
        ('12', '10.1', '0.00001', '1230', '2048', 'nan')
    """
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if float(value).is_integer():
        return str(int(value))
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")


def metric_words(monitor: str) -> str:  # pragma: no mutate block (figure labels)
    """A logged metric's name in words: ``hp/val_loss`` and ``val/loss`` -> ``validation loss``, ``val_acc`` ->
    ``validation accuracy``; another name as it is, with spaces for ``_`` and ``/``.

    Example:
        >>> metric_words("val/loss"), metric_words("hp/val_loss"), metric_words("val_acc"), metric_words("bleu")
        ('validation loss', 'validation loss', 'validation accuracy', 'bleu')
    """
    parts = [p for p in monitor.split("/") if p and p != "hp"]
    words = " ".join(parts).replace("_", " ").split()
    table = {"val": "validation", "acc": "accuracy", "err": "error", "ppl": "perplexity"}
    return " ".join(table.get(w, w) for w in words)


def plain_ticks(axis: Any, ticks: Sequence[float]) -> None:  # pragma: no mutate block (drawing)
    """Major ticks of a matplotlib ``axis`` at ``ticks``, written by :func:`plain`, no minor ticks (a log axis's
    default labels read 4×10^0 or crowd here)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    axis.set_major_locator(FixedLocator(sorted(set(ticks))))
    axis.set_major_formatter(FuncFormatter(lambda value, _: plain(value)))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def thin_ticks(axis: Any, pad: float = 4.0) -> None:  # pragma: no mutate block (drawing)
    """Drop tick labels that would touch another (in screen space, with ``pad`` pixels to spare) until none does: the
    two ends first, then the ticks between in order. Needs a drawn figure."""
    from matplotlib.ticker import FixedLocator

    ticks = [t for t in axis.get_major_ticks() if t.label1.get_visible() and t.label1.get_text()]
    if len(ticks) < 2:
        return
    vertical = axis.axis_name == "y"
    boxes = {}
    for t in ticks:
        box = t.label1.get_window_extent()
        boxes[t.get_loc()] = (box.y0, box.y1) if vertical else (box.x0, box.x1)
    locs = sorted(boxes, key=lambda loc: boxes[loc][0])
    kept = [locs[0], locs[-1]]
    for loc in locs[1:-1]:
        lo, hi = boxes[loc]
        if all(hi + pad <= boxes[k][0] or boxes[k][1] + pad <= lo for k in kept):
            kept.append(loc)
    if boxes[locs[0]][1] + pad > boxes[locs[-1]][0]:  # even the two ends touch: keep one
        kept = [locs[0]]
    axis.set_major_locator(FixedLocator(sorted(kept)))


def wrap(text: str, width: int) -> str:  # pragma: no mutate block (figure captions)
    """``text`` in lines of at most ``width`` characters.

    Example:
        >>> wrap("the seeds cannot tell 8 from 16 apart", 20)
        'the seeds cannot\\ntell 8 from 16 apart'
    """
    return "\n".join(textwrap.wrap(text, width))


def save_figure(fig: Any, path: str | Path) -> Path:  # pragma: no mutate block (drawing)
    """Save a matplotlib figure to ``path`` (parents created; the format from its suffix) at 120 dpi and close it,
    also when saving fails; returns the path. Refuses a file the package did not write
    (:func:`lightning_tau.outputs.save_figure`, the one check every result file passes)."""
    return outputs.save_figure(fig, path)
