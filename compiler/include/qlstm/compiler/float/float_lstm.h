// The float LSTM the compiler starts from (PyTorch nn.LSTM semantics, one layer, forward or reverse),
// and its reference evaluation in double precision.
#ifndef QLSTM_COMPILER_FLOAT_LSTM_H_
#define QLSTM_COMPILER_FLOAT_LSTM_H_

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace compiler {

// Every error the compiler reports: the message names the gate or node and the quantity.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One gate's float parameters.
struct FloatGate {
  std::vector<float> w_x;     // [H][I]
  std::vector<float> w_h;     // [H][H]
  std::vector<float> bias_x;  // [H] (PyTorch bias_ih block)
  std::vector<float> bias_h;  // [H] (PyTorch bias_hh block)
};

// The activation of an LSTM's sigmoid gates (forget, input, output: ONNX's first activation): the
// logistic sigmoid, or HardSigmoid max(0, min(1, alpha x + beta)) (the LSTMs of Keras <= 2.2;
// docs/arithmetic.md §3.1). The cell gate and tanh(c) stay tanh.
struct GateSigmoid {
  bool hard = false;
  float alpha = 0.2f, beta = 0.5f;  // HardSigmoid's line (ONNX's defaults)
  double operator()(double x) const;
  // "" or why the kernel cannot take this line: it needs 0 <= alpha <= 2^13 (the slope 8 alpha
  // shifts the int16 pre-activation left by at most 16, exactly) and |beta| <= 2^15 (its offset
  // within int32).
  std::string line_problem() const;
};

// The recurrent cell of a layer.
enum class CellKind {
  kLstm,  // four gates, by qlstm_gate_index
  kGru,   // three gates, by GruGate (reset, update, new) in gates[0..2]; gates[3] unused (float_gru.h)
  kRnn,   // the vanilla RNN: one gate in gates[0], h' = tanh or ReLU of it (float_rnn.h)
};
const char* cell_kind_name(CellKind k);  // "LSTM", "GRU", "RNN"

// One recurrent layer of a program (one direction). Its cell is an LSTM unless `cell` says GRU:
// the program, its importer and its compiler handle stacking, directions and state once for
// both; what differs (the gates, the float run, the derivation) dispatches on `cell`
// (float_gru.h converts to and from FloatGru).
// Gates are stored by name, indexed by qlstm_gate_index (forget, input, cell, output). Each
// importer translates its framework's stacking order into this, once: from_torch() for
// PyTorch's i, f, g, o.
struct FloatLstm {
  int32_t input_size = 0;
  int32_t hidden_size = 0;
  std::array<FloatGate, QLSTM_GATE_COUNT> gates;
  bool reverse = false;  // ONNX direction "reverse": time runs from the last step to the first
  CellKind cell = CellKind::kLstm;
  GateSigmoid gate_sigmoid;  // an LSTM's forget, input and output gates (a GRU's: the sigmoid)
  bool relu = false;         // an RNN's activation: ReLU (else tanh)
  int32_t gate_count() const { return cell == CellKind::kGru ? 3 : cell == CellKind::kRnn ? 1 : QLSTM_GATE_COUNT; }

  // weight_ih [4H][I], weight_hh [4H][H], bias_ih [4H], bias_hh [4H] (either bias may be empty
  // for "no bias"), stacked in PyTorch's order i, f, g, o.
  static FloatLstm from_torch(int32_t input_size, int32_t hidden_size,
                              const std::vector<float>& weight_ih,
                              const std::vector<float>& weight_hh,
                              const std::vector<float>& bias_ih,
                              const std::vector<float>& bias_hh);

  // Throws CompileError for inconsistent shapes or non-finite values, naming gate and quantity,
  // and for a HardSigmoid line the kernel cannot take (alpha < 0, a GRU's).
  void validate() const;
};

// PyTorch's stacked weight_ih [G·H][I], weight_hh [G·H][H], bias_ih / bias_hh [G·H] (a bias may be
// empty for none) split into G gates, gate k from stack block stack_index[k]; `what` ("LSTM",
// "GRU") names the layer in messages. Shapes only: validate_gates checks the values.
std::vector<FloatGate> split_torch_gates(const char* what, const int32_t* stack_index, int32_t gates,
                                         int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                                         const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                                         const std::vector<float>& bias_hh);
// Throws CompileError for a gate of the wrong shape or with a non-finite value, naming it.
void validate_gates(const char* what, const FloatGate* gates, const char* const* names, int32_t count,
                    int32_t input_size, int32_t hidden_size);

// PyTorch's position of each kernel gate in its i, f, g, o stacking.
int32_t torch_stack_index(int32_t kernel_gate);

enum class Layout { kBatchMajor, kTimeMajor };  // [B][T][F] or [T][B][F]

struct SequenceShape {
  int32_t batch = 1;
  int32_t time_steps = 0;
  Layout layout = Layout::kBatchMajor;
};

struct FloatResult {
  std::vector<float> output;  // [B][T][H] or [T][B][H], as the input
  std::vector<float> h_n;     // [B][H]
  std::vector<float> c_n;     // [B][H]; a GRU's: zeros (it has no cell)
};

// Called after every step with the new cell and hidden values of one batch row ([H] each; cell
// null for a GRU).
using StepVisitor = std::function<void(const double* cell, const double* hidden, int32_t H)>;

// Evaluates the layer (LSTM or GRU) in double precision. h0/c0 ([B][H]) may be null for a zero
// state; a GRU ignores c0.
FloatResult run_float(const FloatLstm& lstm, const float* x, const SequenceShape& shape,
                      const float* h0 = nullptr, const float* c0 = nullptr,
                      const StepVisitor& visit = nullptr);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FLOAT_LSTM_H_
