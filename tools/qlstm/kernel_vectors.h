// Kernel conformance vectors (format "lstm-s8-kernel-vectors/1"): reading, checking, running.
// Host only. The format is described in docs/kernel-vectors.md.
#ifndef QLSTM_TOOLS_KERNEL_VECTORS_H_
#define QLSTM_TOOLS_KERNEL_VECTORS_H_

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace vectors {

inline constexpr const char* kFormat = "lstm-s8-kernel-vectors/1";

// One gate's arrays (its scalars live in KernelCase::block).
struct GateData {
  std::vector<int8_t> input_weights;
  std::vector<int32_t> input_effective_bias;
  std::vector<int8_t> hidden_weights;
  std::vector<int32_t> hidden_effective_bias;
};

struct KernelCase {
  std::string name;
  // Every scalar field of the kernel's parameter block, each set by the reader (the format has no
  // time direction or output width: CMSIS-NN walks time forwards into a dense output); the array
  // pointers are null here and set by params().
  qlstm_lstm_s8_params block{};
  int32_t input_zero_point = 0;
  std::array<GateData, QLSTM_GATE_COUNT> gates;  // qlstm_gate_index order
  std::vector<int8_t> input;
  bool stateful = false;
  std::vector<int8_t> initial_hidden;
  std::vector<int16_t> initial_cell;
  std::vector<int8_t> expected_output;
  std::vector<int8_t> expected_final_hidden;  // stateful cases only
  std::vector<int16_t> expected_final_cell;   // stateful cases only

  const qlstm_lstm_dims& dims() const { return block.dims; }
  bool time_major() const { return block.layout == QLSTM_LAYOUT_TIME_MAJOR; }
  // The block with its arrays pointing into this case (valid while the case lives).
  qlstm_lstm_s8_params params() const;
};

struct VectorFile {
  std::string path;
  std::string description;
  std::vector<KernelCase> cases;
};

// Thrown for unreadable or malformed files; what() names the file, the case and the key.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

VectorFile load_vector_file(const std::string& path);

// Expands folders (recursively, *.json) and keeps files; sorted, without duplicates.
// Throws FormatError for a path that does not exist.
std::vector<std::string> collect_vector_files(const std::vector<std::string>& paths);

struct CaseResult {
  qlstm_status status = QLSTM_OK;
  bool passed = false;
  std::string mismatch;  // first differing value, e.g. "output[17] (b=0 t=3 h=5): expected 5, got 6"
  std::vector<int8_t> output;
  std::vector<int8_t> final_hidden;
  std::vector<int16_t> final_cell;
};

// The cases, with their expected values, as a bundle for the device firmware (device::bundle).
std::string device_bundle(const std::vector<const KernelCase*>& cases);

// Runs the case through `variant` and compares every output (and final-state) value.
CaseResult run_case(const KernelCase& c, const LstmS8Variant& variant);

}  // namespace vectors
}  // namespace qlstm

#endif  // QLSTM_TOOLS_KERNEL_VECTORS_H_
