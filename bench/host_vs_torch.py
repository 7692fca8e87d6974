#!/usr/bin/python3
"""The host simulation against torch.nn.LSTM fp32, side by side in one run (docs/performance.md).

  /usr/bin/python3 bench/host_vs_torch.py [--qlstm build/tools/qlstm/qlstm] [--variant default]

Both with one thread: torch (Debian's python3-torch) through the system BLAS, which must be
OpenBLAS (Debian's libopenblas0; the reference BLAS is several times slower), and
`qlstm bench --shape ...` (the bit-exact int8 kernel, median of many calls). Prints, per shape,
microseconds per sequence for each and the ratio torch / qlstm.
"""
import argparse
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

SHAPES = [
    ("kws", 1, 49, 10, 64),
    ("medium", 1, 32, 32, 128),
    ("large", 1, 25, 40, 256),
]


def blas_in_use():
    """The BLAS library mapped into this process (after importing torch)."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower() and "/" in line}
    return sorted(libs)


def torch_us(torch, b, t, i, h, min_seconds=1.0):
    lstm = torch.nn.LSTM(i, h, batch_first=True)
    x = torch.randn(b, t, i)
    times = []
    with torch.no_grad():
        for _ in range(20):
            lstm(x)
        end = time.perf_counter() + min_seconds
        while len(times) < 50 or time.perf_counter() < end:
            t0 = time.perf_counter()
            lstm(x)
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e6


def qlstm_us(qlstm, b, t, i, h, variant):
    out = subprocess.run([qlstm, "bench", "--shape", "B=%d,T=%d,I=%d,H=%d" % (b, t, i, h), "--variant", variant,
                          "--runs", "200"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"^microseconds: ([0-9.]+)$", out.stdout, re.M)
    # "host variant: NAME", or "host variant: default (dispatched: NAME)"
    v = re.search(r"^host variant: (\S+)(?: \(dispatched: (\S+)\))?$", out.stdout, re.M)
    if out.returncode != 0 or not m or not v or "bit-exact" not in out.stdout:
        sys.exit("qlstm bench failed:\n" + out.stdout)
    return float(m.group(1)), v.group(2) or v.group(1)


def measure(qlstm, variant="default"):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    blas = blas_in_use()
    rows = []
    for name, b, t, i, h in SHAPES:
        ours, used = qlstm_us(qlstm, b, t, i, h, variant)
        theirs = torch_us(torch, b, t, i, h)
        rows.append({"shape": name, "torch_us": theirs, "qlstm_us": ours, "variant": used})
    return rows, blas, torch.__version__


def table(rows):
    lines = ["| shape | torch fp32 us/seq | qlstm int8 us/seq | variant | torch / qlstm |", "|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append("| %s | %.1f | %.1f | %s | %.2f |" % (r["shape"], r["torch_us"], r["qlstm_us"], r["variant"],
                                                         r["torch_us"] / r["qlstm_us"]))
    return "\n".join(lines)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser()
    p.add_argument("--qlstm", default=os.path.join(root, "build/tools/qlstm/qlstm"))
    p.add_argument("--variant", default="default")
    a = p.parse_args()
    rows, blas, version = measure(a.qlstm, a.variant)
    print("torch %s, BLAS: %s" % (version, ", ".join(blas) or "none found"))
    if not any("openblas" in b for b in blas):
        print("warning: torch is not using OpenBLAS (install Debian's libopenblas0)")
    print(table(rows))


if __name__ == "__main__":
    main()
