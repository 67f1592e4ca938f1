"""Generate the figures in ``docs/_static/`` from real small training runs (CPU, a few minutes).

Run from the repository root::

    python docs/make_figures.py            # writes docs/_static/*.png
    python docs/make_figures.py --fast     # 4 epochs per run, for a quick look

Each run trains the quick-start MLP (``examples/quickstart.py``) with ``TimescaleCallback`` and
``TimescaleMonitor`` logging to TensorBoard; the curves are the logged keys, read back from the event files, the
same numbers the TensorBoard dashboards show. One extra curve is measured directly: how much of the initial
weights survives (``<w, w0> / |w0|^2``), drawn next to the monitor's ``init_memory`` prediction. Nothing is drawn
from made-up data.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
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
#: The param group drawn: the quick-start MLP's weight matrices (biases and norms are "biases_and_norms").
GROUP = "weights"
STEPS_PER_EPOCH = 32  # 4096 samples, batch 128


class InitOverlap(pl.Callback):
    """Measure ``<w, w0> / |w0|^2`` of the hidden 128x128 matrix after every optimizer step."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.w0: torch.Tensor | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.w0 = pl_module.net[3].weight.detach().clone()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        assert self.w0 is not None
        w = pl_module.net[3].weight.detach()
        self.values.append(float((w * self.w0).sum() / self.w0.pow(2).sum()))


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
    """Train once with a warmup-cosine schedule; return every logged scalar (by key) and the measured overlap."""
    pl.seed_everything(0, verbose=False)
    model = MLP(lr=lr)
    base_configure = model.configure_optimizers

    def configure() -> dict:
        optimizer = base_configure()
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(epochs * STEPS_PER_EPOCH))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    model.configure_optimizers = configure  # type: ignore[method-assign]
    overlap, rates = InitOverlap(), StepRates()
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
                overlap,
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
    scalars["measured_init_overlap"] = overlap.values
    scalars["step_lr"], scalars["step_weight_decay"] = rates.lr, rates.weight_decay
    return scalars


def key(metric: str) -> str:
    return f"timescale/{metric}/{GROUP}"


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


def figure_dashboards(epochs: int) -> tuple[Path, Path]:
    """The monitor's two dashboards for three ``tau_epoch`` values."""
    runs = {tau: run(tau, epochs=epochs) for tau in (0.5, 2.0, 8.0)}

    fig, axes = plt.subplots(2, 3, figsize=(13, 6.4))
    panels = [
        ("tau_iter", "tau_iter (steps)", True),
        ("tau_epoch", "tau_epoch (epochs)", True),
        ("init_memory", "init_memory (measured <w,w0>/|w0|^2 dotted)", False),
        ("timescales_elapsed", "timescales_elapsed", False),
        ("wd_mean_abs", "wd_mean_abs: $\\lambda\\cdot$mean|w|", False),
        ("rms_ratio", "rms_ratio: weight_rms / rms_equilibrium", False),
    ]
    for ax, (metric, title, log) in zip(axes.flat, panels):
        for tau, s in runs.items():
            (line,) = ax.plot(s[key(metric)], label=f"tau_epoch={tau:g}")
            if metric == "init_memory":
                ax.plot(s["measured_init_overlap"], ":", color=line.get_color())
        if metric == "timescales_elapsed" or metric == "rms_ratio":
            ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_title(f"timescale/{title}", fontsize=9)
        ax.set_xlabel("optimizer step")
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.suptitle("Dashboard 'timescale: timescales' (group 'weights'; 10% warmup, cosine to 10%)")
    fig.tight_layout()
    timescales = save(fig, "dashboard_timescales.png")

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4), sharey=True)
    for ax, (tau, s) in zip(axes, runs.items()):
        steps = range(len(s[key("weight_rms")]))
        ax.fill_between(steps, s[key("rms_equilibrium")], s[key("coherent_bound")], alpha=0.2, label="band")
        ax.plot(s[key("rms_equilibrium")], ":", label="rms_equilibrium $\\sqrt{\\eta/2\\lambda}$")
        ax.plot(s[key("coherent_bound")], "--", label="coherent_bound $1/\\lambda$")
        ax.plot(s[key("weight_rms")], label="weight_rms")
        ax.set_yscale("log")
        ax.set_title(f"tau_epoch={tau:g}")
        ax.set_xlabel("optimizer step")
        ax.legend(fontsize=7)
    fig.suptitle("Dashboard 'timescale: weight RMS vs prediction' (group 'weights')")
    fig.tight_layout()
    return timescales, save(fig, "dashboard_weight_rms.png")


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
    parser.add_argument("--only", choices=["modes", "dashboards"], help="make one set of figures")
    args = parser.parse_args()
    epochs = 4 if args.fast else args.epochs
    paths: list[Path] = []
    if args.only in (None, "modes"):
        paths.append(figure_modes(epochs))
    if args.only in (None, "dashboards"):
        paths.extend(figure_dashboards(epochs))
    for path in paths:
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
