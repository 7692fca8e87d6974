// The CMSIS-NN backend of the 16x8 LSTM: the whole call through the user's own CMSIS-NN
// arm_lstm_unidirectional_s16, built only when the build is pointed at it (docs/targets.md). The
// parameter block maps field by field as the int8 one's (lstm_params_cmsis_nn.h), with the int64
// effective biases as they are and every zero point 0.
#include "arm_nnfunctions.h"
#include "cmsis_nn/lstm_params_cmsis_nn.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

qlstm_status run_cmsis_nn(const qlstm_lstm_s16_params& p, qlstm_lstm_s16_context& ctx, const int16_t* input,
                          int16_t* output) {
  constexpr int32_t kNoOutputOffset = 0;  // symmetric int16 output
  const cmsis_nn_lstm_params c = cmsis_nn::lstm_params(p, kNoOutputOffset);
  cmsis_nn_lstm_context buffers = cmsis_nn::lstm_buffers(p, ctx);
  return arm_lstm_unidirectional_s16(input, output, &c, &buffers) == ARM_CMSIS_NN_SUCCESS ? QLSTM_OK
                                                                                          : QLSTM_ERROR_UNSUPPORTED;
}

// Upstream's arm_nn_vec_mat_mul_result_acc_s16 sums a row's first min(columns, MAX_COL_COUNT = 512)
// products in 32 bits and the rest in 64, qlstm (and upstream's portable C) all in 64: the same
// sums while the 32-bit part cannot leave int32. With DSP (SMLAD) that part is the products alone,
// at most 512 * 2^22 = 2^31: it can, by one, at 512 columns or more. With Helium (VMLADAVA) it
// starts from the effective bias truncated to 32 bits: exact while bias + products stay in int32.
constexpr int64_t kUpstreamInt32Columns = 512;

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
bool biases_keep_int32(const int64_t* bias, int32_t rows, int32_t columns) {
  constexpr int64_t kMaxProduct = 32768 * 128;   // (-32768) * (-128)
  constexpr int64_t kMinProduct = 32767 * -128;  // below -32768 * 127
  const int64_t n = columns < kUpstreamInt32Columns ? columns : kUpstreamInt32Columns;
  const int64_t hi = INT32_MAX - n * kMaxProduct, lo = INT32_MIN - n * kMinProduct;
  for (int32_t r = 0; r < rows; ++r) {
    if (bias[r] > hi || bias[r] < lo) return false;
  }
  return true;
}
#endif

bool can_run_cmsis_nn(const qlstm_lstm_s16_params& p) {
  if (!cmsis_nn::can_run_lstm(p)) return false;
  const int32_t I = p.dims.input_size, H = p.dims.hidden_size;
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
  for (const qlstm_gate_s16_params& g : p.gates) {
    if (!biases_keep_int32(g.input_effective_bias, H, I) || !biases_keep_int32(g.hidden_effective_bias, H, H)) {
      return false;
    }
  }
  return true;
#elif defined(__ARM_FEATURE_DSP)
  return I < kUpstreamInt32Columns && H < kUpstreamInt32Columns;
#else
  (void)I;
  (void)H;
  return true;
#endif
}

}  // namespace

extern const LstmS16Variant kLstmS16CmsisNnVariant = {"cmsis_nn", nullptr, can_run_cmsis_nn, nullptr,
                                                      nullptr,    nullptr, run_cmsis_nn};

}  // namespace qlstm
