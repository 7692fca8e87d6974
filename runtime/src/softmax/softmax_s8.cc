// The int8 softmax: validation and the reference, the specification in code
// (docs/arithmetic.md §11; the arithmetic of CMSIS-NN's arm_softmax_s8).
#include "qlstm/softmax_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"
#include "softmax/exp_sum_s8.h"

namespace qlstm {
namespace {

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

}  // namespace

void softmax_s8_prechecked(const qlstm_softmax_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t N = p.row_size;
  for (int32_t row = 0; row < p.rows; ++row) {
    const int8_t* x = input + static_cast<ptrdiff_t>(row) * N;
    int8_t* y = output + static_cast<ptrdiff_t>(row) * N;
    const ScaledDifference scaled = {p.input_multiplier, p.input_left_shift};
    const int32_t max = row_max_s8(x, N);
    const int32_t sum_q12_19 = exp_sum_q12_19(scaled, x, N, max, p.diff_min);
    // sum = 2^(kExpSumIntegerBits - headroom) * (1 + f) with f in [0, 1) (Q0.31), so
    // exp / sum = exp * 1/(1 + f) / 2^(kExpSumIntegerBits - headroom).
    const int32_t headroom = fxp::count_leading_zeros(static_cast<uint32_t>(sum_q12_19));
    const int32_t f_q0_31 =
        fxp::bits_to_s32((static_cast<uint32_t>(sum_q12_19) << headroom) - (uint32_t{1} << 31));
    const int32_t reciprocal_q0_31 = fxp::one_over_one_plus_x_q0_31(f_q0_31);
    const int32_t exponent = kExpSumIntegerBits - headroom + kOutputBitsBelowQ0_31;
    for (int32_t i = 0; i < N; ++i) {
      const int32_t d = x[i] - max;
      int32_t v = fxp::kInt8Min;
      if (d >= p.diff_min) {
        const int32_t q0_31 = fxp::saturating_rounding_doubling_high_mul(reciprocal_q0_31, scaled.exp_q0_31(d));
        // q0_31 is in [0, 2^31): divided by 2^32 or more it rounds to 0 (upstream's shift is
        // undefined there; only rows longer than 511 reach it).
        const int32_t rounded = exponent > 31 ? 0 : fxp::rounding_divide_by_pot(q0_31, exponent);
        v = fxp::clamp(rounded + fxp::kInt8Min, fxp::kInt8Min, fxp::kInt8Max);
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
