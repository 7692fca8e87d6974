#!/usr/bin/python3
"""End to end with torch at test time: build nn.LSTM models of several shapes, export them with
torch.onnx.export (both layouts, several opsets), compile with `qlstm compile`, run with
`qlstm run --float`, and compare with torch's own fp32 output: SQNR >= 30 dB on held-out data.
The same stacks, directions and states with nn.GRU (issue 16): SQNR >= 35 dB wherever the LSTM
of the same configuration reaches it (and >= 30 dB always), and GRUs with a Linear head.
Whole models (the layers around the LSTM) are torch_whole_models.py's.

Usage: torch_e2e.py QLSTM_BINARY WORKDIR   (exit 77 = skipped: torch, onnx or numpy missing)
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_common import nn, np, run, sqnr, torch, work  # noqa: E402  (exits 77 without torch)


class Only(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)[0]


failures = 0
cases = [(4, 8, 20, True, 13), (10, 32, 30, False, 14), (1, 16, 50, True, 15), (16, 48, 12, False, 16),
         (8, 8, 64, True, 17)]
for k, (I, H, T, batch_first, opset) in enumerate(cases):
    lstm = nn.LSTM(I, H, batch_first=batch_first).eval()
    with torch.no_grad():  # a trained-looking model: a memory-keeping forget bias
        lstm.bias_hh_l0[H:2 * H] += 1.0
    shape = (lambda b: (b, T, I)) if batch_first else (lambda b: (T, b, I))
    calib = torch.randn(*shape(48)) * 0.8
    test = torch.randn(*shape(16)) * 0.8
    name = "e2e%d" % k
    onnx_path = os.path.join(work, name + ".onnx")
    torch.onnx.export(Only(lstm), torch.randn(*shape(2)), onnx_path, opset_version=opset)
    np.save(os.path.join(work, name + "_calib.npy"), calib.numpy())
    np.save(os.path.join(work, name + "_test.npy"), test.numpy())
    rc, out = run("compile", onnx_path, "--calibration", os.path.join(work, name + "_calib.npy"),
                  "-o", os.path.join(work, name), "--name", name)
    if rc != 0:
        print("FAIL %s: compile exited %d\n%s" % (name, rc, out))
        failures += 1
        continue
    y_path = os.path.join(work, name + "_y.npy")
    rc, out = run("run", os.path.join(work, name, name + ".qlstm"), "--input",
                  os.path.join(work, name + "_test.npy"), "--output", y_path, "--float")
    if rc != 0:
        print("FAIL %s: run exited %d\n%s" % (name, rc, out))
        failures += 1
        continue
    with torch.no_grad():
        ref = lstm(test)[0].numpy()
    got = np.load(y_path)
    s = sqnr(ref, got)
    ok = got.shape == ref.shape and s >= 30.0
    failures += 0 if ok else 1
    print("%s %s: I=%d H=%d T=%d %s opset %d: SQNR %.2f dB vs torch fp32" % (
        "PASS" if ok else "FAIL", name, I, H, T, "batch_first" if batch_first else "seq_first", opset, s))


# Past one layer: stacked, bidirectional, a given (h0, c0), the final (h_n, c_n). Each is held to
# the single-layer threshold; the int8 output streamed in random chunks must equal one call, and
# h_n / c_n must match torch's. A GRU (no cell): a given h0, the final h_n.
def is_gru(rnn):
    return isinstance(rnn, nn.GRU)


def call(rnn, x, h0=None, c0=None):
    """(y, h_n, c_n) of an LSTM or a GRU (c_n None), from the given state or zero."""
    if is_gru(rnn):
        y, h = rnn(x, h0) if h0 is not None else rnn(x)
        return y, h, None
    y, (h, c) = rnn(x, (h0, c0)) if h0 is not None else rnn(x)
    return y, h, c


class Full(nn.Module):
    def __init__(self, lstm, state, final):
        super().__init__()
        self.lstm, self.state, self.final = lstm, state, final

    def forward(self, x, *hc):
        y, h, c = call(self.lstm, x, *hc) if self.state else call(self.lstm, x)
        return ((y, h) if c is None else (y, h, c)) if self.final else y


GRU_BAR_DB = 35.0  # issue 16: where the LSTM of the same configuration reaches it


def single_layer_sqnr(name, I, H, T, batch_first):
    """SQNR of one forward layer of the same size, trained-looking the same way, on the same kind of data."""
    lstm = nn.LSTM(I, H, batch_first=batch_first).eval()
    with torch.no_grad():
        lstm.bias_hh_l0[H:2 * H] += 1.0
    shape = (lambda b: (b, T, I)) if batch_first else (lambda b: (T, b, I))
    calib, test = torch.randn(*shape(48)) * 0.8, torch.randn(*shape(8)) * 0.8
    base = os.path.join(work, name + "_single")
    torch.onnx.export(Only(lstm), torch.randn(*shape(2)), base + ".onnx", opset_version=14)
    np.save(base + "_calib.npy", calib.numpy())
    np.save(base + "_test.npy", test.numpy())
    rc, out = run("compile", base + ".onnx", "--calibration", base + "_calib.npy", "-o", base, "--name", "single")
    rc2, out2 = run("run", os.path.join(base, "single.qlstm"), "--input", base + "_test.npy", "--output",
                    base + "_y.npy", "--float")
    if rc or rc2:
        print(out + out2)
        return float("inf")
    with torch.no_grad():
        return sqnr(lstm(test)[0].numpy(), np.load(base + "_y.npy"))


lstm_cases = [  # (name, I, H, T, layers, bidirectional, batch_first, given state, final state)
    ("stack2", 6, 16, 30, 2, False, False, False, False),
    ("stack3", 4, 12, 24, 3, False, True, False, False),
    ("bi1", 5, 10, 20, 1, True, False, False, False),
    ("bi2", 3, 8, 16, 2, True, True, False, False),
    ("state1", 4, 10, 20, 1, False, True, True, True),
    ("state2", 5, 12, 18, 2, False, False, True, True),
    ("state_bi2", 3, 8, 14, 2, True, True, True, True),
    ("final3", 4, 8, 16, 3, False, True, False, True),
]
# (cell, case): every configuration as an LSTM, then as a GRU (compared with the LSTM's SQNR).
program_cases = [(nn.LSTM,) + c for c in lstm_cases] + [(nn.GRU, "gru_" + c[0]) + c[1:] for c in lstm_cases]
lstm_sqnr = {}
rng = np.random.default_rng(7)
for cell, name, I, H, T, L, bi, batch_first, state, final in program_cases:
    lstm = cell(I, H, num_layers=L, bidirectional=bi, batch_first=batch_first).eval()
    gru = cell is nn.GRU
    with torch.no_grad():  # trained-looking: an LSTM's forget gate, a GRU's update gate biased to keep (both [H:2H])
        for l in range(L):
            for sfx in ("", "_reverse") if bi else ("",):
                getattr(lstm, "bias_hh_l%d%s" % (l, sfx))[H:2 * H] += 1.0
    D = 2 if bi else 1
    shape = (lambda b, t=T: (b, t, I)) if batch_first else (lambda b, t=T: (t, b, I))
    calib = torch.randn(*shape(48)) * 0.8
    test = torch.randn(*shape(8)) * 0.8
    with torch.no_grad():  # a state the model itself produced, as a caller carrying it over has
        _, h0, c0 = call(lstm, torch.randn(*shape(8)) * 0.8)
    if gru:
        c0 = torch.zeros_like(h0)  # unused: keeps the file handling below the same
    model = Full(lstm, state, final)
    onnx_path = os.path.join(work, name + ".onnx")
    states = 1 if gru else 2
    example = (torch.randn(*shape(2)),) + ((torch.zeros(L * D, 2, H),) * states if state else ())
    torch.onnx.export(model, example, onnx_path, opset_version=14,
                      input_names=["x", "h0", "c0"][:len(example)],
                      output_names=["y", "h_n", "c_n"][:1 + states if final else 1])
    paths = {k: os.path.join(work, "%s_%s.npy" % (name, k)) for k in ("calib", "test", "h0", "c0", "y", "hn", "cn", "y8", "ys8")}
    np.save(paths["calib"], calib.numpy())
    np.save(paths["test"], test.numpy())
    np.save(paths["h0"], h0.numpy())
    np.save(paths["c0"], c0.numpy())
    rc, out = run("compile", onnx_path, "--calibration", paths["calib"], "-o", os.path.join(work, name), "--name", name)
    if rc != 0:
        print("FAIL %s: compile exited %d\n%s" % (name, rc, out))
        failures += 1
        continue
    qm = os.path.join(work, name, name + ".qlstm")
    state_args = (["--h0", paths["h0"]] + ([] if gru else ["--c0", paths["c0"]])) if state else []
    rc, out = run("run", qm, "--input", paths["test"], "--output", paths["y"], "--float", "--h-n", paths["hn"],
                  *([] if gru else ["--c-n", paths["cn"]]), *state_args)
    if rc != 0:
        print("FAIL %s: run exited %d\n%s" % (name, rc, out))
        failures += 1
        continue
    with torch.no_grad():
        ref, ref_h, ref_c = call(lstm, test, h0, c0) if state else call(lstm, test)
    got, got_h = np.load(paths["y"]), np.load(paths["hn"])
    s_y, s_h = sqnr(ref.numpy(), got), sqnr(ref_h.numpy(), got_h)
    ok = got.shape == tuple(ref.shape) and got_h.shape == tuple(ref_h.shape) and s_y >= 30.0 and s_h >= 30.0
    if gru:
        # The bar of issue 16: 35 dB where the LSTM of the same configuration reaches it.
        twin = lstm_sqnr[name[len("gru_"):]]
        ok = ok and (s_y >= GRU_BAR_DB or twin < GRU_BAR_DB)
        detail = "SQNR y %.2f (the LSTM of this configuration: %.2f), h_n %.2f dB vs torch fp32" % (s_y, twin, s_h)
    else:
        got_c = np.load(paths["cn"])
        s_c = sqnr(ref_c.numpy(), got_c)
        single = single_layer_sqnr(name, I, H, T, batch_first)
        lstm_sqnr[name] = s_y
        ok = ok and s_c >= 30.0 and s_y >= single
        detail = "SQNR y %.2f (one layer of the same size: %.2f), h_n %.2f, c_n %.2f dB vs torch fp32" % (
            s_y, single, s_h, s_c)
    if not bi:
        # Streaming: int8 in, the same bytes in random chunks as in one call (only a forward model
        # streams), from a random int8 / int16 state when the model takes one.
        x8 = os.path.join(work, name + "_x8.npy")
        np.save(x8, np.clip(np.round(test.numpy() / 0.05), -128, 127).astype(np.int8))
        int_state = []
        if state:
            h8, c16 = os.path.join(work, name + "_h8.npy"), os.path.join(work, name + "_c16.npy")
            np.save(h8, rng.integers(-128, 128, h0.shape).astype(np.int8))
            np.save(c16, rng.integers(-3000, 3000, c0.shape).astype(np.int16))
            int_state = ["--h0", h8, "--c0", c16]
            if gru:  # a GRU's int state is its Q0.15 hidden (int16)
                np.save(h8, rng.integers(-30000, 30000, h0.shape).astype(np.int16))
                int_state = ["--h0", h8]
        rc, out = run("run", qm, "--input", x8, "--output", paths["y8"], *int_state)
        one = np.load(paths["y8"]) if rc == 0 else None
        for _ in range(3):
            chunk = int(rng.integers(1, T + 1))
            rc2, out2 = run("run", qm, "--input", x8, "--output", paths["ys8"], "--chunk", str(chunk), *int_state)
            if one is None or rc2 != 0 or not np.array_equal(np.load(paths["ys8"]), one):
                ok = False
                detail += "; chunks of %d differ from one call (%s)" % (chunk, out + out2)
        detail += "; streamed in random chunks == one call"
    failures += 0 if ok else 1
    print("%s %s: %s I=%d H=%d T=%d layers=%d %s %s%s%s: %s" % (
        "PASS" if ok else "FAIL", name, "GRU" if gru else "LSTM", I, H, T, L, "bidirectional" if bi else "forward",
        "batch_first" if batch_first else "seq_first", (", given h0" if gru else ", given (h0, c0)") if state else "",
        (", returns h_n" if gru else ", returns (h_n, c_n)") if final else "", detail))


# A stacked model exported with a symbolic sequence length: the emitted activation buffers need a
# bound, so compile asks for --max-time-steps (and writes nothing), then accepts it.
dyn = nn.LSTM(3, 6, num_layers=2).eval()
dyn_path = os.path.join(work, "dynamic.onnx")
torch.onnx.export(Only(dyn), torch.randn(5, 1, 3), dyn_path, opset_version=14, input_names=["x"],
                  dynamic_axes={"x": {0: "T", 1: "B"}})
np.save(os.path.join(work, "dynamic_calib.npy"), torch.randn(9, 4, 3).numpy())
dyn_out = os.path.join(work, "dynamic_out")
shutil.rmtree(dyn_out, ignore_errors=True)  # from an earlier run
rc, out = run("compile", dyn_path, "--calibration", os.path.join(work, "dynamic_calib.npy"), "-o", dyn_out)
nothing_written = not os.path.exists(dyn_out)
rc2, out2 = run("compile", dyn_path, "--calibration", os.path.join(work, "dynamic_calib.npy"), "-o", dyn_out,
                "--max-time-steps", "64")
ok = rc == 1 and "--max-time-steps" in out and nothing_written and rc2 == 0 and "#define DYNAMIC_MAX_TIME_STEPS 64" in open(
    os.path.join(dyn_out, "dynamic_model.h")).read()
failures += 0 if ok else 1
print("%s a symbolic sequence length: --max-time-steps asked for, then used (exits %d, %d)" % (
    "PASS" if ok else "FAIL", rc, rc2))


print("%d passed, %d failed" % (len(cases) + len(program_cases) + 1 - failures, failures))  # + dynamic
sys.exit(1 if failures else 0)
