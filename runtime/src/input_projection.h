// A repeated input's projection (docs/arithmetic.md §24), shared by the recurrent kinds that read
// one input step at every step (input_repeated): each gate's input accumulator bias + W x of every
// batch row, the same at every step, computed once per call into the scratch after the kind's own
// buffers; every step's gates then read it (GateArgs::x_acc) instead of multiplying x.
#ifndef QLSTM_SRC_INPUT_PROJECTION_H_
#define QLSTM_SRC_INPUT_PROJECTION_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/lstm_s8.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {

// Where the projection starts: after `before` bytes of the scratch, aligned.
inline size_t projection_offset(size_t before) {
  const size_t a = QLSTM_SCRATCH_ALIGNMENT;
  return (before + a - 1) / a * a;
}

// The scratch of a call with a projection of `gates` int32 [B][H] blocks after `before` bytes.
inline size_t scratch_with_projection(size_t before, int32_t gates, int32_t batch, int32_t hidden_size) {
  return projection_offset(before) +
         static_cast<size_t>(gates) * static_cast<size_t>(batch) * static_cast<size_t>(hidden_size) * sizeof(int32_t);
}

// Gate g's accumulators at projection + g * B * H, row b's at + b * H; Gate has input_weights
// [H][I] and input_effective_bias [H]. Returns the projection (in the scratch, which is aligned).
template <class Gate>
const int32_t* project_repeated_input(const Gate* gates, int32_t gate_count, int32_t B, int32_t I, int32_t H,
                                      const int8_t* input, void* scratch, size_t before) {
  const ptrdiff_t BH = static_cast<ptrdiff_t>(B) * H;
  int32_t* const projection =
      static_cast<int32_t*>(static_cast<void*>(static_cast<uint8_t*>(scratch) + projection_offset(before)));
  for (int32_t g = 0; g < gate_count; ++g) {
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t r = 0; r < H; ++r) {
        projection[g * BH + b * H + r] = reference::dot_s8_plus_bias(
            input + static_cast<ptrdiff_t>(b) * I, gates[g].input_weights + static_cast<ptrdiff_t>(r) * I, I,
            gates[g].input_effective_bias[r]);
      }
    }
  }
  return projection;
}

}  // namespace qlstm

#endif  // QLSTM_SRC_INPUT_PROJECTION_H_
