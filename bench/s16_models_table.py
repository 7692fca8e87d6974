#!/usr/bin/python3
"""Instructions and estimated cycles of the models tests/e2e/torch_s16.py compiles (int8,
--activations int16 and each layer alone in 16x8), on the emulated CPUs through `qlstm bench
MODEL --target CPU` (the device's output checked bit-exact with the host's): the instruction
columns of docs/accuracy.md's "16x8 whole models" table.

Usage: bench/s16_models_table.py QLSTM_BINARY E2E_WORKDIR [CPU...]   (default cortex-m4 cortex-m55)
"""
import os
import re
import subprocess
import sys

qlstm, work = sys.argv[1], sys.argv[2]
cpus = sys.argv[3:] or ["cortex-m4", "cortex-m55"]
runs = sorted(d for d in os.listdir(work) if os.path.isdir(os.path.join(work, d)))
print("| model | mode | " + " | ".join("%s instructions | %s est. cycles" % (c, c) for c in cpus) + " |")
print("|---|---|" + "---:|---:|" * len(cpus))
for d in runs:
    m = re.match(r"(.+?)_(int8|int16(?:_\d+)?)$", d)
    if not m:
        continue
    name, mode = m.group(1), m.group(2).replace("int16_", "int16:")
    model = os.path.join(work, d, name + ".qlstm")
    cells = []
    for cpu in cpus:
        out = subprocess.run([qlstm, "bench", model, "--target", cpu], capture_output=True, text=True).stdout
        if "output: bit-exact with the host simulation" not in out:
            sys.exit("%s on %s: the device's output is not the host's\n%s" % (model, cpu, out))
        ins = re.search(r"^instructions: (\d+)$", out, re.M).group(1)
        cyc = re.search(r"^estimated cycles: (\d+) ", out, re.M).group(1)
        cells += ["{:,}".format(int(ins)), "{:,}".format(int(cyc))]
    print("| %s | %s | %s |" % (name, mode, " | ".join(cells)))
