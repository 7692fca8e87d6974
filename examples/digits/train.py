#!/usr/bin/python3
"""Trains the bundled classifier: an nn.LSTM that reads an 8x8 handwritten digit row by row (T = 8
steps of I = 8 pixels; the 1797 digits of scikit-learn's load_digits, shipped inside Debian's
python3-sklearn), with a Linear + Softmax head on the last step, and writes what
`bash scripts/example.sh` uses:
  digits_lstm.onnx     the whole model, LSTM -> y[:, -1] -> Linear -> Softmax (batch_first, input
                       [B, 8, 8], output [B, 10] class probabilities), torch.onnx.export, opset 14
  calibration.npy      float32 [200, 8, 8]: a seeded sample of the training split
  test.npy             float32 [M, 8, 8]: the held-out split (a seeded 25% of the digits, never
                       used for training or calibration)
  test_labels.npy      int32 [M]: their digits
  model.json           provenance, sizes and the float accuracy on the held-out split
With --cell gru it trains the same classifier with an nn.GRU instead and writes digits_gru.onnx
and model_gru.json only (the data files are the same split).
Pixels are scaled from 0..16 to 0..1. Deterministic (seeded, one thread, CPU); trains in seconds.
Needs python3-torch, python3-onnx and python3-sklearn.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
CELL = parser.parse_args().cell
HERE = os.path.dirname(os.path.abspath(__file__))
T, I, H, CLASSES = 8, 8, 32, 10
CALIBRATION = 200  # below the size from which qlstm compile shows its progress
torch.manual_seed(0)
torch.set_num_threads(1)

digits = load_digits()
images = (digits.data.reshape(-1, T, I) / 16.0).astype(np.float32)
labels = digits.target.astype(np.int32)
order = np.random.default_rng(0).permutation(len(images))
split = len(order) * 3 // 4
train_idx, test_idx = np.sort(order[:split]), np.sort(order[split:])
x_train, y_train = images[train_idx], labels[train_idx]
x_test, y_test = images[test_idx], labels[test_idx]
calibration = x_train[np.sort(np.random.default_rng(1).choice(len(x_train), CALIBRATION, replace=False))]


class DigitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = (nn.GRU if CELL == "gru" else nn.LSTM)(I, H, batch_first=True)
        self.head = nn.Linear(H, CLASSES)

    def logits(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=-1)


model = DigitClassifier()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
xt, yt = torch.tensor(x_train), torch.tensor(y_train, dtype=torch.long)
batches = torch.Generator().manual_seed(0)
for epoch in range(40):
    for idx in torch.randperm(len(xt), generator=batches).split(64):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model.logits(xt[idx]), yt[idx])
        loss.backward()
        opt.step()
model.eval()
with torch.no_grad():
    train_acc = float((model(xt).argmax(-1) == yt).float().mean())
    test_acc = float((model(torch.tensor(x_test)).argmax(-1).numpy() == y_test).mean())

torch.onnx.export(model, xt[:1], os.path.join(HERE, "digits_%s.onnx" % CELL), opset_version=14,
                  input_names=["x"], output_names=["probabilities"])
if CELL == "lstm":
    np.save(os.path.join(HERE, "calibration.npy"), calibration)
    np.save(os.path.join(HERE, "test.npy"), x_test)
    np.save(os.path.join(HERE, "test_labels.npy"), y_test)
with open(os.path.join(HERE, "model.json" if CELL == "lstm" else "model_gru.json"), "w") as f:
    json.dump({"generator": "examples/digits/train.py" + (" --cell gru" if CELL == "gru" else ""),
               "torch_version": torch.__version__, "cell": CELL,
               "task": "classification", "classes": CLASSES, "time_steps": T, "input_size": I, "hidden_size": H,
               "pixel_scale": 1 / 16, "train_samples": int(len(x_train)), "test_samples": int(len(x_test)),
               "calibration_samples": CALIBRATION, "train_accuracy": train_acc, "test_accuracy": test_acc}, f,
              indent=1)
    f.write("\n")
print("train accuracy %.4f, held-out accuracy %.4f (%d digits)" % (train_acc, test_acc, len(x_test)))
