"""The demos' oracles: a TensorBoard run read back, the offline (network refused) demo command, and the checks that a
text sweep's optima and a width sweep's ``summary.json`` follow from their own logged runs."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest
from ddp_harness import clean_env
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tb_events import read_run
from lightning_tau.tuner.analysis.scaling import fit_scaling
from lightning_tau.tuner.analysis.verdicts import RuleVerdict, width_verdict

#: In the subprocess: any IPv4/IPv6 connection or name lookup raises (a download attempt would fail the run).
REFUSE_NETWORK = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("network refused by tests/demos/test_text.py")

_connect = socket.socket.connect

def _connect_local_only(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _refuse()
    return _connect(self, address)

socket.socket.connect = _connect_local_only
socket.socket.connect_ex = _connect_local_only
socket.getaddrinfo = _refuse
"""


def offline_command(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """``python args`` with sockets refused by a ``sitecustomize``, inside ``unshare -n`` (no network namespace
    interfaces) where this user may create one."""
    site = tmp_path / "offline_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(REFUSE_NETWORK))
    env = clean_env()
    env["PYTHONPATH"] = f"{site}{':' + env['PYTHONPATH'] if env.get('PYTHONPATH') else ''}"
    command = [sys.executable, *args]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]
    return command, env


def text_sizes(fractions: list[float], max_tokens: int, block_size: int) -> list[int]:
    """The finder's subset sizes: ``round(fraction * windows)`` of the corpus's training windows."""
    return [round(f * ((max_tokens - 1) // block_size)) for f in fractions]


def check_text_sweep(sweep: Path, printed: str, *, runs: int, batch_size: int, sizes: list[int]) -> None:
    """A ``--task text`` sweep's summary against its own TensorBoard runs: each run's weight decay is
    ``1 / (lr M tau_epoch)`` with ``M = N // B`` (the loader drops the last partial batch), the summary's curves are
    the runs' final losses, and its exponent is ``fit_scaling``'s on them."""
    logged: dict[int, dict[float, dict[int, float]]] = {}
    # the sweep root holds the HParams experiment config only; the tensorboard views' links are not runs of their own
    run_dirs = sorted({p.parent for p in sweep.rglob("events.out.tfevents.*") if not p.is_symlink()} - {sweep})
    assert len(run_dirs) == runs
    for run_dir in run_dirs:
        hparams, scalars = read_run(run_dir)
        n, b, tau = int(hparams["dataset_size"]), int(hparams["batch_size"]), hparams["tau_epoch"]
        assert b == batch_size
        assert hparams["weight_decay"] == pytest.approx(1 / (hparams["lr"] * (n // b) * tau), rel=1e-6)
        assert math.isfinite(scalars["hp/val_loss"]) and scalars["hp/val_loss"] == pytest.approx(scalars["val/loss"])
        logged.setdefault(n, {}).setdefault(tau, {})[int(hparams["seed"])] = scalars["hp/val_loss"]
    assert sorted(logged) == sizes

    summary = json.loads((sweep / "summary.json").read_text())
    assert (summary["axis"], summary["task"], summary["sizes"]) == ("dataset_size", "text", sizes)
    curves = []
    for n in sizes:
        rows = summary["curves"][str(n)]
        for tau, values in rows:
            assert values == pytest.approx([logged[n][tau][seed] for seed in summary["seeds"]], rel=1e-6)
        curves.append([values for _, values in rows])
    fit = fit_scaling(sizes, [tau for tau, _ in rows], curves, mode="min")
    assert summary["exponent"] == pytest.approx(fit.exponent, abs=1e-9) and summary["ci_reason"] == fit.ci_reason
    assert "Optimum of hp/val_loss per dataset_size" in printed and "Exponent of best tau_epoch on N" in printed


def _grid_argmin(xs: list[float], values: list[float | None]) -> float:
    means = [math.inf if v is None else v for v in values]
    return xs[means.index(min(means))]


def check_width_summary(sweep: Path, printed: str, widths: list[int], lambdas: list[float], seeds: list[int]) -> dict:
    """The summary's numbers are the stats module's on its own curves, and the curves are the logged runs."""
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["axis"] == "width" and summary["sweep"] == "lambda_base" and "fixed" not in json.dumps(summary)
    assert summary["widths"] == summary["values"] == widths and summary["seeds"] == seeds
    # the λ_base the callback really wrote: the config's grid and the points the grid extension added (λ_base ·
    # tau_epoch is the same at every grid point: 1 / (lr_base · M))
    taus = sorted(p["tau_epoch"] for p in summary["results"][0]["curve"])
    product = summary["xs"][-1] * taus[0]
    lambdas = sorted([*lambdas, *(product / a["tau_epoch"] for a in summary.get("grid_added") or [])])
    assert summary["xs"] == pytest.approx(lambdas, rel=1e-9)
    assert set(summary["curves"]) == {str(w) for w in widths}
    curves, per_seed = [], []
    for w in widths:
        rows = summary["curves"][str(w)]
        assert [row[0] for row in rows] == pytest.approx(sorted(lambdas), rel=1e-9)
        assert all(len(row[1]) == len(seeds) for row in rows)
        curves.append([[math.inf if v is None else v for v in row[1]] for row in rows])
        xs = [row[0] for row in rows]
        per_seed.append([_grid_argmin(xs, [row[1][j] for row in rows]) for j in range(len(seeds))])
    fit = fit_scaling([float(w) for w in widths], summary["xs"], curves, mode="min")
    assert summary["exponent"] == pytest.approx(fit.exponent, abs=1e-12)
    assert summary["width_exponent"] == pytest.approx(1 + fit.exponent, abs=1e-12)
    if fit.ci is None:
        # the axis result says so where the edge is a plateau (AxisResult's ci_reason), else the fit's own reason
        plateau = str(summary["ci_reason"]).startswith("the best at scale") and "plateau" in summary["ci_reason"]
        assert summary["exponent_ci"] is None and (summary["ci_reason"] == fit.ci_reason or plateau) and fit.ci_reason
        fit = dataclasses.replace(fit, ci_reason=summary["ci_reason"])  # the verdict says the axis result's reason
    else:
        assert summary["exponent_ci"] == pytest.approx(list(fit.ci), abs=1e-12) and summary["ci_reason"] is None
    flat = [x for row in summary["per_seed_grid_optima"] for x in row]
    assert flat == pytest.approx([x for row in per_seed for x in row], rel=1e-9)  # written out above
    assert flat == pytest.approx([x for row in fit.per_seed_grid_optima for x in row], rel=1e-12)
    assert [t["interior"] for t in summary["interior"]] == [t.interior for t in fit.interior]
    rules = [RuleVerdict.from_json(r) for r in summary["rules"]]
    assert summary["verdict"] == width_verdict(fit, rules, monitor=summary["results"][0]["monitor"])
    assert f"Verdict: {summary['verdict']}" in printed
    assert "Exponent of best lambda_base on width" in printed and f"Summary: {sweep / 'summary.json'}" in printed
    # the curves are the runs the finder logged: one TensorBoard run per (width, λ_base, seed)
    tau_to_lam = {p["tau_epoch"]: lam for p, lam in zip(summary["results"][0]["curve"], reversed(summary["xs"]))}
    run_dirs = sorted({p.parent for p in (sweep / "tb").rglob("events.out.tfevents.*")})
    assert len(run_dirs) == len(widths) * len(lambdas) * len(seeds)
    logged: dict[str, dict[float, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for run_dir in run_dirs:
        width = re.search(r"_width=(\d+)$", run_dir.parent.name).group(1)  # type: ignore[union-attr]
        tau, seed = re.match(r"tau_epoch=([^_]+)_seed(\d+)_trial", run_dir.name).groups()  # type: ignore[union-attr]
        lam = tau_to_lam[min(tau_to_lam, key=lambda t: abs(t - float(tau)))]
        logged[width][lam][int(seed)] = _last_scalar(run_dir, "val/loss")
    for w in widths:
        for lam, values in summary["curves"][str(w)]:
            got = logged[str(w)][min(logged[str(w)], key=lambda x: abs(x - lam))]
            assert [got[s] for s in seeds] == pytest.approx(values, rel=1e-6)
    return summary


def _last_scalar(run_dir: Path, tag: str) -> float:
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return accumulator.Scalars(tag)[-1].value
