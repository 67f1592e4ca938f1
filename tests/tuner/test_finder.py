"""``TimescaleFinder`` and its pure parts: the subset, cost arithmetic, smoothing, JSON, reuse, plot, bad arguments."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from finder_results import finder_result
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import TimescaleCallback
from lightning_tau.param_groups import build_param_groups
from lightning_tau.tuner.analysis.curve import log_grid, smoothed_optimum
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult
from lightning_tau.tuner.trial import MonitorError

N_TRAIN, BATCH, LR, EPOCHS = 120, 16, 1e-2, 2


class ValModel(pl.LightningModule):
    """Linear -> LayerNorm -> Linear classifier logging ``val_loss``; AdamW with ``decay`` and ``no_decay`` groups."""

    fits = 0  # class-wide count of training starts, to see reuse train nothing

    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden, bias=False),
            torch.nn.LayerNorm(hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def on_train_start(self) -> None:
        type(self).fits += 1

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=LR)


def _data(n: int = N_TRAIN, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] + 0.3 * x[:, 1] > 0).long())


def _loaders() -> tuple[DataLoader, DataLoader]:
    return DataLoader(_data(), batch_size=BATCH, shuffle=True), DataLoader(_data(40, seed=1), batch_size=40)


def _finder(tmp_path: Path, **kwargs: Any) -> TimescaleFinder:
    settings: dict[str, Any] = dict(
        fraction=0.25,
        tau_epochs=(1.0, 4.0, 16.0),
        seeds=(0,),
        trainer_kwargs={"max_epochs": EPOCHS, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path / "finder",
        progress=False,
        verbose=False,
    )
    settings.update(kwargs)
    return TimescaleFinder(**settings)


# --- the finder on a tiny task ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[TimescaleFinder, FinderResult]:
    finder = _finder(tmp_path_factory.mktemp("fitted"))
    train, val = _loaders()
    return finder, finder.fit(ValModel, train_dataloaders=train, val_dataloaders=val)


@pytest.mark.slow
def test_trains_on_subset_and_callback_sees_n(
    fitted: tuple[TimescaleFinder, FinderResult],
) -> None:
    finder, result = fitted
    subset = round(0.25 * N_TRAIN)
    assert (result.dataset_size, result.subset_size, result.batch_size, result.epochs) == (N_TRAIN, subset, BATCH, 2)
    assert finder.study is not None
    records = finder.study.records()
    assert sorted(records) == [(1.0, 0), (4.0, 0), (16.0, 0)]
    for point in result.curve:
        run = records[(point.tau_epoch, 0)]
        assert run["dataset_size_seen"] == subset
        # TimescaleCallback set the subset's weight decay 1 / (lr * tau * M), M = ceil(30 / 16) = 2 steps per epoch
        # (= B / (lr * N_subset * tau) up to the last, partial batch), in the decaying group only
        expected = 1 / (LR * point.tau_epoch * math.ceil(subset / BATCH))
        assert run["groups"]["decay"]["weight_decay"] == pytest.approx(expected)
        assert point.weight_decay == {"decay": pytest.approx(expected)}
        assert run["groups"]["no_decay"]["weight_decay"] == 0.0 and not run["groups"]["no_decay"]["decays"]
        assert len(run["metrics"]) == EPOCHS and all("val_loss" in m for m in run["metrics"])
        assert point.values == [pytest.approx(run["metrics"][-1]["val_loss"])]  # reduce="last": the final value
    # one TensorBoard folder per trial, named after the study, the grid point and the trial
    logs = list((finder.settings.root_dir / "tb").glob("tau_finder_*/tau_epoch=4_seed0_trial*/events.out.tfevents.*"))
    assert len(logs) == 1


@pytest.mark.slow
def test_cost_and_full_cost(fitted: tuple[TimescaleFinder, FinderResult]) -> None:
    _, result = fitted
    runs = 3
    subset_steps = math.ceil(round(0.25 * N_TRAIN) / BATCH)  # 30 samples -> 2 batches per epoch
    assert [p.steps for p in result.curve] == [[EPOCHS * subset_steps]] * runs
    assert result.cost == runs * EPOCHS * subset_steps == 12
    assert result.full_cost == runs * EPOCHS * math.ceil(N_TRAIN / BATCH) == 48
    assert result.cost_fraction == pytest.approx(0.25)


@pytest.mark.slow
def test_full_run_weight_decay_uses_full_n(fitted: tuple[TimescaleFinder, FinderResult]) -> None:
    _, result = fitted
    assert set(result.weight_decay) == {"decay"} and result.lr == {"decay": LR}
    # what TimescaleCallback(tau_epoch) writes on the full data: 1 / (lr * tau * M), M = ceil(120 / 16) = 8 steps
    assert result.steps_per_epoch == 8
    assert result.weight_decay["decay"] == pytest.approx(1 / (LR * result.tau_epoch * 8))
    best = next(p for p in result.curve if p.tau_epoch == result.grid_tau_epoch)
    assert result.subset_weight_decay == best.weight_decay


@pytest.mark.slow
def test_json_schema_and_plot(fitted: tuple[TimescaleFinder, FinderResult], tmp_path: Path) -> None:
    _, result = fitted
    data = json.loads(result.save_json(tmp_path / "out" / "finder.json").read_text())
    for key, kind in {
        "tau_epoch": float,
        "weight_decay": dict,
        "fraction": float,
        "cost": int,
        "full_cost": int,
        "curve": list,
        "monitor": str,
        "reduce": str,
        "dataset_size": int,
        "subset_size": int,
    }.items():
        assert isinstance(data[key], kind), key
    assert data["weight_decay"] == result.weight_decay and data["fraction"] == 0.25
    assert [p["tau_epoch"] for p in data["curve"]] == [1.0, 4.0, 16.0]
    for point in data["curve"]:
        assert set(point) >= {"tau_epoch", "mean", "std", "values", "seeds", "weight_decay", "steps"}
        assert point["mean"] == pytest.approx(point["values"][0]) and point["std"] == 0.0
    png = result.plot(tmp_path / "out" / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_reuses_study_and_named_study_refuses_other_settings(tmp_path: Path) -> None:
    train, val = _loaders()
    first = _finder(tmp_path).fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    before = ValModel.fits
    again = _finder(tmp_path)
    second = again.fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    assert ValModel.fits == before and again.trained_runs == 0 and again.reused_runs == 3  # nothing trained
    assert second.to_json() == first.to_json()
    # other settings under the default name: another study (named after the settings), trained from scratch
    wider = _finder(tmp_path)
    wider.fit(lambda: ValModel(hidden=16), train_dataloaders=train, val_dataloaders=val)
    assert wider.trained_runs == 3 and wider.study is not None and again.study is not None
    assert wider.study.study.study_name != again.study.study.study_name
    # a named study opened with other settings: an error naming each difference, before any training
    _finder(tmp_path, study_name="mine").fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    before = ValModel.fits
    with pytest.raises(ValueError, match=r"study_name='mine'.*fraction is 0.25 there, 0.5 here; subset_size is 30"):
        _finder(tmp_path, study_name="mine", fraction=0.5).fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    with pytest.raises(ValueError, match=r"tau_epochs is \[1.0, 4.0, 16.0\] there, \[1.0, 4.0\] here"):
        grid = _finder(tmp_path, study_name="mine", tau_epochs=(1.0, 4.0))
        grid.fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    assert ValModel.fits == before


def test_fit_starts_from_fresh_state_before_it_checks_anything(tmp_path: Path) -> None:
    finder = _finder(tmp_path)
    finder._fit.trained_runs, finder._fit.staging = 7, "left by an earlier fit"  # type: ignore[assignment]
    train, _ = _loaders()
    with pytest.raises(ValueError, match=r"needs validation data"):
        finder.fit(ValModel, train_dataloaders=train)
    assert (finder.trained_runs, finder.reused_runs, finder.total_runs) == (0, 0, 0)
    assert finder.staging is None and finder.study is None
    assert finder._fit.round_settings is finder.settings  # the first round: the settings as given


@pytest.mark.slow
def test_two_fits_of_one_finder_share_no_state_and_keep_settings(tmp_path: Path) -> None:
    finder = _finder(tmp_path)
    settings, train, val = finder.settings, *_loaders()
    finder.fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    first = finder._fit
    assert (finder.trained_runs, finder.reused_runs, finder.total_runs, finder.pending_runs) == (3, 0, 3, 0)
    study = finder.study
    finder.fit(ValModel, train_dataloaders=train, val_dataloaders=val)
    assert finder._fit is not first and (first.trained_runs, first.reused_runs, first.study) == (3, 0, study)
    assert (finder.trained_runs, finder.reused_runs, finder.total_runs, finder.pending_runs) == (0, 3, 3, 0)
    assert finder.study is not study and finder.study is not None and finder.study.records() == study.records()
    assert finder.settings is settings and finder.settings == _finder(tmp_path).settings


@pytest.mark.slow
def test_finder_with_datamodule_and_missing_monitor(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP

    finder = _finder(tmp_path, fraction=0.5, tau_epochs=(4.0,), trainer_kwargs={"max_epochs": 1, "accelerator": "cpu"})
    with pytest.raises(MonitorError, match=r"monitor='val_loss'\)`: the model logged no such metric.*'val/loss'"):
        finder.fit(lambda: DigitsMLP(hidden=8, depth=1), datamodule=DigitsDataModule(train_size=100, batch_size=32))
    finder = _finder(tmp_path, fraction=0.5, tau_epochs=(4.0,), monitor="val/loss", trainer_kwargs={"max_epochs": 1})
    result = finder.fit(
        lambda: DigitsMLP(hidden=8, depth=1), datamodule=DigitsDataModule(train_size=100, batch_size=32)
    )
    assert (result.subset_size, result.dataset_size) == (50, 100)


# --- smoothing (pure) ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("true_tau", [3.0, 7.5, 12.0, 20.0])
def test_smoothed_optimum_recovers_parabola_vertex_in_log_tau(true_tau: float) -> None:
    grid = log_grid(1.0, 64.0, 7)  # 1, 2, 4, ..., 64
    curve = [0.3 + 0.05 * (math.log(t) - math.log(true_tau)) ** 2 for t in grid]
    for window in (1, 2):
        opt = smoothed_optimum(grid, curve, window=window)
        assert opt.smoothed and not opt.at_edge
        assert opt.tau_epoch == pytest.approx(true_tau, rel=1e-9)
        assert opt.metric == pytest.approx(0.3, abs=1e-12)
    # mode="max" on the mirrored curve finds the same point
    assert smoothed_optimum(grid, [-v for v in curve], mode="max").tau_epoch == pytest.approx(true_tau)


def test_smoothed_optimum_three_point_closed_form_and_fallbacks() -> None:
    # equal spacing h in log tau, values (y0, y1, y2): vertex at offset h * (y0 - y2) / (2 * (y0 - 2 y1 + y2))
    grid, values = [2.0, 8.0, 32.0], [0.4, 0.2, 0.3]
    offset = (0.4 - 0.3) / (2 * (0.4 - 2 * 0.2 + 0.3))
    assert smoothed_optimum(grid, values).tau_epoch == pytest.approx(8.0 * 4.0**offset)
    # the vertex is clamped to the best point's neighbours
    assert smoothed_optimum([1.0, 2.0, 4.0, 100.0], [1.0, 0.5, 0.49, 0.6], window=2).tau_epoch <= 100.0
    edge = smoothed_optimum(grid, [0.1, 0.2, 0.3])
    assert (edge.tau_epoch, edge.at_edge, edge.smoothed) == (2.0, True, False)
    diverged = smoothed_optimum(grid, [0.3, 0.2, math.nan])  # a diverged neighbour: no parabola, best grid point
    assert (diverged.tau_epoch, diverged.smoothed) == (8.0, False)
    assert smoothed_optimum([5.0], [0.1]) == (5.0, 0.1, 0, False, False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tau_epochs": [1.0, 2.0], "values": [1.0]}, "one value per grid point"),
        ({"tau_epochs": [2.0, 1.0], "values": [1.0, 2.0]}, "positive and increasing"),
        ({"tau_epochs": [1.0, 2.0], "values": [math.nan, math.inf]}, "no value is finite"),
        ({"tau_epochs": [1.0], "values": [1.0], "mode": "lowest"}, r"mode='lowest'"),
        ({"tau_epochs": [1.0], "values": [1.0], "window": 0}, r"window=0"),
    ],
)
def test_smoothed_optimum_rejects_bad_input(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        smoothed_optimum(**kwargs)


def test_curve_point_statistics_and_nan_json() -> None:
    point = CurvePoint(4.0, [0.2, 0.4], [0, 1])
    assert point.mean == pytest.approx(0.3) and point.std == pytest.approx(math.sqrt(0.02))
    diverged = CurvePoint(1.0, [0.2, math.nan], [0, 1], {"decay": 1.0}, [5, 5])
    assert diverged.mean == math.inf
    result = finder_result(
        [diverged, point, CurvePoint(16.0, [0.5, 0.6], [0, 1], {}, [5, 5])],
        lr={"decay": 0.1},
        fraction=0.5,
        dataset_size=100,
        batch_size=10,
        epochs=1,
        full_cost=60,
    )
    data = json.loads(json.dumps(result.to_json(), allow_nan=False))  # strict JSON: NaN written as null
    assert data["curve"][0]["values"] == [0.2, None] and data["curve"][0]["mean"] is None
    assert data["cost"] == 20 and data["cost_fraction"] == pytest.approx(20 / 60)  # 4 runs x 5 steps


# --- bad arguments ---------------------------------------------------------------------------------------------

_EPOCHS = {"max_epochs": 2}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fraction": 0.0}, r"`TimescaleFinder\(fraction=0.0\)` is not valid: use a number in \(0, 1\]"),
        ({"fraction": 1.5}, r"fraction=1.5"),
        ({"fraction": True}, r"fraction=True"),
        ({"fraction": "0.5"}, r"fraction='0.5'"),
        ({"tau_epochs": ()}, r"tau_epochs=\(\)\)` is not valid"),
        ({"tau_epochs": (1.0, -2.0)}, r"-2.0 is not a positive finite number"),
        ({"tau_epochs": (1.0, math.inf)}, r"inf is not a positive finite number"),
        ({"tau_epochs": "8"}, r"tau_epochs='8'"),
        ({"tau_epochs": (4.0, 4.0)}, r"repeats a value"),
        ({"seeds": ()}, r"seeds=\(\)\)` is not valid"),
        ({"seeds": (0, 1.5)}, r"1.5 is not an integer"),
        ({"seeds": (0, True)}, r"True is not an integer"),
        ({"seeds": (1, 1)}, r"repeats a seed"),
        ({"monitor": ""}, r"monitor=''"),
        ({"mode": "lowest"}, r"mode='lowest'\)` is not supported"),
        ({"reduce": "mean"}, r"reduce='mean'\)` is not supported"),
        ({"trainer_kwargs": None}, r"must be a dict with `max_epochs`"),
        ({"trainer_kwargs": {"accelerator": "cpu"}}, r"must be a dict with `max_epochs`"),
        ({"trainer_kwargs": {"max_epochs": 0}}, r"'max_epochs': 0\}\)` is not valid"),
        ({"trainer_kwargs": {"max_epochs": 2, "max_steps": 10}}, r"'max_steps': 10\}\)` is not allowed"),
        ({"trainer_kwargs": {"max_epochs": 2, "limit_train_batches": 0.5}}, r"subsets the dataset itself"),
        ({"trainer_kwargs": {"max_epochs": 2, "logger": True}}, r"'logger': True\}\)` is not allowed"),
        ({"trainer_kwargs": {"max_epochs": 2, "accumulate_grad_batches": 0}}, r"'accumulate_grad_batches': 0"),
        (
            {"trainer_kwargs": {"max_epochs": 2, "callbacks": [TimescaleCallback(tau_epoch=1.0, verbose=False)]}},
            r"adds a TimescaleCallback",
        ),
        ({"root_dir": ""}, r"root_dir=''"),
        ({"subset_seed": 0.5}, r"subset_seed=0.5"),
        ({"window": 0}, r"window=0"),
        ({"workers": 0}, r"workers=0"),
        ({"study_name": " "}, r"study_name=' '"),
        ({"storage": 3}, r"storage=3"),
        ({"stale_after": -1}, r"stale_after=-1"),
    ],
)
def test_rejects_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    settings: dict[str, Any] = {"trainer_kwargs": _EPOCHS, **kwargs}
    with pytest.raises(ValueError, match=match):
        TimescaleFinder(**settings)


def test_fit_rejects_bad_data_and_models_before_training(tmp_path: Path) -> None:
    train, val = _loaders()
    finder = _finder(tmp_path)
    before = ValModel.fits
    with pytest.raises(TypeError, match=r"needs a LightningModule, or something that makes.*'Linear'"):
        finder.fit(torch.nn.Linear(2, 2), train_dataloaders=train, val_dataloaders=val)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"must make a LightningModule, got 'Linear'"):
        finder.fit(lambda: torch.nn.Linear(2, 2), train_dataloaders=train, val_dataloaders=val)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match=r"needs validation data"):
        finder.fit(ValModel, train_dataloaders=train)
    with pytest.raises(ValueError, match=r"needs training data"):
        finder.fit(ValModel, val_dataloaders=val)
    with pytest.raises(ValueError, match=r"takes one training DataLoader, got a list"):
        finder.fit(ValModel, train_dataloaders=[train, train], val_dataloaders=val)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"not both"):
        finder.fit(ValModel, datamodule=pl.LightningDataModule(), train_dataloaders=train)
    small = DataLoader(_data(), batch_size=64, drop_last=True)
    with pytest.raises(ValueError, match=r"gives no full batch of 64"):
        finder.fit(ValModel, train_dataloaders=small, val_dataloaders=val)
    assert ValModel.fits == before and not (tmp_path / "finder").exists()


def test_log_grid() -> None:
    assert log_grid(2.0, 128.0, 7) == pytest.approx((2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0))
    assert log_grid(3.0, 3.0, 1) == (3.0,)
    for bad, match in [((0.0, 1.0, 3), "low=0.0"), ((1.0, 2.0, 0), "num=0"), ((1.0, math.nan, 2), "high=nan")]:
        with pytest.raises(ValueError, match=match):
            log_grid(*bad)


class SharedNameModel(ValModel):
    """Two decaying groups that share the name "all" (as mup's ``MuAdamW`` splits one), at lr and lr / 4."""

    def configure_optimizers(self) -> torch.optim.Optimizer:
        first, norm, _, last = self.net
        return torch.optim.AdamW(
            [
                {"params": [first.weight], "name": "all", "lr": LR / 4},
                {"params": [last.weight], "name": "all"},
                {"params": [*norm.parameters(), last.bias], "name": "no_decay", "weight_decay": 0.0},
            ],
            lr=LR,
            weight_decay=0.1,
        )


@pytest.mark.slow
def test_result_keeps_groups_share_name_apart(tmp_path: Path) -> None:
    train, val = _loaders()
    result = _finder(tmp_path, tau_epochs=(1.0, 4.0)).fit(SharedNameModel, train_dataloaders=train, val_dataloaders=val)
    assert result.lr == {"all/pg1": LR / 4, "all/pg2": LR}
    m = 8  # ceil(120 / 16) steps per epoch on the full data
    assert result.weight_decay == {
        "all/pg1": pytest.approx(4 / (LR * result.tau_epoch * m)),
        "all/pg2": pytest.approx(1 / (LR * result.tau_epoch * m)),
    }
    for point in result.curve:  # what each trial's callback wrote, per group
        assert set(point.weight_decay) == {"all/pg1", "all/pg2"}
        assert point.weight_decay["all/pg1"] == pytest.approx(4 * point.weight_decay["all/pg2"])


@pytest.mark.slow
def test_every_run_gets_fresh_copy_of_callbacks_in_trainer_kwargs(tmp_path: Path) -> None:
    """A callback with run state gets a fresh copy per run. One ``EarlyStopping`` in ``trainer_kwargs`` used to
    serve every run: once the first run stopped, the next ones started from its best score and patience count and
    stopped after one epoch, a curve of one-epoch runs. A callback without run state is still shared."""
    from finder_study import fit_finder, journal_study, make_finder
    from lightning.pytorch.callbacks import EarlyStopping

    class Starts(pl.Callback):  # no run state (an empty state_dict): shared by the runs, it sees them all
        def __init__(self) -> None:
            self.runs = 0

        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            self.runs += 1

    stopping, starts = EarlyStopping("val_loss", patience=2), Starts()  # CurveModel's val_loss is constant in a run
    kwargs = {"max_epochs": 8, "callbacks": [stopping, starts]}
    finder = make_finder(tmp_path, seeds=(0, 1), trainer_kwargs=kwargs)
    fit_finder(finder)
    epochs = [t.user_attrs["record"]["epochs_run"] for t in journal_study(finder).trials]
    assert len(epochs) == 8 and set(epochs) == {3}, epochs  # each run: its first epoch, then 2 without progress
    assert stopping.wait_count == 0 and stopping.stopped_epoch == 0  # the user's own instance is never trained
    assert starts.runs == 8


def test_callback_cannot_be_copied_refused_before_any_training(tmp_path: Path) -> None:
    import threading

    class Locked(pl.Callback):  # run state of its own (a non-empty state_dict), and a lock
        def __init__(self) -> None:
            self.lock, self.seen = threading.Lock(), 0

        def state_dict(self) -> dict[str, int]:
            return {"seen": self.seen}

    with pytest.raises(ValueError, match=r"run state .* from a fresh copy, .* cannot be copied \(TypeError: .*lock"):
        TimescaleFinder(trainer_kwargs={"max_epochs": 1, "callbacks": [Locked()]}, root_dir=tmp_path)
