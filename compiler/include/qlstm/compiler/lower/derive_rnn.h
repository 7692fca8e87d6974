// From a float vanilla RNN and its boundary scales to the RNN kernel's integer parameters
// (docs/arithmetic.md §23, docs/compiler.md). Host only.
#ifndef QLSTM_COMPILER_DERIVE_RNN_H_
#define QLSTM_COMPILER_DERIVE_RNN_H_

#include <array>
#include <cstdint>

#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/lower/derive.h"
#include "qlstm/program_s8.h"
#include "qlstm/rnn_s8.h"

namespace qlstm {
namespace compiler {

// A tanh RNN's hidden state is Q0.15.
constexpr int32_t kRnnTanhHiddenPower = -15;
// A ReLU RNN's int16 pre-activation spans this many times its int8 output's range: the input part
// is saturated on its own before the recurrent part is added (§23), so it needs room above the
// largest hidden value.
constexpr double kRnnReluHeadroom = 4.0;

// Everything the RNN kernel needs, owned, plus what it was derived from. The hidden state is int16
// at 2^hidden_power (Q0.15 for tanh; ReLU's pre-activation format); its int8 form, the output and
// the recurrent operand, is at `output`.
struct DerivedRnn {
  static constexpr int32_t kKind = QLSTM_OP_RNN_S8;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, hidden_size = 0;
  AffineQuant input, output;
  int32_t time_direction = QLSTM_TIME_FORWARD;
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;
  WeightDecision weights;  // as derived
  std::array<DerivedGate, 1> gates;  // its one gate (gates[0].activation unused: `activation` says)
  int32_t activation = QLSTM_RNN_TANH;  // a qlstm_rnn_activation
  int32_t hidden_power = kRnnTanhHiddenPower;
  qlstm_requant hidden_to_output{};

  // A kernel parameter block pointing into this object (valid while it lives).
  qlstm_rnn_s8_params kernel_params(int32_t batch, int32_t time_steps, Layout layout) const;
  // The inverse: the kernel's fields (arrays copied) with the boundary quantizations the block does
  // not hold; hidden_power from hidden_to_output and the output scale. Throws CompileError when
  // the block's output zero point is not `output`'s, or a ReLU block's hidden format is not a power of two.
  static DerivedRnn from_kernel_params(const qlstm_rnn_s8_params& p, const AffineQuant& input,
                                       const AffineQuant& output);
};

// "hidden": its gate's name in messages and reports.
const char* rnn_gate_name(int32_t gate);

// Throws CompileError (naming the quantity) for a bias that overflows int32 at its scale, a
// multiplier out of range, an accumulator that could overflow int32, or what an RNN cannot take
// (a cell clip, adaptive rounding).
DerivedRnn derive_rnn_params(const FloatLstm& rnn, const AffineQuant& input, const AffineQuant& output,
                             const WeightDecision& weights, const OperandStats& observed = {});

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_RNN_H_
