// The table op: validation and the lookup (docs/arithmetic.md §12).
#include "qlstm/table_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"

namespace qlstm {
namespace {

// The entry of input -128.
constexpr int32_t kTableOffset = -fxp::kInt8Min;

FieldFailure check_params(const qlstm_table_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->row_size < 1) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->table == nullptr) return {QLSTM_ERROR_NULL_POINTER, "table"};
  return kNoFieldFailure;
}

}  // namespace

void table_s8_prechecked(const qlstm_table_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t count = p.rows * p.row_size;
  // Element by element: output == input (in place) reads each value before writing it.
  for (int32_t k = 0; k < count; ++k) output[k] = p.table[input[k] + kTableOffset];
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_table_s8_validate(const qlstm_table_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_table_s8(const qlstm_table_s8_params* params, const int8_t* input, int8_t* output) {
  return qlstm::checked_row_call(qlstm::check_params, qlstm::table_s8_prechecked, params, input, output);
}
