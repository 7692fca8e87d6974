// The 16x8 fully connected op: validation, the reference variant and the dispatch over the 16x8
// variants (docs/arithmetic.md §14).
#include "qlstm/fully_connected_s16.h"

#include "fully_connected/fc_checks.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "reference/lstm_s16_reference.h"
#include "sequence_common.h"

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
  const s16::FcFinish finish(p);
  for (int32_t r = 0; r < p.rows; ++r) {
    const int16_t* x = input + static_cast<ptrdiff_t>(r) * I;
    int16_t* y = output + static_cast<ptrdiff_t>(r) * O;
    for (int32_t o = 0; o < O; ++o) {
      y[o] = finish(s16::dot_plus_bias(x, p.weights + static_cast<ptrdiff_t>(o) * I, I, p.bias != nullptr ? p.bias[o] : 0));
    }
  }
}

}  // namespace

const FcS16Variant kFcS16ReferenceVariant = {"reference", nullptr, nullptr, fc_s16_reference};

const FcS16Variant* select_fc_s16_variant(const FcS16Variant* const* list, size_t count, const qlstm_fc_s16_params& p) {
  return first_runnable_variant(list, count, p);
}

qlstm_status run_fc_s16(const FcS16Variant& variant, const qlstm_fc_s16_params* params, const int16_t* input,
                        int16_t* output) {
  const qlstm_status st = qlstm_fc_s16_validate(params, nullptr);
  if (st != QLSTM_OK) return st;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  if (variant.is_supported != nullptr && !variant.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant.can_run != nullptr && !variant.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  if (params->rows > 0) variant.run(*params, input, output);
  return QLSTM_OK;
}

qlstm_status run_fc_s16_prechecked(const qlstm_fc_s16_params& params, const int16_t* input, int16_t* output) {
  size_t count = 0;
  const FcS16Variant* const* all = fc_s16_variants(&count);
  const FcS16Variant* variant = select_fc_s16_variant(all, count, params);
  if (variant == nullptr) return QLSTM_ERROR_NO_VARIANT;
  if (params.rows > 0) variant->run(params, input, output);
  return QLSTM_OK;
}

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
  return qlstm::run_fc_s16_prechecked(*params, input, output);
}
