"""Demo tasks for ``lightning-tau demo``: small, offline Lightning tasks that show the timescale rule on real data.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

__all__: list[str] = []
