// Dispatch: the first entry of a kind's variant list that this CPU supports and that can run the
// valid call (every kind's list: LSTM, GRU, 16x8, fully connected, pooling).
#ifndef QLSTM_RUNTIME_FIRST_RUNNABLE_H_
#define QLSTM_RUNTIME_FIRST_RUNNABLE_H_

#include <stddef.h>

namespace qlstm {

// The first of list[0, count) whose is_supported and can_run (each null: yes) accept the call, or
// null.
template <class Variant, class Params>
const Variant* first_runnable_variant(const Variant* const* list, size_t count, const Params& params) {
  for (size_t k = 0; k < count; ++k) {
    const Variant& v = *list[k];
    if ((v.is_supported == nullptr || v.is_supported()) && (v.can_run == nullptr || v.can_run(params))) {
      return list[k];
    }
  }
  return nullptr;
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_FIRST_RUNNABLE_H_
