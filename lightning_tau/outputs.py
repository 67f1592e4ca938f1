"""What the package may write over: the one check every writer of a result file calls before it writes.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightning_tau.errors import TimescaleError

__all__ = [
    "OWN_JSON_KEYS",
    "OutputError",
    "StudyFiles",
    "check_output",
    "output_problem",
    "save_figure",
    "study_files",
    "write_json",
]

#: The keys that mark a JSON object as one the package wrote: the finder's summary
#: (:meth:`FinderResult.to_json <lightning_tau.tuner.analysis.finder_result.FinderResult.to_json>`), an axis's
#: (:meth:`AxisResult.to_json <lightning_tau.tuner.analysis.axis_result.AxisResult.to_json>`) and the demo's ``summary.json``.
#: ``tests/test_outputs.py`` checks each against the real writer.
OWN_JSON_KEYS: tuple[frozenset[str], ...] = (
    frozenset({"tau_epoch", "curve", "verdict", "tau_epoch_range"}),
    frozenset({"axis", "exponent", "results", "rules"}),
    frozenset({"sweep", "metric", "curves", "config"}),
)
#: What the package's figures say made them (PNG ``Software``, SVG and PDF ``Creator``).
FIGURE_CREATOR = "lightning_tau"
#: Figures matplotlib wrote: the package's own before they carried :data:`FIGURE_CREATOR`.
_MATPLOTLIB = b"matplotlib"
#: The largest existing file read to recognise it (a larger one is not the package's).
_READ_LIMIT = 64 * 2**20
#: The suffixes of the files Optuna's journal lock and the journal's repair put beside a journal (``.lock``, the
#: lock's ``.lock<uuid>.rename`` and the repair's ``.corrupt-<time>``), and those SQLite and the finder put beside a
#: database (SQLite's rollback journal, write-ahead log and shared memory, the finder's take lock).
_JOURNAL_BESIDE = (".lock", ".corrupt-")
_SQLITE_BESIDE = ("-journal", "-wal", "-shm", ".take-lock")


class OutputError(TimescaleError):
    """A path a result file must not be written to (:func:`check_output`): ``path`` and the one-line ``reason``."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"will not write {str(path)!r}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class StudyFiles:
    """The files of a study's storage: ``exact`` paths, and the files in ``folder`` whose names start with one of
    ``prefixes`` (a lock or backup named after the storage), described as ``what``."""

    exact: tuple[Path, ...] = ()
    folder: Path | None = None
    prefixes: tuple[str, ...] = ()
    what: str = "the study's storage"

    def holds(self, path: Path) -> bool:
        """Whether ``path`` (resolved) is one of these files."""
        if path in self.exact:
            return True
        return path.parent == self.folder and any(path.name.startswith(p) for p in self.prefixes)


def study_files(storage: str | os.PathLike[str]) -> StudyFiles:
    """The files of the study storage ``storage``: a journal file path, or an Optuna database URL (a SQLite URL has
    files; a server's database has none here).

    Example:
        >>> files = study_files("runs/study.journal")
        >>> files.holds(Path("runs/study.journal.lock").resolve()), files.holds(Path("runs/notes.json").resolve())
        (True, False)
        >>> study_files("sqlite:///runs/finder.db").holds(Path("runs/finder.db.take-lock").resolve())
        True
        >>> study_files("postgresql://user@host/db").exact
        ()
    """
    text = os.fspath(storage)
    if "://" not in text:
        journal = _resolved(Path(text))
        return StudyFiles(
            (journal,), journal.parent, tuple(journal.name + s for s in _JOURNAL_BESIDE), "the study's journal file"
        )
    scheme, _, rest = text.partition("://")
    if scheme.split("+")[0] != "sqlite":
        return StudyFiles()
    database = rest.removeprefix("/").partition("?")[0]  # sqlite:///relative.db, sqlite:////absolute.db
    if database in ("", ":memory:"):
        return StudyFiles()
    path = _resolved(Path(database))
    return StudyFiles(
        (path, *(path.with_name(path.name + s) for s in _SQLITE_BESIDE)), what="the study's SQLite database"
    )


def output_problem(
    path: str | os.PathLike[str],
    *,
    studies: Iterable[StudyFiles] = (),
    out: str | os.PathLike[str] | None = None,
    own_folder: str | None = None,
) -> str | None:
    """Why a result file must not be written to ``path``, in a sentence that says what to do; ``None`` when it may
    (see the module).

    Args:
        path: where the file would go.
        studies: the storages of the studies this command uses (:func:`study_files`).
        out: the folder of the studies' outputs (``--out``, the finder's ``root_dir``): its ``tb`` folder and the
            study folders beside it are refused, except ``own_folder``.
        own_folder: the name of this study's folder under ``out``, where known.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "notes.txt").write_text("my notes\\n")
        >>> print(output_problem(folder / "notes.txt"))
        it is a file the package did not write (it would be replaced): pass a new path, or move the file away first.
        >>> output_problem(folder / "new.json") is None
        True
    """
    target = _resolved(Path(path))
    for files in studies:
        if files.holds(target):
            return (
                f"it is {files.what} (or a file beside it), which writing there would destroy: pass another path"
                " outside the study's files."
            )
    if out is not None and (problem := _study_folder_problem(target, _resolved(Path(out)), own_folder)):
        return problem
    if target.is_dir():
        return "it is a folder: pass a file path."
    if target.exists() and not _ours(target):
        return (
            "it is a file the package did not write (it would be replaced): pass a new path, or move the file away"
            " first."
        )
    return None


def check_output(
    path: str | os.PathLike[str],
    *,
    studies: Iterable[StudyFiles] = (),
    out: str | os.PathLike[str] | None = None,
    own_folder: str | None = None,
) -> Path:
    """:func:`output_problem` as an :class:`OutputError`; returns ``path`` as a :class:`~pathlib.Path`.

    Raises:
        OutputError: ``path`` must not be written (the error's ``reason`` says why and what to do).
    """
    problem = output_problem(path, studies=studies, out=out, own_folder=own_folder)
    if problem is not None:
        raise OutputError(Path(path), problem)
    return Path(path)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` to ``path`` as indented strict JSON with a trailing newline (parents created), after
    :func:`check_output`; returns the path.

    Raises:
        OutputError: ``path`` is a file the package did not write (or a folder).
        ValueError: ``data`` holds a non-finite number (strict JSON has none).

    Example:
        >>> import tempfile
        >>> path = write_json(Path(tempfile.mkdtemp()) / "new" / "r.json", {"tau_epoch": 8.0})
        >>> path.read_text()
        '{\\n  "tau_epoch": 8.0\\n}\\n'
    """
    path = check_output(path)
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def save_figure(
    fig: Any, path: str | os.PathLike[str], *more: str | os.PathLike[str], **savefig: Any
) -> Path:  # pragma: no mutate block (drawing)
    """Save a matplotlib figure to ``path`` and each of ``more`` (parents created; each format from its suffix; 120
    dpi unless ``savefig`` says), after :func:`check_output` of them all, marked as the package's
    (:data:`FIGURE_CREATOR`), and close it, also when saving fails; returns ``path``.

    Raises:
        OutputError: a path is a file the package did not write (or a folder): nothing is written, the figure is
            closed.
    """
    import matplotlib.pyplot as plt

    try:
        paths = [check_output(p) for p in (path, *more)]
        for target in paths:
            target.parent.mkdir(parents=True, exist_ok=True)
            key = {".png": "Software", ".svg": "Creator", ".pdf": "Creator"}.get(target.suffix.lower())
            fig.savefig(target, **{"dpi": 120, "metadata": {key: FIGURE_CREATOR} if key else None, **savefig})
    finally:
        plt.close(fig)
    return paths[0]


def _study_folder_problem(target: Path, out: Path, own_folder: str | None) -> str | None:
    """Why ``target`` is inside a study's folder under ``out`` (not ``own_folder``), or ``None``."""
    try:
        inside = target.relative_to(out).parts
    except ValueError:
        return None
    if len(inside) < 2:  # a file directly in out: no study's folder
        return None
    tb = out / "tb"
    if inside[0] == "tb":
        return (
            f"it is inside {tb}, the studies' TensorBoard logs: pass a path outside it (the summary of each study"
            f" goes to {out}/STUDY/finder.json when --json is left out)."
        )
    folder = inside[0]
    if folder == own_folder or not _has_logs(tb, folder):
        return None
    return (
        f"it is inside {out / folder}, the folder of study {folder!r}, which holds that study's results: pass a path"
        " outside the study folders (or leave --json out: each study writes its own folder)."
    )


def _has_logs(tb: Path, folder: str) -> bool:
    """Whether ``tb`` holds the TensorBoard logs of study folder ``folder`` (or of its axis points,
    ``FOLDER_width=64``, ``FOLDER_dataset_size=0.5``)."""
    try:
        names = [entry.name for entry in os.scandir(tb) if entry.is_dir()]
    except OSError:
        return False
    return any(name == folder or name.startswith((f"{folder}_width=", f"{folder}_dataset_size=")) for name in names)


def _ours(path: Path) -> bool:
    """Whether the existing file ``path`` is one the package writes: its JSON, or a figure."""
    try:
        if path.stat().st_size > _READ_LIMIT:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    if data.startswith((b"\x89PNG\r\n\x1a\n", b"%PDF")) or data.lstrip().startswith(b"<?xml"):
        head = data[:65536].lower()
        return FIGURE_CREATOR.encode() in head or _MATPLOTLIB in head
    try:
        loaded = json.loads(data)
    except ValueError:
        return False
    return isinstance(loaded, Mapping) and any(keys <= loaded.keys() for keys in OWN_JSON_KEYS)


def _resolved(path: Path) -> Path:
    """``path`` absolute with its links resolved (what exists of it), so two spellings of one file compare equal."""
    return Path(os.path.realpath(path))

