"""Dataset-size transfer (Wang & Aitchison 2025, Sec. 4.1): hold ``tau_epoch``, and weight decay falls as ``1/N``.

The same MLP and task as ``quickstart.py`` are trained on ``N`` and ``4N`` samples for the same number of epochs,
at the same learning rate and batch size, for each ``tau_epoch`` in a small grid. ``TimescaleCallback`` turns each
``tau_epoch`` into ``weight_decay = B / (lr * N * tau_epoch)``, so at every ``tau_epoch`` the ``4N`` run gets a
quarter of the weight decay. The paper finds that the *best* ``tau_epoch`` barely moves with ``N`` while the best
``weight_decay`` does; the table printed at the end lets you check that on this toy task. Here it holds only in
part: 30% of the training labels are random so that regularization matters, and at ``N = 2048`` the best
``tau_epoch`` is 4 while at ``4N`` the loss still improves up to the grid's largest ``tau_epoch`` (more data
overfits less in the same number of epochs). The ``1/N`` weight-decay scaling itself is exact.

Run::

    python examples/dataset_size_transfer.py                     # the grid below, about two minutes on a CPU
    python examples/dataset_size_transfer.py --fast              # one tau_epoch, tiny sizes, seconds
    python examples/dataset_size_transfer.py --dataset-sizes 1000 4000 16000 --tau-epochs 0.5 1 2 4 8
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import lightning.pytorch as pl
from quickstart import MLP, make_data  # the sibling example; run this file from anywhere with python
from torch.utils.data import DataLoader

from lightning_tau import TimescaleCallback, weight_decay_for_tau_epoch


def train_once(
    dataset_size: int,
    tau_epoch: float,
    *,
    batch_size: int,
    lr: float,
    max_epochs: int,
    accelerator: str,
    seed: int,
    label_noise: float,
) -> tuple[float, float]:
    """Train one run; return (the weight decay the callback wrote, the final validation loss)."""
    pl.seed_everything(seed, verbose=False)
    train = DataLoader(make_data(dataset_size, seed=seed, label_noise=label_noise), batch_size=batch_size, shuffle=True)
    val = DataLoader(make_data(4096, seed=10_000), batch_size=1024)
    model = MLP(lr=lr)
    trainer = pl.Trainer(
        accelerator=accelerator,
        devices=1,
        max_epochs=max_epochs,
        callbacks=[TimescaleCallback(tau_epoch=tau_epoch, verbose=False)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, train, val)
    weight_decay = trainer.optimizers[0].param_groups[0]["weight_decay"]
    return weight_decay, float(trainer.callback_metrics["val_loss"])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset-sizes", type=int, nargs="+", default=[2048, 8192], help="N values (e.g. N, 4N)")
    parser.add_argument("--tau-epochs", type=float, nargs="+", default=[1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--fast", action="store_true", help="tiny run for tests: N=256, 1024; B=64; tau_epoch=4")
    parser.add_argument("--label-noise", type=float, default=0.3, help="share of training labels made random")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fast:
        args.dataset_sizes, args.tau_epochs, args.max_epochs, args.batch_size = [256, 1024], [4.0], 2, 64

    # One fit per table row: Lightning's per-fit banners ("GPU available", "TPU available", its tips, "`Trainer.fit`
    # stopped") are INFO logs of the "lightning.pytorch" logger and would land between the rows. Warnings still show.
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    print(f"lr={args.lr:g}, B={args.batch_size}, {args.max_epochs} epochs at every N, label noise {args.label_noise:g}")
    print(f"{'N':>8} {'tau_epoch':>9} {'weight_decay':>13} {'closed form':>13} {'val_loss':>9}")
    results: dict[tuple[int, float], float] = {}  # (N, tau_epoch) -> weight decay written
    best: dict[int, tuple[float, float, float]] = {}
    for n in args.dataset_sizes:
        for tau in args.tau_epochs:
            wd, val_loss = train_once(
                n,
                tau,
                batch_size=args.batch_size,
                lr=args.lr,
                max_epochs=args.max_epochs,
                accelerator=args.accelerator,
                seed=args.seed,
                label_noise=args.label_noise,
            )
            results[n, tau] = wd
            closed_form = weight_decay_for_tau_epoch(args.lr, tau, n, args.batch_size)
            print(f"{n:>8} {tau:>9g} {wd:>13.6g} {closed_form:>13.6g} {val_loss:>9.4f}")
            if n not in best or val_loss < best[n][2]:
                best[n] = (tau, wd, val_loss)
    print("best per N (tau_epoch, weight_decay, val_loss):")
    for n, (tau, wd, val_loss) in best.items():
        print(f"  N={n}: tau_epoch={tau:g} weight_decay={wd:.6g} val_loss={val_loss:.4f}")
    n0 = args.dataset_sizes[0]
    for n in args.dataset_sizes[1:]:
        for tau in args.tau_epochs:
            ratio = results[n0, tau] / results[n, tau]
            print(f"weight decay ratio N={n0} / N={n} at tau_epoch={tau:g}: {ratio:.6g} (N ratio {n / n0:g})")


if __name__ == "__main__":
    main()
