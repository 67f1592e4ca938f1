#!/usr/bin/env bash
# The GPU figures the issues ask for, in one run on a machine with a CUDA GPU and PyTorch (and Triton) installed:
# the statistics pass against one fused L2 read and the host syncs per step (bench_monitor.py --device cuda), the same
# pass on that machine's idle CPU, and one torch thread against all of them (bench_threads.py). Output goes to
# stdout and, when $OUT is set, to $OUT/gpu_figures.log.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
log="${OUT:-/tmp}/gpu_figures.log"
{
  date -u; nvidia-smi -L; uptime; nproc
  python3 -c "import torch, lightning, triton; print('torch', torch.__version__, 'lightning', lightning.__version__, 'triton', triton.__version__)"
  echo "== bench_monitor.py --device cuda"
  timeout 200 python3 benchmarks/bench_monitor.py --device cuda --repeats 3 --steps 200 --pass-repeats 21
  echo "== bench_monitor.py (CPU of the same machine)"; uptime
  timeout 90 python3 benchmarks/bench_monitor.py --skip-training --pass-repeats 15
  echo "== bench_threads.py"; uptime
  timeout 150 python3 benchmarks/bench_threads.py --repeats 2 --epochs 2
  date -u
} 2>&1 | grep -v "USDT:" | tee "$log"
