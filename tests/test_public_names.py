"""Every public name the docs show imports: the API page's modules and their ``__all__``, the package faces'
``__all__``, and each ``from lightning_tau... import name`` or ``lightning_tau.name`` in the docs, the README and the
examples."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.rst")), ROOT / "README.md", *sorted((ROOT / "examples").glob("*.py"))]
FACES = ["lightning_tau", "lightning_tau.diagnostics", "lightning_tau.tuner", "lightning_tau.tuner.analysis",
         "lightning_tau.tuner.study"]


def _api_targets() -> list[str]:
    """``automodule``/``autoclass``/``autofunction`` targets of docs/api.rst, and the names their ``:members:`` list."""
    targets: list[str] = []
    current = ""
    for line in (ROOT / "docs" / "api.rst").read_text().splitlines():
        directive = re.match(r"\.\. auto(module|class|function|data):: (\S+)", line)
        if directive:
            current = directive.group(2)
            targets.append(current)
            continue
        members = re.match(r"\s+:members: (.+)", line)
        if members and current:
            targets += [f"{current}.{name.strip()}" for name in members.group(1).split(",") if name.strip()]
    return targets


def _imported_names() -> list[str]:
    """``lightning_tau.x.y`` for every ``from lightning_tau.x import y`` and every dotted ``lightning_tau.x`` in the
    docs, the README and the examples."""
    names: set[str] = set()
    for path in DOCS:
        text = path.read_text()
        imports = re.findall(r"from (lightning_tau[\w.]*) import \(([\w,\s]+)\)", text)
        imports += re.findall(r"from (lightning_tau[\w.]*) import ([\w, ]+)", text)
        for module, imported in imports:
            names |= {f"{module}.{n.split()[0]}" for n in imported.split(",") if n.strip()}
        names |= {m.rstrip(".") for m in re.findall(r"\blightning_tau(?:\.[A-Za-z_]\w*)+", text)}
    return sorted(names)


def resolve(dotted: str) -> object:
    """The object ``dotted`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as err:
            if err.name is None or not ".".join(parts[:cut]).startswith(err.name):
                raise
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_api_pages_targets_import() -> None:
    targets = _api_targets()
    assert len(targets) > 30, targets  # the page was read
    missing = []
    for target in targets:
        try:
            resolve(target)
        except (ImportError, AttributeError) as err:
            missing.append(f"{target}: {err}")
    assert not missing, missing


def test_every_name_in_documented_modules_all_imports() -> None:
    modules = [t for t in _api_targets() if isinstance(resolve(t), type(importlib))] + FACES
    missing = [
        f"{module}.{name}"
        for module in dict.fromkeys(modules)
        for name in getattr(importlib.import_module(module), "__all__", [])
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing, missing


@pytest.mark.parametrize("face", FACES)
def test_faces_dir_lists_all(face: str) -> None:
    module = importlib.import_module(face)
    assert set(module.__all__) <= set(dir(module))


def test_every_name_docs_import_resolves() -> None:
    names = _imported_names()
    assert "lightning_tau.TimescaleCallback" in names and len(names) > 40, names
    missing = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as err:
            missing.append(f"{name}: {err!r}")
    assert not missing, missing
