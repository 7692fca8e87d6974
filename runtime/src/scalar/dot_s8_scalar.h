// The portable dot products of the "scalar" variants (the LSTM's gate rows and the fully
// connected op): int8 products summed in uint32, so the sums wrap modulo 2^32 as the reference's.
#ifndef QLSTM_SRC_SCALAR_DOT_S8_SCALAR_H_
#define QLSTM_SRC_SCALAR_DOT_S8_SCALAR_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fixed_point.h"

namespace qlstm {
namespace scalar {

struct Dot {
  // acc[k] += sum_{j<n} v[j] * w[k * stride + j], k < 4: each v[j] loaded once for four rows.
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
  // acc + sum_{j<n} v[j] * w[j].
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
    uint32_t a = static_cast<uint32_t>(acc);
    for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
    return fxp::bits_to_s32(a);
  }
};

}  // namespace scalar
}  // namespace qlstm

#endif  // QLSTM_SRC_SCALAR_DOT_S8_SCALAR_H_
