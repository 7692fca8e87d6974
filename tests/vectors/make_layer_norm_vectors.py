#!/usr/bin/env python3
"""Writes tests/vectors/layer_norm_s8.json: cases of the int8 layer normalization with outputs of
an independent model of docs/arithmetic.md §21, in Python's exact integers (math.isqrt, floor
division), written from the document, not from the C++ reference.

Usage: make_layer_norm_vectors.py [--output FILE]   (stdout without --output)
Deterministic: the same file on every machine (Python's own random, a fixed seed, no floats in
the arithmetic; the float parameters of the "derived" cases are rounded by Python alone).
"""
import argparse
import json
import math
import random
import sys

ROW_SIZE_MAX = 4096
EPSILON_SHIFT_MAX = 24
OUTPUT_SHIFT_MAX = 62
FRACTION_BITS = 12


def rounding_divide_by_pot(x, e):
    """x / 2^e to nearest, ties away from zero."""
    if e == 0:
        return x
    q, r = divmod(abs(x), 1 << e)
    if 2 * r >= (1 << e):
        q += 1
    return q if x >= 0 else -q


def layer_norm_row(x, eps_term, eps_shift, weights, biases, output_shift, zp):
    F = len(x)
    s = sum(x)
    variance_f2 = F * sum(v * v for v in x) - s * s
    w = max(variance_f2 + (eps_term << eps_shift), 1)
    a = (62 - w.bit_length()) // 2
    q = math.isqrt(w << (2 * a))
    assert (1 << 30) <= q < (1 << 31)
    r = ((1 << 62) + q // 2) // q
    shift = 62 - FRACTION_BITS - a
    out = []
    for i, v in enumerate(x):
        n = rounding_divide_by_pot((F * v - s) * r, shift)
        acc = n * weights[i] + biases[i]
        out.append(max(-128, min(127, rounding_divide_by_pot(acc, output_shift) + zp)))
    return out


def derived(rng, F, input_scale, epsilon, gammas, betas, output_scale, zp):
    """The compiler's parameters for float gamma and beta (docs/arithmetic.md §21)."""
    eps_units = epsilon / (input_scale * input_scale) * F * F
    shift = 0
    while shift <= EPSILON_SHIFT_MAX and round(eps_units / 2.0 ** shift) > 2**31 - 1:
        shift += 1
    eps_term = int(round(eps_units / 2.0 ** shift))
    gmax = max(abs(g) for g in gammas) / output_scale
    bmax = max(abs(b) for b in betas) / output_scale
    S = OUTPUT_SHIFT_MAX
    while S >= FRACTION_BITS and not (round(gmax * 2.0 ** (S - FRACTION_BITS)) <= 2**31 - 1 and round(bmax * 2.0 ** S) <= 2**31 - 1):
        S -= 1
    weights = [int(round(g / output_scale * 2.0 ** (S - FRACTION_BITS))) for g in gammas]
    biases = [int(round(b / output_scale * 2.0 ** S)) for b in betas]
    return eps_term, shift, weights, biases, S


def make_case(name, rows, F, x, eps_term, eps_shift, weights, biases, output_shift, zp):
    out = []
    for r in range(rows):
        out += layer_norm_row(x[r * F:(r + 1) * F], eps_term, eps_shift, weights, biases, output_shift, zp)
    return {"name": name, "rows": rows, "row_size": F, "epsilon_term": eps_term, "epsilon_shift": eps_shift,
            "weights": weights, "biases": biases, "output_shift": output_shift, "output_zero_point": zp,
            "input": x, "expected": {"output": out}}


def random_row(rng, F, kind):
    if kind == "flat":
        v = rng.randint(-128, 127)
        return [v] * F
    if kind == "peak":
        base = rng.randint(-128, 127)
        row = [base] * F
        row[rng.randrange(F)] = 127 if base < 0 else -128
        return row
    if kind == "narrow":
        c = rng.randint(-120, 120)
        return [max(-128, min(127, c + rng.randint(-2, 2))) for _ in range(F)]
    if kind == "extreme":
        return [rng.choice((-128, 127)) for _ in range(F)]
    return [rng.randint(-128, 127) for _ in range(F)]


def cases():
    rng = random.Random(21)
    out = []
    sizes = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 64, 100, 128, 255, 256, 1000]
    kinds = ["uniform", "narrow", "peak", "flat", "extreme"]
    k = 0
    # Derived from float LayerNorms as the compiler derives them: typical scales and epsilons.
    for F in sizes:
        for kind in kinds:
            rows = 1 if F >= 1000 else rng.randint(1, 4)
            x = []
            for _ in range(rows):
                x += random_row(rng, F, kind)
            input_scale = 10 ** rng.uniform(-3, 0)
            epsilon = rng.choice((1e-5, 1e-6, 1e-3, 0.0, 0.1))
            gammas = [rng.uniform(0.2, 2.0) * rng.choice((1, -1)) if rng.random() < 0.9 else 0.0 for _ in range(F)]
            betas = [rng.uniform(-1.0, 1.0) for _ in range(F)]
            # About the range of gamma x a normalized value (+- 2 sigma) + beta, sometimes narrower.
            output_scale = (2.0 * 2.0 + 1.0) / 127.0 * rng.uniform(0.3, 2.0)
            zp = rng.randint(-128, 127)
            e_term, e_shift, w, b, S = derived(rng, F, input_scale, epsilon, gammas, betas, output_scale, zp)
            out.append(make_case("layer_norm_%03d_%s_F%d" % (k, kind, F), rows, F, x, e_term, e_shift, w, b, S, zp))
            k += 1
    # Any valid parameters: extreme epsilon terms and shifts, int32 weights and biases, every shift.
    for F in [1, 2, 3, 8, 33, 256]:
        for _ in range(3):
            rows = 1 if F >= 256 else rng.randint(1, 3)
            if F == 256 and _ == 2:
                F = ROW_SIZE_MAX  # the longest row once
            x = []
            for _ in range(rows):
                x += random_row(rng, F, rng.choice(kinds))
            e_term = rng.choice((0, 1, 2**31 - 1, rng.randint(0, 2**31 - 1)))
            e_shift = rng.choice((0, EPSILON_SHIFT_MAX, rng.randint(0, EPSILON_SHIFT_MAX)))
            w = [rng.choice((-2**31, 2**31 - 1, 0, rng.randint(-2**31, 2**31 - 1))) for _ in range(F)]
            b = [rng.choice((-2**31, 2**31 - 1, 0, rng.randint(-2**31, 2**31 - 1))) for _ in range(F)]
            S = rng.choice((0, OUTPUT_SHIFT_MAX, rng.randint(0, OUTPUT_SHIFT_MAX)))
            zp = rng.choice((-128, 127, rng.randint(-128, 127)))
            out.append(make_case("layer_norm_%03d_any_F%d" % (k, F), rows, F, x, e_term, e_shift, w, b, S, zp))
            k += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output")
    args = ap.parse_args()
    doc = {"format": "layer-norm-s8-vectors/1",
           "description": "int8 layer normalization over each row (docs/arithmetic.md §21): the block's fields, the "
                          "input and the output of an independent Python model in exact integers "
                          "(tests/vectors/make_layer_norm_vectors.py); docs/kernel-vectors.md",
           "cases": cases()}
    lines = ["{", '"format": %s,' % json.dumps(doc["format"]), '"description": %s,' % json.dumps(doc["description"]),
             '"cases": [']
    for i, c in enumerate(doc["cases"]):
        lines.append(json.dumps(c, separators=(", ", ": ")) + ("," if i + 1 < len(doc["cases"]) else ""))
    lines += ["]", "}"]
    text = "\n".join(lines) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
