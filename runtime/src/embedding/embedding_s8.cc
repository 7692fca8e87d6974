// The embedding op: validation and the lookup (docs/arithmetic.md §20).
#include "qlstm/embedding_s8.h"

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"

namespace qlstm {
namespace {

FieldFailure check_params(const qlstm_embedding_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->table_rows < 1) return {QLSTM_ERROR_BAD_DIMS, "table_rows"};
  if (p->row_size < 1) return {QLSTM_ERROR_BAD_DIMS, "row_size"};
  // Every element of the table and of the output is addressable in int32.
  if (static_cast<int64_t>(p->table_rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "table_rows"};
  if (static_cast<int64_t>(p->rows) * p->row_size > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (p->table == nullptr) return {QLSTM_ERROR_NULL_POINTER, "table"};
  return kNoFieldFailure;
}

}  // namespace

qlstm_status embedding_s8_prechecked(const qlstm_embedding_s8_params& p, const int32_t* ids, int8_t* output) {
  // Every id first: a bad one leaves the output as it was.
  for (int32_t r = 0; r < p.rows; ++r) {
    if (ids[r] < 0 || ids[r] >= p.table_rows) return QLSTM_ERROR_BAD_INDEX;
  }
  const int32_t E = p.row_size;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int8_t* row = p.table + static_cast<ptrdiff_t>(ids[r]) * E;
    int8_t* out = output + static_cast<ptrdiff_t>(r) * E;
    for (int32_t e = 0; e < E; ++e) out[e] = row[e];
  }
  return QLSTM_OK;
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_embedding_s8_validate(const qlstm_embedding_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_embedding_s8(const qlstm_embedding_s8_params* params, const int32_t* ids,
                                           int8_t* output) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->rows > 0 && (ids == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  return qlstm::embedding_s8_prechecked(*params, ids, output);
}
