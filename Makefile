# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Both create .venv the first time: `make demo` installs what the demo needs (torch, the package, its `cli` and
# `demo` extras), `make test` everything (every extra, the test, docs and mutation tools).
PYTHON ?= python3
VENV ?= .venv
# Where torch comes from. Empty (the default): pip's configured index. With pip's defaults (PyPI) that is, on
# Linux x86_64, the CUDA build of torch with its nvidia-* wheels (several GB); on macOS and Windows the CPU build.
# For the CPU-only build anywhere (about 200 MB):
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
# CI's machines configure pip (pip.conf `find-links`) with a local CPU wheel, torch-2.13.0+cpu, which pip prefers to
# PyPI's 2.13.0 there, so the default gets the CPU build on them without network access to download.pytorch.org.
TORCH_INDEX ?=
PY := $(VENV)/bin/python
# Two stamps: the demo's install (torch, the package with its `cli` and `demo` extras: what `make demo` needs) and the
# full one (every extra, the test, docs and mutation tools, mup, the optimizer families: what `make test` needs).
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed

.PHONY: demo test install docs clean mutation

$(DEMO_STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# torch first, from TORCH_INDEX when given (see above), so that nothing below pulls another build
	$(PY) -m pip install $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
	$(PY) -m pip install -e '.[cli,demo]'
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(PY) -m pip install -e '.[cli,demo,optuna,test,docs,mutation]'
	# mup imports only torch and PyYAML; its declared requirements pull a torchvision that breaks CPU torch
	$(PY) -m pip install --no-deps 'mup>=1.0.0'
	# the optimizer families tests/test_optimizer_families.py checks (the `optimizers` extra), each verified to step
	# on CPU at these versions; --no-deps so that resolving them cannot replace the CPU torch (they need only
	# torch, numpy and packaging, installed above)
	$(PY) -m pip install --no-deps 'bitsandbytes==0.50.2' 'torchao==0.18.0' 'lion-pytorch==0.2.5'
	touch $(STAMP)

install: $(STAMP)

# the dataset-size demo on the synthetic teacher-student task (lightning_tau/demos/synthetic.py), sized so that its
# interval decides every published dataset-size rule; `lightning-tau demo` alone runs the digits task
demo: $(DEMO_STAMP)
	$(VENV)/bin/lightning-tau demo --task synthetic

test: $(STAMP)
	# the layering contract (pyproject.toml [tool.importlinter]): no upward import, no Lightning in the pure modules
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

# Mutation testing of the pure core ([tool.mutmut] in pyproject.toml; scores in benchmarks/README.md). Not part of
# `make test`: hours on a loaded 2-core machine (benchmarks/README.md has the timings of a 1-in-5 sample). Starts
# afresh (mutants/ removed), then prints the score per module.
# MUTATION_JOBS: mutants tested at once (1 leaves a shared machine usable; raise it on a machine of your own).
MUTATION_JOBS ?= 1
# MUTANTS: mutmut's name patterns to test only some mutants, e.g. a 1-in-5 sample of two modules:
#   make mutation MUTANTS='lightning_tau.tuner.analysis.scaling.*__mutmut_*[05] lightning_tau.tuner.analysis.axis_result.*__mutmut_*[05]'
MUTANTS ?=
mutation: $(STAMP)
	rm -rf mutants
	OMP_NUM_THREADS=1 nice -n 15 $(VENV)/bin/mutmut run --max-children $(MUTATION_JOBS) $(foreach m,$(MUTANTS),'$(m)')
	$(PY) benchmarks/mutation_scores.py

docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) docs/_build lightning_logs tau_runs mutants
