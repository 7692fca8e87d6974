#!/usr/bin/python3
"""Writes the inputs of the `qlstm eval` CLI tests (tests/CMakeLists.txt, cli_eval_*) that the
bundled examples do not provide:
  one_digit.npy       float32 [1, 8, 8]: the first held-out digit of examples/digits/test.npy
  label_class_10.npy  int64 [1]: the label 10, not a class of the digits classifier (0 ... 9)
Needs python3-numpy.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
digits = np.load(os.path.join(HERE, "..", "..", "..", "examples", "digits", "test.npy"))
np.save(os.path.join(HERE, "one_digit.npy"), digits[:1])
np.save(os.path.join(HERE, "label_class_10.npy"), np.array([10], dtype=np.int64))
