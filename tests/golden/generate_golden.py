#!/usr/bin/python3
"""Generates the project's golden kernel vectors (tests/golden/qlstm_golden_v1.json; with
--hard-sigmoid, tests/vectors/lstm_hard_sigmoid_s8.json: every sigmoid gate a HardSigmoid gate).

The expected values come from an independent model of docs/arithmetic.md written here in plain
Python integers (unbounded, so every wrap and floor is explicit). It shares no code with the C++
runtime: the runtime is tested against it on every build, and it is tested against the upstream
kernel's outputs in ../shared/conformance when that folder exists (--check PATH).

Usage:
  generate_golden.py [--hard-sigmoid] [--output FILE]   write the golden file (default: stdout)
  generate_golden.py --check FILE_OR_DIR...  run vector files through this model, print
                                             'N passed, N failed', exit 1 on any mismatch
Deterministic: a self-contained splitmix64 generator, no dependence on Python's random module.
"""
import argparse
import json
import math
import os
import sys

GENERATOR = "tests/golden/generate_golden.py"
FORMAT = "lstm-s8-kernel-vectors/1"
SEED = 0x51_57_4D_2026
HARD_SIGMOID_SEED = 0x48_53_2026
GATES = ("forget", "input", "cell", "output")


# ------------------------------------------------------------------ the model of the arithmetic
def sigmoid_table():
    t = [math.floor(65536 / (1 + math.exp(-i / 24)) + 0.5) for i in range(256)]
    for i in (4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35, 37,
              39, 40, 41, 43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112,
              116, 135, 255):
        t[i] += 1
    return t


TABLE = sigmoid_table()


def wrap32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def clamp(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


def srdhm(a, b):
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    return (a * b + (1 << 30)) >> 31  # Python >> on ints is floor division by 2^31


def rdbpot(x, e):
    if e == 0:
        return x
    q, half = abs(x), 1 << (e - 1)
    q = (q + half) >> e
    return -q if x < 0 else q


def requantize(x, m, s):
    return rdbpot(srdhm(wrap32(x << max(s, 0)), m), max(-s, 0))


def activation(x, left_shift, is_tanh):
    if left_shift >= 0:
        v = x * 3 << left_shift
    else:
        k = -left_shift
        v = (x * 3 + (1 << (k - 1))) >> k
    a = abs(v)
    bits = 8 if is_tanh else 9
    i, f = a >> bits, a & ((1 << bits) - 1)
    if i >= 255:
        r = 65535 << 8 if is_tanh else 32767 << 10
    else:
        r = (TABLE[i] << bits) + f * (TABLE[i + 1] - TABLE[i])
    if is_tanh:
        return (r - (1 << 23) + 128) >> 8 if v >= 0 else ((1 << 23) - r + 127) >> 8
    return (r + 512) >> 10 if v >= 0 else ((1 << 25) - r + 511) >> 10


def hard_sigmoid(pre, line):
    """docs/arithmetic.md §3.1: the requantized slope plus the offset, clamped to [0, 32767]."""
    return clamp(requantize(pre, line["multiplier"], line["shift"]) + line["offset_q0_15"], 0, 32767)


def gate_activation(pre, gd):
    if gd["activation"] == "hard_sigmoid":
        return hard_sigmoid(pre, gd["hard_sigmoid"])
    return activation(pre, 0, gd["activation"] == "tanh")


def run_case(c):
    """Returns (output, final_hidden, final_cell) for a case dict in the vector format."""
    B, T, I, H = c["batch"], c["time_steps"], c["input_size"], c["hidden_size"]
    tm = c["time_major"]
    x = c["input"]
    clip = c["cell_clip"]
    lo, hi = (-clip, clip) if clip > 0 else (-32768, 32767)
    P = c["cell_scale_power"]
    fc, ic, oc = c["forget_to_cell"], c["input_to_cell"], c["output"]
    zp = c["output_zero_point"]
    out = [0] * (B * T * H)
    final_h, final_c = [], []
    state = c["initial_state"]
    for b in range(B):
        if state is None:
            h, cell = None, [0] * H
        else:
            h = state["hidden"][b * H:(b + 1) * H]
            cell = state["cell"][b * H:(b + 1) * H]
        for t in range(T):
            base = ((t * B + b) if tm else (b * T + t)) * I
            xv = x[base:base + I]
            act = {}
            for g in GATES:
                gd = c["gates"][g]
                gi, gh = gd["input"], gd["hidden"]
                vals = []
                for r in range(H):
                    w = gi["weights"][r * I:(r + 1) * I]
                    acc = wrap32(gi["effective_bias"][r] + sum(p * q for p, q in zip(xv, w)))
                    pre = clamp(requantize(acc, gi["multiplier"], gi["shift"]), -32768, 32767)
                    if h is not None:
                        w = gh["weights"][r * H:(r + 1) * H]
                        acc = wrap32(gh["effective_bias"][r] + sum(p * q for p, q in zip(h, w)))
                        pre = clamp(wrap32(pre + requantize(acc, gh["multiplier"], gh["shift"])),
                                    -32768, 32767)
                    vals.append(gate_activation(pre, gd))
                act[g] = vals
            new_h = []
            for r in range(H):
                c1 = clamp(requantize(act["forget"][r] * cell[r], fc["multiplier"], fc["shift"]),
                           -32768, 32767)
                c2 = requantize(act["input"][r] * act["cell"][r], ic["multiplier"], ic["shift"])
                cell[r] = clamp(wrap32(c1 + c2), lo, hi)
                th = activation(cell[r], P + 12, True)
                y = requantize(act["output"][r] * th, oc["multiplier"], oc["shift"])
                new_h.append(clamp(wrap32(y + zp), -128, 127))
            h = new_h
            obase = ((t * B + b) if tm else (b * T + t)) * H
            out[obase:obase + H] = new_h
        if state is not None:
            final_h += h
            final_c += cell
    return out, final_h, final_c


# ------------------------------------------------------------------ deterministic random cases
class SplitMix64:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def int(self, lo, hi):  # inclusive; modulo bias is irrelevant for test data
        return lo + self.next() % (hi - lo + 1)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]


def requant(rng, lo, hi):
    return {"multiplier": rng.int(1 << 30, (1 << 31) - 1), "shift": rng.int(lo, hi)}


def random_gate(rng, I, H, zp_x, zp_h, extreme, hidden_bias=lambda rng: 0):
    """One gate's input and recurrent sides: int8 weights, effective biases (random int32 when
    extreme, else as a converter folds them: bias - zp * rowsum(W), the recurrent bias from
    hidden_bias) and requantizations."""
    wx = [rng.int(-128, 127) for _ in range(H * I)]
    wh = [rng.int(-128, 127) for _ in range(H * H)]
    if extreme:
        bx = [rng.int(-(1 << 31), (1 << 31) - 1) for _ in range(H)]
        bh = [rng.int(-(1 << 31), (1 << 31) - 1) for _ in range(H)]
        qi, qh = requant(rng, -31, 31), requant(rng, -31, 31)
    else:
        bx = [wrap32(rng.int(-20000, 20000) - zp_x * sum(wx[r * I:(r + 1) * I])) for r in range(H)]
        bh = [wrap32(hidden_bias(rng) - zp_h * sum(wh[r * H:(r + 1) * H])) for r in range(H)]
        qi, qh = requant(rng, -12, -5), requant(rng, -12, -5)
    return {"input": dict(qi, weights=wx, effective_bias=bx), "hidden": dict(qh, weights=wh, effective_bias=bh)}


def hard_sigmoid_line(rng, regime):
    """A HardSigmoid gate's line: typical, Keras' (alpha 0.2, beta 0.5: slope 1.6, offset 16384)
    or near it; wide, slopes 2^-12 ... 2^12 and offsets in [-2, 2]; extreme, any shift and any
    int32 offset. A tenth have slope 0 (alpha 0)."""
    if regime == "typical":
        line = ({"multiplier": 1717986918, "shift": 1} if rng.int(0, 1) == 0 else requant(rng, -1, 3))
        line["offset_q0_15"] = 16384 + (0 if rng.int(0, 1) == 0 else rng.int(-2048, 2048))
    elif regime == "wide":
        line = dict(requant(rng, -12, 12), offset_q0_15=rng.int(-65536, 65536))
    else:
        line = dict(requant(rng, -31, 31), offset_q0_15=rng.int(-(1 << 31), (1 << 31) - 1))
    if rng.int(0, 9) == 0:
        line["multiplier"], line["shift"] = 0, 0
    return line


def make_case(rng, index, regime, dims=None, hard=False):
    B, T, I, H = dims or (rng.int(1, 3), rng.pick([0, 1, 1, 2, 3, 4, 5, 6, 12]),
                          rng.pick([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]),
                          rng.pick([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]))
    tm = rng.int(0, 1) == 1
    stateful = rng.int(0, 1) == 1
    extreme = regime == "extreme"
    P = rng.int(-16, -8)
    zp_x, zp_h = rng.int(-128, 127), rng.int(-128, 127)
    c = {"name": "", "time_major": tm, "batch": B, "time_steps": T, "input_size": I,
         "hidden_size": H, "input_zero_point": zp_x, "output_zero_point": zp_h,
         "cell_scale_power": P}
    if regime == "typical":
        c["cell_clip"] = rng.pick([0, 32767])
        c["forget_to_cell"] = {"multiplier": 1 << 30, "shift": -14}
        c["input_to_cell"] = {"multiplier": 1 << 30, "shift": -29 - P}
    else:
        c["cell_clip"] = rng.pick([0, -1, 1, 100, 3000, 20000, 32767])
        c["forget_to_cell"] = requant(rng, -20, 10 if extreme else -10)
        c["input_to_cell"] = requant(rng, -20, 10 if extreme else -10)
        if extreme and rng.int(0, 3) == 0:
            c["cell_scale_power"] = P = rng.pick([-43, -30, -20, -5, 0, 2])
    c["output"] = requant(rng, -31, 31) if extreme else requant(rng, -24, -14)
    gates = {}
    for g in GATES:
        gates[g] = random_gate(rng, I, H, zp_x, zp_h, extreme)
        act = "tanh" if g == "cell" else "sigmoid"
        if g == "cell" and rng.int(0, 9) == 0:
            act = "sigmoid"
        line = {}
        if hard and act == "sigmoid":
            act, line = "hard_sigmoid", {"hard_sigmoid": hard_sigmoid_line(rng, regime)}
        gates[g] = dict({"activation": act}, **line, **gates[g])
    c["gates"] = gates
    c["input"] = [rng.int(-128, 127) for _ in range(B * T * I)]
    if stateful:
        c["initial_state"] = {"hidden": [rng.int(-128, 127) for _ in range(B * H)],
                              "cell": [rng.int(-32768, 32767) for _ in range(B * H)]}
    else:
        c["initial_state"] = None
    c["name"] = "%s_%04d_%s_%s_%s" % ("hard_sigmoid" if hard else "golden", index, regime, "tm" if tm else "bm",
                                     "stateful" if stateful else "stateless")
    out, fh, fcell = run_case(c)
    c["expected"] = {"output": out}
    if stateful:
        c["expected"]["final_hidden"] = fh
        c["expected"]["final_cell"] = fcell
    return c


def generate():
    rng = SplitMix64(SEED)
    cases = []
    plan = [("typical", 50), ("wide", 35), ("extreme", 35)]
    for regime, count in plan:
        for _ in range(count):
            cases.append(make_case(rng, len(cases), regime))
    # Edge shapes: scalar LSTM, wide input, longer sequence, many batches.
    for dims in ((1, 8, 1, 1), (1, 3, 64, 2), (2, 24, 3, 5), (4, 2, 5, 3)):
        for regime in ("typical", "extreme"):
            cases.append(make_case(rng, len(cases), regime, dims))
    return {"format": FORMAT,
            "description": ("GENERATED by %s (seed 0x%X): %d cases from the project's own "
                            "independent Python model of docs/arithmetic.md; regimes typical, "
                            "wide, extreme; both layouts; stateless and stateful. Do not edit: "
                            "the ctest 'golden_vectors_generated' regenerates and compares."
                            % (GENERATOR, SEED, len(cases))),
            "cases": cases}


def generate_hard_sigmoid():
    rng = SplitMix64(HARD_SIGMOID_SEED)
    cases = []
    for regime, count in [("typical", 20), ("wide", 15), ("extreme", 15)]:
        for _ in range(count):
            cases.append(make_case(rng, len(cases), regime, hard=True))
    for dims in ((1, 8, 1, 1), (1, 3, 64, 2), (2, 24, 3, 5), (4, 2, 5, 3)):
        for regime in ("typical", "extreme"):
            cases.append(make_case(rng, len(cases), regime, dims, hard=True))
    return {"format": FORMAT,
            "description": ("GENERATED by %s --hard-sigmoid (seed 0x%X): %d cases whose sigmoid gates are "
                            "HardSigmoid gates (docs/arithmetic.md 3.1, docs/kernel-vectors.md), from the "
                            "project's own independent Python model; regimes typical, wide, extreme; both "
                            "layouts; stateless and stateful. Do not edit: the ctest "
                            "'lstm_hard_sigmoid_vectors_generated' regenerates and compares."
                            % (GENERATOR, HARD_SIGMOID_SEED, len(cases))),
            "cases": cases}


def dump(doc):
    # One case per line, so that a change to one case is a one-line diff.
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [json.dumps(c, separators=(",", ":")) for c in doc["cases"]]
    return (json.dumps(head, indent=1)[:-2] + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n")


def check(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith(".json")]
        else:
            files.append(p)
    passed = failed = 0
    for path in sorted(files):
        with open(path) as f:
            doc = json.load(f)
        for c in doc["cases"]:
            out, fh, fcell = run_case(c)
            e = c["expected"]
            ok = out == e["output"]
            if c["initial_state"] is not None:
                ok = ok and fh == e["final_hidden"] and fcell == e["final_cell"]
            if ok:
                passed += 1
            else:
                failed += 1
                print("FAIL %s: %s" % (path, c["name"]))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


def run_cli(doc, generate_fn, check_fn):
    """The generators' command line: --output FILE (default stdout) or --check PATH..."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--output", help="write the golden file here (default: stdout)")
    ap.add_argument("--check", nargs="+", metavar="PATH", help="check vector files with the model")
    args = ap.parse_args()
    if args.check:
        return check_fn(args.check)
    text = dump(generate_fn())
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


def main():
    if "--hard-sigmoid" in sys.argv:
        sys.argv.remove("--hard-sigmoid")
        return run_cli(__doc__, generate_hard_sigmoid, check)
    return run_cli(__doc__, generate, check)


if __name__ == "__main__":
    sys.exit(main())
