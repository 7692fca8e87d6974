// The 16x8 boundaries' headroom (CompileOptions::s16_headroom_bits, docs/compiler.md "The 16x8
// boundaries") on the accuracy fixtures: the compiled 16x8 program's SQNR against torch fp32 on
// each fixture's held-out test sequences, for 0 to 4 bits, beside the int8 default. Prints the
// markdown table of docs/accuracy.md.
//
// Usage: s16_headroom_sweep FIXTURE_DIR
#include <cstdio>
#include <string>

#include "accuracy_fixture.h"
#include "qlstm/compiler/lower/compile_program.h"

using namespace qlstm::compiler;

namespace {

constexpr int32_t kMaxBits = 4;

// The held-out SQNR, or "refused" with the reason kept for the notes under the table.
std::string held_out_db(const testing_support::AccuracyFixture& f, const CompileOptions& o, std::string* refusal) {
  try {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", sqnr_db(f.test_y, testing_support::run_fixture(f, o).y));
    return b;
  } catch (const CompileError& e) {
    *refusal = f.name + ": " + e.what();
    return "refused";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: s16_headroom_sweep FIXTURE_DIR\n");
    return 2;
  }
  std::printf("| fixture | int8 dB |");
  for (int32_t b = 0; b <= kMaxBits; ++b) std::printf(" 16x8, %d bit%s dB |", b, b == 1 ? "" : "s");
  std::printf("\n|---|---:|");
  for (int32_t b = 0; b <= kMaxBits; ++b) std::printf("---:|");
  std::printf("\n");
  std::string refusals;
  for (const char* name : testing_support::kHeldOutFixtures) {
    std::string refusal;
    const testing_support::AccuracyFixture f = testing_support::load_accuracy_fixture(argv[1], name);
    std::printf("| %s | %s |", name, held_out_db(f, CompileOptions{}, &refusal).c_str());
    for (int32_t b = 0; b <= kMaxBits; ++b) {
      CompileOptions o;
      o.s16_layers = {true};
      o.s16_headroom_bits = b;
      std::printf(" %s |", held_out_db(f, o, &refusal).c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
    if (!refusal.empty()) refusals += "\n- " + refusal;
  }
  if (!refusals.empty()) std::printf("\nRefused:%s\n", refusals.c_str());
  return 0;
}
