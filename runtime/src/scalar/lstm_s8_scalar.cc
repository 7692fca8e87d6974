// "scalar": portable C, the gate rows four at a time (blocked/gate_rows.h), for cores without a
// SIMD unit (Cortex-M3) and as the fallback everywhere. Cell and hidden stages: the reference's.
#include "blocked/gate_rows.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace scalar {
namespace {

struct Kernel : blocked::ScalarFinish {
  static void dot4(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, int32_t acc[4]) {
    const int8_t* w0 = w;
    const int8_t* w1 = w + stride;
    const int8_t* w2 = w + 2 * stride;
    const int8_t* w3 = w + 3 * stride;
    uint32_t a0 = static_cast<uint32_t>(acc[0]), a1 = static_cast<uint32_t>(acc[1]);
    uint32_t a2 = static_cast<uint32_t>(acc[2]), a3 = static_cast<uint32_t>(acc[3]);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t vj = v[j];
      a0 += static_cast<uint32_t>(vj * w0[j]);
      a1 += static_cast<uint32_t>(vj * w1[j]);
      a2 += static_cast<uint32_t>(vj * w2[j]);
      a3 += static_cast<uint32_t>(vj * w3[j]);
    }
    acc[0] = fxp::bits_to_s32(a0);
    acc[1] = fxp::bits_to_s32(a1);
    acc[2] = fxp::bits_to_s32(a2);
    acc[3] = fxp::bits_to_s32(a3);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
    uint32_t a = static_cast<uint32_t>(acc);
    for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
    return fxp::bits_to_s32(a);
  }
  static void activate(int16_t* v, int32_t n, bool is_tanh) { blocked::activate_scalar(v, n, is_tanh); }
};

bool is_supported() { return true; }

}  // namespace
}  // namespace scalar

extern const LstmS8Variant kLstmS8ScalarVariant = {"scalar", scalar::is_supported, nullptr, blocked::gate<scalar::Kernel>,
                                                   reference::cell_update, reference::hidden_update, nullptr};

}  // namespace qlstm
