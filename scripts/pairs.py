#!/usr/bin/env python3
"""Paired, interleaved whole-process runs of two or more ctxbench builds: wall clock, CPU (user + sys) and peak
RSS of each run from os.wait4, medians per build and each build's ratios to the first. The builds alternate run
by run (A B A B ...), starting with a different one each round, so that all of them see the same machine; the
load average is printed before and after.

usage: scripts/pairs.py N BIN_A BIN_B [BIN_C ...] [-- RUN ARGS]

Each binary runs `BIN run --out DIR RUN ARGS` (default RUN ARGS: --dataset datasets/default.jsonl, from the
current directory) into a directory of its own, removed before each run.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def once(binary, args, out):
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "run", "--out", out, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{binary} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    argv = sys.argv[1:]
    extra = ["--dataset", "datasets/default.jsonl"]
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    n, bins = int(argv[0]), argv[1:]
    tmp = tempfile.mkdtemp(prefix="pairs")
    results = {b: [] for b in bins}
    print(f"load before: {os.getloadavg()}", flush=True)
    for b in bins:  # warm the page cache and the binaries
        once(b, extra, os.path.join(tmp, "warm"))
    for r in range(n):
        order = bins[r % len(bins):] + bins[:r % len(bins)]
        for i, b in enumerate(order):
            results[b].append(once(b, extra, os.path.join(tmp, f"out{bins.index(b)}")))
    print(f"load after: {os.getloadavg()}")
    med = {b: [statistics.median(x[k] for x in results[b]) for k in range(3)] for b in bins}
    first = med[bins[0]]
    for b in bins:
        w, c, m = med[b]
        print(f"{b}: wall {w:.4f} s, cpu {c:.4f} s, peak {m:.1f} MB"
              f"  ratio to first: wall {w / first[0]:.3f}, cpu {c / first[1]:.3f}, mem {m / first[2]:.3f}")
    # Per-round ratios of each build to the first (paired), median.
    for b in bins[1:]:
        rw = statistics.median(x[0] / y[0] for x, y in zip(results[b], results[bins[0]]))
        rc = statistics.median(x[1] / y[1] for x, y in zip(results[b], results[bins[0]]))
        print(f"{b}: median paired ratio wall {rw:.3f}, cpu {rc:.3f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
