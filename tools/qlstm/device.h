// The emulated Cortex-M device behind `qlstm ... --target CPU` (host only): which firmware and
// QEMU board serve a CPU, the bundle the firmware reads (targets/cortex-m/firmware/qlstm_device.cc),
// and running it under QEMU with semihosting, optionally with the instruction counter.
#ifndef QLSTM_TOOLS_DEVICE_H_
#define QLSTM_TOOLS_DEVICE_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "qlstm/fully_connected_s16.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace device {

// Unknown CPU, firmware not built, QEMU missing, or the device run failed to start.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Target {
  std::string cpu;           // e.g. "cortex-m55-nomve"
  std::string qemu_machine;  // e.g. "mps3-an547"
  std::string qemu_cpu;      // e.g. "cortex-m55"
  std::string dir;           // the firmware's build folder
  std::string firmware;      // dir + "/qlstm_device.elf"
};

// The CPU names `--target` accepts, in a fixed order.
const std::vector<std::string>& cpu_names();

// Finds the firmware built for `cpu` (under $QLSTM_TARGET_DIR, else the build tree's targets/).
// Throws DeviceError naming the CPU and what is missing.
Target find_target(const std::string& cpu);

// One call of a program on the device: its ops (each parameter block with the call's dims and
// layout; arrays owned by the caller), the width of each buffer, the input, and for a stateful
// call the [ops][B][H] state it starts from. check: compare the output (and the final state) with
// the expected values. A kernel vector is a one-op program. input and expected are the raw bytes of
// the first and last buffers' element types (int16 little-endian in a 16x8 program).
struct BundleCase {
  std::string name;
  std::vector<OwnedOp> ops;  // each with its own copy of its block
  std::vector<int32_t> buffer_widths;
  std::vector<int32_t> buffer_steps;  // a qlstm_buffer_steps per buffer; empty: every step
  std::vector<int32_t> buffer_types;  // a qlstm_element_type per buffer; empty: every buffer int8
  // The call's batch, steps and layout; batch 0: those of the first op (an LSTM).
  int32_t batch = 0, time_steps = 0, layout = QLSTM_LAYOUT_BATCH_MAJOR;
  bool stateful = false;
  bool check = false;
  const int8_t* input = nullptr;
  const int8_t* h0 = nullptr;
  const int16_t* c0 = nullptr;
  const int8_t* expected = nullptr;
  const int8_t* final_h = nullptr;
  const int16_t* final_c = nullptr;
};

// The case of one kernel call: a program of one op, buffers {I, H}.
BundleCase single_op_case(const std::string& name, const qlstm_lstm_s8_params& params);

// The case of one call of a whole program (any op kinds) over time_steps steps: its ops, buffer
// widths, steps and element types, batch and layout (the data pointers are left to the caller).
BundleCase program_case(const std::string& name, const qlstm_program& program, int32_t time_steps);
// Elements of the case's output: B x T (or B when its last buffer is one step) x its width.
size_t output_count(const BundleCase& c);
// Bytes of the case's output: output_count x the last buffer's element bytes.
size_t output_bytes(const BundleCase& c);

// "QLVB", the version, the case count, then per case a byte count and the record: its name,
// flags, batch and time steps, the program (buffer widths, steps and types; each op's fields as the runtime
// describes them, params_codec.h) and its arrays, little-endian and padded to 4 bytes
// (docs/targets.md). The firmware reads it with the same description.
std::string bundle(const std::vector<BundleCase>& cases);

// One call of a 16x8 kernel on the device: qlstm_fc_s16 (lstm false) or qlstm_lstm_s16, the
// blocks' arrays owned by the caller; data as BundleCase's, int16 (the LSTM's state [B][H]).
struct S16BundleCase {
  std::string name;
  bool lstm = false;
  qlstm_fc_s16_params fc{};
  qlstm_lstm_s16_params lstm_params{};
  bool stateful = false;
  bool check = false;
  const int16_t* input = nullptr;
  const int16_t* h0 = nullptr;
  const int16_t* c0 = nullptr;
  const int16_t* expected = nullptr;
  const int16_t* final_h = nullptr;
  const int16_t* final_c = nullptr;
};

// "QLSB", its version, the case count, then per case a byte count and the record
// (bundle_format.h's visit_s16_case). The firmware's verify and run read it as they read "QLVB".
std::string s16_bundle(const std::vector<S16BundleCase>& cases);

struct RunOptions {
  bool capture = false;          // collect the firmware's console output instead of printing it
  std::string icount_out;        // non-empty: load the instruction counter, writing to this file
  bool profile = false;          // with icount_out: instructions per function too
  int timeout_seconds = 1200;
};
struct RunResult {
  int exit_status = -1;  // the firmware's exit(status); 124 on timeout
  std::string console;   // when captured
};

// Runs `qlstm_device ARGS...` on the target's QEMU board.
RunResult run_firmware(const Target& t, const std::vector<std::string>& args, const RunOptions& options);

// The instruction counts the counter wrote, one per begin/end marker pair.
std::vector<uint64_t> read_icounts(const std::string& path);
// The counter's estimated cycles on the target's core, one per pair (docs/targets.md).
std::vector<uint64_t> read_cycles(const std::string& path);
// With RunOptions::profile: instructions and estimated cycles per timing class of the first pair,
// most cycles first ("refill": the refills of taken conditional branches; docs/targets.md).
struct ClassCount {
  std::string name;
  uint64_t instructions = 0, cycles = 0;
};
std::vector<ClassCount> read_classes(const std::string& path);
// With RunOptions::profile: the first pair's instructions per function (blocks starting in it),
// largest first, demangled, and with a cycle model their estimated cycles (the refills of the
// taken branches that end those blocks included).
struct FunctionCount {
  std::string name;
  uint64_t instructions = 0, cycles = 0;
  bool has_cycles = false;
};
std::vector<FunctionCount> read_profile(const std::string& path);

// A temporary file that is removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::string& stem);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the kernel costs in the firmware for `variant`: the linked size of a probe firmware
// holding that variant (its code, the shared driver and tables) minus one holding none.
struct KernelSize {
  int64_t flash_bytes = 0;  // code and read-only tables (.text, .rodata)
  int64_t ram_bytes = 0;    // static .data + .bss
};
KernelSize kernel_size(const Target& t, const std::string& variant);

// The runtime code a firmware of the emitted source of a program of these kinds (qlstm_op_kind
// values) keeps on this target, built as examples/firmware builds it (the CPU's best variants): the
// bytes of the runtime's .text input sections its kinds' probes keep together
// (targets/cortex-m/firmware/kind_probe.cc: kind_probe_none.map and kind_probe_<kind>.map). The
// link keeps what its roots reach, and the model's roots are its kinds' probes' roots together,
// so the figure is the link's. (Its const data is left out: the link merges equal strings across
// objects, so the probes' strings do not add up to the model's.) Throws DeviceError for a missing
// map.
int64_t runtime_code_bytes(const Target& t, const std::vector<int32_t>& kinds);

}  // namespace device
}  // namespace qlstm

#endif  // QLSTM_TOOLS_DEVICE_H_
