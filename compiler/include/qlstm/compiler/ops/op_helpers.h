// What the op kinds' files share: their parameter records through the runtime's description of each
// block (params_codec.h), the checks every record reader makes, and the report's small columns.
// Only compiler/src/ops/ includes it. Host only.
#ifndef QLSTM_COMPILER_OPS_OP_HELPERS_H_
#define QLSTM_COMPILER_OPS_OP_HELPERS_H_

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"
#include "qlstm/params_codec.h"

namespace qlstm {
namespace compiler {
namespace ops {

[[noreturn]] void bad_record(const OpFileOrigin& from, const std::string& why);

// RecurrentState::shape of a kind whose block is int8 at affine quantizations on both sides and
// keeps H values per row in each state array (the int8 LSTM, the GRU).
template <class Derived>
RecurrentShape affine_recurrent_shape(const ProgramOp& op) {
  const Derived& d = op.as<Derived>();
  return {d.hidden_size, d.time_direction, d.output_steps, d.input, d.output, d.hidden_size};
}

// RecurrentState::set_output_steps of any recurrent kind's block.
template <class Derived>
void set_recurrent_output_steps(ProgramOp* op, int32_t output_steps) {
  op->as<Derived>().output_steps = output_steps;
}

// A constant state of one row ([H], repeated) or of `batch` rows ([B][H]) appended for `batch`
// rows; `zero` fills them when there is no constant.
template <class T>
void append_state_rows(std::vector<T>& to, const std::vector<T>& constant, size_t H, int32_t batch, T zero) {
  if (constant.empty()) {
    to.insert(to.end(), H * static_cast<size_t>(batch), zero);
  } else if (constant.size() == H) {
    for (int32_t b = 0; b < batch; ++b) to.insert(to.end(), constant.begin(), constant.end());
  } else if (constant.size() == H * static_cast<size_t>(batch)) {
    to.insert(to.end(), constant.begin(), constant.end());
  } else {
    throw CompileError("state: the model's constant initial state has " + std::to_string(constant.size() / H) +
                       " batch rows, so the batch must be " + std::to_string(constant.size() / H) + ", not " +
                       std::to_string(batch));
  }
}

// Whether `n` values of a constant initial state fit its source: n != 0 exactly for a constant
// source, and then [H] or [B][H] for the batch the model fixes.
bool state_matches_source(const CompiledModel& m, StateSource source, size_t n, size_t H);

// The report's pieces of a recurrent op (report_details): a requantization, the cell scale, the
// weights as derived (2 clip ratios per gate: input side, recurrent side, in gate order).
nlohmann::json requant_json(const qlstm_requant& q);
nlohmann::json cell_json(const CellScaleChoice& cell, int32_t clip);
nlohmann::json weights_json(const WeightDecision& o, int32_t gate_count);
// Its gates by name (an LSTM's four, a GRU's three; int8 or 16x8).
template <class Gate, size_t N>
nlohmann::json gates_json(const std::array<Gate, N>& gates, const char* (*name)(int32_t)) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t g = 0; g < N; ++g) {
    const Gate& dg = gates[g];
    j[name(static_cast<int32_t>(g))] = {{"input_weight_scale", dg.w_x_scale}, {"hidden_weight_scale", dg.w_h_scale},
                                        {"input_to_q3_12", requant_json(dg.input_to_q3_12)},
                                        {"hidden_to_q3_12", requant_json(dg.hidden_to_q3_12)}};
  }
  return j;
}

// An LSTM's (int8 or 16x8: `d` its Derived block) "cell", "weights" and "gates".
template <class DerivedLstmBlock>
void report_lstm_details(const DerivedLstmBlock& d, nlohmann::json* entry) {
  (*entry)["cell"] = cell_json(d.cell, d.cell_clip);
  (*entry)["weights"] = weights_json(d.weights, QLSTM_GATE_COUNT);
  (*entry)["gates"] = gates_json(d.gates, gate_name);
}

// The value formats of a recurrent kind's state (RecurrentState::h, ::c).
StateValue affine_s8_state(const AffineQuant& q);
StateValue scaled_s16_state(double scale, bool after_cell);
StateValue power_of_two_state(int32_t power);
// qlstm compile's line on an LSTM's cell: "cell   2^P (policy, observed max |c| M)" and `tail`.
std::string cell_summary(const CellScaleChoice& cell, const char* tail);

struct ByteSink {
  std::vector<uint8_t>* out;
  void put(const uint8_t* bytes, size_t n) { out->insert(out->end(), bytes, bytes + n); }
};

// The record of block p as visit (visit_<kind>_fields) writes it.
template <class P, class Visit>
std::vector<uint8_t> encode_record(const P& p, Visit visit) {
  std::vector<uint8_t> bytes;
  ByteSink sink{&bytes};
  RecordWriter<ByteSink> w(sink);
  P copy = p;
  visit(copy, w);
  return bytes;
}

// The same without the fields whose names contain `absent`: the record as an earlier version
// wrote it (read back by ShorterRecordReader with the same `absent`).
// A second name, `also_absent`, leaves out those fields too.
template <class P, class Visit>
std::vector<uint8_t> encode_record_without(const P& p, Visit visit, const char* absent, const char* also_absent = nullptr) {
  std::vector<uint8_t> bytes;
  ByteSink sink{&bytes};
  RecordWriter<ByteSink> w(sink);
  RecordWriterWithout<RecordWriter<ByteSink>> without(w, absent);
  RecordWriterWithout<RecordWriterWithout<RecordWriter<ByteSink>>> without_both(without, also_absent);
  P copy = p;
  visit(copy, without_both);
  return bytes;
}

// A record of an earlier version ends before the field `first_missing`, added later (version 4:
// an LSTM's output_steps; version 6: a GRU's new_gate_zero_state_bias): that field and any after it
// are left value-initialized (output_steps 0: every step; a null array the caller fills in).
// Fields added inside the record are absent too where their names contain `absent` (version 13:
// an int8 LSTM gate's ".hard_sigmoid" line). Either may be null.
class ShorterRecordReader {
 public:
  ShorterRecordReader(const uint8_t* data, size_t size, const char* first_missing, const char* absent = nullptr)
      : r_(data, size), first_missing_(first_missing), absent_(absent) {}
  void open(const char* name) { r_.open(name); }
  void close() { r_.close(); }
  void i32(const char* name, int32_t& v) {
    if (!missing(name)) r_.i32(name, v);
  }
  template <class T>
  void array(const char* name, const T*& data, int64_t count) {
    if (!missing(name)) r_.array(name, data, count);
  }
  const char* failed() const { return r_.failed(); }
  bool complete() const { return r_.complete(); }

 private:
  bool missing(const char* name) {
    if (first_missing_ != nullptr && std::strcmp(name, first_missing_) == 0) ended_ = true;
    return ended_ || (absent_ != nullptr && std::strstr(name, absent_) != nullptr);
  }
  RecordReader r_;
  const char* first_missing_;
  const char* absent_;
  bool ended_ = false;
};

// Decodes the record r.params of block P with `visit` through a Reader. `aligned` keeps the bytes
// the block's arrays point into (the record's int32 arrays are read in place).
template <class Reader, class P, class Visit, class... ReaderArgs>
P decode_record(const OpFileRecord& r, const OpFileOrigin& from, std::vector<uint32_t>& aligned, Visit visit,
                ReaderArgs... reader_args) {
  aligned.assign((r.params.size() + 3) / 4, 0);
  if (!r.params.empty()) std::memcpy(aligned.data(), r.params.data(), r.params.size());
  P p{};
  Reader reader(reinterpret_cast<const uint8_t*>(aligned.data()), r.params.size(), reader_args...);
  visit(p, reader);
  if (reader.failed() != nullptr) {
    bad_record(from, "field '" + from.where + ".params." + reader.failed() + "': the record ends early");
  }
  if (!reader.complete()) bad_record(from, "field '" + from.where + ".params': bytes after the last field");
  return p;
}

// A per-position op's record holds no rows (the runner's); a recurrent op's no call dims.
void rows_zero(const OpFileOrigin& from, int32_t rows);

// A per-position kind's block P from its record (rows 0), by its visit_<kind>_fields.
template <class P>
P decode_rows_record(const OpFileRecord& r, const OpFileOrigin& from, std::vector<uint32_t>& aligned,
                     void (*visit)(P&, RecordReader&)) {
  const P p = decode_record<RecordReader, P>(r, from, aligned, visit);
  rows_zero(from, p.rows);
  return p;
}
void no_call_dims(const OpFileOrigin& from, int32_t batch, int32_t time_steps);
// A 16x8 op's buffers are symmetric: its record holds no zero point.
void symmetric_s16(const OpFileRecord& r, const OpFileOrigin& from);

// Throws naming op k's array whose size is not what its dims say (the record takes each array's
// length from them).
void check_array(size_t k, const std::string& name, size_t have, size_t want);
// A recurrent op's gate arrays; `block` names it ("lstm", "gru"), gate_label each gate.
template <class Gates, class Label>
void check_gate_arrays(size_t k, const char* block, const Gates& gates, int32_t input_size, int32_t hidden_size,
                       Label gate_label) {
  const size_t I = static_cast<size_t>(std::max(input_size, 0)), H = static_cast<size_t>(std::max(hidden_size, 0));
  for (size_t g = 0; g < gates.size(); ++g) {
    const auto& dg = gates[g];  // a DerivedGate or a DerivedGateS16
    const std::string at = std::string(block) + ".gates[" + gate_label(static_cast<int32_t>(g)) + "].";
    check_array(k, at + "input_weights", dg.w_x.size(), H * I);
    check_array(k, at + "input_effective_bias", dg.input_effective_bias.size(), H);
    check_array(k, at + "hidden_weights", dg.w_h.size(), H * H);
    check_array(k, at + "hidden_effective_bias", dg.hidden_effective_bias.size(), H);
  }
}

// A recurrent op's float weight scales, per gate the input side's then the hidden side's (reports only).
template <class Gates>
void set_weight_scales(Gates& gates, const std::vector<double>& scales) {
  if (scales.size() != 2 * gates.size()) return;
  for (size_t g = 0; g < gates.size(); ++g) {
    gates[g].w_x_scale = scales[2 * g];
    gates[g].w_h_scale = scales[2 * g + 1];
  }
}
template <class Gates>
std::vector<double> weight_scales_of(const Gates& gates) {
  std::vector<double> scales;
  for (const auto& g : gates) {
    scales.push_back(g.w_x_scale);
    scales.push_back(g.w_h_scale);
  }
  return scales;
}

// A recurrent op of `gates` gates, I -> H, whose kernel needs `scratch` bytes: its flash (int8
// weights [gates][H][I + H], two int32 biases per gate and unit) and its B x H state rows.
void add_recurrent_memory(ProgramMemory* mem, ProgramMemory::Op* om, int32_t batch, int32_t gates, int32_t I,
                          int32_t H, size_t scratch);
// A recurrent op's report columns: its direction and the steps it writes.
void report_recurrent(int32_t time_direction, int32_t output_steps, nlohmann::json* row);

// "LSTM 4 -> 8, forward": a recurrent op's block P (LSTM or GRU) in one line.
template <class P>
std::string describe_recurrent(const char* what, const P& p) {
  return std::string(what) + " " + std::to_string(p.dims.input_size) + " -> " + std::to_string(p.dims.hidden_size) +
         (p.time_direction == QLSTM_TIME_REVERSE ? ", reverse" : ", forward") +
         (p.output_steps == QLSTM_OUTPUT_FINAL ? ", final hidden state only" : "");
}

// The multiply-accumulates of a kind without weights.
inline int64_t no_macs(const qlstm_op&, int64_t, int64_t, int64_t) { return 0; }

// The runtime's table of one per-position kind's run on `rows` rows, for run_rows: y sized to
// rows x `width` and the kernel's status.
template <class P, class Kernel>
qlstm_status run_kernel_rows(const P& params, Kernel kernel, const int8_t* x, int32_t rows, int32_t width,
                             std::vector<int8_t>* y) {
  y->assign(static_cast<size_t>(std::max(rows, 0)) * static_cast<size_t>(std::max(width, 0)), 0);
  return kernel(&params, x, y->data());
}

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_OPS_OP_HELPERS_H_
