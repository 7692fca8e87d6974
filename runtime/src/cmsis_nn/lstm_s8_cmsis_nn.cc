// The CMSIS-NN backend: the whole call through the user's own CMSIS-NN
// arm_lstm_unidirectional_s8, built only when the build is pointed at it
// (QLSTM_CMSIS_NN_INCLUDE_DIR and QLSTM_CMSIS_NN_LIBRARY; docs/targets.md). The parameter block
// maps field by field (lstm_params_cmsis_nn.h).
#include "arm_nnfunctions.h"
#include "cmsis_nn/lstm_params_cmsis_nn.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

qlstm_status run_cmsis_nn(const qlstm_lstm_s8_params& p, qlstm_lstm_s8_context& ctx, const int8_t* input,
                          int8_t* output) {
  const cmsis_nn_lstm_params c = cmsis_nn::lstm_params(p, p.output_zero_point);
  cmsis_nn_lstm_context buffers = cmsis_nn::lstm_buffers(p, ctx);
  return arm_lstm_unidirectional_s8(input, output, &c, &buffers) == ARM_CMSIS_NN_SUCCESS ? QLSTM_OK
                                                                                         : QLSTM_ERROR_UNSUPPORTED;
}

// Upstream reads a sequence: a repeated input is ours alone.
bool can_run_cmsis_nn(const qlstm_lstm_s8_params& p) { return p.input_repeated == 0 && cmsis_nn::can_run_lstm(p); }

}  // namespace

extern const LstmS8Variant kLstmS8CmsisNnVariant = {"cmsis_nn", nullptr, can_run_cmsis_nn, nullptr,
                                                    nullptr,    nullptr, run_cmsis_nn};

}  // namespace qlstm
