#!/usr/bin/python3
"""Writes the float GRU reference arrays beside this script with Debian's python3-torch:
nn.GRU(5, 7, batch_first=True), seed 5, on x [3, 9, 5] from h0 [3, 7]; y, h_n forward, and
y_rev, h_n_rev for the reverse direction (the same weights on the time-flipped input, its output
flipped back, as ONNX's "reverse" GRU lays it out). Deterministic (seeded, one thread)."""
import os

import numpy as np
import torch

torch.set_num_threads(1)
torch.manual_seed(5)
here = os.path.dirname(os.path.abspath(__file__))
gru = torch.nn.GRU(5, 7, batch_first=True).eval()
x = torch.randn(3, 9, 5)
h0 = torch.randn(3, 7) * 0.5
with torch.no_grad():
    y, h = gru(x, h0.unsqueeze(0))
    yr, hr = gru(torch.flip(x, [1]), h0.unsqueeze(0))
arrays = {"weight_ih": gru.weight_ih_l0, "weight_hh": gru.weight_hh_l0, "bias_ih": gru.bias_ih_l0,
          "bias_hh": gru.bias_hh_l0, "x": x, "h0": h0, "y": y, "h_n": h[0],
          "y_rev": torch.flip(yr, [1]), "h_n_rev": hr[0]}
for name, value in arrays.items():
    np.save(os.path.join(here, name + ".npy"), np.ascontiguousarray(value.detach().numpy().astype(np.float32)))
print("wrote", here)
