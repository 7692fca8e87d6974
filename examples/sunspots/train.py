#!/usr/bin/python3
"""Trains the bundled forecaster: an nn.LSTM with a Linear head on every step that forecasts next
year's sunspot number from the years before (1700-2008, the data set shipped by Debian's
python3-statsmodels), and writes what `bash scripts/example.sh` uses:
  sunspots_lstm.onnx   the whole model, LSTM -> Linear on every step (batch_first, input
                       [B, 32, 1], output [B, 32, 1]: at step t the forecast of year t + 1, in
                       normalized units), torch.onnx.export, opset 14
  calibration.npy      float32 [N, 32, 1]: every 32-year window of 1954-2008
  test.npy             float32 [M, 32, 1]: every 32-year window of 1890-1953
  test_targets.npy     float32 [M, 32, 1]: what each step of test.npy should forecast (the next year)
  model.json           the normalization, provenance, and "output_units": how `qlstm eval
                       --units` turns an output into sunspots (value * scale + offset)
The three splits are disjoint stretches of years, so no window shares a year with another split:
the model trains on 1700-1889 only, the compiler calibrates on 1954-2008 (the range of the
strongest cycles) and the test years are seen by neither. The normalization (mean, std) is the
training years'. Deterministic (seeded, one thread, CPU). Needs python3-torch, python3-onnx and
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
TRAIN_END, TEST_END = 1890, 1954  # train: years < 1890; test: 1890-1953; calibration: 1954 on
torch.manual_seed(0)
torch.set_num_threads(1)

data = sm.datasets.sunspots.load_pandas().data
series = data["SUNACTIVITY"].to_numpy(np.float32)
years = data["YEAR"].to_numpy().astype(int)
train_years, test_years = years < TRAIN_END, (years >= TRAIN_END) & (years < TEST_END)
calibration_years = years >= TEST_END
mean, std = float(series[train_years].mean()), float(series[train_years].std())
z = (series - mean) / std


def windows(part):
    """Every T + 1-year window inside one stretch of years: T inputs, the next year each forecasts."""
    s = z[part]
    w = np.stack([s[k:k + T + 1] for k in range(len(s) - T)])
    return w[:, :T, None].astype(np.float32), w[:, 1:, None].astype(np.float32)


x_train, y_train = windows(train_years)
x_test, y_test = windows(test_years)
x_calibration, _ = windows(calibration_years)


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
xt, yt = torch.tensor(x_train), torch.tensor(y_train)
for step in range(600):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(xt), yt)
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    forecast = model(torch.tensor(x_test)).numpy()
test_mae = float(np.abs(forecast - y_test).mean() * std)
persistence_mae = float(np.abs(x_test - y_test).mean() * std)  # "next year = this year"

torch.onnx.export(model, xt[:1], os.path.join(HERE, "sunspots_lstm.onnx"), opset_version=14,
                  input_names=["x"], output_names=["forecast"])
np.save(os.path.join(HERE, "calibration.npy"), x_calibration)
np.save(os.path.join(HERE, "test.npy"), x_test)
np.save(os.path.join(HERE, "test_targets.npy"), y_test)
with open(os.path.join(HERE, "model.json"), "w") as f:
    json.dump({"generator": "examples/sunspots/train.py", "torch_version": torch.__version__,
               "task": "forecast: at step t, the normalized sunspot number of year t + 1",
               "normalization": {"mean": mean, "std": std},
               "output_units": {"name": "sunspots", "scale": std, "offset": mean},
               "window": T, "hidden_size": H,
               "years": {"train": [int(years[0]), TRAIN_END - 1], "test": [TRAIN_END, TEST_END - 1],
                         "calibration": [TEST_END, int(years[-1])]},
               "windows": {"train": len(x_train), "test": len(x_test), "calibration": len(x_calibration)},
               "train_mse": float(loss), "test_mae_sunspots": test_mae,
               "test_persistence_mae_sunspots": persistence_mae}, f, indent=1)
    f.write("\n")
print("train mse %.4f (normalized); held-out forecast error %.2f sunspots (persistence: %.2f)"
      % (float(loss), test_mae, persistence_mae))
