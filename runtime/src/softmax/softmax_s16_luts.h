// The 16x8 softmax's two fixed tables (generated: softmax_s16_luts.cc, tools/gen/gen_softmax_s16_luts.py).
#ifndef QLSTM_RUNTIME_SOFTMAX_S16_LUTS_H_
#define QLSTM_RUNTIME_SOFTMAX_S16_LUTS_H_

#include <stdint.h>

namespace qlstm {

// 512 segments of 128 input steps each (a Q0.15 input spans 65536 steps), plus the right end.
constexpr int kSoftmaxS16LutSize = 513;
// exp(x) on [-10, 0] and 1/(1 + x) on [0, 1], Q0.15.
extern const int16_t kSoftmaxS16ExpLut[kSoftmaxS16LutSize];
extern const int16_t kSoftmaxS16OneOverOnePlusXLut[kSoftmaxS16LutSize];

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_SOFTMAX_S16_LUTS_H_
