#!/usr/bin/python3
"""Executed instructions and estimated cycles of one pooling call, qlstm's pooling variant against CMSIS-NN's
arm_max_pool_s8 / arm_avgpool_s8 (docs/performance.md).

  /usr/bin/python3 bench/pool_table.py --targets BUILD/targets --plugin BUILD/tools/qemu_icount/libqlstm_icount.so
                   [--cpus cortex-m55,cortex-m33,cortex-m4,cortex-m3] [--write docs/performance.md]

BUILD is a build configured with the CMSIS-NN backend for the targets (docs/targets.md), its firmware
built. For every shape, kind and CPU it runs the firmware's `pool-bench` under QEMU with the
instruction counter, once with the best qlstm pooling variant of that CPU (the first of its list after
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

BEGIN = "<!-- section written by bench/pool_table.py -->"
END = "<!-- end of the section written by bench/pool_table.py -->"

# (what, H, W, C, KH, KW, stride, pad): sequences pooled over time (y.mean(dim=1) of T steps of H
# features: an image of T x 1 x H, a window of T x 1), and images as a CNN front end pools them.
SHAPES = [("over time, T=32 H=64", 32, 1, 64, 32, 1, 1, 0),
          ("over time, T=100 H=128", 100, 1, 128, 100, 1, 1, 0),
          ("over time, T=50 H=20", 50, 1, 20, 50, 1, 1, 0),
          ("16x16x16, 2x2 stride 2", 16, 16, 16, 2, 2, 2, 0),
          ("8x8x32, 3x3 stride 1 pad 1", 8, 8, 32, 3, 3, 1, 1)]
KINDS = ["max", "avg"]
CPUS = ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m3"]

SECTION = """{begin}
## The pooling op against CMSIS-NN

Executed instructions and estimated cycles of one pooling call (one image, no clamp; random int8
values, the same for both), counted and estimated as above: qlstm's pooling variant for the CPU (the
first of its list after `cmsis_nn`) against CMSIS-NN's `arm_max_pool_s8` / `arm_avgpool_s8` called
through the optional backend (the `cmsis_nn` pooling variant, `docs/targets.md`), both outputs checked
bit for bit against the reference in the same run. CMSIS-NN 99f736a6, built outside this repository
with the same toolchain; its counts include the backend's mapping of the parameters. A sequence
pooled over time (`y.mean(dim=1)`, `y.max(dim=1).values`) is the image T x 1 x H with a window of
T x 1, as the program runner calls it for a batch-major buffer.

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
        names = listed_variants(info, a.plugin, "pool")
        if "cmsis_nn" not in names:
            sys.exit("the %s firmware has no cmsis_nn pooling variant: configure the build with the CMSIS-NN "
                     "backend" % cpu)
        ours = names[names.index("cmsis_nn") + 1]
        for shape in SHAPES:
            for kind in KINDS:
                args = ["pool-bench", kind] + [str(v) for v in shape[1:]]
                q, qc = bench_count(info, a.plugin, args + [ours])
                c, cc = bench_count(info, a.plugin, args + ["cmsis_nn"])
                rows.append((shape[0], kind, cpu, ours, q, c, qc, cc))
    sys.exit(report_comparison(a, rows, ('shape', 'kind'), SECTION, BEGIN, END, "pool_table.py"))


if __name__ == "__main__":
    main()
