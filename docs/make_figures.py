"""Generate the figures in ``docs/_static/`` from real small training runs (CPU, a few minutes).

Run from the repository root::

    python docs/make_figures.py                     # writes docs/_static/*.png
    python docs/make_figures.py --fast              # 4 epochs per run, for a quick look
    python docs/make_figures.py --only tensorboard  # the dashboard screenshots alone (about a minute)
    python docs/make_figures.py --only sweep --sweep tau_runs/sweep_0  # a default demo sweep, as the demo prints it

``lr_wd_modes.png``: the quick-start MLP (``examples/quickstart.py``) with ``TimescaleCallback``, its lr and
weight decay read as each optimizer step uses them. ``dashboard_*.png``: screenshots of a real TensorBoard's
Custom Scalars tab, taken by headless Chromium (``apt-get install chromium``), on the logs of
``lightning-tau demo --sizes 450 1350 --tau-epochs 0.5 2 8 --seeds 0`` (its 1,350-digit runs).
Nothing is drawn from made-up data.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from lightning.pytorch.loggers import TensorBoardLogger  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
from quickstart import MLP, make_data  # noqa: E402

from lightning_tau import TimescaleCallback  # noqa: E402
from lightning_tau.diagnostics import TimescaleMonitor  # noqa: E402

STATIC = Path(__file__).resolve().parent / "_static"
STEPS_PER_EPOCH = 32  # 4096 samples, batch 128


class StepRates(pl.Callback):
    """Record group 0's lr and weight decay exactly as each optimizer step uses them.

    Read in ``on_before_optimizer_step``, after ``TimescaleCallback`` (listed first) has set the step's weight
    decay and before the scheduler moves the lr. (Keys logged after the step pair the step's weight decay with the
    *next* step's lr, which shows as a spike at the first warmup step in ``mode="per_step"``.)
    """

    def __init__(self) -> None:
        self.lr: list[float] = []
        self.weight_decay: list[float] = []

    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        self.lr.append(float(optimizer.param_groups[0]["lr"]))
        self.weight_decay.append(float(optimizer.param_groups[0]["weight_decay"]))


def warmup_cosine(total: int) -> Any:
    """10% linear warmup, then a cosine to 10% of the peak: a ``LambdaLR`` factor function."""
    warmup = max(1, total // 10)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def run(tau_epoch: float, *, epochs: int, mode: str = "constant", lr: float = 3e-3) -> dict[str, list[float]]:
    """Train once with a warmup-cosine schedule; return every logged scalar (by key) and the step rates."""
    pl.seed_everything(0, verbose=False)
    model = MLP(lr=lr)
    base_configure = model.configure_optimizers

    def configure() -> dict:
        optimizer = base_configure()
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(epochs * STEPS_PER_EPOCH))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    model.configure_optimizers = configure  # type: ignore[method-assign]
    rates = StepRates()
    with tempfile.TemporaryDirectory() as logdir:
        logger = TensorBoardLogger(logdir, name="run", default_hp_metric=False)
        trainer = pl.Trainer(
            accelerator="cpu",
            max_epochs=epochs,
            logger=logger,
            log_every_n_steps=1,
            callbacks=[
                TimescaleCallback(tau_epoch=tau_epoch, mode=mode, verbose=False),
                TimescaleMonitor(),
                rates,
            ],
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model, DataLoader(make_data(4096), batch_size=128, shuffle=True))
        events = EventAccumulator(logger.log_dir, size_guidance={"scalars": 0})
        events.Reload()
        scalars = {key: [e.value for e in events.Scalars(key)] for key in events.Tags()["scalars"]}
    scalars["step_lr"], scalars["step_weight_decay"] = rates.lr, rates.weight_decay
    return scalars


def figure_modes(epochs: int) -> Path:
    """lr, weight decay and the EMA rate per step under ``mode="constant"`` and ``mode="per_step"``."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for mode, style in (("constant", "-"), ("per_step", "--")):
        s = run(2.0, epochs=epochs, mode=mode)
        lr, wd = s["step_lr"], s["step_weight_decay"]
        axes[0].plot(lr, style, label=mode)
        axes[1].plot(wd, style, label=mode)
        axes[2].plot([a * b for a, b in zip(lr, wd)], style, label=mode)
    axes[0].set_title("learning rate $\\eta_t$")
    axes[1].set_title("weight decay $\\lambda_t$")
    axes[2].set_title("EMA rate $\\eta_t\\lambda_t = 1/\\tau_{iter,t}$")
    for ax in axes:
        ax.set_xlabel("optimizer step")
        ax.legend()
    fig.suptitle("tau_epoch = 2, 10% warmup then cosine to 10% (quick-start MLP, N=4096, B=128, group 'weights')")
    fig.tight_layout()
    return save(fig, "lr_wd_modes.png")


#: The demo sweep the screenshots show (its largest size): three timescales (the finder's axis needs two sizes).
DEMO_ARGS = ["--sizes", "450", "1350", "--tau-epochs", "0.5", "2", "8", "--seeds", "0"]
#: TensorBoard's Custom Scalars tab, unsmoothed (the hash sets the dashboard's smoothing slider).
TENSORBOARD_PAGE = "#custom_scalars&_smoothingWeight=0"
WINDOW = (1100, 2000)  # CSS pixels: two charts per row, both dashboards on one page
SCALE = 1.25  # device pixels per CSS pixel


def figure_tensorboard(epochs: int) -> tuple[Path, Path]:
    """Screenshots of the two Custom Scalars dashboards in a real TensorBoard, on the demo's logs."""
    from lightning_tau.cli import main as lightning_tau_cli

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("the dashboard screenshots need headless Chromium: `apt-get install chromium`")
    with tempfile.TemporaryDirectory() as out:
        args = ["demo", *DEMO_ARGS, "--epochs", str(epochs), "--out", out, "--no-plot", "--no-progress"]
        if lightning_tau_cli(args) != 0:
            raise SystemExit(f"`lightning-tau {' '.join(args)}` failed")
        # the largest size's study folder: tb/digits_dataset_size=<fraction>
        logdir = max(Path(out).glob("sweep_*/tb/*dataset_size=*"), key=lambda p: float(p.name.rsplit("=", 1)[1]))
        with tensorboard(logdir, runs=3) as url:
            shot = Path(out) / "custom_scalars.png"
            subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--force-device-scale-factor={SCALE}",
                 "--virtual-time-budget=20000", f"--screenshot={shot}", url + TENSORBOARD_PAGE],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        return crop_dashboards(shot)


def figure_sweep(sweep: Path) -> tuple[Path, Path]:
    """Screenshots of a ``lightning-tau demo`` sweep as the demo tells you to open it: the dashboards of its first
    view (``--logdir_spec``: one seed of the largest size) and the HParams table of the whole sweep."""
    from lightning_tau.demos.size import tensorboard_commands

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("the dashboard screenshots need headless Chromium: `apt-get install chromium`")
    summary = json.loads((sweep / "summary.json").read_text())
    spec = next(
        line.split()[-1]
        for line in tensorboard_commands(summary["runs"], sweep).splitlines()
        if "--logdir_spec" in line
    )
    shots = []
    for name, source, flag, runs, page, size in (
        ("dashboard_sweep.png", spec, "--logdir_spec", len(spec.split(",")), TENSORBOARD_PAGE, (1100, 1650)),
        ("dashboard_hparams.png", str(sweep), "--logdir", len(summary["runs"]), "#hparams", (1700, 700)),
    ):
        with tensorboard(source, runs=runs, flag=flag) as url:
            shot = STATIC / name
            subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=20000", f"--screenshot={shot}",
                 url + page],
                check=True, capture_output=True, timeout=180,
            )  # fmt: skip
        shots.append(shot)
    return shots[0], shots[1]


class tensorboard:  # noqa: N801 (used as a context manager, like `open`)
    """``with tensorboard(logdir, runs=k) as url``: a TensorBoard server that has loaded ``k`` runs' layouts."""

    def __init__(self, logdir: Path | str, runs: int, flag: str = "--logdir") -> None:
        self.logdir, self.runs, self.flag = logdir, runs, flag

    def __enter__(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        command = [sys.executable, "-m", "tensorboard.main", self.flag, str(self.logdir), "--host", "127.0.0.1",
                   "--port", str(port), "--load_fast", "false"]  # fmt: skip
        self.server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                with urllib.request.urlopen(url + "data/plugin/scalars/tags", timeout=5) as response:
                    if len(json.loads(response.read())) >= self.runs:
                        return url
            except OSError:
                pass
            if self.server.poll() is not None:
                raise SystemExit(f"tensorboard exited with {self.server.returncode}")
            time.sleep(1)
        self.__exit__()
        raise SystemExit("tensorboard did not load the runs in 2 minutes")

    def __exit__(self, *exc: object) -> None:
        self.server.terminate()
        self.server.wait(timeout=30)


def crop_dashboards(shot: Path) -> tuple[Path, Path]:
    """Cut the page into its two dashboard cards: the first with TensorBoard's header and run list, then the second.

    The cards are white; the page between them is not. Rows are classified along a column near the right edge.
    """
    from PIL import Image

    page = Image.open(shot).convert("RGB")
    width, height = page.size
    x = width - int(20 * SCALE)
    white = [page.getpixel((x, y)) == (255, 255, 255) for y in range(height)]
    gaps, y = [], int(80 * SCALE)  # below TensorBoard's orange header
    while y < height:  # runs of at least 3 non-white rows separate the cards (borders are 1 row)
        start = y
        while y < height and not white[y]:
            y += 1
        if y - start >= 3:
            gaps.append((start, y))
        y += 1
    first_end, second_start = gaps[0]
    second_end = gaps[1][0] if len(gaps) > 1 else height
    row = second_start + int(60 * SCALE)  # the sidebar ends where the page's gray begins left of the second card
    left = next(i for i in range(width) if page.getpixel((i, row)) != (255, 255, 255))
    left = next(i for i in range(left, width) if page.getpixel((i, row)) == (255, 255, 255))
    timescales = STATIC / "dashboard_timescales.png"
    weight_rms = STATIC / "dashboard_weight_rms.png"
    STATIC.mkdir(parents=True, exist_ok=True)
    page.crop((0, 0, width, first_end)).save(timescales, optimize=True)
    page.crop((left, second_start, width, second_end)).save(weight_rms, optimize=True)
    return timescales, weight_rms


def save(fig: Any, name: str) -> Path:
    STATIC.mkdir(parents=True, exist_ok=True)
    path = STATIC / name
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--fast", action="store_true", help="4 epochs per run")
    parser.add_argument("--only", choices=["modes", "tensorboard", "sweep"], help="make one set of figures")
    parser.add_argument(
        "--sweep", type=Path, help="for --only sweep: a default `lightning-tau demo` folder (tau_runs/sweep_K)"
    )
    args = parser.parse_args()
    if args.only == "sweep":
        if args.sweep is None:
            parser.error("--only sweep needs --sweep: run `lightning-tau demo` (about 10 minutes) and give its folder")
        for path in figure_sweep(args.sweep):
            print(f"wrote {path.relative_to(ROOT)}")
        return
    epochs = 4 if args.fast else args.epochs
    paths: list[Path] = []
    if args.only in (None, "modes"):
        paths.append(figure_modes(epochs))
    if args.only in (None, "tensorboard"):
        paths.extend(figure_tensorboard(epochs))
    for path in paths:
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
