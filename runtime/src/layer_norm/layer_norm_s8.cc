// The int8 layer normalization: validation and the reference, the specification in code
// (docs/arithmetic.md §21).
#include "qlstm/layer_norm_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"

namespace qlstm {
namespace {

// The square root's argument is moved by an even shift into [2^60, 2^62), so that its root fills
// [2^30, 2^31); the reciprocal 2^62 / root then lies in (2^31, 2^32].
constexpr int32_t kRootArgumentBits = 62;
constexpr int32_t kReciprocalLog2 = 62;
constexpr int32_t kFractionBits = QLSTM_LAYER_NORM_S8_NORMALIZED_FRACTION_BITS;

FieldFailure check_params(const qlstm_layer_norm_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1 || p->row_size > QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->epsilon_term < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "epsilon_term"};
  if (p->epsilon_shift < 0 || p->epsilon_shift > QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX) {
    return {QLSTM_ERROR_BAD_SHIFT, "epsilon_shift"};
  }
  if (p->weights == nullptr) return {QLSTM_ERROR_NULL_POINTER, "weights"};
  if (p->biases == nullptr) return {QLSTM_ERROR_NULL_POINTER, "biases"};
  if (p->output_shift < 0 || p->output_shift > QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "output_shift"};
  if (p->output_zero_point < fxp::kInt8Min || p->output_zero_point > fxp::kInt8Max) {
    return {QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"};
  }
  return kNoFieldFailure;
}

// Bits needed to write x >= 1 (CLZ on every Cortex-M but the M0).
inline int32_t bit_length_u64(uint64_t x) { return 64 - __builtin_clzll(x); }

// floor(sqrt(x)) for x in [2^60, 2^62), exact: the digit-by-digit method, one result bit per step
// from the root's top bit (2^30).
constexpr uint64_t floor_sqrt_u64(uint64_t x) {
  uint64_t root = 0;
  uint64_t bit = uint64_t{1} << 60;
  while (bit != 0) {
    if (x >= root + bit) {
      x -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return root;
}

}  // namespace

// 2^62 / sqrt(w) for w >= 1 as (reciprocal, shift): w x 4^a in [2^60, 2^62) has the root
// q = floor(sqrt(w x 4^a)) in [2^30, 2^31), and 1 / sqrt(w) = 2^a / sqrt(w x 4^a) ~ 2^a x r / 2^62
// with r = 2^62 / q rounded to nearest (ties up). A value v / sqrt(w) in Q12 is then
// rounding_divide_by_pot_s64(v x r, 62 - 12 - a).
LayerNormScale layer_norm_inverse_root(uint64_t w) {
  const int32_t a = (kRootArgumentBits - bit_length_u64(w)) / 2;
  const uint64_t q = floor_sqrt_u64(w << (2 * a));
  const uint64_t r = ((uint64_t{1} << kReciprocalLog2) + q / 2) / q;
  return {static_cast<int64_t>(r), kReciprocalLog2 - kFractionBits - a};
}

void layer_norm_s8_prechecked(const qlstm_layer_norm_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t F = p.row_size;
  const int64_t epsilon = static_cast<int64_t>(p.epsilon_term) << p.epsilon_shift;
  for (int32_t row = 0; row < p.rows; ++row) {
    const int8_t* x = input + static_cast<ptrdiff_t>(row) * F;
    int8_t* y = output + static_cast<ptrdiff_t>(row) * F;
    int32_t sum = 0, sum_of_squares = 0;
    for (int32_t i = 0; i < F; ++i) {
      sum += x[i];
      sum_of_squares += x[i] * x[i];
    }
    // F x sum(x^2) - sum(x)^2 = F^2 x the variance in input steps: exact, >= 0.
    const int64_t variance_f2 = static_cast<int64_t>(F) * sum_of_squares - static_cast<int64_t>(sum) * sum;
    const int64_t w = variance_f2 + epsilon;
    // w == 0 only when every value is the row's mean: each centred value is then 0.
    const LayerNormScale inv = layer_norm_inverse_root(static_cast<uint64_t>(w < 1 ? 1 : w));
    for (int32_t i = 0; i < F; ++i) {
      // F x (x - mean), exact.
      const int32_t centred_f = F * x[i] - sum;
      // |normalized| <= sqrt(F - 1) x 2^12 < 2^19: int32, so gamma's product is one 32 x 32 -> 64.
      const int32_t normalized_q12 = static_cast<int32_t>(
          fxp::rounding_divide_by_pot_s64(static_cast<int64_t>(centred_f) * inv.reciprocal, inv.shift));
      const int64_t acc = static_cast<int64_t>(normalized_q12) * p.weights[i] + p.biases[i];
      const int64_t v = fxp::rounding_divide_by_pot_s64(acc, p.output_shift) + p.output_zero_point;
      y[i] = static_cast<int8_t>(v < fxp::kInt8Min ? fxp::kInt8Min : (v > fxp::kInt8Max ? fxp::kInt8Max : v));
    }
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_layer_norm_s8_validate(const qlstm_layer_norm_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_layer_norm_s8(const qlstm_layer_norm_s8_params* params, const int8_t* input, int8_t* output) {
  return qlstm::checked_row_call(qlstm::check_params, qlstm::layer_norm_s8_prechecked, params, input, output);
}
