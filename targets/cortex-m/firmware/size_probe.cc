// A size probe: a firmware that links one kernel variant (an LSTM's, QLSTM_PROBE_VARIANT, or a
// GRU's, QLSTM_PROBE_GRU_VARIANT) and nothing else of qlstm (built once per variant, and once with
// none). The difference of the linked sizes is what that variant
// costs in flash and static RAM, shared code included (qlstm bench --target reports it).
#include "qlstm/kernels.h"

#if defined(QLSTM_PROBE_VARIANT)
namespace qlstm {
// Weak: a variant not built for this CPU leaves the probe empty (and its size 0).
extern const LstmS8Variant QLSTM_PROBE_VARIANT __attribute__((weak));
}  // namespace qlstm
#endif
#if defined(QLSTM_PROBE_GRU_VARIANT)
namespace qlstm {
extern const GruS8Variant QLSTM_PROBE_GRU_VARIANT __attribute__((weak));
}  // namespace qlstm
#endif

// Opaque to the optimizer, so that the call is kept whole.
void* volatile g_probe_pointers[4];

int main() {
#if defined(QLSTM_PROBE_VARIANT)
  if (&qlstm::QLSTM_PROBE_VARIANT != nullptr) {
    return static_cast<int>(qlstm::run_lstm_s8(
        qlstm::QLSTM_PROBE_VARIANT, static_cast<const qlstm_lstm_s8_params*>(g_probe_pointers[0]),
        static_cast<qlstm_lstm_s8_context*>(g_probe_pointers[1]), static_cast<const int8_t*>(g_probe_pointers[2]),
        static_cast<int8_t*>(g_probe_pointers[3])));
  }
#endif
#if defined(QLSTM_PROBE_GRU_VARIANT)
  if (&qlstm::QLSTM_PROBE_GRU_VARIANT != nullptr) {
    return static_cast<int>(qlstm::run_gru_s8(
        qlstm::QLSTM_PROBE_GRU_VARIANT, static_cast<const qlstm_gru_s8_params*>(g_probe_pointers[0]),
        static_cast<qlstm_gru_s8_context*>(g_probe_pointers[1]), static_cast<const int8_t*>(g_probe_pointers[2]),
        static_cast<int8_t*>(g_probe_pointers[3])));
  }
#endif
  return 0;
}
