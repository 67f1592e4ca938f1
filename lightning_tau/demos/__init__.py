"""Demo tasks for ``lightning-tau demo``: small, offline Lightning tasks that show the timescale rule on real data.

Each demo is a configuration of one of the finder's axes on a task: :mod:`~lightning_tau.demos.size` the
dataset-size axis (``digits``, scikit-learn's bundled digits, and ``text``, a byte-level GPT on the standard
library's own sources, :mod:`~lightning_tau.demos.text`, its model :mod:`~lightning_tau.demos.byte_gpt`),
:mod:`~lightning_tau.demos.width` and :mod:`~lightning_tau.demos.text_width` the μP width axis on the same two tasks.
One runner, :func:`~lightning_tau.demos.axis_demo.run_axis_demo`, runs every one of them.
"""

from __future__ import annotations

__all__: list[str] = []
