// From a float LSTM and its int16 boundary scales to the 16x8 kernel's parameters
// (qlstm_lstm_s16, docs/arithmetic.md §14; docs/compiler.md). Host only.
#ifndef QLSTM_COMPILER_DERIVE_S16_H_
#define QLSTM_COMPILER_DERIVE_S16_H_

#include <array>
#include <cstdint>
#include <vector>

#include "qlstm/compiler/derive.h"
#include "qlstm/compiler/float_lstm.h"
#include "qlstm/lstm_s16.h"

namespace qlstm {
namespace compiler {

// The symmetric int16 scale of a boundary whose values reach max_abs: max_abs / 32767 (zero point
// 0, as every 16x8 boundary). Throws CompileError for a range that is not positive and finite.
double symmetric_s16_scale(double max_abs, const std::string& what);

// One gate of the 16x8 LSTM: int8 weights as the int8 kernel's, int64 effective biases (no zero
// point to fold: both float biases on the input side, the recurrent side's bias 0).
struct DerivedGateS16 {
  std::vector<int8_t> w_x;                     // [H][I]
  std::vector<int8_t> w_h;                     // [H][H]
  std::vector<int64_t> input_effective_bias;   // [H]: round((b_i + b_h) / (s_x s_Wx))
  std::vector<int64_t> hidden_effective_bias;  // [H]: 0
  double w_x_scale = 0, w_h_scale = 0;
  qlstm_requant input_to_q3_12{}, hidden_to_q3_12{};
  int32_t activation = QLSTM_ACTIVATION_SIGMOID;
};

// Everything qlstm_lstm_s16 needs, owned. The hidden state is int16 at the output's scale.
struct DerivedLstmS16 {
  int32_t input_size = 0, hidden_size = 0;
  double input_scale = 0, output_scale = 0;  // int16, zero point 0
  CellScaleChoice cell;
  int32_t cell_clip = 0;
  int32_t time_direction = QLSTM_TIME_FORWARD;
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;
  std::array<DerivedGateS16, QLSTM_GATE_COUNT> gates;
  qlstm_requant forget_times_cell_to_cell{}, input_times_cell_gate_to_cell{},
      output_times_tanh_cell_to_hidden{};

  // A kernel parameter block pointing into this object (valid while it lives).
  qlstm_lstm_s16_params kernel_params(int32_t batch, int32_t time_steps, Layout layout) const;
};

// Derives the 16x8 parameters. options: weight_method, weight_clip_ratio, bias_correction (with
// the calibration means) and cell_clip as for the int8 LSTM; adaptive rounding is refused (not
// derived for 16x8 yet). Throws CompileError naming the gate, the row and the quantity for a
// bias or an accumulator that leaves int32 (the range CMSIS-NN's optimized 16x8 paths need:
// |bias| + 32768 * sum|w| < 2^31 on both sides of every row), a multiplier out of range, or a
// gate shift above QLSTM_S16_SHIFT_MAX.
DerivedLstmS16 derive_lstm_s16_params(const FloatLstm& lstm, double input_scale, double output_scale,
                                      const CellScaleChoice& cell, const DeriveOptions& options);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_S16_H_
