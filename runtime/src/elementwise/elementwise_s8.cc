// The int8 elementwise add and multiply: validation, the references (the specification in code:
// docs/arithmetic.md §19, the arithmetic of arm_elementwise_add_s8 / arm_elementwise_mul_s8) and
// the dispatch over the variants (add_s8_variants(), mul_s8_variants(): runtime/src/variants.cc).
#include "qlstm/elementwise_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "first_runnable.h"
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

// The kernels' entries: validate, then the operands (NULL only without rows).
template <class P>
qlstm_status check_call(FieldFailure (*check)(const P*), const P* params, const int8_t* input1, const int8_t* input2,
                        const int8_t* output) {
  const FieldFailure f = check(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->shape.rows > 0 && (input1 == nullptr || input2 == nullptr || output == nullptr)) {
    return QLSTM_ERROR_NULL_POINTER;
  }
  return QLSTM_OK;
}

}  // namespace

// Each operand is centred and widened by 2^left_shift, brought to the common scale, and the
// sum requantized: int32 arithmetic modulo 2^32, as the Arm build computes it (validated params
// keep every intermediate far from wrapping when the multipliers are TFLite's).
void add_s8_reference(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
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
void mul_s8_reference(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  const int32_t n = p.shape.rows * p.shape.row_size;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t product = (input1[i] - p.input1_zero_point) * (input2[i] - p.input2_zero_point);
    const int32_t y = fxp::requantize_double_rounding(product, p.output_multiplier, p.output_shift);
    output[i] = static_cast<int8_t>(
        fxp::clamp(fxp::wrapping_add(y, p.output_zero_point), p.activation_min, p.activation_max));
  }
}

extern const AddS8Variant kAddS8ReferenceVariant = {"reference", nullptr, nullptr, add_s8_reference};
extern const MulS8Variant kMulS8ReferenceVariant = {"reference", nullptr, nullptr, mul_s8_reference};

namespace {

// The first variant of the list that runs the call (the reference runs every one).
template <class P>
void dispatch(const ElementwiseS8Variant<P>* variant, const ElementwiseS8Variant<P>* const* list, size_t count,
              const P& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  if (p.shape.rows == 0) return;
  if (variant == nullptr) variant = first_runnable_variant(list, count, p);
  variant->run(p, input1, input2, output);
}

// One variant's call with the kernel's own validation (run_add_s8, run_mul_s8).
template <class P>
qlstm_status run_variant(FieldFailure (*check)(const P*), const ElementwiseS8Variant<P>& v, const P* params,
                         const int8_t* input1, const int8_t* input2, int8_t* output) {
  const qlstm_status st = check_call(check, params, input1, input2, output);
  if (st != QLSTM_OK) return st;
  if (v.is_supported != nullptr && !v.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (v.can_run != nullptr && !v.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  if (params->shape.rows > 0) v.run(*params, input1, input2, output);
  return QLSTM_OK;
}

}  // namespace

void add_s8_prechecked(const AddS8Variant* variant, const qlstm_add_s8_params& p, const int8_t* input1,
                       const int8_t* input2, int8_t* output) {
  size_t n = 0;
  const AddS8Variant* const* list = add_s8_variants(&n);
  dispatch(variant, list, n, p, input1, input2, output);
}

void mul_s8_prechecked(const MulS8Variant* variant, const qlstm_mul_s8_params& p, const int8_t* input1,
                       const int8_t* input2, int8_t* output) {
  size_t n = 0;
  const MulS8Variant* const* list = mul_s8_variants(&n);
  dispatch(variant, list, n, p, input1, input2, output);
}

qlstm_status run_add_s8(const AddS8Variant& variant, const qlstm_add_s8_params* params, const int8_t* input1,
                        const int8_t* input2, int8_t* output) {
  return run_variant(check_add, variant, params, input1, input2, output);
}

qlstm_status run_mul_s8(const MulS8Variant& variant, const qlstm_mul_s8_params* params, const int8_t* input1,
                        const int8_t* input2, int8_t* output) {
  return run_variant(check_mul, variant, params, input1, input2, output);
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
  const qlstm_status st = qlstm::check_call(qlstm::check_add, params, input1, input2, output);
  if (st == QLSTM_OK) qlstm::add_s8_prechecked(nullptr, *params, input1, input2, output);
  return st;
}

extern "C" qlstm_status qlstm_mul_s8(const qlstm_mul_s8_params* params, const int8_t* input1, const int8_t* input2,
                                     int8_t* output) {
  const qlstm_status st = qlstm::check_call(qlstm::check_mul, params, input1, input2, output);
  if (st == QLSTM_OK) qlstm::mul_s8_prechecked(nullptr, *params, input1, input2, output);
  return st;
}
