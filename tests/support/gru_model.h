// A compiled model of GRU ops for tests, from random valid kernel parameters: a bidirectional
// GRU layer (a forward and a reverse op writing the halves of each [2H] row, or with FINAL of each
// batch row's final states) and a per-channel FC head; optionally a constant initial state (each
// GRU's Q0.15 h0 in its initial_cell).
#ifndef QLSTM_TESTS_GRU_MODEL_H_
#define QLSTM_TESTS_GRU_MODEL_H_

#include <random>
#include <vector>

#include "hand_programs.h"
#include "qlstm/compiler/program/program.h"
#include "random_gru.h"

namespace testing_support {

struct GruModelOptions {
  bool final_state = false;     // the GRUs write only their final states (a one-step head)
  bool constant_state = false;  // StateSource::kConstant h0, [H] per op
};

inline qlstm::compiler::CompiledModel gru_model(std::mt19937_64& rng, const GruModelOptions& o) {
  using namespace qlstm::compiler;
  constexpr int32_t I = hand::I, H = hand::H, O = hand::O;
  const AffineQuant in{0.05, 3}, out{1.0 / 100, -7};
  std::vector<ProgramOp> ops(2);
  std::uniform_int_distribution<int> s16(-30000, 30000);
  for (int32_t d = 0; d < 2; ++d) {
    RandomGru g;
    make_random_gru(g, rng, {1, 0, I, H}, false, Regime::kTypical);
    g.params.output_zero_point = out.zero_point;  // one output buffer: one quantization
    g.params.time_direction = d == 0 ? QLSTM_TIME_FORWARD : QLSTM_TIME_REVERSE;
    g.params.output_steps = o.final_state ? QLSTM_OUTPUT_FINAL : QLSTM_OUTPUT_ALL_STEPS;
    ProgramOp& op = ops[static_cast<size_t>(d)];
    op.set(DerivedGru::from_kernel_params(g.params, in, out));  // copies the arrays
    // A zero state's new-gate accumulator at this zero point, as the compiler and a v5 file derive it.
    op.as<DerivedGru>().new_gate_zero_state_bias = zero_state_bias(op.as<DerivedGru>().gates[QLSTM_GRU_GATE_NEW], H, out.zero_point);
    for (size_t k = 0; k < op.as<DerivedGru>().gates.size(); ++k) {
      op.as<DerivedGru>().gates[k].w_x_scale = 0.01 * static_cast<double>(k + 1);
      op.as<DerivedGru>().gates[k].w_h_scale = 0.02 * static_cast<double>(k + 1 + d);
    }
    if (o.constant_state) {
      for (int32_t e = 0; e < H; ++e) op.initial_cell.push_back(static_cast<int16_t>(s16(rng)));
    }
  }
  CompiledModel m = assemble_program(std::move(ops), 2);
  m.name = "gru";
  m.batch_first = true;
  if (o.final_state) m.buffers[1].steps = QLSTM_BUFFER_ONE_STEP;
  if (o.constant_state) m.initial_hidden = StateSource::kConstant;
  hand::Fc f;
  hand::make_fc(f, 2 * H, O, true, false, rng);
  ProgramOp head;
  const AffineQuant head_out{0.1, f.params.output_zero_point};
  head.set(DerivedFc::from_kernel_params(f.params, out, head_out, std::vector<double>(O, 0.003)));
  head.input_buffer = 1;
  head.output_buffer = 2;
  m.ops.push_back(head);
  m.buffers.push_back({O, head_out, m.buffers[1].steps});
  m.validate("gru_model");
  return m;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_GRU_MODEL_H_
