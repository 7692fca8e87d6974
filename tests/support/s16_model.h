// A small 16x8 program built by hand: int16 input, a QLSTM_OP_LSTM_S16, a
// QLSTM_OP_FULLY_CONNECTED_S16, then a QLSTM_OP_REQUANTIZE to int8 and an int8 softmax, or (as
// s16_program builds it) a QLSTM_OP_SOFTMAX_S16. For the tests of the forms a typed program takes
// (the model file, the emitted source).
#ifndef QLSTM_TESTS_S16_MODEL_H_
#define QLSTM_TESTS_S16_MODEL_H_

#include <cmath>
#include <random>
#include <vector>

#include "qlstm/compiler/lower/derive_s16.h"
#include "qlstm/compiler/program/program.h"

namespace testing_support {

struct S16ModelShape {
  int32_t input = 3, hidden = 4, classes = 5;
  int32_t cell_power = -11;
  bool batch_first = true;
  bool final_state = false;  // the LSTM writes only its final hidden state (a one-step head)
  bool softmax_s16 = false;  // the head's softmax 16x8 on the int16 logits (no requantization)
};

// The head's ops, each reading the last buffer and writing the next (outs[j]).
inline void append_head(qlstm::compiler::CompiledModel& m, qlstm::compiler::ProgramOp* const* head,
                        const qlstm::compiler::ProgramBuffer* outs, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    head[j]->input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
    head[j]->output_buffer = head[j]->input_buffer + 1;
    m.buffers.push_back(outs[j]);
    m.ops.push_back(*head[j]);
  }
}

inline qlstm::compiler::CompiledModel s16_model(std::mt19937_64& rng, const S16ModelShape& shape = {}) {
  using namespace qlstm::compiler;
  const int32_t I = shape.input, H = shape.hidden, C = shape.classes;
  const float k = 1.0f / std::sqrt(static_cast<float>(H));  // PyTorch's init range
  std::uniform_real_distribution<float> u(-k, k);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const size_t G = QLSTM_GATE_COUNT;
  const FloatLstm lstm = FloatLstm::from_torch(I, H, fill(G * H * I), fill(G * H * H), fill(G * H), fill(G * H));
  // Inputs within +-3, the hidden state within +-1, the logits within +-4.
  const double s_in = symmetric_s16_scale(3.0, "input"), s_h = symmetric_s16_scale(1.0, "hidden");
  const double s_logits = symmetric_s16_scale(4.0, "logits");
  CellScaleChoice cell;
  cell.power = shape.cell_power;
  ProgramOp rec;
  rec.set(derive_lstm_s16_params(lstm, s_in, s_h, cell, WeightDecision{}));
  const int32_t steps = shape.final_state ? QLSTM_BUFFER_ONE_STEP : QLSTM_BUFFER_EVERY_STEP;
  if (shape.final_state) rec.as<DerivedLstmS16>().output_steps = QLSTM_OUTPUT_FINAL;
  CompiledModel m = assemble_program({rec}, 1);
  m.buffers.back().steps = steps;
  m.name = "s16";
  m.batch_first = shape.batch_first;

  FloatLayer linear;
  linear.node = "head";
  linear.input_size = H;
  linear.output_size = C;
  linear.weight = fill(static_cast<size_t>(C * H));
  linear.bias = fill(static_cast<size_t>(C));
  ProgramOp fc;
  fc.set(derive_fc_s16(linear, nullptr, s_h, s_logits));
  if (shape.softmax_s16) {
    ProgramOp sm;
    sm.set(derive_softmax_s16(C, s_logits, 1.0));
    const ProgramBuffer outs[] = {{C, {s_logits, 0}, steps, QLSTM_ELEMENT_S16},
                                  {C, softmax_s16_output_quant(), steps, QLSTM_ELEMENT_S16}};
    ProgramOp* head[] = {&fc, &sm};
    append_head(m, head, outs, 2);
    m.validate("s16_model");
    return m;
  }
  const AffineQuant logits8{4.0 / 127, 0};
  ProgramOp rq;
  rq.set(derive_requantize(C, QLSTM_ELEMENT_S16, {s_logits, 0}, QLSTM_ELEMENT_S8, logits8, "logits"));
  ProgramOp sm;
  sm.set(derive_softmax(C, logits8, 1.0));
  const ProgramBuffer outs[] = {{C, {s_logits, 0}, steps, QLSTM_ELEMENT_S16},
                                {C, logits8, steps, QLSTM_ELEMENT_S8},
                                {C, softmax_output_quant(), steps, QLSTM_ELEMENT_S8}};
  ProgramOp* head[] = {&fc, &rq, &sm};
  append_head(m, head, outs, 3);
  m.validate("s16_model");
  return m;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_S16_MODEL_H_
