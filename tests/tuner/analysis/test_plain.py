"""``lightning_tau.tuner.analysis.plain``: numbers and metric names as a person reads them in the finder's tables and figures,
and ``save_figure``, which makes the folders and closes the figure also when saving fails. (The tick helpers are
checked on the drawn figures: ``test_axis_figure.py``, ``test_finder_result.py``, beside this file.)"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lightning_tau.tuner.analysis.plain import metric_words, plain, save_figure, wrap


def test_three_significant_digits_positional_and_signed() -> None:
    assert [plain(v) for v in (-0.00123, 123456.7, 999.95, 0.1 + 0.2, -3.0, 1e-7)] == [
        "-0.00123",
        "123000",  # three digits, never 1.23e+05
        "1000",  # rounding carries into a fourth digit
        "0.3",
        "-3",
        "0.0000001",
    ]
    assert (plain(math.inf), plain(-math.inf), plain(math.nan)) == ("inf", "-inf", "nan")


def test_metric_words_spell_out_usual_abbreviations() -> None:
    assert metric_words("train/err") == "train error"
    assert metric_words("val_ppl") == "validation perplexity"
    assert metric_words("hp//val__loss") == "validation loss"  # empty parts and doubled underscores dropped


def test_wrap_keeps_short_text_on_one_line() -> None:
    assert wrap("a b", 10) == "a b" and wrap("", 5) == ""
    assert all(len(line) <= 12 for line in wrap("the seeds cannot tell eight from sixteen", 12).splitlines())


def test_save_figure_makes_folders_and_closes_figure(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig = plt.figure()
    path = save_figure(fig, str(tmp_path / "a" / "b" / "curve.png"))
    assert path == tmp_path / "a" / "b" / "curve.png" and path.stat().st_size > 0
    assert not plt.fignum_exists(fig.number)
    failing = plt.figure()
    with pytest.raises(ValueError, match="not supported"):
        save_figure(failing, tmp_path / "curve.notaformat")
    assert not plt.fignum_exists(failing.number)  # closed although saving failed
