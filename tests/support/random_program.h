// Small random float programs for the compiler's tests: normal weights (sigma 0.4), an ONNX-style
// reverse second direction, a calibration set of six standard-normal sequences of 12 steps, and
// options without the accuracy search.
#ifndef QLSTM_TESTS_RANDOM_PROGRAM_H_
#define QLSTM_TESTS_RANDOM_PROGRAM_H_

#include <random>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/float/float_rnn.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace compiler {

// `count` normal(0, 0.4) values.
inline std::vector<float> random_weights(size_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 0.4f);
  std::vector<float> out(count);
  for (float& x : out) x = n(rng);
  return out;
}

inline FloatLstm random_lstm(int32_t I, int32_t H, bool reverse, std::mt19937_64& rng) {
  auto v = [&](size_t count) { return random_weights(count, rng); };
  FloatLstm l = FloatLstm::from_torch(I, H, v(4u * H * I), v(4u * H * H), v(4u * H), v(4u * H));
  l.reverse = reverse;
  return l;
}

// A GRU layer drawn the same way (PyTorch's r, z, n blocks).
inline FloatLstm random_gru_layer(int32_t I, int32_t H, bool reverse, std::mt19937_64& rng) {
  auto v = [&](size_t count) { return random_weights(count, rng); };
  FloatGru g = FloatGru::from_torch(I, H, v(3u * H * I), v(3u * H * H), v(3u * H), v(3u * H));
  g.reverse = reverse;
  return as_layer(g);
}

// A vanilla RNN layer (tanh or ReLU) drawn the same way.
inline FloatLstm random_rnn_layer(int32_t I, int32_t H, bool reverse, bool relu, std::mt19937_64& rng) {
  auto v = [&](size_t count) { return random_weights(count, rng); };
  FloatLstm l = rnn_layer_from_torch(I, H, v(1u * H * I), v(1u * H * H), v(1u * H), v(1u * H), relu);
  l.reverse = reverse;
  return l;
}

inline FloatProgram random_program(int32_t I, int32_t H, int32_t layers, int32_t directions, std::mt19937_64& rng,
                                   CellKind cell = CellKind::kLstm, bool relu = false) {
  FloatProgram p;
  p.directions = directions;
  for (int32_t l = 0; l < layers; ++l) {
    for (int32_t d = 0; d < directions; ++d) {
      const int32_t in = l ? directions * H : I;
      p.ops.push_back(cell == CellKind::kGru   ? random_gru_layer(in, H, d == 1, rng)
                      : cell == CellKind::kRnn ? random_rnn_layer(in, H, d == 1, relu, rng)
                                               : random_lstm(in, H, d == 1, rng));
    }
  }
  return p;
}

// nn.LayerNorm(F) as training leaves it: gamma about 1, beta about 0, each drawn (sigma 0.3).
inline FloatLayer random_layer_norm(int32_t F, std::mt19937_64& rng, const std::string& node) {
  std::normal_distribution<float> n(0.0f, 0.3f);
  FloatLayer l;
  l.kind = FloatLayerKind::kLayerNorm;
  l.node = node;
  l.input_size = l.output_size = F;
  for (int32_t i = 0; i < F; ++i) {
    l.weight.push_back(1.0f + n(rng));
    l.bias.push_back(n(rng));
  }
  return l;
}

inline CalibrationSet calibration(int32_t I, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(6) * 12 * I);
  for (float& v : x) v = n(rng);
  CalibrationSet set;
  set.add_batch(x, {6, 12, Layout::kBatchMajor}, I);
  return set;
}

inline CompileOptions fast() {
  CompileOptions o;
  o.tuning = Tuning::kNone;
  return o;
}

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_TESTS_RANDOM_PROGRAM_H_
