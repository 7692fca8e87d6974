// The float GRU the compiler starts from (PyTorch nn.GRU semantics, ONNX GRU with
// linear_before_reset = 1; one layer, forward or reverse) and its reference evaluation in double
// precision, the float side of docs/arithmetic.md §13.
#ifndef QLSTM_COMPILER_FLOAT_GRU_H_
#define QLSTM_COMPILER_FLOAT_GRU_H_

#include <array>
#include <cstdint>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {

// Gate order: reset, update, new (PyTorch's r, z, n stacking, which the kernel keeps).
enum GruGate : int32_t { kGruReset = 0, kGruUpdate = 1, kGruNew = 2, kGruGateCount = 3 };
const char* gru_gate_name(int32_t gate);  // "reset", "update", "new"

struct FloatGru {
  int32_t input_size = 0;
  int32_t hidden_size = 0;
  std::array<FloatGate, kGruGateCount> gates;  // bias_h of the new gate is b_hn, inside r ⊙ (...)
  bool reverse = false;

  // weight_ih [3H][I], weight_hh [3H][H], bias_ih [3H], bias_hh [3H] (either bias may be empty).
  static FloatGru from_torch(int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                             const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                             const std::vector<float>& bias_hh);
  // Throws CompileError for inconsistent shapes or non-finite values, naming gate and quantity.
  void validate() const;
};

// The GRU as a program layer (FloatLstm with cell kGru) and back; gru_of throws CompileError for
// a layer that is not a GRU.
FloatLstm as_layer(const FloatGru& gru);
FloatGru gru_of(const FloatLstm& layer);

struct FloatGruResult {
  std::vector<float> output;  // [B][T][H] or [T][B][H], as the input
  std::vector<float> h_n;     // [B][H]
};

// Evaluates the GRU in double precision; h0 ([B][H]) may be null for a zero state. `visit`, if
// set, is called after every step with the new hidden values of one batch row (cell: null).
FloatGruResult run_float_gru(const FloatGru& gru, const float* x, const SequenceShape& shape,
                             const float* h0 = nullptr, const StepVisitor& visit = nullptr);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FLOAT_GRU_H_
