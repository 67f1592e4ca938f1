"""``lightning_tau.callback_report``: the start report (warnings and pre-flight) on lines of its own above a progress
bar that is drawing, read back from a real Trainer's output with Lightning's TQDM and Rich progress bars."""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_loader
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar

from lightning_tau import TimescaleCallback

#: The 1-D decay warning's first words, and a stretch of it longer than a narrow terminal is wide.
WARNING = "these decaying param groups hold 1-D parameters"
SENTENCE = "hold 1-D parameters (biases, norm weights), which get the same weight decay as the matrices and are pulled"


class _Validated(TinyModel):
    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", torch.nn.functional.cross_entropy(self(batch[0]), batch[1]))


def _fit_showing_warnings(bar: Any, monkeypatch: pytest.MonkeyPatch, *, bar_first: bool) -> None:
    """A fit whose decaying group holds biases and norm weights (the 1-D warning), with a sanity check (a rich live
    display starts there), the warnings shown as Python shows them, on stdout with the bar (one stream, as a
    terminal shows them)."""
    monkeypatch.setattr(sys, "stderr", sys.stdout)

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if "TimescaleCallback" in str(message):  # the callback's own (not Lightning's deprecation notes)
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    callback = TimescaleCallback(tau_epoch=5.0)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_model_summary=False,
        max_epochs=1, callbacks=[bar, callback] if bar_first else [callback, bar],
    )  # fmt: skip
    model = _Validated(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        trainer.fit(model, make_loader(40), make_loader(20))


@pytest.mark.slow
def test_start_warning_not_on_tqdm_bar_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _fit_showing_warnings(TQDMProgressBar(), monkeypatch, bar_first=True)  # the bar drawn when the callback warns
    printed = capsys.readouterr().out
    assert WARNING in printed and "it/s]" in printed  # the warning and the bar both shown
    line = re.split(r"[\r\n]", printed[: printed.index(WARNING)])[-1]
    assert "it/s" not in line and "|" not in line, line
    assert line.lstrip().startswith(("/", "`", "UserWarning")) or "callback_report.py" in line, line


@pytest.mark.slow
def test_start_warning_whole_above_rich_live_display(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import rich

    try:  # a terminal 100 columns wide: rich would break the warning into lines of 100
        bar = RichProgressBar(console_kwargs={"force_terminal": True, "width": 100})
        _fit_showing_warnings(bar, monkeypatch, bar_first=False)
    finally:
        rich.reconfigure()  # rich's global console, as it was
    printed = capsys.readouterr().out
    assert "Epoch 0" in printed  # the live display ran
    assert SENTENCE in printed  # unbroken: the terminal wraps it, not rich at its width
