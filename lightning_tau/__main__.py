"""``python -m lightning_tau`` runs the ``lightning-tau`` command."""

from lightning_tau.cli import main

raise SystemExit(main())
