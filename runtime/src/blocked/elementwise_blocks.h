// The elementwise add's and multiply's variants (runtime/src/<isa>/elementwise_s8_*.cc): one loop
// per kind over a per-call plan, written once, each ISA giving its two primitives (Ops below). The
// plan turns TFLite's double-rounding requantizations (docs/arithmetic.md §19) into fewer,
// exactly equal steps (docs/arithmetic.md §19, "Variants"):
//   * SRDHM(a, m) = MulHiRound(2a, m), the high word of the rounded 64-bit product (SMMULR), while
//     2a fits int32; for an add operand a = v * 2^L, so the doubling is one more left shift;
//   * an add operand whose multiplier is 2^30 (TFLite gives it to the operand of the larger scale)
//     with a right shift e <= L - 1 is exact: RDBPOT(SRDHM(v * 2^L, 2^30), e) = v * 2^(L - 1 - e);
//   * RDBPOT(w, e) + zp = (w + (w >> 31) + 2^(e - 1) + zp * 2^e) >> e for e >= 1 (half away from
//     zero as a floor), the output zero point folded into the rounding constant, which the
//     rounded high product adds for free (SMMLAR); w's sign may be taken from the product's
//     operand a (w = 0 for a < 0 gives the same floor);
//   * the clamp to [-128, 127] is one saturation.
// A call outside these forms (an add whose operands both need a multiply, a shift out of range)
// is declined (can_run) and runs on the reference. Internal to the runtime.
#ifndef QLSTM_RUNTIME_BLOCKED_ELEMENTWISE_BLOCKS_H_
#define QLSTM_RUNTIME_BLOCKED_ELEMENTWISE_BLOCKS_H_

#include <stdint.h>

#include "qlstm/elementwise_s8.h"
#include "qlstm/fixed_point.h"
#include "qlstm/lstm_s8.h"  // QLSTM_SHIFT_MIN

namespace qlstm {
namespace blocked {

constexpr int32_t kMultiplierOneHalf = int32_t{1} << 30;  // 0.5 in Q0.31: the operand that is a shift
constexpr int32_t kMaxAddLeftShift = 21;  // |v| * 2^(L + 1) < 2^31 for |v| <= 255
constexpr int32_t kMaxFoldedExponent = 22;  // |zp| * 2^e + 2^(e - 1) stays below 2^30
constexpr int32_t kMaxMulLeftShift = 14;  // |(x1 - zp1)(x2 - zp2)| * 2^(s + 1) < 2^31

// The output stage shared by both kinds: w = SRDHM(sum, m) taken from the doubled sum, then
// RDBPOT by e with the zero point folded in (e >= 1), or w + zp (e = 0), then the clamp.
struct OutputStage {
  int32_t multiplier = 0;
  int32_t exponent = 0;  // right shift e
  int32_t bias = 0;      // 2^(e - 1) + zp * 2^e, or zp when e = 0
  int32_t lo = -128, hi = 127;
};

// shift <= 0 and its right shift in [0, kMaxFoldedExponent].
inline bool make_output_stage(int32_t multiplier, int32_t shift, int32_t zp, int32_t lo, int32_t hi, OutputStage* o) {
  if (shift > 0 || -shift > kMaxFoldedExponent) return false;
  o->multiplier = multiplier;
  o->exponent = -shift;
  o->bias = o->exponent == 0 ? zp : (int32_t{1} << (o->exponent - 1)) + zp * (int32_t{1} << o->exponent);
  o->lo = lo;
  o->hi = hi;
  return true;
}

// RDBPOT(w, e) + c for e >= 1 (c folded into the bias), as a floor: w - 1 when negative.
inline int32_t round_shift(int32_t w, int32_t bias, int32_t e) { return (w + (w >> 31) + bias) >> e; }
// The same of w = MulHiRound(a, m) (m >= 0) from w + bias and a's sign: a < 0 makes w <= 0, and
// where w = 0 the floor of (2^(e - 1) - 1 + c 2^e) / 2^e is c all the same.
inline int32_t round_shift_of_product(int32_t w_plus_bias, int32_t a, int32_t e) { return (w_plus_bias + (a >> 31)) >> e; }

// The add: one operand a shift, the other (or both) as planned.
struct AddPlan {
  bool both_shifts = false;
  bool swapped = false;   // operand 2 is the shift (the loop reads it first)
  int32_t shift_k1 = 0;   // the shift operand's doubled term: x << k1, plus constant
  int32_t shift_k2 = 0;   // both shifts: the other's
  int32_t constant = 0;   // -zp * 2^k of the shift operand(s), doubled as the terms
  int32_t zp1 = 0;        // the zero point of the operand read first (the shift)
  int32_t zp2 = 0;        // the other's (the general operand, or the second shift)
  int32_t widen = 0;      // its L + 1: SRDHM(v 2^L, m) = MulHiRound(v 2^(L + 1), m)
  int32_t multiplier2 = 0, exponent2 = 0, round2 = 0;  // its SRDHM multiplier, its RDBPOT (e >= 1)
  OutputStage out;
};

// The operand j's term as a shift: multiplier 2^30, right shift e <= L - 1 (doubled: x << (L - e)).
inline bool shift_term(int32_t multiplier, int32_t shift, int32_t L, int32_t* k) {
  if (multiplier != kMultiplierOneHalf || shift > 0 || -shift > L - 1) return false;
  *k = L + shift;  // (L - 1 - e) + 1: the doubling for the output's MulHiRound
  return true;
}

inline bool make_add_plan(const qlstm_add_s8_params& p, AddPlan* plan) {
  const int32_t L = p.left_shift;
  if (L < 1 || L > kMaxAddLeftShift) return false;
  if (!make_output_stage(p.output_multiplier, p.output_shift, p.output_zero_point, p.activation_min, p.activation_max,
                         &plan->out)) {
    return false;
  }
  int32_t k1 = 0, k2 = 0;
  const bool s1 = shift_term(p.input1_multiplier, p.input1_shift, L, &k1);
  const bool s2 = shift_term(p.input2_multiplier, p.input2_shift, L, &k2);
  if (!s1 && !s2) return false;
  plan->both_shifts = s1 && s2;
  plan->swapped = !s1;
  plan->shift_k1 = s1 ? k1 : k2;
  plan->constant = -(s1 ? p.input1_zero_point : p.input2_zero_point) * (int32_t{1} << plan->shift_k1);
  plan->zp1 = s1 ? p.input1_zero_point : p.input2_zero_point;
  plan->zp2 = s1 ? p.input2_zero_point : p.input1_zero_point;
  if (plan->both_shifts) {
    plan->shift_k2 = k2;
    plan->constant -= p.input2_zero_point * (int32_t{1} << k2);
    return true;
  }
  const int32_t m = s1 ? p.input2_multiplier : p.input1_multiplier;
  const int32_t shift = s1 ? p.input2_shift : p.input1_shift;
  if (shift > -1 || shift < QLSTM_SHIFT_MIN) return false;  // its RDBPOT needs e >= 1
  plan->widen = L + 1;
  plan->multiplier2 = m;
  plan->exponent2 = -shift;
  plan->round2 = int32_t{1} << (plan->exponent2 - 1);
  return true;
}

inline bool add_can_run(const qlstm_add_s8_params& p) {
  AddPlan plan;
  return make_add_plan(p, &plan);
}

// The multiply: the product's SRDHM from the doubled (and left-shifted) product.
struct MulPlan {
  int32_t zp1 = 0, zp2 = 0;
  int32_t widen = 1;  // max(s, 0) + 1
  OutputStage out;
};

inline bool make_mul_plan(const qlstm_mul_s8_params& p, MulPlan* plan) {
  if (p.output_shift > kMaxMulLeftShift) return false;
  const int32_t right_shift = p.output_shift > 0 ? 0 : p.output_shift;
  if (!make_output_stage(p.output_multiplier, right_shift, p.output_zero_point, p.activation_min, p.activation_max,
                         &plan->out)) {
    return false;
  }
  plan->zp1 = p.input1_zero_point;
  plan->zp2 = p.input2_zero_point;
  plan->widen = (p.output_shift > 0 ? p.output_shift : 0) + 1;
  return true;
}

inline bool mul_can_run(const qlstm_mul_s8_params& p) {
  MulPlan plan;
  return make_mul_plan(p, &plan);
}

// Ops: static int32_t mul_hi_round_add(int32_t a, int32_t b, int32_t c), c plus the high word of
// a * b + 2^31 (SMMLAR); static int32_t clamp_s8(int32_t v), the saturation to [-128, 127] (SSAT #8).
template <class Ops, bool kRound, bool kFullRange>
inline int8_t finish(int32_t doubled, int32_t multiplier, int32_t bias, int32_t e, int32_t lo, int32_t hi) {
  const int32_t w_plus_bias = Ops::mul_hi_round_add(doubled, multiplier, bias);
  const int32_t y = kRound ? round_shift_of_product(w_plus_bias, doubled, e) : w_plus_bias;
  return static_cast<int8_t>(kFullRange ? Ops::clamp_s8(y) : fxp::clamp(y, lo, hi));
}
template <class Ops, bool kRound, bool kFullRange>
inline int8_t finish(int32_t doubled, const OutputStage& o) {
  return finish<Ops, kRound, kFullRange>(doubled, o.multiplier, o.bias, o.exponent, o.lo, o.hi);
}

// The loops copy the plan into locals first: the byte stores could alias it, which would make
// the compiler load every field again for each value.
template <class Ops, bool kRound, bool kFullRange, bool kBothShifts>
void add_loop(const AddPlan& a, const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n) {
  const int32_t constant = a.constant, k1 = a.shift_k1, k2 = a.shift_k2, zp2 = a.zp2, widen = a.widen;
  const int32_t m2 = a.multiplier2, round2 = a.round2, e2 = a.exponent2;
  const int32_t m = a.out.multiplier, bias = a.out.bias, e = a.out.exponent, lo = a.out.lo, hi = a.out.hi;
#pragma GCC unroll 4
  for (int32_t i = 0; i < n; ++i) {
    int32_t doubled = constant + static_cast<int32_t>(static_cast<uint32_t>(x1[i]) << k1);
    if (kBothShifts) {
      doubled += static_cast<int32_t>(static_cast<uint32_t>(x2[i]) << k2);
    } else {
      const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(x2[i] - zp2) << widen);
      const int32_t u = round_shift_of_product(Ops::mul_hi_round_add(v, m2, round2), v, e2);
      doubled += static_cast<int32_t>(static_cast<uint32_t>(u) << 1);
    }
    y[i] = finish<Ops, kRound, kFullRange>(doubled, m, bias, e, lo, hi);
  }
}

template <class Ops, bool kRound, bool kFullRange>
void mul_loop(const MulPlan& p, const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n) {
  const int32_t zp1 = p.zp1, zp2 = p.zp2, widen = p.widen;
  const int32_t m = p.out.multiplier, bias = p.out.bias, e = p.out.exponent, lo = p.out.lo, hi = p.out.hi;
#pragma GCC unroll 4
  for (int32_t i = 0; i < n; ++i) {
    const int32_t product = (x1[i] - zp1) * (x2[i] - zp2);
    y[i] = finish<Ops, kRound, kFullRange>(static_cast<int32_t>(static_cast<uint32_t>(product) << widen), m, bias, e, lo,
                                           hi);
  }
}

// One value of each kind with the plan's form decided per value (a vector variant's tail).
template <class Ops>
int8_t add_value(const AddPlan& a, int8_t x1, int8_t x2) {
  const bool round = a.out.exponent > 0;
  int32_t doubled = a.constant + static_cast<int32_t>(static_cast<uint32_t>(x1) << a.shift_k1);
  if (a.both_shifts) {
    doubled += static_cast<int32_t>(static_cast<uint32_t>(x2) << a.shift_k2);
  } else {
    const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(x2 - a.zp2) << a.widen);
    const int32_t u = round_shift_of_product(Ops::mul_hi_round_add(v, a.multiplier2, a.round2), v, a.exponent2);
    doubled += static_cast<int32_t>(static_cast<uint32_t>(u) << 1);
  }
  return round ? finish<Ops, true, false>(doubled, a.out) : finish<Ops, false, false>(doubled, a.out);
}

template <class Ops>
int8_t mul_value(const MulPlan& m, int8_t x1, int8_t x2) {
  const int32_t doubled = static_cast<int32_t>(static_cast<uint32_t>((x1 - m.zp1) * (x2 - m.zp2)) << m.widen);
  return m.out.exponent > 0 ? finish<Ops, true, false>(doubled, m.out) : finish<Ops, false, false>(doubled, m.out);
}

// The whole call: the plan once, then the loop of its form (can_run accepted the params).
template <class Ops>
void add_s8(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  AddPlan a;
  (void)make_add_plan(p, &a);
  const int8_t* first = a.swapped ? input2 : input1;
  const int8_t* second = a.swapped ? input1 : input2;
  const int32_t n = p.shape.rows * p.shape.row_size;
  const bool round = a.out.exponent > 0, full = a.out.lo == fxp::kInt8Min && a.out.hi == fxp::kInt8Max;
  using Loop = void (*)(const AddPlan&, const int8_t*, const int8_t*, int8_t*, int32_t);
  static constexpr Loop kLoops[2][2][2] = {
      {{add_loop<Ops, false, false, false>, add_loop<Ops, false, false, true>},
       {add_loop<Ops, false, true, false>, add_loop<Ops, false, true, true>}},
      {{add_loop<Ops, true, false, false>, add_loop<Ops, true, false, true>},
       {add_loop<Ops, true, true, false>, add_loop<Ops, true, true, true>}}};
  kLoops[round][full][a.both_shifts](a, first, second, output, n);
}

template <class Ops>
void mul_s8(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  MulPlan m;
  (void)make_mul_plan(p, &m);
  const int32_t n = p.shape.rows * p.shape.row_size;
  const bool round = m.out.exponent > 0, full = m.out.lo == fxp::kInt8Min && m.out.hi == fxp::kInt8Max;
  using Loop = void (*)(const MulPlan&, const int8_t*, const int8_t*, int8_t*, int32_t);
  static constexpr Loop kLoops[2][2] = {{mul_loop<Ops, false, false>, mul_loop<Ops, false, true>},
                                        {mul_loop<Ops, true, false>, mul_loop<Ops, true, true>}};
  kLoops[round][full](m, input1, input2, output, n);
}

// The portable primitives (the scalar variant; GCC makes SMULL and SSAT of them on Cortex-M3).
struct PortableOps {
  static int32_t mul_hi_round(int32_t a, int32_t b) {
    return static_cast<int32_t>((static_cast<int64_t>(a) * b + (int64_t{1} << 31)) >> 32);
  }
  static int32_t mul_hi_round_add(int32_t a, int32_t b, int32_t c) { return mul_hi_round(a, b) + c; }
  static int32_t clamp_s8(int32_t v) { return fxp::clamp(v, fxp::kInt8Min, fxp::kInt8Max); }
};

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_RUNTIME_BLOCKED_ELEMENTWISE_BLOCKS_H_
