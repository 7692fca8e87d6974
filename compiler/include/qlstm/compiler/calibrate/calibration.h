// Calibration: the sequences a model is calibrated on, the checks made of them, and one float
// pass of an op over them (what its observers and the search read). Host only.
#ifndef QLSTM_COMPILER_CALIBRATE_CALIBRATION_H_
#define QLSTM_COMPILER_CALIBRATE_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {

// Calibration data: float sequences of input_size features, possibly of different lengths.
struct CalibrationSequence {
  int32_t time_steps = 0;
  std::vector<float> values;  // [time_steps][input_size]
  std::vector<float> h0, c0;  // the initial state ([H] each), empty for zero
};
struct CalibrationSet {
  std::vector<CalibrationSequence> sequences;
  // Splits a [B][T][I] (batch-major) or [T][B][I] (time-major) tensor into B sequences.
  void add_batch(const std::vector<float>& x, const SequenceShape& shape, int32_t input_size);
};

// What the calibration set gives no information about: one warning per input feature (channel)
// that takes a single value over every step of every sequence, naming the feature and the value
// ("calibration: input feature 2 is constant (0.5) over all 120 steps"). Throws CompileError
// when no feature varies at all (the input range would be a guess). Checks nothing else: the
// sequences' sizes and values are check_sequence's, in compile.
std::vector<std::string> calibration_warnings(const CalibrationSet& calibration, int32_t input_size);

// Called with a stage ("calibrating", "searching") and how far it is; may be empty.
using ProgressFn = std::function<void(const char* stage, int64_t done, int64_t total)>;

// One op's calibration: its input sequences (with their initial states) and what one float run
// of the op over each of them gave. compile_program fills it from its single float pass over
// each layer; observe_op from a run of its own.
struct OpObservation {
  CalibrationSet inputs;
  std::vector<std::vector<float>> outputs;  // per sequence, the float output [T][H]
  double cell_max_abs = 0;                  // max |c| over every step and every c0
  std::vector<double> sum_h;                // per hidden unit, the sum of h over every step
  // Per sequence: max |c| (with its c0) and the per-unit sums of h, for the search's folds.
  std::vector<double> sequence_cell_max_abs;
  std::vector<std::vector<double>> sequence_sum_h;
  // Sequences from this index on are a validation set: scored by the search, never observed.
  std::optional<size_t> validation_begin;
  // Adds one sequence and the float run of `source` over it (the run's step visitor feeds
  // cell_max_abs and sum_h); returns the run. A validation sequence is kept for scoring only
  // (every one after the calibration sequences).
  FloatResult add(const FloatLstm& source, CalibrationSequence sequence, bool validation = false);
};
// Runs `source` once over the calibration set, checking each sequence (its values finite, its
// initial state of H values; the message names the sequence). progress: the "calibrating" stage.
OpObservation observe_op(const FloatLstm& source, const CalibrationSet& calibration,
                         const ProgressFn& progress = nullptr);


// The checks calibration makes of its data, shared with the passes after it: a tensor of B x T x
// `features` values for `what` ("input"); sequence k's [T][I] values, all finite; sequence k's
// float output, all finite (each message names the sequence and where).
void check_tensor_shape(const SequenceShape& shape, size_t values, int32_t features, const char* what);
void check_sequence(const CalibrationSequence& s, size_t k, int32_t I);
void check_float_output(const std::vector<float>& output, size_t k);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_CALIBRATE_CALIBRATION_H_
