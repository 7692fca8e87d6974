// How accurate a compiled program is on data its derivation never saw: the figure the compile
// report prints. k-fold over the calibration sequences (each fold's program compiled from the
// other folds with the choices the search made on the whole set, then run on the fold), or the
// compiled program on a validation set the user gives. docs/compiler.md, "Held-out scoring".
#ifndef QLSTM_COMPILER_HELD_OUT_H_
#define QLSTM_COMPILER_HELD_OUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace compiler {

// Fewer calibration sequences than this: the estimate carries a caution. A few sequences rarely
// span the range new data takes (few_calib_4 in docs/accuracy.md: 43.5 dB estimated from 4
// sequences, 31.0 dB on 64 new ones, 5.7% of whose inputs lie beyond the 4's range).
constexpr int64_t kHeldOutReliableSequences = 16;

struct HeldOutEstimate {
  std::string method = "none";  // "k-fold", "validation" or "none" (note says why)
  std::string note;
  int32_t folds = 0;             // k, or the groups the validation sequences are split into
  int64_t sequences = 0;         // held-out sequences measured
  double sqnr_db = 0;            // int8 vs float over every held-out output value (+inf if equal)
  double spread_db = 0;          // sample standard deviation of the folds' SQNRs
  double standard_error_db = 0;  // of sqnr_db: spread_db / sqrt(folds)
  std::vector<double> fold_sqnr_db;
  std::string caution;           // why the figure may not hold on new data (too few sequences)
  bool available() const { return method != "none"; }
};

// k-fold (options.search_folds, contiguous blocks): `compiled` is compile_program(program,
// calibration, options); each fold recompiles without search from the other folds, with op k
// taking compiled.stats[k].chosen, and is scored on its own sequences against the float outputs
// compile_program kept. "none" with fewer than 2 sequences with steps, or with a per-row learned
// initial state (each calibration row starts from its own).
HeldOutEstimate estimate_k_fold(const FloatProgram& program, const CalibrationSet& calibration,
                                const CompileOptions& options, const QuantizedProgram& compiled);

// `compiled` run on the validation sequences against the float program on them, split into
// `groups` contiguous groups for the spread.
HeldOutEstimate measure_validation(const FloatProgram& program, const CompiledModel& compiled,
                                   const CalibrationSet& validation, int32_t groups);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_HELD_OUT_H_
