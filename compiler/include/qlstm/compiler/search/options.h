// What the search may choose for each op, what the user fixed, the boundaries the program
// decides, and what calibration and the search recorded for the report. Host only.
#ifndef QLSTM_COMPILER_SEARCH_OPTIONS_H_
#define QLSTM_COMPILER_SEARCH_OPTIONS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "qlstm/compiler/calibrate/calibration.h"
#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/search/decision.h"

namespace qlstm {
namespace compiler {

// kSearch: the options below are the starting point of a coordinate-descent search over the
// boundary observers, the cell headroom, bias correction and each weight block's clip, scored by
// the int8 kernel's SQNR against the float model on data that did not choose the candidate's
// ranges: k-fold over the calibration sequences (derive on k-1 folds, score the held-out one), or
// a validation set the user gives. A change from the start (upstream's choices: min/max, max|W|)
// is taken only when its mean gain over the folds exceeds the spread of that gain between them
// (docs/compiler.md). kNone: exactly the options given.
enum class Tuning { kNone, kSearch };
const char* tuning_name(Tuning t);

// The searched choices a user may fix (qlstm compile: the options given on the command line). A
// fixed choice is used exactly as CompileOptions holds it; the search tunes only the others.
struct UserFixedChoices {
  bool input_observer = false;
  bool output_observer = false;
  bool cell_headroom = false;    // CompileOptions::cell_scale.headroom (calibrated policy)
  bool bias_correction = false;  // CompileOptions::weights.bias_correction
  bool weights = false;          // CompileOptions::weights.weight_method: no per-block clip search
  bool weight_rounding = false;  // CompileOptions::weights.weight_rounding
};

// What the user (the CLI, the Python module, a test) asks for. validate_options checks it once, at
// the entry (compile_model, compile_program); starting_decision turns its decisions into the
// OpDecision every op starts from, and only the search's own parameters (search_plan) are read
// after that.
struct CompileOptions {
  ObserverConfig input_observer{ObserverKind::kMinMax, 99.99};
  ObserverConfig output_observer{ObserverKind::kMinMax, 99.99};
  CellScaleRequest cell_scale;
  WeightDecision weights;
  Tuning tuning = Tuning::kSearch;
  // The search scores each candidate on calibration sequences whose multiply-accumulates
  // (steps x 4H(I + H)) fit in this budget: as many as fit, taken at an even stride over the
  // whole set (sequence 0 first, so at least one), so a time-ordered file is sampled everywhere.
  int64_t search_max_macs = int64_t{1} << 26;
  UserFixedChoices user_fixed;
  // Folds of the search's held-out scoring (contiguous blocks of the calibration sequences), >= 2.
  int32_t search_folds = 4;
  // When not empty, recurrent op k (in program order) takes op_choices[k] exactly, unsearched
  // (the held-out estimate replays the search's decisions so).
  std::vector<OpDecision> op_choices;
  // The Linear layers around the stack: one weight scale and multiplier per output (the
  // default, CMSIS-NN's per-channel FC) or one for the layer.
  bool fc_per_channel = true;
  // Which LSTM layers run 16x8 (int16 activations, int8 weights; s16_program): empty for none
  // (int8, the default), else one flag per layer; the head follows the last layer.
  std::vector<bool> s16_layers;
  static constexpr int32_t kMaxS16HeadroomBits = OpDecision::kMaxS16HeadroomBits;
  int32_t s16_headroom_bits = 2;  // OpDecision::s16_headroom_bits
  ProgressFn progress;
};

// Throws CompileError naming the option for a value outside its range (validate_decision's, the
// folds, the search budget, op_choices and s16_layers against the program's ops and layers,
// adaptive rounding or a cell clip on a layer without a cell). Called once at the entry, before any
// work. cellless: the cell kind of the program's first GRU or RNN layer, kLstm when it has none.
void validate_options(const CompileOptions& options, int32_t recurrent_ops, int32_t layers, CellKind cellless);

// The decision every op starts from: the options' observers, cell scale, weights, FC scales and
// 16x8 headroom, int8.
OpDecision starting_decision(const CompileOptions& options);

// How one op's search runs (not what it decides).
struct SearchPlan {
  Tuning tuning = Tuning::kSearch;
  int64_t max_macs = int64_t{1} << 26;
  int32_t folds = 4;
  UserFixedChoices user_fixed;
  ProgressFn progress;
};
SearchPlan search_plan(const CompileOptions& options);

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
  OpDecision chosen;                 // what the result was derived with
};

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SEARCH_OPTIONS_H_
