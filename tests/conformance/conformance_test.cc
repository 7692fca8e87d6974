// Kernel vectors, bit for bit, through every supported variant:
//   - the project's own golden cases (tests/golden), always;
//   - every file under ../shared/conformance, when that folder exists (skipped, and said so,
//     when it does not).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kernel_vectors.h"

namespace {

namespace fs = std::filesystem;
using qlstm::vectors::collect_vector_files;
using qlstm::vectors::load_vector_file;
using qlstm::vectors::run_case;

size_t run_all(const std::string& root) {
  size_t n = 0, cases = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  for (size_t v = 0; v < n; ++v) {
    if (all[v]->is_supported != nullptr && !all[v]->is_supported()) {
      std::printf("skipped: variant %s on %s (this CPU lacks its instructions)\n", all[v]->name,
                  root.c_str());
    }
  }
  for (const std::string& path : collect_vector_files({root})) {
    const auto file = load_vector_file(path);
    for (const auto& c : file.cases) {
      ++cases;
      for (size_t v = 0; v < n; ++v) {
        if (all[v]->is_supported != nullptr && !all[v]->is_supported()) continue;
        const auto r = run_case(c, *all[v]);
        EXPECT_TRUE(r.passed) << path << ": " << c.name << " [" << all[v]->name << "]: " << r.mismatch;
      }
    }
  }
  return cases;
}

TEST(Conformance, ProjectGoldenCases) {
  const size_t cases = run_all(QLSTM_GOLDEN_DIR);
  EXPECT_GE(cases, 100u);
  std::printf("golden: %zu cases checked\n", cases);
}

TEST(Conformance, SharedConformanceVectors) {
  const std::string root = std::string(QLSTM_SHARED_DIR) + "/conformance";
  if (!fs::is_directory(root)) {
    GTEST_SKIP() << "skipped: " << root << " not found (no ../shared beside the project)";
  }
  const size_t cases = run_all(root);
  EXPECT_GT(cases, 0u);
  std::printf("shared conformance: %zu cases checked\n", cases);
}

}  // namespace
