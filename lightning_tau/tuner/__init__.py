"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

``curve`` holds the pure maths (the sweep's curve and its smoothed optimum); ``finder`` runs the trials.
"""

from lightning_tau.tuner.finder import FinderResult, TimescaleFinder

__all__ = ["FinderResult", "TimescaleFinder"]
