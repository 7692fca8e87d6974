// The CMSIS-NN backend of the fully connected op: the whole call through the user's own
// arm_fully_connected_s8 (one multiplier) or arm_fully_connected_per_channel_s8 (one per
// output), built only when the build is pointed at CMSIS-NN (docs/targets.md). qlstm folds the
// input zero point into the effective bias at compile time; upstream adds the bias and
// input_offset * (sum of the weights) itself, so the effective bias goes in as the bias with
// input_offset 0, and, for the Helium code that reads precomputed kernel sums (ctx->buf) instead
// of the bias, as the kernel sums too. Either way upstream's accumulator is ours.
#include "arm_nnfunctions.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

void run_cmsis_nn(const qlstm_fc_s8_params& p, const int8_t* input, int8_t* output) {
  cmsis_nn_context ctx{};
  ctx.buf = const_cast<int32_t*>(p.effective_bias);  // read only, as kernel sums
  ctx.size = p.output_size * static_cast<int32_t>(sizeof(int32_t));
  cmsis_nn_fc_params fc{};
  fc.input_offset = 0;
  fc.filter_offset = 0;  // symmetric weights
  fc.output_offset = p.output_zero_point;
  fc.activation.min = p.activation_min;
  fc.activation.max = p.activation_max;
  const cmsis_nn_dims input_dims = {p.rows, 1, 1, p.input_size};
  const cmsis_nn_dims filter_dims = {p.input_size, 1, 1, p.output_size};
  const cmsis_nn_dims bias_dims = {1, 1, 1, p.output_size};
  const cmsis_nn_dims output_dims = {p.rows, 1, 1, p.output_size};
  // Upstream fails only for a missing ctx->buf on Helium, which is always given here.
  if (p.per_channel) {
    // Upstream's struct is not const-qualified; it only reads the arrays.
    const cmsis_nn_per_channel_quant_params q = {const_cast<int32_t*>(p.multipliers), const_cast<int32_t*>(p.shifts)};
    (void)arm_fully_connected_per_channel_s8(&ctx, &fc, &q, &input_dims, input, &filter_dims, p.weights, &bias_dims,
                                             p.effective_bias, &output_dims, output);
  } else {
    const cmsis_nn_per_tensor_quant_params q = {p.multipliers[0], p.shifts[0]};
    (void)arm_fully_connected_s8(&ctx, &fc, &q, &input_dims, input, &filter_dims, p.weights, &bias_dims,
                                 p.effective_bias, &output_dims, output);
  }
}

}  // namespace

extern const FcS8Variant kFcS8CmsisNnVariant = {"cmsis_nn", nullptr, nullptr, run_cmsis_nn};

}  // namespace qlstm
