// Adaptive weight rounding (AdaRound-style, without learning): each gate row's int8 weights are
// rounded up or down, not to the nearest, so that the gate's matmul error over the calibration
// operands is smallest (docs/compiler.md). The kernel's arithmetic is unchanged. Host only.
#ifndef QLSTM_COMPILER_WEIGHT_ROUNDING_H_
#define QLSTM_COMPILER_WEIGHT_ROUNDING_H_

#include <cstdint>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace compiler {

// Sweeps over a row before round_adaptive stops even if a flip still improves (each sweep costs
// O(n) plus O(n) per flip). The trained fixtures' rows settle within 5 sweeps (1 row in 256 of
// trained_kws needs 8); random_large's, on a noisy moment, take 2 to more than 8.
constexpr int32_t kAdaptiveRoundingMaxSweeps = 8;

// e^T C e with e_j = w_j - s_j q_j: the expected squared error of the dot product of the row with
// an operand whose second moment is C ([n][n], row-major).
double rounding_error(const double* w, const double* scale, const int8_t* q, const double* C, int32_t n);

// Greedy coordinate descent on e^T C e from the rounding in q (nearest): in index order, each
// weight whose w_j / s_j lies in [-127, 127] is moved to its other rounding (floor <-> ceil)
// when that lowers the objective, until a sweep changes nothing or after max_sweeps sweeps. A
// weight beyond +-127 s_j (clipped) keeps its q_j. C must be symmetric. Deterministic. Returns
// the number of flips.
int64_t round_adaptive(const double* w, const double* scale, const double* C, int32_t n, int8_t* q,
                       int32_t max_sweeps = kAdaptiveRoundingMaxSweeps);

// Adds z z^T for every step of one sequence to `sum` ([(I+H)^2], resized and zeroed when empty),
// z = [x_t ; h_prev], and counts the steps. x is [T][I], h_out the float model's outputs [T][H];
// h_prev is h_out[t-1] (h0, or zero when null, at t = 0); for a reverse op the recurrence runs
// from t = T-1 down to 0, so h_prev is h_out[t+1] (h0 at t = T-1).
void accumulate_operand_moment(std::vector<double>& sum, int64_t& steps, const float* x,
                               const float* h_out, const float* h0, int32_t T, int32_t I, int32_t H,
                               bool reverse);

// OperandStats::operand_second_moment of `lstm` over a calibration set: E[z z^T] over all steps,
// the hidden operands from the float model (run_float with each sequence's h0 and c0).
std::vector<double> operand_second_moment(const FloatLstm& lstm, const CalibrationSet& calibration);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_WEIGHT_ROUNDING_H_
