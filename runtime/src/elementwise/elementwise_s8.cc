// The int8 elementwise add and multiply: validation and the references, the specification in code
// (docs/arithmetic.md §19; the arithmetic of arm_elementwise_add_s8 / arm_elementwise_mul_s8).
#include "qlstm/elementwise_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "row_op.h"

namespace qlstm {
namespace {

FieldFailure check_shape(const qlstm_elementwise_s8_shape& s) {
  if (s.rows < 0) return {QLSTM_ERROR_BAD_DIMS, "shape.rows"};
  if (s.row_size < 1) return {QLSTM_ERROR_BAD_DIMS, "shape.row_size"};
  if (static_cast<int64_t>(s.rows) * s.row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "shape.rows"};
  if (s.input1_offset < 0) return {QLSTM_ERROR_BAD_DIMS, "shape.input1_offset"};
  if (s.input2_offset < 0) return {QLSTM_ERROR_BAD_DIMS, "shape.input2_offset"};
  return kNoFieldFailure;
}

bool in_s8(int32_t v) { return v >= fxp::kInt8Min && v <= fxp::kInt8Max; }

FieldFailure check_requant(int32_t multiplier, int32_t shift, const char* multiplier_field, const char* shift_field) {
  if (multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, multiplier_field};
  if (shift < QLSTM_SHIFT_MIN || shift > QLSTM_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, shift_field};
  return kNoFieldFailure;
}

// What the add and the multiply both check past their multipliers: zero points and the clamp.
template <class P>
FieldFailure check_common(const P& p) {
  if (!in_s8(p.input1_zero_point)) return {QLSTM_ERROR_BAD_ZERO_POINT, "input1_zero_point"};
  if (!in_s8(p.input2_zero_point)) return {QLSTM_ERROR_BAD_ZERO_POINT, "input2_zero_point"};
  if (!in_s8(p.output_zero_point)) return {QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"};
  if (!in_s8(p.activation_min)) return {QLSTM_ERROR_BAD_DIMS, "activation_min"};
  if (p.activation_max < p.activation_min || p.activation_max > fxp::kInt8Max) {
    return {QLSTM_ERROR_BAD_DIMS, "activation_max"};
  }
  return check_requant(p.output_multiplier, p.output_shift, "output_multiplier", "output_shift");
}

FieldFailure check_add(const qlstm_add_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  FieldFailure f = check_shape(p->shape);
  if (f.status != QLSTM_OK) return f;
  if (p->left_shift < 0 || p->left_shift > QLSTM_ADD_S8_LEFT_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, "left_shift"};
  f = check_requant(p->input1_multiplier, p->input1_shift, "input1_multiplier", "input1_shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->input2_multiplier, p->input2_shift, "input2_multiplier", "input2_shift");
  if (f.status != QLSTM_OK) return f;
  return check_common(*p);
}

FieldFailure check_mul(const qlstm_mul_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  const FieldFailure f = check_shape(p->shape);
  if (f.status != QLSTM_OK) return f;
  return check_common(*p);
}

// The kernels' entry: validate, then the operands (NULL only without rows), then run.
template <class P>
qlstm_status checked_call(FieldFailure (*check)(const P*), void (*run)(const P&, const int8_t*, const int8_t*, int8_t*),
                          const P* params, const int8_t* input1, const int8_t* input2, int8_t* output) {
  const FieldFailure f = check(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->shape.rows > 0 && (input1 == nullptr || input2 == nullptr || output == nullptr)) {
    return QLSTM_ERROR_NULL_POINTER;
  }
  run(*params, input1, input2, output);
  return QLSTM_OK;
}

}  // namespace

// Each operand is centred and widened by 2^left_shift, brought to the common scale, and the
// sum requantized: int32 arithmetic modulo 2^32, as the Arm build computes it (validated params
// keep every intermediate far from wrapping when the multipliers are TFLite's).
void add_s8_prechecked(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  const int32_t n = p.shape.rows * p.shape.row_size;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t a1 = (input1[i] - p.input1_zero_point) * (int32_t{1} << p.left_shift);
    const int32_t a2 = (input2[i] - p.input2_zero_point) * (int32_t{1} << p.left_shift);
    const int32_t b1 = fxp::requantize_double_rounding(a1, p.input1_multiplier, p.input1_shift);
    const int32_t b2 = fxp::requantize_double_rounding(a2, p.input2_multiplier, p.input2_shift);
    const int32_t sum = fxp::requantize_double_rounding(fxp::wrapping_add(b1, b2), p.output_multiplier, p.output_shift);
    output[i] = static_cast<int8_t>(
        fxp::clamp(fxp::wrapping_add(sum, p.output_zero_point), p.activation_min, p.activation_max));
  }
}

// The product of the centred operands is exact in int32 (|x - zp| <= 255).
void mul_s8_prechecked(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  const int32_t n = p.shape.rows * p.shape.row_size;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t product = (input1[i] - p.input1_zero_point) * (input2[i] - p.input2_zero_point);
    const int32_t y = fxp::requantize_double_rounding(product, p.output_multiplier, p.output_shift);
    output[i] = static_cast<int8_t>(
        fxp::clamp(fxp::wrapping_add(y, p.output_zero_point), p.activation_min, p.activation_max));
  }
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_add_s8_validate(const qlstm_add_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_add(params), field);
}

extern "C" qlstm_status qlstm_mul_s8_validate(const qlstm_mul_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_mul(params), field);
}

extern "C" qlstm_status qlstm_add_s8(const qlstm_add_s8_params* params, const int8_t* input1, const int8_t* input2,
                                     int8_t* output) {
  return qlstm::checked_call(qlstm::check_add, qlstm::add_s8_prechecked, params, input1, input2, output);
}

extern "C" qlstm_status qlstm_mul_s8(const qlstm_mul_s8_params* params, const int8_t* input1, const int8_t* input2,
                                     int8_t* output) {
  return qlstm::checked_call(qlstm::check_mul, qlstm::mul_s8_prechecked, params, input1, input2, output);
}
