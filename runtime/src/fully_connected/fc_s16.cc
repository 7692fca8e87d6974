// The 16x8 fully connected op: validation and the portable reference (docs/arithmetic.md §14).
#include "qlstm/fully_connected_s16.h"

#include "fully_connected/fc_checks.h"
#include "qlstm/fixed_point.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace {

using fc::Failure;

Failure check_params(const qlstm_fc_s16_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  const Failure shape = fc::check_shape(p->rows, p->input_size, p->output_size);
  if (shape.status != QLSTM_OK) return shape;
  if (p->multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "multiplier"};
  if (p->shift < QLSTM_SHIFT_MIN || p->shift > QLSTM_S16_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "shift"};
  if (p->weights == nullptr) return {QLSTM_ERROR_NULL_POINTER, "weights"};
  return fc::check_clamp(p->activation_min, p->activation_max, fxp::kInt16Min, fxp::kInt16Max);
}

// The specification in code: one output at a time, in the order of the formula.
void fc_s16_reference(const qlstm_fc_s16_params& p, const int16_t* input, int16_t* output) {
  const int32_t I = p.input_size, O = p.output_size;
  const int32_t multiplier_q15 = fxp::reduce_multiplier_q31_to_q15(p.multiplier);
  for (int32_t r = 0; r < p.rows; ++r) {
    const int16_t* x = input + static_cast<ptrdiff_t>(r) * I;
    int16_t* y = output + static_cast<ptrdiff_t>(r) * O;
    for (int32_t o = 0; o < O; ++o) {
      const int8_t* w = p.weights + static_cast<ptrdiff_t>(o) * I;
      int64_t acc = p.bias != nullptr ? p.bias[o] : 0;
      for (int32_t i = 0; i < I; ++i) acc = fxp::wrapping_add_s64(acc, int64_t{int32_t{x[i]} * int32_t{w[i]}});
      const int32_t v = fxp::requantize_s64_round_half_up(acc, multiplier_q15, p.shift);
      y[o] = static_cast<int16_t>(fxp::clamp(v, p.activation_min, p.activation_max));
    }
  }
}

}  // namespace
}  // namespace qlstm

extern "C" qlstm_status qlstm_fc_s16_validate(const qlstm_fc_s16_params* params, const char** field) {
  const qlstm::fc::Failure f = qlstm::check_params(params);
  if (field != nullptr) *field = f.field;
  return f.status;
}

extern "C" qlstm_status qlstm_fc_s16(const qlstm_fc_s16_params* params, const int16_t* input, int16_t* output) {
  const qlstm_status st = qlstm_fc_s16_validate(params, nullptr);
  if (st != QLSTM_OK) return st;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  qlstm::fc_s16_reference(*params, input, output);
  return QLSTM_OK;
}
