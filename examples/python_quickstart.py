#!/usr/bin/python3
"""The Python quickstart (docs/python.md): train a small nn.LSTM digit classifier (the 8x8 digits of
scikit-learn's load_digits, read row by row), compile the torch module in-process with
`qlstm.compile`, print its top-1 accuracy float vs int8 on held-out digits and `qlstm eval`'s
figures (computed in-process), run it on the emulated Cortex-M55 when the firmware and QEMU are
there, and write the firmware source.

    PYTHONPATH=build/python /usr/bin/python3 examples/python_quickstart.py [OUTDIR]

OUTDIR (default build/python_quickstart) receives quickstart.qlstm, quickstart_model.h,
quickstart_model.cc and quickstart_report.json, exactly as `qlstm compile` writes them.
Deterministic (seeded, one thread); trains in seconds. Needs python3-torch and python3-sklearn.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits

import qlstm

torch.manual_seed(0)
torch.set_num_threads(1)
outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "python_quickstart")

# The digits as sequences: 8 time steps (rows) of 8 pixels, batch-first [B, 8, 8].
digits = load_digits()
x = (digits.data.reshape(-1, 8, 8) / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x))
train, test = order[: len(x) * 3 // 4], order[len(x) * 3 // 4:]


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 32, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, seq):
        out, _ = self.lstm(seq)
        return torch.softmax(self.head(out[:, -1]), dim=-1)


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
for epoch in range(30):
    for idx in torch.randperm(len(xt), generator=torch.Generator().manual_seed(epoch)).split(64):
        opt.zero_grad()
        # The log of the softmax output: the head's cross-entropy.
        loss = nn.functional.nll_loss(torch.log(model(xt[idx]) + 1e-9), yt[idx])
        loss.backward()
        opt.step()
model.eval()

# Compile in-process: 256 training digits calibrate; the rest of the options are the CLI's defaults.
calibration = x[train][:256]
compiled = qlstm.compile(model, calibration, name="quickstart")
print("compiled %s: %d ops (%s)" % (compiled.name, len(compiled.ops), ", ".join(op["kind"] for op in compiled.ops)))
report = compiled.report
sqnr = report["held_out"].get("sqnr_db")  # a number, "inf", or absent (no held-out figure)
print("  flash %d bytes, RAM %d bytes; SQNR int8 vs float held out: %s dB" % (
    report["memory"]["flash_bytes"], report["memory"]["ram_bytes"],
    "%.2f" % sqnr if isinstance(sqnr, float) else sqnr))

with torch.no_grad():
    float_pred = model(torch.from_numpy(x[test])).numpy().argmax(1)
int8_pred = compiled.run(x[test]).argmax(1)  # the device's integer arithmetic, bit for bit
print("top-1 accuracy on %d held-out digits: float %.2f %%, int8 %.2f %% (argmax agreement %.2f %%)" % (
    len(test), 100 * (float_pred == y[test]).mean(), 100 * (int8_pred == y[test]).mean(),
    100 * (float_pred == int8_pred).mean()))

ev = compiled.evaluate(x[test], y[test])  # qlstm eval's figures: float (the exported module) vs int8
print("evaluate: SQNR %.2f dB, max abs error %.4f, argmax agreement %.2f %%, top-1 float %.2f %% int8 %.2f %%" % (
    ev.sqnr_db, ev.max_abs_error, 100 * ev.argmax_agreement, 100 * ev.float_top1, 100 * ev.int8_top1))

missing = qlstm.target_missing("cortex-m55")
if missing is None:
    on_device = compiled.run_on_target(x[test][:64], cpu="cortex-m55")
    same = on_device.tobytes() == compiled.run(x[test][:64]).tobytes()
    print("emulated Cortex-M55 (QEMU), 64 digits: %s; one call: %d instructions" % (
        "bit-exact with the host" if same else "DIFFERS from the host", compiled.bench("cortex-m55").instructions))
else:
    print("emulated Cortex-M55 not run: " + missing)

written = compiled.save(outdir)
print("firmware source: " + ", ".join(sorted(written.values())))
