#!/usr/bin/python3
"""Trains the bundled example: an nn.LSTM forecaster of yearly sunspot numbers (1700-2008, the
data set shipped by Debian's python3-statsmodels), and writes what `bash scripts/example.sh` uses:
  sunspots_lstm.onnx   the LSTM alone (batch_first, input [B, 32, 1], output [B, 32, 16]),
                       exported with torch.onnx.export, opset 14
  calibration.npy      float32 [N, 32, 1]: the training windows (a seeded random 75% of all
                       33-year windows; the training set of the float model too)
  test.npy             float32 [M, 32, 1]: the other 25%, held out from training and calibration
The linear head that turns the hidden state into a forecast stays in float on the host; only the
LSTM is compiled. Deterministic (seeded, one thread). Needs python3-torch, python3-onnx and
python3-statsmodels.
"""
import json
import os

import numpy as np
import statsmodels.api as sm
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
T, H = 32, 16
torch.manual_seed(0)
torch.set_num_threads(1)

series = sm.datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(np.float32)
years = sm.datasets.sunspots.load_pandas().data["YEAR"].to_numpy()
mean, std = float(series.mean()), float(series.std())
z = (series - mean) / std

all_windows = np.stack([z[k:k + T + 1] for k in range(len(z) - T)])
order = np.random.default_rng(0).permutation(len(all_windows))
split = len(order) * 3 // 4
train = all_windows[np.sort(order[:split])]
test = all_windows[np.sort(order[split:])]
x_train = torch.tensor(train[:, :T, None])
y_train = torch.tensor(train[:, 1:])


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y).squeeze(-1)


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(600):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x_train), y_train)
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    test_loss = float(nn.functional.mse_loss(model(torch.tensor(test[:, :T, None])), torch.tensor(test[:, 1:])))


class LstmOnly(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)[0]


torch.onnx.export(LstmOnly(model.lstm).eval(), x_train[:1], os.path.join(HERE, "sunspots_lstm.onnx"),
                  opset_version=14, input_names=["x"], output_names=["hidden"])
np.save(os.path.join(HERE, "calibration.npy"), train[:, :T, None].astype(np.float32))
np.save(os.path.join(HERE, "test.npy"), test[:, :T, None].astype(np.float32))
with open(os.path.join(HERE, "model.json"), "w") as f:
    json.dump({"generator": "examples/sunspots/train.py", "torch_version": torch.__version__,
               "normalization": {"mean": mean, "std": std}, "window": T, "hidden_size": H,
               "train_mse": float(loss), "test_mse": test_loss,
               "years": [int(years[0]), int(years[-1])]}, f, indent=1)
    f.write("\n")
print("train mse %.4f, test mse %.4f (normalized units)" % (float(loss), test_loss))
