"""``lightning-tau plan``: what each weight-decay coupling does to a LightningCLI config's timescale, before training.

More: docs/couplings.rst, "The plan, before training".
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lightning_tau._table import table_lines
from lightning_tau.cli._args import nonempty_path, output_dir_problem, positive_float
from lightning_tau.errors import TimescaleError

__all__ = ["PlanError", "add_parser", "plan_table"]

HELP = "Before training: what each weight-decay coupling does to a LightningCLI config's timescale, as a figure."
#: The files written under ``--out``.
FIGURE_NAME = "tau_plan"


class PlanError(TimescaleError):
    """A config that cannot be planned (one line, for the command line)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``plan``."""
    parser = subparsers.add_parser(
        "plan",
        help=HELP,
        description=(
            "Read a LightningCLI config, set its Trainer up without training (no step runs), and show, for every"
            " coupling of the weight decay to the lr schedule (constant, per_step, lr_ratio, lr_squared), tau_iter"
            " at the start, middle and end of the config's own schedule, the timescales the run covers, the"
            " initialization's weight left and the window (the mean age, in epochs, of the updates the final weights"
            " hold). Draws tau(t) and each epoch's share of the final weights, one line per coupling:"
            f" {FIGURE_NAME}.png and {FIGURE_NAME}.svg under --out."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--config",
        type=nonempty_path,
        action="append",
        required=True,
        help="LightningCLI YAML (repeat to layer several, as LightningCLI does)",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="the LightningModule class (dotted path) when the config's `model:` has no class_path,"
        " e.g. lightning_tau.demos.digits.DigitsMLP",
    )
    parser.add_argument(
        "--data",
        default=None,
        help="the LightningDataModule class (dotted path) when the config's `data:` has no class_path",
    )
    parser.add_argument(
        "--tau-epoch",
        type=positive_float,
        default=None,
        help="the timescale to plan (default: the config's TimescaleCallback's; required without one)",
    )
    parser.add_argument("--group", default=None, help="the param group to draw (default: the first that decays)")
    parser.add_argument("--out", type=Path, default=Path("."), help="where to write the figure")
    parser.set_defaults(func=_main)
    return parser


def _main(args: argparse.Namespace) -> int:
    problem = _early_problem(args)  # before torch is imported: seconds sooner on a busy machine
    if problem:
        print(f"lightning-tau plan: error: {problem}", file=sys.stderr)
        return 2
    try:
        planned = plan_config(args.config, model=args.model, data=args.data, tau_epoch=args.tau_epoch)
        name, plans, lrs, m = _pick(planned, args.group)
    except PlanError as err:
        print(f"lightning-tau plan: error: {err}", file=sys.stderr)
        return 2
    print(
        f"Plan of param group {name!r}: M = {m:g} optimizer steps per epoch, {len(lrs)} steps; tau_iter in steps"
        " (epochs)."
    )
    print("\n".join(plan_table(plans, m)))
    from lightning_tau.outputs import OutputError

    try:
        path = draw_plan(
            plans, lrs, m, args.out / FIGURE_NAME, title=f"{', '.join(p.name for p in args.config)}: group {name}"
        )
    except OutputError as err:  # a file put there since the check before torch
        print(f"lightning-tau plan: error: --out: {err}", file=sys.stderr)
        return 2
    print(f"Wrote {path} and {path.with_suffix('.svg')}.")
    return 0


def _early_problem(args: argparse.Namespace) -> str | None:
    """The usage errors of ``--out`` found without torch: a folder that cannot be written, or figures that would replace
    files the package did not write (:mod:`lightning_tau.outputs`)."""
    from lightning_tau.outputs import output_problem

    problem = output_dir_problem(args.out, "--out")
    if problem:
        return problem
    for suffix in (".png", ".svg"):
        figure = args.out / f"{FIGURE_NAME}{suffix}"
        if (why := output_problem(figure)) is not None:
            return f"--out: will not write {str(figure)!r}: {why}"
    return None


def plan_table(plans: dict[str, Any], steps_per_epoch: float) -> list[str]:
    """One row per coupling: ``tau_iter`` in steps (and epochs) at the start, middle and end, the timescales covered,
    the initialization's weight left at the end and the window in epochs.

    Example:
        >>> from lightning_tau.couplings import plan
        >>> p = plan("constant", [1e-3] * 200, lr_ref=1e-3, tau_iter=100.0, steps_per_epoch=100)
        >>> print("\\n".join(plan_table({"constant": p}, 100)))
        Coupling | tau start | tau middle | tau end | Timescales | Init weight left | Window (epochs)
        ---------------------------------------------------------------------------------------------
        constant | 100 (1)   | 100 (1)    | 100 (1) | 2          | 0.13             | 0.681
    """

    def tau(steps: float) -> str:
        return "inf" if math.isinf(steps) else f"{steps:.4g} ({steps / steps_per_epoch:.3g})"

    rows = [
        [
            coupling,
            tau(p.tau_start),
            tau(p.tau_middle),
            tau(p.tau_end),
            f"{p.timescales:.4g}",
            f"{p.init_memory:.2g}",
            f"{p.window_epochs:.3g}",
        ]
        for coupling, p in plans.items()
    ]
    columns = [
        "Coupling",
        "tau start",
        "tau middle",
        "tau end",
        "Timescales",
        "Init weight left",
        "Window (epochs)",
    ]
    return table_lines(columns, rows)


class _Planned(Exception):
    """Raised at train start, once everything is set up and planned: the fit stops before its first step."""


def plan_config(
    configs: Sequence[Path], *, model: str | None = None, data: str | None = None, tau_epoch: float | None = None
) -> dict[str, tuple[dict[str, Any], list[float], float]]:
    """Set the config's run up to its first step and plan every coupling for each decaying param group.

    Returns:
        Group name -> (coupling -> :class:`~lightning_tau.couplings.Plan`, the group's lr at every step, ``M``).

    Raises:
        PlanError: the config does not parse, has no timescale to plan, or its schedule cannot be looked ahead.
    """
    for path in configs:  # before torch is imported (seconds on a busy machine)
        if not path.is_file():
            raise PlanError(f"--config {str(path)!r} is not a file.")
    import lightning.pytorch as pl

    from lightning_tau.callback import TimescaleCallback
    from lightning_tau._trainer import plan_couplings, remaining_steps, scheduled_steps
    from lightning_tau.couplings import COUPLINGS
    from lightning_tau.diagnostics import TimescaleMonitor
    from lightning_tau.schedule import planned_lrs

    cli = _parse(configs, model, data)
    trainer = cli.trainer
    for cb in [cb for cb in trainer.callbacks if isinstance(cb, TimescaleMonitor)]:
        trainer.callbacks.remove(cb)  # it logs during training, and no step runs here (nor a logger)
    found = [cb for cb in trainer.callbacks if isinstance(cb, TimescaleCallback)]
    if tau_epoch is not None or not found:
        if tau_epoch is None:
            raise PlanError(
                "the config has no TimescaleCallback under trainer.callbacks: give the timescale to plan with"
                " --tau-epoch."
            )
        coupling = found[0].coupling if found else "constant"
        for cb in found:
            trainer.callbacks.remove(cb)
        found = [TimescaleCallback(tau_epoch=tau_epoch, coupling=coupling, monitor=False)]
        trainer.callbacks.append(found[0])
    callback = found[0]
    out: dict[str, tuple[dict[str, Any], list[float], float]] = {}

    class Stop(pl.Callback):
        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            m = callback.resolved_steps_per_epoch
            remaining = remaining_steps(trainer, m)
            if m is None or remaining is None:
                raise PlanError("the run has no finite length (set trainer.max_epochs or trainer.max_steps).")
            schedulers = scheduled_steps(trainer)
            optimizer_m = callback._optimizer_m  # each optimizer's own M, where not the run's
            plans = plan_couplings(
                callback.groups,
                trainer.optimizers,
                schedulers,
                remaining,
                steps_per_epoch=m,
                optimizer_m=optimizer_m,
                couplings=COUPLINGS,
            )
            for g in callback.groups:
                key = (g.optimizer_index, g.group_index)
                if key not in plans:
                    continue
                m_i = optimizer_m.get(g.optimizer_index, m)
                specs = schedulers[g.optimizer_index]
                steps = round(remaining * m_i / m)
                lrs = planned_lrs(trainer.optimizers[g.optimizer_index], specs, steps, m_i) if specs else None
                group_lrs = lrs[g.group_index] if lrs is not None else [g.reference_lr] * steps
                out[g.name] = (dict(plans[key]), group_lrs, m_i)
            raise _Planned

    trainer.callbacks.append(Stop())
    try:
        trainer.fit(cli.model, datamodule=cli.datamodule)
    except _Planned:
        pass
    except PlanError:
        raise
    except Exception as err:  # the user's model, data or optimizer: one line
        raise PlanError(f"setting the run up failed: {type(err).__name__}: {_first_line(err)}") from None
    if not out:
        raise PlanError(
            "no decaying param group's schedule could be looked ahead (ReduceLROnPlateau depends on metrics not yet"
            " seen; a run longer than 200,000 steps is not simulated)."
        )
    return out


def _pick(
    planned: dict[str, tuple[dict[str, Any], list[float], float]], group: str | None
) -> tuple[str, dict[str, Any], list[float], float]:
    if group is None:
        name = next(iter(planned))
    elif group in planned:
        name = group
    else:
        raise PlanError(f"--group {group!r} is not a decaying param group of the run; use one of {sorted(planned)}.")
    plans, lrs, m = planned[name]
    return name, plans, lrs, m


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return " ".join(text.splitlines()[0].split())[:300]


@contextlib.contextmanager
def _plain_argv() -> Iterator[None]:
    argv, sys.argv = sys.argv, sys.argv[:1]  # LightningCLI warns about arguments it was not given
    try:
        yield
    finally:
        sys.argv = argv


def _import(dotted: str, flag: str) -> type:
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    except (ImportError, AttributeError, ValueError) as err:
        raise PlanError(f"{flag} {dotted!r} cannot be imported ({err}); give a dotted class path.") from None


def _config_error(err: BaseException, configs: Sequence[Path], model: str | None, data: str | None) -> str:
    """A config that LightningCLI refused, in one line: a callback's own error (its bad argument named) where a
    ``trainer.callbacks`` entry is the culprit, else LightningCLI's innermost reason; the ``--model`` / ``--data``
    hint only where the error is about ``model:`` / ``data:``."""
    from lightning_tau.cli.config import _one_line

    text = str(err)
    where = ", ".join(str(p) for p in configs)
    if (problem := _callback_problem(configs)) is not None:  # LightningCLI's words hide which argument is wrong
        return f"--config {where}: {problem}"
    hints = [
        hint
        for key, given, hint in (
            ("model", model, "a `model:` without class_path needs --model"),
            ("data", data, "a `data:` without class_path needs --data"),
        )
        if given is None and (f'"{key}' in text or f"'{key}'" in text)
    ]
    return f"--config {where}: {_one_line(err)}" + (f" ({'; '.join(hints)})" if hints else "")


def _callback_problem(configs: Sequence[Path]) -> str | None:
    """The first ``trainer.callbacks`` entry of ``configs`` (the last config that lists them, as LightningCLI layers
    them) that cannot be built, with the callback's own error (which names the bad argument), or ``None``."""
    import yaml

    entries: list[Any] = []
    for path in configs:
        with contextlib.suppress(OSError, yaml.YAMLError):
            trainer = (yaml.safe_load(path.read_text()) or {}).get("trainer") or {}
            if isinstance(trainer, dict) and "callbacks" in trainer:
                entries = trainer["callbacks"] or []
    for index, entry in enumerate(entries if isinstance(entries, list) else [entries]):
        if not isinstance(entry, dict) or not isinstance(entry.get("class_path"), str):
            continue
        name = entry["class_path"].rpartition(".")[2]
        try:
            cls = _import(entry["class_path"], "trainer.callbacks")
            cls(**(entry.get("init_args") or {}))
        except PlanError as err:
            return f"trainer.callbacks[{index}] {err}"
        except Exception as err:  # the callback's own check, or an argument it does not take
            return f"trainer.callbacks[{index}] ({name}): {_first_line(err)}"
    return None


def _parse(configs: Sequence[Path], model: str | None, data: str | None) -> Any:
    """The ``LightningCLI`` of ``configs``, nothing run; logger, checkpoints and the progress bar off."""
    from lightning.pytorch import LightningDataModule, LightningModule
    from lightning.pytorch.cli import LightningCLI

    if os.getcwd() not in sys.path:  # the model's module may sit in the working directory, as for LightningCLI
        sys.path.insert(0, os.getcwd())
    model_class = LightningModule if model is None else _import(model, "--model")
    data_class = LightningDataModule if data is None else _import(data, "--data")
    args = [word for path in configs for word in ("--config", str(path))]
    args += [
        "--trainer.logger=false",
        "--trainer.enable_checkpointing=false",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
    ]
    try:
        with _plain_argv():
            return LightningCLI(
                model_class,
                data_class,
                subclass_mode_model=model is None,
                subclass_mode_data=data is None,
                args=args,
                run=False,
                save_config_callback=None,
                parser_kwargs={"exit_on_error": False},
            )
    except (Exception, SystemExit) as err:
        raise PlanError(_config_error(err, configs, model, data)) from None


def coinciding(plans: dict[str, Any]) -> list[list[str]]:
    """The couplings grouped by the plan they draw: those whose ``τ(t)`` and epoch shares agree (to 1e-9, relative)
    draw one line, so the figure labels them as one. In order of ``plans``.

    Example:
        >>> from lightning_tau.couplings import plan
        >>> flat = {c: plan(c, [1e-3] * 20, lr_ref=1e-3, tau_iter=5.0, steps_per_epoch=10)
        ...         for c in ("constant", "per_step", "lr_ratio", "lr_squared")}
        >>> coinciding(flat)  # a constant lr: every coupling holds the same timescale
        [['constant', 'per_step', 'lr_ratio', 'lr_squared']]
    """
    import numpy as np

    def same(a: Any, b: Any) -> bool:
        return all(
            len(x) == len(y) and bool(np.allclose(x, y, rtol=1e-9, atol=0.0, equal_nan=True))
            for x, y in ((a.tau_iter, b.tau_iter), (a.epoch_shares, b.epoch_shares))
        )

    groups: list[list[str]] = []
    for coupling, p in plans.items():
        group = next((g for g in groups if same(plans[g[0]], p)), None)
        if group is None:
            groups.append([coupling])
        else:
            group.append(coupling)
    return groups


def plan_figure(plans: dict[str, Any], lrs: Sequence[float], steps_per_epoch: float, *, title: str = "") -> Any:
    """The figure :func:`draw_plan` writes: ``τ(t)`` in epochs per coupling (top, the lr schedule dashed behind) and
    each epoch's share of the final weights (bottom). Couplings that draw the same line are one line labelled with
    every name (``constant = per_step = ...``); the legend sits outside the panels, off the data."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), layout="constrained")
    epochs_axis = [t / steps_per_epoch for t in range(len(lrs))]
    colors = {"constant": "tab:blue", "per_step": "tab:orange", "lr_ratio": "tab:green", "lr_squared": "tab:red"}
    for group in coinciding(plans):
        p, color = plans[group[0]], colors.get(group[0])
        taus = [tau / steps_per_epoch if math.isfinite(tau) else math.nan for tau in p.tau_iter]
        names = " = ".join(group) + (" (one line: they coincide)" if len(group) > 1 else "")
        label = f"{names}: window {p.window_epochs:.3g} ep, init left {p.init_memory:.2g}"
        top.plot(epochs_axis, taus, color=color, label=label)
        shares = p.epoch_shares
        bottom.plot(range(1, len(shares) + 1), shares, marker="o", ms=3, color=color)
    top.set_yscale("log")
    top.set_xlabel("epoch")
    top.set_ylabel("τ(t) = 1 / (η_t λ_t), in epochs")
    top.grid(True, which="both", alpha=0.3)
    lr_axis = top.twinx()
    peak = max(lrs) if lrs and max(lrs) > 0 else 1.0
    lr_axis.plot(epochs_axis, [lr / peak for lr in lrs], color="grey", ls="--", lw=1, label="learning rate η_t / max η")
    lr_axis.set_ylabel("η_t / max η (dashed)", color="grey")
    lr_axis.set_ylim(0, 1.05)
    bottom.set_xlabel("epoch")
    bottom.set_ylabel("share of the updates the final weights hold")
    bottom.grid(True, alpha=0.3)
    # one legend for both panels (the colours are the couplings' in each), outside them: it covers no line
    handles = [*top.get_lines(), *lr_axis.get_lines()]
    fig.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="outside lower center", ncols=1)
    if title:
        top.set_title(title, fontsize=9)
    return fig


def draw_plan(
    plans: dict[str, Any], lrs: Sequence[float], steps_per_epoch: float, path: Path, *, title: str = ""
) -> Path:
    """Draw :func:`plan_figure`; write ``path`` as ``.png`` and ``.svg`` through :func:`~lightning_tau.outputs.
    save_figure` (never over a file the package did not write) and return the PNG's path."""
    from lightning_tau.outputs import save_figure

    fig = plan_figure(plans, lrs, steps_per_epoch, title=title)
    return save_figure(fig, path.with_suffix(".png"), path.with_suffix(".svg"))
