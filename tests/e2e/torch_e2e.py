#!/usr/bin/python3
"""End to end with torch at test time: build nn.LSTM models of several shapes, export them with
torch.onnx.export (both layouts, several opsets), compile with `qlstm compile`, run with
`qlstm run --float`, and compare with torch's own fp32 output: SQNR >= 30 dB on held-out data.
Also checks that a model torch exports with a Linear head is refused with its message.

Usage: torch_e2e.py QLSTM_BINARY WORKDIR   (exit 77 = skipped: torch, onnx or numpy missing)
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import onnx  # noqa: F401  (torch.onnx.export needs it)
except ImportError as e:
    print("skipped: %s (install python3-torch python3-onnx python3-numpy)" % e)
    sys.exit(77)

qlstm, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)


class Only(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)[0]


def run(*args):
    r = subprocess.run([qlstm] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def sqnr(ref, got):
    return 10 * np.log10(np.mean(ref ** 2) / np.mean((ref - got) ** 2))


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


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4)
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


head_path = os.path.join(work, "head.onnx")
torch.onnx.export(Head().eval(), torch.randn(5, 1, 3), head_path, opset_version=14)
np.save(os.path.join(work, "head_calib.npy"), torch.randn(5, 4, 3).numpy())
rc, out = run("compile", head_path, "--calibration", os.path.join(work, "head_calib.npy"),
              "-o", os.path.join(work, "head_out"))
ok = rc == 1 and "op 'MatMul' is not supported" in out and not os.path.exists(os.path.join(work, "head_out"))
failures += 0 if ok else 1
print("%s refusal of a Linear head (exit %d)" % ("PASS" if ok else "FAIL", rc))
print("%d passed, %d failed" % (len(cases) + 1 - failures, failures))
sys.exit(1 if failures else 0)
