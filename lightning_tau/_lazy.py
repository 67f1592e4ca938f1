"""One lazy face for a package: its public names imported on first use (PEP 562), so that importing a pure module
under it does not import Lightning, torch or Optuna."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(
    package: str, public: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose ``public`` names (name -> module) are
    imported on first use and then kept in ``namespace`` (the package's ``globals()``).

    Example:
        >>> getattr_, dir_ = lazy_face("pkg", {"sqrt": "math"}, namespace := {})
        >>> getattr_("sqrt")(4.0), "sqrt" in namespace, dir_()
        (2.0, True, ['sqrt'])
        >>> getattr_("cbrt")
        Traceback (most recent call last):
        ...
        AttributeError: module 'pkg' has no attribute 'cbrt'
    """

    def __getattr__(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__
