#!/usr/bin/env python3
"""Where the machine's speed drifts (issue 46; doc/probe.md, "Steady state: drift").

Times four workloads in one process, one thread, in short interleaved blocks for SECONDS
(default 60), so that all four see the same moments of the machine:

  model        a reduced RoBERTa's eager forward (the probe's tiny sizes: hidden 64, 4 heads,
               2 layers, vocabulary 1024; batch 1, 32 tokens): what a smoke test times
  python (L1)  a pure-Python loop: the interpreter, its data in the core's first-level cache
  copy 1 MiB   20 copies of a 1 MiB tensor: data in the caches the host's cores share
  copy 64 MiB  one copy of a 64 MiB tensor: memory bandwidth

and prints, per workload, its blocks grouped into windows of about 2 s: each window's median
relative to the fastest window, and max/min. A workload whose windows move together with
the model's while the L1-resident loop stays flat points at the memory hierarchy shared with
other tenants of the host, which neither the load average nor the host's steal shows.
With --fresh N it checks instead whether dividing by the machine's speed of the moment would
make a figure hold: N fresh processes one after another, each timing the model for 1 s
between two readings of the 1 MiB copy (8 blocks each, numpy: one thread whatever torch's),
and prints each process's model median, copy median and their ratio, then the spread
(max/min) of each column and the correlation of the first two.
Run it on a quiet machine:
    .venv/bin/python bench/drift.py [SECONDS]
    .venv/bin/python bench/drift.py --fresh 12
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import RobertaConfig, RobertaModel  # noqa: E402

BLOCK_S = 0.12  # each workload's block; one round of the four is about 0.5 s
GROUP = 4  # rounds per window (about 2 s)


def workloads() -> dict[str, object]:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = RobertaConfig(
        hidden_size=64,
        num_attention_heads=4,
        intermediate_size=128,
        num_hidden_layers=2,
        vocab_size=1024,
    )
    model = RobertaModel(config).eval()
    ids = torch.randint(0, 1024, (1, 32))
    mid, mid_out = torch.randn(256 << 10), torch.empty(256 << 10)
    big, big_out = torch.randn(16 << 20), torch.empty(16 << 20)

    def python_loop():
        total = 0
        for i in range(3000):
            total += i * i
        return total

    def copy_mid():
        for _ in range(20):
            mid_out.copy_(mid)

    return {
        "model": lambda: model(input_ids=ids),
        "python (L1)": python_loop,
        "copy 1 MiB": copy_mid,
        "copy 64 MiB": lambda: big_out.copy_(big),
    }


def loadavg() -> str:
    """The 1-, 5- and 15-minute load averages."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def block(fn, seconds: float) -> float:
    """The median seconds of `fn`'s calls over `seconds`."""
    times, begin = [], time.perf_counter()
    while time.perf_counter() - begin < seconds:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def one_process() -> None:
    """--one: the model's median over 1 s between two copy readings, one line."""
    import numpy as np

    model = workloads()["model"]
    src = np.random.rand(1 << 17)  # 1 MiB of float64
    dst = np.empty_like(src)

    def copies() -> list[float]:
        times = []
        for _ in range(10):
            start = time.perf_counter()
            for _ in range(20):
                np.copyto(dst, src)
            times.append(time.perf_counter() - start)
        return times[2:]  # the first two warm up

    with torch.inference_mode():
        for _ in range(20):
            model()
        before = copies()
        median = block(model, 1.0)
        copy = statistics.median(before + copies())
    print(f"{median * 1e3:.4f} {copy * 1e3:.4f} {median / copy:.4f}")


def fresh(n: int) -> None:
    import subprocess

    print(f"== load average at start: {loadavg()}; {n} fresh processes")
    print("model_ms copy_ms ratio")
    rows = []
    for _ in range(n):
        out = subprocess.run(
            [sys.executable, __file__, "--one"], check=True, capture_output=True, text=True
        )
        line = out.stdout.strip().splitlines()[-1]
        print(line)
        rows.append([float(x) for x in line.split()])
    for i, name in enumerate(("model", "copy", "model/copy")):
        column = [r[i] for r in rows]
        print(f"{name:10s} max/min {max(column) / min(column):.3f}")
    print(
        f"correlation of model and copy: {statistics.correlation([r[0] for r in rows], [r[1] for r in rows]):.2f}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one_process()
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--fresh":
        fresh(int(sys.argv[2]))
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    fns = workloads()
    print(
        f"== load average at start: {loadavg()} "
        f"on {os.cpu_count()} cores; {seconds:.0f} s of interleaved blocks"
    )
    rounds = []
    with torch.inference_mode():
        for fn in fns.values():  # warm-up
            for _ in range(10):
                fn()
        begin = time.perf_counter()
        while time.perf_counter() - begin < seconds:
            rounds.append({name: block(fn, BLOCK_S) for name, fn in fns.items()})
    windows = range(0, len(rounds) - GROUP + 1, GROUP)
    print(
        f"{len(windows)} windows of {GROUP} rounds; each window's median / the fastest window's "
        "(corr: Pearson's correlation of its window medians with the model's):"
    )
    series = {
        name: [statistics.median(r[name] for r in rounds[i : i + GROUP]) for i in windows]
        for name in fns
    }
    for name, medians in series.items():
        fastest = min(medians)
        corr = (
            statistics.correlation(medians, series["model"]) if len(medians) > 2 else float("nan")
        )
        print(
            f"{name:12s} fastest {fastest * 1e3:8.4f} ms  max/min {max(medians) / fastest:.2f}  corr {corr:5.2f}  "
            + " ".join(f"{m / fastest:.2f}" for m in medians)
        )
    print(f"== load average at end: {loadavg()}")


if __name__ == "__main__":
    main()
