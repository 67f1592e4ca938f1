"""Names and choices several layers share, defined once (the ground floor: imports nothing but ``typing``).

Example:
    >>> WRITE_MODES, GOALS, SUMMARY_NAME
    (('constant', 'per_step'), ('min', 'max'), 'summary.json')
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["GOALS", "SUMMARY_NAME", "WRITE_MODES", "Goal", "WriteMode"]

#: How the weight decay is written: once per decision (``"constant"``) or before every optimizer step from that
#: step's learning rate (``"per_step"``); ``mode`` of ``TimescaleCallback`` and ``apply_timescale``.
WriteMode = Literal["constant", "per_step"]
WRITE_MODES: tuple[WriteMode, ...] = get_args(WriteMode)

#: Whether a lower (``"min"``, a loss) or a higher (``"max"``, an accuracy) metric is better; ``mode`` of the
#: finder and its statistics, ``goal`` of the sweep reader.
Goal = Literal["min", "max"]
GOALS: tuple[Goal, ...] = get_args(Goal)

#: File name of the statistics a sweep writes into its folder (the demos' ``summary.json``).
SUMMARY_NAME = "summary.json"
