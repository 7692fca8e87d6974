#include "qlstm/compiler/float/float_rnn.h"

#include <algorithm>
#include <cmath>

namespace qlstm {
namespace compiler {
namespace {

constexpr int32_t kRnnStackIndex[1] = {0};
constexpr const char* kRnnGateNames[1] = {"hidden"};

}  // namespace

FloatLstm rnn_layer_from_torch(int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                               const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                               const std::vector<float>& bias_hh, bool relu) {
  const std::vector<FloatGate> g =
      split_torch_gates("RNN", kRnnStackIndex, 1, input_size, hidden_size, weight_ih, weight_hh, bias_ih, bias_hh);
  FloatLstm l;
  l.cell = CellKind::kRnn;
  l.relu = relu;
  l.input_size = input_size;
  l.hidden_size = hidden_size;
  l.gates[0] = g[0];
  validate_rnn(l);
  return l;
}

void validate_rnn(const FloatLstm& rnn) {
  validate_gates("RNN", rnn.gates.data(), kRnnGateNames, 1, rnn.input_size, rnn.hidden_size);
}

FloatResult run_float_rnn(const FloatLstm& rnn, const float* x, const SequenceShape& shape, const float* h0,
                          const StepVisitor& visit) {
  const int32_t B = shape.batch, T = shape.time_steps, I = rnn.input_size, H = rnn.hidden_size;
  const bool tm = shape.layout == Layout::kTimeMajor;
  const FloatGate& g = rnn.gates[0];
  FloatResult r;
  r.output.assign(static_cast<size_t>(B) * T * H, 0.0f);
  r.h_n.assign(static_cast<size_t>(B) * H, 0.0f);
  r.c_n.assign(static_cast<size_t>(B) * H, 0.0f);
  std::vector<double> h(static_cast<size_t>(H)), next(static_cast<size_t>(H));
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t u = 0; u < H; ++u) h[static_cast<size_t>(u)] = h0 ? h0[b * H + u] : 0.0;
    for (int32_t s = 0; s < T; ++s) {
      const int32_t t = rnn.reverse ? T - 1 - s : s;
      const size_t row = tm ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t;
      const float* xt = x + row * static_cast<size_t>(I);
      for (int32_t u = 0; u < H; ++u) {
        double acc = static_cast<double>(g.bias_x[u]) + g.bias_h[u];
        const float* wx = g.w_x.data() + static_cast<size_t>(u) * I;
        for (int32_t j = 0; j < I; ++j) acc += static_cast<double>(wx[j]) * xt[j];
        const float* wh = g.w_h.data() + static_cast<size_t>(u) * H;
        for (int32_t j = 0; j < H; ++j) acc += static_cast<double>(wh[j]) * h[static_cast<size_t>(j)];
        next[static_cast<size_t>(u)] = rnn.relu ? std::max(acc, 0.0) : std::tanh(acc);
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
