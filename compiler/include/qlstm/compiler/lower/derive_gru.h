// From a float GRU and its boundary scales to the GRU kernel's integer parameters
// (docs/arithmetic.md §13, docs/compiler.md). Host only.
#ifndef QLSTM_COMPILER_DERIVE_GRU_H_
#define QLSTM_COMPILER_DERIVE_GRU_H_

#include <array>
#include <cstdint>
#include <vector>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/gru_s8.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

// Index of a GRU weight block in WeightDecision::weight_clip_ratio (the LSTM's first six entries).
constexpr int32_t gru_weight_block(int32_t gate, bool recurrent) { return weight_block(gate, recurrent); }

// Everything the GRU kernel needs, owned, plus what it was derived from. The hidden state is
// Q0.15 (|h| <= 1); its int8 form, the output and the recurrent operand, is at `output`.
struct DerivedGru {
  static constexpr int32_t kKind = QLSTM_OP_GRU_S8;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, hidden_size = 0;
  AffineQuant input, output;
  int32_t time_direction = QLSTM_TIME_FORWARD;
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;
  WeightDecision weights;  // as derived
  // gates[g].activation is unused (r, z sigmoid; n tanh, fixed by the kernel).
  std::array<DerivedGate, QLSTM_GRU_GATE_COUNT> gates;
  qlstm_requant reset_times_hidden_to_q3_12{}, update_times_difference_to_q0_15{}, hidden_q0_15_to_output{};
  // [H]: the new gate's recurrent accumulator at a zero state (b_hn alone; zero_state_bias below).
  std::vector<int32_t> new_gate_zero_state_bias;
  int32_t input_repeated = 0;  // 1: reads one input step at every step (qlstm_gru_s8_params)

  // A kernel parameter block pointing into this object (valid while it lives).
  qlstm_gru_s8_params kernel_params(int32_t batch, int32_t time_steps, Layout layout) const;
  // The inverse: the kernel's fields (arrays copied) with the boundary quantizations the block
  // does not hold. Throws CompileError when the block's output zero point is not `output`'s.
  static DerivedGru from_kernel_params(const qlstm_gru_s8_params& p, const AffineQuant& input,
                                       const AffineQuant& output);
};

// A gate's recurrent accumulator at a zero state, whose int8 operand is zp_h everywhere:
// hidden_effective_bias + zp_h * rowsum(W_h) per row, modulo 2^32 as the kernel's accumulator
// (for the new gate as derived: round(b_hn / (s_h s_Whn)), docs/arithmetic.md §13).
std::vector<int32_t> zero_state_bias(const DerivedGate& gate, int32_t hidden_size, int32_t zp_h);

// Throws CompileError (naming the gate and the quantity) for a bias that overflows int32 at its
// scale, a multiplier out of range, or an accumulator that could overflow int32.
DerivedGru derive_gru_params(const FloatGru& gru, const AffineQuant& input, const AffineQuant& output,
                             const WeightDecision& weights, const OperandStats& observed = {});

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_GRU_H_
