"""What a torch end-to-end script starts with: numpy, torch and onnx, or exit 77 (skipped, saying
which is missing); the CLI binary and the work folder from argv; fixed seeds, one thread; and the
two helpers every script uses. Import it first: `from e2e_common import np, torch, nn, ...`."""
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import onnx  # noqa: F401  (torch.onnx.export needs it)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import models  # noqa: F401  (the whole-model patterns, tests/e2e/models.py)
except ImportError as e:
    print("skipped: %s (install python3-torch python3-onnx python3-numpy)" % e)
    sys.exit(77)

qlstm, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)


def run(*args):
    """`qlstm ARGS...`: (exit status, stdout + stderr)."""
    r = subprocess.run([qlstm] + [str(a) for a in args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def sqnr(ref, got):
    return 10 * np.log10(np.mean(ref ** 2) / max(np.mean((ref - got) ** 2), 1e-30))
