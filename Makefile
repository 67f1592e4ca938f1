# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Both create .venv and install the package with every extra the first time.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install docs clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# the CPU build of torch (a plain `torch` may pull a multi-GB CUDA build)
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e '.[cli,demo,optuna,test,docs]'
	# mup imports only torch and PyYAML; its declared requirements pull a torchvision that breaks CPU torch
	$(PY) -m pip install --no-deps 'mup>=1.0.0'
	# the optimizer families tests/test_optimizer_families.py checks (the `optimizers` extra), each verified to step
	# on CPU at these versions; --no-deps so that resolving them cannot replace the CPU torch (they need only
	# torch, numpy and packaging, installed above)
	$(PY) -m pip install --no-deps 'bitsandbytes==0.50.2' 'torchao==0.18.0' 'lion-pytorch==0.2.5'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/lightning-tau demo

test: $(STAMP)
	$(PY) -m pytest

docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) docs/_build lightning_logs tau_runs
