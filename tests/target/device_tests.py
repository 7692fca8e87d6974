#!/usr/bin/python3
"""On-device tests for one emulated CPU (ctest label "target"; tests/target/CMakeLists.txt).

  device_tests.py fault   --qlstm Q --cpu CPU
      a firmware that faults must end the run with a non-zero exit status
  device_tests.py models  --qlstm Q --cpu CPU --work DIR --source REPO
      compiled ONNX models: `qlstm run --target CPU` equals `qlstm run` byte for byte
  device_tests.py emitted --qlstm Q --cpu CPU --work DIR --source REPO
      a model's emitted NAME_model.cc built into examples/firmware, run under QEMU, equals the host
  device_tests.py whole   --qlstm Q --cpu CPU --work DIR --source REPO
      whole models (a classifier, a per-step head): `qlstm run --target` and the emitted firmware,
      one call and streamed, equal the host byte for byte; `qlstm bench --target` counts each op
  device_tests.py s16     --qlstm Q --cpu CPU --work DIR --source REPO
      16x8 models (--activations int16: sunspots, int16 in and out; digits, int16 in, int8 softmax
      out): `qlstm run --float --target CPU` equals `qlstm run --float` byte for byte, and
      `qlstm bench --target` counts each op, its output bit-exact with the host simulation
  device_tests.py icount  --qlstm Q --cpu CPU
      the instruction counter counts a known sequence exactly, a kernel call repeatably, and its
      per-function profile sums to the same count
  device_tests.py variants --qlstm Q --cpu CPU
      every variant built for the CPU against the reference on 2000 random cases, on the device
  device_tests.py count-models
      prints how many models the models test feeds (tests/target/CMakeLists.txt expects that many)

Needs numpy (Debian's python3-numpy), except count-models. Exits non-zero on any failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

np = None  # numpy, imported by main() for the tests (count-models runs without it)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def target_info(qlstm, cpu):
    """The firmware folder the CLI uses: <build>/targets/<cpu>, next to <build>/tools/qlstm."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(qlstm))))
    d = os.environ.get("QLSTM_TARGET_DIR", os.path.join(build, "targets"))
    info = {}
    with open(os.path.join(d, cpu, "target.txt")) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            info[k] = v
    info["dir"] = os.path.join(d, cpu)
    info["build"] = build
    return info


def qemu(info, elf, args, plugin=None, timeout=600):
    cmd = ["qemu-system-arm", "-M", info["qemu_machine"], "-cpu", info["qemu_cpu"], "-nographic",
           "-monitor", "none", "-serial", "none", "-semihosting-config",
           "enable=on,target=native," + ",".join("arg=" + a.replace(",", ",,") for a in ["fw"] + args),
           "-kernel", elf]
    if plugin:
        cmd += ["-plugin", plugin]
    return run(cmd, timeout=timeout)


def test_fault(a):
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["--fault"], timeout=60)
    print(out, end="")
    print("fault exit status %d" % rc)
    if rc == 0 or "no fault taken" in out:
        fail("the faulting firmware did not fail its run")
    print("fault: the run failed, as it must")


# Models with their layouts; each calibrated on standard-normal data (the example on its own).
MODELS = [
    ("examples/sunspots/sunspots_lstm.onnx", True, 1, "examples/sunspots/calibration.npy"),  # Linear per step
    ("examples/digits/digits_lstm.onnx", True, 8, "examples/digits/calibration.npy"),  # last step, Linear, Softmax
    ("tests/onnx/models/torch_batch_first_opset17.onnx", True, None, None),
    ("tests/onnx/models/torch_seq_first_opset13.onnx", False, None, None),
    ("tests/onnx/models/plain_layout1_no_bias.onnx", True, None, None),
    ("tests/onnx/models/plain_zero_initializer_state.onnx", False, None, None),
    ("tests/onnx/models/plain_reverse.onnx", False, None, None),  # direction "reverse"
    ("tests/onnx/models/torch_two_layers.onnx", False, None, None),  # programs: the whole program in one case on the device
    ("tests/onnx/models/torch_bidirectional.onnx", False, None, None),
    ("tests/onnx/models/torch_bi2_state.onnx", False, None, None),  # (h0, c0) in, (h_n, c_n) out
    # GRUs (issue 16): the example, a stack with a given h0 and h_n out, a reverse one, a head on h_n[-1].
    ("examples/digits/digits_gru.onnx", True, 8, "examples/digits/calibration.npy"),
    ("tests/onnx/models/gru_torch_bi2_state.onnx", False, None, None),
    ("tests/onnx/models/gru_plain_reverse.onnx", False, None, None),
    ("tests/onnx/models/gru_torch_h_n_linear_stack2.onnx", True, None, None),
    # Pooling over time (issue 30): the mean after an LSTM, the max after a GRU, each then a Linear.
    ("tests/onnx/models/import_pool_mean.onnx", True, None, None),
    ("tests/onnx/models/import_pool_max_gru.onnx", True, None, None),
    # y[:, -1] of a bidirectional GRU: the reverse op runs its first step alone (issue 30, item 7).
    ("tests/onnx/models/gru_torch_bidirectional_last_linear.onnx", True, None, None),
    # A head ending in log_softmax (issue 30, item 6): Linear, ReLU, Linear, LogSoftmax on h_n[-1].
    ("tests/onnx/models/import_log_softmax_h_n_opset11.onnx", True, None, None),
    # A Linear, ReLU, Linear on each of steps 1 to 3 (y[:, 1:4]; issue 30, item 5).
    ("tests/onnx/models/import_steps_from_first.onnx", True, None, None),
    # y[-3:] of a sequence-first LSTM, a Linear on each: the output's rows time-major ([3, B, 2]).
    ("tests/onnx/models/import_last_steps_seq_first.onnx", False, None, None),
]


def sequences(rng, batch_first, batch, steps, features, scale=1.0):
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def token_rows(work, name):
    """A model on token ids (an embedding first): its table's rows; None for a model on values."""
    with open(os.path.join(work, name + "_report.json")) as f:
        given = json.load(f).get("input", {})
    return given["range"][1] + 1 if given.get("type") == "int32 token ids" else None


def token_ids(rng, batch_first, batch, steps, rows):
    """Token ids over a table's rows, int64 as numpy makes them, [B, T] or [T, B]."""
    return rng.integers(0, rows, size=(batch, steps) if batch_first else (steps, batch))


def input_size_of(source, onnx_path, cal_path):
    expect = os.path.splitext(os.path.join(source, onnx_path))[0] + ".expect.json"
    if os.path.exists(expect):
        with open(expect) as f:
            e = json.load(f)
        if "input_size" in e or "input_shape" in e:
            return e["input_size"] if "input_size" in e else e["input_shape"][-1]  # an LSTM's, or a whole model's
    return int(np.load(os.path.join(source, cal_path)).shape[-1])  # else: its calibration's


def compile_model(a, work, onnx_path, batch_first, cal_path, rng, name, extra=()):
    source = a.source
    i = input_size_of(source, onnx_path, cal_path)
    if cal_path is None:
        cal_path = os.path.join(work, name + "_cal.npy")
        np.save(cal_path, sequences(rng, batch_first, 8, 12, i))
    else:
        cal_path = os.path.join(source, cal_path)
    rc, out = run([a.qlstm, "compile", os.path.join(source, onnx_path), "--calibration", cal_path,
                   "-o", work, "--name", name] + list(extra))
    if rc != 0:
        fail("qlstm compile %s:\n%s" % (onnx_path, out))
    return os.path.join(work, name + ".qlstm"), i


def same_bytes(p, q):
    with open(p, "rb") as f, open(q, "rb") as g:
        return f.read() == g.read()


def run_host_and_target(a, model, xin, y_prefix, extra, state_out=None):
    """`qlstm run MODEL --input XIN ... EXTRA` on the host, then with --target a.cpu: the two output
    paths (y_prefix + "_host.npy", "_CPU.npy"). state_out(y): the final-state arguments of output y."""
    outs = []
    for where in ("host", a.cpu):
        y = "%s_%s.npy" % (y_prefix, where)
        cmd = [a.qlstm, "run", model, "--input", xin, "--output", y] + extra
        if state_out is not None:
            cmd += state_out(y)
        if where != "host":
            cmd += ["--target", a.cpu]
        rc, out = run(cmd)
        if rc != 0:
            fail("%s on %s:\n%s" % (" ".join(cmd), where, out))
        outs.append(y)
    return outs


def runs_agree(a, work, name, model, onnx_path, i, batch_first, rng):
    """`qlstm run` on the host and with --target a.cpu, float in and out (batch 3) and int8 in and out
    (batch 1): the same bytes, and the same final state for a model that takes one."""
    x = sequences(rng, batch_first, 3, 9, i, 1.5)
    x8 = rng.integers(-128, 128, size=(1, 17, i) if batch_first else (17, 1, i), dtype=np.int8)
    rows = token_rows(work, name)
    if rows is not None:  # token ids either way
        x, x8 = token_ids(rng, batch_first, 3, 9, rows), token_ids(rng, batch_first, 1, 17, rows)
    with open(os.path.join(work, name + "_report.json")) as f:
        report = json.load(f)
    stateful = report["state"]["initial_h"] == "input"
    ops, hidden = len(report["ops"]), report["hidden_size"]
    gru = all(op.get("kind") == "gru" for op in report["ops"])  # no cell; an int state is Q0.15 int16
    for tag, data, extra in (("float", x, ["--float"]), ("int8", x8, [])):
        xin = os.path.join(work, "%s_%s_x.npy" % (name, tag))
        np.save(xin, data)
        if stateful:  # a given state, and the final state compared too
            batch = data.shape[0] if batch_first else data.shape[1]
            h0, c0 = (os.path.join(work, "%s_%s_%s.npy" % (name, tag, s)) for s in ("h0", "c0"))
            if tag == "float":
                np.save(h0, (rng.standard_normal((ops, batch, hidden)) * 0.3).astype(np.float32))
                np.save(c0, (rng.standard_normal((ops, batch, hidden)) * 0.5).astype(np.float32))
            elif gru:
                np.save(h0, rng.integers(-30000, 30000, size=(ops, batch, hidden)).astype(np.int16))
            else:
                np.save(h0, rng.integers(-128, 128, size=(ops, batch, hidden), dtype=np.int8))
                np.save(c0, rng.integers(-4000, 4000, size=(ops, batch, hidden)).astype(np.int16))
            extra = extra + ["--h0", h0] + ([] if gru else ["--c0", c0])
        state_out = None
        if stateful:
            state_out = lambda y: ["--h-n", y + ".hn.npy"] + ([] if gru else ["--c-n", y + ".cn.npy"])
        outs = run_host_and_target(a, model, xin, os.path.join(work, "%s_%s_y" % (name, tag)), extra, state_out)
        if not same_bytes(outs[0], outs[1]):
            fail("%s (%s): the device output differs from the host's" % (onnx_path, tag))
        if stateful and not (same_bytes(outs[0] + ".hn.npy", outs[1] + ".hn.npy") and
                             (gru or same_bytes(outs[0] + ".cn.npy", outs[1] + ".cn.npy"))):
            fail("%s (%s): the device's final state differs from the host's" % (onnx_path, tag))


def test_models(a):
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(5)
    passed = 0
    for k, (onnx_path, batch_first, _, cal) in enumerate(MODELS):
        name = "m%d" % k
        model, i = compile_model(a, a.work, onnx_path, batch_first, cal, rng, name)
        runs_agree(a, a.work, name, model, onnx_path, i, batch_first, rng)
        print("%s: device == host (float and int8 runs)" % onnx_path)
        passed += 1
    print("%d models: device == host" % passed)


# Emitted sources built into examples/firmware: (name, ONNX, batch_first, calibration, kind).
# kind: "stream" (forward, NAME_stream), "whole" (bidirectional: one call), "state" (NAME_run_state
# from a given state, returning the final one; streamed on the same state buffers), "whole_state"
# (the same for a bidirectional model, in one call).
EMITTED = [
    ("sunspots", "examples/sunspots/sunspots_lstm.onnx", True, "examples/sunspots/calibration.npy", "stream"),
    ("stack2", "tests/onnx/models/torch_two_layers.onnx", False, None, "stream"),
    ("bi1", "tests/onnx/models/torch_bidirectional.onnx", False, None, "whole"),
    ("stack3_state", "tests/onnx/models/torch_stack3_state.onnx", True, None, "state"),
    ("bi2_state", "tests/onnx/models/torch_bi2_state.onnx", False, None, "whole_state"),
    ("digits_gru", "examples/digits/digits_gru.onnx", True, "examples/digits/calibration.npy", "stream"),
    ("gru_bi1", "tests/onnx/models/gru_torch_bidirectional.onnx", False, None, "whole"),
    ("pool_mean", "tests/onnx/models/import_pool_mean.onnx", True, None, "whole"),  # a pooling over time
    ("log_softmax", "tests/onnx/models/import_log_softmax.onnx", True, None, "whole"),  # a log-softmax head
    ("last_steps", "tests/onnx/models/import_last_steps_linear.onnx", True, None, "whole"),  # y[:, -3:] -> Linear
]
EMITTED_STEPS = 40


def output_per_step(work, name):
    """The emitted header's NAME_OUTPUT_PER_STEP: 1, an output row per step; 0, one per batch row."""
    with open(os.path.join(work, name + "_model.h")) as f:
        for line in f:
            if line.startswith("#define %s_OUTPUT_PER_STEP " % name.upper()):
                return line.split()[2] == "1"
    fail("%s_model.h does not say whether its output is per step" % name)


def emitted_agrees(a, info, work, name, model, i, batch_first, kind, rng):
    """The model's emitted source (compiled into `work` with --max-time-steps EMITTED_STEPS) built into
    examples/firmware and run under QEMU: the same bytes as `qlstm run` on the host, in one call and,
    but for a "whole" kind, streamed in chunks. Returns what it checked, for the log."""
    toolchain = os.path.join(a.source, "targets/cortex-m/toolchain-arm-none-eabi.cmake")
    with open(os.path.join(work, name + "_report.json")) as f:
        report = json.load(f)
    ops, hidden, out_size = len(report["ops"]), report["hidden_size"], report["output_size"]
    program_ops = len(report.get("op_table", report["ops"]))  # every op (report["ops"]: the LSTM ops)
    per_step = output_per_step(work, name)
    build = os.path.join(work, "firmware")
    rc, out = run(["cmake", "-S", os.path.join(a.source, "examples/firmware"), "-B", build, "-G", "Ninja",
                   "-DCMAKE_TOOLCHAIN_FILE=" + toolchain, "-DQLSTM_CPU=" + a.cpu,
                   "-DQLSTM_MODEL_DIR=" + work, "-DQLSTM_MODEL_NAME=" + name])
    if rc != 0:
        fail("configure examples/firmware for %s:\n%s" % (name, out))
    rc, out = run(["cmake", "--build", build])
    if rc != 0:
        fail("build examples/firmware with the emitted source of %s:\n%s" % (name, out))
    code = runtime_code_matches(a, work, name, build)
    elf = os.path.join(build, "model_firmware.elf")
    shape = (1, EMITTED_STEPS, i) if batch_first else (EMITTED_STEPS, 1, i)
    x8 = rng.integers(-128, 128, size=shape, dtype=np.int8)
    rows = token_rows(work, name)
    if rows is not None:  # token ids: int64 for qlstm run, int32 little-endian for the firmware
        x8 = token_ids(rng, batch_first, 1, EMITTED_STEPS, rows)
    xin, yhost = os.path.join(work, "x.npy"), os.path.join(work, "y_host.npy")
    np.save(xin, x8)
    raw_in, raw_out = os.path.join(work, "x.bin"), os.path.join(work, "y_device.bin")
    (x8 if rows is None else x8.astype("<i4")).tofile(raw_in)
    host_cmd = [a.qlstm, "run", model, "--input", xin, "--output", yhost]
    state_args, want_state = [], b""
    if kind.endswith("state"):
        h0 = rng.integers(-128, 128, size=(ops, 1, hidden), dtype=np.int8)
        c0 = rng.integers(-4000, 4000, size=(ops, 1, hidden)).astype(np.int16)
        paths = {k: os.path.join(work, k + ".npy") for k in ("h0", "c0", "hn", "cn")}
        np.save(paths["h0"], h0)
        np.save(paths["c0"], c0)
        host_cmd += ["--h0", paths["h0"], "--c0", paths["c0"], "--h-n", paths["hn"], "--c-n", paths["cn"]]
        state_in, state_out = os.path.join(work, "state_in.bin"), os.path.join(work, "state_out.bin")
        with open(state_in, "wb") as f:
            f.write(h0.tobytes() + c0.astype("<i2").tobytes())
        state_args = [state_in, state_out]
    rc, out = run(host_cmd)
    if rc != 0:
        fail("qlstm run %s:\n%s" % (name, out))
    want = np.load(yhost).tobytes()
    if kind.endswith("state"):
        want_state = np.load(paths["hn"]).tobytes() + np.load(paths["cn"]).astype("<i2").tobytes()
    if len(want) != (EMITTED_STEPS if per_step else 1) * out_size:
        fail("%s: the host output has %d bytes, expected %s x %d" % (name, len(want), "T" if per_step else "1",
                                                                      out_size))
    # Streamed, a last-step head's output is the last chunk's: the one call's over the whole sequence.
    chunks = [0] if kind.startswith("whole") else [0, 1, 7, EMITTED_STEPS]
    for chunk in chunks:
        args = [raw_in, raw_out] + ([str(chunk)] + state_args if state_args else ([str(chunk)] if chunk else []))
        rc, out = qemu(info, elf, args)
        if rc != 0:
            fail("%s firmware (chunks of %d) exited with status %d:\n%s" % (name, chunk, rc, out))
        if open(raw_out, "rb").read() != want:
            fail("%s: the emitted firmware's output (chunks of %d) differs from qlstm run on the host" % (name, chunk))
        if state_args and open(state_out, "rb").read() != want_state:
            fail("%s: the emitted firmware's final state (chunks of %d) differs from the host's h_n / c_n" % (name, chunk))
    return "%d ops, %s, output %s: device == host%s; %s" % (
        program_ops, kind, "per step" if per_step else "per batch row",
        "" if kind.startswith("whole") else ", one call and streamed in chunks of 1, 7 and 40", code)


def runtime_code_kept(map_path):
    """Bytes of the runtime library's .text input sections a firmware's linker map shows kept (GNU ld:
    " .text.name 0xADDR 0xSIZE origin", or the name alone on its line and the rest on the next)."""
    with open(map_path) as f:
        lines = f.read().split("\n")
    lines = lines[lines.index("Linker script and memory map") + 1:]
    total, pending = 0, None
    for line in lines:
        if pending is not None:
            m = re.match(r"^\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+(\S.*)$", line)
            rest = (pending,) + m.groups() if m else None
            pending = None
        else:
            m = re.match(r"^ (\.text\S*)(?:\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+(\S.*))?$", line)
            if not m:
                continue
            if m.group(2) is None:
                pending = m.group(1)
                continue
            rest = m.groups()
        if rest and re.search(r"libqlstm_runtime\.a\(", rest[2]):
            total += int(rest[1], 16)
    return total


def runtime_code_matches(a, work, name, build):
    """The report's runtime_code (qlstm compile --target: the union of its kinds' probes) is the
    runtime code the emitted firmware's link kept, to the byte."""
    with open(os.path.join(work, name + "_report.json")) as f:
        said = json.load(f)["runtime_code"]
    kept = runtime_code_kept(os.path.join(build, "model_firmware.map"))
    if said["cpu"] != a.cpu or said["bytes"] != kept:
        fail("%s: the report's runtime code on %s is %d bytes, the emitted firmware keeps %d" %
             (name, said["cpu"], said["bytes"], kept))
    return "runtime code %d bytes, as the report says" % kept


def firmware_models(a, models, seed):
    """A fresh a.work, then per (name, ONNX, batch_first, calibration) its own folder in it, compiled
    with --max-time-steps EMITTED_STEPS: yields (work, model, input size, rng)."""
    if os.path.isdir(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)
    rng = np.random.default_rng(seed)
    for name, onnx_path, batch_first, cal in models:
        work = os.path.join(a.work, name)
        os.makedirs(work)
        model, i = compile_model(a, work, onnx_path, batch_first, cal, rng, name,
                                 ["--max-time-steps", str(EMITTED_STEPS), "--target", a.cpu])
        yield work, model, i, rng


def test_emitted(a):
    info = target_info(a.qlstm, a.cpu)
    built = firmware_models(a, [e[:4] for e in EMITTED], 11)
    for (name, _, batch_first, _, kind), (work, model, i, rng) in zip(EMITTED, built):
        print("emitted firmware %s (%s)" % (name, emitted_agrees(a, info, work, name, model, i, batch_first, kind, rng)))
    print("emitted firmware: device == host, one call and streamed")


# Whole models (the layers around the LSTM on the device too): (name, ONNX, batch_first, emitted
# kind: "stream" also in chunks, "whole" one call only).
WHOLE = [
    ("classifier", "tests/onnx/models/whole_classifier_opset17.onnx", True, "stream"),  # LSTM -> y[:, -1] -> Linear -> Softmax
    ("step_head", "tests/onnx/models/whole_step_head_seq_first.onnx", False, "stream"),  # LSTM -> Linear on every step
    # Linear -> LSTM -> LSTM + its input (a residual add) -> y[:, -1] -> Linear
    ("residual", "tests/onnx/models/import_residual_last_layer.onnx", True, "stream"),
    # Keras' Bidirectional(LSTM) with HardSigmoid gates (keras2onnx's form; a reverse direction: one call)
    ("hard_sigmoid", "tests/onnx/models/import_keras_hard_sigmoid_bidirectional.onnx", True, "whole"),
    # biLSTM -> torch.cat((y[:, 0], y.max(1).values, y[:, -1]), 1) -> Linear: two step selections
    # and a pooling into one row
    ("pool_concat", "tests/onnx/models/import_pool_concat_first_max_last_bidirectional.onnx", True, "whole"),
    # nn.Embedding on int64 token ids -> LSTM -> y[:, -1] -> Linear: int32 ids into the firmware
    ("embedding", "tests/onnx/models/import_embedding_lstm_last_step.onnx", True, "stream",
     "tests/onnx/models/import_embedding_calibration.npy"),
    # LSTM -> LayerNorm (opset 13's form, gamma and beta) -> LSTM -> y[:, -1] -> Linear, streamed
    ("layer_norm", "tests/onnx/models/import_layer_norm_between_layers.onnx", True, "stream"),
    # biLSTM -> LayerNorm -> biLSTM + its input -> LayerNorm -> biLSTM -> y[:, -1] -> Linear
    ("layer_norm_residual", "tests/onnx/models/import_layer_norm_after_residual_bidirectional.onnx", True, "whole"),
    # biGRU -> softmax(Linear(y), dim=1) * y summed over time -> Linear: the attention pooling
    ("attention", "tests/onnx/models/import_attention_pool_squeezed_bigru.onnx", True, "whole"),
    # the same on a sequence-first LSTM (time-major sequences on the device)
    ("attention_seq_first", "tests/onnx/models/import_attention_pool_keepdim_seq_first.onnx", False, "whole"),
    # nn.RNN: a bidirectional tanh layer's h_n[-1] -> Linear; ReLU -> y[:, -1] -> Linear, streamed;
    # two bidirectional ReLU layers, sequence-first
    ("rnn_tanh_h_n", "tests/onnx/models/rnn_torch_h_n_linear_bidirectional.onnx", True, "whole"),
    ("rnn_relu_last", "tests/onnx/models/rnn_torch_relu_last_linear.onnx", True, "stream"),
    ("rnn_relu_bi2", "tests/onnx/models/rnn_torch_relu_bi2_seq_first.onnx", False, "whole"),
    # LSTM autoencoders: the encoder's h_n[-1] repeated over the input's steps (dynamic length) or its
    # y[:, -1:] (a static export) as the decoder's input (input_repeated), then a Linear per step
    ("seq2seq", "tests/onnx/models/seq2seq_repeat_h_n.onnx", True, "whole"),
    ("seq2seq_last_step", "tests/onnx/models/seq2seq_last_step_static.onnx", True, "whole"),
    # the encoder's h_n[-1] -> Linear, ReLU, Linear (a bottleneck, run once on the one-step state)
    # -> repeated -> decoder -> Linear per step
    ("seq2seq_bottleneck", "tests/onnx/models/seq2seq_bottleneck_h_n.onnx", True, "whole"),
    # a GRU autoencoder: the GRU decoder reads the encoder's h_n[-1] repeated (input_repeated)
    ("seq2seq_gru", "tests/onnx/models/seq2seq_gru_h_n.onnx", True, "whole"),
    # LSTM -> Linear, ReLU (one FC op) -> LSTM -> y[:, -1] -> Linear, streamed
    ("layers_between", "tests/onnx/models/import_linear_relu_between_lstms.onnx", True, "stream"),
]


def test_whole(a):
    info = target_info(a.qlstm, a.cpu)
    built = firmware_models(a, [w[:3] + (w[4] if len(w) > 4 else None,) for w in WHOLE], 23)
    for (name, onnx_path, batch_first, kind), (work, model, i, rng) in zip((w[:4] for w in WHOLE), built):
        runs_agree(a, work, name, model, onnx_path, i, batch_first, rng)
        print("%s: qlstm run --target %s == qlstm run (float and int8 runs)" % (onnx_path, a.cpu))
        print("%s: emitted firmware (%s)" % (onnx_path, emitted_agrees(a, info, work, name, model, i, batch_first,
                                                                      kind, rng)))
        bench_counts_each_op(a, work, name, model)
    print("%d whole models: device == host, qlstm run and the emitted firmware" % len(WHOLE))


# 16x8 models for the s16 test: (name, ONNX, batch_first, calibration).
S16_MODELS = [
    ("sunspots_s16", "examples/sunspots/sunspots_lstm.onnx", True, "examples/sunspots/calibration.npy"),
    ("digits_s16", "examples/digits/digits_lstm.onnx", True, "examples/digits/calibration.npy"),
    # A Linear + Relu in front of the stack: 16x8 from the model input on.
    ("front_s16", "tests/onnx/models/whole_front_end.onnx", True, None),
    # Steps 1 to 3 (y[:, 1:4]): the 16x8 Linear on each selected step, then a requantization for the ReLU.
    ("steps_s16", "tests/onnx/models/import_steps_from_first.onnx", True, None),
]


# 16x8 models with an initial state (an input, a constant) and h_n, c_n outputs.
S16_STATE_MODELS = [
    ("bi2_s16", "tests/onnx/models/torch_bi2_state.onnx", False, None),
    ("constant_h0_s16", "tests/onnx/models/plain_nonzero_initial_state.onnx", False, "tests/cli/eval/state_calibration.npy"),
]


def test_s16(a):
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(16)
    for name, onnx_path, batch_first, cal in S16_MODELS:
        model, i = compile_model(a, a.work, onnx_path, batch_first, cal, rng, name, ["--activations", "int16"])
        xin = os.path.join(a.work, name + "_x.npy")
        np.save(xin, sequences(rng, batch_first, 3, 9, i, 1.5))
        outs = run_host_and_target(a, model, xin, os.path.join(a.work, name + "_y"), ["--float"])
        if not same_bytes(outs[0], outs[1]):
            fail("%s (16x8): the device output differs from the host's" % onnx_path)
        print("%s: 16x8 qlstm run --float --target %s == qlstm run --float" % (name, a.cpu))
        bench_counts_each_op(a, a.work, name, model)
    # 16x8 models with state: a state input given in float and h_n, c_n written; a constant h0.
    for name, onnx_path, batch_first, cal in S16_STATE_MODELS:
        model, i = compile_model(a, a.work, onnx_path, batch_first, cal, rng, name, ["--activations", "int16"])
        with open(os.path.join(a.work, name + "_report.json")) as f:
            report = json.load(f)
        x = sequences(rng, batch_first, 3, 9, i, 1.5)
        xin = os.path.join(a.work, name + "_x.npy")
        np.save(xin, x)
        extra, state_out = ["--float"], None
        if report["state"]["initial_h"] == "input":
            ops, hidden = len(report["ops"]), report["hidden_size"]
            h0, c0 = (os.path.join(a.work, "%s_%s.npy" % (name, s)) for s in ("h0", "c0"))
            np.save(h0, (rng.standard_normal((ops, 3, hidden)) * 0.3).astype(np.float32))
            np.save(c0, (rng.standard_normal((ops, 3, hidden)) * 0.5).astype(np.float32))
            extra += ["--h0", h0, "--c0", c0]
            state_out = lambda y: ["--h-n", y + ".hn.npy", "--c-n", y + ".cn.npy"]
        outs = run_host_and_target(a, model, xin, os.path.join(a.work, name + "_y"), extra, state_out)
        if not same_bytes(outs[0], outs[1]):
            fail("%s (16x8): the device output differs from the host's" % onnx_path)
        if state_out is not None and not (same_bytes(outs[0] + ".hn.npy", outs[1] + ".hn.npy") and
                                          same_bytes(outs[0] + ".cn.npy", outs[1] + ".cn.npy")):
            fail("%s (16x8): the device's final state differs from the host's" % onnx_path)
        print("%s: 16x8 with state (initial h %s) qlstm run --float --target %s == qlstm run --float%s" % (
            name, report["state"]["initial_h"], a.cpu, ", h_n and c_n too" if state_out else ""))
    # A bundle of the version before an LSTM gate's HardSigmoid line is refused, naming both versions.
    old = os.path.join(a.work, "old_version.bundle")
    with open(old, "wb") as f:
        f.write(b"QLVB" + (8).to_bytes(4, "little") + (0).to_bytes(4, "little"))
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["verify", old])
    if rc != 2 or "is a version-8 bundle, this firmware reads version 9" not in out:
        fail("a version-8 bundle: exit status %d:\n%s" % (rc, out))
    print("a version-8 bundle is refused: exit status 2")
    print("%d 16x8 models: device == host, qlstm run and qlstm bench" % (len(S16_MODELS) + len(S16_STATE_MODELS)))


def bench_counts_each_op(a, work, name, model):
    """`qlstm bench --target`: one count per op of the program, summing to the total it prints last."""
    with open(os.path.join(work, name + "_report.json")) as f:
        n_ops = len(json.load(f)["op_table"])
    rc, out = run([a.qlstm, "bench", model, "--target", a.cpu, "--shape", "B=1,T=9"])
    lines = out.strip().splitlines()
    per_op = [int(m.group(1)) for m in (re.match(r"^op \d+ \(.*\): (\d+) instructions$", l) for l in lines) if m]
    last = re.match(r"^instructions: (\d+)$", lines[-1]) if lines else None
    if rc != 0 or "bit-exact with the host simulation" not in out or not last:
        fail("qlstm bench --target %s on %s:\n%s" % (a.cpu, name, out))
    if len(per_op) != n_ops or sum(per_op) != int(last.group(1)):
        fail("%s: bench counted %s for %d ops, total %s" % (name, per_op, n_ops, last.group(1)))
    op_cycles = [int(m.group(1)) for m in (re.match(r"^op \d+ \(.*\): (\d+) estimated cycles$", l) for l in lines) if m]
    cycles = re.search(r"^estimated cycles: (\d+) ", out, re.M)
    if len(op_cycles) != n_ops or not cycles or sum(op_cycles) != int(cycles.group(1)):
        fail("%s: bench estimated %s cycles for %d ops, total %s" % (name, op_cycles, n_ops,
                                                                    cycles.group(1) if cycles else None))
    print("%s: qlstm bench --target %s counts each of its %d ops, %s, total %s" % (
        name, a.cpu, n_ops, " + ".join(str(k) for k in per_op), last.group(1)))


def test_icount(a):
    info = target_info(a.qlstm, a.cpu)
    plugin = os.path.join(info["build"], "tools/qemu_icount/libqlstm_icount.so")
    with tempfile.TemporaryDirectory() as tmp:
        counts = os.path.join(tmp, "counts.txt")
        rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["icount-self-test"],
                       plugin="%s,out=%s" % (plugin, counts), timeout=60)
        print(out, end="")
        if rc != 0:
            fail("icount-self-test exited with status %d" % rc)
        got = open(counts).read().split()
        print("counted:", " ".join(got))
        if got != ["instructions", "101"]:
            fail("the counter did not count exactly the 101 instructions between the markers")
        # With cpu=, the same count and its estimated cycles: 100 one-cycle NOPs and the BL (1 + P,
        # P = 2), on every core.
        rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["icount-self-test"],
                       plugin="%s,out=%s,cpu=%s" % (plugin, counts, a.cpu), timeout=60)
        got = open(counts).read().split()
        print("counted with cpu=%s:" % a.cpu, " ".join(got))
        if rc != 0 or got != ["instructions", "101", "cycles", "103"]:
            fail("the counter with cpu=%s did not count 101 instructions and 103 cycles" % a.cpu)
        # A sequence whose cycles differ by core (docs/targets.md, "Estimated cycles"): LDR; LDR
        # (2 + 1 pipelined on M3/M4/M33, 1 + 1 on M55), MLA (2 on M3, else 1), MOVS, and a
        # SUBS; BNE loop run 3 times (6, the branch taken twice: + 2 x 2), then BL (3).
        expected = {"cortex-m3": 19, "cortex-m4": 18, "cortex-m33": 18}.get(a.cpu, 17)
        rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["cycle-self-test"],
                       plugin="%s,out=%s,cpu=%s" % (plugin, counts, a.cpu), timeout=60)
        got = open(counts).read().split()
        print("cycle-self-test counted:", " ".join(got))
        if rc != 0 or got != ["instructions", "11", "cycles", str(expected)]:
            fail("cycle-self-test: expected 11 instructions and %d cycles on %s" % (expected, a.cpu))
    lasts = []
    for _ in range(2):
        rc, out = run([a.qlstm, "bench", "--target", a.cpu, "--shape", "B=2,T=5,I=3,H=7,time_major"])
        print(out, end="")
        last = out.strip().splitlines()[-1] if out.strip() else ""
        cycles = re.search(r"^estimated cycles: (\d+) ", out, re.M)
        if rc != 0 or not last.startswith("instructions: ") or "bit-exact" not in out or not cycles:
            fail("qlstm bench --target %s" % a.cpu)
        if int(cycles.group(1)) < int(last.split()[1]):
            fail("fewer estimated cycles than instructions: %s, %s" % (cycles.group(0), last))
        lasts.append((last, cycles.group(1)))
    if lasts[0] != lasts[1]:
        fail("two identical bench runs counted differently: %s" % lasts)
    lasts = [l for l, _ in lasts]
    # --profile splits the same count by function: the parts sum to the total, the same as without.
    rc, out = run([a.qlstm, "bench", "--target", a.cpu, "--shape", "B=2,T=5,I=3,H=7,time_major",
                   "--profile"])
    print(out, end="")
    lines = out.strip().splitlines()
    if rc != 0 or not lines or lines[-1] != lasts[0]:
        fail("qlstm bench --profile counted differently from qlstm bench")
    start = [i for i, l in enumerate(lines) if l.startswith("instructions per function")]
    if not start:
        fail("qlstm bench --profile printed no per-function table")
    rows = [re.match(r"^ +(\d+) +\S+%  +(\d+) cycles +\S+%  (.+)$", l) for l in lines[start[0] + 1:]
            if l.startswith(" ")]
    if not rows or not all(rows):
        fail("a per-function row without its estimated cycles")
    total = sum(int(r.group(1)) for r in rows)
    if total != int(lasts[0].split()[1]):
        fail("the per-function counts sum to %d, not %s" % (total, lasts[0]))
    if not any("gate" in r.group(3) or "dot" in r.group(3) for r in rows):
        fail("the profile does not name the kernel's gate or dot-product function")
    function_cycles = sum(int(r.group(2)) for r in rows)
    # ... and the estimated cycles by timing class, summing to the estimate.
    classes = [re.match(r"^ *(\d+) cycles .* (\d+) instructions  (\S+)$", l) for l in lines]
    classes = [m for m in classes if m]
    cycles = re.search(r"^estimated cycles: (\d+) ", out, re.M)
    if not classes or not cycles or sum(int(m.group(1)) for m in classes) != int(cycles.group(1)):
        fail("the per-class cycles do not sum to the estimate")
    if sum(int(m.group(2)) for m in classes) != total:
        fail("the per-class instructions do not sum to the count")
    if function_cycles != int(cycles.group(1)):
        fail("the per-function cycles sum to %d, not the estimate %s" % (function_cycles, cycles.group(1)))
    print("icount: the profile sums to the total")
    print("icount: exact and repeatable")


def test_variants(a):
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"), ["variant-test", "2000"])
    print(out, end="")
    if rc != 0 or " 0 mismatches" not in out:
        fail("a variant differs from the reference on %s (exit status %d)" % (a.cpu, rc))


def bench_best_against_reference(a, prefix, command, args, after=()):
    """One device bench subcommand (`command` ARGS... VARIANT AFTER...) for the CPU's best variant of the list
    the firmware prints as "PREFIX NAME" (the first but cmsis_nn) and for the reference: each counts
    one call, bit-exact with the reference, and the optimized one counts fewer."""
    info = target_info(a.qlstm, a.cpu)
    elf = os.path.join(info["dir"], "qlstm_device.elf")
    plugin = os.path.join(info["build"], "tools/qemu_icount/libqlstm_icount.so")
    rc, out = qemu(info, elf, ["variants"], timeout=60)
    names = [l.split()[1] for l in out.splitlines() if l.startswith(prefix + " ")]
    if rc != 0 or not names or names[-1] != "reference":
        fail("the firmware lists no '%s' variants ending with the reference:\n%s" % (prefix, out))
    best = [n for n in names if n != "cmsis_nn"][0]
    counts = {}
    for variant in dict.fromkeys([best, "reference"]):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "counts.txt")
            rc, out = qemu(info, elf, [command] + args + [variant] + list(after), plugin="%s,out=%s" % (plugin, path), timeout=120)
            print(out, end="")
            if rc != 0 or "bit-exact with reference" not in out:
                fail("%s %s exited with status %d" % (command, variant, rc))
            got = open(path).read().split()
            if len(got) != 2 or got[0] != "instructions":
                fail("%s %s: expected one count, got %s" % (command, variant, got))
            counts[variant] = int(got[1])
            print("%s: %s counted %d instructions" % (command, variant, counts[variant]))
    if best != "reference" and counts[best] >= counts["reference"]:
        fail("%s takes no fewer instructions than the reference" % best)
    print("%s: %s counts fewer instructions than the reference" % (command, best))


def test_fc_bench(a):
    """fc-bench, the FC measurement behind docs/performance.md."""
    bench_best_against_reference(a, "fc", "fc-bench", ["64", "64", "per-channel"])


def test_lstm_s16_bench(a):
    """lstm-s16-bench, the 16x8 LSTM measurement behind docs/performance.md (bench/s16_table.py), at
    a small time-major batch of 2; then a call that does not fit the arena is refused (status 2)."""
    bench_best_against_reference(a, "lstm_s16", "lstm-s16-bench", ["2", "5", "12", "20"], ["time-major"])
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"),
                   ["lstm-s16-bench", "1", "4096", "4096", "4096", "reference"], timeout=60)
    print(out, end="")
    if rc != 2 or "fit this firmware's arena" not in out:
        fail("lstm-s16-bench of a call too large for the arena: status %d" % rc)
    print("lstm-s16-bench: a call too large for the arena is refused")


def test_pool_bench(a):
    """pool-bench, the pooling measurement behind docs/performance.md (bench/pool_table.py): the
    average of 100 steps of 128 features, over time; then a geometry the kernel refuses (status 2)."""
    bench_best_against_reference(a, "pool", "pool-bench", ["avg", "100", "1", "128", "100", "1", "1", "0"])
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"),
                   ["pool-bench", "max", "4", "4", "8", "2", "2", "0", "0", "reference"], timeout=60)
    print(out, end="")
    if rc != 2 or "invalid geometry" not in out:
        fail("pool-bench with stride 0: status %d" % rc)
    print("pool-bench: an invalid geometry is refused")


def test_elementwise_bench(a):
    """elementwise-bench, the add and multiply measurement behind docs/performance.md
    (bench/elementwise_table.py): 1024 values each (a residual sum of 32 steps of 32 features);
    then a length the arena cannot hold (status 2)."""
    for kind in ("add", "mul"):
        bench_best_against_reference(a, kind, "elementwise-bench", [kind, "1024"])
    info = target_info(a.qlstm, a.cpu)
    rc, out = qemu(info, os.path.join(info["dir"], "qlstm_device.elf"),
                   ["elementwise-bench", "add", "0", "reference"], timeout=60)
    print(out, end="")
    if rc != 2 or "N must be positive" not in out:
        fail("elementwise-bench with N = 0: status %d" % rc)
    print("elementwise-bench: an empty call is refused")


def main():
    global np
    if sys.argv[1:] == ["count-models"]:
        print(len(MODELS))
        return
    import numpy
    np = numpy
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["fault", "models", "emitted", "whole", "icount", "variants", "fc_bench", "elementwise_bench",
                                     "lstm_s16_bench", "s16", "pool_bench"])
    p.add_argument("--qlstm", required=True)
    p.add_argument("--cpu", required=True)
    p.add_argument("--work")
    p.add_argument("--source")
    a = p.parse_args()
    {"fault": test_fault, "models": test_models, "emitted": test_emitted, "whole": test_whole, "icount": test_icount,
     "variants": test_variants, "fc_bench": test_fc_bench, "lstm_s16_bench": test_lstm_s16_bench,
     "s16": test_s16, "pool_bench": test_pool_bench, "elementwise_bench": test_elementwise_bench}[a.mode](a)


if __name__ == "__main__":
    main()
