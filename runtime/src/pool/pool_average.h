// The pooling average's rounding (docs/arithmetic.md §17), shared by the reference and the blocked
// variants: sum / count to nearest, exact halves away from raw 0, with C's truncating division.
// Static: every file that includes it keeps its own copy (the x86 variants compile theirs for AVX2).
#ifndef QLSTM_RUNTIME_SRC_POOL_POOL_AVERAGE_H_
#define QLSTM_RUNTIME_SRC_POOL_POOL_AVERAGE_H_

#include <stdint.h>

namespace qlstm {

static inline int32_t pool_rounded_average(int32_t sum, int32_t count) {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_SRC_POOL_POOL_AVERAGE_H_
