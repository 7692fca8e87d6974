#!/usr/bin/python3
"""Executed instructions and estimated cycles of one 16x8 LSTM call, qlstm's best 16x8 variant against
CMSIS-NN's arm_lstm_unidirectional_s16 (docs/performance.md).

  /usr/bin/python3 bench/s16_table.py --targets BUILD/targets --plugin BUILD/tools/qemu_icount/libqlstm_icount.so
                   [--cpus cortex-m55,cortex-m33,cortex-m4,cortex-m3] [--write docs/performance.md]

BUILD is a build configured with the CMSIS-NN backend for the targets (docs/targets.md:
QLSTM_CMSIS_NN_INCLUDE_DIR and QLSTM_CMSIS_NN_TARGET_LIBRARY), its firmware built. For every shape
of bench/target_table.py and every CPU it runs the firmware's `lstm-s16-bench` under QEMU with the
instruction counter (and its cycle estimate for the CPU's core, docs/targets.md), once with the
best qlstm 16x8 LSTM variant of that CPU (the first of its list after "cmsis_nn") and once with
"cmsis_nn", each checked bit for bit against the reference in the same run, and prints a Markdown
table with the ratios and issue 17's goals. Exit status 1 if a call differs from the reference
(nothing is written then). With --write it puts the table, with the commit it was measured at, in
its own section of the page (between the markers below; bench/target_table.py carries that
section over when it rewrites the page).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fc_table import arguments, bench_count, listed_variants, measured, target_info, write_section  # noqa: E402
from fc_table import carried_section as carried_section_of  # noqa: E402
from target_table import SHAPES  # noqa: E402

BEGIN = "<!-- section written by bench/s16_table.py -->"
END = "<!-- end of the section written by bench/s16_table.py -->"

CPUS = ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m3"]
# The instruction ratio to CMSIS-NN that issue 17 asks of the 16x8 LSTM (none for the others).
GOALS = {"cortex-m55": 0.60, "cortex-m4": 0.80}


def parse_shape(shape):
    """"B=1,T=49,I=10,H=64[,time_major]" -> (B, T, I, H, time_major)."""
    parts = shape.split(",")
    dims = dict(p.split("=") for p in parts if "=" in p)
    return int(dims["B"]), int(dims["T"]), int(dims["I"]), int(dims["H"]), "time_major" in parts


def count(info, plugin, shape, variant):
    b, t, i, h, time_major = parse_shape(shape)
    return bench_count(info, plugin, ["lstm-s16-bench", str(b), str(t), str(i), str(h), variant] +
                       (["time-major"] if time_major else []))


def macs(shape):
    b, t, i, h, _ = parse_shape(shape)
    return b * t * 4 * h * (i + h)


def summary(rows):
    """Per CPU: the range of the instruction ratio, and the goal met at how many shapes."""
    out = []
    for cpu in dict.fromkeys(r[1] for r in rows):
        mine = [r for r in rows if r[1] == cpu]
        ratios = [r[4] / r[5] for r in mine]
        text = "%s (`%s`) %.3f to %.3f" % (cpu, mine[0][2], min(ratios), max(ratios))
        goal = GOALS.get(cpu)
        if goal is not None:
            met = [r[0] for r, q in zip(mine, ratios) if q <= goal]
            text += " (goal <= %.2f met at %d of %d shapes%s)" % (
                goal, len(met), len(mine), "" if len(met) == len(mine) else
                "; not at " + ", ".join("`%s`" % r[0] for r, q in zip(mine, ratios) if q > goal))
        out.append(text)
    return "; ".join(out)


SECTION = """{begin}
## The 16x8 LSTM against CMSIS-NN

Executed instructions and estimated cycles of one 16x8 LSTM call (`qlstm_lstm_s16`: int16 input,
output and hidden state, int8 weights, int64 effective biases; docs/arithmetic.md §14) at the
shapes of the int8 table, counted and estimated as above: qlstm's 16x8 variant for the CPU (the
first of its list after `cmsis_nn`; the Cortex-M3 has no DSP, so `scalar`) against CMSIS-NN's
`arm_lstm_unidirectional_s16` called through the optional backend (the `cmsis_nn` 16x8 LSTM
variant, `docs/targets.md`), both checked bit for bit against the reference in the same run. One
stateless forward call writing every step, random parameters and input of the device
variant-test's typical regime (the firmware's `lstm-s16-bench`, the same for both). Both counts
include qlstm's parameter checks (`run_lstm_s16`), CMSIS-NN's also the backend's mapping of the
parameters. CMSIS-NN 99f736a6, built outside this repository with the same toolchain (`-O3`).
MACs per call: 4 B T H (I + H). **goal**: the instruction ratio issue 17 asks for (Cortex-M55 and
Cortex-M4).

{measured}

{table}

**Instructions against CMSIS-NN's, per CPU: {summary}.**

Where the instructions go (the counter's `profile=on` at `kws`, with the four-row block loops in
assembly, `arm/s16_dots_arm.S`): on Cortex-M4 (`arm_dsp`) the block loop takes 1.38M of 2.87M
instructions (1.49 per MAC: SXTB16 + SMLAD, two quads a pass), the gate finish 0.74M (about 59 a
row: two RQ64, the saturating adds, the table activation in compiled C), the C around the loop
0.42M (the last n % 4 columns, at I = 10 two, added into the 32-bit sums product by product, the
int64 bias, the x pairs), the hidden update 0.19M (the reference's, per element) and the cell
update 0.14M. On Cortex-M55 (`arm_mve`) the gate finish is now the larger part, 0.66M of 1.24M
(about 52 a row), the block loop 0.49M (0.53 per MAC: 32-bit VMLADAVA sums in a tail-predicated
loop, so at I = 10 a block is two passes, one of them predicated), the hidden update 0.05M. The
next steps: the finish (RQ64 and the table lookup) for four rows at a time in Helium lanes or in
assembly, and on the DSP the tail columns and the int64 bias inside the assembly block loop.
{end}
"""


def carried_section(page_path):
    """This script's section of the page as it stands ("" if none), for bench/target_table.py."""
    return carried_section_of(page_path, BEGIN, END)


def main():
    p = arguments(__doc__, CPUS)
    p.add_argument("--shapes", help="only these shapes of bench/target_table.py (comma-separated names)")
    a = p.parse_args()
    shapes = [s for s in SHAPES if not a.shapes or s[0] in a.shapes.split(",")]
    rows = []
    for cpu in a.cpus.split(","):
        info = target_info(a.targets, cpu)
        names = listed_variants(info, a.plugin, "lstm_s16")
        if "cmsis_nn" not in names:
            sys.exit("the %s firmware has no cmsis_nn 16x8 LSTM variant: configure the build with the CMSIS-NN "
                     "backend" % cpu)
        ours = names[names.index("cmsis_nn") + 1]
        for name, shape in shapes:
            q, qc = count(info, a.plugin, shape, ours)
            c, cc = count(info, a.plugin, shape, "cmsis_nn")
            rows.append((name, cpu, ours, shape, q, c, qc, cc))
            print("%-7s %-11s %-10s %12d %12d %.3f" % (name, cpu, ours, q, c, q / c), file=sys.stderr)
    lines = ["| shape | CPU | qlstm variant | qlstm instructions | CMSIS-NN instructions | ratio | goal "
             "| qlstm est. cycles | CMSIS-NN est. cycles | cycle ratio | qlstm instr/MAC | CMSIS-NN instr/MAC |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, cpu, ours, shape, q, c, qc, cc in rows:
        goal = GOALS.get(cpu)
        lines.append("| %s | %s | %s | %s | %s | %.3f | %s | %s | %s | %.3f | %.3f | %.3f |" % (
            name, cpu, ours, format(q, ","), format(c, ","), q / c, "<= %.2f" % goal if goal else "",
            format(qc, ","), format(cc, ","), qc / cc, q / macs(shape), c / macs(shape)))
    table = "\n".join(lines)
    print(table)
    text = summary(rows)
    print(text)
    if a.write:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        section = SECTION.format(begin=BEGIN, end=END, measured=measured(root, "s16_table.py"), table=table,
                                 summary=text)
        write_section(a.write, section, BEGIN, END)
        print("wrote its section of " + a.write, file=sys.stderr)


if __name__ == "__main__":
    main()
