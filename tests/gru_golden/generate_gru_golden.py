#!/usr/bin/python3
"""Generates the GRU kernel's golden vectors (tests/gru_golden/qlstm_gru_golden_v2.json).

The expected values come from an independent model of docs/arithmetic.md §13 written here in
plain Python integers, on the primitives of tests/golden/generate_golden.py (the LSTM's model: SRDHM, RDBPOT,
RQ, sigmoid and tanh on int16). It shares no code with the C++ runtime.

Usage:
  generate_gru_golden.py [--output FILE]     write the golden file (default: stdout)
  generate_gru_golden.py --check FILE...     run the files' cases through this model,
                                             print 'N passed, N failed', exit 1 on a mismatch
Deterministic: the splitmix64 generator of generate_golden.py. Its own folder, because the
LSTM tools read every vector file in tests/golden.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
from generate_golden import (SplitMix64, activation, clamp, random_gate, requant, requantize,  # noqa: E402
                             run_cli, wrap32)

GENERATOR = "tests/gru_golden/generate_gru_golden.py"
FORMAT = "gru-s8-kernel-vectors/2"
SEED = 0x47_52_55_2026
GATES = ("reset", "update", "new")
INT16 = (-32768, 32767)
# QM(2^-15): the standard multiplier of the reset product and of the update (§13).
Q15_PRODUCT = {"multiplier": 1 << 30, "shift": -14}


def rq(x, q):
    return requantize(x, q["multiplier"], q["shift"])


def matmul_row(side, r, v, zero_state_bias=0):
    if v is None:  # the first step of a stateless call: a zero state's accumulator, no matmul
        return zero_state_bias
    n = len(v)
    w = side["weights"][r * n:(r + 1) * n]
    return wrap32(side["effective_bias"][r] + sum(p * q for p, q in zip(v, w)))


def run_case(c):
    """Returns (output, final_hidden_q0_15) for a case dict in the vector format."""
    B, T, I, H = c["batch"], c["time_steps"], c["input_size"], c["hidden_size"]
    tm, reverse, final_only = c["time_major"], c["reverse"], c["output_final"]
    zp = c["output_zero_point"]
    to_out = c["hidden_q0_15_to_output"]
    g = c["gates"]
    out = [0] * (B * (1 if final_only else T) * H)
    final = []
    state = c["initial_hidden_q0_15"]

    def h8(h16):
        return [clamp(wrap32(rq(v, to_out) + zp), -128, 127) for v in h16]

    for b in range(B):
        h16 = [0] * H if state is None else state[b * H:(b + 1) * H]
        for s in range(T):
            t = T - 1 - s if reverse else s
            base = ((t * B + b) if tm else (b * T + t)) * I
            xv = c["input"][base:base + I]
            hv = None if state is None and s == 0 else h8(h16)
            act = {}
            for name in ("reset", "update"):
                gd = g[name]
                vals = []
                for r in range(H):
                    pre = clamp(rq(matmul_row(gd["input"], r, xv), gd["input"]), *INT16)
                    pre = clamp(wrap32(pre + rq(matmul_row(gd["hidden"], r, hv), gd["hidden"])), *INT16)
                    vals.append(activation(pre, 0, False))
                act[name] = vals
            gn = g["new"]
            new = []
            for r in range(H):
                x_part = clamp(rq(matmul_row(gn["input"], r, xv), gn["input"]), *INT16)
                h_part = clamp(rq(matmul_row(gn["hidden"], r, hv, c["new_gate_zero_state_bias"][r]), gn["hidden"]),
                               *INT16)
                gated = rq(act["reset"][r] * h_part, c["reset_times_hidden_to_q3_12"])
                n = activation(clamp(wrap32(x_part + gated), *INT16), 0, True)
                diff = h16[r] - n
                new.append(clamp(wrap32(n + rq(act["update"][r] * diff, c["update_times_difference_to_q0_15"])),
                                 *INT16))
            h16 = new
            if not final_only:
                obase = ((t * B + b) if tm else (b * T + t)) * H
                out[obase:obase + H] = h8(h16)
        if final_only:
            out[b * H:(b + 1) * H] = h8(h16)
        final += h16
    return out, final


def make_case(rng, index, regime, dims=None):
    B, T, I, H = dims or (rng.int(1, 3), rng.pick([0, 1, 1, 2, 3, 4, 5, 6, 12]),
                          rng.pick([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]),
                          rng.pick([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]))
    tm, reverse = rng.int(0, 1) == 1, rng.int(0, 3) == 0
    final_only, stateful = rng.int(0, 4) == 0, rng.int(0, 1) == 1
    extreme = regime == "extreme"
    zp_x, zp_h = rng.int(-128, 127), rng.int(-128, 127)
    c = {"name": "", "time_major": tm, "reverse": reverse, "output_final": final_only, "batch": B,
         "time_steps": T, "input_size": I, "hidden_size": H, "input_zero_point": zp_x,
         "output_zero_point": zp_h}
    if regime == "typical":
        c["reset_times_hidden_to_q3_12"] = dict(Q15_PRODUCT)
        c["update_times_difference_to_q0_15"] = dict(Q15_PRODUCT)
        c["hidden_q0_15_to_output"] = requant(rng, -24, -14)
    else:
        c["reset_times_hidden_to_q3_12"] = requant(rng, -31 if extreme else -20, 10 if extreme else -10)
        c["update_times_difference_to_q0_15"] = requant(rng, -31 if extreme else -20, 10 if extreme else -10)
        c["hidden_q0_15_to_output"] = requant(rng, -31, 31) if extreme else requant(rng, -24, -10)
    # Only the new gate keeps a recurrent bias of its own (b_hn, inside the reset product).
    gates = {name: random_gate(rng, I, H, zp_x, zp_h, extreme,
                               (lambda r: r.int(-2000, 2000)) if name == "new" else (lambda r: 0))
             for name in GATES}
    # A zero state's recurrent accumulators (§13): r and z none; n its own field, any int32 when
    # extreme (from a generator of its own, so that the other cases' draws stay as they were),
    # else consistent with the recurrent side (b_hn = bias + zp_h * rowsum(W_hn)).
    hn = gates["new"]["hidden"]
    own = SplitMix64(SEED + index)
    c["new_gate_zero_state_bias"] = [
        own.int(-(1 << 31), (1 << 31) - 1) if extreme else
        wrap32(hn["effective_bias"][r] + zp_h * sum(hn["weights"][r * H:(r + 1) * H])) for r in range(H)]
    c["gates"] = gates
    c["input"] = [rng.int(-128, 127) for _ in range(B * T * I)]
    c["initial_hidden_q0_15"] = [rng.int(-32768, 32767) for _ in range(B * H)] if stateful else None
    c["name"] = "gru_%04d_%s_%s_%s%s%s" % (index, regime, "tm" if tm else "bm",
                                          "stateful" if stateful else "stateless",
                                          "_reverse" if reverse else "", "_final" if final_only else "")
    out, final = run_case(c)
    c["expected"] = {"output": out, "final_hidden_q0_15": final}
    return c


def generate():
    rng = SplitMix64(SEED)
    cases = []
    for regime, count in (("typical", 40), ("wide", 25), ("extreme", 25)):
        for _ in range(count):
            cases.append(make_case(rng, len(cases), regime))
    # Edge shapes: a one-unit GRU, a wide input, a longer sequence, many batch rows.
    for dims in ((1, 8, 1, 1), (1, 3, 64, 2), (2, 24, 3, 5), (4, 2, 5, 3)):
        for regime in ("typical", "extreme"):
            cases.append(make_case(rng, len(cases), regime, dims))
    return {"format": FORMAT,
            "description": ("GENERATED by %s (seed 0x%X): %d cases from the project's own "
                            "independent Python model of docs/arithmetic.md §13; regimes typical, "
                            "wide, extreme; both layouts, both directions, every step or the final "
                            "one, stateless and stateful. Do not edit: regenerate with the script."
                            % (GENERATOR, SEED, len(cases))),
            "cases": cases}


def check(paths):
    passed = failed = 0
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for c in doc["cases"]:
            out, final = run_case(c)
            if out == c["expected"]["output"] and final == c["expected"]["final_hidden_q0_15"]:
                passed += 1
            else:
                failed += 1
                print("FAIL %s: %s" % (path, c["name"]))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(run_cli(__doc__, generate, check))
