// The quantized LSTM: the float source, its boundary quantization, the derived kernel parameters,
// and a host run through the runtime kernel itself, so that it is the bit-exact simulation of the
// device. The compiler, the CLI and the tests all use this object.
#ifndef QLSTM_COMPILER_QUANTIZED_LSTM_H_
#define QLSTM_COMPILER_QUANTIZED_LSTM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/derive.h"
#include "qlstm/compiler/float_lstm.h"
#include "qlstm/compiler/quantize.h"

namespace qlstm {
namespace compiler {

// Calibration data: float sequences of input_size features, possibly of different lengths.
struct CalibrationSequence {
  int32_t time_steps = 0;
  std::vector<float> values;  // [time_steps][input_size]
};
struct CalibrationSet {
  std::vector<CalibrationSequence> sequences;
  // Splits a [B][T][I] (batch-major) or [T][B][I] (time-major) tensor into B sequences.
  void add_batch(const std::vector<float>& x, const SequenceShape& shape, int32_t input_size);
};

struct CompileOptions {
  ObserverConfig input_observer;
  ObserverConfig output_observer;
  CellScaleRequest cell_scale;
  DeriveOptions derive;
};

// What calibration observed (kept for the report).
struct CalibrationStats {
  int64_t sequences = 0;
  int64_t steps = 0;
  Range input_observed;   // min / max
  Range output_observed;  // min / max of h
  Range input_range;      // chosen by the input observer
  Range output_range;     // chosen by the output observer
  double cell_max_abs = 0;
};

class QuantizedLstm {
 public:
  // Calibrates on `calibration` (the float model run over it feeds the observers), then derives
  // the kernel parameters. Throws CompileError for an empty set or non-finite data (naming the
  // sequence and position) and for every derivation error.
  static QuantizedLstm compile(const FloatLstm& source, const CalibrationSet& calibration,
                               const CompileOptions& options);
  // From already chosen boundary quantization and cell scale.
  QuantizedLstm(FloatLstm source, DerivedLstm derived, CalibrationStats stats = {});

  const FloatLstm& source() const { return source_; }
  const DerivedLstm& derived() const { return derived_; }
  const CalibrationStats& calibration() const { return stats_; }
  const AffineQuant& input_quant() const { return derived_.input; }
  const AffineQuant& output_quant() const { return derived_.output; }

  qlstm_lstm_s8_params kernel_params(const SequenceShape& shape) const {
    return derived_.kernel_params(shape.batch, shape.time_steps, shape.layout);
  }

  // int8 in, int8 out, through the runtime kernel. With state == nullptr the run is stateless;
  // otherwise it starts from and updates *state (hidden int8, cell int16; [B][H] each).
  struct State {
    std::vector<int8_t> hidden;
    std::vector<int16_t> cell;
  };
  std::vector<int8_t> run_s8(const std::vector<int8_t>& x, const SequenceShape& shape,
                             State* state = nullptr) const;
  // A stateful start: cell 0, hidden = output zero point.
  State initial_state(int32_t batch) const;

  // float in, float out: quantize the input, run_s8, dequantize the output.
  std::vector<float> run_float(const std::vector<float>& x, const SequenceShape& shape) const;
  std::vector<int8_t> quantize_input(const std::vector<float>& x) const;
  std::vector<float> dequantize_output(const std::vector<int8_t>& y) const;

 private:
  FloatLstm source_;
  DerivedLstm derived_;
  CalibrationStats stats_;
};

// Signal-to-quantization-noise ratio in dB of `test` against `reference`; +inf when equal.
double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test);
double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_QUANTIZED_LSTM_H_
