// The vector reader never crashes on damaged input: every truncation and many type substitutions
// of a valid file are either read or refused with a FormatError naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>

#include "kernel_vectors.h"

namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A valid file with the first two golden cases.
std::string small_valid_file() {
  const std::string all = read_text(std::string(QLSTM_GOLDEN_DIR) + "/qlstm_golden_v1.json");
  const size_t first = all.find("\n{\"name\"");
  const size_t third = all.find("\n{\"name\"", all.find("\n{\"name\"", first + 1) + 1);
  return all.substr(0, third - 1) + "\n ]\n}\n";
}

class DamagedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("qlstm_damaged_" + std::to_string(::getpid()) + ".json")).string();
  }
  void TearDown() override { std::remove(path_.c_str()); }
  // Returns true if the reader accepted the text; fails the test on anything but FormatError.
  bool load(const std::string& text) {
    { std::ofstream(path_) << text; }
    try {
      qlstm::vectors::load_vector_file(path_);
      return true;
    } catch (const qlstm::vectors::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
      return false;
    }
  }
  std::string path_;
};

TEST_F(DamagedFiles, ValidFileLoads) { EXPECT_TRUE(load(small_valid_file())); }

TEST_F(DamagedFiles, EveryTruncationIsRefused) {
  const std::string text = small_valid_file();
  const size_t stop = text.find_last_of('}');
  for (size_t n = 0; n < stop; n += 1 + n / 50) {
    ASSERT_FALSE(load(text.substr(0, n))) << "a truncation at " << n << " bytes was accepted";
  }
}

TEST_F(DamagedFiles, TypeSubstitutionsNeverCrash) {
  const std::string text = small_valid_file();
  std::mt19937_64 rng(5);
  const char* replacements[] = {"null", "\"x\"", "[]", "{}", "1.5", "-99999999999", "true", "300"};
  int refused = 0;
  for (int k = 0; k < 300; ++k) {
    // Replace one number in the text.
    size_t at = rng() % text.size();
    while (at < text.size() && !(text[at] >= '0' && text[at] <= '9')) ++at;
    if (at >= text.size()) continue;
    size_t end = at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (at > 0 && text[at - 1] == '-') --at;
    std::string damaged = text;
    damaged.replace(at, end - at, replacements[rng() % 8]);
    refused += load(damaged) ? 0 : 1;
  }
  EXPECT_GT(refused, 200);
}

}  // namespace
