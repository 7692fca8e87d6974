// The quantized LSTM: the float source, its boundary quantization, the derived kernel parameters,
// and a host run through the runtime kernel itself, so that it is the bit-exact simulation of the
// device. The compiler, the CLI and the tests all use this object.
#ifndef QLSTM_COMPILER_QUANTIZED_LSTM_H_
#define QLSTM_COMPILER_QUANTIZED_LSTM_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/derive_gru.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/calibrate/quantize.h"

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

// kSearch: the options below are the starting point of a coordinate-descent search over the
// boundary observers, the cell headroom, bias correction and each weight block's clip, scored by
// the int8 kernel's SQNR against the float model on data that did not choose the candidate's
// ranges: k-fold over the calibration sequences (derive on k-1 folds, score the held-out one), or
// a validation set the user gives. A change from the start (upstream's choices: min/max, max|W|)
// is taken only when its mean gain over the folds exceeds the spread of that gain between them
// (docs/compiler.md). kNone: exactly the options given.
enum class Tuning { kNone, kSearch };
const char* tuning_name(Tuning t);

// Called with a stage ("calibrating", "searching") and how far it is; may be empty.
using ProgressFn = std::function<void(const char* stage, int64_t done, int64_t total)>;

// The searched choices a user may fix (qlstm compile: the options given on the command line). A
// fixed choice is used exactly as CompileOptions holds it; the search tunes only the others.
struct UserFixedChoices {
  bool input_observer = false;
  bool output_observer = false;
  bool cell_headroom = false;    // CompileOptions::cell_scale.headroom (calibrated policy)
  bool bias_correction = false;  // CompileOptions::derive.bias_correction
  bool weights = false;          // CompileOptions::derive.weight_method: no per-block clip search
  bool weight_rounding = false;  // CompileOptions::derive.weight_rounding
};

// What the search chose for one LSTM op: given back in CompileOptions::op_choices, the same
// derivation runs on other data (the held-out estimate compiles each fold this way).
struct OpChoice {
  ObserverConfig input_observer, output_observer;
  double cell_headroom = 1.25;  // calibrated cell policy only
  bool bias_correction = false;
  std::array<double, kWeightBlocks> weight_clip{};  // 0: the weight method's scale
  WeightRounding weight_rounding = WeightRounding::kNearest;
};

struct CompileOptions {
  ObserverConfig input_observer{ObserverKind::kMinMax, 99.99};
  ObserverConfig output_observer{ObserverKind::kMinMax, 99.99};
  CellScaleRequest cell_scale;
  DeriveOptions derive;
  Tuning tuning = Tuning::kSearch;
  // The search scores each candidate on calibration sequences whose multiply-accumulates
  // (steps x 4H(I + H)) fit in this budget: as many as fit, taken at an even stride over the
  // whole set (sequence 0 first, so at least one), so a time-ordered file is sampled everywhere.
  int64_t search_max_macs = int64_t{1} << 26;
  UserFixedChoices user_fixed;
  // Folds of the search's held-out scoring (contiguous blocks of the calibration sequences).
  int32_t search_folds = 4;
  // When not empty, op k (an LSTM op, in program order) takes op_choices[k] exactly, unsearched.
  std::vector<OpChoice> op_choices;
  // The Linear layers around the stack: one weight scale and multiplier per output (the
  // default, CMSIS-NN's per-channel FC) or one for the layer.
  bool fc_per_channel = true;
  // Which LSTM layers run 16x8 (int16 activations, int8 weights; s16_program): empty for none
  // (int8, the default), else one flag per layer; the head follows the last layer.
  std::vector<bool> s16_layers;
  static constexpr int32_t kMaxS16HeadroomBits = 8;
  // A 16x8 boundary's range is the calibration's max |v| times 2^s16_headroom_bits (an LSTM's
  // output at most 1): s16_boundary_range. 0 to kMaxS16HeadroomBits.
  int32_t s16_headroom_bits = 2;
  ProgressFn progress;
};

// A boundary quantization decided outside the op: used as given, neither observed nor searched.
// `source` says where it comes from, for the report ("the output of layer 0").
struct BoundaryQuant {
  AffineQuant quant;
  std::string source;
};
// Which of an op's boundaries are decided outside it. compile_program fixes a stacked layer's
// input (the layer below's output buffer), the reverse direction's input (the forward one's) and
// a bidirectional layer's output (the observer over both directions); a single LSTM has none.
struct OpBoundaries {
  std::optional<BoundaryQuant> input, output;  // empty: the observers (and the search) choose
  // What the search scores: every step of the op's output (empty), or only the one step the
  // model's head reads (>= 0 from the first, < 0 from the last: -1 for y[:, -1] or a forward
  // h_n, 0 for a reverse op's h_n). compile_program sets it on the last layer's ops.
  std::optional<int32_t> scored_step;
  // When set (the last op of a unidirectional stack under a head), the search scores the model's
  // output: `head` runs the head in int8 on the rows the search selected ([n][H] in the
  // candidate's output quantization) and returns its float output, which is compared with
  // head_reference[k], the float model's output for observed sequence k.
  std::function<std::vector<float>(const AffineQuant& lstm_output, const std::vector<int8_t>& rows, int32_t n)> head;
  std::vector<std::vector<float>> head_reference;
};

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

// What calibration observed (kept for the report).
struct CalibrationStats {
  int64_t sequences = 0;
  int64_t steps = 0;
  Range input_observed;   // min / max
  Range output_observed;  // min / max of h
  Range input_range;      // chosen by the input observer
  Range output_range;     // chosen by the output observer
  double cell_max_abs = 0;
  std::string input_observer, output_observer;  // what produced the chosen ranges
  Tuning tuning = Tuning::kNone;
  int32_t evaluations = 0;        // candidates scored by the search
  int64_t scored_steps = 0;       // calibration steps in the search's score
  std::vector<int64_t> scored_sequences;  // indices (into the op's observed sequences) of those steps
  // The choices the search tuned and those the user fixed (UserFixedChoices), by report name:
  // "input_observer", "output_observer", "cell_headroom", "bias_correction", "weight_clips".
  std::vector<std::string> searched, fixed_by_user;
  // The search's score: SQNR (dB) of the op's (or, under a head, the model's) output on held-out
  // data, pooled over the folds, of the start (upstream's choices) and of the result.
  double start_sqnr_db = 0;
  double final_sqnr_db = 0;
  // How it was held out: "k-fold" (folds = k), "validation" (folds = groups of the validation
  // sequences, all derived from the whole calibration set) or "none" (why in score_note).
  std::string score_method = "none";
  std::string score_note;
  int32_t folds = 0;
  std::vector<double> fold_sqnr_db;  // the result's, per fold
  OpChoice chosen;                   // what the result was derived with
};

class QuantizedLstm {
 public:
  // Calibrates on `calibration` (the float model run over it feeds the observers), then derives
  // the kernel parameters. Throws CompileError for an empty set or non-finite data (naming the
  // sequence and position) and for every derivation error.
  static QuantizedLstm compile(const FloatLstm& source, const CalibrationSet& calibration,
                               const CompileOptions& options);
  // The same from an observation already made (no float run); `fixed` boundaries are used as given.
  static QuantizedLstm compile(const FloatLstm& source, const OpObservation& observed,
                               const CompileOptions& options, const OpBoundaries& fixed = {});
  // From already chosen boundary quantization and cell scale.
  QuantizedLstm(FloatLstm source, DerivedLstm derived, CalibrationStats stats = {});
  // A GRU layer (source.cell == CellKind::kGru) from its derived parameters.
  QuantizedLstm(FloatLstm source, DerivedGru derived, CalibrationStats stats = {});

  const FloatLstm& source() const { return source_; }
  bool is_gru() const { return source_.cell == CellKind::kGru; }
  // The derived parameters of an LSTM layer, or of a GRU layer; each throws CompileError for the
  // other cell.
  const DerivedLstm& derived() const;
  const DerivedGru& derived_gru() const;
  // The op of a program this layer runs as (its kind and parameter block); the buffers and the
  // initial state are the program's to set.
  ProgramOp program_op() const;
  const CalibrationStats& calibration() const { return stats_; }
  const AffineQuant& input_quant() const { return is_gru() ? gru_.input : derived_.input; }
  const AffineQuant& output_quant() const { return is_gru() ? gru_.output : derived_.output; }

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
  CalibrationStats stats_;
};

// int8 in, int8 out through the runtime kernel for any derived parameter set (a compiled model
// loaded from a file has no float source). state: as QuantizedLstm::run_s8.
std::vector<int8_t> run_kernel_s8(const DerivedLstm& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLstm::State* state = nullptr);
std::vector<int8_t> run_kernel_s8(const DerivedGru& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLstm::State* state = nullptr);

// The same sequence streamed: reset state, then stateful calls of `chunk` steps (the last one
// shorter), as a device does on a live stream; equal to run_kernel_s8 of the whole sequence.
std::vector<int8_t> run_kernel_s8_streamed(const DerivedLstm& d, const std::vector<int8_t>& x,
                                           const SequenceShape& shape, int32_t chunk);

// A compiled program: each op calibrated on the float activations of the layer below (from the
// program's initial state; with a state the caller feeds, also from the state the previous
// calibration sequence left, which is what a caller carrying h_n / c_n over feeds), in order.
// A stacked layer's input quantization is the layer below's output quantization; the two
// directions of a bidirectional layer share their input and output quantization (the output's
// from the observer over both directions' outputs).
// The layers around the stack are calibrated on the same float pass (in double): each op's
// output quantization comes from the output observer over its float output (after a folded
// Relu/Clip), a softmax's is 1/256, -128; the front's last buffer fixes the first LSTM's input.
// When the head reads only the final hidden state (h_n[-1], or y[:, -1] of a unidirectional last
// layer) the last LSTM op writes only it (QLSTM_OUTPUT_FINAL, a one-step buffer); y[:, k] becomes
// a step selection op. The last layer's search scores the steps the head reads.
struct QuantizedProgram {
  FloatProgram source;
  CompiledModel model;  // name, batch_first and report_json are the caller's
  std::vector<CalibrationStats> stats;  // per LSTM op
  // Per calibration sequence, the float program's output ([T][O], or [1][O] when the model's
  // output is one step) from the program's own initial state, kept for measuring the int8 model.
  std::vector<std::vector<float>> float_outputs;
};
// `validation`: sequences the search scores its candidates on instead of k-fold over the
// calibration set; run through the float program but never observed.
QuantizedProgram compile_program(const FloatProgram& program, const CalibrationSet& calibration,
                                 const CompileOptions& options, const CalibrationSet* validation = nullptr);
// Whether the last LSTM op writes only its final hidden state (QLSTM_OUTPUT_FINAL): the head
// reads h_n[-1], or y[:, -1] of a unidirectional forward last layer.
bool writes_final_state_only(const FloatProgram& program);
// The head as compiled: the program's, except that a Linear reading h_n[-1] of a bidirectional
// stack gets zero weights for the forward half of the [B][2H] row both ops write. Throws
// CompileError when something else reads that h_n[-1].
std::vector<FloatLayer> compiled_head_layers(const FloatProgram& program);
// Whether the compiled program keeps a sequence between two of its ops (a stacked layer, a
// front, a per-step head, a selection of a step), so that its buffers need a maximum length.
bool keeps_inner_sequence(const FloatProgram& program);

// Signal-to-quantization-noise ratio in dB of `test` against `reference`; +inf when equal.
double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test);
double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_QUANTIZED_LSTM_H_
