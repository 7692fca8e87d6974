// The shipped table equals the regeneration recipe of docs/arithmetic.md §4.1 (computed here in
// C++) and, when ../shared is present, the spec's extracted values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>

#include "qlstm/activation_s16.h"

namespace {

TEST(SigmoidTable, EqualsRecipe) {
  const int plus_one_at[] = {4,  8,  12, 14, 15, 16, 17, 19, 20, 21, 22,  25,  27,  28,  29,
                             30, 31, 33, 34, 35, 37, 39, 40, 41, 43, 44,  45,  46,  49,  50,
                             54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112, 116, 135, 255};
  uint32_t expected[qlstm::kSigmoidTableSize];
  for (int i = 0; i < qlstm::kSigmoidTableSize; ++i) {
    const double exact = 65536.0 / (1.0 + std::exp(-i / 24.0));
    // No entry is within 0.0011 of a rounding tie, so float64 rounding is unambiguous.
    EXPECT_GT(std::fabs(exact - std::floor(exact) - 0.5), 0.001) << i;
    expected[i] = static_cast<uint32_t>(std::floor(exact + 0.5));
  }
  for (int i : plus_one_at) expected[i] += 1;
  uint64_t sum = 0;
  for (int i = 0; i < qlstm::kSigmoidTableSize; ++i) {
    EXPECT_EQ(qlstm::kSigmoidTableU16[i], expected[i]) << "index " << i;
    sum += qlstm::kSigmoidTableU16[i];
  }
  EXPECT_EQ(qlstm::kSigmoidTableU16[0], 32768);
  EXPECT_EQ(qlstm::kSigmoidTableU16[255], 65535);
  EXPECT_EQ(sum, 15670629u);
}

TEST(SigmoidTable, EqualsSharedSpecValues) {
  const std::string path = std::string(QLSTM_SHARED_DIR) + "/spec/sigmoid_table_uint16.txt";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "skipped: " << path << " not found (no ../shared beside the project)";
  for (int i = 0; i < qlstm::kSigmoidTableSize; ++i) {
    long v = -1;
    ASSERT_TRUE(in >> v) << "short file at line " << i + 1;
    EXPECT_EQ(qlstm::kSigmoidTableU16[i], v) << "index " << i;
  }
  long extra;
  EXPECT_FALSE(in >> extra) << "more than 256 values";
}

}  // namespace
