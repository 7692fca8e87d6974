#include "qlstm/compiler/float_lstm.h"

#include <cmath>
#include <sstream>

#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

// The one place that knows PyTorch's gate stacking: i, f, g, o.
constexpr int32_t kTorchStackIndex[QLSTM_GATE_COUNT] = {
    /* QLSTM_GATE_FORGET */ 1, /* QLSTM_GATE_INPUT */ 0, /* QLSTM_GATE_CELL */ 2,
    /* QLSTM_GATE_OUTPUT */ 3};

void check_finite(const std::vector<float>& v, int32_t gate, const char* quantity, int32_t cols) {
  for (size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) {
      std::ostringstream s;
      s << "gate '" << gate_name(gate) << "': " << quantity << " is not finite (" << v[k]
        << ") at [" << k / static_cast<size_t>(cols) << "][" << k % static_cast<size_t>(cols) << "]";
      throw CompileError(s.str());
    }
  }
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

}  // namespace

int32_t torch_stack_index(int32_t kernel_gate) { return kTorchStackIndex[kernel_gate]; }

FloatLstm FloatLstm::from_torch(int32_t input_size, int32_t hidden_size,
                                const std::vector<float>& weight_ih,
                                const std::vector<float>& weight_hh,
                                const std::vector<float>& bias_ih,
                                const std::vector<float>& bias_hh) {
  if (input_size < 1 || hidden_size < 1) {
    throw CompileError("LSTM: input_size and hidden_size must be >= 1 (got " +
                       std::to_string(input_size) + ", " + std::to_string(hidden_size) + ")");
  }
  const size_t I = static_cast<size_t>(input_size), H = static_cast<size_t>(hidden_size);
  auto expect = [](const std::vector<float>& v, size_t n, const char* name, bool optional) {
    if (optional && v.empty()) return;
    if (v.size() != n) {
      throw CompileError(std::string("LSTM: ") + name + " has " + std::to_string(v.size()) +
                         " values, expected " + std::to_string(n));
    }
  };
  expect(weight_ih, 4 * H * I, "weight_ih [4H][I]", false);
  expect(weight_hh, 4 * H * H, "weight_hh [4H][H]", false);
  expect(bias_ih, 4 * H, "bias_ih [4H]", true);
  expect(bias_hh, 4 * H, "bias_hh [4H]", true);
  FloatLstm l;
  l.input_size = input_size;
  l.hidden_size = hidden_size;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const size_t s = static_cast<size_t>(kTorchStackIndex[g]);
    FloatGate& fg = l.gates[static_cast<size_t>(g)];
    fg.w_x.assign(weight_ih.begin() + static_cast<ptrdiff_t>(s * H * I),
                  weight_ih.begin() + static_cast<ptrdiff_t>((s + 1) * H * I));
    fg.w_h.assign(weight_hh.begin() + static_cast<ptrdiff_t>(s * H * H),
                  weight_hh.begin() + static_cast<ptrdiff_t>((s + 1) * H * H));
    fg.bias_x = bias_ih.empty() ? std::vector<float>(H, 0.0f)
                                : std::vector<float>(bias_ih.begin() + static_cast<ptrdiff_t>(s * H),
                                                     bias_ih.begin() + static_cast<ptrdiff_t>((s + 1) * H));
    fg.bias_h = bias_hh.empty() ? std::vector<float>(H, 0.0f)
                                : std::vector<float>(bias_hh.begin() + static_cast<ptrdiff_t>(s * H),
                                                     bias_hh.begin() + static_cast<ptrdiff_t>((s + 1) * H));
  }
  l.validate();
  return l;
}

void FloatLstm::validate() const {
  if (input_size < 1 || hidden_size < 1) {
    throw CompileError("LSTM: input_size and hidden_size must be >= 1");
  }
  const size_t I = static_cast<size_t>(input_size), H = static_cast<size_t>(hidden_size);
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const FloatGate& fg = gates[static_cast<size_t>(g)];
    const std::pair<const std::vector<float>*, std::pair<const char*, size_t>> parts[] = {
        {&fg.w_x, {"input weights [H][I]", H * I}},
        {&fg.w_h, {"recurrent weights [H][H]", H * H}},
        {&fg.bias_x, {"input bias [H]", H}},
        {&fg.bias_h, {"recurrent bias [H]", H}}};
    for (const auto& [v, what] : parts) {
      if (v->size() != what.second) {
        throw CompileError(std::string("gate '") + gate_name(g) + "': " + what.first + " has " +
                           std::to_string(v->size()) + " values, expected " +
                           std::to_string(what.second));
      }
    }
    check_finite(fg.w_x, g, "input weight", input_size);
    check_finite(fg.w_h, g, "recurrent weight", hidden_size);
    check_finite(fg.bias_x, g, "input bias", 1);
    check_finite(fg.bias_h, g, "recurrent bias", 1);
  }
}

FloatResult run_float(const FloatLstm& lstm, const float* x, const SequenceShape& shape,
                      const float* h0, const float* c0, const StepVisitor& visit) {
  const int32_t B = shape.batch, T = shape.time_steps, I = lstm.input_size, H = lstm.hidden_size;
  const bool tm = shape.layout == Layout::kTimeMajor;
  FloatResult r;
  r.output.assign(static_cast<size_t>(B) * T * H, 0.0f);
  r.h_n.assign(static_cast<size_t>(B) * H, 0.0f);
  r.c_n.assign(static_cast<size_t>(B) * H, 0.0f);
  std::vector<double> h(H), c(H), pre(static_cast<size_t>(4) * H);
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t u = 0; u < H; ++u) {
      h[u] = h0 ? h0[b * H + u] : 0.0;
      c[u] = c0 ? c0[b * H + u] : 0.0;
    }
    for (int32_t s = 0; s < T; ++s) {
      const int32_t t = lstm.reverse ? T - 1 - s : s;
      const float* xt = x + (tm ? (static_cast<size_t>(t) * B + b) : (static_cast<size_t>(b) * T + t)) * I;
      for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
        const FloatGate& fg = lstm.gates[static_cast<size_t>(g)];
        for (int32_t u = 0; u < H; ++u) {
          double acc = static_cast<double>(fg.bias_x[u]) + fg.bias_h[u];
          const float* wx = fg.w_x.data() + static_cast<size_t>(u) * I;
          for (int32_t j = 0; j < I; ++j) acc += static_cast<double>(wx[j]) * xt[j];
          const float* wh = fg.w_h.data() + static_cast<size_t>(u) * H;
          for (int32_t j = 0; j < H; ++j) acc += static_cast<double>(wh[j]) * h[j];
          pre[static_cast<size_t>(g) * H + u] = acc;
        }
      }
      for (int32_t u = 0; u < H; ++u) {
        const double f = sigmoid(pre[QLSTM_GATE_FORGET * H + u]);
        const double i = sigmoid(pre[QLSTM_GATE_INPUT * H + u]);
        const double gg = std::tanh(pre[QLSTM_GATE_CELL * H + u]);
        const double o = sigmoid(pre[QLSTM_GATE_OUTPUT * H + u]);
        c[u] = f * c[u] + i * gg;
        h[u] = o * std::tanh(c[u]);
      }
      float* yt = r.output.data() +
                  (tm ? (static_cast<size_t>(t) * B + b) : (static_cast<size_t>(b) * T + t)) * H;
      for (int32_t u = 0; u < H; ++u) yt[u] = static_cast<float>(h[u]);
      if (visit) visit(c.data(), h.data(), H);
    }
    for (int32_t u = 0; u < H; ++u) {
      r.h_n[static_cast<size_t>(b) * H + u] = static_cast<float>(h[u]);
      r.c_n[static_cast<size_t>(b) * H + u] = static_cast<float>(c[u]);
    }
  }
  return r;
}

}  // namespace compiler
}  // namespace qlstm
