// GRU ops in a program: a program of one GRU equals a direct qlstm_gru_s8 call bit for bit
// (stateless and stateful, both layouts, every step and FINAL, T = 5, 1, 0), a bidirectional
// layer's forward and reverse GRU ops write the two halves of each row as two direct calls with
// output_width 2H do, a GRU followed by an FC head equals the two called one by one, the GRU's
// state is its Q0.15 hidden in the caller's int16 array (its int8 rows untouched), and the
// validation refuses a bad GRU op naming the field and the op before any op runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hand_programs.h"
#include "program_ops.h"
#include "random_gru.h"
#include "scratch_buffer.h"

namespace {

using namespace testing_support::hand;  // NOLINT: the programs and their sizes
using testing_support::refusal;
using testing_support::ScratchBuffer;
using testing_support::verdict;

// The GRU alone, as qlstm_gru_s8 runs it: stateful when hidden_q0_15 is not null. output_width:
// the row width it writes (0: H); the output is written into y (sized by the caller).
void gru_alone(const qlstm_gru_s8_params& params, int32_t T, int32_t output_width, const std::vector<int8_t>& x,
               int16_t* hidden_q0_15, int8_t* y) {
  qlstm_gru_s8_params p = params;
  p.dims.time_steps = T;
  p.output_width = output_width;
  ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  qlstm_gru_s8_context c = {scratch.data(), scratch.bytes(), hidden_q0_15};
  ASSERT_EQ(qlstm_gru_s8(&p, &c, x.empty() ? nullptr : x.data(), y), QLSTM_OK);
}

std::vector<int16_t> random_q0_15(size_t n, std::mt19937_64& rng) { return testing_support::hand::random_s16(n, rng); }

struct Case {
  bool time_major;
  int32_t output_steps;
  int32_t time_steps;
  bool stateful;
  std::string name() const {
    return std::string(time_major ? "time-major" : "batch-major") +
           (output_steps == QLSTM_OUTPUT_FINAL ? " final" : " every step") + " T=" + std::to_string(time_steps) +
           (stateful ? " stateful" : " stateless");
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const bool time_major : {false, true}) {
    for (const int32_t steps : {QLSTM_OUTPUT_ALL_STEPS, QLSTM_OUTPUT_FINAL}) {
      for (const int32_t t : {T, 1, 0}) {
        for (const bool stateful : {false, true}) cases.push_back({time_major, steps, t, stateful});
      }
    }
  }
  return cases;
}

// The program over x from the Q0.15 state h0 (stateless: none): its output of `out` bytes and,
// stateful, its final state in *state.
std::vector<int8_t> program_run(Built& b, const Case& c, const std::vector<int8_t>& x, size_t out,
                                const std::vector<int16_t>& h0, std::vector<int16_t>* state) {
  std::vector<int8_t> y(out, 0x55), hidden(b.state_values, 0);
  *state = h0;
  EXPECT_EQ(qlstm_program_run(&b.program, &b.ctx, x.empty() ? nullptr : x.data(), y.data(), c.time_steps,
                              c.stateful ? hidden.data() : nullptr, c.stateful ? state->data() : nullptr),
            QLSTM_OK);
  return y;
}

TEST(GruProgram, OneGruEqualsTheKernel) {
  std::mt19937_64 rng(515);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name());
    Built b;
    build_gru(b, c.time_major, c.output_steps, false, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * c.time_steps * I), rng);
    const size_t out = static_cast<size_t>(B * H * (c.output_steps == QLSTM_OUTPUT_FINAL ? 1 : c.time_steps));
    // The state: the int8 rows (unused by a GRU: must stay as they are) and the Q0.15 hidden.
    const std::vector<int8_t> h8 = random_s8(b.state_values, rng);
    const std::vector<int16_t> h0 = random_q0_15(b.state_values, rng);
    std::vector<int16_t> direct_state = h0;
    std::vector<int8_t> want(out, 0x55), got(out, 0x55);
    gru_alone(b.grus[0].params, c.time_steps, 0, x, c.stateful ? direct_state.data() : nullptr, want.data());
    std::vector<int8_t> hidden = h8;
    std::vector<int16_t> cell = h0;
    ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.empty() ? nullptr : x.data(), got.data(), c.time_steps,
                                c.stateful ? hidden.data() : nullptr, c.stateful ? cell.data() : nullptr),
              QLSTM_OK);
    EXPECT_EQ(got, want);
    EXPECT_EQ(hidden, h8);  // a GRU's int8 state rows are not its state
    if (c.stateful) {
      EXPECT_EQ(cell, direct_state);
      if (c.time_steps > 0) {
        EXPECT_NE(cell, h0);  // the state moved on: the comparison can fail
      }
    }
  }
}

TEST(GruProgram, StatefulCallsContinueOneSequence) {
  std::mt19937_64 rng(516);
  for (const bool time_major : {false, true}) {
    Built b;
    build_gru(b, time_major, QLSTM_OUTPUT_ALL_STEPS, false, rng);
    // Two calls of T steps on one state equal one stateless call of 2T steps from zero.
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * 2 * T * I), rng);
    std::vector<int8_t> whole(static_cast<size_t>(B * 2 * T * H));
    gru_alone(b.grus[0].params, 2 * T, 0, x, nullptr, whole.data());
    std::vector<int8_t> hidden(b.state_values, 0);
    std::vector<int16_t> cell(b.state_values, 0);
    std::vector<int8_t> y(whole.size());
    for (int32_t half = 0; half < 2; ++half) {
      std::vector<int8_t> xc(static_cast<size_t>(B * T * I)), yc(static_cast<size_t>(B * T * H));
      for (int32_t bb = 0; bb < B; ++bb) {
        for (int32_t t = 0; t < T; ++t) {
          const int32_t from = time_major ? (half * T + t) * B + bb : bb * 2 * T + half * T + t;
          const int32_t to = time_major ? t * B + bb : bb * T + t;
          std::copy_n(x.begin() + from * I, I, xc.begin() + to * I);
        }
      }
      ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, xc.data(), yc.data(), T, hidden.data(), cell.data()), QLSTM_OK);
      for (int32_t bb = 0; bb < B; ++bb) {
        for (int32_t t = 0; t < T; ++t) {
          const int32_t to = time_major ? (half * T + t) * B + bb : bb * 2 * T + half * T + t;
          const int32_t from = time_major ? t * B + bb : bb * T + t;
          std::copy_n(yc.begin() + from * H, H, y.begin() + to * H);
        }
      }
    }
    EXPECT_EQ(y, whole);
  }
}

TEST(GruProgram, BidirectionalHalvesEqualTwoDirectCalls) {
  std::mt19937_64 rng(517);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name());
    Built b;
    build_bidirectional_gru(b, c.time_major, c.output_steps, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * c.time_steps * I), rng);
    const size_t out = static_cast<size_t>(B * 2 * H * (c.output_steps == QLSTM_OUTPUT_FINAL ? 1 : c.time_steps));
    const std::vector<int16_t> h0 = random_q0_15(b.state_values, rng);
    std::vector<int16_t> direct_state = h0;
    std::vector<int8_t> want(out, 0x55);
    for (int32_t d = 0; d < 2; ++d) {
      gru_alone(b.grus[static_cast<size_t>(d)].params, c.time_steps, 2 * H, x,
                c.stateful ? direct_state.data() + d * B * H : nullptr, want.data() + d * H);
    }
    std::vector<int16_t> cell;
    EXPECT_EQ(program_run(b, c, x, out, h0, &cell), want);
    if (c.stateful) {
      EXPECT_EQ(cell, direct_state);
    }
  }
}

TEST(GruProgram, GruThenFcHeadEqualsTheOpsOneByOne) {
  std::mt19937_64 rng(518);
  for (const Case& c : all_cases()) {
    if (c.time_steps == 0 && c.output_steps != QLSTM_OUTPUT_FINAL) continue;  // nothing for the head to read
    SCOPED_TRACE(c.name());
    Built b;
    build_gru(b, c.time_major, c.output_steps, true, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * c.time_steps * I), rng);
    const size_t positions = static_cast<size_t>(B * (c.output_steps == QLSTM_OUTPUT_FINAL ? 1 : c.time_steps));
    const std::vector<int16_t> h0 = random_q0_15(b.state_values, rng);
    std::vector<int16_t> direct_state = h0;
    std::vector<int8_t> y(positions * H);
    gru_alone(b.grus[0].params, c.time_steps, 0, x, c.stateful ? direct_state.data() : nullptr, y.data());
    std::vector<int16_t> cell;
    EXPECT_EQ(program_run(b, c, x, positions * O, h0, &cell), fc_alone(b.fcs[0].params, y));
    if (c.stateful) {
      EXPECT_EQ(cell, direct_state);
    }
  }
}

// Each bad GRU op is refused, naming the field and the op, and leaves output and state untouched.
TEST(GruProgram, ValidationRefusesBadGruOpsNamingTheField) {
  struct Bad {
    const char* name;
    std::function<void(Built&)> edit;
    std::string want;
  };
  const std::vector<Bad> bads = {
      {"gate shift", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).gates[QLSTM_GRU_GATE_RESET].input_to_q3_12.shift = 40; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "gates[reset].input_to_q3_12.shift", 1)},
      {"gate weights", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).gates[QLSTM_GRU_GATE_NEW].hidden_weights = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "gates[new].hidden_weights", 1)},
      {"output requant", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).hidden_q0_15_to_output.multiplier = -1; },
       refusal(QLSTM_ERROR_BAD_MULTIPLIER, "hidden_q0_15_to_output.multiplier", 1)},
      {"zero point", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).output_zero_point = 300; },
       refusal(QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point", 1)},
      {"batch", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).dims.batch = B + 1; }, refusal(QLSTM_ERROR_BAD_PROGRAM, "dims.batch", 1)},
      {"layout", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).layout = 1 - b.layout; }, refusal(QLSTM_ERROR_BAD_PROGRAM, "layout", 1)},
      {"input size", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).dims.input_size = H + 1; },
       refusal(QLSTM_ERROR_BAD_PROGRAM, "dims.input_size", 1)},
      {"output offset", [](Built& b) { b.ops[1].output_offset = 1; }, refusal(QLSTM_ERROR_BAD_PROGRAM, "output_offset", 1)},
      {"output steps", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).output_steps = QLSTM_OUTPUT_FINAL; },
       refusal(QLSTM_ERROR_BAD_PROGRAM, "output_steps", 1)},
      {"state offset", [](Built& b) { b.ops[1].state_offset = 1; }, refusal(QLSTM_ERROR_BAD_PROGRAM, "state_offset", 1)},
      {"direction", [](Built& b) { block<qlstm_gru_s8_params>(b.ops[1]).time_direction = 7; },
       refusal(QLSTM_ERROR_BAD_DIRECTION, "time_direction", 1)},
      {"scratch", [](Built& b) { b.ctx.scratch_bytes -= 1; },
       refusal(QLSTM_ERROR_SCRATCH_TOO_SMALL, "scratch_bytes", -1)},
      {"no scratch", [](Built& b) { b.ctx.scratch = nullptr; }, refusal(QLSTM_ERROR_NULL_POINTER, "scratch", -1)},
  };
  std::mt19937_64 rng(519);
  for (const Bad& bad : bads) {
    SCOPED_TRACE(bad.name);
    // Front FC -> GRU (state rows 0 ... B x H) -> FC: the GRU is op 1.
    Built b;
    build_gru(b, true, QLSTM_OUTPUT_ALL_STEPS, true, rng);
    make_fc(b.fcs.emplace_back(), I, I, false, false, rng);
    qlstm_op front = testing_support::program_op(QLSTM_OP_FULLY_CONNECTED_S8, 0, 1);
    set_block(front, b.fcs.back().params);
    b.ops.insert(b.ops.begin(), front);
    b.ops[1].input_buffer = 1, b.ops[1].output_buffer = 2;
    b.ops[2].input_buffer = 2, b.ops[2].output_buffer = 3;
    b.widths = {I, I, H, O};
    b.steps = {kEvery, kEvery, kEvery, kEvery};
    b.finish();
    ASSERT_EQ(verdict(&b.program, &b.ctx, T), "ok");
    bad.edit(b);
    EXPECT_EQ(verdict(&b.program, &b.ctx, T), bad.want);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    std::vector<int8_t> y(static_cast<size_t>(B * T * O), 0x33), hidden(b.state_values, 0x11);
    std::vector<int16_t> cell(b.state_values, 0x2222);
    EXPECT_NE(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, hidden.data(), cell.data()), QLSTM_OK);
    EXPECT_EQ(y, std::vector<int8_t>(y.size(), 0x33));
    EXPECT_EQ(cell, std::vector<int16_t>(cell.size(), 0x2222));
  }
}

TEST(GruProgram, StatelessGruNeedsNoCell) {
  std::mt19937_64 rng(520);
  Built b;
  build_gru(b, false, QLSTM_OUTPUT_ALL_STEPS, false, rng);
  b.ctx.cell = nullptr;  // only an LSTM op uses it
  EXPECT_EQ(verdict(&b.program, &b.ctx, T), "ok");
  EXPECT_EQ(qlstm_op_state_size(&b.ops[0]), H);
  EXPECT_EQ(qlstm_op_scratch_bytes(&b.ops[0]), qlstm_gru_s8_scratch_bytes(&block<qlstm_gru_s8_params>(b.ops[0]).dims));
  EXPECT_GT(qlstm_op_scratch_bytes(&b.ops[0]), 0u);
}

}  // namespace
