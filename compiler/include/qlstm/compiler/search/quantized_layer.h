// One recurrent layer (an LSTM or a GRU op) compiled: the float source, its boundary
// quantization, the search's result and the derived kernel parameters, and a host run through the
// runtime kernel itself, so that it is the bit-exact simulation of the device. Host only.
#ifndef QLSTM_COMPILER_SEARCH_QUANTIZED_LAYER_H_
#define QLSTM_COMPILER_SEARCH_QUANTIZED_LAYER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/derive_gru.h"
#include "qlstm/compiler/lower/derive_rnn.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/search/options.h"

namespace qlstm {
namespace compiler {

class QuantizedLayer {
 public:
  // Calibrates on `calibration` (the float model run over it feeds the observers), then derives
  // the kernel parameters. Throws CompileError for options out of range (validate_options), an
  // empty set or non-finite data (naming the sequence and position) and for every derivation error.
  static QuantizedLayer compile(const FloatLstm& source, const CalibrationSet& calibration,
                               const CompileOptions& options);
  // The same from an observation already made (no float run); `fixed` boundaries are used as given.
  static QuantizedLayer compile(const FloatLstm& source, const OpObservation& observed,
                               const CompileOptions& options, const OpBoundaries& fixed = {});
  // The search from `start` (a validated decision) as `plan` says; stats().chosen is its result.
  static QuantizedLayer compile(const FloatLstm& source, const OpObservation& observed, const OpDecision& start,
                                const SearchPlan& plan, const OpBoundaries& fixed = {});
  // From already chosen boundary quantization and cell scale.
  QuantizedLayer(FloatLstm source, DerivedLstm derived, CalibrationStats stats = {});
  // A GRU layer (source.cell == CellKind::kGru) from its derived parameters.
  QuantizedLayer(FloatLstm source, DerivedGru derived, CalibrationStats stats = {});
  // An RNN layer (source.cell == CellKind::kRnn) from its derived parameters.
  QuantizedLayer(FloatLstm source, DerivedRnn derived, CalibrationStats stats = {});

  const FloatLstm& source() const { return source_; }
  bool is_gru() const { return source_.cell == CellKind::kGru; }
  bool is_rnn() const { return source_.cell == CellKind::kRnn; }
  // The derived parameters of an LSTM layer, or of a GRU layer; each throws CompileError for the
  // other cell.
  const DerivedLstm& derived() const;
  const DerivedGru& derived_gru() const;
  const DerivedRnn& derived_rnn() const;
  // The op of a program this layer runs as (its kind and parameter block); the buffers and the
  // initial state are the program's to set.
  ProgramOp program_op() const;
  const CalibrationStats& calibration() const { return stats_; }
  const AffineQuant& input_quant() const { return is_gru() ? gru_.input : is_rnn() ? rnn_.input : derived_.input; }
  const AffineQuant& output_quant() const { return is_gru() ? gru_.output : is_rnn() ? rnn_.output : derived_.output; }

  qlstm_lstm_s8_params kernel_params(const SequenceShape& shape) const {
    return derived().kernel_params(shape.batch, shape.time_steps, shape.layout);
  }

  // int8 in, int8 out, through the runtime kernel. With state == nullptr the run is stateless;
  // otherwise it starts from and updates *state ([B][H] each: an LSTM's hidden int8 and cell
  // int16; a GRU's Q0.15 hidden in `cell`, its `hidden` unused, as a program's state rows).
  struct State {
    std::vector<int8_t> hidden;
    std::vector<int16_t> cell;
  };
  std::vector<int8_t> run_s8(const std::vector<int8_t>& x, const SequenceShape& shape,
                             State* state = nullptr) const;
  // A stateful start: cell 0, hidden = output zero point.
  State initial_state(int32_t batch) const;
  // A float state ([B][H] each; either may be empty for zero) in the kernel's formats (a GRU
  // ignores c).
  State quantize_state(const std::vector<float>& h, const std::vector<float>& c, int32_t batch) const;

  // float in, float out: quantize the input, run_s8, dequantize the output.
  std::vector<float> run_float(const std::vector<float>& x, const SequenceShape& shape) const;
  std::vector<int8_t> quantize_input(const std::vector<float>& x) const;
  std::vector<float> dequantize_output(const std::vector<int8_t>& y) const;

 private:
  FloatLstm source_;
  DerivedLstm derived_;  // an LSTM's
  DerivedGru gru_;       // a GRU's
  DerivedRnn rnn_;       // an RNN's
  CalibrationStats stats_;
};

// int8 in, int8 out through the runtime kernel for any derived parameter set (a compiled model
// loaded from a file has no float source). state: as QuantizedLayer::run_s8.
std::vector<int8_t> run_kernel_s8(const DerivedLstm& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state = nullptr);
std::vector<int8_t> run_kernel_s8(const DerivedGru& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state = nullptr);
std::vector<int8_t> run_kernel_s8(const DerivedRnn& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state = nullptr);

// The same sequence streamed: reset state, then stateful calls of `chunk` steps (the last one
// shorter), as a device does on a live stream; equal to run_kernel_s8 of the whole sequence.
std::vector<int8_t> run_kernel_s8_streamed(const DerivedLstm& d, const std::vector<int8_t>& x,
                                           const SequenceShape& shape, int32_t chunk);

// Signal-to-quantization-noise ratio in dB of `test` against `reference`; +inf when equal.
double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test);
double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SEARCH_QUANTIZED_LAYER_H_
