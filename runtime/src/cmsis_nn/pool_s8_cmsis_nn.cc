// The CMSIS-NN backend of the pooling op: the whole call through the user's own arm_max_pool_s8
// or arm_avgpool_s8, built only when the build is pointed at CMSIS-NN (docs/targets.md). The
// fields map one to one (NHWC dims, window, stride, padding, clamp). Upstream's average on DSP
// cores sums each position's channels into a caller buffer of one int32 per channel; the backend
// has no scratch of its own, so it keeps a static one and declines a call with more channels.
#include "arm_nnfunctions.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

constexpr int32_t kMaxChannels = 1024;  // the average's int32 buffer on DSP cores
int32_t g_average_buffer[kMaxChannels];

bool can_run(const qlstm_pool_s8_params& p) { return p.channels <= kMaxChannels; }

void run_cmsis_nn(const qlstm_pool_s8_params& p, const int8_t* input, int8_t* output) {
  cmsis_nn_context ctx{};
  ctx.buf = g_average_buffer;
  ctx.size = static_cast<int32_t>(sizeof g_average_buffer);
  cmsis_nn_pool_params pool{};
  pool.stride = {p.stride_width, p.stride_height};
  pool.padding = {p.padding_width, p.padding_height};
  pool.activation = {p.activation_min, p.activation_max};
  const cmsis_nn_dims input_dims = {p.batch, p.input_height, p.input_width, p.channels};
  const cmsis_nn_dims filter_dims = {1, p.window_height, p.window_width, 1};
  const cmsis_nn_dims output_dims = {p.batch, p.output_height, p.output_width, p.channels};
  // Upstream fails only for a window without a position inside the image, which validation
  // rules out, or a missing buffer, which is always given.
  if (p.kind == QLSTM_POOL_MAX) {
    (void)arm_max_pool_s8(&ctx, &pool, &input_dims, input, &filter_dims, &output_dims, output);
  } else {
    (void)arm_avgpool_s8(&ctx, &pool, &input_dims, input, &filter_dims, &output_dims, output);
  }
}

}  // namespace

extern const PoolS8Variant kPoolS8CmsisNnVariant = {"cmsis_nn", nullptr, can_run, run_cmsis_nn};

}  // namespace qlstm
