#include "qlstm/compiler/float/float_lstm.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/float/float_rnn.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

// The one place that knows PyTorch's gate stacking: i, f, g, o.
constexpr int32_t kTorchStackIndex[QLSTM_GATE_COUNT] = {
    /* QLSTM_GATE_FORGET */ 1, /* QLSTM_GATE_INPUT */ 0, /* QLSTM_GATE_CELL */ 2,
    /* QLSTM_GATE_OUTPUT */ 3};

void check_finite(const std::vector<float>& v, const char* gate, const char* quantity, int32_t cols) {
  for (size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) {
      std::ostringstream s;
      s << "gate '" << gate << "': " << quantity << " is not finite (" << v[k]
        << ") at [" << k / static_cast<size_t>(cols) << "][" << k % static_cast<size_t>(cols) << "]";
      throw CompileError(s.str());
    }
  }
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

}  // namespace

double GateSigmoid::operator()(double x) const {
  if (!hard) return sigmoid(x);
  return std::clamp(static_cast<double>(alpha) * x + static_cast<double>(beta), 0.0, 1.0);
}

std::string GateSigmoid::line_problem() const {
  constexpr float kMaxAlpha = 8192.0f, kMaxBeta = 32768.0f;  // docs/arithmetic.md §3.1
  if (!hard || ((alpha >= 0 && alpha <= kMaxAlpha) && std::fabs(beta) <= kMaxBeta)) return "";
  return "HardSigmoid alpha " + std::to_string(alpha) + ", beta " + std::to_string(beta) +
         " is not supported (the kernel's line takes 0 <= alpha <= 2^13 and |beta| <= 2^15)";
}

int32_t torch_stack_index(int32_t kernel_gate) { return kTorchStackIndex[kernel_gate]; }

std::vector<FloatGate> split_torch_gates(const char* what, const int32_t* stack_index, int32_t gates,
                                         int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                                         const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                                         const std::vector<float>& bias_hh) {
  if (input_size < 1 || hidden_size < 1) {
    throw CompileError(std::string(what) + ": input_size and hidden_size must be >= 1 (got " +
                       std::to_string(input_size) + ", " + std::to_string(hidden_size) + ")");
  }
  const size_t I = static_cast<size_t>(input_size), H = static_cast<size_t>(hidden_size);
  const size_t G = static_cast<size_t>(gates);
  const std::string g = std::to_string(gates);
  auto expect = [&](const std::vector<float>& v, size_t n, const std::string& name, bool optional) {
    if (optional && v.empty()) return;
    if (v.size() != n) {
      throw CompileError(std::string(what) + ": " + name + " has " + std::to_string(v.size()) +
                         " values, expected " + std::to_string(n));
    }
  };
  expect(weight_ih, G * H * I, "weight_ih [" + g + "H][I]", false);
  expect(weight_hh, G * H * H, "weight_hh [" + g + "H][H]", false);
  expect(bias_ih, G * H, "bias_ih [" + g + "H]", true);
  expect(bias_hh, G * H, "bias_hh [" + g + "H]", true);
  auto block = [](const std::vector<float>& v, size_t s, size_t n) {
    return v.empty() ? std::vector<float>(n, 0.0f)
                     : std::vector<float>(v.begin() + static_cast<ptrdiff_t>(s * n),
                                          v.begin() + static_cast<ptrdiff_t>((s + 1) * n));
  };
  std::vector<FloatGate> out(G);
  for (size_t k = 0; k < G; ++k) {
    const size_t s = static_cast<size_t>(stack_index[k]);
    out[k] = {block(weight_ih, s, H * I), block(weight_hh, s, H * H), block(bias_ih, s, H), block(bias_hh, s, H)};
  }
  return out;
}

void validate_gates(const char* what, const FloatGate* gates, const char* const* names, int32_t count,
                    int32_t input_size, int32_t hidden_size) {
  if (input_size < 1 || hidden_size < 1) {
    throw CompileError(std::string(what) + ": input_size and hidden_size must be >= 1");
  }
  const size_t I = static_cast<size_t>(input_size), H = static_cast<size_t>(hidden_size);
  for (int32_t g = 0; g < count; ++g) {
    const FloatGate& fg = gates[g];
    const std::pair<const std::vector<float>*, std::pair<const char*, size_t>> parts[] = {
        {&fg.w_x, {"input weights [H][I]", H * I}},
        {&fg.w_h, {"recurrent weights [H][H]", H * H}},
        {&fg.bias_x, {"input bias [H]", H}},
        {&fg.bias_h, {"recurrent bias [H]", H}}};
    for (const auto& [v, part] : parts) {
      if (v->size() != part.second) {
        throw CompileError(std::string("gate '") + names[g] + "': " + part.first + " has " +
                           std::to_string(v->size()) + " values, expected " + std::to_string(part.second));
      }
    }
    check_finite(fg.w_x, names[g], "input weight", input_size);
    check_finite(fg.w_h, names[g], "recurrent weight", hidden_size);
    check_finite(fg.bias_x, names[g], "input bias", 1);
    check_finite(fg.bias_h, names[g], "recurrent bias", 1);
  }
}

FloatLstm FloatLstm::from_torch(int32_t input_size, int32_t hidden_size,
                                const std::vector<float>& weight_ih,
                                const std::vector<float>& weight_hh,
                                const std::vector<float>& bias_ih,
                                const std::vector<float>& bias_hh) {
  const std::vector<FloatGate> g = split_torch_gates("LSTM", kTorchStackIndex, QLSTM_GATE_COUNT, input_size,
                                                     hidden_size, weight_ih, weight_hh, bias_ih, bias_hh);
  FloatLstm l;
  l.input_size = input_size;
  l.hidden_size = hidden_size;
  std::copy(g.begin(), g.end(), l.gates.begin());
  l.validate();
  return l;
}

const char* cell_kind_name(CellKind k) {
  return k == CellKind::kGru ? "GRU" : k == CellKind::kRnn ? "RNN" : "LSTM";
}

void FloatLstm::validate() const {
  if (gate_sigmoid.hard && cell != CellKind::kLstm) {
    throw CompileError(std::string(cell_kind_name(cell)) +
                       ": HardSigmoid gates are not supported (only an LSTM's sigmoid gates can be HardSigmoid)");
  }
  if (relu && cell != CellKind::kRnn) throw CompileError(std::string(cell_kind_name(cell)) + ": ReLU is an RNN's activation");
  if (cell == CellKind::kRnn) return validate_rnn(*this);
  if (const std::string line = gate_sigmoid.line_problem(); !line.empty()) throw CompileError(line);
  if (cell == CellKind::kGru) return gru_of(*this).validate();
  const char* names[QLSTM_GATE_COUNT];
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) names[g] = gate_name(g);
  validate_gates("LSTM", gates.data(), names, QLSTM_GATE_COUNT, input_size, hidden_size);
}

FloatResult run_float(const FloatLstm& lstm, const float* x, const SequenceShape& shape,
                      const float* h0, const float* c0, const StepVisitor& visit) {
  if (lstm.cell == CellKind::kGru) {
    FloatGruResult g = run_float_gru(gru_of(lstm), x, shape, h0, visit);
    return {std::move(g.output), std::move(g.h_n), std::vector<float>(g.h_n.size(), 0.0f)};
  }
  if (lstm.cell == CellKind::kRnn) return run_float_rnn(lstm, x, shape, h0, visit);
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
        const GateSigmoid& sigma = lstm.gate_sigmoid;
        const double f = sigma(pre[QLSTM_GATE_FORGET * H + u]);
        const double i = sigma(pre[QLSTM_GATE_INPUT * H + u]);
        const double gg = std::tanh(pre[QLSTM_GATE_CELL * H + u]);
        const double o = sigma(pre[QLSTM_GATE_OUTPUT * H + u]);
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
