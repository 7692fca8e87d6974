#!/usr/bin/python3
"""16x8 end to end with torch at test time (issue 17): torch models exported with
torch.onnx.export, compiled three ways with `qlstm compile` — int8 (the default), `--activations
int16` and, for stacks, each layer alone in 16x8 (`int16:L`, mixed precision) — run with `qlstm run
--float` on held-out data the compiler never saw, and compared with torch's own fp32 output. Bars:
16x8 above int8 on every model (a softmax output is 16x8 too, int16 probabilities); every mixed
build compiles, runs and validates. Prints one table row
per model and mode, with the report's flash and RAM (docs/accuracy.md, "16x8 whole models").

Usage: torch_s16.py QLSTM_BINARY WORKDIR   (exit 77 = skipped: torch, onnx or numpy missing)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_common import models, np, run, sqnr, torch, work  # noqa: E402  (exits 77 without torch)


def trained_looking(model):
    """An LSTM's forget gates biased to keep, as trained models are."""
    with torch.no_grad():
        for name, p in model.lstm.named_parameters():
            if name.startswith("bias_hh"):
                H = p.shape[0] // 4
                p[H:2 * H] += 1.0


cases = [  # (name, model, T, softmax output)
    ("seq_1", models.LstmModel(4, 32, pick="seq"), 24, False),
    ("stack_2", models.LstmModel(6, 24, pick="seq", num_layers=2), 24, False),
    ("stack_3_bi", models.LstmModel(5, 16, pick="seq", num_layers=3, bidirectional=True), 20, False),
    ("forecaster_2", models.forecaster(input_size=3, hidden=32, outputs=2, num_layers=2), 32, False),
    ("h_n_mlp_2", models.h_n_mlp(input_size=4, hidden=24, inner=16, outputs=3, num_layers=2), 20, False),
    ("classifier_2", models.classifier(input_size=6, hidden=24, classes=5, num_layers=2), 16, True),
    ("front_2", models.front_end(input_size=8, projected=12, hidden=24, num_layers=2), 24, False),
]
failures = passes = 0
print("| model | mode | SQNR dB | flash B | RAM B |")
for name, model, T, softmax in cases:
    model.eval()
    trained_looking(model)
    calib, test = torch.randn(128, T, model.input_size) * 0.8, torch.randn(64, T, model.input_size) * 0.8
    base = os.path.join(work, name)
    models.export(model, calib[:2], base + ".onnx", opset=17)
    np.save(base + "_calib.npy", calib.numpy())
    np.save(base + "_test.npy", test.numpy())
    with torch.no_grad():
        ref = model(test).numpy()
    layers = model.lstm.num_layers
    modes = ["int8", "int16"] + (["int16:%d" % l for l in range(layers)] if layers > 1 else [])
    got_db = {}
    for mode in modes:
        tag = mode.replace(":", "_")
        out_dir = os.path.join(work, name + "_" + tag)
        rc, out = run("compile", base + ".onnx", "--calibration", base + "_calib.npy", "-o", out_dir, "--name", name,
                      "--activations", mode)
        y = os.path.join(work, "%s_%s_y.npy" % (name, tag))
        rc2, out2 = (1, "") if rc else run("run", os.path.join(out_dir, name + ".qlstm"), "--input", base + "_test.npy",
                                           "--output", y, "--float")
        if rc or rc2:
            print("FAIL %s --activations %s: exit %d/%d\n%s%s" % (name, mode, rc, rc2, out, out2))
            failures += 1
            continue
        mem = json.load(open(os.path.join(out_dir, name + "_report.json")))["memory"]
        got_db[mode] = sqnr(ref, np.load(y).reshape(ref.shape))
        print("| %s | %s | %.2f | %d | %d |" % (name, mode, got_db[mode], mem["flash_bytes"], mem["ram_bytes"]))
    if "int8" in got_db and "int16" in got_db:
        gain = got_db["int16"] - got_db["int8"]
        ok = gain > 0.0
        failures += 0 if ok else 1
        passes += 1 if ok else 0
        print("%s %s: 16x8 %.2f dB, int8 %.2f dB held out (%+.2f dB)%s" % (
            "PASS" if ok else "FAIL", name, got_db["int16"], got_db["int8"], gain,
            "; softmax output: int16 probabilities" if softmax else ""))

print("%d passed, %d failed" % (passes, failures))
sys.exit(1 if failures else 0)
