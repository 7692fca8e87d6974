// int16 sigmoid/tanh over every input, against the test's own model of the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "naive_lstm.h"
#include "qlstm/activation_s16.h"

namespace {

using qlstm::kSigmoidTableU16;

class ActivationExhaustive : public ::testing::TestWithParam<int> {};

TEST_P(ActivationExhaustive, SigmoidEqualsModelOnAllInt16) {
  const int ls = GetParam();
  for (int32_t x = INT16_MIN; x <= INT16_MAX; ++x) {
    ASSERT_EQ(qlstm::sigmoid_q0_15(static_cast<int16_t>(x), ls),
              naive::activation(x, ls, false, kSigmoidTableU16))
        << "x=" << x << " left_shift=" << ls;
  }
}

TEST_P(ActivationExhaustive, TanhEqualsModelOnAllInt16) {
  const int ls = GetParam();
  for (int32_t x = INT16_MIN; x <= INT16_MAX; ++x) {
    ASSERT_EQ(qlstm::tanh_q0_15(static_cast<int16_t>(x), ls),
              naive::activation(x, ls, true, kSigmoidTableU16))
        << "x=" << x << " left_shift=" << ls;
  }
}

// Spec range -8..+5 exhaustively, plus the ends of the accepted range.
INSTANTIATE_TEST_SUITE_P(LeftShifts, ActivationExhaustive,
                         ::testing::Values(-31, -20, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4,
                                           5, 10, 14),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param < 0 ? "minus" + std::to_string(-i.param)
                                              : "plus" + std::to_string(i.param);
                         });

TEST(Sigmoid, Identities) {
  EXPECT_EQ(qlstm::sigmoid_q0_15(0, 0), 16384);
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (int32_t x = INT16_MIN + 1; x <= INT16_MAX; ++x) {
    const int32_t p = qlstm::sigmoid_q0_15(static_cast<int16_t>(x), 0);
    const int32_t n = qlstm::sigmoid_q0_15(static_cast<int16_t>(-x), 0);
    ASSERT_EQ(p + n, 32768) << "x=" << x;
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  lo = std::min<int32_t>(lo, qlstm::sigmoid_q0_15(INT16_MIN, 0));
  EXPECT_EQ(lo, 11);
  EXPECT_EQ(hi, 32757);
}

TEST(Sigmoid, MonotonicAtGateScale) {
  for (int32_t x = INT16_MIN; x < INT16_MAX; ++x) {
    ASSERT_LE(qlstm::sigmoid_q0_15(static_cast<int16_t>(x), 0),
              qlstm::sigmoid_q0_15(static_cast<int16_t>(x + 1), 0)) << x;
  }
}

TEST(Tanh, OddAndSaturating) {
  for (int ls = 0; ls <= 5; ++ls) {
    EXPECT_EQ(qlstm::tanh_q0_15(0, ls), 0);
    for (int32_t x = INT16_MIN + 1; x <= INT16_MAX; ++x) {
      ASSERT_EQ(qlstm::tanh_q0_15(static_cast<int16_t>(-x), ls),
                -qlstm::tanh_q0_15(static_cast<int16_t>(x), ls))
          << "x=" << x << " left_shift=" << ls;
    }
  }
  // At left shift 0 the saturated branch starts at |x| = 21760 (3x >> 8 = index 255). The
  // interpolation reaches 32767 before it, half-way through the last step (T[254] = 65534,
  // T[255] = 65535: 3x >= 254.5 * 256, x >= 21718), and must stay there across the seam: a
  // rounding up to 32768 would wrap to -32768.
  EXPECT_EQ(qlstm::tanh_q0_15(21760, 0), 32767);
  EXPECT_EQ(qlstm::tanh_q0_15(-21760, 0), -32767);
  EXPECT_LT(qlstm::tanh_q0_15(21717, 0), 32767);
  EXPECT_GT(qlstm::tanh_q0_15(-21717, 0), -32767);
  for (int32_t x = 21718; x <= INT16_MAX; ++x) {
    ASSERT_EQ(qlstm::tanh_q0_15(static_cast<int16_t>(x), 0), 32767) << "x=" << x;
  }
  EXPECT_EQ(qlstm::tanh_q0_15(INT16_MAX, 0), 32767);
  EXPECT_EQ(qlstm::tanh_q0_15(INT16_MIN, 0), -32767);
}

TEST(Tanh, MonotonicOverSpecShifts) {
  // Non-decreasing over every int16 for every left shift of the spec (-8..+5): no wrap at a seam.
  for (int ls = -8; ls <= 5; ++ls) {
    for (int32_t x = INT16_MIN; x < INT16_MAX; ++x) {
      ASSERT_LE(qlstm::tanh_q0_15(static_cast<int16_t>(x), ls),
                qlstm::tanh_q0_15(static_cast<int16_t>(x + 1), ls))
          << "x=" << x << " left_shift=" << ls;
    }
  }
}

TEST(Tanh, CloseToFloatTanh) {
  // Not the spec, a sanity check of the formats: Q3.12 in, Q0.15 out, within 2 LSB.
  for (int32_t x = -32768; x <= 32767; x += 7) {
    const double expected = std::tanh(x / 4096.0) * 32768.0;
    ASSERT_NEAR(qlstm::tanh_q0_15(static_cast<int16_t>(x), 0), expected, 2.0) << x;
  }
  for (int32_t x = -32768; x <= 32767; x += 7) {
    const double expected = 32768.0 / (1.0 + std::exp(-x / 4096.0));
    ASSERT_NEAR(qlstm::sigmoid_q0_15(static_cast<int16_t>(x), 0), expected, 2.0) << x;
  }
}

}  // namespace
