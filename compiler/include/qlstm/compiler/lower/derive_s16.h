// From a float LSTM and its int16 boundary scales to the 16x8 kernel's parameters
// (qlstm_lstm_s16, docs/arithmetic.md §14; docs/compiler.md). Host only.
#ifndef QLSTM_COMPILER_DERIVE_S16_H_
#define QLSTM_COMPILER_DERIVE_S16_H_

#include <array>
#include <cstdint>
#include <vector>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/float/float_layers.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/fully_connected_s16.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/requantize.h"
#include "qlstm/softmax_s16.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

// The symmetric int16 scale of a boundary whose values reach max_abs: max_abs / 32767 (zero point
// 0, as every 16x8 boundary). Throws CompileError for a range that is not positive and finite.
double symmetric_s16_scale(double max_abs, const std::string& what);

// The range a 16x8 boundary is given (docs/compiler.md, "16x8 boundaries"): the calibration's
// max |v| times 2^headroom_bits, and for an LSTM's output at most 1, the bound of |o tanh(c)|.
// int16 has 256 times int8's steps: covering values the calibration never showed costs a few dB
// of rounding noise that stays far below the int8 weights' error.
double s16_boundary_range(double max_abs, int32_t headroom_bits, bool lstm_output);

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
  static constexpr int32_t kKind = QLSTM_OP_LSTM_S16;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, hidden_size = 0;
  double input_scale = 0, output_scale = 0;  // int16, zero point 0
  CellScaleChoice cell;
  int32_t cell_clip = 0;
  int32_t time_direction = QLSTM_TIME_FORWARD;
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;
  WeightDecision weights;  // as derived (the report; not in a model file)
  std::array<DerivedGateS16, QLSTM_GATE_COUNT> gates;
  qlstm_requant forget_times_cell_to_cell{}, input_times_cell_gate_to_cell{},
      output_times_tanh_cell_to_hidden{};

  // A kernel parameter block pointing into this object (valid while it lives).
  qlstm_lstm_s16_params kernel_params(int32_t batch, int32_t time_steps, Layout layout) const;
  // Back from a block (a model file's record): the arrays copied, the boundary scales given (the
  // block has none); the float weight scales stay 0 (reports only). Checks nothing: the program's
  // validation does.
  static DerivedLstmS16 from_kernel_params(const qlstm_lstm_s16_params& p, double input_scale, double output_scale);
};

// Derives the 16x8 parameters. weights: weight_method, weight_clip_ratio, bias_correction (with
// observed's means) and cell_clip as for the int8 LSTM; adaptive rounding is refused (not
// derived for 16x8 yet). Throws CompileError naming the gate, the row and the quantity for a
// bias or an accumulator that leaves int32 (the range CMSIS-NN's optimized 16x8 paths need:
// |bias| + 32768 * sum|w| < 2^31 on both sides of every row), a multiplier out of range, or a
// gate shift above QLSTM_S16_SHIFT_MAX.
DerivedLstmS16 derive_lstm_s16_params(const FloatLstm& lstm, double input_scale, double output_scale,
                                      const CellScaleChoice& cell, const WeightDecision& weights,
                                      const OperandStats& observed = {});

// The 16x8 fully connected op (qlstm_fc_s16, arm_fully_connected_s16's arithmetic): symmetric
// int16 input and output, int8 weights with one symmetric scale (the kernel has one multiplier),
// an int64 bias at s_in * s_w, one multiplier s_in * s_w / s_out; a folded Relu or Clip becomes
// the int16 clamp.
struct DerivedFcS16 {
  static constexpr int32_t kKind = QLSTM_OP_FULLY_CONNECTED_S16;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, output_size = 0;
  double input_scale = 0, output_scale = 0, weight_scale = 0;
  std::vector<int8_t> weights;  // [O][I]
  std::vector<int64_t> bias;    // [O]
  qlstm_requant to_output{};
  int32_t activation_min = -32768, activation_max = 32767;
  std::string fused_activation;  // "", "relu", "relu6", "clip"

  qlstm_fc_s16_params kernel_params(int32_t rows) const;
  // Back from a block whose bias is set (a program's); fused_activation and weight_scale are not
  // in it (the caller's, from the file's label and weight scales).
  static DerivedFcS16 from_kernel_params(const qlstm_fc_s16_params& p, double input_scale, double output_scale);
};
// Throws CompileError naming the layer's node for a bias leaving int32 at its scale, a row whose
// accumulator could leave int32 (as the LSTM's rows), a multiplier out of the 16x8 shift range or
// an empty clamp.
DerivedFcS16 derive_fc_s16(const FloatLayer& linear, const FloatLayer* clamp, double input_scale,
                           double output_scale);

// A requantization between two buffers (qlstm_requantize): where a 16x8 part of a program meets
// an int8 one. The multiplier is s_in / s_out.
struct DerivedRequantize {
  static constexpr int32_t kKind = QLSTM_OP_REQUANTIZE;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  int32_t input_type = QLSTM_ELEMENT_S16, output_type = QLSTM_ELEMENT_S8;
  AffineQuant input, output;  // zero point 0 on the int16 side
  qlstm_requant to_output{};

  qlstm_requantize_params kernel_params(int32_t rows) const;
  // Back from a block; throws CompileError naming the zero point that is not its quantization's.
  static DerivedRequantize from_kernel_params(const qlstm_requantize_params& p, const AffineQuant& input,
                                              const AffineQuant& output);
};
// Throws CompileError (naming `what`) for a scale that is not positive, a zero point outside its
// type, or a ratio of scales out of the multiplier's range.
DerivedRequantize derive_requantize(int32_t row_size, int32_t input_type, const AffineQuant& input,
                                    int32_t output_type, const AffineQuant& output, const std::string& what);

// The 16x8 softmax (qlstm_softmax_s16, docs/arithmetic.md §16): an int16 symmetric input, the
// output int16 at 1/32768, zero point 0 (QLSTM_SOFTMAX_S16_*).
struct DerivedSoftmaxS16 {
  static constexpr int32_t kKind = QLSTM_OP_SOFTMAX_S16;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  double input_scale = 0;
  double beta = 1.0;
  int32_t input_multiplier = 0, input_left_shift = 0;

  qlstm_softmax_s16_params kernel_params(int32_t rows) const;
  static DerivedSoftmaxS16 from_kernel_params(const qlstm_softmax_s16_params& p, double input_scale);
};
// TFLite Micro's int16 softmax preparation: QuantizeMultiplier(beta * s_in / (10 / 65535)), so that
// beta times a difference over [-10, 0] spans the exp table's [-65535, 0]. Throws CompileError for
// a row of fewer than 2 values (upstream's arithmetic stores a probability of 1 as -32768) or more
// than the kernel takes, a beta not positive and finite, or a shift beyond the kernel's.
DerivedSoftmaxS16 derive_softmax_s16(int32_t row_size, double input_scale, double beta);
AffineQuant softmax_s16_output_quant();  // scale 1/32768, zero point 0

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_S16_H_
