#!/usr/bin/python3
"""Executed instructions and estimated cycles of one kernel call, per shape and emulated CPU
(docs/performance.md).

  /usr/bin/python3 bench/target_table.py [--qlstm build/tools/qlstm/qlstm] [--variants reference,default]
                        [--cpus cortex-m55,...] [--host] [--write docs/performance.md]

Runs `qlstm bench --target CPU --shape ...` for every shape and CPU, prints a Markdown table
(instructions per sequence, ratio to the CMSIS-NN figures of issue 6, estimated cycles and their
ratio to CMSIS-NN's estimated cycles, instructions and cycles per MAC, kernel code and read-only
bytes, RAM per call), then the same shapes as a GRU (`--cell gru`) and
a table of GRU against LSTM instructions per MAC, and, with --write, writes the page with the
commit it was measured at. The counts are exact: the same binary and inputs give the same numbers;
the cycles are the counter's estimate (docs/targets.md, "Estimated cycles"), as repeatable.
With --cmsis-nn-qlstm (a build with the optional CMSIS-NN backend) it also measures the `cmsis_nn`
variant and prints its estimated cycles as CMSIS_NN_CYCLES below, to paste here when the counter
or the toolchain changes.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

SHAPES = [
    ("tiny", "B=1,T=16,I=8,H=16"),
    ("kws", "B=1,T=49,I=10,H=64"),
    ("medium", "B=1,T=32,I=32,H=128"),
    ("large", "B=1,T=25,I=40,H=256"),
    ("batch4", "B=4,T=16,I=16,H=32,time_major"),
]
CPUS = ["cortex-m55", "cortex-m55-nomve", "cortex-m33", "cortex-m4", "cortex-m3"]

# CMSIS-NN arm_lstm_unidirectional_s8 at commit 99f736a6, arm-none-eabi-gcc 12.2, one stateless
# call under QEMU 7.2 (issue 6). The M55 figure is with MVE; the M55 without MVE has none.
CMSIS_NN = {
    "tiny": {"cortex-m55": 101950, "cortex-m4": 208267, "cortex-m33": 206438, "cortex-m3": 229398},
    "kws": {"cortex-m55": 1285588, "cortex-m4": 3565565, "cortex-m33": 3543537, "cortex-m3": 4435998},
    "medium": {"cortex-m55": 2215728, "cortex-m4": 7088000, "cortex-m33": 7059349, "cortex-m3": 9868789},
    "large": {"cortex-m55": 5069692, "cortex-m4": 17254304, "cortex-m33": 17209250, "cortex-m3": 25263326},
    "batch4": {"cortex-m55": 698704, "cortex-m4": 1857797, "cortex-m33": 1842446, "cortex-m3": 2248616},
}
# The same call's estimated cycles (docs/targets.md, "Estimated cycles"): CMSIS-NN 99f736a6 built
# outside the repository with the project's toolchain file (-O3), run through the optional backend's
# `cmsis_nn` variant (`--cmsis-nn-qlstm`), which adds qlstm's parameter validation and mapping
# (a few hundred instructions) to upstream's arm_lstm_unidirectional_s8. The M55 without MVE runs
# CMSIS-NN's scalar/DSP path.
CMSIS_NN_CYCLES = {
    "tiny": {"cortex-m55": 138218, "cortex-m55-nomve": 228793, "cortex-m33": 274452, "cortex-m4": 275345, "cortex-m3": 361825},
    "kws": {"cortex-m55": 1687704, "cortex-m55-nomve": 3785294, "cortex-m33": 4644789, "cortex-m4": 4658900, "cortex-m3": 7572013},
    "medium": {"cortex-m55": 2926676, "cortex-m55-nomve": 7547868, "cortex-m33": 9299461, "cortex-m4": 9319903, "cortex-m3": 17603651},
    "large": {"cortex-m55": 6761240, "cortex-m55-nomve": 18369763, "cortex-m33": 22756786, "cortex-m4": 22788674, "cortex-m3": 46132372},
    "batch4": {"cortex-m55": 899143, "cortex-m55-nomve": 1975665, "cortex-m33": 2402118, "cortex-m4": 2413275, "cortex-m3": 3720014},
}
CMSIS_NN_CYCLES_AT = "5067b65 (within 0.01% of the figures at 40c7a11: only qlstm's mapping around the call moved)"
# The ratio each CPU must reach (issue 6).
GOALS = {"cortex-m55": 0.50, "cortex-m33": 0.70, "cortex-m4": 0.70, "cortex-m3": 0.80}
# The estimated-cycle ratio each CPU is to reach (issue 19; the M55 with Helium).
CYCLE_GOALS = {"cortex-m55": 0.33, "cortex-m33": 0.60, "cortex-m4": 0.60, "cortex-m3": 0.70}


def field(out, pattern):
    m = re.search(pattern, out, re.M)
    return m.group(1) if m else None


def bench(qlstm, cpu, shape, variant, cell):
    return run_bench([qlstm, "bench", "--target", cpu, "--shape", shape, "--variant", variant, "--cell", cell])


def run_bench(cmd):
    """Runs one `qlstm bench ... --target CPU` and reads its figures."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))
    last = p.stdout.strip().splitlines()[-1]
    if not last.startswith("instructions: "):
        sys.exit("unexpected output of %s:\n%s" % (" ".join(cmd), p.stdout))
    number = lambda pattern: int(field(p.stdout, pattern) or -1)  # -1: not measured
    return {
        "instructions": int(last.split()[1]),
        "cycles": number(r"^estimated cycles: (\d+) "),
        "variant": field(p.stdout, r"variant: (\S+)$"),
        "macs": number(r"(\d+) MACs"),
        "flash": number(r"kernel flash: (\d+) bytes"),
        "static_ram": number(r"static RAM: (\d+) bytes"),
        "ram": number(r"RAM per call: (\d+) bytes"),
        # A decoder's program (--cell lstm_repeated): its LSTM op alone, after the selection op.
        "lstm_op_instructions": number(r"^op 1 \(LSTM .*\): (\d+) instructions$"),
        "lstm_op_cycles": number(r"^op 1 \(LSTM .*\): (\d+) estimated cycles$"),
    }


def measure(qlstm, cpus, variants, cell="lstm"):
    rows = []
    for name, shape in SHAPES:
        for cpu in cpus:
            seen = set()
            for v in variants:
                r = bench(qlstm, cpu, shape, v, cell)
                if r["variant"] in seen:
                    continue  # "default" is one of the named variants
                seen.add(r["variant"])
                r.update(shape=name, cpu=cpu, cell=cell)
                rows.append(r)
                print("%-4s %-7s %-17s %-12s %12d %12d" % (cell, name, cpu, r["variant"], r["instructions"],
                                                          r["cycles"]), file=sys.stderr)
    return rows


# The bundled examples as whole programs (their ops: docs/compiler.md), each compiled from its
# ONNX file and calibration set as scripts/example.sh does.
WHOLE_MODELS = [
    ("digits_lstm", "examples/digits/digits_lstm.onnx", "examples/digits/calibration.npy"),
    ("digits_gru", "examples/digits/digits_gru.onnx", "examples/digits/calibration.npy"),
    ("sunspots_lstm", "examples/sunspots/sunspots_lstm.onnx", "examples/sunspots/calibration.npy"),
]
# Why CMSIS-NN cannot run a model's program as compiled (the others it runs).
CMSIS_NN_CANNOT = {
    "digits_lstm": "its LSTM keeps only the last step (the head reads h_n), which "
                   "arm_lstm_unidirectional_s8 cannot do",
    "digits_gru": "no CMSIS-NN GRU kernel",
}
# CMSIS-NN's figures for the same whole programs, (instructions, estimated cycles) per model and CPU:
# the program with its LSTM and fully connected ops run by the optional backend's `cmsis_nn`
# variants (arm_lstm_unidirectional_s8, arm_fully_connected_s8; softmax and step selection are
# qlstm's own, the same arithmetic as arm_softmax_s8). Measured with --cmsis-nn-qlstm at
# CMSIS_NN_WHOLE_AT; no CMSIS-NN GRU kernel exists, so the GRU model has none.
CMSIS_NN_WHOLE = {
    "sunspots_lstm": {"cortex-m55": (210115, 284806), "cortex-m55-nomve": (370350, 423763), "cortex-m33": (384741, 509687), "cortex-m4": (388219, 511296), "cortex-m3": (421120, 650518)},
}
CMSIS_NN_WHOLE_AT = "commit 5067b65 (its build with the backend)"


def compile_whole_models(qlstm, root, work):
    """Compiles WHOLE_MODELS into work; returns [(name, .qlstm path, op count)]."""
    out = []
    for name, onnx, calibration in WHOLE_MODELS:
        cmd = [qlstm, "compile", os.path.join(root, onnx), "--calibration", os.path.join(root, calibration),
               "-o", work, "--name", name]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))
        with open(os.path.join(work, name + "_report.json")) as f:
            ops = len(json.load(f).get("op_table", []))
        out.append((name, os.path.join(work, name + ".qlstm"), ops))
    return out


def measure_whole(qlstm, models, cpus, variant):
    rows = []
    for name, path, ops in models:
        for cpu in cpus:
            r = run_bench([qlstm, "bench", path, "--target", cpu, "--variant", variant])
            r.update(model=name, cpu=cpu, ops=ops)
            rows.append(r)
            print("%-14s %-17s %-12s %12d %12d" % (name, cpu, r["variant"], r["instructions"], r["cycles"]),
                  file=sys.stderr)
    return rows


def whole_table(rows, upstream):
    """The whole programs: qlstm's default variants against CMSIS-NN's (recorded or just measured)."""
    lines = ["| model | ops | CPU | qlstm variant | instructions | estimated cycles | CMSIS-NN instructions "
             "| CMSIS-NN estimated cycles | cycle ratio |", "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        u = upstream.get(r["model"], {}).get(r["cpu"])
        theirs = ("%s | %s | %.3f" % (format(u[0], ","), format(u[1], ","), r["cycles"] / u[1]) if u
                  else "none | none | n/a (%s)" % CMSIS_NN_CANNOT.get(r["model"], "not measured"))
        lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
            r["model"], r["ops"], r["cpu"], r["variant"], format(r["instructions"], ","), format(r["cycles"], ","),
            theirs))
    return "\n".join(lines)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def commit(root):
    def git(*a):
        return subprocess.run(["git", "-C", root] + list(a), stdout=subprocess.PIPE, text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + (" (with uncommitted changes)" if dirty else "")


def table(rows, cmsis_cycles=None):
    """One row per (shape, CPU, variant); the cycle ratio against `cmsis_cycles` (default CMSIS_NN_CYCLES)."""
    cmsis_cycles = CMSIS_NN_CYCLES if cmsis_cycles is None else cmsis_cycles
    lines = ["| shape | CPU | variant | instructions | ratio to CMSIS-NN | goal | est. cycles | cycle ratio to CMSIS-NN "
             "| cycle goal | instr/MAC | cycles/MAC | flash B | static RAM B | RAM/call B |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ref = CMSIS_NN[r["shape"]].get(r["cpu"])
        ratio = "%.3f" % (r["instructions"] / ref) if ref else "n/a"
        goal = "<= %.2f" % GOALS[r["cpu"]] if r["cpu"] in GOALS else ""
        ref_cycles = cmsis_cycles.get(r["shape"], {}).get(r["cpu"])
        cycle_ratio = "%.3f" % (r["cycles"] / ref_cycles) if ref_cycles and r["cycles"] > 0 else "n/a"
        cycle_goal = "<= %.2f" % CYCLE_GOALS[r["cpu"]] if r["cpu"] in CYCLE_GOALS else ""
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %.3f | %d | %d | %d |" % (
            r["shape"], r["cpu"], r["variant"], format(r["instructions"], ","), ratio, goal,
            format(r["cycles"], ","), cycle_ratio, cycle_goal, r["instructions"] / r["macs"], r["cycles"] / r["macs"],
            r["flash"], r["static_ram"], r["ram"]))
    return "\n".join(lines)


# What the estimate shows of the gaps left to issue 19's cycle goals (the M3/M4/M33 prose from
# profiles by `qlstm bench --profile` at 0d601cf and after branch cyc4; the M55's split is measured
# on each run, m55_split).
CYCLE_BOUNDS = """Where the estimated cycles stand against the goals, and what bounds them (issue 19):

- **Cortex-M3** (`arm_thumb2`): the goal is met at every shape; the weight loads now issue back to
  back (one cycle each after the first), the Thumb-2 gate finish is folded (two passes, the rounding
  divide inside the SRDHM's sum).
- **Cycles, not instructions**: the cycle tuning traded instructions for cycles where loads pair
  (the weight rows read by register offset, so that loads issue back to back); after the `arm_dsp`
  work below the instruction ratio on Cortex-M4 and M33 is 0.60 to 0.70 again (`large` 0.698 and
  0.700, at issue 6's 0.70).
- **Cortex-M4 and M33** (`arm_dsp`, 0.573 to 0.597 and 0.575 to 0.597: the goal met at every
  shape, from 0.607 to 0.645): the DSP rows4 enters its eight-quad loop part-way (Duff's device,
  8 quads of code instead of 15, about 12 cycles less per four-row block, 1.2 KB less flash, which
  pays for the rest); a one-row call sign-extends x and h once per step for all four gates; the
  folded gate finish's first pass takes two rows per loop pass; the cell and hidden updates use
  the folded requantization where the right shifts allow (the hidden one's output zero point
  inside its rounding constant); the chunks' dot products are inlined in the gate driver. What
  bounds `large` (0.596 and 0.597, the closest): the dot-product loop, 24 cycles per 16 MACs
  (8 `SMLAD`, 8 `SXTB16`, 8 cycles of loads: a quad's six loads issue in two runs, as one run
  needs two registers more than the loop has), 11.37 M of the 13.58 M cycles on the M4, 0.499 of
  CMSIS-NN's whole call by itself; the rest is the gate finish (1.18 M, about 46 cycles a row),
  the cell and hidden updates (0.25 M and 0.31 M, 39 and 48 a unit), refills (0.24 M) and the
  four-row blocks' overhead (0.14 M). The estimate moves by up to about 1 cycle per loop pass with
  the code's place: QEMU ends a translated block at each 1 KiB page and the counter charges a
  block's first load in full, so the expanded loop's top sits on 128 bytes, where those breaks
  land on no pipelined load.
- **Cortex-M55** (`arm_mve`, against 0.33): {met}. Where the cycles go, per shape
  (`qlstm bench --shape S --target cortex-m55 --variant arm_mve --profile`: estimated cycles per
  function, grouped; each part also as a share of CMSIS-NN's whole call):

{m55_split}

  The **dot-product floor** is what the matmuls would cost under the model with nothing but their
  Helium work: one weight load and one `VMLADAVA` per row and 16 columns, paired (2 cycles), no
  vector loads of x or h, no loop ends, no bias or accumulator traffic:
  2 x B x 4H x (T x ceil(I/16) + (T - 1) x ceil(H/16)) (a stateless call's first step has no
  recurrent product). The last column puts that floor in place of today's dot products and keeps
  everything else. So at {no_room} the target is out of reach of any dot-product kernel: the gate finishes, updates and driver alone come to {small_rest} of CMSIS-NN's call
  there, and they are already assembly loops of four int32 lanes (the gate finish 31 Helium
  instructions per four rows for a sigmoid, 37 for a tanh: both requantizations with the rounding
  divide's fix, two saturations, the table interpolation by two gathers). At {room} the floor
  leaves room: the dot products run at {over_floor} times their floor, and 0.33 needs them at
  {need} times it (all else as today). Over 32 columns `qlstm_arm_rows4_s8_mve` already holds
  v in `q4`-`q7`, 64 columns at a time, and a four-row block of 64 whole columns costs 47 cycles
  by the model's table against the floor's 32: the four sums' loads and stores (8, `LDRD` and
  `STRD`), the row pointers' advance (4), the first load after the sums' (1 more) and half a
  loop end with its refill (2: two blocks per pass). Each call adds about 70 cycles of register saves (`VPUSH` and
  `VPOP` of `q4`-`q7` are 34) and about 55 per 64-column block to load v and set up the rows,
  spread over the four-row blocks of a chunk: `arm_mve` takes 128 rows a chunk (32 blocks; its
  accumulators 1,024 B of stack, where the other variants take 64 rows and 512 B), which is what
  brings `large` under the goal. What is left is fewer calls (one for a chunk's x and h
  products), the blocks' own overhead, and at `kws` the x products' 10 columns, a part vector
  per row. Up
  to 16 columns (`tiny`, the x products at `kws` and `batch4`) v is one predicated vector in
  `q3`, with no registers to save; from 17 to 32 (the h products at `batch4`) the kernel keeps
  its tail-predicated loop with v loaded beside the weights, where holding v costs more per call
  than it saves. Flash: `arm_mve` is at {mve_flash} B, {over_ref:+d} B over the reference, which it was
  {at_filing:+d} B over when issue 19 was filed: it has grown {growth} B of the 1 KiB allowed
  ("Where flash grows")."""


# The Cortex-M55's functions by part of the LSTM call (the first pattern a name contains).
M55_PARTS = [("dot products", ("rows4", "dot1")), ("gate finishes", ("gate_finish",)),
             ("cell and hidden updates", ("cell_update", "hidden_update"))]


def shape_dims(shape):
    d = dict(kv.split("=") for kv in shape.split(",") if "=" in kv)
    return int(d["B"]), int(d["T"]), int(d["I"]), int(d["H"])


def dot_floor_cycles(shape):
    """The dot products' floor under the M55 model: a weight load and a VMLADAVA per row and 16
    columns, paired (2 cycles); a stateless call's first step has no recurrent product."""
    b, t, i, h = shape_dims(shape)
    vectors = lambda n: (n + 15) // 16
    return 2 * b * 4 * h * (t * vectors(i) + (t - 1) * vectors(h))


def m55_profile(qlstm, shape):
    """{part: estimated cycles} of one arm_mve call on the Cortex-M55, and the total."""
    cmd = [qlstm, "bench", "--target", "cortex-m55", "--shape", shape, "--variant", "arm_mve", "--profile"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    total = field(p.stdout, r"^estimated cycles: (\d+) ")
    if p.returncode != 0 or total is None:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stdout))
    parts = {name: 0 for name, _ in M55_PARTS}
    parts["driver and the rest"] = 0
    for m in re.finditer(r"^ +\d+ +\S+%  +(\d+) cycles +\S+%  (.+)$", p.stdout, re.M):
        name = next((n for n, keys in M55_PARTS if any(k in m.group(2) for k in keys)), "driver and the rest")
        parts[name] += int(m.group(1))
    if sum(parts.values()) != int(total):
        sys.exit("the per-function cycles of %s do not sum to its estimate" % " ".join(cmd))
    return parts, int(total)


def m55_split(qlstm):
    """The M55 bound's table and figures (CYCLE_BOUNDS' fields)."""
    head = ["shape", "est. cycles", "ratio"] + [n for n, _ in M55_PARTS] + [
        "driver and the rest", "dot-product floor", "ratio with the dot products at the floor"]
    lines = ["  | " + " | ".join(head) + " |", "  |---|" + "---:|" * (len(head) - 1)]
    over, small_rest, need, met, unmet = [], [], [], [], []
    for name, shape in SHAPES:
        cmsis = CMSIS_NN_CYCLES[name]["cortex-m55"]
        parts, total = m55_profile(qlstm, shape)
        floor = dot_floor_cycles(shape)
        cell = lambda c: "%s (%.3f)" % (format(c, ","), c / cmsis)
        rest = total - parts["dot products"]
        lines.append("  | %s | %s | %.3f | %s | %s | %.3f |" % (
            name, format(total, ","), total / cmsis, " | ".join(cell(c) for c in parts.values()), cell(floor),
            (rest + floor) / cmsis))
        goal = CYCLE_GOALS["cortex-m55"]
        (met if total / cmsis <= goal else unmet).append(name)
        if (rest + floor) / cmsis > goal:
            small_rest.append("%.3f at `%s`" % (rest / cmsis, name))
        elif total / cmsis > goal:
            over.append((name, parts["dot products"] / floor))
            need.append((goal * cmsis - rest) / floor)
    names = lambda xs: ", ".join("`%s`" % x for x in xs) or "no shape"
    return {"m55_split": "\n".join(lines),
            "met": "met at %s, not at %s" % (names(met), names(unmet)) if met else "not met at any shape",
            "no_room": names([x.split("`")[1] for x in small_rest]),
            "room": names([n for n, _ in over]),
            "over_floor": "%.1f to %.1f" % (min(x for _, x in over), max(x for _, x in over)) if over else "n/a",
            "need": "%.2f to %.2f" % (min(need), max(need)) if need else "n/a",
            "small_rest": " and ".join(small_rest) if small_rest else "less than the goal"}


def cycle_summary(rows, m55=None):
    """Per CPU, the optimized variant's estimated-cycle ratio to CMSIS-NN over the shapes, against
    issue 19's goal, and what bounds them (CYCLE_BOUNDS; its M55 part with m55_split's fields)."""
    flash = {(r["cpu"], r["variant"]): r["flash"] for r in rows}
    if m55 is not None and ("cortex-m55", "arm_mve") in flash and ("cortex-m55", "reference") in flash:
        mve, ref = flash[("cortex-m55", "arm_mve")], flash[("cortex-m55", "reference")]
        at_filing = ISSUE19_ADDED["cortex-m55"][1]
        bounds = CYCLE_BOUNDS.format(mve_flash=mve, over_ref=mve - ref, at_filing=at_filing,
                                     growth=mve - ref - at_filing, **m55)
    else:
        bounds = CYCLE_BOUNDS[:CYCLE_BOUNDS.index("- **Cortex-M55**")].rstrip()
    parts = []
    for cpu in CPUS:
        ratios = [(r["shape"], r["cycles"] / CMSIS_NN_CYCLES[r["shape"]][cpu]) for r in rows
                  if r["cpu"] == cpu and r["variant"] != "reference" and r["cycles"] > 0
                  and CMSIS_NN_CYCLES.get(r["shape"], {}).get(cpu)]
        if not ratios:
            continue
        goal = CYCLE_GOALS.get(cpu)
        met = [n for n, x in ratios if goal is not None and x <= goal]
        parts.append("%s %.3f to %.3f%s" % (
            cpu, min(x for _, x in ratios), max(x for _, x in ratios),
            " (goal <= %.2f met at %d of %d shapes)" % (goal, len(met), len(ratios)) if goal is not None else ""))
    if not parts:
        return ""
    return ("**Estimated cycles against CMSIS-NN's, the optimized variant per CPU: " + "; ".join(parts) +
            ".** Where a cycle ratio is above the instruction ratio, qlstm's kernel spends a larger share of "
            "its instructions than CMSIS-NN's on the costlier classes (loads, taken branches, `LDM`/`STM`; on the "
            "Cortex-M55 Helium instructions at two cycles and gathers at one per element); `qlstm bench "
            "--profile` splits a call's cycles by class and by function.\n\n" + bounds + "\n\nCMSIS-NN's estimated cycles, "
            "the denominators of the cycle ratios:\n\n" + cmsis_cycles_table() + "\n\n")


def cmsis_cycles_table():
    """CMSIS-NN's recorded estimated cycles (CMSIS_NN_CYCLES) beside its instructions (issue 6)."""
    lines = ["| shape | CPU | CMSIS-NN instructions (issue 6) | CMSIS-NN est. cycles | cycles per instruction |",
             "|---|---|---:|---:|---:|"]
    for name, _ in SHAPES:
        for cpu in CPUS:
            c = CMSIS_NN_CYCLES.get(name, {}).get(cpu)
            if c is None:
                continue
            i = CMSIS_NN[name].get(cpu)
            lines.append("| %s | %s | %s | %s | %s |" % (name, cpu, format(i, ",") if i else "n/a", format(c, ","),
                                                         "%.3f" % (c / i) if i else "n/a"))
    return "\n".join(lines)


def cycles_by_shape(rows):
    """{shape: {cpu: cycles}} of measured rows (the CMSIS_NN_CYCLES layout)."""
    out = {}
    for r in rows:
        out.setdefault(r["shape"], {})[r["cpu"]] = r["cycles"]
    return out


def gru_table(lstm_rows, gru_rows, cell="GRU"):
    """A GRU (or RNN: `cell`) against the LSTM at the same shape, CPU and variant: instructions and
    instructions per MAC."""
    lstm = {(r["shape"], r["cpu"], r["variant"]): r for r in lstm_rows}
    lines = [("| shape | CPU | variant | LSTM instructions | LSTM instr/MAC | GRU instructions | GRU instr/MAC "
              "| GRU / LSTM per MAC | LSTM cycles/MAC | GRU cycles/MAC | GRU / LSTM cycles per MAC |").replace("GRU", cell),
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for g in gru_rows:
        r = lstm.get((g["shape"], g["cpu"], g["variant"]))
        if r is None:
            continue
        per_mac_l, per_mac_g = r["instructions"] / r["macs"], g["instructions"] / g["macs"]
        cyc_l, cyc_g = r["cycles"] / r["macs"], g["cycles"] / g["macs"]
        lines.append("| %s | %s | %s | %s | %.3f | %s | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
            g["shape"], g["cpu"], g["variant"], format(r["instructions"], ","), per_mac_l,
            format(g["instructions"], ","), per_mac_g, per_mac_g / per_mac_l, cyc_l, cyc_g, cyc_g / cyc_l))
    return "\n".join(lines)


def repeated_table(lstm_rows, repeated_rows):
    """The LSTM on a sequence against the same LSTM reading one step repeated (a decoder's
    input_repeated), same shape, CPU and variant: the LSTM op's instructions and cycles."""
    lstm = {(r["shape"], r["cpu"], r["variant"]): r for r in lstm_rows}
    lines = ["| shape | CPU | variant | on a sequence: instructions | est. cycles | repeated: instructions "
             "| est. cycles | instructions saved | cycles saved |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for d in repeated_rows:
        r = lstm.get((d["shape"], d["cpu"], d["variant"]))
        if r is None:
            continue
        i, c = d["lstm_op_instructions"], d["lstm_op_cycles"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %.1f%% | %.1f%% |" % (
            d["shape"], d["cpu"], d["variant"], format(r["instructions"], ","), format(r["cycles"], ","),
            format(i, ","), format(c, ","), 100.0 * (1 - i / r["instructions"]), 100.0 * (1 - c / r["cycles"])))
    return "\n".join(lines)


def gru_flash_table(lstm_rows, gru_rows):
    """Kernel flash per CPU and variant (it does not depend on shape): LSTM and GRU."""
    lstm = {(r["cpu"], r["variant"]): r["flash"] for r in lstm_rows}
    lines = ["| CPU | variant | LSTM flash B | GRU flash B | GRU - LSTM B |", "|---|---|---:|---:|---:|"]
    seen = set()
    for g in gru_rows:
        key = (g["cpu"], g["variant"])
        if key in seen or key not in lstm or g["flash"] < 0 or lstm[key] < 0:
            continue
        seen.add(key)
        lines.append("| %s | %s | %d | %d | %+d |" % (key[0], key[1], lstm[key], g["flash"], g["flash"] - lstm[key]))
    return "\n".join(lines)


def gru_verdict(lstm_rows, gru_rows, cpus=("cortex-m55", "cortex-m4")):
    """Whether the GRU's instructions per MAC are no higher than the LSTM's, per CPU (its default variant)."""
    lstm = {(r["shape"], r["cpu"], r["variant"]): r for r in lstm_rows}
    optimized = {cpu: max((r for r in lstm_rows if r["cpu"] == cpu), key=lambda r: r["variant"] != "reference")
                 for cpu in cpus if any(r["cpu"] == cpu for r in lstm_rows)}
    parts = []
    for cpu, best in optimized.items():
        ratios = []
        for g in gru_rows:
            r = lstm.get((g["shape"], g["cpu"], g["variant"]))
            if g["cpu"] == cpu and g["variant"] == best["variant"] and r is not None:
                ratios.append((g["shape"], (g["instructions"] / g["macs"]) / (r["instructions"] / r["macs"])))
        met = [n for n, x in ratios if x <= 1.0]
        parts.append("on %s (`%s`) the GRU/LSTM ratio per MAC is %.3f to %.3f, the bar met at %d of %d shapes%s" % (
            cpu, best["variant"], min(x for _, x in ratios), max(x for _, x in ratios), len(met), len(ratios),
            " (%s)" % ", ".join("`%s`" % n for n in met) if met else ""))
    return "**" + "; ".join(parts) + ".**"


# What each optimized variant added over its reference when issue 19 was filed (docs/performance.md
# at e37aa9c); issue 19 lets it grow by at most 1 KiB.
ISSUE19_ADDED = {"cortex-m55": ("arm_mve", 552), "cortex-m55-nomve": ("arm_dsp", 3644),
                 "cortex-m33": ("arm_dsp", 3616), "cortex-m4": ("arm_dsp", 3656), "cortex-m3": ("arm_thumb2", 620)}


def flash_table(rows):
    """Flash of each CPU's optimized variant against its reference (flash does not depend on shape),
    and its growth since issue 19 was filed."""
    by_cpu = {}
    for r in rows:
        by_cpu.setdefault(r["cpu"], {})[r["variant"]] = r["flash"]
    lines = ["| CPU | variant | flash B | reference flash B | added B | added B when issue 19 was filed "
             "| growth B (at most 1024) |", "|---|---|---:|---:|---:|---:|---:|"]
    for cpu, variants in by_cpu.items():
        ref = variants.get("reference")
        for v, f in variants.items():
            if v != "reference" and ref is not None:
                then = ISSUE19_ADDED.get(cpu)
                was = "%+d | %+d" % (then[1], f - ref - then[1]) if then and then[0] == v else "n/a | n/a"
                lines.append("| %s | %s | %d | %d | %+d | %s |" % (cpu, v, f, ref, f - ref, was))
    return "\n".join(lines)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser()
    p.add_argument("--qlstm", default=os.path.join(root, "build/tools/qlstm/qlstm"))
    p.add_argument("--variants", default="reference,default")
    p.add_argument("--cpus", default=",".join(CPUS))
    p.add_argument("--cmsis-nn-qlstm",
                   help="also measure the cmsis_nn variant with this qlstm (a build with the CMSIS-NN backend)")
    p.add_argument("--host", action="store_true",
                   help="also time the host kernel against torch fp32 (bench/host_vs_torch.py; Debian's python3-torch)")
    p.add_argument("--write", help="write the page (docs/performance.md)")
    a = p.parse_args()
    rows = measure(a.qlstm, a.cpus.split(","), a.variants.split(","))
    t = table(rows)
    print(t)
    summary = cycle_summary(rows, m55_split(a.qlstm) if "cortex-m55" in a.cpus.split(",") else None)
    print(summary)
    flash = FLASH.format(table=flash_table(rows))
    if a.write:
        # The runtime's flash per model comes from bench/emitted_firmware.py (firmware builds):
        # kept as it stands, after this page's own flash section.
        import fc_table
        kept = fc_table.carried_section(a.write, RUNTIME_FLASH_BEGIN, RUNTIME_FLASH_END)
        flash = flash.rstrip("\n") + "\n" + kept + "\n" if kept else flash
    gru_rows = measure(a.qlstm, a.cpus.split(","), a.variants.split(","), "gru")
    g = gru_table(rows, gru_rows)
    print(g)
    verdict = gru_verdict(rows, gru_rows)
    print(verdict)
    gru = GRU.format(table=g, flash=gru_flash_table(rows, gru_rows), analysis=GRU_ANALYSIS.format(verdict=verdict))
    rnn_rows = [r for cell in ("rnn", "rnn_relu")
                for r in measure(a.qlstm, a.cpus.split(","), a.variants.split(","), cell)]
    gru += RNN.format(tanh=gru_table(rows, [r for r in rnn_rows if r["cell"] == "rnn"], "RNN"),
                      relu=gru_table(rows, [r for r in rnn_rows if r["cell"] == "rnn_relu"], "RNN"))
    repeated = [r for r in measure(a.qlstm, a.cpus.split(","), ["default"], "lstm_repeated")]
    gru += REPEATED.format(table=repeated_table(rows, repeated))
    with tempfile.TemporaryDirectory(prefix="qlstm-whole-") as work:
        models = compile_whole_models(a.qlstm, root, work)
        whole_rows = measure_whole(a.qlstm, models, a.cpus.split(","), "default")
        upstream_whole, whole_at = CMSIS_NN_WHOLE, CMSIS_NN_WHOLE_AT
        if a.cmsis_nn_qlstm:
            whole_at = "commit " + commit(root)
            lstm_models = [m for m in models if m[0] not in CMSIS_NN_CANNOT]
            measured_whole = {}
            for r in measure_whole(a.cmsis_nn_qlstm, lstm_models, a.cpus.split(","), "cmsis_nn"):
                measured_whole.setdefault(r["model"], {})[r["cpu"]] = (r["instructions"], r["cycles"])
            print("CMSIS_NN_WHOLE = %r" % measured_whole, file=sys.stderr)
            upstream_whole = measured_whole
    whole = WHOLE.format(table=whole_table(whole_rows, upstream_whole),
                         at=whole_at if upstream_whole else "(not measured yet)")
    print(whole)
    upstream = ""
    if a.cmsis_nn_qlstm:
        upstream_rows = measure(a.cmsis_nn_qlstm, a.cpus.split(","), ["cmsis_nn"])
        measured = cycles_by_shape(upstream_rows)
        u = table(upstream_rows)  # the cycle ratio against CMSIS_NN_CYCLES: 1.000 while they are current
        print(u)
        print("CMSIS_NN_CYCLES = %r" % measured, file=sys.stderr)
        upstream = UPSTREAM.format(table=u)
    host = ""
    if a.host:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import host_vs_torch
        rows, blas, version = host_vs_torch.measure(a.qlstm)
        h = host_vs_torch.table(rows)
        print(h)
        host = HOST.format(table=h, torch=version, blas=", ".join(os.path.basename(b) for b in blas),
                           cpu=cpu_model())
    if a.write:
        command = "/usr/bin/python3 bench/target_table.py --host --write docs/performance.md"
        if a.cmsis_nn_qlstm:
            command += " --cmsis-nn-qlstm BUILD_WITH_CMSIS_NN/tools/qlstm/qlstm"
        if CMSIS_NN_CYCLES:
            cmsis_cycles = ("CMSIS-NN 99f736a6 built outside the repository with the project's toolchain file "
                            "(-O3) and run through the optional backend's `cmsis_nn` variant (its figure includes "
                            "qlstm's parameter validation and mapping, a few hundred instructions), counted at "
                            "commit %s" % CMSIS_NN_CYCLES_AT)
        else:
            cmsis_cycles = "not measured yet (n/a)"
        page = TEMPLATE.format(commit=commit(root), date=datetime.date.today().isoformat(), table=t,
                               command=command, flash=flash, gru=gru, whole=whole, upstream=upstream, host=host,
                               cmsis_cycles=cmsis_cycles, cycle_summary=summary)
        # The fully connected, 16x8 LSTM, pooling and elementwise sections need a CMSIS-NN build:
        # bench/fc_table.py, bench/s16_table.py, bench/pool_table.py and bench/elementwise_table.py
        # write them, kept as they stand.
        import elementwise_table
        import fc_table
        import pool_table
        import s16_table
        page += fc_table.carried_section(a.write)
        page += s16_table.carried_section(a.write)
        page += pool_table.carried_section(a.write)
        page += elementwise_table.carried_section(a.write)
        tmp = a.write + ".tmp"
        with open(tmp, "w") as f:
            f.write(page)
        os.replace(tmp, a.write)
        print("wrote " + a.write, file=sys.stderr)


RUNTIME_FLASH_BEGIN = "<!-- section kept from bench/emitted_firmware.py runs (bench/target_table.py carries it over) -->"
RUNTIME_FLASH_END = "<!-- end of the section kept from bench/emitted_firmware.py runs -->"

TEMPLATE = """# Performance

<!-- Generated by bench/target_table.py; edit the template there, not this page. -->

**The target figures are executed instructions, counted exactly by the project's QEMU plugin,
and estimated cycles, which the same plugin charges each executed instruction from the cores'
published timing tables** (docs/targets.md, "Estimated cycles": every figure, its source and what
the estimate leaves out). QEMU itself models no pipeline, so the cycles are an estimate: zero wait
states, no caches, no interrupts, refills and worst-case multiplies and divides as the tables give
them; the Cortex-M55's Helium instructions at two cycles (4 beats on a dual-beat core), less a cycle
where a memory instruction overlaps an arithmetic one, gathers and scatters at a cycle per element.
Neither is a time figure for a board, but the cycles weigh what the instruction count treats
alike: loads, multiplies on the M3, branches, `LDM`/`STM`, Helium beats and gathers.

Executed instructions of one stateless kernel call (a whole sequence), counted on the emulated
CPU by the project's QEMU plugin (`tools/qemu_icount`): the instructions between the firmware's
two marker calls the program runner makes around the op's kernel call (its hooks), exactly, and the same on every run. Each shape's model is a
float LSTM with PyTorch's default initialization, calibrated on standard-normal inputs (typical
scales), fed random standard-normal input; the device output is checked bit for bit against the
host simulation in the same run.

- **ratio to CMSIS-NN**: against `arm_lstm_unidirectional_s8` (CMSIS-NN 99f736a6, gcc 12.2, best
  of -O2/-O3, QEMU 7.2) as measured for issue 6; the M55 figure is with MVE, so the M55 without
  MVE has none. **goal**: the ratio issue 6 asks for.
- **est. cycles**, **cycles/MAC**: the counter's estimate for the same call on the CPU's core
  (`cortex-m55-nomve` is the M55 core without Helium). **cycle ratio to CMSIS-NN**: against the
  same estimate of CMSIS-NN's kernel on the same shape and CPU, {cmsis_cycles}. **cycle goal**:
  the cycle ratio issue 19 asks for.
- **flash B / static RAM B**: what the variant adds to a firmware: the linked size of a probe
  firmware holding only that variant (its code, the shared driver and validation, the 512-byte
  sigmoid table) minus one holding none (`targets/cortex-m/firmware/size_probe.cc`). The weights
  and biases are the model's, not counted here.
- **RAM/call B**: scratch plus the int16 cell state; the input and output buffers are the caller's.
  The optimized Arm variants also take stack: 512 bytes for a chunk's accumulators
  (`blocked::gate_chunked`: 2 x 64 int32; `arm_mve` 1,024 bytes, 2 x 128 int32), and `arm_dsp` another 1,024 bytes for x and h
  sign-extended to int16 pairs (`ExpandedOperand`, 2 x 512 bytes, vectors of up to 256 columns).

Measured at commit {commit}, {date}, with arm-none-eabi-gcc 12.2 (-O3) and QEMU 7.2.
Reproduce with `{command}` (after `cmake --build build`).

{table}

{cycle_summary}{flash}{gru}{whole}{upstream}{host}A single measurement: `qlstm bench --target cortex-m4 --shape B=1,T=49,I=10,H=64` (last line
`instructions: N`, before it `estimated cycles: C ...`); `--variant NAME` picks a variant, `--cell gru` measures a GRU of the shape,
`qlstm bench --shape ...` without `--target` times the host kernel.
"""

FLASH = """## Where flash grows

The code an optimized variant adds over the portable reference on the same CPU (the flash
columns above; the weights and biases are the same bytes in both, in the same layout):

{table}

- `arm_mve`: the dot products in assembly (v held in `q4`-`q7` over 32 columns, in `q3` up
  to 16, a tail-predicated loop between), the four-lane requantization and sigmoid/tanh in assembly,
  the cell and hidden updates in assembly with intrinsics around them.
- `arm_dsp`: the SMLAD loop, 32 columns per pass entered part-way, in two copies (x and h as
  int16 pairs, and as bytes for vectors longer than 256 columns), the expansion of v, the same
  assembly gate finish as `arm_thumb2` and its cell and hidden updates, each beside a folded one
  (a DSP firmware links `arm_thumb2` too).
- `arm_thumb2`: the byte-load MLA loop and the assembly gate finish, cell and hidden updates.

"""

WHOLE = """## Whole models

The bundled examples (`scripts/example.sh`) compiled into their whole programs and benchmarked
as one call on each emulated CPU (`qlstm bench MODEL --target CPU`, the model's own sequence
length, its output checked bit for bit against the host): `digits_lstm` (LSTM, then a Linear +
Softmax head on the last step), `digits_gru` (the same with an `nn.GRU`), `sunspots_lstm` (LSTM,
then a Linear head on every step). CMSIS-NN's column runs the same programs with the LSTM and
fully connected ops through the optional backend's `cmsis_nn` variants
(`arm_lstm_unidirectional_s8`, `arm_fully_connected_s8`); the softmax and the step selection are
qlstm's in both (the softmax has `arm_softmax_s8`'s arithmetic). CMSIS-NN has no GRU kernel.
CMSIS-NN's figures measured at {at}.

{table}
"""

GRU = """## The GRU against the LSTM at the same shapes

The same shapes, CPUs and variants as the table above, each as a GRU (`qlstm bench --cell gru`):
a float GRU with PyTorch's default initialization, its boundary ranges from the same min/max
observers over the same standard-normal calibration inputs, derived without a search
(docs/arithmetic.md §13), its device output checked bit for bit against the host in the same run.
MACs per step and batch row: LSTM 4H(I + H), GRU 3H(I + H). Issue 16 asks for GRU instructions
per MAC no higher than the LSTM's on Cortex-M55 (Helium) and Cortex-M4 (DSP), the `default`
rows of those CPUs (`arm_mve`, `arm_dsp`).

{table}

Kernel flash of each variant as a GRU (its size probe: the GRU variant and the LSTM gate stage
it runs r and z by, the driver and validation, the sigmoid table) against the same variant as an
LSTM:

{flash}

{analysis}
"""

RNN = """## The vanilla RNN against the LSTM at the same shapes

The same shapes, CPUs and variants, each as an `nn.RNN` (`qlstm bench --cell rnn`, `--cell rnn_relu`):
PyTorch's default initialization, min/max boundaries over the same calibration inputs, no search
(docs/arithmetic.md §23). MACs per step and batch row: LSTM 4H(I + H), RNN H(I + H). A step is one
LSTM gate stage and the GRU's output stage of the same variant, so per MAC it runs at the LSTM's
speed. ReLU's gate finish is the HardSigmoid line's (the unit line, docs/arithmetic.md §23): Helium
runs it in vector code, the other variants in the portable C++ finish after their dot products,
hence ReLU's higher figure per MAC there.

tanh:

{tanh}

ReLU:

{relu}

"""

REPEATED = """## A decoder's repeated input against a sequence

The same LSTM at the same shapes, CPUs and default variants, reading one input step at every step
(`qlstm bench --cell lstm_repeated`: an autoencoder's decoder, `input_repeated`, docs/arithmetic.md
§24) instead of a sequence: its input projection runs once per call (4H·I multiply-accumulates per
batch row, in portable C) and each step's gates read those accumulators instead of multiplying the
input. The figures are the LSTM op's alone (the bench's program selects the step first: a copy of
B·I bytes, counted apart). The saving grows with I / (I + H) and with T; on Helium the input
matmul it saves is already vector code, so a short batched call (`batch4`) spends more on the
portable projection than it saves. The outputs are bit-exact with the LSTM on the T copies (the
variant tester).

{table}

"""

GRU_ANALYSIS = """Where the GRU's instructions per MAC differ from the LSTM's (profiles by `qlstm bench --profile`):

- **The dot products** are the same blocks (`qlstm_arm_rows4_s8_*`) at the same cost per MAC
  (`kws` on Cortex-M4: 1.563 instructions per MAC in `qlstm_arm_rows4_s8_dspx` for both). Neither
  runs its recurrent matmul at the first step of a stateless call: the LSTM because a zero state
  contributes nothing, the GRU because its parameter block holds the new gate's recurrent
  accumulator at a zero state (`new_gate_zero_state_bias`, b_hn alone; docs/arithmetic.md §13,
  model format 6), so that step's recurrent part is a copy of it.
- **Per unit and step**, the GRU has three gate finishes and two elementwise stages: r and z by
  the LSTM's sigmoid finish, n by its own finish (the tanh finish with the reset product
  r * sat16(RQ(h part)) and its requantization between the recurrent part and the add), then the
  update and the output. On Thumb-2/DSP, when all three of the new gate's right shifts are at
  least 1, its finish is folded (`qlstm_arm_gru_new_gate_finish_fast_thumb2`: the x part by the
  LSTM's shared first pass, the reset products in a second pass, then the folded tanh finish's
  loop), and so are the update and the output (`qlstm_arm_gru_update_folded`,
  `qlstm_arm_gru_output_folded`); `arm_mve` runs the reset product in a first pass too
  (`qlstm_arm_gru_new_gate_finish_mve`) and the update with the output in one loop
  (`qlstm_arm_gru_update_output_mve`).
- **Once per call and per step**: each Arm GRU variant's whole call (`blocked/gru_chunked.h`)
  builds the three finishes and the update's and output's parameters before the first step, as the
  LSTM's does its four finishes; on `arm_dsp` a one-row call also sign-extends x and h once per
  step for r, z and n (`gate_chunked_over`, `prepare_once_per_step`), as the LSTM does for its four
  gates. The stages on their own (the variant tester, the device's variant-test) build them per
  stage call.
- The bar, from the table: {verdict}
- Per unit and step at `kws` (profiles): on Cortex-M55 the new gate's finish is 12.9 instructions
  (the LSTM's tanh finish 9.8) and the update with the output 6.2 (the LSTM's cell and hidden
  updates 6.0 + 8.5). On Cortex-M4 the new gate's folded finish is about 60 (48.3 in its own
  function, about 12 in the shared first pass), where the LSTM's folded tanh finish is 45.3; the
  folded update 18.1 and output 14.1 (the LSTM's folded cell and hidden updates 37.3 and 36.2).
- Each change is bit-exact with the reference (`variant_test`, the device's variant-test over
  each whole call and its stages, the golden vectors).
"""

UPSTREAM = """## CMSIS-NN through the backend, on the same counter

The `cmsis_nn` variant (the optional CMSIS-NN backend, docs/targets.md) runs the same calls
through `arm_lstm_unidirectional_s8` of a CMSIS-NN 99f736a6 built outside this repository with
the same toolchain (`-O3`). This checks the instrument: the ratio column compares our count of
upstream's kernel with issue 6's independent measurement of it. The few hundred instructions
more are qlstm's parameter validation and the field-by-field mapping; flash includes that
validation and the CMSIS-NN functions the call reaches.

{table}

"""

HOST = """## The host simulation against torch

The same bit-exact int8 kernel on the host (the variant chosen at run time), against
`torch.nn.LSTM` fp32 ({torch}, BLAS: {blas}), both on one thread, measured side by side in one
run by `bench/host_vs_torch.py` (median microseconds per sequence; {cpu}). Issue 6 asks for a
ratio of at least 3.

{table}

"""

if __name__ == "__main__":
    main()
