// The decision record of one op: everything derivation decides with, nothing it observes.
// Host only. Who produces it and who reads it: docs/compiler.md, "The decision record".
#ifndef QLSTM_COMPILER_SEARCH_DECISION_H_
#define QLSTM_COMPILER_SEARCH_DECISION_H_

#include <cstdint>
#include <string>

#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/compiler/lower/derive.h"

namespace qlstm {
namespace compiler {

// An LSTM op's activations: int8, or 16x8 (int16 activations and state, int8 weights).
enum class Precision { kInt8, kS16x8 };

// What one op is derived with. starting_decision (options.h) makes the one every op starts from
// out of the validated CompileOptions; the search (LayerSearch) records what it chose for each
// recurrent op (CalibrationStats::chosen), s16_decision gives a 16x8 op its own; derivation reads
// the record and the calibration's data (OperandStats, the observers' values), never the options.
struct OpDecision {
  Precision precision = Precision::kInt8;
  ObserverConfig input_observer{ObserverKind::kMinMax, 99.99};
  ObserverConfig output_observer{ObserverKind::kMinMax, 99.99};
  // The cell scale's policy; under kCalibrated its headroom is the one chosen (the cell headroom).
  CellScaleRequest cell_scale;
  WeightDecision weights;  // method, per-block clips, bias correction, rounding, cell clip
  // A Linear op's weight scales: one per output (CMSIS-NN's per-channel FC) or one for the layer.
  bool fc_per_channel = true;
  static constexpr int32_t kMaxS16HeadroomBits = 8;
  // A 16x8 boundary's range is the calibration's max |v| times 2^s16_headroom_bits (an LSTM's
  // output at most 1): s16_boundary_range. 0 to kMaxS16HeadroomBits.
  int32_t s16_headroom_bits = 2;
};

// Throws CompileError naming the field (`what`: "input_observer", "op_choices[2]", ...) for a
// value outside its range: an observer's percentile, the cell scale, a clip ratio, the cell clip,
// the 16x8 headroom.
void validate_decision(const OpDecision& d, const std::string& what);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SEARCH_DECISION_H_
