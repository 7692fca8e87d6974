#!/usr/bin/python3
"""Executed instructions and estimated cycles of one elementwise add or multiply call, qlstm's variant
against CMSIS-NN's arm_elementwise_add_s8 / arm_elementwise_mul_s8 (docs/performance.md).

  /usr/bin/python3 bench/elementwise_table.py --targets BUILD/targets --plugin BUILD/tools/qemu_icount/libqlstm_icount.so
                   [--cpus cortex-m55,cortex-m33,cortex-m4,cortex-m3] [--write docs/performance.md]

BUILD is a build configured with the CMSIS-NN backend for the targets (docs/targets.md), its firmware
built. For every length, kind and CPU it runs the firmware's `elementwise-bench` under QEMU with the
instruction counter, once with the best qlstm variant of that CPU (the first of its list after
"cmsis_nn") and once with "cmsis_nn", each checked bit for bit against the reference in the same run,
and prints a Markdown table. Exit status 1 if a call differs from the reference or qlstm's count or
cycle estimate exceeds CMSIS-NN's. With --write it puts the table, with the commit it was measured
at, in its own section of the page (bench/target_table.py carries it over when it rewrites the page).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fc_table import arguments, bench_count, listed_variants, report_comparison, target_info  # noqa: E402
from fc_table import carried_section as carried_section_of  # noqa: E402

BEGIN = "<!-- section written by bench/elementwise_table.py -->"
END = "<!-- end of the section written by bench/elementwise_table.py -->"

# (what, N): a residual sum or a product over every step of a sequence (T x H values), one step.
SHAPES = [("one step, H=64", 64),
          ("T=32 H=32", 1024),
          ("T=100 H=128", 12800),
          ("1000 values (odd tail)", 1000)]
KINDS = ["add", "add_equal", "mul"]  # add_equal: both operands at one scale (each term a shift)
CPUS = ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m3"]

SECTION = """{begin}
## The elementwise add and multiply against CMSIS-NN

Executed instructions and estimated cycles of one add or multiply call of N values (random int8
operands, no clamp, parameters as TFLite prepares them from random scales: the add's left shift 20
and its larger-scale operand at multiplier 2^30; `add` with the operands at different scales, as a
residual's layer output and input are, `add_equal` at one scale, where qlstm's terms are both
shifts; the same for both), counted and estimated as above:
qlstm's variant for the CPU (the first of its list after `cmsis_nn`) against CMSIS-NN's
`arm_elementwise_add_s8` / `arm_elementwise_mul_s8` called through the optional backend (the
`cmsis_nn` variants, `docs/targets.md`), both outputs checked bit for bit against the reference in
the same run. CMSIS-NN 99f736a6, built outside this repository with the same toolchain; its counts
include the backend's mapping of the parameters. A residual connection of a layer of H units over T
steps is one call of N = T x H.

{measured}

{table}
{end}
"""


def carried_section(page_path):
    """This script's section of the page as it stands ("" if none), for bench/target_table.py."""
    return carried_section_of(page_path, BEGIN, END)


def main():
    a = arguments(__doc__, CPUS).parse_args()
    rows = []
    for cpu in a.cpus.split(","):
        info = target_info(a.targets, cpu)
        for kind in KINDS:
            names = listed_variants(info, a.plugin, kind.split("_")[0])
            if "cmsis_nn" not in names:
                sys.exit("the %s firmware has no cmsis_nn %s variant: configure the build with the CMSIS-NN "
                         "backend" % (cpu, kind))
            ours = names[names.index("cmsis_nn") + 1]
            for what, n in SHAPES:
                args = ["elementwise-bench", kind, str(n)]
                q, qc = bench_count(info, a.plugin, args + [ours])
                c, cc = bench_count(info, a.plugin, args + ["cmsis_nn"])
                rows.append((what, kind, cpu, ours, q, c, qc, cc))
    sys.exit(report_comparison(a, rows, ('N', 'kind'), SECTION, BEGIN, END, "elementwise_table.py"))


if __name__ == "__main__":
    main()
