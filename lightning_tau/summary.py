"""Everything ``TimescaleCallback`` says, as pure text builders taking plain values (no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lightning_tau import timescale
from lightning_tau._table import table_lines
from lightning_tau.couplings import Plan
from lightning_tau.decide import NO_MUP, GroupInput, GroupTimescale, RunShape, model_width_mult, uses_mup
from lightning_tau._numbers import exponent
from lightning_tau.target import WidthExponent, batch_scaling_text, size_scaling_text
from lightning_tau.width import FixedLambdaPitfall, GroupRate, find_fixed_lambda_pitfall, format_fixed_lambda_pitfall

__all__ = [
    "GroupTimescale",
    "Window",
    "describe_target",
    "fixed_lambda_warning",
    "format_summary",
    "manual_note",
    "plan_lines",
    "resume_warning",
    "short_run_warning",
    "size_note",
    "start_summary",
    "start_warnings",
    "two_callbacks_message",
    "vectors_warning",
    "width_exponent_unused_warning",
    "width_note",
    "windows_lines",
]

#: 1-D parameters named per group in :func:`vectors_warning`.
LISTED = 6


def format_summary(
    groups: Sequence[GroupTimescale],
    *,
    tau_iter: float,
    tau_epoch: float | None,
    shape: RunShape,
    planned_steps: float | None,
    notes: Sequence[str] = (),
    optimizer_steps_per_epoch: Mapping[int, float] | None = None,
) -> str:
    """Render the pre-flight summary as a fixed-width table.

    A group's ``tau_epoch`` is its ``tau_iter`` over its optimizer's steps per epoch: ``optimizer_steps_per_epoch``
    where an optimizer takes its own number (manual optimization), else the run's ``M``.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 1000, 1e-3, 0.01, 2.0, True, planned_timescales=1.0)
        >>> shape = RunShape(100, 1000, 10, sources=("M = 100 optimizer steps per epoch: 100 batches per rank.",))
        >>> print(format_summary([g], tau_iter=500.0, tau_epoch=5.0, shape=shape,
        ...                      planned_steps=500))  # doctest: +NORMALIZE_WHITESPACE
        TimescaleCallback: tau_epoch=5 (tau_iter=500 steps), M=100 steps/epoch, N=1,000, B=10
          | Group | Params | Width mult | Ref lr | Weight decay    | tau_iter | tau_epoch | Timescales planned
        ---------------------------------------------------------------------------------------------------
        0 | pg1   | 1.0 K  | -          | 0.001  | 0.01 -> 2       | 500      | 5         | 1
        Planned: 500 optimizer steps.
        M = 100 optimizer steps per epoch: 100 batches per rank.
    """
    head = f"TimescaleCallback: tau_epoch={_num(tau_epoch)} (tau_iter={_num(tau_iter)} steps)"
    steps_per_epoch = shape.steps_per_epoch
    if steps_per_epoch is not None:
        head += f", M={_num(steps_per_epoch)} steps/epoch"
    if shape.dataset_size is not None:
        head += f", N={shape.dataset_size:,.0f}"
    if shape.global_batch_size is not None:
        head += f", B={shape.global_batch_size:,.0f}"
    columns = ["", "Group", "Params", "Width mult", "Ref lr", "Weight decay", "tau_iter", "tau_epoch"]
    columns.append("Timescales planned")
    rows = []
    own_m = optimizer_steps_per_epoch or {}
    for i, g in enumerate(groups):
        if g.managed:
            wd = f"{_num(g.weight_decay_before)} -> {_num(g.weight_decay)}"
            g_tau_iter = _num(timescale.tau_iter(g.reference_lr, g.weight_decay))
            m = own_m.get(g.optimizer_index, steps_per_epoch)
            g_tau_epoch = _num(timescale.tau_iter(g.reference_lr, g.weight_decay) / m) if m else "-"
        else:
            wd, g_tau_iter, g_tau_epoch = f"{_num(g.weight_decay)} (not managed)", "-", "-"
        rows.append(
            [
                str(i),
                g.name,
                _count(g.num_params),
                _num(g.width_mult),
                _num(g.reference_lr),
                wd,
                g_tau_iter,
                g_tau_epoch,
                _num(g.planned_timescales) if g.managed else "-",
            ]
        )
    out = [head, *table_lines(columns, rows)]
    if planned_steps is not None:
        out.append(f"Planned: {_num(planned_steps)} optimizer steps.")
    out.extend(shape.sources)
    out.extend(notes)
    return "\n".join(out)


def start_summary(
    groups: Sequence[GroupTimescale],
    *,
    tau_iter: float,
    tau_epoch: float | None,
    shape: RunShape,
    planned_steps: float | None,
    optimizer_steps_per_epoch: Mapping[int, float],
    note: str | None,
    width_exponent: WidthExponent,
    manual_tau_epoch: float | None,
    size_scaling: str | None = None,
    coupling: str = "constant",
    plans: Mapping[str, Plan] | None = None,
    windows: Sequence[Window] = (),
    sample_unit: str = "samples or tokens",
    batch_scaling: str | None = None,
) -> str:
    """The summary ``TimescaleCallback`` prints at train start: :func:`format_summary` with its notes, in order
    how a dataset-size exponent moved ``tau_epoch`` (``size_scaling``, :func:`size_note`), how a batch-size exponent
    moved it then (``batch_scaling``, :func:`batch_note`), the decision's ``note``
    (how the power law picked the timescale), :func:`width_note` and, in manual optimization under a ``tau_epoch``
    target (``manual_tau_epoch``, else ``None``), :func:`manual_note`. ``tau_epoch`` is the one held. Then the plan
    of each group under ``coupling`` (``plans`` by group name, :func:`plan_lines`) and every EMA window of the run
    (``windows``, :func:`windows_lines`), where given.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 1000, 1e-3, 0.01, 2.0, True, planned_timescales=1.0)
        >>> text = start_summary([g], tau_iter=500.0, tau_epoch=5.0, shape=RunShape(100), planned_steps=500,
        ...                      optimizer_steps_per_epoch={}, note="A note.", width_exponent=1.0, manual_tau_epoch=5.0)
        >>> [line.split(":")[0] for line in text.splitlines()[-2:]]
        ['A note.', 'Manual optimization']
    """
    manual = manual_note(
        manual=manual_tau_epoch is not None,
        tau_epoch=manual_tau_epoch,
        steps_per_epoch=shape.steps_per_epoch,
        optimizer_steps_per_epoch=optimizer_steps_per_epoch,
    )
    table = format_summary(
        groups,
        tau_iter=tau_iter,
        tau_epoch=tau_epoch,
        shape=shape,
        planned_steps=planned_steps,
        notes=[n for n in (size_scaling, batch_scaling, note, width_note(width_exponent, groups), manual) if n],
        optimizer_steps_per_epoch=optimizer_steps_per_epoch,
    )
    extra = plan_lines(coupling, plans) if plans else []
    if windows:
        extra += windows_lines(
            windows, steps_per_epoch=shape.steps_per_epoch, global_batch_size=shape.global_batch_size, unit=sample_unit
        )
    return "\n".join([table, *extra])


def plan_lines(coupling: str, plans: Mapping[str, Plan]) -> list[str]:
    """The plan table: per group (by name), ``tau_iter`` at the start, middle and end of the run under ``coupling``
    and its schedule, the timescales covered, the initialization's weight left at the end and the window.

    Example:
        >>> from lightning_tau.couplings import plan
        >>> p = plan("lr_ratio", [1e-3] * 200 + [5e-4] * 200, lr_ref=1e-3, tau_iter=100.0, steps_per_epoch=100)
        >>> print("\\n".join(plan_lines("lr_ratio", {"pg1": p})))  # doctest: +NORMALIZE_WHITESPACE
        Plan under coupling='lr_ratio' and the run's lr schedule (tau_iter held at each group's ref lr):
          Group | tau_iter start | tau_iter middle | tau_iter end | Timescales | Init weight left | Window (epochs)
          ---------------------------------------------------------------------------------------------------------
          pg1   | 100            | 400             | 400          | 2.5        | 0.081            | 1.62
        Window: the mean age of the updates the final weights hold (docs: couplings).
    """
    rows = [
        [
            name,
            _num(p.tau_start),
            _num(p.tau_middle),
            _num(p.tau_end),
            _num(p.timescales),
            f"{p.init_memory:.2g}",
            f"{p.window_epochs:.3g}",
        ]
        for name, p in plans.items()
    ]
    columns = [
        "Group",
        "tau_iter start",
        "tau_iter middle",
        "tau_iter end",
        "Timescales",
        "Init weight left",
        "Window (epochs)",
    ]
    return [
        f"Plan under coupling={coupling!r} and the run's lr schedule (tau_iter held at each group's ref lr):",
        *table_lines(columns, rows, indent="  "),
        "Window: the mean age of the updates the final weights hold (docs: couplings).",
    ]


@dataclass(frozen=True)
class Window:
    """One EMA timescale of the run, in optimizer steps, for :func:`windows_lines`.

    Attributes:
        what: what averages (``"AdamW tau (pg1)"``, ``"Adam beta2 (pg1)"``, ``"model EMA (EMAWeightAveraging)"``).
        steps: its window in optimizer steps (``tau_iter``; ``1 / (1 - beta)``).
        source: where the number comes from (``"betas[1]=0.999"``), or ``""``.
    """

    what: str
    steps: float
    source: str = ""


def windows_lines(
    windows: Sequence[Window],
    *,
    steps_per_epoch: float | None,
    global_batch_size: float | None,
    unit: str = "samples or tokens",
) -> list[str]:
    """Every EMA timescale of the run in one table: steps, epochs (over ``M``) and ``unit`` (steps x ``B``).

    Example:
        >>> ws = [Window("AdamW tau (pg1)", 500.0), Window("Adam beta2 (pg1)", 1000.0, "betas[1]=0.999")]
        >>> print("\\n".join(windows_lines(ws, steps_per_epoch=100, global_batch_size=64)))
        Every EMA timescale of the run:
          Timescale        | Steps | Epochs | Samples or tokens | From
          ------------------------------------------------------------
          AdamW tau (pg1)  | 500   | 5      | 32,000            |
          Adam beta2 (pg1) | 1000  | 10     | 64,000            | betas[1]=0.999
    """
    rows = [
        [
            w.what,
            _num(w.steps),
            _num(w.steps / steps_per_epoch) if steps_per_epoch else "-",
            f"{w.steps * global_batch_size:,.0f}" if global_batch_size else "-",
            w.source,
        ]
        for w in windows
    ]
    columns = ["Timescale", "Steps", "Epochs", unit[:1].upper() + unit[1:], "From"]
    return ["Every EMA timescale of the run:", *table_lines(columns, rows, indent="  ")]


def size_note(
    tau_epoch: float | None, dataset_size: float | None, *, size_exponent: float, reference_dataset_size: float | None
) -> str | None:
    """The summary line for a dataset-size exponent: the ``tau_epoch`` held at this ``N`` and how it came (``None``
    at exponent 0, or for a target in steps).

    Example:
        >>> size_note(8.0, 50_000, size_exponent=-0.5, reference_dataset_size=12_500)
        'Held at this N: tau_epoch 8 x (50000/12500)^-0.5 = 4 (size_exponent=-0.5: tau_epoch ∝ N^-0.5 from \
reference_dataset_size=12500).'
        >>> size_note(5.13842, 1347, size_exponent=-0.000760685, reference_dataset_size=1347)
        'Held at this N: tau_epoch 5.138 x (1347/1347)^0 = 5.138 (size_exponent=0: tau_epoch ∝ N^0 from \
reference_dataset_size=1347).'
    """
    if tau_epoch is None:
        return None
    text = size_scaling_text(
        tau_epoch, dataset_size, size_exponent=size_exponent, reference_dataset_size=reference_dataset_size
    )
    if text is None:
        return None
    shown = exponent(size_exponent, sign=False)  # the spelling of the finder's table (lightning_tau._numbers)
    return (
        f"Held at this N: {text} (size_exponent={shown}: tau_epoch ∝ N^{shown} from"
        f" reference_dataset_size={reference_dataset_size:.10g})."
    )


def batch_note(
    tau_epoch: float | None, batch_size: float | None, *, batch_exponent: float, reference_batch_size: float | None
) -> str | None:
    """The summary line for a batch-size exponent: the ``tau_epoch`` held at this global ``B`` and how it came from
    ``tau_epoch`` (the one held at this ``N``, after any size rule); ``None`` at exponent 0, or for a target in steps.

    Example:
        >>> batch_note(8.0, 256, batch_exponent=1.0, reference_batch_size=128)
        'Held at this B: tau_epoch 8 x (256/128)^1 = 16 (batch_exponent=1: tau_epoch ∝ B^1 from \
reference_batch_size=128).'
    """
    if tau_epoch is None:
        return None
    text = batch_scaling_text(
        tau_epoch, batch_size, batch_exponent=batch_exponent, reference_batch_size=reference_batch_size
    )
    if text is None:
        return None
    shown = exponent(batch_exponent, sign=False)  # the spelling of the finder's table (lightning_tau._numbers)
    return (
        f"Held at this B: {text} (batch_exponent={shown}: tau_epoch ∝ B^{shown} from"
        f" reference_batch_size={reference_batch_size:.10g})."
    )


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}"


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return str(n)


def start_warnings(
    groups: Sequence[GroupTimescale],
    inputs: Sequence[GroupInput],
    *,
    resume: Sequence[str],
    width_exponent: WidthExponent,
    param_groups: Sequence[Sequence[Mapping[str, Any]]] | None,
    names: Mapping[int, str],
) -> tuple[list[FixedLambdaPitfall], list[str]]:
    """The warnings before training, in the order they are given, and the fixed-λ muP groups found.

    A changed shape on resume (``resume``: ``changes.resume_changes``), a width exponent with no muP multiplier to
    act on, fixed-λ muP groups, decaying 1-D parameters (not checked with ``param_groups=None``: the user said
    ``decay_vectors=True``), a run shorter than one timescale (``groups``' ``planned_timescales``).

    Args:
        groups: the decision per param group, planned.
        inputs: every param group as the decision saw it.
        resume: what changed since the checkpoint.
        width_exponent: the callback's ``width_exponent``.
        param_groups: each optimizer's ``param_groups`` (for the 1-D parameters), or ``None``.
        names: ``id(parameter) -> name``.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 2.0, True, planned_timescales=3.0)
        >>> start_warnings([g], [], resume=[], width_exponent=1.0, param_groups=None, names={})
        ([], [])
    """
    warnings = [resume_warning(resume)] if resume else []
    if (
        width_exponent not in (1.0, {})
        and not uses_mup(inputs)
        and any(g.managed and g.width_problem == NO_MUP for g in inputs)
    ):
        warnings.append(width_exponent_unused_warning(width_exponent))
    pitfalls, pitfall = fixed_lambda_warning(groups)
    vectors = None if param_groups is None else vectors_warning(groups, param_groups, names)
    short = short_run_warning(groups)
    return pitfalls, warnings + [w for w in (pitfall, vectors, short) if w is not None]


def describe_target(tau_epoch: float | None, tau_iter: float | None, token_budget: float | None) -> str:
    """The target a callback was given, as ``name=value`` (``"?"`` for none).

    Example:
        >>> describe_target(5.0, None, None), describe_target(None, 300.0, None), describe_target(None, None, None)
        ('tau_epoch=5', 'tau_iter=300', '?')
        >>> describe_target(None, None, 2e9)
        'token_budget=2e+09'
    """
    for name, value in (("tau_epoch", tau_epoch), ("tau_iter", tau_iter), ("token_budget", token_budget)):
        if value is not None:
            return f"{name}={value:g}"
    return "?"


def two_callbacks_message(described: Sequence[str]) -> str:
    """The error for a Trainer holding several callbacks, each described by :func:`describe_target`.

    Example:
        >>> two_callbacks_message(["tau_epoch=5", "tau_iter=300"])[:68]
        'This Trainer has 2 `TimescaleCallback`s (tau_epoch=5, tau_iter=300).'
    """
    return (
        f"This Trainer has {len(described)} `TimescaleCallback`s ("
        + ", ".join(described)
        + "). Each rewrites the same param groups' weight decay, so the last one would silently win. Keep"
        " one (a `TimescaleMonitor` next to it is fine, for diagnostics alone)."
    )


def short_run_warning(groups: Sequence[GroupTimescale]) -> str | None:
    """The warning for decaying groups whose planned run covers less than one EMA timescale (``None``: none does).

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 2.0, True, planned_timescales=0.5)
        >>> short_run_warning([g])[:67]
        '`TimescaleCallback`: the run covers less than one EMA timescale for'
        >>> short_run_warning([GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 2.0, True, planned_timescales=1.0)])
    """
    short = [g for g in groups if g.managed and g.planned_timescales is not None and g.planned_timescales < 1]
    if not short:
        return None
    return (
        "`TimescaleCallback`: the run covers less than one EMA timescale for "
        + ", ".join(f"{g.name} ({g.planned_timescales:.2f})" for g in short)
        + ", so weight decay barely acts and the weights mostly remember their initialization. Train"
        " longer or use a smaller `tau_epoch`."
    )


def width_note(width_exponent: WidthExponent, groups: Sequence[GroupTimescale]) -> str | None:
    """A summary line for a width exponent other than 1: the model's width multiplier ``S`` and each decaying group
    it moved, with its ``alpha`` and the factor ``S^(1 - alpha)`` on its timescale (the table's tau_iter column shows
    each group's).

    Example:
        >>> g = GroupTimescale("hidden", 0, 0, 10, 1e-3, 0.1, 2.0, True, width_mult=4.0, width_exponent=0.5)
        >>> e = GroupTimescale("embed", 0, 1, 10, 4e-3, 0.1, 0.5, True, width_mult=1.0, width_exponent=0.5)
        >>> print(width_note(0.5, [g, e]))  # doctest: +NORMALIZE_WHITESPACE
        width_exponent=0.5 at the model's width multiplier S=4 (the largest muP multiplier of its groups): each
        decaying group holds tau_iter x S^(1 - alpha), so weight decay ∝ S^alpha for a hidden group (lr / S):
        hidden (s=4, alpha=0.5: x2), embed (s=1, alpha=0.5: x2).
        >>> width_note(1.0, [g]) is None, width_note({}, [g]) is None
        (True, True)
    """
    if width_exponent == 1.0 or not width_exponent:
        return None
    rule = (
        f"width_exponent={exponent(width_exponent, sign=False)}"
        if isinstance(width_exponent, float)
        else f"width_exponent={width_exponent!r}"
    )
    model_s = model_width_mult(groups)
    if model_s == 1.0:
        return f"{rule}: no param group has a width multiplier other than 1 (S = 1), so it changes nothing."
    moved = [g for g in groups if g.managed and g.width_exponent != 1.0]
    if not moved:
        return f"{rule}: every decaying group keeps exponent 1, so it changes nothing."
    parts = []
    for g in moved:
        factor = model_s ** (1.0 - g.width_exponent)
        alpha = exponent(g.width_exponent, sign=False)
        parts.append(f"{g.name} (s={g.width_mult or 1.0:g}, alpha={alpha}: x{factor:.4g})")
    return (
        f"{rule} at the model's width multiplier S={model_s:g} (the largest muP multiplier of its groups): each"
        " decaying group holds tau_iter x S^(1 - alpha), so weight decay ∝ S^alpha for a hidden group (lr / S): "
        + ", ".join(parts)
        + "."
    )


def manual_note(
    *,
    manual: bool,
    tau_epoch: float | None,
    steps_per_epoch: float | None,
    optimizer_steps_per_epoch: Mapping[int, float],
) -> str | None:
    """Manual optimization under a ``tau_epoch`` target: what ``M`` each optimizer is assumed to take until its
    steps are counted (``None`` otherwise, or before the run's shape is known: ``steps_per_epoch`` unknown is ``?``).

    Example:
        >>> manual_note(manual=True, tau_epoch=5.0, steps_per_epoch=100, optimizer_steps_per_epoch={1: 50})[80:160]
        'optimizer 1: M=50 as declared, the others assumed to step once per batch (M=100)'
        >>> manual_note(manual=False, tau_epoch=5.0, steps_per_epoch=100, optimizer_steps_per_epoch={}) is None
        True
    """
    if not manual or tau_epoch is None:
        return None
    declared = ", ".join(f"optimizer {i}: M={v:g}" for i, v in sorted(optimizer_steps_per_epoch.items()))
    return (
        "Manual optimization: tau_epoch is held in each optimizer's own steps per epoch; "
        + (f"{declared} as declared, the others " if declared else "each optimizer ")
        + f"assumed to step once per batch (M={_fmt(steps_per_epoch)}) until an epoch's steps are counted (warned and"
        " re-decided at the next epoch if they differ)."
    )


def vectors_warning(
    groups: Sequence[GroupTimescale], param_groups: Sequence[Sequence[Mapping[str, Any]]], names: Mapping[int, str]
) -> str | None:
    """The warning for decaying param groups that hold 1-D parameters (biases, norm weights); ``None``: none do.

    Args:
        groups: the decision per param group.
        param_groups: each optimizer's ``param_groups``, by optimizer index.
        names: ``id(parameter) -> name`` (the module's ``named_parameters``); unnamed ones are shown by shape.

    Example:
        >>> import torch
        >>> bias = torch.zeros(3)
        >>> g = GroupTimescale("pg1", 0, 0, 3, 1e-3, 0.1, 2.0, True)
        >>> vectors_warning([g], [[{"params": [bias]}]], {id(bias): "net.bias"})[:100]
        '`TimescaleCallback`: these decaying param groups hold 1-D parameters (biases, norm weights), which g'
        >>> vectors_warning([g], [[{"params": [torch.zeros(2, 2)]}]], {}) is None
        True
    """
    parts = []
    for g in groups:
        if not g.managed:
            continue
        group = param_groups[g.optimizer_index][g.group_index]
        vectors = [p for p in group["params"] if p.ndim <= 1]
        if vectors:
            shown = [names.get(id(p), f"<{tuple(p.shape)} tensor>") for p in vectors[:LISTED]]
            more = f" and {len(vectors) - LISTED} more" if len(vectors) > LISTED else ""
            parts.append(
                f"{g.name!r} ({len(vectors)} of {len(group['params'])}: {', '.join(shown)}{more}; weight decay"
                f" {g.weight_decay:.4g})"
            )
    if not parts:
        return None
    return (
        "`TimescaleCallback`: these decaying param groups hold 1-D parameters (biases, norm weights), which"
        " get the same weight decay as the matrices and are pulled toward zero: "
        + "; ".join(parts)
        + ". Usually they should not decay: give them a group with `weight_decay=0`, e.g."
        " `torch.optim.AdamW(lightning_tau.build_param_groups(model, weight_decay=0.1), lr=...)` (biases and"
        " norms in `no_decay`). If you mean to decay them, pass `TimescaleCallback(decay_vectors=True)`."
    )


def fixed_lambda_warning(groups: Sequence[GroupTimescale]) -> tuple[list[FixedLambdaPitfall], str | None]:
    """Fixed-λ muP groups (``configure_optimizers`` kept λ fixed across widths) and the warning naming them.

    A group with a width exponent other than 1 follows the rule the user chose, not the one the pitfall checks.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 2.0, True)
        >>> fixed_lambda_warning([g])
        ([], None)
    """
    rates = [GroupRate(g.name, g.reference_lr, g.weight_decay_before, g.width_mult) for g in groups]
    pitfalls = find_fixed_lambda_pitfall([r for r, g in zip(rates, groups) if g.managed and g.width_exponent == 1.0])
    if not pitfalls:
        return pitfalls, None
    written = {g.name: g.weight_decay for g in groups}
    return pitfalls, format_fixed_lambda_pitfall(pitfalls, written=[written[p.name] for p in pitfalls])


def width_exponent_unused_warning(width_exponent: WidthExponent) -> str:
    """The warning for a width exponent set on a run without muP width multipliers.

    Example:
        >>> width_exponent_unused_warning(0.5)[:60]
        '`TimescaleCallback(width_exponent=0.5)` has no effect: no pa'
    """
    return (
        f"`TimescaleCallback(width_exponent={width_exponent!r})` has no effect: no param group has a"
        " muP width multiplier other than 1 (no `width_mult` key, no mup `infshape`), so every group"
        " keeps the timescale. Leave width_exponent out, or call `mup.set_base_shapes` on a μP model."
    )


def resume_warning(changes: Sequence[str]) -> str:
    """The warning for a resumed run whose shape changed since the checkpoint (``changes.resume_changes``).

    Example:
        >>> resume_warning(["world_size 1 -> 2"])
        '`TimescaleCallback` resumed a run whose shape changed since the checkpoint: world_size 1 -> 2. Weight \
decay is recomputed for the new values.'
    """
    return (
        "`TimescaleCallback` resumed a run whose shape changed since the checkpoint: "
        + ", ".join(changes)
        + ". Weight decay is recomputed for the new values."
    )


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
