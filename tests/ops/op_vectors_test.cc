// The ops around the LSTM against ../shared/op-vectors (outputs from CMSIS-NN): every softmax
// case and every fully connected case (per tensor and per channel, with and without a bias)
// bit-exact through every FC variant this CPU supports, read by the same reader as
// `qlstm verify-vectors`. Skipped, and said so, without ../shared. The malformed files are
// tests/CMakeLists.txt's (cli_malformed_op_*).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kernel_vectors.h"

namespace {

std::string op_vectors(const char* file) { return std::string(QLSTM_SHARED_DIR) + "/op-vectors/" + file; }

TEST(OpVectors, SoftmaxEveryCaseBitExact) {
  const std::string path = op_vectors("softmax_s8.json");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "skipped: " << path << " not found (no ../shared beside the project)";
  const qlstm::vectors::VectorFile file = qlstm::vectors::load_vector_file(path);
  ASSERT_EQ(file.format, qlstm::vectors::kSoftmaxFormat);
  ASSERT_FALSE(file.softmax_cases.empty());
  for (const auto& c : file.softmax_cases) {
    const auto r = qlstm::vectors::run_softmax_case(c);
    EXPECT_TRUE(r.passed) << c.name << ": " << r.mismatch;
  }
  std::printf("softmax: %zu cases bit-exact\n", file.softmax_cases.size());
}

TEST(OpVectors, FullyConnectedEveryCaseBitExactWithEveryVariant) {
  const std::string path = op_vectors("fully_connected_s8.json");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "skipped: " << path << " not found (no ../shared beside the project)";
  const qlstm::vectors::VectorFile file = qlstm::vectors::load_vector_file(path);
  ASSERT_EQ(file.format, qlstm::vectors::kFcFormat);
  // The file covers both quantizations and a missing bias.
  int per_channel = 0, per_tensor = 0, no_bias = 0;
  for (const auto& c : file.fc_cases) {
    (c.block.per_channel ? per_channel : per_tensor) += 1;
    no_bias += c.bias.empty() ? 1 : 0;
  }
  EXPECT_GT(per_channel, 0);
  EXPECT_GT(per_tensor, 0);
  EXPECT_GT(no_bias, 0);
  size_t count = 0;
  const qlstm::FcS8Variant* const* variants = qlstm::fc_s8_variants(&count);
  for (size_t k = 0; k < count; ++k) {
    const qlstm::FcS8Variant& v = *variants[k];
    if (v.is_supported != nullptr && !v.is_supported()) {
      std::printf("FC variant %s: not supported on this CPU, skipped\n", v.name);
      continue;
    }
    int run = 0, declined = 0;
    for (const auto& c : file.fc_cases) {
      const auto r = qlstm::vectors::run_fc_case(c, &v);
      if (v.can_run != nullptr && !v.can_run(c.params())) {
        EXPECT_EQ(r.status, QLSTM_ERROR_NO_VARIANT) << v.name << " " << c.name;
        ++declined;
        continue;
      }
      EXPECT_TRUE(r.passed) << v.name << " " << c.name << ": " << r.mismatch;
      ++run;
    }
    std::printf("FC variant %s: %d cases bit-exact, %d declined (can_run)\n", v.name, run, declined);
  }
  for (const auto& c : file.fc_cases) {
    const auto r = qlstm::vectors::run_fc_case(c, nullptr);  // qlstm_fc_s8's dispatch
    EXPECT_TRUE(r.passed) << c.name << ": " << r.mismatch;
  }
  std::printf("fully connected: %d per-channel, %d per-tensor, %d without a bias\n", per_channel, per_tensor, no_bias);
}

}  // namespace
