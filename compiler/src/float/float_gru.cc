#include "qlstm/compiler/float/float_gru.h"

#include <algorithm>
#include <cmath>

namespace qlstm {
namespace compiler {
namespace {

// PyTorch stacks r, z, n, the order the kernel keeps.
constexpr int32_t kTorchGruStackIndex[kGruGateCount] = {0, 1, 2};
constexpr const char* kGruGateNames[kGruGateCount] = {"reset", "update", "new"};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One gate's matmul for unit u: W_x x + W_h h (the biases are the caller's: n keeps b_hn apart).
double dot(const std::vector<float>& w, int32_t u, int32_t n, const double* v) {
  const float* row = w.data() + static_cast<size_t>(u) * static_cast<size_t>(n);
  double acc = 0;
  for (int32_t j = 0; j < n; ++j) acc += static_cast<double>(row[j]) * v[j];
  return acc;
}

}  // namespace

const char* gru_gate_name(int32_t gate) {
  return gate >= 0 && gate < kGruGateCount ? kGruGateNames[gate] : "?";
}

FloatGru FloatGru::from_torch(int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                              const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                              const std::vector<float>& bias_hh) {
  const std::vector<FloatGate> g = split_torch_gates("GRU", kTorchGruStackIndex, kGruGateCount, input_size,
                                                     hidden_size, weight_ih, weight_hh, bias_ih, bias_hh);
  FloatGru gru;
  gru.input_size = input_size;
  gru.hidden_size = hidden_size;
  std::copy(g.begin(), g.end(), gru.gates.begin());
  gru.validate();
  return gru;
}

FloatLstm as_layer(const FloatGru& gru) {
  FloatLstm l;
  l.cell = CellKind::kGru;
  l.input_size = gru.input_size;
  l.hidden_size = gru.hidden_size;
  l.reverse = gru.reverse;
  std::copy(gru.gates.begin(), gru.gates.end(), l.gates.begin());
  return l;
}

FloatGru gru_of(const FloatLstm& layer) {
  if (layer.cell != CellKind::kGru) throw CompileError("an LSTM layer where a GRU was expected");
  FloatGru gru;
  gru.input_size = layer.input_size;
  gru.hidden_size = layer.hidden_size;
  gru.reverse = layer.reverse;
  std::copy(layer.gates.begin(), layer.gates.begin() + kGruGateCount, gru.gates.begin());
  return gru;
}

void FloatGru::validate() const {
  validate_gates("GRU", gates.data(), kGruGateNames, kGruGateCount, input_size, hidden_size);
}

FloatGruResult run_float_gru(const FloatGru& gru, const float* x, const SequenceShape& shape, const float* h0,
                             const StepVisitor& visit) {
  const int32_t B = shape.batch, T = shape.time_steps, I = gru.input_size, H = gru.hidden_size;
  const bool tm = shape.layout == Layout::kTimeMajor;
  FloatGruResult r;
  r.output.assign(static_cast<size_t>(B) * T * H, 0.0f);
  r.h_n.assign(static_cast<size_t>(B) * H, 0.0f);
  std::vector<double> h(static_cast<size_t>(H)), next(static_cast<size_t>(H)), xt(static_cast<size_t>(I));
  const FloatGate& gr = gru.gates[kGruReset];
  const FloatGate& gz = gru.gates[kGruUpdate];
  const FloatGate& gn = gru.gates[kGruNew];
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t u = 0; u < H; ++u) h[static_cast<size_t>(u)] = h0 ? h0[b * H + u] : 0.0;
    for (int32_t s = 0; s < T; ++s) {
      const int32_t t = gru.reverse ? T - 1 - s : s;
      const size_t row = tm ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t;
      for (int32_t j = 0; j < I; ++j) xt[static_cast<size_t>(j)] = x[row * static_cast<size_t>(I) + j];
      for (int32_t u = 0; u < H; ++u) {
        const double rr = sigmoid(dot(gr.w_x, u, I, xt.data()) + gr.bias_x[u] + dot(gr.w_h, u, H, h.data()) + gr.bias_h[u]);
        const double z = sigmoid(dot(gz.w_x, u, I, xt.data()) + gz.bias_x[u] + dot(gz.w_h, u, H, h.data()) + gz.bias_h[u]);
        const double n = std::tanh(dot(gn.w_x, u, I, xt.data()) + gn.bias_x[u] +
                                   rr * (dot(gn.w_h, u, H, h.data()) + gn.bias_h[u]));
        next[static_cast<size_t>(u)] = n + z * (h[static_cast<size_t>(u)] - n);
      }
      h.swap(next);
      for (int32_t u = 0; u < H; ++u) r.output[row * static_cast<size_t>(H) + u] = static_cast<float>(h[static_cast<size_t>(u)]);
      if (visit) visit(nullptr, h.data(), H);
    }
    for (int32_t u = 0; u < H; ++u) r.h_n[static_cast<size_t>(b) * H + u] = static_cast<float>(h[static_cast<size_t>(u)]);
  }
  return r;
}

}  // namespace compiler
}  // namespace qlstm
