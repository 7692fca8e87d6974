// The int8 softmax: validation and the reference, the specification in code
// (docs/arithmetic.md §11; the arithmetic of CMSIS-NN's arm_softmax_s8).
#include "qlstm/softmax_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"

namespace qlstm {
namespace {

// The sum of a row's exponentials has 12 integer bits (Q12.19), as in TFLite Micro.
constexpr int32_t kSumIntegerBits = 12;
// The result of 1/sum * exp is Q0.31; the output step 1/256 keeps its top 8 bits.
constexpr int32_t kOutputBitsBelowQ0_31 = 31 - 8;

FieldFailure check_params(const qlstm_softmax_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1 || p->row_size > QLSTM_SOFTMAX_S8_ROW_SIZE_MAX) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->input_multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"};
  if (p->input_left_shift < 0 || p->input_left_shift > QLSTM_SHIFT_MAX) {
    return {QLSTM_ERROR_BAD_SHIFT, "input_left_shift"};
  }
  // Every difference d in [diff_min, 0] is scaled as d * 2^shift, which must not wrap.
  if (p->diff_min > 0 || static_cast<int64_t>(p->diff_min) * (int64_t{1} << p->input_left_shift) < fxp::kInt32Min) {
    return {QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"};
  }
  return kNoFieldFailure;
}

// exp(beta * input_scale * d) in Q0.31 for a difference d in [diff_min, 0] from the row maximum.
int32_t exp_of_difference_q0_31(const qlstm_softmax_s8_params& p, int32_t d) {
  // d * 2^shift is exact for a valid diff_min.
  const int32_t scaled_q5_26 =
      fxp::saturating_rounding_doubling_high_mul(fxp::wrapping_shift_left(d, p.input_left_shift), p.input_multiplier);
  return fxp::exp_on_negative_q5_26_to_q0_31(scaled_q5_26);
}

}  // namespace

void softmax_s8_prechecked(const qlstm_softmax_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t N = p.row_size;
  for (int32_t row = 0; row < p.rows; ++row) {
    const int8_t* x = input + static_cast<ptrdiff_t>(row) * N;
    int8_t* y = output + static_cast<ptrdiff_t>(row) * N;
    int32_t max = x[0];
    for (int32_t i = 1; i < N; ++i) max = x[i] > max ? x[i] : max;
    // Q12.19; at most N * 2^19 < 2^31 (QLSTM_SOFTMAX_S8_ROW_SIZE_MAX).
    int32_t sum_q12_19 = 0;
    for (int32_t i = 0; i < N; ++i) {
      const int32_t d = x[i] - max;
      if (d >= p.diff_min) {
        sum_q12_19 += fxp::rounding_divide_by_pot(exp_of_difference_q0_31(p, d), kSumIntegerBits);
      }
    }
    // sum = 2^(kSumIntegerBits - headroom) * (1 + f) with f in [0, 1) (Q0.31), so
    // exp / sum = exp * 1/(1 + f) / 2^(kSumIntegerBits - headroom).
    const int32_t headroom = fxp::count_leading_zeros(static_cast<uint32_t>(sum_q12_19));
    const int32_t f_q0_31 =
        fxp::bits_to_s32((static_cast<uint32_t>(sum_q12_19) << headroom) - (uint32_t{1} << 31));
    const int32_t reciprocal_q0_31 = fxp::one_over_one_plus_x_q0_31(f_q0_31);
    const int32_t exponent = kSumIntegerBits - headroom + kOutputBitsBelowQ0_31;
    for (int32_t i = 0; i < N; ++i) {
      const int32_t d = x[i] - max;
      int32_t v = fxp::kInt8Min;
      if (d >= p.diff_min) {
        const int32_t q0_31 = fxp::saturating_rounding_doubling_high_mul(reciprocal_q0_31, exp_of_difference_q0_31(p, d));
        // q0_31 is in [0, 2^31): divided by 2^32 or more it rounds to 0 (upstream's shift is
        // undefined there; only rows longer than 511 reach it).
        const int32_t scaled = exponent > 31 ? 0 : fxp::rounding_divide_by_pot(q0_31, exponent);
        v = fxp::clamp(scaled + fxp::kInt8Min, fxp::kInt8Min, fxp::kInt8Max);
      }
      y[i] = static_cast<int8_t>(v);
    }
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_softmax_s8_validate(const qlstm_softmax_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_softmax_s8(const qlstm_softmax_s8_params* params, const int8_t* input, int8_t* output) {
  return qlstm::checked_row_call(qlstm::check_params, qlstm::softmax_s8_prechecked, params, input, output);
}
