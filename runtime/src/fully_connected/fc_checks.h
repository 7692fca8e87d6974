// The checks the fully connected ops (int8 and 16x8) share: a refusal names the field.
#ifndef QLSTM_FULLY_CONNECTED_FC_CHECKS_H_
#define QLSTM_FULLY_CONNECTED_FC_CHECKS_H_

#include <stdint.h>

#include "qlstm/fixed_point.h"
#include "qlstm/status.h"

namespace qlstm {
namespace fc {

struct Failure {
  qlstm_status status;
  const char* field;
};
constexpr Failure kNoFailure = {QLSTM_OK, nullptr};

// rows >= 0, sizes >= 1, and every element count fits int32 (indexing on a 32-bit MCU).
constexpr Failure check_shape(int32_t rows, int32_t input_size, int32_t output_size) {
  if (rows < 0) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  if (input_size < 1) return {QLSTM_ERROR_BAD_DIMS, "input_size"};
  if (output_size < 1) return {QLSTM_ERROR_BAD_DIMS, "output_size"};
  const int64_t R = rows, I = input_size, O = output_size;
  if (O * I > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "output_size"};
  if (R * I > fxp::kInt32Max || R * O > fxp::kInt32Max) return {QLSTM_ERROR_BAD_DIMS, "rows"};
  return kNoFailure;
}

// The output clamp: lo <= activation_min <= activation_max <= hi (the output type's range).
constexpr Failure check_clamp(int32_t activation_min, int32_t activation_max, int32_t lo, int32_t hi) {
  if (activation_min < lo || activation_min > hi) return {QLSTM_ERROR_BAD_DIMS, "activation_min"};
  if (activation_max < activation_min || activation_max > hi) return {QLSTM_ERROR_BAD_DIMS, "activation_max"};
  return kNoFailure;
}

}  // namespace fc
}  // namespace qlstm

#endif  // QLSTM_FULLY_CONNECTED_FC_CHECKS_H_
