// "scalar": portable C, the gate rows four at a time (blocked/gate_rows.h), for cores without a
// SIMD unit (Cortex-M3) and as the fallback everywhere. Cell and hidden stages: the reference's.
#include "blocked/gate_rows.h"
#include "reference/lstm_s8_reference.h"
#include "scalar/dot_s8_scalar.h"

namespace qlstm {
namespace scalar {
namespace {

struct Kernel : blocked::ScalarFinish, Dot {
  static void activate(const qlstm_gate_s8_params& g, int16_t* v, int32_t n) { activate_gate_row(g, v, n); }
};

bool is_supported() { return true; }

}  // namespace
}  // namespace scalar

extern const LstmS8Variant kLstmS8ScalarVariant = {"scalar", scalar::is_supported, nullptr, blocked::gate<scalar::Kernel>,
                                                   reference::cell_update, reference::hidden_update, nullptr};

}  // namespace qlstm
