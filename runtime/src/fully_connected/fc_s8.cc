// The fully connected op: validation, the effective bias, dispatch over its variants.
#include "qlstm/fully_connected_s8.h"

#include "first_runnable.h"
#include "fully_connected/fc_checks.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace {

using fc::Failure;
using fc::kNoFailure;

Failure check_params(const qlstm_fc_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  const Failure shape = fc::check_shape(p->rows, p->input_size, p->output_size);
  if (shape.status != QLSTM_OK) return shape;
  if (p->per_channel != 0 && p->per_channel != 1) return {QLSTM_ERROR_BAD_DIMS, "per_channel"};
  if (p->multipliers == nullptr) return {QLSTM_ERROR_NULL_POINTER, "multipliers"};
  if (p->shifts == nullptr) return {QLSTM_ERROR_NULL_POINTER, "shifts"};
  if (p->weights == nullptr) return {QLSTM_ERROR_NULL_POINTER, "weights"};
  if (p->effective_bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, "effective_bias"};
  const int32_t requants = p->per_channel ? p->output_size : 1;
  for (int32_t o = 0; o < requants; ++o) {
    if (p->multipliers[o] < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, "multipliers"};
    if (p->shifts[o] < QLSTM_SHIFT_MIN || p->shifts[o] > QLSTM_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "shifts"};
  }
  if (p->output_zero_point < fxp::kInt8Min || p->output_zero_point > fxp::kInt8Max) {
    return {QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"};
  }
  return fc::check_clamp(p->activation_min, p->activation_max, fxp::kInt8Min, fxp::kInt8Max);
}

// The specification in code: one output at a time, in the order of the formula.
void fc_s8_reference(const qlstm_fc_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t I = p.input_size, O = p.output_size;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int8_t* x = input + static_cast<ptrdiff_t>(r) * I;
    int8_t* y = output + static_cast<ptrdiff_t>(r) * O;
    for (int32_t o = 0; o < O; ++o) {
      const int8_t* w = p.weights + static_cast<ptrdiff_t>(o) * I;
      int32_t acc = p.effective_bias[o];
      for (int32_t i = 0; i < I; ++i) acc = fxp::wrapping_add(acc, int32_t{x[i]} * int32_t{w[i]});
      const int32_t q = p.per_channel ? o : 0;
      const int32_t v = fxp::wrapping_add(fxp::requantize_double_rounding(acc, p.multipliers[q], p.shifts[q]),
                                          p.output_zero_point);
      y[o] = static_cast<int8_t>(fxp::clamp(v, p.activation_min, p.activation_max));
    }
  }
}

}  // namespace

const FcS8Variant kFcS8ReferenceVariant = {"reference", nullptr, nullptr, fc_s8_reference};

const FcS8Variant* select_fc_s8_variant(const FcS8Variant* const* list, size_t count, const qlstm_fc_s8_params& p) {
  return first_runnable_variant(list, count, p);
}

qlstm_status run_fc_s8_prechecked(const FcS8Variant* variant, const qlstm_fc_s8_params& params, const int8_t* input,
                                  int8_t* output) {
  if (variant == nullptr) {
    size_t count = 0;
    const FcS8Variant* const* all = fc_s8_variants(&count);
    variant = select_fc_s8_variant(all, count, params);
    if (variant == nullptr) return QLSTM_ERROR_NO_VARIANT;
  }
  if (params.rows > 0) variant->run(params, input, output);
  return QLSTM_OK;
}

qlstm_status run_fc_s8(const FcS8Variant& variant, const qlstm_fc_s8_params* params, const int8_t* input,
                       int8_t* output) {
  const Failure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  if (variant.is_supported != nullptr && !variant.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant.can_run != nullptr && !variant.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  return run_fc_s8_prechecked(&variant, *params, input, output);
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_fc_s8_validate(const qlstm_fc_s8_params* params, const char** field) {
  const qlstm::fc::Failure f = qlstm::check_params(params);
  if (field != nullptr) *field = f.field;
  return f.status;
}

extern "C" qlstm_status qlstm_fc_s8(const qlstm_fc_s8_params* params, const int8_t* input, int8_t* output) {
  const qlstm_status st = qlstm_fc_s8_validate(params, nullptr);
  if (st != QLSTM_OK) return st;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  return qlstm::run_fc_s8_prechecked(nullptr, *params, input, output);
}

extern "C" void qlstm_fc_s8_effective_bias(const int8_t* weights, const int32_t* bias, int32_t input_zero_point,
                                           int32_t input_size, int32_t output_size, int32_t* effective_bias) {
  for (int32_t o = 0; o < output_size; ++o) {
    int32_t row_sum = 0;
    for (int32_t i = 0; i < input_size; ++i) {
      row_sum = qlstm::fxp::wrapping_add(row_sum, weights[static_cast<ptrdiff_t>(o) * input_size + i]);
    }
    const int32_t b = bias != nullptr ? bias[o] : 0;
    effective_bias[o] = qlstm::fxp::wrapping_add(b, qlstm::fxp::wrapping_mul(-input_zero_point, row_sum));
  }
}
