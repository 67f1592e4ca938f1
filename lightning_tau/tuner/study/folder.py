"""Where a study's TensorBoard logs go: one folder under ``root_dir/tb`` per study name, one path component, never
outside it, and never one folder for two names.

Pure (the standard library only). The finder (:mod:`lightning_tau.tuner.finder`) and ``lightning-tau find`` name a
study's folder with :func:`study_folder`; the study itself is :mod:`lightning_tau.tuner.study.grid_study`'s.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["study_folder"]

#: The characters a study's folder name keeps as they are (the rest are replaced, see :func:`study_folder`).
_FOLDER_SAFE = re.compile(r"[A-Za-z0-9_=+,.-]+")
#: The longest folder name :func:`study_folder` gives (file systems allow 255 bytes).
_FOLDER_MAX = 100


def study_folder(name: str) -> str:
    """The folder, under ``root_dir/tb``, of study ``name``'s TensorBoard logs: one path component, never outside.

    A study's name is Optuna's and may be anything (it travels in shared configs and job arrays, so it decides where
    every worker writes); the folder is the name itself where that is one plain component (letters, digits and
    ``_=+,.-``, not starting with ``.``, at most 100 characters), else the name with every other character replaced by
    ``_`` and a hash of the whole name after it, so two names never share a folder and none leaves ``tb``.

    Example:
        >>> study_folder("tau_finder_1a2b_width=64")
        'tau_finder_1a2b_width=64'
        >>> study_folder("../escape")
        '_._escape-1ba7343c'
        >>> study_folder("/abs"), study_folder(".."), study_folder("a/b")
        ('_abs-e802dcc0', '_.-5ec1f7e7', 'a_b-c14cddc0')
    """
    if _FOLDER_SAFE.fullmatch(name) and not name.startswith(".") and len(name) <= _FOLDER_MAX:
        return name
    safe = "".join(c if _FOLDER_SAFE.fullmatch(c) else "_" for c in name[:_FOLDER_MAX])
    if safe.startswith("."):
        safe = "_" + safe[1:]
    return f"{safe}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
