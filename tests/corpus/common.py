"""What the two corpus runners (run_corpus.py: models rebuilt here, against torch; run_foreign.py:
files other toolchains wrote, against ONNX Runtime) share: the SQNR, running a command, and the
summary line and table they end with."""
import subprocess

import numpy as np


def sqnr_db(ref, got):
    noise = float(np.sum((got.astype(np.float64) - ref) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(signal / noise)


def run(cmd, env=None):
    """Exit status and output (stdout and stderr) of a command."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return p.returncode, p.stdout


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no output)"


def finish(results, failed, md, markdown, reported=()):
    """Prints "N passed, M failed" (and the entries measured and reported below the pass rule,
    not counted as passed); writes the markdown table (markdown(results)) to md when none failed;
    returns the exit status."""
    print("%d passed, %d failed%s" % (len(results) - failed - len(reported), failed,
                                      "; %d reported below the pass rule: %s" % (len(reported), ", ".join(reported))
                                      if reported else ""))
    if md is not None and failed == 0:
        with open(md, "w") as f:
            f.write(markdown(results))
    return 1 if failed else 0
