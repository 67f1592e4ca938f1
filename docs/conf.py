"""Sphinx configuration for lightning_tau. Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html``."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import lightning_tau  # noqa: E402

project = "lightning_tau"
author = "lightning_tau contributors"
copyright = "2025, lightning_tau contributors"
release = version = lightning_tau.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

# Google-style docstrings only
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# "Attributes:" as field lists: NamedTuple fields are documented by autodoc too, and two entries would clash
napoleon_use_ivar = True

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# type hints name Lightning, torch and typing objects we do not document; keep them as text, not broken links
nitpicky = False

exclude_patterns = ["_build", "make_figures.py"]
html_theme = "alabaster"
html_static_path = ["_static"]
html_theme_options = {"description": "AdamW weight decay from its EMA timescale", "fixed_sidebar": True}
# mathjax is loaded from its CDN when the pages are viewed; the build itself needs no network.
