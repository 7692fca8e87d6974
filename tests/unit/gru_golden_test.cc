// The GRU kernel on the golden vectors of tests/gru_golden (the project's independent Python
// model of docs/arithmetic.md §13): every case equal, output and final Q0.15 state; a stateless
// call equals a stateful one from a zero state when the case's biases are consistent as the
// compiler derives them (every case but the extreme regime's random ones).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/gru_s8.h"
#include "scratch_buffer.h"

namespace {

using nlohmann::json;

template <class T>
std::vector<T> ints(const json& j) {
  std::vector<T> v;
  for (const json& x : j) v.push_back(static_cast<T>(x.get<int64_t>()));
  return v;
}

qlstm_requant requant(const json& j) { return {j.at("multiplier").get<int32_t>(), j.at("shift").get<int32_t>()}; }

// One case's arrays, owned, and a parameter block pointing into them.
struct GoldenCase {
  std::vector<int8_t> weights[QLSTM_GRU_GATE_COUNT][2];
  std::vector<int32_t> biases[QLSTM_GRU_GATE_COUNT][2];
  std::vector<int32_t> new_gate_zero_state_bias;
  qlstm_gru_s8_params params{};

  explicit GoldenCase(const json& c) {
    params.dims = {c.at("batch"), c.at("time_steps"), c.at("input_size"), c.at("hidden_size")};
    params.layout = c.at("time_major").get<bool>() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
    params.time_direction = c.at("reverse").get<bool>() ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    params.output_steps = c.at("output_final").get<bool>() ? QLSTM_OUTPUT_FINAL : QLSTM_OUTPUT_ALL_STEPS;
    params.output_zero_point = c.at("output_zero_point");
    params.reset_times_hidden_to_q3_12 = requant(c.at("reset_times_hidden_to_q3_12"));
    params.update_times_difference_to_q0_15 = requant(c.at("update_times_difference_to_q0_15"));
    params.hidden_q0_15_to_output = requant(c.at("hidden_q0_15_to_output"));
    new_gate_zero_state_bias = ints<int32_t>(c.at("new_gate_zero_state_bias"));
    params.new_gate_zero_state_bias = new_gate_zero_state_bias.data();
    const char* names[QLSTM_GRU_GATE_COUNT] = {"reset", "update", "new"};
    for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
      const json& gate = c.at("gates").at(names[g]);
      for (int side = 0; side < 2; ++side) {
        const json& s = gate.at(side == 0 ? "input" : "hidden");
        weights[g][side] = ints<int8_t>(s.at("weights"));
        biases[g][side] = ints<int32_t>(s.at("effective_bias"));
      }
      qlstm_gru_gate_s8_params& p = params.gates[g];
      p.input_to_q3_12 = requant(gate.at("input"));
      p.input_weights = weights[g][0].data();
      p.input_effective_bias = biases[g][0].data();
      p.hidden_to_q3_12 = requant(gate.at("hidden"));
      p.hidden_weights = weights[g][1].data();
      p.hidden_effective_bias = biases[g][1].data();
    }
  }

  // A zero state (h8 = zp_h everywhere) gives the recurrent accumulators a stateless first step
  // uses: 0 for r and z, new_gate_zero_state_bias for n (modulo 2^32).
  bool zero_state_consistent() const {
    const int32_t H = params.dims.hidden_size;
    for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
      const qlstm_gru_gate_s8_params& p = params.gates[g];
      for (int32_t r = 0; r < H; ++r) {
        uint32_t acc = static_cast<uint32_t>(p.hidden_effective_bias[r]);
        for (int32_t j = 0; j < H; ++j) acc += static_cast<uint32_t>(params.output_zero_point * p.hidden_weights[r * H + j]);
        const uint32_t want = g == QLSTM_GRU_GATE_NEW ? static_cast<uint32_t>(params.new_gate_zero_state_bias[r]) : 0u;
        if (acc != want) return false;
      }
    }
    return true;
  }
};

TEST(GruGolden, EveryCaseEqualsThePythonModel) {
  std::ifstream f(QLSTM_GRU_GOLDEN_FILE);
  ASSERT_TRUE(f) << QLSTM_GRU_GOLDEN_FILE;
  const json doc = json::parse(f);
  ASSERT_EQ(doc.at("format"), "gru-s8-kernel-vectors/2");
  size_t cases = 0, stateless = 0, stateless_consistent = 0;
  for (const json& c : doc.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const GoldenCase gc(c);
    const qlstm_gru_s8_params& p = gc.params;
    const std::vector<int8_t> x = ints<int8_t>(c.at("input"));
    const std::vector<int8_t> want = ints<int8_t>(c.at("expected").at("output"));
    const std::vector<int16_t> want_final = ints<int16_t>(c.at("expected").at("final_hidden_q0_15"));
    testing_support::ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
    const size_t H = static_cast<size_t>(p.dims.hidden_size), B = static_cast<size_t>(p.dims.batch);
    std::vector<int8_t> y(want.size(), 0);
    if (c.at("initial_hidden_q0_15").is_null()) {
      ++stateless;
      qlstm_gru_s8_context none = {scratch.data(), scratch.bytes(), nullptr};
      ASSERT_EQ(qlstm_gru_s8(&p, &none, x.data(), y.data()), QLSTM_OK);
      EXPECT_EQ(y, want);
      // From a zero state, stateful: the same output (when consistent) and the final state.
      std::vector<int16_t> state(B * H, 0);
      std::vector<int8_t> from_zero(want.size(), 0);
      qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
      ASSERT_EQ(qlstm_gru_s8(&p, &ctx, x.data(), from_zero.data()), QLSTM_OK);
      if (gc.zero_state_consistent()) {
        ++stateless_consistent;
        EXPECT_EQ(from_zero, want);
        EXPECT_EQ(state, want_final);
      }
    } else {
      std::vector<int16_t> state = ints<int16_t>(c.at("initial_hidden_q0_15"));
      qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
      ASSERT_EQ(qlstm_gru_s8(&p, &ctx, x.data(), y.data()), QLSTM_OK);
      EXPECT_EQ(y, want);
      EXPECT_EQ(state, want_final);
    }
    ++cases;
  }
  EXPECT_EQ(cases, 98u);
  // Both kinds of stateless case are there: the consistent ones (typical, wide) and the others.
  EXPECT_GT(stateless_consistent, 0u);
  EXPECT_LT(stateless_consistent, stateless);
}

}  // namespace
