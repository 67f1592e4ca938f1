"""Lightning's chatter in our runs: its tips and the LeafSpec deprecation gone, every warning for the user kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: One short fit of Lightning's own BoringModel, after ``silence_lightning_noise()`` when asked; a FutureWarning of
#: the user's own comes first (it must still show).
_FIT = """
import sys, warnings
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel
if sys.argv[1] == "silence":
    from lightning_tau._quiet import silence_lightning_noise
    silence_lightning_noise()
    silence_lightning_noise()  # a second call adds nothing
warnings.warn("the user's own FutureWarning", FutureWarning)
trainer = pl.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=1, enable_progress_bar=False,
                     enable_model_summary=False, default_root_dir=sys.argv[2])
trainer.fit(BoringModel())
"""


def _fit_output(mode: str, root: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _FIT, mode, str(root)], capture_output=True, text=True, timeout=300, check=True
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["loud", "silence"])
def test_silence_hides_tips_and_leafspec_and_keeps_rest(mode: str, tmp_path: Path) -> None:
    out = _fit_output(mode, tmp_path)
    noise = ["💡 Tip: For seamless cloud logging", "💡 Tip: For seamless cloud uploads", "LeafSpec)` is deprecated"]
    shown = [line for line in noise if line in out]
    assert shown == (noise if mode == "loud" else []), out  # loud: the noise is there to hide (the test can fail)
    # what concerns the run, Lightning's and the user's own, is still shown
    for kept in ("the user's own FutureWarning", "smaller than the logging interval", "`Trainer.fit` stopped"):
        assert kept in out, out
