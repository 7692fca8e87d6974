// The CMSIS-NN backend of the elementwise add and multiply: the whole call through the user's own
// arm_elementwise_add_s8 / arm_elementwise_mul_s8, built only when the build is pointed at
// CMSIS-NN (docs/targets.md). Upstream takes each input's offset as the negated zero point and
// the output's as the zero point itself; the rest maps one to one over rows x row_size values.
#include "arm_nnfunctions.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

void add_cmsis_nn(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  // Upstream fails for no valid call (its only status is success).
  (void)arm_elementwise_add_s8(input1, input2, -p.input1_zero_point, p.input1_multiplier, p.input1_shift,
                               -p.input2_zero_point, p.input2_multiplier, p.input2_shift, p.left_shift, output,
                               p.output_zero_point, p.output_multiplier, p.output_shift, p.activation_min,
                               p.activation_max, p.shape.rows * p.shape.row_size);
}

void mul_cmsis_nn(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  (void)arm_elementwise_mul_s8(input1, input2, -p.input1_zero_point, -p.input2_zero_point, output, p.output_zero_point,
                               p.output_multiplier, p.output_shift, p.activation_min, p.activation_max,
                               p.shape.rows * p.shape.row_size);
}

}  // namespace

extern const AddS8Variant kAddS8CmsisNnVariant = {"cmsis_nn", nullptr, nullptr, add_cmsis_nn};
extern const MulS8Variant kMulS8CmsisNnVariant = {"cmsis_nn", nullptr, nullptr, mul_cmsis_nn};

}  // namespace qlstm
