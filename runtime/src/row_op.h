// What the C entry points of an op on rows of int8 or int16 values (softmax, table) share: the result of
// a validation, its report through `field`, and the checked call.
#ifndef QLSTM_RUNTIME_ROW_OP_H_
#define QLSTM_RUNTIME_ROW_OP_H_

#include <stdint.h>

#include "qlstm/status.h"

namespace qlstm {

struct FieldFailure {
  qlstm_status status;
  const char* field;  // the first offending field, a static string; nullptr when ok
};
constexpr FieldFailure kNoFieldFailure = {QLSTM_OK, nullptr};

// A validate entry point: the status, and the field through `field` when it is not NULL.
inline qlstm_status report(const FieldFailure& f, const char** field) {
  if (field != nullptr) *field = f.field;
  return f.status;
}

// A run entry point: validate, then the buffers (NULL only when there are no rows), then run.
template <class Params, class T>
qlstm_status checked_row_call(FieldFailure (*check)(const Params*), void (*run)(const Params&, const T*, T*),
                              const Params* params, const T* input, T* output) {
  const FieldFailure f = check(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->rows > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  run(*params, input, output);
  return QLSTM_OK;
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_ROW_OP_H_
