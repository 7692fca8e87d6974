#!/usr/bin/env python3
"""Makes the .npz fixtures of tests/compiler/npy_test.cc and the CLI tests (committed; rerun to
regenerate): numpy's own archives, one array stored or deflated, and the refused kinds."""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
# [B=2, T=5, I=2] batch-first, numpy's default float64: the CLI's learned-state model's input.
x = np.linspace(-1.0, 1.0, 20).reshape(2, 5, 2)
np.savez(os.path.join(here, "one_stored.npz"), x)
np.savez_compressed(os.path.join(here, "one_deflated.npz"), calibration=x)
np.savez(os.path.join(here, "two.npz"), x, x)
np.savez(os.path.join(here, "none.npz"))
with open(os.path.join(here, "one_deflated.npz"), "rb") as f:
    data = bytearray(f.read())
with open(os.path.join(here, "truncated.npz"), "wb") as f:
    f.write(data[: len(data) // 2])
# One byte of the deflated member flipped (its output then fails the CRC-32 check).
damaged = bytearray(data)
damaged[100] ^= 0xFF
with open(os.path.join(here, "damaged.npz"), "wb") as f:
    f.write(damaged)
# One byte of a stored member's array data flipped: only the CRC-32 check can tell.
with open(os.path.join(here, "one_stored.npz"), "rb") as f:
    stored = bytearray(f.read())
stored[200] ^= 0x01
with open(os.path.join(here, "damaged_stored.npz"), "wb") as f:
    f.write(stored)
# float64 calibration whose value 1e39 float32 cannot hold: refused, naming the file.
np.save(os.path.join(here, "too_large_f64.npy"), np.where(x > 0.9, 1e39, x))
