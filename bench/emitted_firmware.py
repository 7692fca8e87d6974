#!/usr/bin/python3
"""Executed instructions, estimated cycles and flash bytes of a compiled model's emitted firmware source.

  /usr/bin/python3 bench/emitted_firmware.py --qlstm build/tools/qlstm/qlstm --build build
                   [--cpu cortex-m4,cortex-m55] [--out markdown|json] [--work DIR] [--source REPO]

For each model (the bundled examples/sunspots model, "kws": a random torch nn.LSTM(10, 64,
batch_first=True) exported to ONNX here with a fixed seed, B=1, T=49, I=10, H=64, and any whole
model given with --model NAME=ONNX,CALIBRATION,TEST: layers around the LSTM, a last-step head) this
  - compiles it with `qlstm compile` (firmware batch 1, --max-time-steps the test sequences' T),
  - builds examples/firmware with its NAME_model.cc for each CPU (the same cmake invocation as
    tests/target/device_tests.py emitted),
  - runs the firmware under qemu-system-arm with the instruction counter
    (build/tools/qemu_icount/libqlstm_icount.so, with the CPU's cycle model: docs/targets.md,
    "Estimated cycles"; cortex-m55-nomve is the M55 core) on the first test sequence, quantized with the
    model's input scale and zero point: one NAME_run call over T steps, which examples/firmware/main.c
    brackets with qlstm_bench_begin() / qlstm_bench_end(),
  - checks the firmware's output equals `qlstm run` on the host,
  - reads the flash bytes: `arm-none-eabi-size` text + data of the ELF, and from the linker map
    the bytes kept from NAME_model.cc (code and const data) and from the runtime library, the
    runtime's split by component (RUNTIME_COMPONENTS: GRU, 16x8, LSTM s8, FC s8, ...) by archive member.
The table goes to stdout (progress to stderr). Any failing step stops the script with that
command's output. Needs numpy, and torch + onnx for the kws model (Debian's /usr/bin/python3 here).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CPUS = ["cortex-m4", "cortex-m55"]
SEED = 13
KWS = {"batch": 1, "time_steps": 49, "input_size": 10, "hidden_size": 64}


def fail(msg):
    sys.exit("emitted_firmware.py: FAIL: " + msg)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, what, timeout=1800, **kw):
    """Runs cmd; on a non-zero exit status (or a timeout) stops with its output."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        fail("%s: timed out after %d s: %s\n%s" % (what, timeout, " ".join(cmd), e.stdout or ""))
    except OSError as e:
        fail("%s: cannot run %s: %s" % (what, cmd[0], e))
    if p.returncode != 0:
        fail("%s: exit status %d: %s\n%s" % (what, p.returncode, " ".join(cmd), p.stdout))
    return p.stdout


def make_kws(work):
    """A random nn.LSTM(10, 64, batch_first=True) as ONNX (the output sequence only), and random
    calibration and test sequences [N, 49, 10] float32; everything from fixed seeds."""
    import torch
    from torch import nn

    class LstmOnly(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(KWS["input_size"], KWS["hidden_size"], batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    torch.manual_seed(SEED)
    model = LstmOnly().eval()
    x = torch.zeros(KWS["batch"], KWS["time_steps"], KWS["input_size"])
    onnx_path = os.path.join(work, "kws_lstm.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 1.13's shape-inference notes on an LSTM export
        torch.onnx.export(model, x, onnx_path, opset_version=14, input_names=["x"], output_names=["hidden"])
    rng = np.random.default_rng(SEED)
    cal = os.path.join(work, "kws_calibration.npy")
    test = os.path.join(work, "kws_test.npy")
    np.save(cal, rng.standard_normal((64, KWS["time_steps"], KWS["input_size"])).astype(np.float32))
    np.save(test, rng.standard_normal((8, KWS["time_steps"], KWS["input_size"])).astype(np.float32))
    return onnx_path, cal, test


def models(source, work, extra):
    sun = os.path.join(source, "examples/sunspots")
    kws = make_kws(work)
    return [
        ("sunspots", os.path.join(sun, "sunspots_lstm.onnx"), os.path.join(sun, "calibration.npy"),
         os.path.join(sun, "test.npy")),
        ("kws", kws[0], kws[1], kws[2]),
    ] + extra


def parse_model(text):
    """--model NAME=ONNX,CALIBRATION,TEST (each .npy batch-first float32 [N, T, I])."""
    name, _, paths = text.partition("=")
    parts = paths.split(",")
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) or len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError("'%s' is not NAME=ONNX,CALIBRATION,TEST (NAME a C identifier)" % text)
    for path in parts:
        if not os.path.isfile(path):
            raise argparse.ArgumentTypeError("--model %s: no file %s" % (name, path))
    return (name,) + tuple(os.path.abspath(x) for x in parts)


def target_info(build, cpu):
    """The QEMU board and CPU of a target, as the host build wrote them (build/targets/CPU/target.txt)."""
    path = os.path.join(build, "targets", cpu, "target.txt")
    if not os.path.isfile(path):
        fail("no %s: is %s a host build with the firmware for %s?" % (path, build, cpu))
    info = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            info[k] = v
    for k in ("qemu_machine", "qemu_cpu"):
        if not info.get(k):
            fail("%s has no %s" % (path, k))
    return info


def quantize(x, scale, zero_point):
    return np.clip(np.round(x / scale) + zero_point, -128, 127).astype(np.int8)


# A line of the linker map's memory map: an input section, its address, size and object file; a
# long section name puts the rest on the next line.
MAP_LINE = re.compile(r"^ (\.\S+)(?:\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S.*))?$")
MAP_REST = re.compile(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S.*)$")
FLASH_OUTPUTS = (".text", ".ARM.exidx", ".preinit_array", ".init_array", ".fini_array", ".data")


def map_sections(path):
    """(output section, input section, size, object file) of every input section the link kept."""
    with open(path) as f:
        lines = f.read().split("\n")
    try:
        start = lines.index("Linker script and memory map")
    except ValueError:
        fail("%s: no 'Linker script and memory map'" % path)
    out, rows, pending = None, [], None
    for line in lines[start + 1:]:
        m = re.match(r"^(\.\S+)", line)
        if m:
            out, pending = m.group(1), None
            continue
        if pending is not None:
            r = MAP_REST.match(line)
            if r:
                rows.append((out, pending, int(r.group(2), 16), r.group(3).strip()))
            pending = None
            continue
        m = MAP_LINE.match(line)
        if not m or out is None:
            continue
        if m.group(2) is None:
            pending = m.group(1)
        else:
            rows.append((out, m.group(1), int(m.group(3), 16), m.group(4).strip()))
    return rows


# The runtime library's archive members by component: the first pattern a member matches names it.
RUNTIME_COMPONENTS = [
    ("gru", r"^gru_s8"),                       # the GRU: driver, reference and every variant
    ("s16", r"(_s16|^s16_|^requantize)"),      # 16x8: LSTM, FC, softmax, their variants, requantization
    ("lstm_s8", r"^(lstm_s8|sigmoid_table)"),  # the int8 LSTM (the sigmoid table: LSTM and GRU gates)
    ("dots_s8", r"^dot4_s8_arm"),              # the Arm int8 dot products (LSTM, FC and GRU variants)
    ("fc_s8", r"^fc_s8"),
    ("softmax_s8", r"^softmax_s8"),
    ("table_s8", r"^table_s8"),
    ("runner", r"^(program_s8|program_op|variants|status)\."),  # the program runner, the variant lists, status names
    # The kinds the bundled examples do not use: a table shows each only where a model links it.
    ("pool_s8", r"^pool_s8"),
    ("log_softmax_s8", r"^log_softmax_s8"),
    ("elementwise_s8", r"^elementwise_s8"),
]
# The components every table shows (the others only where a row has bytes of them).
ALWAYS_SHOWN = ["gru", "s16", "lstm_s8", "dots_s8", "fc_s8", "softmax_s8", "table_s8", "runner"]

# Each kind's handler (runtime/src/<kind>/<kind>_op.cc: its part of the program runner) counts with
# the runner, as when program_s8.cc held them all, whichever kind's name its member starts with.
HANDLER_MEMBER = r"_op\.cc\."


# Input sections that belong to another component than their member's: "member[section]" in the
# runtime's members. qlstm_element_bytes (a buffer element's size, for the runner and the
# requantization) is defined beside the requantization.
SECTION_COMPONENTS = {".text.qlstm_element_bytes": "runner"}


def runtime_components(members):
    """The runtime's flash bytes per component (RUNTIME_COMPONENTS) from its bytes per archive member."""
    parts = {name: 0 for name, _ in RUNTIME_COMPONENTS}
    for member, size in members.items():
        section = re.search(r"\[(.*)\]$", member)
        if section:
            name = SECTION_COMPONENTS[section.group(1)]
        elif re.search(HANDLER_MEMBER, member):
            name = "runner"
        else:
            name = next((n for n, pattern in RUNTIME_COMPONENTS if re.search(pattern, member)), None)
        if name is None:
            fail("runtime member %s is in no component of RUNTIME_COMPONENTS" % member)
        parts[name] += size
    return parts


def flash_parts(map_path, model_source):
    """Flash bytes kept from the model's NAME_model.cc (code, const data) and from each member of the
    runtime library (all, and code: its .text* input sections)."""
    model = {"code": 0, "const": 0}
    runtime, runtime_code = {}, {}
    obj = os.path.basename(model_source) + ".obj"
    for out, section, size, origin in map_sections(map_path):
        if out not in FLASH_OUTPUTS or size == 0:
            continue
        if origin.endswith("/" + obj) or origin == obj:
            model["code" if section.startswith(".text") else "const"] += size
        else:
            m = re.search(r"libqlstm_runtime\.a\((.*)\)$", origin)
            if m:
                member = m.group(1) + ("[%s]" % section if section in SECTION_COMPONENTS else "")
                runtime[member] = runtime.get(member, 0) + size
                runtime_code[member] = runtime_code.get(member, 0) + (size if section.startswith(".text") else 0)
    if model["code"] == 0 or model["const"] == 0:
        fail("%s: found no code or no const data from %s (the map's format changed?)" % (map_path, obj))
    if not runtime:
        fail("%s: found nothing from libqlstm_runtime.a (the map's format changed?)" % map_path)
    return model, runtime, runtime_code


def elf_size(elf):
    """text, data, bss as arm-none-eabi-size prints them (Berkeley format)."""
    out = run(["arm-none-eabi-size", elf], "arm-none-eabi-size").splitlines()
    cols = out[1].split() if len(out) == 2 else []
    if len(cols) < 3 or not all(c.isdigit() for c in cols[:3]) or out[0].split()[:3] != ["text", "data", "bss"]:
        fail("unexpected output of arm-none-eabi-size %s:\n%s" % (elf, "\n".join(out)))
    return int(cols[0]), int(cols[1]), int(cols[2])


def measure(a, work):
    plugin = os.path.join(a.build, "tools/qemu_icount/libqlstm_icount.so")
    if not os.path.isfile(plugin):
        fail("no instruction counter plugin %s (build the host build first)" % plugin)
    toolchain = os.path.join(a.source, "targets/cortex-m/toolchain-arm-none-eabi.cmake")
    infos = {cpu: target_info(a.build, cpu) for cpu in a.cpu}
    rows = []
    for name, onnx_path, cal, test in models(a.source, work, a.model):
        mdir = os.path.join(work, name)
        os.makedirs(mdir)
        xs = np.load(test)
        if xs.ndim != 3:
            fail("%s: test data %s is not [N, T, I]" % (test, xs.shape))
        steps = xs.shape[1]
        log("%s: qlstm compile" % name)
        # --max-time-steps: a whole model may keep a sequence between two ops (a per-step head).
        run([a.qlstm, "compile", onnx_path, "--calibration", cal, "-o", mdir, "--name", name,
             "--max-time-steps", str(steps)], "qlstm compile %s" % name)
        with open(os.path.join(mdir, name + "_report.json")) as f:
            report = json.load(f)
        batch = report["firmware_batch"]
        if not report["layout"].startswith("batch_first"):
            fail("%s: layout %s; this script feeds batch-first test sequences" % (name, report["layout"]))
        if xs.shape[0] < batch or xs.shape[2] != report["input_size"]:
            fail("%s: test data %s is not [N >= %d, T, %d]" % (test, xs.shape, batch, report["input_size"]))
        # A last-step head (one output row per sequence) or a per-step output.
        per_step = report.get("output", {}).get("steps") != "one per batch row"
        x8 = quantize(xs[:batch], report["input"]["scale"], report["input"]["zero_point"])
        xin, yhost = os.path.join(mdir, "x.npy"), os.path.join(mdir, "y_host.npy")
        np.save(xin, x8)
        raw_in = os.path.join(mdir, "x.bin")
        x8.tofile(raw_in)
        run([a.qlstm, "run", os.path.join(mdir, name + ".qlstm"), "--input", xin, "--output", yhost],
            "qlstm run %s" % name)
        want = np.load(yhost).tobytes()
        for cpu in a.cpu:
            info = infos[cpu]
            log("%s on %s: build examples/firmware" % (name, cpu))
            fw = os.path.join(mdir, "firmware-" + cpu)
            run(["cmake", "-S", os.path.join(a.source, "examples/firmware"), "-B", fw, "-G", "Ninja",
                 "-DCMAKE_TOOLCHAIN_FILE=" + toolchain, "-DQLSTM_CPU=" + cpu,
                 "-DQLSTM_MODEL_DIR=" + mdir, "-DQLSTM_MODEL_NAME=" + name], "configure examples/firmware")
            run(["cmake", "--build", fw], "build examples/firmware for %s on %s" % (name, cpu))
            elf = os.path.join(fw, "model_firmware.elf")
            raw_out, counts = os.path.join(fw, "y_device.bin"), os.path.join(fw, "counts.txt")
            log("%s on %s: run under QEMU with the instruction counter" % (name, cpu))
            cmd = ["qemu-system-arm", "-M", info["qemu_machine"], "-cpu", info["qemu_cpu"], "-nographic",
                   "-monitor", "none", "-serial", "none", "-semihosting-config",
                   "enable=on,target=native," + ",".join("arg=" + x.replace(",", ",,") for x in ["fw", raw_in, raw_out]),
                   "-kernel", elf, "-plugin", "%s,out=%s,cpu=%s" % (plugin.replace(",", ",,"), counts.replace(",", ",,"),
                                                                    info.get("cpu", cpu))]
            out = run(cmd, "%s firmware on %s under QEMU" % (name, cpu))
            if not re.search(r"^%d time steps$" % steps, out, re.M):
                fail("%s on %s: the firmware did not report %d time steps:\n%s" % (name, cpu, steps, out))
            with open(raw_out, "rb") as f:
                if f.read() != want:
                    fail("%s on %s: the firmware's output differs from qlstm run on the host" % (name, cpu))
            with open(counts) as f:
                counted = f.read().split()
            if (len(counted) != 4 or counted[0] != "instructions" or counted[2] != "cycles" or
                    not counted[1].isdigit() or not counted[3].isdigit()):
                fail("%s on %s: expected one 'instructions N' and 'cycles C' between the markers, the counter "
                     "wrote %r (does examples/firmware/main.c call qlstm_bench_begin/qlstm_bench_end around "
                     "NAME_run?)" % (name, cpu, counted))
            text, data, bss = elf_size(elf)
            model, runtime, runtime_code = flash_parts(os.path.join(fw, "model_firmware.map"),
                                         os.path.join(mdir, name + "_model.cc"))
            rows.append({
                "model": name, "cpu": cpu, "batch": batch, "time_steps": steps,
                "input_size": report["input_size"], "hidden_size": report["hidden_size"],
                "output_size": report["output_size"], "output_per_step": per_step,
                "ops": len(report.get("op_table", report["ops"])), "instructions": int(counted[1]),
                "cycles": int(counted[3]),
                "flash_bytes": text + data, "text_bytes": text, "data_bytes": data, "bss_bytes": bss,
                "model_code_bytes": model["code"], "model_const_bytes": model["const"],
                "runtime_bytes": sum(runtime.values()), "runtime_members": runtime,
                "runtime_code_bytes": sum(runtime_code.values()), "runtime_components": runtime_components(runtime),
                "runtime_component_code": runtime_components(runtime_code),
            })
            log("%s on %s: %d instructions, %d estimated cycles, %d flash bytes" % (
                name, cpu, int(counted[1]), int(counted[3]), text + data))
    return rows


def provenance(source):
    def git(*args):
        p = subprocess.run(["git", "-C", source] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        return p.stdout.strip() if p.returncode == 0 else "?"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    first = lambda cmd: run(cmd, cmd[0]).splitlines()[0]
    return {"commit": git("rev-parse", "HEAD") + (" (with uncommitted changes)" if dirty not in ("", "?") else ""),
            "subject": git("log", "-1", "--format=%s"),
            "qemu": first(["qemu-system-arm", "--version"]),
            "gcc": first(["arm-none-eabi-gcc", "--version"])}


def markdown(rows, prov):
    lines = ["Emitted firmware (examples/firmware), one NAME_run call; measured at %s (%s)" % (
                 prov["commit"], prov["subject"]),
             "%s; %s" % (prov["qemu"], prov["gcc"]), "",
             "| model | cpu | B x T x I -> output | ops | instructions | est. cycles | flash bytes (text+data) | model code "
             "| model const | runtime lib | rest |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rest = r["flash_bytes"] - r["model_code_bytes"] - r["model_const_bytes"] - r["runtime_bytes"]
        lines.append("| %s | %s | %d x %d x %d -> %d %s | %d | %d | %d | %d | %d | %d | %d | %d |" % (
            r["model"], r["cpu"], r["batch"], r["time_steps"], r["input_size"], r["output_size"],
            "per step" if r["output_per_step"] else "per sequence", r["ops"], r["instructions"], r["cycles"],
            r["flash_bytes"], r["model_code_bytes"], r["model_const_bytes"], r["runtime_bytes"], rest))
    lines += ["", "est. cycles: the counter's estimate on the CPU's core (zero wait states, no caches; "
              "docs/targets.md). model code / model const: bytes the link kept from NAME_model.cc (.text*; .rodata* and .data*); "
              "runtime lib: from libqlstm_runtime.a; both from the linker map; rest: main.c, the board, newlib, "
              "libgcc and padding. JSON (--out json) splits the runtime by archive member."]
    names = [n for n, _ in RUNTIME_COMPONENTS
             if n in ALWAYS_SHOWN or any(r["runtime_components"][n] > 0 for r in rows)]
    lines += ["", "Runtime lib bytes by component (bench/emitted_firmware.py RUNTIME_COMPONENTS: s16 is every 16x8 "
              "kernel and the requantization, dots_s8 the Arm int8 dot products the LSTM, FC and GRU variants share, "
              "runner the program runner, the variant lists and the status names; each as all its bytes (its code: "
              "its .text* input sections; the rest is const data):", "",
              "| model | cpu | " + " | ".join(names) + " | runtime lib |", "|---|---|" + "---:|" * (len(names) + 1)]
    for r in rows:
        c = r["runtime_components"]
        code = r["runtime_component_code"]
        lines.append("| %s | %s | %s | %d (%d) |" % (r["model"], r["cpu"], " | ".join(
            "%d (%d)" % (c[n], code[n]) for n in names), r["runtime_bytes"], r["runtime_code_bytes"]))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--qlstm", required=True, help="the qlstm CLI (build/tools/qlstm/qlstm)")
    p.add_argument("--build", required=True, help="the host build folder (the plugin, build/targets/CPU)")
    p.add_argument("--cpu", default=",".join(CPUS), help="comma-separated CPUs (default %(default)s)")
    p.add_argument("--out", choices=["markdown", "json"], default="markdown", help="the table's format on stdout")
    p.add_argument("--work", help="a folder for models and firmware builds (emptied; default: a temporary one)")
    p.add_argument("--model", action="append", type=parse_model, default=[], metavar="NAME=ONNX,CALIBRATION,TEST",
                   help="also measure this model (a whole model too); repeatable")
    p.add_argument("--source", default=os.path.dirname(HERE),
                   help="the source tree whose examples/firmware and toolchain file are built (default: this script's)")
    a = p.parse_args()
    a.qlstm, a.build, a.source = (os.path.abspath(x) for x in (a.qlstm, a.build, a.source))
    a.cpu = [c for c in a.cpu.split(",") if c]
    if not os.access(a.qlstm, os.X_OK):
        fail("no qlstm CLI at %s" % a.qlstm)
    if a.work:
        work = os.path.abspath(a.work)
        if os.path.isdir(work):
            shutil.rmtree(work)
        os.makedirs(work)
        rows = measure(a, work)
    else:
        with tempfile.TemporaryDirectory(prefix="qlstm-emitted-") as work:
            rows = measure(a, work)
    prov = provenance(a.source)
    if a.out == "json":
        print(json.dumps({"measured_at": prov, "rows": rows}, indent=1))
    else:
        print(markdown(rows, prov))


if __name__ == "__main__":
    main()
