// Small random whole models for the tests of the emitted source and the device: float programs
// with layers around one LSTM (random_program.h's LSTM and calibration), compiled without the
// accuracy search.
#ifndef QLSTM_TESTS_WHOLE_PROGRAM_H_
#define QLSTM_TESTS_WHOLE_PROGRAM_H_

#include <random>
#include <string>
#include <vector>

#include "random_program.h"

namespace qlstm {
namespace compiler {

inline FloatLayer random_linear(const std::string& node, int32_t in, int32_t out, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 0.5f);
  FloatLayer l;
  l.kind = FloatLayerKind::kLinear;
  l.node = node;
  l.input_size = in;
  l.output_size = out;
  l.weight.resize(static_cast<size_t>(in) * static_cast<size_t>(out));
  l.bias.resize(static_cast<size_t>(out));
  for (float& v : l.weight) v = n(rng);
  for (float& v : l.bias) v = n(rng);
  return l;
}

inline FloatLayer elementwise(const std::string& node, FloatLayerKind kind, int32_t size,
                              ActivationFn fn = ActivationFn::kRelu) {
  FloatLayer l;
  l.kind = kind;
  l.node = node;
  l.input_size = l.output_size = size;
  l.fn = fn;
  return l;
}

inline FloatLayer select_step(int32_t size, int32_t step) {
  FloatLayer l = elementwise("select", FloatLayerKind::kSelectStep, size);
  l.step = step;
  return l;
}

// A classifier: LSTM(I, H) -> y[:, -1] -> Linear(H, classes) -> Softmax. Compiled, its LSTM
// writes only its final state (a one-step buffer) and the output is one row per batch row.
inline FloatProgram classifier_program(int32_t I, int32_t H, int32_t classes, std::mt19937_64& rng) {
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {select_step(H, -1), random_linear("head", H, classes, rng),
            elementwise("softmax", FloatLayerKind::kSoftmax, classes)};
  return p;
}

// A per-step head: LSTM(I, H) -> Linear(H, O) on every step.
inline FloatProgram per_step_program(int32_t I, int32_t H, int32_t O, std::mt19937_64& rng) {
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {random_linear("head", H, O, rng)};
  return p;
}

// Every op kind: Linear(I, 6) + ReLU in front (a fused clamp), LSTM(6, H), y[:, step], Linear(H,
// 5) -> Tanh (a table) -> Linear(5, 4) -> Softmax.
inline FloatProgram every_kind_program(int32_t I, int32_t H, int32_t step, std::mt19937_64& rng) {
  constexpr int32_t kFront = 6, kHidden = 5, kClasses = 4;
  FloatProgram p = random_program(kFront, H, 1, 1, rng);
  p.front = {random_linear("front", I, kFront, rng), elementwise("front_relu", FloatLayerKind::kActivation, kFront)};
  p.head = {select_step(H, step), random_linear("head0", H, kHidden, rng),
            elementwise("tanh", FloatLayerKind::kActivation, kHidden, ActivationFn::kTanh),
            random_linear("head1", kHidden, kClasses, rng),
            elementwise("softmax", FloatLayerKind::kSoftmax, kClasses)};
  return p;
}

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_TESTS_WHOLE_PROGRAM_H_
