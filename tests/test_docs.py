"""The documentation builds with Sphinx under ``-W`` (warnings are errors) and its code snippets run."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_harness import clean_env

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts)

#: Seconds before a hung Sphinx build is killed (a full build takes well under a minute here).
BUILD_TIMEOUT = 300


@pytest.mark.slow
def test_build_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(out)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    assert proc.returncode == 0, f"sphinx-build failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert (out / "index.html").is_file()
    api = (out / "api.html").read_text(encoding="utf-8")
    # autodoc really ran: the callback, a formula and a docstring's prose are on the API page
    for text in ("TimescaleCallback", "weight_decay_for_tau_epoch", "reference learning rate"):
        assert text in api, f"{text!r} missing from api.html"
    for page in ("ema", "faq", "howto/callback", "howto/dashboards"):
        assert (out / f"{page}.html").is_file(), page
    for figure in ("dashboard_timescales.png", "dashboard_weight_rms.png", "lr_wd_modes.png"):
        assert (out / "_images" / figure).is_file(), f"{figure} not copied into the build"

    # offline: every script and stylesheet of a page with math is a file of the build, MathJax included
    ema = (out / "ema.html").read_text(encoding="utf-8")
    assert r"\tau_{iter}" in ema  # the math is in the page as TeX, for the bundled MathJax to typeset
    loaded = re.findall(r'<(?:script|link)[^>]*?(?:src|href)="([^"]+)"', ema)
    assert any(url.endswith("mathjax/tex-chtml.js") for url in loaded), loaded
    remote = [url for url in loaded if re.match(r"(https?:)?//", url)]
    assert not remote, f"ema.html loads from the network: {remote}"
    for url in loaded:
        assert (out / url.split("?")[0]).is_file(), f"{url} is not in the build"


def test_have_snippets_to_run() -> None:
    counts = {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8").count(">>> ") for p in PAGES}
    for page in ("index.rst", "ema.rst", "faq.rst", "howto/callback.rst", "howto/schedulers.rst", "howto/resuming.rst"):
        assert counts.get(page, 0) > 0, f"docs/{page} has no doctest snippet"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
@pytest.mark.slow
def test_snippets_run(page: Path) -> None:
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        report=True,
        verbose=False,
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} snippets in {page.name} failed (see above)"
