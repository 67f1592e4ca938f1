"""The analysis wing: what reads a finished sweep (curves, statistics, rules, verdicts, predictions, tables and
figures). Nothing here imports Lightning or runs a trial; the finder's runners above it do."""

from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult
from lightning_tau.tuner.analysis.prediction import Prediction

__all__ = ["AxisResult", "CurvePoint", "FinderResult", "Prediction"]
