#!/usr/bin/python3
"""Executed instructions and estimated cycles of one fully connected call, qlstm's FC variant against CMSIS-NN's
arm_fully_connected_s8 / arm_fully_connected_per_channel_s8 (docs/performance.md).

  /usr/bin/python3 bench/fc_table.py --targets BUILD/targets --plugin BUILD/tools/qemu_icount/libqlstm_icount.so
                   [--cpus cortex-m55,cortex-m33,cortex-m4,cortex-m3] [--write docs/performance.md]

BUILD is a build configured with the CMSIS-NN backend for the targets (docs/targets.md:
QLSTM_CMSIS_NN_INCLUDE_DIR and QLSTM_CMSIS_NN_TARGET_LIBRARY), its firmware built
(`cmake --build BUILD --target firmware_cortex-m55 ...`). For every shape, quantization and CPU it
runs the firmware's `fc-bench` under QEMU with the instruction counter (and its cycle estimate for
the CPU's core, docs/targets.md), once with the best qlstm
FC variant of that CPU (the first of its list after "cmsis_nn") and once with "cmsis_nn", each
checked bit for bit against the reference in the same run, and prints a Markdown table. Exit
status 1 if a call differs from the reference or qlstm's count exceeds CMSIS-NN's. With --write
it puts the table, with the commit it was measured at, in its own section of the page (between
the markers below; bench/target_table.py carries that section over when it rewrites the page).
"""
import datetime
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from target_table import commit  # noqa: E402

BEGIN = "<!-- section written by bench/fc_table.py -->"
END = "<!-- end of the section written by bench/fc_table.py -->"

SHAPES = [(32, 10), (64, 64), (128, 10), (256, 32)]  # I x O, one row
QUANTS = ["per-channel", "per-tensor"]
CPUS = ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m3"]


def target_info(targets, cpu):
    info = {"dir": os.path.join(targets, cpu)}
    with open(os.path.join(info["dir"], "target.txt")) as f:
        for line in f:
            key, _, value = line.strip().partition(" ")
            info[key] = value
    return info


def qemu(info, plugin, args, icount_out=None):
    # cpu=: the counter's cycle estimate for the core (cortex-m55-nomve is the M55).
    cmd = ["qemu-system-arm", "-M", info["qemu_machine"], "-cpu", info["qemu_cpu"], "-nographic", "-monitor",
           "none", "-serial", "none", "-semihosting-config",
           "enable=on,target=native," + ",".join("arg=" + a for a in ["fw"] + args),
           "-kernel", os.path.join(info["dir"], "qlstm_device.elf")]
    if icount_out:
        cmd += ["-plugin", plugin + ",out=" + icount_out + ",cpu=" + info["cpu"]]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return p.returncode, p.stdout


def listed_variants(info, plugin, prefix):
    """The variants the firmware lists as "PREFIX NAME" (`qlstm_device variants`), in its order."""
    rc, out = qemu(info, plugin, ["variants"])
    if rc != 0:
        sys.exit("the %s firmware failed to list its variants:\n%s" % (info["cpu"], out))
    return [line.split()[1] for line in out.splitlines() if line.startswith(prefix + " ")]


def fc_variants(info, plugin):
    return listed_variants(info, plugin, "fc")


def bench_count(info, plugin, args):
    """Runs a device bench subcommand (ARGS, its first the subcommand) under the counter: its one
    instruction count and cycle estimate, after it said the call was bit-exact with the reference."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "icount.txt")
        rc, out = qemu(info, plugin, args, path)
        if rc != 0 or "bit-exact with reference" not in out:
            sys.exit("FAIL %s on %s (exit status %d):\n%s" % (" ".join(args), info["cpu"], rc, out))
        with open(path) as f:
            lines = f.read().splitlines()
        counts = [int(line.split()[1]) for line in lines if line.startswith("instructions ")]
        cycles = [int(line.split()[1]) for line in lines if line.startswith("cycles ")]
    if len(counts) != 1 or len(cycles) != 1:
        sys.exit("expected one instruction count and one cycle estimate from %s, got %s" % (args[0], lines))
    return counts[0], cycles[0]


def count(info, plugin, shape, quant, variant):
    return bench_count(info, plugin, ["fc-bench", str(shape[0]), str(shape[1]), quant, variant])


# The measurement's commit and how to reproduce it, in this script's and bench/s16_table.py's sections.
MEASURED = """Measured at commit {commit}, {date}, with arm-none-eabi-gcc 12.2 and QEMU 7.2. To reproduce,
build CMSIS-NN for each CPU and a qlstm build pointed at it (`docs/targets.md`), then:

```
cmake --build BUILD --target qlstm_icount firmware_cortex-m55 firmware_cortex-m33 firmware_cortex-m4 firmware_cortex-m3
/usr/bin/python3 bench/{script} --targets BUILD/targets \\
  --plugin BUILD/tools/qemu_icount/libqlstm_icount.so --write docs/performance.md
```"""


def measured(root, script):
    """MEASURED for bench/SCRIPT at the commit of the tree at root, today."""
    return MEASURED.format(commit=commit(root), date=datetime.date.today().isoformat(), script=script)


SECTION = """{begin}
## The fully connected op against CMSIS-NN

Executed instructions and estimated cycles of one fully connected call (one input row, no clamp;
random int8 weights and inputs, the same for both), counted and estimated as above: qlstm's FC variant for the CPU (the first of
its list after `cmsis_nn`) against CMSIS-NN's `arm_fully_connected_per_channel_s8` / `arm_fully_connected_s8`
called through the optional backend (the `cmsis_nn` FC variant, `docs/targets.md`), both outputs
checked bit for bit against the reference in the same run. CMSIS-NN 99f736a6, built outside this
repository with the same toolchain (`-O3`); its counts include the backend's mapping of the
parameters (about 50 instructions). Neither side sums weight rows per call: qlstm's effective
bias is computed at compile time, and upstream's Helium code reads it as its precomputed kernel
sums (what TFLite Micro computes once, at prepare time). Stack: the Arm FC variants keep a chunk's
accumulators (36 int32, 144 bytes; `blocked/fc_rows.h`), and `arm_dsp` also the input row as
int16 pairs (512 bytes, rows of up to 256 values; longer rows are read as bytes).

{measured}

{table}
{end}
"""


def write_section(page_path, section, begin=BEGIN, end=END):
    """Replaces a script's section of the page (this one's by default), or appends it."""
    with open(page_path) as f:
        page = f.read()
    if begin in page and end in page:
        head, rest = page.split(begin, 1)
        page = head + section.rstrip("\n") + rest.split(end, 1)[1]
    else:
        page = page.rstrip("\n") + "\n\n" + section
    tmp = page_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, page_path)


def carried_section(page_path, begin=BEGIN, end=END):
    """A script's section of the page as it stands (this one's by default; "" if none), for
    bench/target_table.py."""
    try:
        with open(page_path) as f:
            page = f.read()
    except OSError:
        return ""
    if begin not in page or end not in page:
        return ""
    return "\n" + begin + page.split(begin, 1)[1].split(end, 1)[0] + end + "\n"


def arguments(doc, cpus):
    """The options of this script and bench/s16_table.py: the targets, the counter, the CPUs, --write."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", required=True, help="BUILD/targets of a build with the CMSIS-NN backend")
    p.add_argument("--plugin", required=True, help="the instruction counter, libqlstm_icount.so")
    p.add_argument("--cpus", default=",".join(cpus))
    p.add_argument("--write", help="write the table into its section of the page (docs/performance.md)")
    return p


def report_comparison(a, rows, columns, section, begin, end, script):
    """The end of bench/pool_table.py and bench/elementwise_table.py: rows of (what, kind, CPU,
    qlstm variant, qlstm count, CMSIS-NN count, qlstm cycles, CMSIS-NN cycles) as a Markdown table
    (columns: the names of the first two), a FAIL line per row above CMSIS-NN in either, and with
    --write, none above, the section (its {measured} and {table} filled) in the page. Returns the
    exit status."""
    worse = [r for r in rows if r[4] > r[5] or r[6] > r[7]]
    lines = ["| %s | %s | CPU | qlstm variant | qlstm | CMSIS-NN | ratio | qlstm est. cycles "
             "| CMSIS-NN est. cycles | cycle ratio |" % columns,
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for what, kind, cpu, ours, q, c, qc, cc in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %.2f |" % (
            what, kind, cpu, ours, format(q, ","), format(c, ","), q / c, format(qc, ","), format(cc, ","), qc / cc))
    table = "\n".join(lines)
    print(table)
    for what, kind, cpu, ours, q, c, qc, cc in worse:
        print("FAIL %s %s on %s: %s takes %d instructions (%d cycles), CMSIS-NN %d (%d)" % (
            what, kind, cpu, ours, q, qc, c, cc))
    if a.write and not worse:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        write_section(a.write, section.format(begin=begin, end=end, measured=measured(root, script), table=table),
                      begin, end)
        print("wrote its section of " + a.write, file=sys.stderr)
    return 1 if worse else 0


def main():
    a = arguments(__doc__, CPUS).parse_args()
    rows, worse = [], []
    for cpu in a.cpus.split(","):
        info = target_info(a.targets, cpu)
        names = fc_variants(info, a.plugin)
        if "cmsis_nn" not in names:
            sys.exit("the %s firmware has no cmsis_nn FC variant: configure the build with the CMSIS-NN backend" % cpu)
        ours = names[names.index("cmsis_nn") + 1]
        for shape in SHAPES:
            for quant in QUANTS:
                q, qc = count(info, a.plugin, shape, quant, ours)
                c, cc = count(info, a.plugin, shape, quant, "cmsis_nn")
                rows.append((shape, quant, cpu, ours, q, c, qc, cc))
                if q > c:
                    worse.append(rows[-1])
    lines = ["| I x O | quantization | CPU | qlstm variant | qlstm | CMSIS-NN | ratio | qlstm est. cycles "
             "| CMSIS-NN est. cycles | cycle ratio |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (i, o), quant, cpu, ours, q, c, qc, cc in rows:
        lines.append("| %d x %d | %s | %s | %s | %s | %s | %.2f | %s | %s | %.2f |" % (
            i, o, quant, cpu, ours, format(q, ","), format(c, ","), q / c, format(qc, ","), format(cc, ","), qc / cc))
    table = "\n".join(lines)
    print(table)
    for (i, o), quant, cpu, ours, q, c, _, _ in worse:
        print("FAIL %d x %d %s on %s: %s takes %d instructions, CMSIS-NN %d" % (i, o, quant, cpu, ours, q, c))
    if a.write and not worse:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        write_section(a.write, SECTION.format(begin=BEGIN, end=END, measured=measured(root, "fc_table.py"),
                                              table=table))
        print("wrote its section of " + a.write, file=sys.stderr)
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
