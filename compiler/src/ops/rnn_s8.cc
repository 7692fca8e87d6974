// The int8 vanilla RNN op (qlstm_rnn_s8: docs/arithmetic.md §23; parameters derive_rnn.h). Its
// state is one int16 hidden (Q0.15 for tanh, 2^hidden_power for ReLU), kept in the int16 state
// array as the GRU's.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/lower/derive_rnn.h"
#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/rnn_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_rnn_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_rnn_s8_params>(o); }
const char* activation_name(int32_t a) { return a == QLSTM_RNN_RELU ? "relu" : "tanh"; }

const void* to_kernel(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t output_width, OpBlock* block) {
  block->rnn = op.as<DerivedRnn>().kernel_params(B, T, layout);
  block->rnn.output_width = output_width;
  return &block->rnn;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedRnn& rnn = op.as<DerivedRnn>();
  *b = {rnn.input, rnn.output, rnn.input_size, rnn.hidden_size};
  return true;
}

void memory(const ProgramOp& op, int32_t batch, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedRnn& rnn = op.as<DerivedRnn>();
  const int32_t I = rnn.input_size, H = rnn.hidden_size;
  const qlstm_rnn_dims dims = {std::max(batch, 1), 1, I, H};
  add_recurrent_memory(mem, om, batch, 1, I, H, qlstm_rnn_s8_scratch_bytes(&dims));
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedRnn& rnn = op.as<DerivedRnn>();
  report_recurrent(rnn.time_direction, rnn.output_steps, row);
  (*row)["activation"] = activation_name(rnn.activation);
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return describe_recurrent(block_of(o).activation == QLSTM_RNN_RELU ? "RNN (ReLU)" : "RNN (tanh)", block_of(o));
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_rnn_s8_params& p, auto& w) { visit_rnn_s8_fields(p, w); });
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string*) {
  *weight_scales = weight_scales_of(op.as<DerivedRnn>().gates);
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedRnn& d = op.as<DerivedRnn>();
  check_gate_arrays(k, "rnn", d.gates, d.input_size, d.hidden_size, rnn_gate_name);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  auto visit = [](qlstm_rnn_s8_params& q, auto& reader) { visit_rnn_s8_fields(q, reader); };
  const qlstm_rnn_s8_params p = decode_record<RecordReader, qlstm_rnn_s8_params>(r, from, aligned, visit);
  no_call_dims(from, p.dims.batch, p.dims.time_steps);
  op->set(DerivedRnn::from_kernel_params(p, r.input, r.output));
  set_weight_scales(op->as<DerivedRnn>().gates, r.weight_scales);
}

int64_t macs(const qlstm_op& o, int64_t, int64_t B, int64_t T) {
  return B * T * block_of(o).dims.hidden_size * (block_of(o).dims.input_size + block_of(o).dims.hidden_size);
}

// Its state: one int16 h in the cell array (its hidden rows unused), no c.
StateValue state_h(const ProgramOp& op) { return power_of_two_state(op.as<DerivedRnn>().hidden_power); }
StateValue state_c(const ProgramOp&) { return StateValue{}; }

void initial_rows(const ProgramOp& op, int32_t batch, std::vector<int8_t>* hidden, std::vector<int16_t>* cell) {
  const DerivedRnn& rnn = op.as<DerivedRnn>();
  const size_t H = static_cast<size_t>(rnn.hidden_size);
  append_state_rows(*hidden, op.initial_hidden, H, batch, static_cast<int8_t>(rnn.output.zero_point));
  append_state_rows(*cell, op.initial_cell, H, batch, int16_t{0});
}

// Its h0 is int16 in its state row: initial_cell, from the initial_hidden source.
std::string initial_state_problem(const ProgramOp& op, const CompiledModel& m) {
  if (!op.initial_hidden.empty()) return ".initial_hidden': an RNN keeps its initial state in initial_cell";
  const size_t H = static_cast<size_t>(op.as<DerivedRnn>().hidden_size);
  if (!state_matches_source(m, m.initial_hidden, op.initial_cell.size(), H)) {
    return ".initial_cell' does not match the model's initial hidden state";
  }
  return "";
}

void header_defines(const ProgramOp& op, const std::string& prefix, std::ostream& h) {
  h << "#define " << prefix << "_RNN_HIDDEN_POWER (" << op.as<DerivedRnn>().hidden_power
    << ") /* its state: h as int16 at 2^this in its cell (int16) rows; its hidden (int8) rows are unused */\n";
}

void report_state_row(const ProgramOp& op, nlohmann::json* row) {
  (*row)["hidden_state"] = "int16 at 2^" + std::to_string(op.as<DerivedRnn>().hidden_power) +
                           " in the int16 row (c), its int8 row (h) unused";
}

void report_details(const ProgramOp& op, nlohmann::json* entry) {
  const DerivedRnn& rnn = op.as<DerivedRnn>();
  (*entry)["cell"] = {{"none", "an RNN has no cell; its hidden state is kept in int16 at 2^" +
                                   std::to_string(rnn.hidden_power)}};
  (*entry)["activation"] = activation_name(rnn.activation);
  (*entry)["weights"] = weights_json(rnn.weights, 1);
  (*entry)["gates"] = gates_json(rnn.gates, rnn_gate_name);
}

// Its h0 is its int16 state row (initial_cell); it has no c.
void set_initial_state(ProgramOp* op, const std::vector<float>* h0, const std::vector<float>*) {
  if (h0 == nullptr) return;
  for (float v : *h0) op->initial_cell.push_back(state_h(*op).quantize_s16(v));
}

std::vector<int16_t> emitted_cell_rows(const ProgramOp& op, int32_t) { return op.initial_cell; }

std::string summary_state(const ProgramOp& op) {
  return "state  int16 hidden at 2^" + std::to_string(op.as<DerivedRnn>().hidden_power) + " (an RNN has no cell)";
}

const RecurrentState kRnnS8State = {
    "RNN", "an RNN", affine_recurrent_shape<DerivedRnn>, set_recurrent_output_steps<DerivedRnn>, state_h, state_c,
    initial_rows, set_initial_state, emitted_cell_rows, summary_state, /*output_observer=*/nullptr,
    initial_state_problem, header_defines, report_state_row, report_details};

}  // namespace

extern const OpKind kRnnS8Kind = {
    QLSTM_OP_RNN_S8, "rnn", "QLSTM_OP_RNN_S8",
    "qlstm_op_handler_rnn_s8",
    &kRnnS8State, /*int16_data=*/false, /*file_version=*/17,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
