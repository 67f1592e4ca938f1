"""Helpers shared by several test modules: test modules import from here, never from each other.

- ``loggers``: the one in-memory Lightning logger.
- ``tb_events``: readers of real TensorBoard event files.
- ``runs``, ``mup_models``, ``optimizers``: the models, optimizers and callbacks several tests fit.
- ``finder_results``: the one builder of hand-made ``FinderResult`` objects (``finder_result``).
- ``finder_study``: the finder study's set-ups; ``demos`` and ``examples``: the oracles of the demos and examples.

A package of small modules rather than one file: the modules these came from each define their own ``LR`` (and
``TAU``, ``N``), which one namespace could not hold without renaming them in every test that reads them.
"""
