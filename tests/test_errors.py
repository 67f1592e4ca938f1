"""``lightning_tau.errors``: one exception base, :class:`TimescaleError`, that every package error derives from."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import lightning_tau
from lightning_tau.errors import TimescaleError
from lightning_tau.outputs import write_json

#: Modules the walk does not import, each with why: importing ``__main__`` runs the command (and exits).
NOT_IMPORTED = {"lightning_tau.__main__": "importing it runs `lightning-tau` and raises SystemExit"}

#: Exception classes that are not errors, each with why it need not derive from TimescaleError.
NOT_ERRORS = {
    "lightning_tau.cli.plan._Planned": "a control-flow signal: raised at train start to stop the fit it planned,"
    " caught by plan_config itself, never seen by a caller",
}

#: The package's error classes by name: the walk must find every one (else it walked nothing).
KNOWN = {
    "TimescaleError",
    "OutputError",
    "ConfigError",
    "PlanError",
    "SettingError",
    "MonitorError",
    "StorageError",
    "JournalWriteError",
    "StudyMismatchError",
}


def _exception_classes() -> dict[str, type[Exception]]:
    """Every ``Exception`` subclass defined in a module of lightning_tau, by its qualified name (a ``SystemExit``
    such as the command's SIGTERM exit is an exit, not an error)."""
    found: dict[str, type[Exception]] = {}
    names = [m.name for m in pkgutil.walk_packages(lightning_tau.__path__, "lightning_tau.")]
    root = Path(lightning_tau.__file__).parent
    files = {".".join(("lightning_tau", *f.relative_to(root).with_suffix("").parts)) for f in root.rglob("*.py")}
    expected = {name.removesuffix(".__init__") for name in files} - {"lightning_tau"}
    assert set(names) == expected  # the walk saw every module, subpackages included
    for name in names:
        if name in NOT_IMPORTED:
            continue
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Exception) and obj.__module__ == name:
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


def test_every_package_exception_derives_from_timescale_error() -> None:
    found = _exception_classes()
    assert KNOWN <= {cls.__name__ for cls in found.values()}, sorted(found)
    assert set(NOT_ERRORS) <= set(found), "an entry of NOT_ERRORS no longer exists: remove it"
    stray = sorted(n for n, cls in found.items() if n not in NOT_ERRORS and not issubclass(cls, TimescaleError))
    assert not stray, f"derive these from lightning_tau.errors.TimescaleError: {stray}"


def test_timescale_error_public_and_value_error() -> None:
    assert lightning_tau.TimescaleError is TimescaleError
    assert "TimescaleError" in lightning_tau.__all__ and "TimescaleError" in dir(lightning_tau)
    assert issubclass(TimescaleError, ValueError)  # code that caught ValueError still catches every one


def test_one_except_catches_callback_finder_and_output_errors(tmp_path: Path) -> None:
    caught = []
    user_file = tmp_path / "notes.json"
    user_file.write_text('{"mine": 1}\n')
    attempts = [
        lambda: lightning_tau.TimescaleCallback(tau_epoch=-1.0),
        lambda: lightning_tau.TimescaleFinder(
            axis="width", widths=(64, 128, 256), tolerance=0.8, trainer_kwargs={"max_epochs": 1}
        ),
        lambda: write_json(user_file, {"tau_epoch": 1.0}),  # the path `--json` names
    ]
    for attempt in attempts:
        try:
            attempt()
        except lightning_tau.TimescaleError as err:
            caught.append((type(err).__name__, str(err)))
    assert [name for name, _ in caught] == ["TimescaleError", "TimescaleError", "OutputError"], caught
    assert "`TimescaleCallback(tau_epoch=-1.0)`" in caught[0][1]
    assert "`TimescaleFinder(tolerance=0.8)` is not valid" in caught[1][1]
    assert "notes.json" in caught[2][1] and "a file the package did not write" in caught[2][1]
    assert user_file.read_text() == '{"mine": 1}\n'

