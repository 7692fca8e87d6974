// Kernel conformance vectors: reading, checking, running. Host only. Formats:
// "lstm-s8-kernel-vectors/1" (docs/kernel-vectors.md), and for the ops around the LSTM
// "fc-s8-vectors/1", "softmax-s8-vectors/1" and the 16x8 "fc-s16-vectors/1"
// "pool-s8-vectors/1", "elementwise-add-s8-vectors/1", "elementwise-mul-s8-vectors/1"
// (../shared/op-vectors/FORMAT.md); "log-softmax-s8-vectors/1" (docs/kernel-vectors.md).
#ifndef QLSTM_TOOLS_KERNEL_VECTORS_H_
#define QLSTM_TOOLS_KERNEL_VECTORS_H_

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "qlstm/attention_pool_s8.h"
#include "qlstm/elementwise_s8.h"
#include "qlstm/fully_connected_s16.h"
#include "qlstm/fully_connected_s8.h"
#include "qlstm/kernels.h"
#include "qlstm/layer_norm_s8.h"
#include "qlstm/log_softmax_s8.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/pool_s8.h"
#include "qlstm/rnn_s8.h"
#include "qlstm/softmax_s8.h"

namespace qlstm {
namespace vectors {

inline constexpr const char* kFormat = "lstm-s8-kernel-vectors/1";
inline constexpr const char* kFcFormat = "fc-s8-vectors/1";
inline constexpr const char* kSoftmaxFormat = "softmax-s8-vectors/1";
inline constexpr const char* kFcS16Format = "fc-s16-vectors/1";
inline constexpr const char* kLstmS16Format = "lstm-s16-kernel-vectors/1";
inline constexpr const char* kPoolFormat = "pool-s8-vectors/1";
inline constexpr const char* kLogSoftmaxFormat = "log-softmax-s8-vectors/1";
inline constexpr const char* kLayerNormFormat = "layer-norm-s8-vectors/1";
inline constexpr const char* kAddFormat = "elementwise-add-s8-vectors/1";
inline constexpr const char* kMulFormat = "elementwise-mul-s8-vectors/1";
inline constexpr const char* kRnnFormat = "rnn-s8-kernel-vectors/1";
inline constexpr const char* kAttentionPoolFormat = "attention-pool-s8-vectors/1";

// One gate's arrays (its scalars live in the case's block); Bias: int32_t, int64_t for 16x8.
template <class Bias>
struct GateDataOf {
  std::vector<int8_t> input_weights;
  std::vector<Bias> input_effective_bias;
  std::vector<int8_t> hidden_weights;
  std::vector<Bias> hidden_effective_bias;
};
using GateData = GateDataOf<int32_t>;

struct KernelCase {
  using Elem = int8_t;  // input, output and hidden state
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

// A 16x8 LSTM case (lstm-s16-kernel-vectors/1): as KernelCase without zero points, int16 input,
// output and hidden state, int64 effective biases.
struct LstmS16Case {
  using Elem = int16_t;
  std::string name;
  qlstm_lstm_s16_params block{};  // the scalars; params() sets the arrays
  std::array<GateDataOf<int64_t>, QLSTM_GATE_COUNT> gates;
  std::vector<int16_t> input;
  bool stateful = false;
  std::vector<int16_t> initial_hidden;
  std::vector<int16_t> initial_cell;
  std::vector<int16_t> expected_output;
  std::vector<int16_t> expected_final_hidden;
  std::vector<int16_t> expected_final_cell;

  const qlstm_lstm_dims& dims() const { return block.dims; }
  bool time_major() const { return block.layout == QLSTM_LAYOUT_TIME_MAJOR; }
  qlstm_lstm_s16_params params() const;
};

// A fully connected case: `batch` rows of input_size values (per tensor or per channel).
struct FcCase {
  std::string name;
  // The scalars of the op's parameter block (rows = batch); the arrays are set by params().
  qlstm_fc_s8_params block{};
  int32_t input_zero_point = 0;
  std::vector<int32_t> multipliers, shifts;  // [per_channel ? O : 1]
  std::vector<int8_t> weights;               // [O][I]
  std::vector<int32_t> bias;                 // [O], or empty: null in the file (no bias)
  std::vector<int32_t> effective_bias;       // bias - input_zero_point * rowsum(weights)
  std::vector<int8_t> input;                 // [B][I]
  std::vector<int8_t> expected_output;       // [B][O]
  qlstm_fc_s8_params params() const;
};

// A 16x8 fully connected case: `batch` rows of input_size int16 values.
struct FcS16Case {
  std::string name;
  qlstm_fc_s16_params block{};          // the scalars (rows = batch); params() sets the arrays
  std::vector<int8_t> weights;          // [O][I]
  std::vector<int64_t> bias;            // [O], or empty: null in the file (no bias)
  std::vector<int16_t> input;           // [B][I]
  std::vector<int16_t> expected_output; // [B][O]
  qlstm_fc_s16_params params() const;
};

// A softmax case: rows of row_size values.
struct SoftmaxCase {
  std::string name;
  qlstm_softmax_s8_params params{};
  double input_scale = 0, beta = 0;  // what the file says the parameters come from
  std::vector<int8_t> input;
  std::vector<int8_t> expected_output;
};

// A log-softmax case: rows of row_size values.
struct LogSoftmaxCase {
  std::string name;
  qlstm_log_softmax_s8_params params{};
  double input_scale = 0;  // what the file says the parameters come from
  std::vector<int8_t> input;
  std::vector<int8_t> expected_output;
};

// A layer normalization case: rows of row_size values, gamma and beta as the block's int32 arrays.
struct LayerNormCase {
  std::string name;
  qlstm_layer_norm_s8_params params{};
  std::vector<int32_t> weights, biases;  // params point into them (set by the reader and on copy)
  std::vector<int8_t> input;
  std::vector<int8_t> expected_output;

  qlstm_layer_norm_s8_params kernel_params() const {
    qlstm_layer_norm_s8_params p = params;
    p.weights = weights.data();
    p.biases = biases.data();
    return p;
  }
};

// A max or average pooling case: NHWC images, every field of the kernel's block.
struct PoolCase {
  std::string name;
  qlstm_pool_s8_params params{};
  std::vector<int8_t> input;            // [N][H][W][C]
  std::vector<int8_t> expected_output;  // [N][OH][OW][C]
};

// An elementwise add or multiply case: `size` values of each operand (shape.rows = 1).
struct ElementwiseCase {
  std::string name;
  bool multiply = false;
  qlstm_add_s8_params add{};  // the add's block (multiply false)
  qlstm_mul_s8_params mul{};  // the multiply's block (multiply true)
  std::vector<int8_t> input1, input2;
  std::vector<int8_t> both_inputs;  // input1 then input2: a one-op program's input row
  std::vector<int8_t> expected_output;
  int32_t size() const { return static_cast<int32_t>(input1.size()); }
};

// A vanilla RNN case (rnn-s8-kernel-vectors/1, docs/kernel-vectors.md): every field of the
// kernel's block, its one gate's arrays, int16 state.
struct RnnCase {
  std::string name;
  qlstm_rnn_s8_params block{};  // the scalars; params() sets the arrays
  int32_t input_zero_point = 0;
  GateData gate;
  std::vector<int8_t> input;
  bool stateful = false;
  std::vector<int16_t> initial_hidden;
  std::vector<int8_t> expected_output;
  std::vector<int16_t> expected_final_hidden;  // stateful cases only
  std::vector<int8_t> unused_hidden;           // a program's int8 state rows, which an RNN leaves alone: zeros
  size_t output_count() const;                 // B x (T, or 1 for one step) x H
  qlstm_rnn_s8_params params() const;
};

// An attention pooling case (attention-pool-s8-vectors/1): every field of the kernel's block, B x T
// scores and B x T x W sequence values in the layout, B x W expected.
struct AttentionPoolCase {
  std::string name;
  qlstm_attention_pool_s8_params params{};
  double score_scale = 0;  // what the file says the softmax's scaling comes from
  std::vector<int8_t> scores, sequence;
  std::vector<int8_t> expected_output;
  // Its device program's (device_bundle): the input rows [sequence | score] per position, and the
  // two fully connected ops that copy them apart (identity weights, identity requantization).
  std::vector<int8_t> device_input, copy_weights, score_weights;
  std::vector<int32_t> zero_biases;
  int32_t unit_multiplier = int32_t{1} << 30, unit_shift = 1;  // RQ(x, 2^30, 1) = x
};

// One file: the cases of its format (the other lists are empty).
struct VectorFile {
  std::string path;
  std::string description;
  std::string format;
  std::vector<KernelCase> cases;           // lstm-s8-kernel-vectors/1
  std::vector<FcCase> fc_cases;            // fc-s8-vectors/1
  std::vector<SoftmaxCase> softmax_cases;  // softmax-s8-vectors/1
  std::vector<FcS16Case> fc_s16_cases;     // fc-s16-vectors/1
  std::vector<LstmS16Case> lstm_s16_cases; // lstm-s16-kernel-vectors/1
  std::vector<PoolCase> pool_cases;        // pool-s8-vectors/1
  std::vector<LogSoftmaxCase> log_softmax_cases;  // log-softmax-s8-vectors/1
  std::vector<LayerNormCase> layer_norm_cases;    // layer-norm-s8-vectors/1
  std::vector<ElementwiseCase> elementwise_cases;  // elementwise-add-s8-vectors/1, elementwise-mul-s8-vectors/1
  std::vector<RnnCase> rnn_cases;                  // rnn-s8-kernel-vectors/1
  std::vector<AttentionPoolCase> attention_cases;  // attention-pool-s8-vectors/1
  size_t case_count() const {
    return cases.size() + fc_cases.size() + softmax_cases.size() + fc_s16_cases.size() + lstm_s16_cases.size() +
           pool_cases.size() + log_softmax_cases.size() + elementwise_cases.size() + layer_norm_cases.size() +
           rnn_cases.size() + attention_cases.size();
  }
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
  std::vector<int16_t> output_s16;  // a 16x8 case's output (and an LSTM's final hidden state)
  std::vector<int16_t> final_hidden_s16;
};

// Every case of the files, with its expected values, as a bundle for the device firmware
// (device::bundle): an LSTM case as a one-op program over its call, an FC case as a one-op
// program over B positions of one step (T = 1), a (log-)softmax case likewise over its rows, a pooling
// case over its images (one position each), an elementwise case as one position of both operands
// side by side (the op reading its two slices of the input buffer). The 16x8
// cases (not program ops yet) make a bundle of their own, "QLSB" (device::s16_bundle): files of
// both kinds together throw FormatError.
std::string device_bundle(const std::vector<VectorFile>& files);

// Runs the case through `variant` and compares every output (and final-state) value.
CaseResult run_case(const KernelCase& c, const LstmS8Variant& variant);
// The FC case through `variant` (nullptr: qlstm_fc_s8's dispatch); the softmax case.
CaseResult run_fc_case(const FcCase& c, const FcS8Variant* variant);
CaseResult run_softmax_case(const SoftmaxCase& c);
CaseResult run_log_softmax_case(const LogSoftmaxCase& c);
CaseResult run_layer_norm_case(const LayerNormCase& c);
// The RNN case through `variant` (nullptr: qlstm_rnn_s8's dispatch); a final state in final_hidden_s16.
CaseResult run_rnn_case(const RnnCase& c, const RnnS8Variant* variant);
// The attention pooling case through qlstm_attention_pool_s8 (one implementation).
CaseResult run_attention_pool_case(const AttentionPoolCase& c);
// The elementwise case through the given add or multiply variant (one that declines the case
// fails it, QLSTM_ERROR_NO_VARIANT), or, null, qlstm_add_s8 / qlstm_mul_s8.
CaseResult run_elementwise_case(const ElementwiseCase& c, const AddS8Variant* add = nullptr,
                                const MulS8Variant* mul = nullptr);
// The pooling case through qlstm_pool_s8.
// variant nullptr: qlstm_pool_s8's dispatch.
CaseResult run_pool_case(const PoolCase& c, const PoolS8Variant* variant);
// The 16x8 FC case through `variant` (nullptr: qlstm_fc_s16's dispatch).
CaseResult run_fc_s16_case(const FcS16Case& c, const FcS16Variant* variant);
// The 16x8 LSTM case through `variant` (nullptr: qlstm_lstm_s16's dispatch); the results in *_s16.
CaseResult run_lstm_s16_case(const LstmS16Case& c, const LstmS16Variant* variant);

}  // namespace vectors
}  // namespace qlstm

#endif  // QLSTM_TOOLS_KERNEL_VECTORS_H_
