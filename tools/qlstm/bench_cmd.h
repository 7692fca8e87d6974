// qlstm bench (docs/performance.md).
#ifndef QLSTM_TOOLS_BENCH_CMD_H_
#define QLSTM_TOOLS_BENCH_CMD_H_

#include <cstdint>
#include <string>

namespace qlstm {
namespace cli {

// Time steps of a benchmarked model call when neither --shape nor the model's report gives any.
inline constexpr int32_t kDefaultBenchSteps = 32;

struct BenchArgs {
  std::string model;    // a .qlstm file, or empty with --shape
  std::string shape;    // "B=1,T=49,I=10,H=64[,time_major]"
  std::string cell = "lstm";  // --shape without a model: the synthetic layer, "lstm" or "gru"
  std::string target;   // empty: time the host kernel
  std::string variant = "default";
  bool profile = false;  // target: instructions per function as well
  int min_runs = 50;    // host: at least this many timed calls ...
  int min_ms = 300;     // ... and at least this long
};
// Last line: "instructions: N" on a target, "microseconds: X" on the host. Exit 0; 1 when the
// device failed, its output differs from the host's, or (host) a variant differs from the
// reference. Throws UsageError and the model file's errors (exit_status.h).
int bench_command(const BenchArgs& args);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_BENCH_CMD_H_
