#!/usr/bin/python3
"""Writes the inputs of the `qlstm eval` CLI tests (tests/CMakeLists.txt, cli_eval_*) that the
bundled examples do not provide:
  one_digit.npy       float32 [1, 8, 8]: the first held-out digit of examples/digits/test.npy
  label_class_10.npy  int64 [1]: the label 10, not a class of the digits classifier (0 ... 9)
  state_*.npy         the inputs of a model with state inputs and outputs (below)
Needs python3-numpy.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
digits = np.load(os.path.join(HERE, "..", "..", "..", "examples", "digits", "test.npy"))
np.save(os.path.join(HERE, "one_digit.npy"), digits[:1])
np.save(os.path.join(HERE, "label_class_10.npy"), np.array([10], dtype=np.int64))

# For torch_bi2_state (tests/onnx/models: 2 layers, bidirectional, H 5, sequence-first [T, B, 3],
# (h0, c0) inputs, (y, h_n, c_n) outputs), also read by plain_y_c_output (input [T, B, 3]):
#   state_calibration.npy  float32 [5, 16, 3]: N(0, 1)
#   state_held_out.npy     float32 [5, 8, 3]: N(0, 1), other draws
#   state_wide.npy         float32 [5, 8, 3]: the held-out data x 4, far beyond the calibration range
#   state_h0.npy, state_c0.npy  float32 [4, 8, 5]: a small initial state, inside every calibrated range
#   state_c0_clipped.npy   state_c0.npy with c0[0, 0, 2] = 100: beyond any calibrated cell range
rng = np.random.default_rng(15)
np.save(os.path.join(HERE, "state_calibration.npy"), rng.standard_normal((5, 16, 3)).astype(np.float32))
held_out = rng.standard_normal((5, 8, 3)).astype(np.float32)
np.save(os.path.join(HERE, "state_held_out.npy"), held_out)
np.save(os.path.join(HERE, "state_wide.npy"), 4 * held_out)
SMALL = 0.02
np.save(os.path.join(HERE, "state_h0.npy"), rng.uniform(-SMALL, SMALL, (4, 8, 5)).astype(np.float32))
c0 = rng.uniform(-SMALL, SMALL, (4, 8, 5)).astype(np.float32)
np.save(os.path.join(HERE, "state_c0.npy"), c0)
c0[0, 0, 2] = 100
np.save(os.path.join(HERE, "state_c0_clipped.npy"), c0)
