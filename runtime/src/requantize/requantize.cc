// The requantization op: validation and the elementwise arithmetic (docs/arithmetic.md §15).
#include "qlstm/requantize.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

bool valid_type(int32_t type) { return type == QLSTM_ELEMENT_S8 || type == QLSTM_ELEMENT_S16; }

int32_t type_min(int32_t type) { return type == QLSTM_ELEMENT_S8 ? fxp::kInt8Min : fxp::kInt16Min; }
int32_t type_max(int32_t type) { return type == QLSTM_ELEMENT_S8 ? fxp::kInt8Max : fxp::kInt16Max; }

FieldFailure check_params(const qlstm_requantize_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (!valid_type(p->input_type)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_type"};
  if (!valid_type(p->output_type)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_type"};
  if (p->input_zero_point < type_min(p->input_type) || p->input_zero_point > type_max(p->input_type)) {
    return {QLSTM_ERROR_BAD_ZERO_POINT, "input_zero_point"};
  }
  if (p->output_zero_point < type_min(p->output_type) || p->output_zero_point > type_max(p->output_type)) {
    return {QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"};
  }
  return check_requant(p->to_output, "to_output.multiplier", "to_output.shift");
}

template <class In, class Out>
void requantize_rows(const qlstm_requantize_params& p, const In* x, Out* y) {
  const fxp::RequantDoubleRounding rq = fxp::RequantDoubleRounding::make(p.to_output.multiplier, p.to_output.shift);
  const int32_t lo = type_min(p.output_type), hi = type_max(p.output_type);
  const int32_t count = p.rows * p.row_size;
  // |x - zp| <= 65535: the difference is exact; the add wraps as the int8 kernels' do.
  for (int32_t k = 0; k < count; ++k) {
    const int32_t v = fxp::wrapping_add(rq(static_cast<int32_t>(x[k]) - p.input_zero_point), p.output_zero_point);
    y[k] = static_cast<Out>(fxp::clamp(v, lo, hi));
  }
}

}  // namespace

void requantize_prechecked(const qlstm_requantize_params& p, const void* input, void* output) {
  const bool in8 = p.input_type == QLSTM_ELEMENT_S8, out8 = p.output_type == QLSTM_ELEMENT_S8;
  if (in8 && out8) {
    requantize_rows(p, static_cast<const int8_t*>(input), static_cast<int8_t*>(output));
  } else if (in8) {
    requantize_rows(p, static_cast<const int8_t*>(input), static_cast<int16_t*>(output));
  } else if (out8) {
    requantize_rows(p, static_cast<const int16_t*>(input), static_cast<int8_t*>(output));
  } else {
    requantize_rows(p, static_cast<const int16_t*>(input), static_cast<int16_t*>(output));
  }
}

}  // namespace qlstm

extern "C" size_t qlstm_element_bytes(int32_t type) {
  return type == QLSTM_ELEMENT_S8    ? sizeof(int8_t)
         : type == QLSTM_ELEMENT_S16 ? sizeof(int16_t)
         : type == QLSTM_ELEMENT_S32 ? sizeof(int32_t)
                                     : 0;
}

extern "C" qlstm_status qlstm_requantize_validate(const qlstm_requantize_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_requantize(const qlstm_requantize_params* params, const void* input, void* output) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  qlstm::requantize_prechecked(*params, input, output);
  return QLSTM_OK;
}
