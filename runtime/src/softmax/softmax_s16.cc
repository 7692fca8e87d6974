// The 16x8 softmax: validation and the reference (docs/arithmetic.md §16; the arithmetic of
// CMSIS-NN's arm_softmax_s16, including its int16 wrap-arounds).
#include "qlstm/softmax_s16.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "row_op.h"
#include "softmax/softmax_s16_luts.h"

namespace qlstm {
namespace {

// A Q0.15 table input selects one of 512 segments of 2^7 steps.
constexpr int32_t kSegmentBits = 7;
constexpr int32_t kMidSegment = 256;
// The Q16.14 sum, recentred for the 1/(1 + x) table: x = sum - 1 (65536) then Q0.15's symmetric
// range (32768).
constexpr int32_t kReciprocalInputOffset = 65536 + 32768;

FieldFailure check_params(const qlstm_softmax_s16_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1 || p->row_size > QLSTM_SOFTMAX_S16_ROW_SIZE_MAX) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->input_multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"};
  if (p->input_left_shift < QLSTM_SHIFT_MIN || p->input_left_shift > QLSTM_SOFTMAX_S16_SHIFT_MAX) {
    return {QLSTM_ERROR_BAD_SHIFT, "input_left_shift"};
  }
  return kNoFieldFailure;
}

// x modulo 2^16 as int16 (upstream stores wider intermediates in int16 variables).
constexpr int32_t wrap_to_s16(int32_t x) {
  return static_cast<int32_t>(static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(x) & 0xFFFFu)) );
}

// A table at a Q0.15 input x in [-32768, 32767]: the segment's left entry plus the slope times the
// position in the segment, rounded half up.
int32_t lookup_interpolated_q0_15(const int16_t* lut, int32_t x) {
  const int32_t segment = kMidSegment + fxp::shift_right_floor(x, kSegmentBits);
  const int32_t position = x & ((1 << kSegmentBits) - 1);
  const int32_t base = lut[segment];
  const int32_t slope = lut[segment + 1] - base;
  return base + fxp::shift_right_floor(slope * position + (1 << (kSegmentBits - 1)), kSegmentBits);
}

}  // namespace

void softmax_s16_prechecked(const qlstm_softmax_s16_params& p, const int16_t* input, int16_t* output) {
  const int32_t N = p.row_size;
  for (int32_t row = 0; row < p.rows; ++row) {
    const int16_t* x = input + static_cast<ptrdiff_t>(row) * N;
    int16_t* y = output + static_cast<ptrdiff_t>(row) * N;
    int32_t max = x[0];
    for (int32_t i = 1; i < N; ++i) max = x[i] > max ? x[i] : max;
    // exp of each difference (Q0.15) kept in the output row; the sum < N * 2^15 <= 2^31.
    int32_t sum = 0;
    for (int32_t i = 0; i < N; ++i) {
      // beta * x scaled so that [-10, 0] spans [-65535, 0], then moved onto the table's Q0.15 range.
      const int32_t scaled = fxp::requantize_double_rounding(x[i] - max, p.input_multiplier, p.input_left_shift);
      const int32_t table_input = fxp::clamp(scaled + fxp::kInt16Max, fxp::kInt16Min, fxp::kInt16Max);
      const int32_t e = lookup_interpolated_q0_15(kSoftmaxS16ExpLut, table_input);
      y[i] = static_cast<int16_t>(e);
      sum += e;
    }
    // sum = 2^(31 - headroom) * (1 + f), f in [0, 1): normalised to Q1.16 (1 + f in [65536, 131072],
    // the rounding can reach 2^17), then onto the table's Q0.15 input. At 2^17 the int16 wraps to
    // -32768 and the table gives 1/(1 + 0): upstream's behaviour, kept.
    const int32_t headroom = fxp::count_leading_zeros(static_cast<uint32_t>(sum));
    const uint32_t normalised = static_cast<uint32_t>(sum) << (headroom - 1);
    const int32_t one_plus_f_q1_16 = static_cast<int32_t>((normalised + (uint32_t{1} << 13)) >> 14);
    const int32_t reciprocal_q0_15 = lookup_interpolated_q0_15(
        kSoftmaxS16OneOverOnePlusXLut, wrap_to_s16(one_plus_f_q1_16 - kReciprocalInputOffset));
    // e / sum = e * (1 / (1 + f)) / 2^(31 - headroom); to Q0.15 that is a shift of 31 - headroom,
    // the last bit rounded half up.
    const int32_t shift = 30 - headroom;
    for (int32_t i = 0; i < N; ++i) {
      const int32_t prod = (static_cast<int32_t>(y[i]) * reciprocal_q0_15) >> shift;
      y[i] = static_cast<int16_t>(wrap_to_s16((prod + 1) >> 1));
    }
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_softmax_s16_validate(const qlstm_softmax_s16_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_softmax_s16(const qlstm_softmax_s16_params* params, const int16_t* input,
                                         int16_t* output) {
  return qlstm::checked_row_call(qlstm::check_params, qlstm::softmax_s16_prechecked, params, input, output);
}
