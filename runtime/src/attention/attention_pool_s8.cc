// The int8 attention pooling: validation and the reference, the specification in code
// (docs/arithmetic.md §22).
#include "qlstm/attention_pool_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "row_op.h"
#include "softmax/exp_sum_s8.h"

namespace qlstm {
namespace {

constexpr int32_t kProbabilityBits = QLSTM_ATTENTION_POOL_S8_PROBABILITY_BITS;
// 1/sum * exp is Q0.31; a probability keeps its top 15 bits.
constexpr int32_t kProbabilityBitsBelowQ0_31 = 31 - kProbabilityBits;
// Features summed at once: their int32 sums live on the stack, and each probability is computed
// once per chunk of them.
constexpr int32_t kFeatureChunk = 16;

FieldFailure check_params(const qlstm_attention_pool_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->batch < 0) return {QLSTM_ERROR_BAD_DIMS, "batch"};
  if (p->time_steps < 1 || p->time_steps > QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX) return {QLSTM_ERROR_BAD_DIMS, "time_steps"};
  if (p->layout != QLSTM_LAYOUT_BATCH_MAJOR && p->layout != QLSTM_LAYOUT_TIME_MAJOR) return {QLSTM_ERROR_BAD_LAYOUT, "layout"};
  if (p->row_size < 1) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->batch) * p->time_steps * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "batch"};
  if (p->input_multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"};
  if (p->input_left_shift < 0 || p->input_left_shift > QLSTM_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "input_left_shift"};
  // Every difference d in [diff_min, 0] is scaled as d * 2^shift, which must not wrap.
  if (p->diff_min > 0 || static_cast<int64_t>(p->diff_min) * (int64_t{1} << p->input_left_shift) < fxp::kInt32Min) {
    return {QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"};
  }
  if (p->zero_point < fxp::kInt8Min || p->zero_point > fxp::kInt8Max) return {QLSTM_ERROR_BAD_ZERO_POINT, "zero_point"};
  return kNoFieldFailure;
}

}  // namespace

void attention_pool_s8_prechecked(const qlstm_attention_pool_s8_params& p, const int8_t* scores, const int8_t* sequence,
                                  int8_t* output) {
  const int32_t T = p.time_steps, W = p.row_size;
  const bool batch_major = p.layout == QLSTM_LAYOUT_BATCH_MAJOR;
  const ScaledDifference scaled = {p.input_multiplier, p.input_left_shift};
  for (int32_t b = 0; b < p.batch; ++b) {
    // Position (b, t) of a [B][T] or [T][B] sequence.
    const auto position = [&](int32_t t) { return static_cast<ptrdiff_t>(batch_major ? b * T + t : t * p.batch + b); };
    int32_t max = scores[position(0)];
    for (int32_t t = 1; t < T; ++t) max = scores[position(t)] > max ? scores[position(t)] : max;
    int32_t sum_q12_19 = 0;
    for (int32_t t = 0; t < T; ++t) {
      const int32_t d = scores[position(t)] - max;
      if (d >= p.diff_min) sum_q12_19 += fxp::rounding_divide_by_pot(scaled.exp_q0_31(d), kExpSumIntegerBits);
    }
    // As the int8 softmax: sum = 2^(12 - headroom) * (1 + f), exp / sum = exp * 1/(1 + f) / 2^(12 - headroom).
    const int32_t headroom = fxp::count_leading_zeros(static_cast<uint32_t>(sum_q12_19));
    const int32_t f_q0_31 = fxp::bits_to_s32((static_cast<uint32_t>(sum_q12_19) << headroom) - (uint32_t{1} << 31));
    const int32_t reciprocal_q0_31 = fxp::one_over_one_plus_x_q0_31(f_q0_31);
    const int32_t exponent = kExpSumIntegerBits - headroom + kProbabilityBitsBelowQ0_31;
    int8_t* out = output + static_cast<ptrdiff_t>(b) * W;
    for (int32_t f0 = 0; f0 < W; f0 += kFeatureChunk) {
      const int32_t n = W - f0 < kFeatureChunk ? W - f0 : kFeatureChunk;
      int32_t acc[kFeatureChunk] = {};
      for (int32_t t = 0; t < T; ++t) {
        const int32_t d = scores[position(t)] - max;
        if (d < p.diff_min) continue;  // probability 0
        const int32_t p_q0_15 = fxp::rounding_divide_by_pot(
            fxp::saturating_rounding_doubling_high_mul(reciprocal_q0_31, scaled.exp_q0_31(d)), exponent);
        const int8_t* y = sequence + position(t) * W + f0;
        for (int32_t j = 0; j < n; ++j) acc[j] += p_q0_15 * (y[j] - p.zero_point);
      }
      // Written after every read of these features of this batch row: an output sharing the
      // sequence's memory overwrites only positions already read (docs/arithmetic.md §22).
      for (int32_t j = 0; j < n; ++j) {
        out[f0 + j] = fxp::saturate_to_s8(fxp::rounding_divide_by_pot(acc[j], kProbabilityBits) + p.zero_point);
      }
    }
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_attention_pool_s8_validate(const qlstm_attention_pool_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_attention_pool_s8(const qlstm_attention_pool_s8_params* params, const int8_t* scores,
                                                const int8_t* sequence, int8_t* output) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->batch > 0 && (scores == nullptr || sequence == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  qlstm::attention_pool_s8_prechecked(*params, scores, sequence, output);
  return QLSTM_OK;
}
