// Every fully connected variant built into this binary and supported by this CPU against the
// reference (runtime/src/fully_connected/fc_s8.cc) with zero tolerance, and the reference against
// this test's own 64-bit model of the formula (tests/support/naive_lstm.h's primitives): edge
// sizes of I and O (1, lane widths and their neighbours, 127), 0, 1 and 3 rows, one multiplier or
// one per output, typical and extreme weights, inputs, biases and zero points, narrow and full
// activation clamps, shifts left and right. A variant this CPU lacks returns
// QLSTM_ERROR_UNSUPPORTED when run explicitly and is skipped by name; one that declines a call
// (can_run) must return QLSTM_ERROR_NO_VARIANT for it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/kernels.h"

namespace {

std::vector<const qlstm::FcS8Variant*> all_fc_variants() {
  size_t n = 0;
  const qlstm::FcS8Variant* const* all = qlstm::fc_s8_variants(&n);
  return std::vector<const qlstm::FcS8Variant*>(all, all + n);
}

const int kEdgeSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 64, 127};
const int kRows[] = {0, 1, 3};
enum class Regime { kTypical, kExtreme };

// One call's parameters and the arrays they point into.
struct FcCase {
  qlstm_fc_s8_params p{};
  std::vector<int8_t> weights;
  std::vector<int32_t> bias, multipliers, shifts;
  std::vector<int8_t> input_area;  // one byte before the input: unaligned rows
  const int8_t* input() const { return input_area.data() + 1; }
};

int32_t pick(std::mt19937_64& rng, int32_t lo, int32_t hi) {
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

// Extreme: int8 values at the ends of their range, biases over all of int32 (the sums wrap),
// multipliers at their bounds, shifts over [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX].
int8_t random_s8(std::mt19937_64& rng, Regime regime) {
  if (regime == Regime::kExtreme && rng() % 2 == 0) return rng() % 2 ? int8_t{127} : int8_t{-128};
  return static_cast<int8_t>(pick(rng, -128, 127));
}

void make_case(FcCase& c, std::mt19937_64& rng, int rows, int I, int O, bool per_channel, Regime regime) {
  const bool extreme = regime == Regime::kExtreme;
  c.weights.resize(static_cast<size_t>(I) * O);
  for (auto& w : c.weights) w = random_s8(rng, regime);
  c.bias.resize(static_cast<size_t>(O));
  for (auto& b : c.bias) b = extreme ? static_cast<int32_t>(rng()) : pick(rng, -20000, 20000);
  const int requants = per_channel ? O : 1;
  c.multipliers.resize(static_cast<size_t>(requants));
  c.shifts.resize(static_cast<size_t>(requants));
  for (int k = 0; k < requants; ++k) {
    const int32_t m_lo = 1 << 30;
    c.multipliers[k] = extreme && rng() % 4 == 0 ? (rng() % 2 ? INT32_MAX : 0) : pick(rng, m_lo, INT32_MAX);
    c.shifts[k] = extreme ? pick(rng, QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX) : pick(rng, -12, 2);
  }
  c.input_area.resize(1 + static_cast<size_t>(rows) * I);
  for (auto& x : c.input_area) x = random_s8(rng, regime);
  qlstm_fc_s8_params& p = c.p;
  p.rows = rows;
  p.input_size = I;
  p.output_size = O;
  p.per_channel = per_channel ? 1 : 0;
  p.multipliers = c.multipliers.data();
  p.shifts = c.shifts.data();
  p.weights = c.weights.data();
  p.effective_bias = c.bias.data();
  p.output_zero_point = extreme ? (rng() % 2 ? 127 : -128) : pick(rng, -128, 127);
  switch (rng() % 3) {
    case 0:  // no clamp
      p.activation_min = -128;
      p.activation_max = 127;
      break;
    case 1:  // a fused ReLU
      p.activation_min = p.output_zero_point;
      p.activation_max = 127;
      break;
    default:  // a narrow Clip, possibly a single value
      p.activation_min = pick(rng, -128, 127);
      p.activation_max = pick(rng, p.activation_min, std::min(127, p.activation_min + 20));
  }
}

// The formula of fully_connected_s8.h in 64-bit arithmetic, wrapped to 32 bits where it says so.
std::vector<int8_t> model(const FcCase& c) {
  const qlstm_fc_s8_params& p = c.p;
  std::vector<int8_t> y(static_cast<size_t>(p.rows) * p.output_size);
  for (int r = 0; r < p.rows; ++r) {
    for (int o = 0; o < p.output_size; ++o) {
      naive::i64 acc = p.effective_bias[o];
      for (int i = 0; i < p.input_size; ++i) {
        acc += naive::i64{c.input()[r * p.input_size + i]} * p.weights[o * p.input_size + i];
      }
      const int q = p.per_channel ? o : 0;
      const naive::i64 v = naive::to_s32(naive::requantize(naive::to_s32(acc), p.multipliers[q], p.shifts[q]) +
                                         p.output_zero_point);
      y[static_cast<size_t>(r) * p.output_size + o] =
          static_cast<int8_t>(naive::clamp(v, p.activation_min, p.activation_max));
    }
  }
  return y;
}

constexpr size_t kGuardBytes = 16;
constexpr int8_t kGuard = 0x5A;

struct FcRun {
  qlstm_status status;
  std::vector<int8_t> out;  // rows * O, then the guard bytes
};

FcRun run(const qlstm::FcS8Variant& v, const FcCase& c) {
  FcRun r;
  r.out.assign(static_cast<size_t>(c.p.rows) * c.p.output_size + kGuardBytes, kGuard);
  r.status = qlstm::run_fc_s8(v, &c.p, c.p.rows > 0 ? c.input() : nullptr, c.p.rows > 0 ? r.out.data() : nullptr);
  return r;
}

class FcVariantTest : public ::testing::TestWithParam<const qlstm::FcS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::FcS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      std::mt19937_64 rng(1);
      FcCase c;
      make_case(c, rng, 1, 4, 4, false, Regime::kTypical);
      ASSERT_EQ(run(v, c).status, QLSTM_ERROR_UNSUPPORTED) << v.name << " run explicitly on a CPU that lacks it";
      GTEST_SKIP() << "FC variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
  void TearDown() override {
    if (declined_ > 0) {
      std::printf("FC variant %s declined %d of %d calls (can_run): QLSTM_ERROR_NO_VARIANT\n", GetParam()->name,
                  declined_, declined_ + compared_);
    }
  }
  void check(const FcCase& c, const std::string& what) {
    const qlstm::FcS8Variant& v = *GetParam();
    const FcRun got = run(v, c);
    if (v.can_run != nullptr && !v.can_run(c.p)) {
      ASSERT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << what;
      ++declined_;
      return;
    }
    ++compared_;
    const FcRun ref = run(qlstm::kFcS8ReferenceVariant, c);
    ASSERT_EQ(ref.status, QLSTM_OK) << what;
    ASSERT_EQ(got.status, QLSTM_OK) << what;
    std::vector<int8_t> want = model(c);
    want.insert(want.end(), kGuardBytes, kGuard);
    ASSERT_EQ(ref.out, want) << what << ": the reference against the model";
    ASSERT_EQ(got.out, ref.out) << what << ": against the reference (or wrote past the output)";
  }
  int compared_ = 0;
  int declined_ = 0;
};

std::string describe(const qlstm::FcS8Variant& v, const FcCase& c, Regime regime) {
  return std::string(v.name) + " rows=" + std::to_string(c.p.rows) + " I=" + std::to_string(c.p.input_size) +
         " O=" + std::to_string(c.p.output_size) + (c.p.per_channel ? " per-channel" : " per-tensor") +
         (regime == Regime::kExtreme ? " extreme" : " typical") + " clamp [" + std::to_string(c.p.activation_min) +
         ", " + std::to_string(c.p.activation_max) + "]";
}

TEST_P(FcVariantTest, EveryEdgeSizeBothQuantizationsBothRegimes) {
  std::mt19937_64 rng(7000);
  for (int I : kEdgeSizes) {
    for (int O : kEdgeSizes) {
      for (int rows : kRows) {
        for (bool per_channel : {false, true}) {
          for (Regime regime : {Regime::kTypical, Regime::kExtreme}) {
            FcCase c;
            make_case(c, rng, rows, I, O, per_channel, regime);
            check(c, describe(*GetParam(), c, regime));
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// Longer vectors than the edge sizes (past the Arm DSP variant's 256 expanded columns) and
// layers of many chunks.
TEST_P(FcVariantTest, LargeLayers) {
  std::mt19937_64 rng(7100);
  const int kShapes[][2] = {{255, 9}, {256, 33}, {257, 70}, {600, 5}, {40, 257}, {3, 300}};
  for (const auto& s : kShapes) {
    for (bool per_channel : {false, true}) {
      for (Regime regime : {Regime::kTypical, Regime::kExtreme}) {
        FcCase c;
        make_case(c, rng, 2, s[0], s[1], per_channel, regime);
        check(c, describe(*GetParam(), c, regime));
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every shift from QLSTM_SHIFT_MIN to QLSTM_SHIFT_MAX, one per output, with accumulators near the
// int32 bounds (the left shift wraps, the rounding divide meets halves).
TEST_P(FcVariantTest, EveryShiftLeftAndRight) {
  std::mt19937_64 rng(7200);
  for (bool per_channel : {false, true}) {
    for (int shift = QLSTM_SHIFT_MIN; shift <= QLSTM_SHIFT_MAX; ++shift) {
      FcCase c;
      make_case(c, rng, 3, 17, 33, per_channel, Regime::kExtreme);
      for (auto& s : c.shifts) s = shift;
      c.p.activation_min = -128;
      c.p.activation_max = 127;
      check(c, describe(*GetParam(), c, Regime::kExtreme) + " shift " + std::to_string(shift));
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, FcVariantTest, ::testing::ValuesIn(all_fc_variants()),
                         [](const ::testing::TestParamInfo<const qlstm::FcS8Variant*>& i) {
                           return std::string(i.param->name);
                         });

TEST(FcVariantList, ReferenceIsLastAndEveryNameIsAnLstmVariantName) {
  size_t n = 0, lstm_n = 0;
  const qlstm::FcS8Variant* const* all = qlstm::fc_s8_variants(&n);
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&lstm_n);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(all[n - 1], &qlstm::kFcS8ReferenceVariant);
  EXPECT_EQ(all[n - 1]->can_run, nullptr) << "the reference runs every call";
  for (size_t k = 0; k < n; ++k) {
    ASSERT_NE(all[k]->run, nullptr) << all[k]->name;
    bool named = false;
    for (size_t j = 0; j < lstm_n; ++j) named = named || std::strcmp(lstm[j]->name, all[k]->name) == 0;
    EXPECT_TRUE(named) << all[k]->name << ": '--variant NAME' selects the LSTM and FC variants of one name";
  }
}

bool never(const qlstm_fc_s8_params&) { return false; }
bool cpu_lacks_it() { return false; }
void must_not_run(const qlstm_fc_s8_params&, const int8_t*, int8_t* output) { output[0] = 99; }

TEST(FcVariantDispatch, DeclinedCallIsNoVariantAndDispatchPassesItOn) {
  std::mt19937_64 rng(7300);
  FcCase c;
  make_case(c, rng, 1, 8, 8, true, Regime::kTypical);
  const qlstm::FcS8Variant declining = {"declining", nullptr, never, must_not_run};
  const qlstm::FcS8Variant missing = {"missing", cpu_lacks_it, nullptr, must_not_run};
  FcRun r = run(declining, c);
  EXPECT_EQ(r.status, QLSTM_ERROR_NO_VARIANT);
  EXPECT_NE(r.out[0], 99);
  r = run(missing, c);
  EXPECT_EQ(r.status, QLSTM_ERROR_UNSUPPORTED);
  EXPECT_NE(r.out[0], 99);
  const qlstm::FcS8Variant* const list[] = {&missing, &declining, &qlstm::kFcS8ReferenceVariant};
  EXPECT_EQ(qlstm::select_fc_s8_variant(list, 3, c.p), &qlstm::kFcS8ReferenceVariant);
  EXPECT_EQ(qlstm::select_fc_s8_variant(list, 2, c.p), nullptr);
}

}  // namespace
