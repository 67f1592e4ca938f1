"""Two-process DDP: ``B`` is the *global* batch, and every rank writes the same weight decay.

Under DDP each process draws ``batch_size`` samples per step, so one optimizer step sees
``B = batch_size x devices x accumulate_grad_batches`` samples and an epoch has ``N / B`` steps.
``TimescaleCallback`` reads ``B`` that way (``trainer.world_size``, ``trainer.accumulate_grad_batches``), and
``N`` from the dataset, so ``tau_epoch`` means the same thing on one device or many.

Run::

    python examples/ddp.py                         # 2 CPU processes (gloo), or 2 GPUs if there are two
    python examples/ddp.py --fast                  # tiny, for tests
    python examples/ddp.py --devices 4 --accumulate-grad-batches 2

Lightning's ``ddp`` strategy re-runs this script once per extra process, so the fit lives in ``main()`` under
``if __name__ == "__main__"`` and nothing at import time trains.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import lightning.pytorch as pl
import torch
from process_group import end_process_group  # how the multi-process examples end
from quickstart import MLP, make_data  # the sibling example's model and synthetic task
from torch.utils.data import DataLoader

from lightning_tau import TimescaleCallback, weight_decay_for_tau_epoch


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument(
        "--accelerator", default=None, help="default: 'gpu' when there are enough GPUs for --devices, else 'cpu'"
    )
    parser.add_argument("--dataset-size", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=64, help="per-device batch size")
    parser.add_argument("--accumulate-grad-batches", type=int, default=1)
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--tau-epoch", type=float, default=4.0)
    parser.add_argument("--fast", action="store_true", help="tiny run for tests: N=512, 2 epochs")
    args = parser.parse_args(argv)
    if args.fast:
        args.dataset_size, args.max_epochs = 512, 2
    accelerator = args.accelerator or ("gpu" if torch.cuda.device_count() >= args.devices else "cpu")

    pl.seed_everything(0, verbose=False)
    model = MLP(lr=args.lr)
    trainer = pl.Trainer(
        accelerator=accelerator,
        devices=args.devices,
        strategy="ddp",  # gloo on CPU, nccl on GPU
        accumulate_grad_batches=args.accumulate_grad_batches,
        max_epochs=args.max_epochs,
        callbacks=[TimescaleCallback(tau_epoch=args.tau_epoch)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    # Lightning adds a DistributedSampler: each rank sees N / devices samples per epoch
    train = DataLoader(make_data(args.dataset_size), batch_size=args.batch_size, shuffle=True)
    trainer.fit(model, train)

    global_batch = args.batch_size * trainer.world_size * args.accumulate_grad_batches
    written = trainer.optimizers[0].param_groups[0]["weight_decay"]
    closed_form = weight_decay_for_tau_epoch(args.lr, args.tau_epoch, args.dataset_size, global_batch)
    # one write per line, so the two processes' lines do not interleave mid-line
    sys.stdout.write(f"rank {trainer.global_rank}/{trainer.world_size}: weight_decay written: {written:.6g}\n")
    sys.stdout.flush()
    if trainer.is_global_zero:
        print(f"N: {args.dataset_size}  global B: {global_batch}  optimizer steps: {trainer.global_step}")
        print(f"closed form B/(lr*N*tau_epoch) with the global B: {closed_form:.6g}")
    end_process_group()  # with 2 processes: both wait here, then end (examples/process_group.py says why)


if __name__ == "__main__":
    main()
