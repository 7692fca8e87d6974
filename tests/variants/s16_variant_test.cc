// Every 16x8 variant (lstm_s16_variants, fc_s16_variants) built into this binary and supported by
// this CPU against the 16x8 reference with zero tolerance (the reference itself is checked against
// CMSIS-NN by ../shared/op-vectors: ctest cli_op_vectors_*_s16). Edge sizes of I, H and O (1, lane
// widths and their neighbours, and past 256 columns, where a 32-bit partial sum hands over to the
// int64 accumulator and the DSP operand is no longer expanded), 0 to 3 rows, both layouts, both
// directions, every step or the final state, wider output rows, stateless and stateful, typical
// and extreme values (int16 and int8 ends, biases over all of int64 so that the sums wrap, shifts
// over the whole accepted range, multipliers 0 and INT32_MAX). A variant this CPU lacks is skipped
// by name; one that declines a call (can_run) must return QLSTM_ERROR_NO_VARIANT.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "qlstm/kernels.h"
#include "scratch_buffer.h"

namespace {

const int32_t kEdge[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 300, 513};
constexpr int32_t kEdgeCount = sizeof kEdge / sizeof kEdge[0];

struct Rng {
  std::mt19937_64 g;
  int32_t pick(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(g); }
  int64_t any64() { return static_cast<int64_t>(g()); }
  int16_t s16(bool extreme) {
    if (extreme && g() % 2 == 0) return g() % 2 ? int16_t{32767} : int16_t{-32768};
    return static_cast<int16_t>(pick(-32768, 32767));
  }
  int8_t s8(bool extreme) {
    if (extreme && g() % 2 == 0) return g() % 2 ? int8_t{127} : int8_t{-128};
    return static_cast<int8_t>(pick(-128, 127));
  }
  qlstm_requant gate_requant(bool extreme) {
    if (extreme) {
      const int32_t m = g() % 4 == 0 ? (g() % 2 ? INT32_MAX : 0) : pick(1 << 30, INT32_MAX);
      return {m, pick(QLSTM_SHIFT_MIN, QLSTM_S16_SHIFT_MAX)};
    }
    return {pick(1 << 30, INT32_MAX), pick(-20, -8)};
  }
};

// ---- The LSTM.
struct LstmCase {
  qlstm_lstm_s16_params p{};
  std::array<std::vector<int8_t>, QLSTM_GATE_COUNT> wx, wh;
  std::array<std::vector<int64_t>, QLSTM_GATE_COUNT> bx, bh;
  std::vector<int16_t> input, h0, c0;
  bool stateful = false;
};

LstmCase make_lstm(Rng& r, int32_t n) {
  LstmCase c;
  const bool extreme = n % 3 == 2;
  qlstm_lstm_s16_params& p = c.p;
  const int32_t B = r.pick(1, 3), T = r.pick(0, 4);
  // Even cases sweep I over the edge sizes, odd ones H; the other is small.
  const int32_t I = n % 2 == 0 ? kEdge[(n / 2) % kEdgeCount] : r.pick(1, 20);
  const int32_t H = n % 2 == 1 ? kEdge[(n / 2) % kEdgeCount] : r.pick(1, 20);
  p.dims = {B, T, I, H};
  p.layout = r.g() % 2 ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    for (int32_t k = 0; k < H * I; ++k) c.wx[g].push_back(r.s8(extreme));
    for (int32_t k = 0; k < H * H; ++k) c.wh[g].push_back(r.s8(extreme));
    for (int32_t k = 0; k < H; ++k) {
      c.bx[g].push_back(extreme ? r.any64() : r.pick(-2000000, 2000000));
      c.bh[g].push_back(extreme ? r.any64() : r.pick(-2000000, 2000000));
    }
    qlstm_gate_s16_params& gp = p.gates[g];
    gp.input_to_q3_12 = r.gate_requant(extreme);
    gp.hidden_to_q3_12 = r.gate_requant(extreme);
    gp.input_weights = c.wx[g].data();
    gp.hidden_weights = c.wh[g].data();
    gp.input_effective_bias = c.bx[g].data();
    gp.hidden_effective_bias = c.bh[g].data();
    gp.activation = g == QLSTM_GATE_CELL && r.g() % 10 != 0 ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
  }
  p.cell_scale_power = r.pick(-16, -8);
  p.forget_times_cell_to_cell = {r.pick(1 << 30, INT32_MAX), r.pick(-20, -10)};
  p.input_times_cell_gate_to_cell = {r.pick(1 << 30, INT32_MAX), r.pick(-20, -10)};
  p.output_times_tanh_cell_to_hidden = {r.pick(1 << 30, INT32_MAX), extreme ? r.pick(-31, 31) : r.pick(-16, -1)};
  p.cell_clip = r.g() % 2 ? 0 : r.pick(1, 32767);
  p.time_direction = n % 4 == 3 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  p.output_steps = n % 5 == 2 ? QLSTM_OUTPUT_FINAL : n % 5 == 4 ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_ALL_STEPS;
  p.output_width = n % 7 == 1 ? H + r.pick(1, 5) : 0;
  for (int32_t k = 0; k < B * T * I; ++k) c.input.push_back(r.s16(extreme));
  for (int32_t k = 0; k < B * H; ++k) {
    c.h0.push_back(r.s16(extreme));
    c.c0.push_back(static_cast<int16_t>(r.g()));
  }
  c.stateful = r.g() % 2 != 0;
  return c;
}

struct LstmRun {
  qlstm_status status;
  std::vector<int16_t> output, h, c;
};

LstmRun run_lstm(const qlstm::LstmS16Variant& v, const LstmCase& c) {
  const qlstm_lstm_dims& d = c.p.dims;
  const int32_t W = c.p.output_width > 0 ? c.p.output_width : d.hidden_size;
  const int32_t steps = c.p.output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : d.time_steps;
  LstmRun r;
  r.output.assign(static_cast<size_t>(d.batch * steps * W), 0x5A5A);  // positions a call leaves alone stay so
  r.h = c.h0;
  r.c = c.stateful ? c.c0 : std::vector<int16_t>(c.c0.size(), 0x1234);  // a stateless call must clear it
  testing_support::ScratchBuffer scratch(qlstm_lstm_s16_scratch_bytes(&d));
  qlstm_lstm_s16_context ctx{scratch.data(), scratch.bytes(), r.c.data(), c.stateful ? r.h.data() : nullptr};
  r.status = qlstm::run_lstm_s16(v, &c.p, &ctx, c.input.data(), r.output.data());
  return r;
}

class LstmS16VariantTest : public ::testing::TestWithParam<const qlstm::LstmS16Variant*> {};

TEST_P(LstmS16VariantTest, MatchesReference) {
  const qlstm::LstmS16Variant& v = *GetParam();
  if (v.is_supported != nullptr && !v.is_supported()) GTEST_SKIP() << "variant " << v.name << ": not on this CPU";
  Rng r{std::mt19937_64(0x5EED516)};
  constexpr int32_t kCases = 4 * kEdgeCount * 3;  // every edge size for I and for H, in each regime
  int declined = 0;
  for (int32_t n = 0; n < kCases; ++n) {
    const LstmCase c = make_lstm(r, n);
    ASSERT_EQ(qlstm_lstm_s16_validate(&c.p, nullptr), QLSTM_OK) << "case " << n;
    const LstmRun want = run_lstm(qlstm::kLstmS16ReferenceVariant, c);
    ASSERT_EQ(want.status, QLSTM_OK);
    const LstmRun got = run_lstm(v, c);
    if (v.can_run != nullptr && !v.can_run(c.p)) {
      ++declined;
      EXPECT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << "case " << n;
      continue;
    }
    const qlstm_lstm_dims& d = c.p.dims;
    const auto where = [&] {
      return "case " + std::to_string(n) + ": B=" + std::to_string(d.batch) + " T=" + std::to_string(d.time_steps) +
             " I=" + std::to_string(d.input_size) + " H=" + std::to_string(d.hidden_size) +
             (c.stateful ? " stateful" : " stateless") + (n % 3 == 2 ? " extreme" : "");
    };
    ASSERT_EQ(got.status, QLSTM_OK) << where();
    ASSERT_EQ(got.output, want.output) << where();
    ASSERT_EQ(got.c, want.c) << where();
    ASSERT_EQ(got.h, want.h) << where();
  }
  if (declined > 0) std::printf("variant %s declined %d calls (can_run)\n", v.name, declined);
}

std::vector<const qlstm::LstmS16Variant*> lstm_variants() {
  size_t n = 0;
  const qlstm::LstmS16Variant* const* all = qlstm::lstm_s16_variants(&n);
  return {all, all + n};
}

INSTANTIATE_TEST_SUITE_P(All, LstmS16VariantTest, ::testing::ValuesIn(lstm_variants()),
                         [](const auto& info) { return std::string(info.param->name); });

// ---- The fully connected op.
class FcS16VariantTest : public ::testing::TestWithParam<const qlstm::FcS16Variant*> {};

TEST_P(FcS16VariantTest, MatchesReference) {
  const qlstm::FcS16Variant& v = *GetParam();
  if (v.is_supported != nullptr && !v.is_supported()) GTEST_SKIP() << "variant " << v.name << ": not on this CPU";
  Rng r{std::mt19937_64(0xFC516)};
  for (int32_t I : kEdge) {
    for (int32_t O : kEdge) {
      for (int32_t rows = 0; rows <= 3; ++rows) {
        const bool extreme = (I + O + rows) % 2 == 1;
        std::vector<int8_t> w(static_cast<size_t>(I) * static_cast<size_t>(O));
        for (auto& x : w) x = r.s8(extreme);
        std::vector<int64_t> bias(static_cast<size_t>(O));
        for (auto& b : bias) b = extreme ? r.any64() : r.pick(-2000000, 2000000);
        std::vector<int16_t> input_area(1 + static_cast<size_t>(rows * I));  // one value before: odd addresses
        for (auto& x : input_area) x = r.s16(extreme);
        qlstm_fc_s16_params p{};
        p.rows = rows;
        p.input_size = I;
        p.output_size = O;
        const qlstm_requant q = r.gate_requant(extreme);
        p.multiplier = q.multiplier;
        p.shift = q.shift;
        p.weights = w.data();
        p.bias = r.g() % 4 == 0 ? nullptr : bias.data();
        p.activation_min = r.g() % 2 ? -32768 : r.pick(-32768, 0);
        p.activation_max = r.g() % 2 ? 32767 : r.pick(p.activation_min, 32767);
        std::vector<int16_t> want(static_cast<size_t>(rows * O) + 4, 0x5A5A), got(want);
        ASSERT_EQ(qlstm::run_fc_s16(qlstm::kFcS16ReferenceVariant, &p, input_area.data() + 1, want.data()), QLSTM_OK);
        const qlstm_status st = qlstm::run_fc_s16(v, &p, input_area.data() + 1, got.data());
        if (v.can_run != nullptr && !v.can_run(p)) {
          EXPECT_EQ(st, QLSTM_ERROR_NO_VARIANT);
          continue;
        }
        ASSERT_EQ(st, QLSTM_OK);
        ASSERT_EQ(got, want) << "rows=" << rows << " I=" << I << " O=" << O << (extreme ? " extreme" : "")
                             << (p.bias == nullptr ? " no bias" : "");
      }
    }
  }
}

// The largest sums: every product 2^22 (or -(2^22 - 2^15)), so that a row of 512 or more columns
// leaves int32; the variant must keep them exact in 64 bits, as the reference does.
TEST_P(FcS16VariantTest, LongRowsOfExtremeProductsStayExact) {
  const qlstm::FcS16Variant& v = *GetParam();
  if (v.is_supported != nullptr && !v.is_supported()) GTEST_SKIP() << "variant " << v.name << ": not on this CPU";
  for (int32_t I : {511, 512, 513, 1024, 1031}) {
    for (int16_t x_value : {int16_t{-32768}, int16_t{32767}}) {
      constexpr int32_t O = 6;
      const std::vector<int8_t> w(static_cast<size_t>(I * O), int8_t{-128});
      const std::vector<int16_t> x(static_cast<size_t>(I), x_value);
      const std::vector<int64_t> bias(O, 0);
      qlstm_fc_s16_params p{};
      p.rows = 1;
      p.input_size = I;
      p.output_size = O;
      p.multiplier = 1 << 30;
      p.shift = -12;  // the sum / 2^13: int16 up to |sum| < 2^28
      p.weights = w.data();
      p.bias = bias.data();
      p.activation_min = -32768;
      p.activation_max = 32767;
      std::vector<int16_t> want(O), got(O);
      ASSERT_EQ(qlstm::run_fc_s16(qlstm::kFcS16ReferenceVariant, &p, x.data(), want.data()), QLSTM_OK);
      ASSERT_EQ(qlstm::run_fc_s16(v, &p, x.data(), got.data()), QLSTM_OK);
      ASSERT_EQ(got, want) << "I=" << I << " x=" << x_value;
    }
  }
}

std::vector<const qlstm::FcS16Variant*> fc_variants() {
  size_t n = 0;
  const qlstm::FcS16Variant* const* all = qlstm::fc_s16_variants(&n);
  return {all, all + n};
}

INSTANTIATE_TEST_SUITE_P(All, FcS16VariantTest, ::testing::ValuesIn(fc_variants()),
                         [](const auto& info) { return std::string(info.param->name); });

}  // namespace
