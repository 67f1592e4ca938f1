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
    # MathJax 3 copied into the build (_static/mathjax/), so the math renders with no network; it sets
    # `mathjax_path` to that copy. The package's module name has dashes: it is imported by that name.
    "sphinx-mathjax-offline",
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
# furo: a theme Lightning-ecosystem users know (torchmetrics-like layout); it uses the system's fonts and loads
# nothing from the network, so the built pages, math included, read the same offline.
html_theme = "furo"
html_title = f"lightning_tau {release}"
html_static_path = ["_static"]
