#include "kernel_vectors.h"

#include "device.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <type_traits>

namespace qlstm {
namespace vectors {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A JSON value with the path that leads to it, so every error can name the key.
class Node {
 public:
  Node(const json& value, std::string where, std::string key)
      : value_(value), where_(std::move(where)), key_(std::move(key)) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw FormatError(where_ + ": key '" + key_ + "': " + why);
  }

  Node at(const std::string& name) const {
    if (!value_.is_object()) fail("expected an object");
    const auto it = value_.find(name);
    const std::string key = key_.empty() ? name : key_ + "." + name;
    if (it == value_.end()) throw FormatError(where_ + ": missing key '" + key + "'");
    return Node(*it, where_, key);
  }
  bool has(const std::string& name) const { return value_.is_object() && value_.contains(name); }
  bool is_null() const { return value_.is_null(); }
  const json& value() const { return value_; }

  int64_t integer(int64_t lo, int64_t hi) const {
    if (!value_.is_number_integer()) fail("expected an integer, got " + describe(value_));
    const int64_t v = value_.is_number_unsigned() && value_.get<uint64_t>() > INT64_MAX
                          ? INT64_MAX
                          : value_.get<int64_t>();
    if (v < lo || v > hi) {
      fail("value " + value_.dump() + " out of range [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]");
    }
    return v;
  }
  int32_t int32() const {
    return static_cast<int32_t>(integer(INT32_MIN, INT32_MAX));
  }
  double real() const {
    if (!value_.is_number()) fail("expected a number, got " + describe(value_));
    return value_.get<double>();
  }
  bool boolean() const {
    if (!value_.is_boolean()) fail("expected true or false, got " + describe(value_));
    return value_.get<bool>();
  }
  std::string string() const {
    if (!value_.is_string()) fail("expected a string, got " + describe(value_));
    return value_.get<std::string>();
  }

  template <typename T>
  std::vector<T> int_array(size_t expected_length) const {
    if (!value_.is_array()) fail("expected an array, got " + describe(value_));
    if (value_.size() != expected_length) {
      fail("expected " + std::to_string(expected_length) + " values, got " +
           std::to_string(value_.size()));
    }
    std::vector<T> out;
    out.reserve(expected_length);
    for (size_t k = 0; k < value_.size(); ++k) {
      const json& e = value_[k];
      const std::string at = "[" + std::to_string(k) + "]";
      if (!e.is_number_integer()) fail("element " + at + " is not an integer: " + describe(e));
      // An unsigned value above INT64_MAX is out of range for every T (int64_t included).
      const bool above_int64 = e.is_number_unsigned() && e.get<uint64_t>() > INT64_MAX;
      const int64_t v = above_int64 ? INT64_MAX : e.get<int64_t>();
      if (above_int64 || v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        fail("element " + at + " = " + e.dump() + " out of range [" +
             std::to_string(std::numeric_limits<T>::min()) + ", " +
             std::to_string(std::numeric_limits<T>::max()) + "]");
      }
      out.push_back(static_cast<T>(v));
    }
    return out;
  }

 private:
  static std::string describe(const json& v) {
    std::string s = v.dump();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return std::string(v.type_name()) + " " + s;
  }

  const json& value_;
  std::string where_;
  std::string key_;
};

qlstm_requant read_requant(const Node& n) {
  return {n.at("multiplier").int32(), n.at("shift").int32()};
}

constexpr const char* kGateKeys[QLSTM_GATE_COUNT] = {"forget", "input", "cell", "output"};

// The kernel names its fields after the C struct; the file names them after FORMAT.md.
std::string file_key_for_kernel_field(std::string field) {
  const std::pair<const char*, const char*> renames[] = {
      {"gates[forget]", "gates.forget"}, {"gates[input]", "gates.input"},
      {"gates[cell]", "gates.cell"}, {"gates[output]", "gates.output"},
      {"input_to_q3_12", "input"}, {"hidden_to_q3_12", "hidden"}, {"hard_sigmoid.slope", "hard_sigmoid"},
      {"forget_times_cell_to_cell", "forget_to_cell"},
      {"input_times_cell_gate_to_cell", "input_to_cell"},
      {"output_times_tanh_cell_to_hidden", "output"}, {"dims", "batch/time_steps/input_size/hidden_size"}};
  for (const auto& [from, to] : renames) {
    const size_t at = field.find(from);
    if (at != std::string::npos) field.replace(at, std::string(from).size(), to);
  }
  return field;
}

// An LSTM case of either format: KernelCase (lstm-s8-kernel-vectors/1) or LstmS16Case (its 16x8
// form: no zero points, int16 activations, int64 effective biases).
template <class Case>
Case read_lstm_case(const json& j, const std::string& where) {
  using Elem = typename Case::Elem;
  constexpr bool kS16 = std::is_same_v<Elem, int16_t>;
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  Case c;
  c.name = n.at("name").string();
  auto& p = c.block;
  p.layout = n.at("time_major").boolean() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  p.dims.batch = static_cast<int32_t>(n.at("batch").integer(1, INT32_MAX));
  p.dims.time_steps = static_cast<int32_t>(n.at("time_steps").integer(0, INT32_MAX));
  p.dims.input_size = static_cast<int32_t>(n.at("input_size").integer(1, INT32_MAX));
  p.dims.hidden_size = static_cast<int32_t>(n.at("hidden_size").integer(1, INT32_MAX));
  if (qlstm_lstm_s8_scratch_bytes(&p.dims) == 0) {
    n.fail("batch/time_steps/input_size/hidden_size: sizes too large");
  }
  if constexpr (!kS16) {
    c.input_zero_point = static_cast<int32_t>(n.at("input_zero_point").integer(INT8_MIN, INT8_MAX));
    p.output_zero_point = static_cast<int32_t>(n.at("output_zero_point").integer(INT8_MIN, INT8_MAX));
  }
  p.cell_scale_power = n.at("cell_scale_power").int32();
  p.cell_clip = n.at("cell_clip").int32();
  p.forget_times_cell_to_cell = read_requant(n.at("forget_to_cell"));
  p.input_times_cell_gate_to_cell = read_requant(n.at("input_to_cell"));
  p.output_times_tanh_cell_to_hidden = read_requant(n.at("output"));
  p.time_direction = QLSTM_TIME_FORWARD;
  p.output_width = 0;

  const size_t B = static_cast<size_t>(p.dims.batch), T = static_cast<size_t>(p.dims.time_steps);
  const size_t I = static_cast<size_t>(p.dims.input_size), H = static_cast<size_t>(p.dims.hidden_size);
  const Node gates = n.at("gates");
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const Node gn = gates.at(kGateKeys[g]);
    auto& gd = c.gates[static_cast<size_t>(g)];
    using Bias = typename std::decay_t<decltype(gd.input_effective_bias)>::value_type;
    auto& gp = p.gates[g];
    const Node act = gn.at("activation");
    const std::string a = act.string();
    if (a == "sigmoid") {
      gp.activation = QLSTM_ACTIVATION_SIGMOID;
    } else if (a == "tanh") {
      gp.activation = QLSTM_ACTIVATION_TANH;
    } else if (a == "hard_sigmoid" && !kS16) {
      // The project's extension (docs/kernel-vectors.md): the gate's line, docs/arithmetic.md §3.1.
      if constexpr (!kS16) {
        gp.activation = QLSTM_ACTIVATION_HARD_SIGMOID;
        const Node line = gn.at("hard_sigmoid");
        gp.hard_sigmoid.slope = read_requant(line);
        gp.hard_sigmoid.offset_q0_15 = line.at("offset_q0_15").int32();
      }
    } else {
      act.fail(std::string(kS16 ? "expected \"sigmoid\" or \"tanh\"" : "expected \"sigmoid\", \"tanh\" or \"hard_sigmoid\"") +
               ", got \"" + a + "\"");
    }
    const Node in = gn.at("input");
    gp.input_to_q3_12 = read_requant(in);
    gd.input_weights = in.at("weights").int_array<int8_t>(H * I);
    gd.input_effective_bias = in.at("effective_bias").int_array<Bias>(H);
    const Node hid = gn.at("hidden");
    gp.hidden_to_q3_12 = read_requant(hid);
    gd.hidden_weights = hid.at("weights").int_array<int8_t>(H * H);
    gd.hidden_effective_bias = hid.at("effective_bias").int_array<Bias>(H);
  }
  c.input = n.at("input").int_array<Elem>(B * T * I);
  const Node state = n.at("initial_state");
  c.stateful = !state.is_null();
  if (c.stateful) {
    c.initial_hidden = state.at("hidden").int_array<Elem>(B * H);
    c.initial_cell = state.at("cell").int_array<int16_t>(B * H);
  }
  const Node expected = n.at("expected");
  c.expected_output = expected.at("output").int_array<Elem>(B * T * H);
  if (c.stateful) {
    c.expected_final_hidden = expected.at("final_hidden").int_array<Elem>(B * H);
    c.expected_final_cell = expected.at("final_cell").int_array<int16_t>(B * H);
  }

  const auto params = c.params();
  const char* field = nullptr;
  qlstm_status st;
  if constexpr (kS16) {
    st = qlstm_lstm_s16_validate(&params, &field);
  } else {
    st = qlstm_lstm_s8_validate(&params, &field);
  }
  if (st != QLSTM_OK) {
    throw FormatError(where + ": key '" + file_key_for_kernel_field(field ? field : "?") +
                      "': value out of the kernel's range: " + qlstm_status_string(st));
  }
  return c;
}

// The kernel names its fields after the C struct; an op-vectors file names them after FORMAT.md.
std::string op_file_key(const std::string& field) {
  static const std::pair<const char*, const char*> renames[] = {
      {"rows", "batch/rows"},        {"multipliers", "multiplier"}, {"shifts", "shift"},
      {"effective_bias", "bias"},    {"input_multiplier", "multiplier"}, {"input_left_shift", "shift"}};
  for (const auto& [from, to] : renames) {
    if (field == from) return to;
  }
  return field;
}

// A kernel's refusal of a case's parameters, as a format error naming the file's key.
[[noreturn]] void refuse_params(const std::string& where, const char* field, qlstm_status st) {
  throw FormatError(where + ": key '" + op_file_key(field ? field : "?") +
                    "': value out of the kernel's range: " + qlstm_status_string(st));
}

// The kernel's validation of a case's parameters; a refusal is a format error naming the key.
template <typename Params>
void check_case_params(qlstm_status (*validate)(const Params*, const char**), const Params& params,
                       const std::string& where) {
  const char* field = nullptr;
  const qlstm_status st = validate(&params, &field);
  if (st != QLSTM_OK) refuse_params(where, field, st);
}

// An FC case's shape (both formats): batch, input_size, output_size, their products within int32.
template <typename Params>
void read_fc_shape(const Node& n, Params& p) {
  p.rows = static_cast<int32_t>(n.at("batch").integer(1, INT32_MAX));
  p.input_size = static_cast<int32_t>(n.at("input_size").integer(1, INT32_MAX));
  p.output_size = static_cast<int32_t>(n.at("output_size").integer(1, INT32_MAX));
  const int64_t B = p.rows, I = p.input_size, O = p.output_size;
  if (B * I > INT32_MAX || B * O > INT32_MAX || O * I > INT32_MAX) n.fail("batch/input_size/output_size: sizes too large");
}

FcCase read_fc_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  FcCase c;
  c.name = n.at("name").string();
  qlstm_fc_s8_params& p = c.block;
  read_fc_shape(n, p);
  const int64_t B = p.rows, I = p.input_size, O = p.output_size;
  c.input_zero_point = static_cast<int32_t>(n.at("input_zero_point").integer(INT8_MIN, INT8_MAX));
  p.output_zero_point = static_cast<int32_t>(n.at("output_zero_point").integer(INT8_MIN, INT8_MAX));
  p.activation_min = static_cast<int32_t>(n.at("activation_min").integer(INT8_MIN, INT8_MAX));
  p.activation_max = static_cast<int32_t>(n.at("activation_max").integer(INT8_MIN, INT8_MAX));
  p.per_channel = n.at("per_channel").boolean() ? 1 : 0;
  if (p.per_channel) {
    c.multipliers = n.at("multiplier").int_array<int32_t>(static_cast<size_t>(O));
    c.shifts = n.at("shift").int_array<int32_t>(static_cast<size_t>(O));
  } else {
    c.multipliers = {n.at("multiplier").int32()};
    c.shifts = {n.at("shift").int32()};
  }
  c.weights = n.at("weights").int_array<int8_t>(static_cast<size_t>(O * I));
  const Node bias = n.at("bias");
  if (!bias.is_null()) c.bias = bias.int_array<int32_t>(static_cast<size_t>(O));
  c.effective_bias.resize(static_cast<size_t>(O));
  // The input zero point folded into the bias, as the compiler does (fully_connected_s8.h).
  qlstm_fc_s8_effective_bias(c.weights.data(), c.bias.empty() ? nullptr : c.bias.data(), c.input_zero_point,
                             p.input_size, p.output_size, c.effective_bias.data());
  c.input = n.at("input").int_array<int8_t>(static_cast<size_t>(B * I));
  c.expected_output = n.at("expected").at("output").int_array<int8_t>(static_cast<size_t>(B * O));
  check_case_params(qlstm_fc_s8_validate, c.params(), where);
  return c;
}

FcS16Case read_fc_s16_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  FcS16Case c;
  c.name = n.at("name").string();
  qlstm_fc_s16_params& p = c.block;
  read_fc_shape(n, p);
  const int64_t B = p.rows, I = p.input_size, O = p.output_size;
  p.activation_min = static_cast<int32_t>(n.at("activation_min").integer(INT16_MIN, INT16_MAX));
  p.activation_max = static_cast<int32_t>(n.at("activation_max").integer(INT16_MIN, INT16_MAX));
  p.multiplier = n.at("multiplier").int32();
  p.shift = n.at("shift").int32();
  c.weights = n.at("weights").int_array<int8_t>(static_cast<size_t>(O * I));
  const Node bias = n.at("bias");
  if (!bias.is_null()) c.bias = bias.int_array<int64_t>(static_cast<size_t>(O));
  c.input = n.at("input").int_array<int16_t>(static_cast<size_t>(B * I));
  c.expected_output = n.at("expected").at("output").int_array<int16_t>(static_cast<size_t>(B * O));
  check_case_params(qlstm_fc_s16_validate, c.params(), where);
  return c;
}

// What a softmax and a log-softmax case share: name, rows, row_size, input_scale, the input
// scaling (multiplier, shift), diff_min, the input and the expected output.
template <class Case>
void read_softmax_rows(const Node& n, Case& c) {
  c.name = n.at("name").string();
  auto& p = c.params;
  p.rows = static_cast<int32_t>(n.at("rows").integer(1, INT32_MAX));
  p.row_size = static_cast<int32_t>(n.at("row_size").integer(1, INT32_MAX));
  const int64_t count = static_cast<int64_t>(p.rows) * p.row_size;
  if (count > INT32_MAX) n.fail("rows/row_size: sizes too large");
  c.input_scale = n.at("input_scale").real();
  p.input_multiplier = n.at("multiplier").int32();
  p.input_left_shift = n.at("shift").int32();
  p.diff_min = n.at("diff_min").int32();
  c.input = n.at("input").int_array<int8_t>(static_cast<size_t>(count));
  c.expected_output = n.at("expected").at("output").int_array<int8_t>(static_cast<size_t>(count));
}

SoftmaxCase read_softmax_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  SoftmaxCase c;
  read_softmax_rows(n, c);
  c.beta = n.at("beta").real();
  check_case_params(qlstm_softmax_s8_validate, c.params, where);
  return c;
}

LogSoftmaxCase read_log_softmax_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  LogSoftmaxCase c;
  read_softmax_rows(n, c);
  c.params.reverse_multiplier = n.at("reverse_multiplier").int32();
  c.params.reverse_shift = n.at("reverse_shift").int32();
  check_case_params(qlstm_log_softmax_s8_validate, c.params, where);
  return c;
}

LayerNormCase read_layer_norm_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  LayerNormCase c;
  c.name = n.at("name").string();
  qlstm_layer_norm_s8_params& p = c.params;
  p.rows = static_cast<int32_t>(n.at("rows").integer(1, INT32_MAX));
  p.row_size = static_cast<int32_t>(n.at("row_size").integer(1, QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX));
  const int64_t count = static_cast<int64_t>(p.rows) * p.row_size;
  if (count > INT32_MAX) n.fail("rows/row_size: sizes too large");
  p.epsilon_term = n.at("epsilon_term").int32();
  p.epsilon_shift = n.at("epsilon_shift").int32();
  p.output_shift = n.at("output_shift").int32();
  p.output_zero_point = n.at("output_zero_point").int32();
  c.weights = n.at("weights").int_array<int32_t>(static_cast<size_t>(p.row_size));
  c.biases = n.at("biases").int_array<int32_t>(static_cast<size_t>(p.row_size));
  c.input = n.at("input").int_array<int8_t>(static_cast<size_t>(count));
  c.expected_output = n.at("expected").at("output").int_array<int8_t>(static_cast<size_t>(count));
  const qlstm_layer_norm_s8_params checked = c.kernel_params();
  check_case_params(qlstm_layer_norm_s8_validate, checked, where);
  return c;
}

AttentionPoolCase read_attention_pool_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  AttentionPoolCase c;
  c.name = n.at("name").string();
  qlstm_attention_pool_s8_params& p = c.params;
  p.layout = n.at("time_major").boolean() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  p.batch = static_cast<int32_t>(n.at("batch").integer(1, INT32_MAX));
  p.time_steps = static_cast<int32_t>(n.at("time_steps").integer(1, QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX));
  p.row_size = static_cast<int32_t>(n.at("row_size").integer(1, INT32_MAX));
  const int64_t steps = static_cast<int64_t>(p.batch) * p.time_steps;
  if (steps * p.row_size > INT32_MAX) n.fail("batch/time_steps/row_size: sizes too large");
  p.input_multiplier = n.at("input_multiplier").int32();
  p.input_left_shift = n.at("input_left_shift").int32();
  p.diff_min = n.at("diff_min").int32();
  p.zero_point = n.at("zero_point").int32();
  c.score_scale = n.at("score_scale").real();
  c.scores = n.at("scores").int_array<int8_t>(static_cast<size_t>(steps));
  c.sequence = n.at("sequence").int_array<int8_t>(static_cast<size_t>(steps * p.row_size));
  c.expected_output =
      n.at("expected_output").int_array<int8_t>(static_cast<size_t>(p.batch) * static_cast<size_t>(p.row_size));
  check_case_params(qlstm_attention_pool_s8_validate, c.params, where);
  const size_t W = static_cast<size_t>(p.row_size), positions = static_cast<size_t>(steps);
  for (size_t k = 0; k < positions; ++k) {  // both in the layout: position k is the same (b, t)
    c.device_input.insert(c.device_input.end(), c.sequence.begin() + static_cast<ptrdiff_t>(k * W),
                          c.sequence.begin() + static_cast<ptrdiff_t>((k + 1) * W));
    c.device_input.push_back(c.scores[k]);
  }
  c.copy_weights.assign(W * (W + 1), 0);
  for (size_t o = 0; o < W; ++o) c.copy_weights[o * (W + 1) + o] = 1;
  c.score_weights.assign(W + 1, 0);
  c.score_weights[W] = 1;
  c.zero_biases.assign(W, 0);
  return c;
}

// The index of `value` among `names` (the file's words for an enum), or a format error.
int32_t read_choice(const Node& n, std::initializer_list<const char*> names) {
  const std::string v = n.string();
  int32_t k = 0;
  std::string expected;
  for (const char* name : names) {
    if (v == name) return k;
    expected += (expected.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    ++k;
  }
  n.fail("expected " + expected + ", got \"" + v + "\"");
}

RnnCase read_rnn_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  RnnCase c;
  c.name = n.at("name").string();
  qlstm_rnn_s8_params& p = c.block;
  p.layout = n.at("time_major").boolean() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  p.dims.batch = static_cast<int32_t>(n.at("batch").integer(1, INT32_MAX));
  p.dims.time_steps = static_cast<int32_t>(n.at("time_steps").integer(0, INT32_MAX));
  p.dims.input_size = static_cast<int32_t>(n.at("input_size").integer(1, INT32_MAX));
  p.dims.hidden_size = static_cast<int32_t>(n.at("hidden_size").integer(1, INT32_MAX));
  if (qlstm_rnn_s8_scratch_bytes(&p.dims) == 0) n.fail("batch/time_steps/input_size/hidden_size: sizes too large");
  p.activation = read_choice(n.at("activation"), {"tanh", "relu"});  // QLSTM_RNN_TANH, QLSTM_RNN_RELU
  p.time_direction = read_choice(n.at("time_direction"), {"forward", "reverse"});
  p.output_steps = read_choice(n.at("output_steps"), {"all", "final", "first"});  // qlstm_output_steps order
  c.input_zero_point = static_cast<int32_t>(n.at("input_zero_point").integer(INT8_MIN, INT8_MAX));
  p.output_zero_point = static_cast<int32_t>(n.at("output_zero_point").integer(INT8_MIN, INT8_MAX));
  p.gate.input_to_q3_12 = read_requant(n.at("input_to_q3_12"));
  p.gate.hidden_to_q3_12 = read_requant(n.at("hidden_to_q3_12"));
  p.hidden_to_output = read_requant(n.at("hidden_to_output"));
  const size_t B = static_cast<size_t>(p.dims.batch), T = static_cast<size_t>(p.dims.time_steps);
  const size_t I = static_cast<size_t>(p.dims.input_size), H = static_cast<size_t>(p.dims.hidden_size);
  c.gate.input_weights = n.at("input_weights").int_array<int8_t>(H * I);
  c.gate.input_effective_bias = n.at("input_effective_bias").int_array<int32_t>(H);
  c.gate.hidden_weights = n.at("hidden_weights").int_array<int8_t>(H * H);
  c.gate.hidden_effective_bias = n.at("hidden_effective_bias").int_array<int32_t>(H);
  c.input = n.at("input").int_array<int8_t>(B * T * I);
  const Node state = n.at("initial_hidden");
  c.stateful = !state.is_null();
  if (c.stateful) {
    c.initial_hidden = state.int_array<int16_t>(B * H);
    c.unused_hidden.assign(B * H, 0);
  }
  c.expected_output = n.at("expected_output").int_array<int8_t>(c.output_count());
  const Node final_state = n.at("expected_final_hidden");
  if (c.stateful) c.expected_final_hidden = final_state.int_array<int16_t>(B * H);
  check_case_params(qlstm_rnn_s8_validate, c.params(), where);
  return c;
}


PoolCase read_pool_case(const json& j, const std::string& where) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  PoolCase c;
  c.name = n.at("name").string();
  qlstm_pool_s8_params& p = c.params;
  const std::string kind = n.at("kind").string();
  if (kind != "max" && kind != "avg") n.at("kind").fail("expected \"max\" or \"avg\"");
  p.kind = kind == "max" ? QLSTM_POOL_MAX : QLSTM_POOL_AVERAGE;
  auto pair = [&](const char* key, int32_t* a, int32_t* b) {
    const std::vector<int32_t> v = n.at(key).int_array<int32_t>(2);
    *a = v[0];
    *b = v[1];
  };
  const std::vector<int32_t> in = n.at("input_shape").int_array<int32_t>(4);
  const std::vector<int32_t> out = n.at("output_shape").int_array<int32_t>(4);
  if (in[0] != out[0] || in[3] != out[3]) n.at("output_shape").fail("batch and channels must be the input's");
  p.batch = in[0];
  p.input_height = in[1];
  p.input_width = in[2];
  p.channels = in[3];
  p.output_height = out[1];
  p.output_width = out[2];
  pair("window", &p.window_height, &p.window_width);
  pair("stride", &p.stride_height, &p.stride_width);
  pair("padding", &p.padding_height, &p.padding_width);
  p.activation_min = static_cast<int32_t>(n.at("activation_min").integer(INT8_MIN, INT8_MAX));
  p.activation_max = static_cast<int32_t>(n.at("activation_max").integer(INT8_MIN, INT8_MAX));
  check_case_params(qlstm_pool_s8_validate, p, where);
  const size_t in_count = static_cast<size_t>(p.batch) * p.input_height * p.input_width * p.channels;
  const size_t out_count = static_cast<size_t>(p.batch) * p.output_height * p.output_width * p.channels;
  c.input = n.at("input").int_array<int8_t>(in_count);
  c.expected_output = n.at("expected").at("output").int_array<int8_t>(out_count);
  return c;
}

ElementwiseCase read_elementwise_case(const json& j, const std::string& where, bool multiply) {
  const Node n(j, where, "");
  if (!j.is_object()) n.fail("a case must be an object");
  ElementwiseCase c;
  c.name = n.at("name").string();
  c.multiply = multiply;
  qlstm_elementwise_s8_shape shape{};
  shape.rows = 1;
  shape.row_size = static_cast<int32_t>(n.at("size").integer(1, INT32_MAX / 2));
  const auto s8 = [&](const char* key) { return static_cast<int32_t>(n.at(key).integer(INT8_MIN, INT8_MAX)); };
  // What both blocks hold past the add's input rescaling.
  const auto read_common = [&](auto& p) {
    p.shape = shape;
    p.input1_zero_point = s8("input1_zero_point");
    p.input2_zero_point = s8("input2_zero_point");
    p.output_multiplier = n.at("output_multiplier").int32();
    p.output_shift = n.at("output_shift").int32();
    p.output_zero_point = s8("output_zero_point");
    p.activation_min = s8("activation_min");
    p.activation_max = s8("activation_max");
  };
  if (multiply) {
    read_common(c.mul);
    check_case_params(qlstm_mul_s8_validate, c.mul, where);
  } else {
    qlstm_add_s8_params& p = c.add;
    read_common(p);
    p.left_shift = n.at("left_shift").int32();
    p.input1_multiplier = n.at("input1_multiplier").int32();
    p.input1_shift = n.at("input1_shift").int32();
    p.input2_multiplier = n.at("input2_multiplier").int32();
    p.input2_shift = n.at("input2_shift").int32();
    check_case_params(qlstm_add_s8_validate, p, where);
  }
  const size_t size = static_cast<size_t>(shape.row_size);
  c.input1 = n.at("input1").int_array<int8_t>(size);
  c.input2 = n.at("input2").int_array<int8_t>(size);
  c.both_inputs = c.input1;
  c.both_inputs.insert(c.both_inputs.end(), c.input2.begin(), c.input2.end());
  c.expected_output = n.at("expected").at("output").int_array<int8_t>(size);
  return c;
}

// The first differing value of a [rows][row_size] output, as "output[k] (row=r col=c): ...".
template <typename Value>
std::string first_row_mismatch(const std::vector<Value>& expected, const std::vector<Value>& got, int32_t row_size,
                               const char* row, const char* col) {
  for (size_t k = 0; k < expected.size(); ++k) {
    if (expected[k] == got[k]) continue;
    std::ostringstream s;
    const size_t n = static_cast<size_t>(row_size);
    s << "output[" << k << "] (" << row << "=" << k / n << " " << col << "=" << k % n << "): expected "
      << static_cast<int>(expected[k]) << ", got " << static_cast<int>(got[k]);
    return s.str();
  }
  return {};
}

template <typename Value, class Case>
std::string first_mismatch(const char* what, const std::vector<Value>& expected,
                           const std::vector<Value>& got, const Case& c, bool sequence) {
  for (size_t k = 0; k < expected.size(); ++k) {
    if (expected[k] == got[k]) continue;
    std::ostringstream s;
    s << what << "[" << k << "]";
    const size_t H = static_cast<size_t>(c.dims().hidden_size);
    const size_t B = static_cast<size_t>(c.dims().batch);
    const size_t T = static_cast<size_t>(c.dims().time_steps);
    const size_t row = k / H;
    if (sequence) {
      const size_t b = c.time_major() ? row % B : row / T;
      const size_t t = c.time_major() ? row / B : row % T;
      s << " (b=" << b << " t=" << t << " h=" << k % H << ")";
    } else {
      s << " (b=" << row << " h=" << k % H << ")";
    }
    s << ": expected " << static_cast<int>(expected[k]) << ", got " << static_cast<int>(got[k]);
    return s.str();
  }
  return {};
}

struct alignas(QLSTM_SCRATCH_ALIGNMENT) ScratchBlock {
  unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
};

}  // namespace

namespace {
// An LSTM case's block with its gates' arrays pointing into the case.
template <class Params, class Gates>
Params with_gate_arrays(Params p, const Gates& gates) {
  for (size_t g = 0; g < gates.size(); ++g) {
    p.gates[g].input_weights = gates[g].input_weights.data();
    p.gates[g].input_effective_bias = gates[g].input_effective_bias.data();
    p.gates[g].hidden_weights = gates[g].hidden_weights.data();
    p.gates[g].hidden_effective_bias = gates[g].hidden_effective_bias.data();
  }
  return p;
}

// The first differing value of an LSTM call: the output, then (stateful) the final state.
template <class Case, class Elem>
std::string lstm_mismatch(const Case& c, const std::vector<Elem>& output, const std::vector<Elem>& final_hidden,
                          const std::vector<int16_t>& final_cell) {
  std::string m = first_mismatch("output", c.expected_output, output, c, true);
  if (m.empty() && c.stateful) {
    m = first_mismatch("final_hidden", c.expected_final_hidden, final_hidden, c, false);
    if (m.empty()) m = first_mismatch("final_cell", c.expected_final_cell, final_cell, c, false);
  }
  return m;
}
}  // namespace

size_t RnnCase::output_count() const {
  const qlstm_rnn_dims& d = block.dims;
  const size_t steps = block.output_steps == QLSTM_OUTPUT_ALL_STEPS ? static_cast<size_t>(d.time_steps) : 1;
  return static_cast<size_t>(d.batch) * steps * static_cast<size_t>(d.hidden_size);
}

qlstm_rnn_s8_params RnnCase::params() const {
  qlstm_rnn_s8_params p = block;
  p.gate.input_weights = gate.input_weights.data();
  p.gate.input_effective_bias = gate.input_effective_bias.data();
  p.gate.hidden_weights = gate.hidden_weights.data();
  p.gate.hidden_effective_bias = gate.hidden_effective_bias.data();
  return p;
}

qlstm_lstm_s8_params KernelCase::params() const { return with_gate_arrays(block, gates); }

qlstm_lstm_s16_params LstmS16Case::params() const { return with_gate_arrays(block, gates); }

qlstm_fc_s16_params FcS16Case::params() const {
  qlstm_fc_s16_params p = block;
  p.weights = weights.data();
  p.bias = bias.empty() ? nullptr : bias.data();
  return p;
}

qlstm_fc_s8_params FcCase::params() const {
  qlstm_fc_s8_params p = block;
  p.multipliers = multipliers.data();
  p.shifts = shifts.data();
  p.weights = weights.data();
  p.effective_bias = effective_bias.data();
  return p;
}

VectorFile load_vector_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path + ": cannot open file");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw FormatError(path + ": not valid JSON: " + e.what());
  }
  const Node root(doc, path, "");
  if (!doc.is_object()) root.fail("the file must hold a JSON object");
  const std::string format = root.at("format").string();
  if (format != kFormat && format != kFcFormat && format != kSoftmaxFormat && format != kFcS16Format &&
      format != kLstmS16Format && format != kPoolFormat && format != kLogSoftmaxFormat && format != kAddFormat &&
      format != kMulFormat && format != kLayerNormFormat && format != kRnnFormat && format != kAttentionPoolFormat) {
    root.at("format").fail("unsupported format \"" + format + "\" (expected \"" + kFormat + "\", \"" + kFcFormat +
                           "\", \"" + kSoftmaxFormat + "\", \"" + kFcS16Format + "\", \"" + kLstmS16Format +
                           "\", \"" + kPoolFormat + "\", \"" + kLogSoftmaxFormat + "\", \"" + kAddFormat + "\", \"" + kMulFormat +
                           "\", \"" + kLayerNormFormat + "\", \"" + kRnnFormat + "\" or \"" +
                           kAttentionPoolFormat + "\")");
  }
  VectorFile file;
  file.path = path;
  file.format = format;
  if (root.has("description")) file.description = root.at("description").string();
  const Node cases_node = root.at("cases");
  const json& cases = cases_node.value();
  if (!cases.is_array()) cases_node.fail("expected an array");
  std::set<std::string> names;
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string where = path + ": case #" + std::to_string(k);
    if (cases[k].is_object() && cases[k].contains("name") && cases[k]["name"].is_string()) {
      where += " '" + cases[k]["name"].get<std::string>() + "'";
    }
    std::string name;
    if (format == kFcFormat) {
      file.fc_cases.push_back(read_fc_case(cases[k], where));
      name = file.fc_cases.back().name;
    } else if (format == kLstmS16Format) {
      file.lstm_s16_cases.push_back(read_lstm_case<LstmS16Case>(cases[k], where));
      name = file.lstm_s16_cases.back().name;
    } else if (format == kFcS16Format) {
      file.fc_s16_cases.push_back(read_fc_s16_case(cases[k], where));
      name = file.fc_s16_cases.back().name;
    } else if (format == kPoolFormat) {
      file.pool_cases.push_back(read_pool_case(cases[k], where));
      name = file.pool_cases.back().name;
    } else if (format == kSoftmaxFormat) {
      file.softmax_cases.push_back(read_softmax_case(cases[k], where));
      name = file.softmax_cases.back().name;
    } else if (format == kAddFormat || format == kMulFormat) {
      file.elementwise_cases.push_back(read_elementwise_case(cases[k], where, format == kMulFormat));
      name = file.elementwise_cases.back().name;
    } else if (format == kLogSoftmaxFormat) {
      file.log_softmax_cases.push_back(read_log_softmax_case(cases[k], where));
      name = file.log_softmax_cases.back().name;
    } else if (format == kAttentionPoolFormat) {
      file.attention_cases.push_back(read_attention_pool_case(cases[k], where));
      name = file.attention_cases.back().name;
    } else if (format == kRnnFormat) {
      file.rnn_cases.push_back(read_rnn_case(cases[k], where));
      name = file.rnn_cases.back().name;
    } else if (format == kLayerNormFormat) {
      file.layer_norm_cases.push_back(read_layer_norm_case(cases[k], where));
      name = file.layer_norm_cases.back().name;
    } else {
      file.cases.push_back(read_lstm_case<KernelCase>(cases[k], where));
      name = file.cases.back().name;
    }
    if (!names.insert(name).second) {
      throw FormatError(where + ": key 'name': duplicate case name");
    }
  }
  return file;
}

std::vector<std::string> collect_vector_files(const std::vector<std::string>& paths) {
  std::set<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw FormatError(p + ": no such file or folder");
    if (fs::is_directory(st)) {
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_regular_file() && it->path().extension() == ".json") {
          files.insert(it->path().lexically_normal().string());
        }
      }
      if (ec) throw FormatError(p + ": cannot list folder: " + ec.message());
    } else {
      files.insert(fs::path(p).lexically_normal().string());
    }
  }
  return {files.begin(), files.end()};
}

namespace {
// An LSTM case's data and expected values into its bundle case (device::BundleCase, S16BundleCase).
template <class Case, class Bundled>
void set_lstm_data(const Case& c, Bundled& b) {
  b.check = true;
  b.stateful = c.stateful;
  b.input = c.input.data();
  b.expected = c.expected_output.data();
  if (c.stateful) {
    b.h0 = c.initial_hidden.data();
    b.c0 = c.initial_cell.data();
    b.final_h = c.expected_final_hidden.data();
    b.final_c = c.expected_final_cell.data();
  }
}

// An RNN case as a one-op program over its call; its int16 state in the cell rows (its hidden rows
// unused: zeros in, zeros expected back).
device::BundleCase rnn_bundle_case(const RnnCase& c) {
  const qlstm_rnn_s8_params params = c.params();  // its arrays stay the case's
  qlstm_op op{};
  op.kind = QLSTM_OP_RNN_S8;
  op.params = &params;
  op.output_buffer = 1;
  device::BundleCase b;
  b.name = c.name;
  b.ops = {OwnedOp(op)};  // a copy of the block
  b.buffer_widths = {params.dims.input_size, params.dims.hidden_size};
  const bool one_step = params.output_steps != QLSTM_OUTPUT_ALL_STEPS;
  b.buffer_steps = {QLSTM_BUFFER_EVERY_STEP, one_step ? QLSTM_BUFFER_ONE_STEP : QLSTM_BUFFER_EVERY_STEP};
  b.batch = params.dims.batch;
  b.time_steps = params.dims.time_steps;
  b.layout = params.layout;
  b.check = true;
  b.stateful = c.stateful;
  b.input = c.input.data();
  b.expected = c.expected_output.data();
  if (c.stateful) {
    b.h0 = c.unused_hidden.data();
    b.final_h = c.unused_hidden.data();
    b.c0 = c.initial_hidden.data();
    b.final_c = c.expected_final_hidden.data();
  }
  return b;
}

// An attention pooling case as a program of three ops: the input rows [sequence | score] copied
// apart by two fully connected ops (identity weights and requantization: exact), then the pooling
// of the scores (width 1) over the sequence (width W) into one row per batch row.
device::BundleCase attention_bundle_case(const AttentionPoolCase& c) {
  const int32_t W = c.params.row_size;
  qlstm_fc_s8_params copy = {0, W + 1, W, 0, &c.unit_multiplier, &c.unit_shift, c.copy_weights.data(),
                             c.zero_biases.data(), 0, INT8_MIN, INT8_MAX};
  qlstm_fc_s8_params score = copy;
  score.output_size = 1;
  score.weights = c.score_weights.data();
  qlstm_attention_pool_s8_params pool = c.params;
  pool.batch = pool.time_steps = pool.layout = 0;  // the runner's
  qlstm_op ops[3] = {};
  ops[0].kind = ops[1].kind = QLSTM_OP_FULLY_CONNECTED_S8;
  ops[0].params = &copy;
  ops[0].output_buffer = 1;
  ops[1].params = &score;
  ops[1].output_buffer = 2;
  ops[2].kind = QLSTM_OP_ATTENTION_POOL_S8;
  ops[2].params = &pool;
  ops[2].input_buffer = 2;
  ops[2].second_input_buffer = 1;
  ops[2].output_buffer = 3;
  device::BundleCase b;
  b.name = c.name;
  for (const qlstm_op& op : ops) b.ops.emplace_back(op);  // each with a copy of its block
  b.buffer_widths = {W + 1, W, 1, W};
  b.buffer_steps = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_ONE_STEP};
  b.batch = c.params.batch;
  b.time_steps = c.params.time_steps;
  b.layout = c.params.layout;
  b.check = true;
  b.input = c.device_input.data();
  b.expected = c.expected_output.data();
  return b;
}

// The 16x8 cases of the files as a "QLSB" bundle (device::s16_bundle).
std::string device_s16_bundle(const std::vector<VectorFile>& files) {
  std::vector<device::S16BundleCase> out;
  for (const VectorFile& f : files) {
    for (const FcS16Case& c : f.fc_s16_cases) {
      device::S16BundleCase b;
      b.name = c.name;
      b.fc = c.params();
      b.check = true;
      b.input = c.input.data();
      b.expected = c.expected_output.data();
      out.push_back(std::move(b));
    }
    for (const LstmS16Case& c : f.lstm_s16_cases) {
      device::S16BundleCase b;
      b.name = c.name;
      b.lstm = true;
      b.lstm_params = c.params();
      set_lstm_data(c, b);
      out.push_back(std::move(b));
    }
  }
  return device::s16_bundle(out);
}
}  // namespace

std::string device_bundle(const std::vector<VectorFile>& files) {
  size_t s16 = 0, total = 0;
  for (const VectorFile& f : files) {
    s16 += f.fc_s16_cases.size() + f.lstm_s16_cases.size();
    total += f.case_count();
  }
  if (s16 > 0 && s16 < total) {
    throw FormatError("the 16x8 vector files (" + std::string(kFcS16Format) + ", " + kLstmS16Format +
                      ") go to the device in a call of their own, without int8 files");
  }
  if (s16 > 0) return device_s16_bundle(files);
  std::vector<device::BundleCase> out;
  // A one-op program over B rows of one step each: buffers {in, out} of one position per row.
  auto row_case = [&](const std::string& name, const qlstm_op& op, int32_t rows, int32_t in_width, int32_t out_width,
                      const std::vector<int8_t>& input, const std::vector<int8_t>& expected) {
    device::BundleCase b;
    b.name = name;
    b.ops = {OwnedOp(op)};  // a copy of the block the caller's op points to
    b.buffer_widths = {in_width, out_width};
    b.batch = rows;
    b.time_steps = 1;
    b.input = input.data();
    b.check = true;
    b.expected = expected.data();
    out.push_back(std::move(b));
  };
  for (const VectorFile& f : files) {
    for (const KernelCase& c : f.cases) {
      device::BundleCase b = device::single_op_case(c.name, c.params());
      set_lstm_data(c, b);
      out.push_back(std::move(b));
    }
    for (const FcCase& c : f.fc_cases) {
      const qlstm_fc_s8_params params = c.params();
      qlstm_op op{};
      op.kind = QLSTM_OP_FULLY_CONNECTED_S8;
      op.params = &params;
      op.output_buffer = 1;
      row_case(c.name, op, c.block.rows, c.block.input_size, c.block.output_size, c.input, c.expected_output);
    }
    for (const PoolCase& c : f.pool_cases) {
      qlstm_op op{};
      op.kind = QLSTM_OP_POOL_S8;
      op.params = &c.params;
      op.output_buffer = 1;
      const qlstm_pool_s8_params& p = c.params;
      row_case(c.name, op, p.batch, p.input_height * p.input_width * p.channels,
               p.output_height * p.output_width * p.channels, c.input, c.expected_output);
    }
    for (const SoftmaxCase& c : f.softmax_cases) {
      qlstm_op op{};
      op.kind = QLSTM_OP_SOFTMAX_S8;
      op.params = &c.params;
      op.output_buffer = 1;
      row_case(c.name, op, c.params.rows, c.params.row_size, c.params.row_size, c.input, c.expected_output);
    }
    for (const ElementwiseCase& c : f.elementwise_cases) {
      // Both operands are slices of one input row: [input1 | input2].
      qlstm_op op{};
      qlstm_add_s8_params add = c.add;
      qlstm_mul_s8_params mul = c.mul;
      qlstm_elementwise_s8_shape& shape = c.multiply ? mul.shape : add.shape;
      shape.input2_offset = c.size();
      op.kind = c.multiply ? QLSTM_OP_MUL_S8 : QLSTM_OP_ADD_S8;
      op.params = c.multiply ? static_cast<const void*>(&mul) : static_cast<const void*>(&add);
      op.output_buffer = 1;
      row_case(c.name, op, 1, 2 * c.size(), c.size(), c.both_inputs, c.expected_output);
    }
    for (const LogSoftmaxCase& c : f.log_softmax_cases) {
      qlstm_op op{};
      op.kind = QLSTM_OP_LOG_SOFTMAX_S8;
      op.params = &c.params;
      op.output_buffer = 1;
      row_case(c.name, op, c.params.rows, c.params.row_size, c.params.row_size, c.input, c.expected_output);
    }
    for (const RnnCase& c : f.rnn_cases) out.push_back(rnn_bundle_case(c));
    for (const AttentionPoolCase& c : f.attention_cases) out.push_back(attention_bundle_case(c));
    for (const LayerNormCase& c : f.layer_norm_cases) {
      const qlstm_layer_norm_s8_params block = c.kernel_params();  // its arrays stay the case's
      qlstm_op op{};
      op.kind = QLSTM_OP_LAYER_NORM_S8;
      op.params = &block;
      op.output_buffer = 1;
      row_case(c.name, op, c.params.rows, c.params.row_size, c.params.row_size, c.input, c.expected_output);
    }
  }
  return device::bundle(out);
}

CaseResult run_fc_case(const FcCase& c, const FcS8Variant* variant) {
  CaseResult r;
  const qlstm_fc_s8_params params = c.params();
  r.output.assign(c.expected_output.size(), 0);
  r.status = variant != nullptr ? run_fc_s8(*variant, &params, c.input.data(), r.output.data())
                                : qlstm_fc_s8(&params, c.input.data(), r.output.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output, params.output_size, "b", "o");
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_fc_s16_case(const FcS16Case& c, const FcS16Variant* variant) {
  CaseResult r;
  const qlstm_fc_s16_params params = c.params();
  r.output_s16.assign(c.expected_output.size(), 0);
  r.status = variant != nullptr ? run_fc_s16(*variant, &params, c.input.data(), r.output_s16.data())
                                : qlstm_fc_s16(&params, c.input.data(), r.output_s16.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output_s16, params.output_size, "b", "o");
  r.passed = r.mismatch.empty();
  return r;
}

// An int8 case of a kernel with its own status (kernel(&params, in, out)): its output against the
// expected [rows][row_size] values.
template <class Case, class Kernel>
CaseResult run_int8_rows_case(const Case& c, Kernel kernel, int32_t row_size, const char* row, const char* col) {
  CaseResult r;
  r.output.assign(c.expected_output.size(), 0);
  r.status = kernel(&c.params, c.input.data(), r.output.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output, row_size, row, col);
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_pool_case(const PoolCase& c, const PoolS8Variant* variant) {
  if (variant == nullptr) return run_int8_rows_case(c, qlstm_pool_s8, c.params.channels, "position", "c");
  const auto with_variant = [variant](const qlstm_pool_s8_params* p, const int8_t* in, int8_t* out) {
    return run_pool_s8(*variant, p, in, out);
  };
  return run_int8_rows_case(c, with_variant, c.params.channels, "position", "c");
}

CaseResult run_softmax_case(const SoftmaxCase& c) {
  return run_int8_rows_case(c, qlstm_softmax_s8, c.params.row_size, "row", "i");
}

CaseResult run_log_softmax_case(const LogSoftmaxCase& c) {
  return run_int8_rows_case(c, qlstm_log_softmax_s8, c.params.row_size, "row", "i");
}

CaseResult run_rnn_case(const RnnCase& c, const RnnS8Variant* variant) {
  CaseResult r;
  const qlstm_rnn_s8_params params = c.params();
  std::vector<int16_t> state = c.initial_hidden;
  const size_t bytes = qlstm_rnn_s8_scratch_bytes(&params.dims);
  std::vector<uint64_t> scratch(bytes / sizeof(uint64_t) + 1);  // 8-byte aligned
  qlstm_rnn_s8_context ctx = {scratch.data(), bytes, c.stateful ? state.data() : nullptr};
  r.output.assign(c.expected_output.size(), 0);
  r.status = variant != nullptr ? run_rnn_s8(*variant, &params, &ctx, c.input.data(), r.output.data())
                                : qlstm_rnn_s8(&params, &ctx, c.input.data(), r.output.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output, params.dims.hidden_size, "position", "h");
  if (r.mismatch.empty() && c.stateful) {
    r.final_hidden_s16 = state;
    r.mismatch = first_row_mismatch(c.expected_final_hidden, state, params.dims.hidden_size, "b", "final h");
  }
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_attention_pool_case(const AttentionPoolCase& c) {
  CaseResult r;
  r.output.assign(c.expected_output.size(), 0);
  r.status = qlstm_attention_pool_s8(&c.params, c.scores.data(), c.sequence.data(), r.output.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output, c.params.row_size, "b", "f");
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_layer_norm_case(const LayerNormCase& c) {
  struct Rows {
    std::string name;
    qlstm_layer_norm_s8_params params;
    const std::vector<int8_t>& input;
    const std::vector<int8_t>& expected_output;
  } rows{c.name, c.kernel_params(), c.input, c.expected_output};
  return run_int8_rows_case(rows, qlstm_layer_norm_s8, c.params.row_size, "row", "i");
}

CaseResult run_elementwise_case(const ElementwiseCase& c, const AddS8Variant* add, const MulS8Variant* mul) {
  CaseResult r;
  r.output.assign(c.expected_output.size(), 0);
  const int8_t* x1 = c.input1.data();
  const int8_t* x2 = c.input2.data();
  if (c.multiply) {
    r.status = mul != nullptr ? run_mul_s8(*mul, &c.mul, x1, x2, r.output.data()) : qlstm_mul_s8(&c.mul, x1, x2, r.output.data());
  } else {
    r.status = add != nullptr ? run_add_s8(*add, &c.add, x1, x2, r.output.data()) : qlstm_add_s8(&c.add, x1, x2, r.output.data());
  }
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = first_row_mismatch(c.expected_output, r.output, c.size(), "row", "i");
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_lstm_s16_case(const LstmS16Case& c, const LstmS16Variant* variant) {
  CaseResult r;
  const qlstm_lstm_s16_params params = c.params();
  const size_t BH = static_cast<size_t>(c.dims().batch) * static_cast<size_t>(c.dims().hidden_size);
  std::vector<ScratchBlock> scratch(qlstm_lstm_s16_scratch_bytes(&c.dims()) / sizeof(ScratchBlock) + 1);
  r.output_s16.assign(c.expected_output.size(), 0);
  r.final_cell = c.stateful ? c.initial_cell : std::vector<int16_t>(BH, 0);
  r.final_hidden_s16 = c.initial_hidden;
  qlstm_lstm_s16_context ctx{scratch.data(), scratch.size() * sizeof(ScratchBlock), r.final_cell.data(),
                             c.stateful ? r.final_hidden_s16.data() : nullptr};
  r.status = variant != nullptr ? run_lstm_s16(*variant, &params, &ctx, c.input.data(), r.output_s16.data())
                                : qlstm_lstm_s16(&params, &ctx, c.input.data(), r.output_s16.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = lstm_mismatch(c, r.output_s16, r.final_hidden_s16, r.final_cell);
  r.passed = r.mismatch.empty();
  return r;
}

CaseResult run_case(const KernelCase& c, const LstmS8Variant& variant) {
  CaseResult r;
  const qlstm_lstm_s8_params params = c.params();
  const size_t BH = static_cast<size_t>(c.dims().batch) * static_cast<size_t>(c.dims().hidden_size);
  const size_t scratch_bytes = qlstm_lstm_s8_scratch_bytes(&c.dims());
  std::vector<ScratchBlock> scratch(scratch_bytes / sizeof(ScratchBlock) + 1);
  r.output.assign(c.expected_output.size(), 0);
  r.final_cell = c.stateful ? c.initial_cell : std::vector<int16_t>(BH, 0);
  r.final_hidden = c.initial_hidden;
  qlstm_lstm_s8_context ctx{scratch.data(), scratch.size() * sizeof(ScratchBlock),
                            r.final_cell.data(), c.stateful ? r.final_hidden.data() : nullptr};
  r.status = run_lstm_s8(variant, &params, &ctx, c.input.data(), r.output.data());
  if (r.status != QLSTM_OK) {
    r.mismatch = std::string("kernel returned an error: ") + qlstm_status_string(r.status);
    return r;
  }
  r.mismatch = lstm_mismatch(c, r.output, r.final_hidden, r.final_cell);
  r.passed = r.mismatch.empty();
  return r;
}

}  // namespace vectors
}  // namespace qlstm
