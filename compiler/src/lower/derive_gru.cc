#include "qlstm/compiler/lower/derive_gru.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "qlstm/activation_s16.h"

namespace qlstm {
namespace compiler {
namespace {

const double kActivationScale = std::ldexp(1.0, -kQ0_15FractionalBits);  // Q0.15
// Largest |h_q0_15| (a GRU's |h| <= 1): the Q0.15 hidden-to-output requantization's operand.
constexpr int64_t kMaxAbsHiddenQ0_15 = int64_t{1} << kQ0_15FractionalBits;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::string gru_gate_label(int32_t g) { return std::string("gate '") + gru_gate_name(g) + "'"; }

}  // namespace

DerivedGru derive_gru_params(const FloatGru& gru, const AffineQuant& input, const AffineQuant& output,
                             const WeightDecision& weights, const OperandStats& observed) {
  gru.validate();
  check_derive_inputs(input, output, weights, observed, gru.input_size, gru.hidden_size);
  if (weights.cell_clip != 0) {
    throw CompileError("cell_clip " + std::to_string(weights.cell_clip) + ": a GRU has no cell to clip");
  }
  // weight_rounding.h minimizes e^T C e over one moment C of the operands [x ; h]; the new gate's
  // recurrent operand is r ⊙ h, different for every row, which that moment does not describe.
  if (weights.weight_rounding == WeightRounding::kAdaptive) {
    throw CompileError("weight_rounding adaptive: not supported for a GRU (the new gate's recurrent operand "
                       "r * h differs per row; one operand moment does not describe it); use nearest");
  }
  const int32_t I = gru.input_size, H = gru.hidden_size;
  DerivedGru d = derived_layer<DerivedGru>(I, H, input, output);
  d.weights = weights;
  for (int32_t g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    // r and z: both float biases on the input side; n: b_hn stays inside r ⊙ (...) (§13).
    const RecurrentBias placement = g == QLSTM_GRU_GATE_NEW ? RecurrentBias::kRecurrentSide : RecurrentBias::kFolded;
    derive_gate(gru.gates[static_cast<size_t>(g)], I, H, input, output, weights, observed, g, placement, nullptr,
                gru_gate_label(g), &d.gates[static_cast<size_t>(g)]);
  }
  d.new_gate_zero_state_bias = zero_state_bias(d.gates[QLSTM_GRU_GATE_NEW], H, output.zero_point);
  // r (Q0.15) * h part (Q3.12) -> Q3.12, and z (Q0.15) * (h - n) (Q0.15) -> Q0.15: both 2^-15.
  d.reset_times_hidden_to_q3_12 = quantize_multiplier(kActivationScale, "reset-times-hidden multiplier");
  d.update_times_difference_to_q0_15 = quantize_multiplier(kActivationScale, "update-times-difference multiplier");
  d.hidden_q0_15_to_output = quantize_multiplier(kActivationScale / output.scale, "hidden-to-output multiplier");
  // The kernel shifts h_q0_15 left in 32 bits before the multiply (§2): it must not wrap.
  const int32_t left = std::max(d.hidden_q0_15_to_output.shift, 0);
  if ((kMaxAbsHiddenQ0_15 << left) > kInt32Max) {
    throw CompileError("output: scale " + std::to_string(output.scale) +
                       " is too fine for the Q0.15 hidden state (hidden-to-output multiplier needs a left shift of " +
                       std::to_string(left) + ")");
  }
  d.time_direction = gru.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
