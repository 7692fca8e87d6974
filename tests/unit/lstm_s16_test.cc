// The 16x8 LSTM's parameter checks (each refusal names its field) and its sequence options
// (reverse time, output width, final state only, stateful continuation) on a random call; the
// arithmetic itself is checked bit for bit by ../shared/op-vectors/lstm_s16.json (ctest
// cli_op_vectors_lstm_s16).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/lstm_s16.h"

namespace {

struct Lstm {
  static constexpr int32_t B = 2, T = 5, I = 3, H = 4;
  std::array<std::vector<int8_t>, QLSTM_GATE_COUNT> wx, wh;
  std::array<std::vector<int64_t>, QLSTM_GATE_COUNT> bx, bh;
  std::vector<int16_t> input;
  qlstm_lstm_s16_params p{};

  explicit Lstm(uint32_t seed) {
    std::mt19937 rng(seed);
    auto s8 = [&] { return static_cast<int8_t>(static_cast<int32_t>(rng() % 256) - 128); };
    p.dims = {B, T, I, H};
    p.layout = QLSTM_LAYOUT_BATCH_MAJOR;
    for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
      for (int k = 0; k < H * I; ++k) wx[g].push_back(s8());
      for (int k = 0; k < H * H; ++k) wh[g].push_back(s8());
      for (int k = 0; k < H; ++k) {
        bx[g].push_back(static_cast<int64_t>(rng() % 2000001) - 1000000);
        bh[g].push_back(0);
      }
      qlstm_gate_s16_params& gp = p.gates[g];
      gp.input_to_q3_12 = {1518500250, -9};
      gp.hidden_to_q3_12 = {1518500250, -9};
      gp.input_weights = wx[g].data();
      gp.hidden_weights = wh[g].data();
      gp.input_effective_bias = bx[g].data();
      gp.hidden_effective_bias = bh[g].data();
      gp.activation = g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
    }
    p.forget_times_cell_to_cell = {1073741824, -14};
    p.input_times_cell_gate_to_cell = {1073741824, -18};
    p.output_times_tanh_cell_to_hidden = {1073741824, -14};
    p.cell_scale_power = -11;
    for (int k = 0; k < B * T * I; ++k) input.push_back(static_cast<int16_t>(static_cast<int32_t>(rng() % 65536) - 32768));
  }

  // A stateless (or, with h and c, stateful) call; output [B][T][W] or [B][W].
  std::vector<int16_t> run(const qlstm_lstm_s16_params& q, const std::vector<int16_t>& x, int16_t* h = nullptr,
                           int16_t* c = nullptr) const {
    const int32_t W = q.output_width > 0 ? q.output_width : H;
    std::vector<int16_t> out(static_cast<size_t>(B * (q.output_steps == QLSTM_OUTPUT_FINAL ? 1 : q.dims.time_steps) * W), -1);
    std::vector<int16_t> cell(B * H, 0);
    alignas(QLSTM_SCRATCH_ALIGNMENT) static int16_t scratch[3 * B * H];
    qlstm_lstm_s16_context ctx{scratch, sizeof scratch, c != nullptr ? c : cell.data(), h};
    EXPECT_EQ(qlstm_lstm_s16(&q, &ctx, x.data(), out.data()), QLSTM_OK);
    return out;
  }
};

TEST(LstmS16Validate, NamesEachField) {
  struct Edit {
    const char* field;
    void (*edit)(qlstm_lstm_s16_params&);
  };
  const Edit edits[] = {
      {"dims", [](qlstm_lstm_s16_params& p) { p.dims.hidden_size = 0; }},
      {"layout", [](qlstm_lstm_s16_params& p) { p.layout = 2; }},
      {"time_direction", [](qlstm_lstm_s16_params& p) { p.time_direction = 2; }},
      {"output_steps", [](qlstm_lstm_s16_params& p) { p.output_steps = 3; }},
      {"output_width", [](qlstm_lstm_s16_params& p) { p.output_width = 3; }},
      {"gates[cell].input_effective_bias", [](qlstm_lstm_s16_params& p) { p.gates[2].input_effective_bias = nullptr; }},
      {"gates[forget].input_to_q3_12.multiplier", [](qlstm_lstm_s16_params& p) { p.gates[0].input_to_q3_12.multiplier = -1; }},
      {"gates[input].hidden_to_q3_12.shift", [](qlstm_lstm_s16_params& p) { p.gates[1].hidden_to_q3_12.shift = 15; }},
      {"gates[output].input_to_q3_12.shift", [](qlstm_lstm_s16_params& p) { p.gates[3].input_to_q3_12.shift = -32; }},
      {"gates[output].activation", [](qlstm_lstm_s16_params& p) { p.gates[3].activation = 7; }},
      // HardSigmoid is the int8 LSTM's only (its line is in qlstm_gate_s8_params).
      {"gates[input].activation", [](qlstm_lstm_s16_params& p) { p.gates[1].activation = QLSTM_ACTIVATION_HARD_SIGMOID; }},
      {"forget_times_cell_to_cell.shift", [](qlstm_lstm_s16_params& p) { p.forget_times_cell_to_cell.shift = 32; }},
      {"output_times_tanh_cell_to_hidden.multiplier",
       [](qlstm_lstm_s16_params& p) { p.output_times_tanh_cell_to_hidden.multiplier = -5; }},
      {"cell_scale_power", [](qlstm_lstm_s16_params& p) { p.cell_scale_power = QLSTM_CELL_SCALE_POWER_MAX + 1; }},
      {"cell_clip", [](qlstm_lstm_s16_params& p) { p.cell_clip = QLSTM_CELL_CLIP_MAX + 1; }},
  };
  const Lstm base(1);
  const char* field = "unset";
  EXPECT_EQ(qlstm_lstm_s16_validate(&base.p, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  for (const Edit& e : edits) {
    qlstm_lstm_s16_params q = base.p;
    e.edit(q);
    field = nullptr;
    EXPECT_NE(qlstm_lstm_s16_validate(&q, &field), QLSTM_OK) << e.field;
    EXPECT_STREQ(field != nullptr ? field : "(none)", e.field);
  }
  // The 16x8 gates take shifts up to QLSTM_S16_SHIFT_MAX; the elementwise ones the int8 range.
  qlstm_lstm_s16_params q = base.p;
  q.gates[1].hidden_to_q3_12.shift = QLSTM_S16_SHIFT_MAX;
  q.output_times_tanh_cell_to_hidden.shift = QLSTM_SHIFT_MAX;
  EXPECT_EQ(qlstm_lstm_s16_validate(&q, nullptr), QLSTM_OK);
}

TEST(LstmS16Sequence, ReverseIsForwardOnReversedTime) {
  const Lstm l(2);
  std::vector<int16_t> reversed(l.input.size());
  for (int b = 0; b < Lstm::B; ++b) {
    for (int t = 0; t < Lstm::T; ++t) {
      for (int i = 0; i < Lstm::I; ++i) {
        reversed[(b * Lstm::T + (Lstm::T - 1 - t)) * Lstm::I + i] = l.input[(b * Lstm::T + t) * Lstm::I + i];
      }
    }
  }
  const std::vector<int16_t> fwd = l.run(l.p, reversed);
  qlstm_lstm_s16_params q = l.p;
  q.time_direction = QLSTM_TIME_REVERSE;
  const std::vector<int16_t> rev = l.run(q, l.input);
  for (int b = 0; b < Lstm::B; ++b) {
    for (int t = 0; t < Lstm::T; ++t) {
      for (int h = 0; h < Lstm::H; ++h) {
        EXPECT_EQ(rev[(b * Lstm::T + t) * Lstm::H + h], fwd[(b * Lstm::T + (Lstm::T - 1 - t)) * Lstm::H + h]);
      }
    }
  }
}

TEST(LstmS16Sequence, OutputWidthFinalStepAndStateMatchTheDenseCall) {
  const Lstm l(3);
  const std::vector<int16_t> dense = l.run(l.p, l.input);
  bool nonzero = false;
  for (int16_t v : dense) nonzero = nonzero || v != 0;
  EXPECT_TRUE(nonzero);
  qlstm_lstm_s16_params wide = l.p;
  wide.output_width = Lstm::H + 3;
  const std::vector<int16_t> w = l.run(wide, l.input);
  qlstm_lstm_s16_params final_only = l.p;
  final_only.output_steps = QLSTM_OUTPUT_FINAL;
  const std::vector<int16_t> last = l.run(final_only, l.input);
  for (int b = 0; b < Lstm::B; ++b) {
    for (int h = 0; h < Lstm::H; ++h) {
      for (int t = 0; t < Lstm::T; ++t) {
        EXPECT_EQ(w[(b * Lstm::T + t) * (Lstm::H + 3) + h], dense[(b * Lstm::T + t) * Lstm::H + h]);
      }
      EXPECT_EQ(last[b * Lstm::H + h], dense[(b * Lstm::T + Lstm::T - 1) * Lstm::H + h]);
    }
  }
  // Two stateful calls of 2 and 3 steps from a reset state compute the one call of 5.
  std::vector<int16_t> h(Lstm::B * Lstm::H, 123), c(Lstm::B * Lstm::H, 456);
  qlstm_lstm_s16_context ctx{nullptr, 0, c.data(), h.data()};
  ASSERT_EQ(qlstm_lstm_s16_reset_state(&l.p, &ctx), QLSTM_OK);
  EXPECT_EQ(h, std::vector<int16_t>(Lstm::B * Lstm::H, 0));
  for (const auto& [t0, steps] : {std::pair<int, int>{0, 2}, std::pair<int, int>{2, 3}}) {
    qlstm_lstm_s16_params part = l.p;
    part.dims.time_steps = steps;
    std::vector<int16_t> x;
    for (int b = 0; b < Lstm::B; ++b) {
      x.insert(x.end(), l.input.begin() + (b * Lstm::T + t0) * Lstm::I,
               l.input.begin() + (b * Lstm::T + t0 + steps) * Lstm::I);
    }
    const std::vector<int16_t> y = l.run(part, x, h.data(), c.data());
    for (int b = 0; b < Lstm::B; ++b) {
      for (int k = 0; k < steps * Lstm::H; ++k) {
        EXPECT_EQ(y[b * steps * Lstm::H + k], dense[(b * Lstm::T + t0) * Lstm::H + k]);
      }
    }
  }
}

}  // namespace
