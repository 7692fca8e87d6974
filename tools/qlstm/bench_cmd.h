// qlstm bench (docs/performance.md).
#ifndef QLSTM_TOOLS_BENCH_CMD_H_
#define QLSTM_TOOLS_BENCH_CMD_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "qlstm/compiler/program/program.h"
#include "device.h"

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
  bool profile = false;  // target: instructions and estimated cycles per function as well
  int min_runs = 50;    // host: at least this many timed calls ...
  int min_ms = 300;     // ... and at least this long
};
// Last line: "instructions: N" on a target, "microseconds: X" on the host. Exit 0; 1 when the
// device failed, its output differs from the host's, or (host) a variant differs from the
// reference. Throws UsageError and the model file's errors (exit_status.h).
int bench_command(const BenchArgs& args);

// The sequence length a compiled model is benchmarked at, and where it comes from: its report's
// "time_steps" (the ONNX input's T), "max_time_steps" (a stacked model's longest call), else the
// calibration sequences' mean length; kDefaultBenchSteps when the report knows none.
int32_t model_time_steps(const compiler::CompiledModel& m, std::string* from);

// The benchmark's input: standard-normal values quantized at the model's input quantization, drawn
// from rng (qlstm bench seeds it with a fixed seed, so a model's input is the same every run); for
// a 16x8 input the int16 values as raw bytes (2 per value).
std::vector<int8_t> bench_input(const compiler::CompiledModel& m, const compiler::SequenceShape& shape,
                                std::mt19937_64& rng);
inline constexpr uint64_t kBenchSeed = 20261202;

// One call of the model's program on the emulated CPU, its output checked against the host
// simulation by the firmware: the instructions of each op, counted by the QEMU plugin.
struct TargetBench {
  std::string cpu, qemu_machine, qemu_cpu;
  std::string variant;  // the firmware's dispatch (or the variant asked for)
  int64_t macs = 0;
  std::vector<int64_t> op_macs;            // per op
  std::vector<uint64_t> op_instructions;   // per op
  uint64_t instructions = 0;               // their sum
  std::vector<uint64_t> op_cycles;         // per op: the counter's estimated cycles (docs/targets.md)
  uint64_t cycles = 0;                     // their sum
  bool kernel_size_measured = false;       // a program of one recurrent kind: its size probe's
  int64_t kernel_flash_bytes = 0, kernel_ram_bytes = 0;
  std::vector<device::FunctionCount> profile;  // with profile: per function, largest first
  std::vector<device::ClassCount> classes;                // with profile: op 0's cycles per timing class
};
// Throws device::DeviceError (unknown CPU, firmware or QEMU missing) and CompileError (the firmware
// failed, or its output differs from the host's).
TargetBench bench_on_target(const compiler::CompiledModel& m, const std::vector<int8_t>& x,
                            const compiler::SequenceShape& shape, const std::string& cpu, const std::string& variant,
                            bool profile);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_BENCH_CMD_H_
