"""A litgpt-style Fabric loop: ``apply_timescale`` sets AdamW's weight decay, ``timescale_metrics`` logs it.

No Trainer and no callback: the loop is written out (Fabric, ``torch.optim.AdamW`` with decay / no-decay groups,
linear warm-up then cosine to 10% with ``LambdaLR``, gradient accumulation, clipping), and the timescale is set
by one call after the scheduler is built, so each group's ``initial_lr`` (the peak) is the reference::

    applied = apply_timescale(optimizer, tau_epoch=0.4, dataset_size=N, batch_size=B)

``N`` and ``B`` are in tokens: ``N`` = training tokens per epoch, ``B`` = tokens per *optimizer* step over all
processes (``batch_size x block_size x devices x accumulation``), so ``M = N / B`` is the optimizer steps per epoch
and ``weight_decay = B / (lr_peak * N * tau_epoch)``. With ``--mode per_step`` a step pre-hook rewrites the decay
before every step so ``lr_t * weight_decay_t = 1 / tau_iter`` all along the schedule.

Every ``--log-every`` steps the loop logs ``timescale_metrics(...)`` (the keys ``TimescaleMonitor`` logs in a
Trainer: ``timescale/tau_iter/decay``, ``timescale/weight_rms/decay``, ...) with ``fabric.log_dict`` to a
TensorBoard logger under ``--out-dir``. The data and transformer block are the package's text task
(:mod:`lightning_tau.demos.text`, also behind ``char_gpt.py``): the standard library's own ``.py`` files as bytes
(nothing is downloaded) and a small GPT.

Run::

    python examples/fabric_gpt.py                                      # 1 process, a few minutes on a CPU
    python examples/fabric_gpt.py --fast --devices 2 --strategy ddp --accelerator cpu   # 2 processes (gloo)
    python examples/fabric_gpt.py --mode per_step --tau-epoch 0.25
    tensorboard --logdir fabric_logs

Fabric's ``ddp`` launcher (``fabric.launch()``) re-runs this script once per extra process, so the loop lives in
``main()`` under ``if __name__ == "__main__"``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.loggers import TensorBoardLogger
from process_group import end_process_group  # how the multi-process examples end
from torch import nn

from lightning_tau import apply_timescale, build_param_groups, weight_decay_for_tau_epoch
from lightning_tau.demos.text import Block, TextDataModule  # the text task's transformer block and stdlib-text data
from lightning_tau.diagnostics import TimescaleTracker, WeightStatsPass, timescale_metrics


class GPT(nn.Module):
    """A GPT over bytes (vocabulary 256): embeddings, pre-LayerNorm blocks, a linear head."""

    def __init__(self, block_size: int, n_layer: int, n_head: int, n_embd: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(256, n_embd)
        self.pos = nn.Parameter(torch.zeros(block_size, n_embd))
        self.blocks = nn.Sequential(*(Block(n_embd, n_head) for _ in range(n_layer)))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, 256, bias=False)

    def no_weight_decay(self) -> list[str]:
        """timm's convention, read by ``build_param_groups``: the position embedding does not decay."""
        return ["pos"]

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        return self.head(self.ln_f(self.blocks(x)))


def warmup_cosine(warmup_steps: int, total_steps: int, floor: float = 0.1) -> Any:
    """``LambdaLR`` factor: linear from ``1 / warmup_steps`` to 1, then a cosine down to ``floor``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def forever(loader: Any) -> Iterator[Any]:
    """Batches without end; Fabric's loader sets the ``DistributedSampler``'s epoch on each pass."""
    while True:
        yield from loader


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--accelerator", default="auto", help="cpu, gpu, auto")
    parser.add_argument("--strategy", default="auto", help="auto, ddp, ...")
    parser.add_argument("--tau-epoch", type=float, default=0.4, help="target EMA timescale in epochs")
    parser.add_argument("--mode", choices=("constant", "per_step"), default="constant")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--warmup-fraction", type=float, default=0.1)
    parser.add_argument("--max-steps", type=int, default=400, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per device per micro-batch")
    parser.add_argument("--accumulate", type=int, default=2, help="micro-batches per optimizer step")
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=1_000_000, help="bytes of stdlib source to read")
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--log-every", type=int, default=10, help="optimizer steps between logged metrics")
    parser.add_argument("--out-dir", default="fabric_logs", help="TensorBoard logs go under this folder")
    parser.add_argument("--dump", default=None, help="write rank{r}.json here: what was written and each step used")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fast", action="store_true", help="tiny run for tests: 40K tokens, 30 steps, width 32")
    args = parser.parse_args(argv)
    if args.fast:
        args.max_tokens, args.block_size, args.batch_size, args.n_embd = 40_000, 32, 8, 32
        args.max_steps, args.log_every = 30, 5
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    fabric = L.Fabric(
        accelerator=args.accelerator,
        devices=args.devices,
        strategy=args.strategy,
        loggers=TensorBoardLogger(root_dir=args.out_dir, name="fabric_gpt"),
    )
    fabric.launch()  # with strategy="ddp", re-runs this script for the other ranks; each continues from here
    fabric.seed_everything(args.seed)

    data = TextDataModule(block_size=args.block_size, batch_size=args.batch_size, max_tokens=args.max_tokens)
    data.setup("fit")
    # shuffled whole batches; setup_dataloaders adds a DistributedSampler: each rank reads 1 / world_size of an epoch
    loader = fabric.setup_dataloaders(data.train_dataloader())
    gpt = GPT(args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = fabric.setup(gpt)
    optimizer = torch.optim.AdamW(
        build_param_groups(gpt, weight_decay=0.1, lr=args.lr),  # "decay" (matrices) and "no_decay"; 0.1 is replaced
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    optimizer = fabric.setup_optimizers(optimizer)
    warmup = max(1, int(args.warmup_fraction * args.max_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(warmup, args.max_steps))

    # N and B in tokens; B is global: per device x devices x accumulation (one optimizer step's tokens)
    dataset_size = data.dataset_size
    batch_size = args.batch_size * args.block_size * fabric.world_size * args.accumulate
    # after the scheduler: every group's `initial_lr` (the peak) is the reference lr
    applied = apply_timescale(
        optimizer, tau_epoch=args.tau_epoch, dataset_size=dataset_size, batch_size=batch_size, mode=args.mode
    )
    tracker = TimescaleTracker(optimizer)  # init memory and timescales elapsed, folded every step
    used: list[dict[str, list[float]]] = []  # the (lr, weight_decay) each optimizer step really used, per group
    optimizer.register_step_post_hook(
        lambda opt, a, k: used.append({g["name"]: [float(g["lr"]), float(g["weight_decay"])] for g in opt.param_groups})
    )
    report(fabric, args, applied, dataset_size, batch_size)

    stats_pass = WeightStatsPass()
    batches = forever(loader)
    losses: list[float] = []
    model.train()
    for step in range(1, args.max_steps + 1):
        step_loss = 0.0
        for micro in range(args.accumulate):
            x, y = next(batches)
            with fabric.no_backward_sync(model, enabled=micro < args.accumulate - 1):  # sync on the last only
                loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
                fabric.backward(loss / args.accumulate)
            step_loss += loss.item() / args.accumulate
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()  # a per_step pre-hook, if any, writes weight_decay = 1 / (lr_t * tau_iter) first
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        losses.append(step_loss)
        if step % args.log_every == 0 and fabric.is_global_zero:  # replicated weights: rank zero's are everyone's
            metrics = timescale_metrics(
                optimizer,
                steps_per_epoch=applied.shape.steps_per_epoch,
                tau_iter_target=applied.tau_iter,
                tau_epoch_target=args.tau_epoch,
                tracker=tracker,
                stats_pass=stats_pass,
            )
            fabric.log_dict({"train_loss": step_loss, **metrics}, step=step)

    k = max(1, min(5, len(losses) // 4))
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    fabric.print(f"train_loss: first {k} steps {first:.4f} -> last {k} steps {last:.4f} over {len(losses)} steps")
    for name, elapsed in tracker.timescales_elapsed.items():
        if elapsed > 0:
            memory = tracker.init_memory[name]
            fabric.print(f"{name}: {elapsed:.3g} timescales elapsed, init memory {memory:.3g}")
    logger = fabric.logger
    logger.finalize("success")
    fabric.print(f"logged to {logger.log_dir}  (tensorboard --logdir {args.out_dir})")
    if args.dump:
        dump(fabric, args, applied, dataset_size, batch_size, used, losses, logger.log_dir)
    end_process_group()  # with 2 processes: both wait here, then end (examples/process_group.py says why)


def report(fabric: L.Fabric, args: argparse.Namespace, applied: Any, dataset_size: int, batch_size: int) -> None:
    """What ``apply_timescale`` wrote, next to the closed form, on rank zero; one line from every rank."""
    written = ", ".join(f"{g.name}={g.weight_decay:.6g}" for g in applied.groups if g.decays)
    # one write per line, so the processes' lines do not interleave mid-line
    sys.stdout.write(f"rank {fabric.global_rank}/{fabric.world_size}: weight_decay written: {written}\n")
    sys.stdout.flush()
    fabric.print(
        f"N = {dataset_size:,} tokens per epoch; B = {args.batch_size} x {args.block_size} tokens x"
        f" {fabric.world_size} device(s) x {args.accumulate} accumulation = {batch_size:,} tokens per step;"
        f" M = N / B = {applied.shape.steps_per_epoch:.4g} steps per epoch"
    )
    fabric.print(f"tau_epoch = {args.tau_epoch:g} -> tau_iter = {applied.tau_iter:.4g} steps (mode={args.mode})")
    fabric.print(f"{'group':>10} {'lr_ref':>9} {'written':>11} {'B/(lr*N*tau_epoch)':>19}")
    for g in applied.groups:
        closed = weight_decay_for_tau_epoch(g.reference_lr, args.tau_epoch, dataset_size, batch_size) if g.decays else 0
        fabric.print(f"{g.name:>10} {g.reference_lr:>9.3g} {g.weight_decay:>11.6g} {closed:>19.6g}")
    if args.mode == "per_step":
        fabric.print(f"per_step: every step writes weight_decay = 1 / (lr_t * {applied.tau_iter:.4g})")


def dump(
    fabric: L.Fabric,
    args: argparse.Namespace,
    applied: Any,
    dataset_size: int,
    batch_size: int,
    used: list[dict[str, list[float]]],
    losses: list[float],
    log_dir: str | None,
) -> None:
    """``{dump}/rank{r}.json``: the run's shape, what was written per group, and what every step used."""
    out = Path(args.dump)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "rank": fabric.global_rank,
        "world_size": fabric.world_size,
        "mode": args.mode,
        "tau_epoch": args.tau_epoch,
        "tau_iter": applied.tau_iter,
        "dataset_size": dataset_size,
        "batch_size": batch_size,
        "reference_lr": {g.name: g.reference_lr for g in applied.groups},
        "written": applied.weight_decay,
        "decays": [g.name for g in applied.groups if g.decays],
        "used": used,
        "losses": losses,
        "log_dir": log_dir if fabric.is_global_zero else None,
    }
    (out / f"rank{fabric.global_rank}.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
