// The 16x8 LSTM compiled from a float LSTM and calibration sequences (docs/compiler.md, "The
// 16x8 LSTM"): symmetric int16 boundaries from the observed max |x| and max |h| (zero point 0),
// the cell scale by the int8 path's policy (CompileOptions::cell_scale), every other parameter by
// derive_lstm_s16_params; and a host run through the runtime's program runner (one
// QLSTM_OP_LSTM_S16 op over int16 buffers), the bit-exact simulation of the device. No search
// yet: the observers are min/max. Host only.
#ifndef QLSTM_COMPILER_QUANTIZED_LSTM_S16_H_
#define QLSTM_COMPILER_QUANTIZED_LSTM_S16_H_

#include <cstdint>
#include <vector>

#include "qlstm/compiler/lower/derive_s16.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace compiler {

class QuantizedLstmS16 {
 public:
  // Calibrates on `calibration` and derives with `decision` (its cell scale, weights and 16x8
  // headroom; s16_decision makes one from an int8 search's choice for the same LSTM, whose weight
  // blocks are the same). Throws CompileError for a decision out of range (validate_decision),
  // empty or non-finite calibration data, a range that is zero, and every derivation error
  // (derive_lstm_s16_params).
  static QuantizedLstmS16 compile(const FloatLstm& lstm, const CalibrationSet& calibration, const OpDecision& decision,
                                  const ProgressFn& progress = nullptr);
  // An already derived 16x8 LSTM, to run on the host.
  static QuantizedLstmS16 from_derived(DerivedLstmS16 d) {
    QuantizedLstmS16 q;
    q.d_ = std::move(d);
    return q;
  }
  const DerivedLstmS16& derived() const { return d_; }

  // x in its float values ([B][T][I] or [T][B][I] as shape says) to int16, the program's call, its
  // output back to floats (every step, the input's layout). h0, c0: [B][H] floats, or null for a
  // zero state.
  std::vector<float> run_float(const std::vector<float>& x, const SequenceShape& shape, const float* h0 = nullptr,
                               const float* c0 = nullptr) const;
  // The same on int16 values: the program's own input and output.
  std::vector<int16_t> run_s16(const std::vector<int16_t>& x, const SequenceShape& shape,
                               const std::vector<int16_t>* h0 = nullptr, const std::vector<int16_t>* c0 = nullptr) const;

 private:
  DerivedLstmS16 d_;
};

// The 16x8 form of a compiled int8 program (docs/compiler.md, "16x8 models"): the same ops
// and weight choices (int8's search), int16 buffers with symmetric scales from the float
// program's max |v| on the calibration set, every LSTM op QLSTM_OP_LSTM_S16 and every Linear
// (with its folded Relu or Clip) QLSTM_OP_FULLY_CONNECTED_S16, a softmax over 2 or more values
// QLSTM_OP_SOFTMAX_S16 (an int16 output at 1/32768), up to the first layer without a 16x8
// kernel (an activation table), where a QLSTM_OP_REQUANTIZE to the int8
// program's quantization of that point hands over to the int8 ops that follow. Throws
// CompileError naming the node for what has no 16x8 form yet: a GRU, layers before the stack, an
// initial state or a state output. `start`: the program's starting decision (its cell scale
// policy and 16x8 headroom); s16_layers: which layers are 16x8 (one flag per layer); `plan`: whether
// the weights may be chosen again (docs/compiler.md).
CompiledModel s16_program(const FloatProgram& program, const CalibrationSet& calibration, const QuantizedProgram& int8,
                          const OpDecision& start, const std::vector<bool>& s16_layers, const SearchPlan& plan);

// A 16x8 LSTM op's decision from the int8 search's choice for it (`int8_chosen`: its observers,
// weight clips, bias correction): the weights rounded to nearest (adaptive rounding is not
// derived for 16x8 yet), the cell scale by `requested` (the int8 search's headroom is tuned to
// int8's error, which a 16x8 cell does not share).
OpDecision s16_decision(const OpDecision& int8_chosen, const CellScaleRequest& requested);

// The CLI's --activations: "int8" (no layer 16x8: empty), "int16" (every layer) or "int16:L,M,..."
// (the listed layers, from 0; mixed precision), as CompileOptions::s16_layers for a model of
// `layers` LSTM layers. Throws CompileError for another text or a layer out of range.
std::vector<bool> parse_activations(const std::string& text, int32_t layers);

// A float value to a symmetric int16 of this scale: round to nearest, saturated.
int16_t quantize_s16(double x, double scale);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_QUANTIZED_LSTM_S16_H_
