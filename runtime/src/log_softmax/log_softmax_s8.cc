// The int8 log-softmax: validation and the reference, the specification in code
// (docs/arithmetic.md §18; the arithmetic of TFLite's int8 LOG_SOFTMAX).
#include "qlstm/log_softmax_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"
#include "softmax/exp_sum_s8.h"

namespace qlstm {
namespace {

// log(sum) is held in Q5.26, the differences' format.
constexpr int32_t kDifferenceIntegerBits = 5;
// The output step 1/16 keeps 4 integer bits of a Q5.26 value: a rounding shift by 31 - 5 - 4.
constexpr int32_t kOutputIntegerBits = 4;
constexpr int32_t kOutputShift = 31 - kDifferenceIntegerBits - kOutputIntegerBits;

FieldFailure check_params(const qlstm_log_softmax_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1 || p->row_size > QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->input_multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"};
  if (p->input_left_shift < 0 || p->input_left_shift > QLSTM_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "input_left_shift"};
  if (p->reverse_multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "reverse_multiplier"};
  if (p->reverse_shift < QLSTM_SHIFT_MIN || p->reverse_shift > 0) return {QLSTM_ERROR_BAD_SHIFT, "reverse_shift"};
  // Every difference d in [diff_min, 0] is scaled as d * 2^shift, which must not wrap; diff_min - 1
  // is a bound the op compares with.
  if (p->diff_min > 0 || p->diff_min == fxp::kInt32Min ||
      static_cast<int64_t>(p->diff_min) * (int64_t{1} << p->input_left_shift) < fxp::kInt32Min) {
    return {QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"};
  }
  return kNoFieldFailure;
}

}  // namespace

void log_softmax_s8_prechecked(const qlstm_log_softmax_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t N = p.row_size;
  const ScaledDifference scaled = {p.input_multiplier, p.input_left_shift};
  for (int32_t row = 0; row < p.rows; ++row) {
    const int8_t* x = input + static_cast<ptrdiff_t>(row) * N;
    int8_t* y = output + static_cast<ptrdiff_t>(row) * N;
    const int32_t max = row_max_s8(x, N);
    // The row's maximum contributes exp(0) = 2^19 in Q12.19, so the sum is at least 1.
    const int32_t sum_q12_19 = exp_sum_q12_19(scaled, x, N, max, p.diff_min);
    const int32_t log_sum_q5_26 = fxp::log_of_at_least_one(sum_q12_19, kExpSumIntegerBits, kDifferenceIntegerBits);
    // A difference whose Q5.26 value minus log(sum) would pass below INT32_MIN gives -128: the
    // bound is INT32_MIN + log(sum) scaled back to a difference (upstream's strict comparison).
    const int32_t lowest_q5_26 = fxp::wrapping_add(log_sum_q5_26, fxp::kInt32Min);
    const int32_t reversed = fxp::requantize_double_rounding(lowest_q5_26, p.reverse_multiplier, p.reverse_shift);
    const int32_t bound = reversed > p.diff_min - 1 ? reversed : p.diff_min - 1;
    for (int32_t i = 0; i < N; ++i) {
      const int32_t d = x[i] - max;
      int32_t v = fxp::kInt8Min;
      if (d > bound) {
        const int32_t log_softmax_q5_26 =
            fxp::bits_to_s32(static_cast<uint32_t>(scaled.q5_26(d)) - static_cast<uint32_t>(log_sum_q5_26));
        v = fxp::clamp(fxp::rounding_divide_by_pot(log_softmax_q5_26, kOutputShift) + QLSTM_LOG_SOFTMAX_S8_OUTPUT_ZERO_POINT,
                       fxp::kInt8Min, fxp::kInt8Max);
      }
      y[i] = static_cast<int8_t>(v);
    }
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_log_softmax_s8_validate(const qlstm_log_softmax_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_log_softmax_s8(const qlstm_log_softmax_s8_params* params, const int8_t* input,
                                             int8_t* output) {
  return qlstm::checked_row_call(qlstm::check_params, qlstm::log_softmax_s8_prechecked, params, input, output);
}
