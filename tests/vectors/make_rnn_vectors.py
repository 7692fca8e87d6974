#!/usr/bin/python3
"""Generates tests/vectors/rnn_s8.json: conformance vectors for the int8 vanilla RNN kernel
(runtime/include/qlstm/rnn_s8.h, docs/arithmetic.md §23), h' = act(W_x x + b + W_h h), act tanh
or ReLU, with an int16 hidden state and an int8 output that is also the recurrent operand.

The expected values come from an independent model of §23 written here in plain Python integers
(unbounded, so every wrap, floor and saturation is explicit). It shares no code with the C++
runtime; it shares the LSTM's primitives (wrap32, SRDHM, RDBPOT, the double-rounding RQ, the
Q3.12 -> Q0.15 tanh) with tests/golden/generate_golden.py by importing them, so the project keeps
one Python model of that arithmetic.

Usage:
  make_rnn_vectors.py [--output FILE]      write the vectors (default: stdout)
  make_rnn_vectors.py --check FILE_OR_DIR...   rerun the model on the cases of vector files,
                                           print 'N passed, N failed', exit 1 on any mismatch
  e.g. /usr/bin/python3 tests/vectors/make_rnn_vectors.py --output tests/vectors/rnn_s8.json
Deterministic: generate_golden's splitmix64 generator, no dependence on Python's random module.
The "typical" cases derive their parameters from float models using only +, *, /, sqrt and
frexp (IEEE-exact or correctly rounded), so the file is the same on every machine.
"""
import json
import math
import os
import sys

sys.dont_write_bytecode = True  # importing generate_golden must leave no __pycache__ in the tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
import generate_golden as g  # noqa: E402  (the shared model of the LSTM's primitives)

GENERATOR = "tests/vectors/make_rnn_vectors.py"
FORMAT = "rnn-s8-kernel-vectors/1"
SEED = 0x524E4E_5238_2026
TIME_STEPS = [0, 1, 2, 5, 12, 24]
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# ------------------------------------------------------------------ the model of §23
def sat8(v):
    return g.clamp(v, -128, 127)


def sat16(v):
    return g.clamp(v, -32768, 32767)


def rq(x, q):
    return g.requantize(x, q["multiplier"], q["shift"])


def dot(a, b):
    return sum(p * q for p, q in zip(a, b))


def to_int8(hs, c):
    """The int8 form of an int16 hidden row: the output row, and the next step's operand."""
    zp, q = c["output_zero_point"], c["hidden_to_output"]
    return [sat8(g.wrap32(rq(v, q) + zp)) for v in hs]


def step_row(c, xv, h8):
    """One step of one batch row: the new int16 hidden row from the input row xv and the
    recurrent operand h8 (None: a stateless first step, which has no recurrent term, not even
    hidden_effective_bias)."""
    I, H = c["input_size"], c["hidden_size"]
    wx, bx, wh, bh = (c["input_weights"], c["input_effective_bias"], c["hidden_weights"],
                      c["hidden_effective_bias"])
    new = []
    for r in range(H):
        acc = g.wrap32(bx[r] + dot(xv, wx[r * I:(r + 1) * I]))
        pre = sat16(rq(acc, c["input_to_q3_12"]))
        if h8 is not None:
            acc = g.wrap32(bh[r] + dot(h8, wh[r * H:(r + 1) * H]))
            pre = sat16(g.wrap32(pre + rq(acc, c["hidden_to_q3_12"])))
        # tanh: Q3.12 in, Q0.15 out (the LSTM's table at left shift 0). ReLU: pre is int16 already.
        new.append(g.activation(pre, 0, True) if c["activation"] == "tanh" else max(pre, 0))
    return new


def run_case(c):
    """Returns (expected_output, expected_final_hidden or None) for a case dict."""
    B, T, I, H = c["batch"], c["time_steps"], c["input_size"], c["hidden_size"]
    tm, x, init = c["time_major"], c["input"], c["initial_hidden"]
    mode = c["output_steps"]
    steps = 1 if mode == "first" and T > 1 else T  # "first" runs the first step processed only
    out_all = [0] * (B * T * H) if mode == "all" else []
    last, final = [], []
    for b in range(B):
        if init is None:
            hs, h8 = [0] * H, None
            row8 = [c["output_zero_point"]] * H  # a zero state's int8 form, for T = 0
        else:
            hs = init[b * H:(b + 1) * H]
            h8 = row8 = to_int8(hs, c)
        for k in range(steps):
            t = k if c["time_direction"] == "forward" else T - 1 - k
            base = (t * B + b) if tm else (b * T + t)
            hs = step_row(c, x[base * I:(base + 1) * I], h8)
            h8 = row8 = to_int8(hs, c)
            if mode == "all":
                out_all[base * H:(base + 1) * H] = row8
        last += row8
        final += hs
    return (out_all if mode == "all" else last), (None if init is None else final)


# ------------------------------------------------------------------ parameters, by regime
def uniform(rng, lo, hi):
    return lo + (hi - lo) * ((rng.next() >> 11) * 2.0 ** -53)


def round_away(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def quantize_multiplier(scale):
    """TFLite's QuantizeMultiplier (docs/arithmetic.md §2): scale = m * 2^(shift - 31)."""
    if scale <= 0:
        return {"multiplier": 0, "shift": 0}
    q, e = math.frexp(scale)
    m = round_away(q * 2.0 ** 31)
    if m == 1 << 31:
        m, e = 1 << 30, e + 1
    if e < -31:
        m, e = 0, 0
    assert e <= 31, scale
    return {"multiplier": m, "shift": e}


def quantize_matrix(rng, rows, cols, amplitude):
    """Float weights uniform in +-amplitude, symmetric int8 with one scale (max|w| -> 127)."""
    w = [uniform(rng, -amplitude, amplitude) for _ in range(rows * cols)]
    s = max(abs(v) for v in w) / 127 or 1.0
    return [round_away(v / s) for v in w], s


def rowsums(w, rows, cols):
    return [sum(w[r * cols:(r + 1) * cols]) for r in range(rows)]


def float_rnn(f, x_rows, h0, relu):
    """The float RNN h' = act(Wx x + b + Wh h) on one batch row; returns the pre-activations
    and the states (for the ReLU calibration, and for checking the model against floats)."""
    I, H = len(f["wx"]) // len(f["b"]), len(f["b"])
    pres, states, h = [], [], h0
    for xv in x_rows:
        pre = [f["b"][r] + dot(xv, f["wx"][r * I:(r + 1) * I]) + dot(h, f["wh"][r * H:(r + 1) * H])
               for r in range(H)]
        h = [max(p, 0.0) for p in pre] if relu else [math.tanh(p) for p in pre]
        pres += pre
        states.append(h)
    return pres, states


def typical_params(rng, combo, dims):
    """Parameters as the compiler derives them from a float RNN. Returns (params, floats): the
    floats (dequantized weights and inputs, scales) are for checking the model, not the file."""
    (act, _, _, _, stateful), (B, T, I, H) = combo, dims
    s_x, zp_x = uniform(rng, 0.004, 0.016), rng.int(-40, 40)  # x within about +-2
    x = [rng.int(-128, 127) for _ in range(B * T * I)]
    wx, s_wx = quantize_matrix(rng, H, I, uniform(rng, 0.5, 1.5) / math.sqrt(I))
    wh, s_wh = quantize_matrix(rng, H, H, uniform(rng, 0.3, 1.0) / math.sqrt(H))
    b = [uniform(rng, -0.3, 0.3) for _ in range(H)]  # b_x + b_h, both folded into the input side
    f = {"wx": [v * s_wx for v in wx], "wh": [v * s_wh for v in wh], "b": b, "s_x": s_x,
         "zp_x": zp_x, "x": [(v - zp_x) * s_x for v in x]}
    if act == "tanh":
        # Pre-activation Q3.12, state Q0.15; the output about [-1, 1] (s_y 1/128) or narrower.
        s_pre, s_h = 2.0 ** -12, 2.0 ** -15
        s_y, zp = 1 / uniform(rng, 128, 256), rng.pick([0, 0, 0, -1, 1, rng.int(-8, 8)])
        init = [rng.int(-30000, 30000) for _ in range(B * H)] if stateful else None
    else:
        s_pre, s_y, zp, init = relu_calibration(rng, f, combo, dims)
        s_h = s_pre  # ReLU's state is in the pre-activation's format
        init = [min(round_away(v / s_pre), 32767) for v in init] if stateful else None
    f.update(s_y=s_y, s_h=s_h, zp=zp)
    bx = [g.wrap32(round_away(b[r] / (s_x * s_wx)) - zp_x * rs) for r, rs in enumerate(rowsums(wx, H, I))]
    bh = [g.wrap32(-zp * rs) for rs in rowsums(wh, H, H)]
    p = {"input_zero_point": zp_x, "output_zero_point": zp,
         "input_to_q3_12": quantize_multiplier(s_x * s_wx / s_pre),
         "hidden_to_q3_12": quantize_multiplier(s_y * s_wh / s_pre),
         "hidden_to_output": quantize_multiplier(s_h / s_y),
         "input_weights": wx, "input_effective_bias": bx, "hidden_weights": wh,
         "hidden_effective_bias": bh, "input": x, "initial_hidden": init}
    return p, f


def relu_calibration(rng, f, combo, dims):
    """ReLU's int16 format is free: calibrate on the float RNN over this very input, as a
    compiler's calibration pass would, with 2x headroom (s_pre = 2 max|pre| / 32767), and the
    output [0, max h] over the full int8 range (zero point -128). Returns (s_pre, s_y, zp,
    the float initial states)."""
    (_, tm, direction, _, stateful), (B, T, I, H) = combo, dims
    init = [uniform(rng, 0.0, 0.5) for _ in range(B * H)] if stateful else [0.0] * (B * H)
    maxpre, maxh = 0.25, 0.25  # a sane format when nothing runs (T = 0)
    for b in range(B):
        rows = batch_rows(f["x"], b, dims, tm, direction)
        pres, states = float_rnn(f, rows, init[b * H:(b + 1) * H], True)
        maxpre = max([maxpre] + [abs(v) for v in pres])
        maxh = max([maxh] + [v for s in states for v in s] + init[b * H:(b + 1) * H])
    return 2 * maxpre / 32767, maxh / 255, -128, init


def batch_rows(x, b, dims, tm, direction):
    """The T input rows of batch row b in the order the steps process them."""
    B, T, I, _ = dims
    ts = range(T) if direction == "forward" else range(T - 1, -1, -1)
    return [x[((t * B + b) if tm else (b * T + t)) * I:][:I] for t in ts]


def requant(rng, lo, hi, zero_tenth=False):
    q = g.requant(rng, lo, hi)
    if zero_tenth and rng.int(0, 9) == 0:
        q["multiplier"] = 0
    return q


def wide_params(rng, combo, dims):
    """Random int8 weights, biases folded as a compiler folds them (a random part minus
    zp_x * rowsum on the input side, -zp * rowsum on the recurrent), requantizations spread
    a few octaves around the typical ones (the typical shifts: input side -5 to -1, recurrent
    side -7 to -3, output -7 for tanh, about -5 for ReLU)."""
    (act, _, _, _, stateful), (B, T, I, H) = combo, dims
    zp_x, zp = rng.int(-128, 127), rng.int(-128, 127)
    wx = [rng.int(-128, 127) for _ in range(H * I)]
    wh = [rng.int(-128, 127) for _ in range(H * H)]
    bx = [g.wrap32(rng.int(-(1 << 18), 1 << 18) - zp_x * rs) for rs in rowsums(wx, H, I)]
    # Now and then a recurrent bias that is not -zp*rowsum: the kernel must not assume it.
    extra = rng.int(0, 3) == 0
    bh = [g.wrap32((rng.int(-4096, 4096) if extra else 0) - zp * rs) for rs in rowsums(wh, H, H)]
    out_lo, out_hi = (-10, -4) if act == "tanh" else (-9, -2)
    init = None
    if stateful:
        init = [rng.int(-32768, 32767) if act == "tanh" or rng.int(0, 4) == 0 else rng.int(0, 32767)
                for _ in range(B * H)]
    return {"input_zero_point": zp_x, "output_zero_point": zp,
            "input_to_q3_12": requant(rng, -8, 3), "hidden_to_q3_12": requant(rng, -9, 1),
            "hidden_to_output": requant(rng, out_lo, out_hi),
            "input_weights": wx, "input_effective_bias": bx, "hidden_weights": wh,
            "hidden_effective_bias": bh, "input": [rng.int(-128, 127) for _ in range(B * T * I)],
            "initial_hidden": init}


def edge_int(rng, lo, hi):
    """The limits, or near them, half the time; anything in [lo, hi] otherwise."""
    k = rng.int(0, 5)
    if k == 0:
        return lo
    if k == 1:
        return hi
    if k == 2:
        return rng.pick([lo + rng.int(0, 255), hi - rng.int(0, 255)])
    return rng.int(lo, hi)


def extreme_requant(rng):
    q = requant(rng, -31, 31, zero_tenth=True)
    if rng.int(0, 2) == 0:
        q["shift"] = rng.pick([-31, -30, -20, 10, 16, 20, 30, 31])  # wraps before the multiply
    return q


def extreme_params(rng, combo, dims):
    """Saturating: limit weights, inputs and zero points, biases near the int32 limits (so the
    accumulators wrap), any shift, a tenth of the multipliers 0."""
    stateful, (B, T, I, H) = combo[4], dims
    return {"input_zero_point": edge_int(rng, -128, 127), "output_zero_point": edge_int(rng, -128, 127),
            "input_to_q3_12": extreme_requant(rng), "hidden_to_q3_12": extreme_requant(rng),
            "hidden_to_output": extreme_requant(rng),
            "input_weights": [edge_int(rng, -128, 127) for _ in range(H * I)],
            "input_effective_bias": [edge_int(rng, INT32_MIN, INT32_MAX) for _ in range(H)],
            "hidden_weights": [edge_int(rng, -128, 127) for _ in range(H * H)],
            "hidden_effective_bias": [edge_int(rng, INT32_MIN, INT32_MAX) for _ in range(H)],
            "input": [edge_int(rng, -128, 127) for _ in range(B * T * I)],
            "initial_hidden": [edge_int(rng, -32768, 32767) for _ in range(B * H)] if stateful else None}


REGIMES = {"typical": lambda *a: typical_params(*a)[0], "wide": wide_params, "extreme": extreme_params}


# ------------------------------------------------------------------ cases
def make_case(rng, index, regime, combo, dims):
    """combo = (activation, time_major, time_direction, output_steps, stateful)."""
    act, tm, direction, steps, stateful = combo
    B, T, I, H = dims
    p = REGIMES[regime](rng, combo, dims)
    c = {"name": "rnn_%04d_%s_%s_%s_%s" % (index, regime, act, "tm" if tm else "bm",
                                           "stateful" if stateful else "stateless"),
         "time_major": tm, "batch": B, "time_steps": T, "input_size": I, "hidden_size": H,
         "activation": act, "time_direction": direction, "output_steps": steps}
    for k in ("input_zero_point", "output_zero_point", "input_to_q3_12", "hidden_to_q3_12",
              "hidden_to_output", "input_weights", "input_effective_bias", "hidden_weights",
              "hidden_effective_bias", "input", "initial_hidden"):
        c[k] = p[k]
    c["expected_output"], c["expected_final_hidden"] = run_case(c)
    return c


def random_combo(rng):
    return (rng.pick(["tanh", "relu"]), rng.int(0, 1) == 1, rng.pick(["forward", "reverse"]),
            rng.pick(["all", "final", "first"]), rng.int(0, 1) == 1)


def random_dims(rng):
    return rng.int(1, 3), rng.pick(TIME_STEPS), rng.pick(SIZES), rng.pick(SIZES)


def all_combos():
    return [(a, tm, d, s, st) for a in ("tanh", "relu") for tm in (False, True)
            for d in ("forward", "reverse") for s in ("all", "final", "first") for st in (False, True)]


# Edge shapes: vector lanes of 4, 8 and 16 (I = 64, H = 32, H = 1), a scalar RNN, T = 0 with each
# output mode, and "first" over a long reversed sequence.
EDGES = [((1, 5, 64, 4), ("tanh", False, "forward", "all", True)),
         ((2, 2, 64, 32), ("relu", True, "reverse", "all", False)),
         ((1, 3, 16, 32), ("tanh", True, "forward", "final", True)),
         ((3, 2, 8, 32), ("relu", False, "forward", "all", True)),
         ((1, 12, 64, 1), ("tanh", False, "reverse", "all", False)),
         ((1, 24, 1, 1), ("relu", True, "forward", "all", True)),
         ((2, 24, 17, 15), ("tanh", True, "reverse", "first", True)),
         ((2, 0, 3, 4), ("tanh", False, "forward", "all", True)),
         ((2, 0, 3, 4), ("relu", True, "forward", "final", True)),
         ((3, 0, 5, 7), ("tanh", False, "reverse", "first", True)),
         ((2, 0, 3, 4), ("tanh", True, "forward", "final", False)),
         ((1, 0, 2, 9), ("relu", False, "reverse", "first", False))]


def generate():
    rng = g.SplitMix64(SEED)
    cases = []
    # Typical: every combination of activation, layout, direction, output steps and state once.
    for combo in all_combos():
        cases.append(make_case(rng, len(cases), "typical", combo, random_dims(rng)))
    for regime, count in (("wide", 30), ("extreme", 24)):
        for _ in range(count):
            cases.append(make_case(rng, len(cases), regime, random_combo(rng), random_dims(rng)))
    for dims, combo in EDGES:
        for regime in ("typical", "extreme"):
            cases.append(make_case(rng, len(cases), regime, combo, dims))
    counts = {r: sum(1 for c in cases if "_%s_" % r in c["name"]) for r in REGIMES}
    return {"format": FORMAT,
            "description": ("GENERATED by %s (seed 0x%X): %d cases (%d typical, %d wide, %d extreme) "
                            "from the project's own independent Python model of docs/arithmetic.md "
                            "§23, the int8 vanilla RNN (tanh and ReLU; both layouts; forward and "
                            "reverse; output steps all, final, first; stateless and stateful; T = 0 "
                            "and edge shapes). Do not edit: rerun the generator with --output."
                            % (GENERATOR, SEED, len(cases), counts["typical"], counts["wide"],
                               counts["extreme"])),
            "cases": cases}


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
        if doc.get("format") != FORMAT:
            continue  # a directory may hold other ops' vectors
        for c in doc["cases"]:
            if run_case(c) == (c["expected_output"], c["expected_final_hidden"]):
                passed += 1
            else:
                failed += 1
                print("FAIL %s: %s" % (path, c["name"]))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(g.run_cli(__doc__, generate, check))
