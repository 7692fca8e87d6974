#!/usr/bin/python3
"""Generates tests/vectors/attention_pool_s8.json: conformance vectors for the int8 attention
pooling op (runtime/include/qlstm/attention_pool_s8.h, docs/arithmetic.md §22): per batch row, the
softmax over time of the T scores with arm_softmax_s8's arithmetic (§11) kept as Q0.15
probabilities, then out_f = sat8(zp + RDBPOT(sum_t p_t * (y_tf - zp), 15)).

The expected values come from an independent model of §11 and §22 written here in plain Python
integers (unbounded, so every floor, rounding and saturation is explicit): gemmlowp's
SaturatingRoundingDoublingHighMul, RoundingDivideByPOT, exp_on_negative_values (5 integer bits)
and one_over_one_plus_x_for_x_in_0_1. It shares no code with the C++ runtime. The softmax part is
checked first against CMSIS-NN's own outputs (../shared/op-vectors/softmax_s8.json, when that file
exists): the int8 softmax of this model must reproduce every value there, and the parameters it
derives from a scale must be the file's, before any vector is written.

Usage:
  make_attention_pool_vectors.py [--output FILE]     write the vectors (default: stdout)
  make_attention_pool_vectors.py --check FILE_OR_DIR...   rerun the model on the cases of vector
                                         files, print 'N passed, N failed', exit 1 on any mismatch
  make_attention_pool_vectors.py --check-softmax FILE   the model's int8 softmax against a
                                         softmax-s8-vectors/1 file (CMSIS-NN's outputs), same report
  e.g. /usr/bin/python3 tests/vectors/make_attention_pool_vectors.py \\
           --output tests/vectors/attention_pool_s8.json
Deterministic: a self-contained splitmix64 generator (no dependence on Python's random module);
the score scales are float32 values built from integer mantissas and powers of two, and the
parameters derived from them use only exact double operations (products by powers of two, frexp,
floor), so the file is the same on every machine.
"""
import argparse
import json
import math
import os
import sys

GENERATOR = "tests/vectors/make_attention_pool_vectors.py"
FORMAT = "attention-pool-s8-vectors/1"
SOFTMAX_FORMAT = "softmax-s8-vectors/1"
SEED = 0x415454_4E50_2026
TIME_STEPS_MAX = 4095          # QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX: the Q12.19 sum fits int32
PROBABILITY_BITS = 15          # QLSTM_ATTENTION_POOL_S8_PROBABILITY_BITS
EXP_SUM_INTEGER_BITS = 12      # the sum of exponentials is Q12.19
SCALED_DIFF_INTEGER_BITS = 5   # the scaled difference is Q5.26 (TFLite's kScaledDiffIntegerBits)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_SOFTMAX = os.path.join(HERE, "..", "..", "..", "shared", "op-vectors", "softmax_s8.json")


# ------------------------------------------------------------------ gemmlowp's primitives
def check32(v):
    assert INT32_MIN <= v <= INT32_MAX, v
    return v


def sat32(v):
    return max(INT32_MIN, min(INT32_MAX, v))


def sat8(v):
    return max(-128, min(127, v))


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul: a*b/2^31, the nudge of +-2^30 then truncation."""
    check32(a), check32(b)
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    n = ab + nudge
    q = abs(n) >> 31                      # C's division truncates towards zero
    return check32(q if n >= 0 else -q)


def rdbpot(x, e):
    """RoundingDivideByPOT: x / 2^e to nearest, exact halves away from zero."""
    assert 0 <= e <= 31, e
    check32(x)
    mask = (1 << e) - 1
    remainder = x & mask                  # Python's & is two's complement on negative ints
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def sat_shift_left(x, k):
    """SaturatingRoundingMultiplyByPOT with a positive exponent: x * 2^k saturated to int32."""
    return sat32(x << k)


# Q0.31 constants, each checked against its definition below.
EXP_MINUS_ONE_EIGHTH = 1895147668      # exp(-1/8)
ONE_THIRD = 715827883                  # 1/3
EXP_BARREL = [(-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
              (2, 39332535), (3, 720401), (4, 242)]   # exp(-2^j)
FORTY_EIGHT_SEVENTEENTHS_Q2_29 = 1515870810            # 48/17 in Q2.29
MINUS_THIRTY_TWO_SEVENTEENTHS_Q2_29 = -1010580540      # -32/17 in Q2.29


def check_constants():
    def q(value, frac):
        return math.floor(value * 2.0 ** frac + 0.5)
    assert q(math.exp(-1.0 / 8.0), 31) == EXP_MINUS_ONE_EIGHTH
    assert q(1.0 / 3.0, 31) == ONE_THIRD
    for j, raw in EXP_BARREL:
        assert q(math.exp(-(2.0 ** j)), 31) == raw, (j, raw)
    assert q(48.0 / 17.0, 29) == FORTY_EIGHT_SEVENTEENTHS_Q2_29
    assert q(-32.0 / 17.0, 29) == MINUS_THIRTY_TWO_SEVENTEENTHS_Q2_29


def exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: the Taylor series around -1/8."""
    x = check32(a + (1 << 28))            # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(check32(srdhm(check32(x4_over_4 + x3), ONE_THIRD) + x2), 1)
    return check32(EXP_MINUS_ONE_EIGHTH + srdhm(EXP_MINUS_ONE_EIGHTH, check32(x + poly)))


def exp_on_negative_values(a):
    """exp(a) for a <= 0: a in Q5.26, the result in Q0.31 (gemmlowp, 5 integer bits)."""
    check32(a)
    assert a <= 0
    fraction_bits = 31 - SCALED_DIFF_INTEGER_BITS          # 26
    one_quarter = 1 << (fraction_bits - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    # Rescale<0> from Q5.26 to Q0.31: a saturating left shift by 5 (never saturates here).
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        sat_shift_left(a_mod_quarter_minus_one_quarter, SCALED_DIFF_INTEGER_BITS))
    remainder = check32(a_mod_quarter_minus_one_quarter - a)   # k >= 0, a multiple of 1/4
    for exponent, multiplier in EXP_BARREL:
        if SCALED_DIFF_INTEGER_BITS > exponent and remainder & (1 << (fraction_bits + exponent)):
            result = srdhm(result, multiplier)
    return INT32_MAX if a == 0 else result


def one_over_one_plus_x_for_x_in_0_1(a):
    """1/(1 + a) for a in [0, 1), Q0.31 in and out: Newton-Raphson on the half denominator."""
    check32(a)
    assert a >= 0
    s = a + INT32_MAX                      # RoundingHalfSum(a, One): half away from zero
    half_denominator = check32((s + 1) // 2)  # s >= 0
    x = check32(FORTY_EIGHT_SEVENTEENTHS_Q2_29 + srdhm(half_denominator, MINUS_THIRTY_TWO_SEVENTEENTHS_Q2_29))
    for _ in range(3):
        one_minus = check32((1 << 29) - srdhm(half_denominator, x))   # Q2.29
        x = check32(x + sat_shift_left(srdhm(x, one_minus), 2))        # Q4.27 -> Q2.29
    return sat_shift_left(x, 1)            # ExactMulByPot<-1> then Rescale<0>: Q2.29 read as Q0.31, doubled


def clz32(v):
    assert 0 < v <= 0xFFFFFFFF
    return 32 - v.bit_length()


# ------------------------------------------------------------------ the softmax's parameters (TFLite)
def quantize_multiplier(real):
    """TFLite's QuantizeMultiplier: (m, shift) with real ~ m * 2^(shift - 31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    m = int(math.floor(abs(q) * 2.0 ** 31 + 0.5))      # round half away (q > 0 here)
    assert m <= 1 << 31
    if m == 1 << 31:
        m //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return m, shift


def softmax_params(scale, beta=1.0):
    """PreprocessSoftmaxScaling(beta, scale, 5) and -CalculateInputRadius(5, left_shift)."""
    real = min(beta * scale * float(1 << (31 - SCALED_DIFF_INTEGER_BITS)), float(INT32_MAX))
    multiplier, left_shift = quantize_multiplier(real)
    assert left_shift >= 0, "QuantizeMultiplierGreaterThanOne needs a scaled real of at least 1/2"
    radius = float((1 << SCALED_DIFF_INTEGER_BITS) - 1) * float(1 << (31 - SCALED_DIFF_INTEGER_BITS)) / float(1 << left_shift)
    return multiplier, left_shift, -int(math.floor(radius))


# ------------------------------------------------------------------ the model: §11 and §22
def exponentials(row, multiplier, left_shift, diff_min):
    """Each value's exp(d) in Q0.31 (None below diff_min: probability 0) and the Q12.19 sum."""
    top = max(row)
    exps, total = [], 0
    for v in row:
        d = v - top
        if d < diff_min:
            exps.append(None)
            continue
        scaled = srdhm(check32(d << left_shift), multiplier)     # Q5.26, exact shift (validated)
        e = exp_on_negative_values(scaled)
        exps.append(e)
        total = check32(total + rdbpot(e, EXP_SUM_INTEGER_BITS))
    return exps, total


def reciprocal_of_sum(total):
    """sum = 2^(31 - h) (1 + f) as an integer: (h, 1/(1 + f) in Q0.31)."""
    h = clz32(total)
    f = ((total << h) & 0xFFFFFFFF) - (1 << 31)
    return h, one_over_one_plus_x_for_x_in_0_1(f)


def softmax_s8_row(row, multiplier, left_shift, diff_min):
    """arm_softmax_s8: output scale 1/256, zero point -128."""
    exps, total = exponentials(row, multiplier, left_shift, diff_min)
    h, r = reciprocal_of_sum(total)
    bits_over_unit = EXP_SUM_INTEGER_BITS - h + 23          # 35 - h
    out = []
    for e in exps:
        if e is None:
            out.append(-128)
            continue
        p = srdhm(r, e)
        # For a shift above 31 (rows of 512 or more near the max) the exact rounding is 0.
        q = rdbpot(p, bits_over_unit) if bits_over_unit <= 31 else 0
        out.append(sat8(q - 128))
    return out


def probabilities_q0_15(row, multiplier, left_shift, diff_min):
    """§22's p_t: SRDHM(1/sum, e_t) rounded at 12 - h + 16 bits: the probability in Q0.15."""
    exps, total = exponentials(row, multiplier, left_shift, diff_min)
    h, r = reciprocal_of_sum(total)
    shift = EXP_SUM_INTEGER_BITS - h + (31 - PROBABILITY_BITS)   # 28 - h, 16 ... 28
    return [0 if e is None else rdbpot(srdhm(r, e), shift) for e in exps]


def position(b, t, B, T, time_major):
    return t * B + b if time_major else b * T + t


def attention_pool(c):
    """The op on a case's fields: B rows of W outputs."""
    B, T, W, zp = c["batch"], c["time_steps"], c["row_size"], c["zero_point"]
    tm, scores, seq = c["time_major"], c["scores"], c["sequence"]
    out = []
    for b in range(B):
        row = [scores[position(b, t, B, T, tm)] for t in range(T)]
        p = probabilities_q0_15(row, c["input_multiplier"], c["input_left_shift"], c["diff_min"])
        assert all(0 <= v <= 1 << PROBABILITY_BITS for v in p)
        for f in range(W):
            acc = sum(p[t] * (seq[position(b, t, B, T, tm) * W + f] - zp) for t in range(T))
            out.append(sat8(zp + rdbpot(check32(acc), PROBABILITY_BITS)))
    return out


# ------------------------------------------------------------------ the softmax against CMSIS-NN
def check_softmax(path, verbose):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != SOFTMAX_FORMAT:
        raise SystemExit("%s: not a %s file" % (path, SOFTMAX_FORMAT))
    passed = failed = 0
    for c in doc["cases"]:
        n = c["row_size"]
        m, s, dm = c["multiplier"], c["shift"], c["diff_min"]
        got = []
        for r in range(c["rows"]):
            got += softmax_s8_row(c["input"][r * n:(r + 1) * n], m, s, dm)
        ok = got == c["expected"]["output"] and softmax_params(c["input_scale"], c["beta"]) == (m, s, dm)
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL %s: %s" % (path, c["name"]), file=sys.stderr if not verbose else sys.stdout)
    if verbose:
        print("%d passed, %d failed" % (passed, failed))
    return passed, failed


# ------------------------------------------------------------------ the cases
class SplitMix64:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def int(self, lo, hi):  # inclusive; the modulo bias is irrelevant for test data
        return lo + self.next() % (hi - lo + 1)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]


def random_scale(rng, lo=0.005, hi=0.5):
    """A float32 in [lo, hi], log-uniform by octave: a 24-bit mantissa times a power of two."""
    while True:
        e = rng.int(math.frexp(lo)[1], math.frexp(hi)[1])
        s = math.ldexp(rng.int(1 << 23, (1 << 24) - 1), e - 24)
        if lo <= s <= hi:
            return s


def int8s(rng, n, kind, zp=0):
    if kind == "uniform":
        return [rng.int(-128, 127) for _ in range(n)]
    if kind == "ends":
        return [rng.pick((-128, 127)) for _ in range(n)]
    if kind == "narrow":
        c = rng.int(-120, 120)
        return [sat8(c + rng.int(-4, 4)) for _ in range(n)]
    if kind == "flat":
        return [rng.int(-128, 127)] * n
    if kind == "min":
        return [-128] * n
    if kind == "max":
        return [127] * n
    if kind == "around_zp":
        return [sat8(zp + rng.int(-3, 3)) for _ in range(n)]
    raise ValueError(kind)


SCORE_KINDS = ("uniform", "narrow", "flat", "peak", "two_level", "ends", "ramp")
SEQUENCE_KINDS = ("uniform", "uniform", "ends", "narrow", "around_zp", "min", "max")


def score_row(rng, T, kind):
    if kind == "peak":       # one dominant score
        base = rng.int(-128, 40)
        row = [sat8(base + rng.int(-3, 3)) for _ in range(T)]
        row[rng.int(0, T - 1)] = 127
        return row
    if kind == "two_level":  # a few steps share the maximum
        lo, hi = sorted((rng.int(-128, 127), rng.int(-128, 127)))
        return [hi if rng.int(0, 3) == 0 else lo for _ in range(T)]
    if kind == "ramp":
        start, step = rng.int(-128, 127), rng.pick((-1, 1, -3, 2))
        return [sat8(start + step * t) for t in range(T)]
    return int8s(rng, T, kind)


def make_case(name, B, T, W, time_major, scale, zp, score_rows, seq_steps, params=None):
    """score_rows: B lists of T scores; seq_steps: B lists of T lists of W values (batch b, step t).
    The parameters derive from scale unless given."""
    m, s, dm = params if params is not None else softmax_params(scale)
    scores = [0] * (B * T)
    seq = [0] * (B * T * W)
    for b in range(B):
        for t in range(T):
            k = position(b, t, B, T, time_major)
            scores[k] = score_rows[b][t]
            seq[k * W:(k + 1) * W] = seq_steps[b][t]
    c = {"name": name, "time_major": time_major, "batch": B, "time_steps": T, "row_size": W,
         "input_multiplier": m, "input_left_shift": s, "diff_min": dm, "zero_point": zp,
         "score_scale": scale, "scores": scores, "sequence": seq}
    assert all(-128 <= v <= 127 for v in scores + seq) and -128 <= zp <= 127
    assert 1 <= T <= TIME_STEPS_MAX and 1 <= B <= 4 and W >= 1
    assert m >= 0 and 0 <= s <= 31 and dm <= 0 and dm * (1 << s) >= INT32_MIN
    c["expected_output"] = attention_pool(c)
    return c


def random_sequence(rng, B, T, W, kind, zp):
    return [[int8s(rng, W, kind, zp) for _ in range(T)] for _ in range(B)]


def edge_cases(rng):
    cases = []

    def add(tag, *args, **kw):
        cases.append(make_case("attention_pool_%03d_%s" % (len(cases), tag), *args, **kw))

    # One step: probability exactly 2^15, the step itself at any zero point.
    for W, zp, kind in ((1, -128, "uniform"), (17, 127, "ends"), (64, 0, "uniform"), (3, 55, "min")):
        B = rng.int(1, 3)
        add("one_step_W%d" % W, B, 1, W, rng.int(0, 1) == 1, random_scale(rng), zp,
            [[rng.int(-128, 127)] for _ in range(B)], random_sequence(rng, B, 1, W, kind, zp))
    # All-equal scores: the mean of the steps (rounded half away from the zero point).
    for T, W, zp in ((2, 16, 0), (3, 15, -128), (7, 33, 127), (16, 1, -7), (33, 31, 0), (100, 2, 91),
                     (257, 3, -128), (4095, 1, 0)):
        B = 1 if T >= 257 else rng.int(1, 3)
        v = rng.int(-128, 127)
        add("equal_scores_T%d" % T, B, T, W, rng.int(0, 1) == 1, random_scale(rng), zp,
            [[v] * T for _ in range(B)], random_sequence(rng, B, T, W, "uniform", zp))
    # Two steps, equal scores, sequence values straddling the zero point: exact halves.
    add("equal_scores_halves", 2, 2, 4, False, 0.25, 0, [[5, 5], [-3, -3]],
        [[[1, -1, 3, -3], [0, 0, 0, 0]], [[127, -128, 2, -2], [0, -1, 1, 0]]])
    # One dominant score at a scale that leaves the rest below diff_min: the dominant step exactly.
    for scale, T, W, zp in ((0.5, 33, 16, 0), (1.0, 100, 17, -128), (4.0, 7, 32, 127), (0.25, 257, 2, 13)):
        B = rng.int(1, 2)
        rows = []
        for _ in range(B):
            row = [rng.int(-128, 0) for _ in range(T)]
            row[rng.int(0, T - 1)] = 127
            rows.append(row)
        add("dominant_%g_T%d" % (scale, T), B, T, W, rng.int(0, 1) == 1, scale, zp, rows,
            random_sequence(rng, B, T, W, "uniform", zp))
    # Sequences at the int8 ends with the zero point at the other end (the widest |y - zp|).
    for zp, kind in ((-128, "max"), (127, "min"), (-128, "ends"), (127, "ends"), (0, "ends"), (-128, "min"), (127, "max")):
        B, T, W = rng.int(1, 3), rng.pick((3, 7, 16, 33)), rng.pick((1, 15, 16, 17, 33))
        add("sequence_%s_zp%d" % (kind, zp), B, T, W, rng.int(0, 1) == 1, random_scale(rng), zp,
            [score_row(rng, T, rng.pick(SCORE_KINDS)) for _ in range(B)],
            random_sequence(rng, B, T, W, kind, zp))
    # Extreme parameters.
    extremes = [
        # beta * scale * 2^26 clamped to 2^31 - 1: multiplier 2^31 - 1, left shift 31, diff_min 0.
        ("clamped_scale32", 32.0),
        ("clamped_scale1000", 1000.0),
        # Left shift 0: scale * 2^26 in [1/2, 1) (diff_min -2080374784: every step counts).
        ("shift0_low", math.ldexp(1.0, -27)),
        ("shift0_high", math.ldexp(1.0 - 2.0 ** -24, -26)),
        # The largest float32 multiplier below the clamp: 2^31 - 2^7, left shift 31, diff_min 0.
        ("multiplier_max_f32", math.ldexp(1.0 - 2.0 ** -24, 4)),
        # A double scale whose mantissa rounds up to 2^31 and folds to (2^30, shift + 1) (no
        # float32 scale can: its 24 bits times 2^31 are exact).
        ("folded_multiplier", math.ldexp(1.0 - 2.0 ** -40, -4)),
        # Large scales: diff_min 0 (only the maximum counts), -1, -3 and -15.
        ("diff_min0_scale16", 16.0),
        ("diff_min_minus1", 8.0),
        ("diff_min_minus3", 4.0),
        ("diff_min_minus15", 1.0),
        ("power_of_two", 0.0625),
    ]
    for tag, scale in extremes:
        T, W = rng.pick((16, 33, 100)), rng.pick((1, 16, 17, 31))
        B = rng.int(1, 3)
        zp = rng.pick((-128, 0, 127, rng.int(-128, 127)))
        kind = rng.pick(("uniform", "narrow", "two_level", "ramp"))
        add(tag, B, T, W, rng.int(0, 1) == 1, scale, zp, [score_row(rng, T, kind) for _ in range(B)],
            random_sequence(rng, B, T, W, rng.pick(SEQUENCE_KINDS), zp))
    # The longest sequence with a spread of scores (the sum near 4095 * 2^19 when they are close).
    for scale, kind in ((0.005, "narrow"), (0.02, "uniform")):
        W = 2
        add("longest_%s" % kind, 1, TIME_STEPS_MAX, W, kind == "uniform", scale, rng.int(-128, 127),
            [score_row(rng, TIME_STEPS_MAX, kind)], random_sequence(rng, 1, TIME_STEPS_MAX, W, "uniform", 0))
    # Explicit parameters beyond any scale's: diff_min at the validation bound for its shift, a
    # multiplier of 0 (every scaled difference 0: the plain mean), diff_min 0 at shift 0.
    for tag, params in (("diff_min_bound_shift20", (1518500250, 20, -2048)),
                        ("multiplier0", (0, 7, -(1 << 24))),
                        ("diff_min0_shift0", (INT32_MAX, 0, 0)),
                        ("multiplier_max_shift31", (INT32_MAX, 31, -1))):
        B, T, W = rng.int(1, 3), rng.pick((7, 16, 33)), rng.pick((2, 15, 16))
        zp = rng.int(-128, 127)
        add(tag, B, T, W, rng.int(0, 1) == 1, 0.0, zp,
            [score_row(rng, T, rng.pick(("narrow", "two_level", "ramp"))) for _ in range(B)],
            random_sequence(rng, B, T, W, "uniform", zp), params=params)
    # Steps exactly at diff_min count (d >= diff_min): at scale 8 (diff_min -1) a step one below
    # the maximum weighs e^-8 (about 11 / 2^15); with explicit parameters whose exponentials are all
    # near 1, the cut at diff_min -100 alone decides which steps are averaged.
    for tag, scale, params, lo in (("at_diff_min_scale8", 8.0, None, -1),
                                   ("at_diff_min_explicit", 0.0, (1 << 30, 0, -100), -100)):
        B, T, W, zp = 2, 33, 17, rng.pick((-128, 127))
        rows = []
        for _ in range(B):
            top = rng.int(-28, 127)
            row = [top + lo] * T
            row[rng.int(0, T - 1)] = top
            if params is not None:   # some steps above the cut, some below it
                for t in range(0, T, 3):
                    row[t] = rng.pick((top + lo // 2, top + lo - 1, -128))
            rows.append(row)
        add(tag, B, T, W, rng.int(0, 1) == 1, scale, zp, rows,
            random_sequence(rng, B, T, W, "ends", zp), params=params)
    return cases


def random_cases(rng, first, count):
    cases = []
    Ts = (1, 2, 3, 7, 16, 33, 100, 257)
    Ws = (1, 2, 3, 15, 16, 17, 31, 32, 33, 64)
    while len(cases) < count:
        T, W, B = rng.pick(Ts), rng.pick(Ws), rng.int(1, 3)
        if B * T * W > 12000:   # keeps the file small: long sequences get narrow rows
            continue
        zp = rng.pick((-128, 0, 127, rng.int(-128, 127), rng.int(-128, 127)))
        skind, ykind = rng.pick(SCORE_KINDS), rng.pick(SEQUENCE_KINDS)
        scale = random_scale(rng)
        tm = rng.int(0, 1) == 1
        name = "attention_pool_%03d_random_%s_T%d_W%d" % (first + len(cases), skind, T, W)
        cases.append(make_case(name, B, T, W, tm, scale, zp, [score_row(rng, T, skind) for _ in range(B)],
                               random_sequence(rng, B, T, W, ykind, zp)))
    return cases


def generate():
    rng = SplitMix64(SEED)
    cases = edge_cases(rng)
    edges = len(cases)
    cases += random_cases(rng, edges, 120 - edges)
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    return {"format": FORMAT,
            "description": ("GENERATED by %s (seed 0x%X): %d cases (%d edge, %d random) from the project's "
                            "own independent Python model of docs/arithmetic.md §22 and §11, the int8 attention "
                            "pooling over time (softmax of the scores with arm_softmax_s8's arithmetic kept in "
                            "Q0.15, the weighted sum rounded once at the sequence's quantization; its int8 "
                            "softmax equals CMSIS-NN's on ../shared/op-vectors/softmax_s8.json). Parameters "
                            "derived from score_scale as TFLite prepares an int8 softmax with beta 1, except the "
                            "cases with score_scale 0 (explicit parameters). Both layouts; T 1 to 4095. Do not "
                            "edit: rerun the generator with --output."
                            % (GENERATOR, SEED, len(cases), edges, len(cases) - edges)),
            "cases": cases}


def dump(doc):
    lines = ["{", '"format": %s,' % json.dumps(doc["format"]),
             '"description": %s,' % json.dumps(doc["description"], ensure_ascii=False), '"cases": [']
    for i, c in enumerate(doc["cases"]):
        lines.append(json.dumps(c, separators=(", ", ": ")) + ("," if i + 1 < len(doc["cases"]) else ""))
    lines += ["]", "}"]
    return "\n".join(lines) + "\n"


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
            if attention_pool(c) == c["expected_output"]:
                passed += 1
            else:
                failed += 1
                print("FAIL %s: %s" % (path, c["name"]))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", help="write the vectors here (default: stdout)")
    ap.add_argument("--check", nargs="+", metavar="PATH", help="check vector files with the model")
    ap.add_argument("--check-softmax", metavar="FILE",
                    help="check the model's int8 softmax against a %s file" % SOFTMAX_FORMAT)
    args = ap.parse_args()
    check_constants()
    if args.check_softmax:
        _, failed = check_softmax(args.check_softmax, True)
        return 1 if failed else 0
    if args.check:
        return check(args.check)
    if os.path.exists(SHARED_SOFTMAX):   # the softmax part first: CMSIS-NN's outputs, bit for bit
        passed, failed = check_softmax(SHARED_SOFTMAX, False)
        if failed or not passed:
            sys.stderr.write("the softmax model disagrees with %s: %d cases\n" % (SHARED_SOFTMAX, failed))
            return 1
    text = dump(generate())
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
