// The int8 GRU op (qlstm_gru_s8: docs/arithmetic.md §13; parameters derive_gru.h). Its state is one
// Q0.15 hidden, kept in the int16 state array.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/gru_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_gru_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_gru_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t output_width, OpBlock* block) {
  block->gru = op.as<DerivedGru>().kernel_params(B, T, layout);
  block->gru.output_width = output_width;
  return &block->gru;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedGru& gru = op.as<DerivedGru>();
  *b = {gru.input, gru.output, gru.input_size, gru.hidden_size};
  return true;
}

void memory(const ProgramOp& op, int32_t batch, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedGru& gru = op.as<DerivedGru>();
  const int32_t I = gru.input_size, H = gru.hidden_size;
  qlstm_gru_s8_params p{};
  p.dims = {std::max(batch, 1), 1, I, H};
  p.input_repeated = gru.input_repeated;
  add_recurrent_memory(mem, om, batch, QLSTM_GRU_GATE_COUNT, I, H, qlstm_gru_s8_call_scratch_bytes(&p));
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedGru& gru = op.as<DerivedGru>();
  report_recurrent(gru.time_direction, gru.output_steps, row);
  if (gru.input_repeated) (*row)["input_repeated"] = true;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return describe_recurrent("GRU", block_of(o)) + (block_of(o).input_repeated ? ", one input step repeated over time" : "");
}

// The record's last field input_repeated from version 19 on.
std::vector<uint8_t> encode(const qlstm_op& o, uint32_t file_version) {
  auto visit = [](qlstm_gru_s8_params& p, auto& w) { visit_gru_s8_fields(p, w); };
  return encode_record_without(block_of(o), visit, file_version < kModelFormatVersionRepeatedGru ? "input_repeated" : nullptr);
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string*) {
  *weight_scales = weight_scales_of(op.as<DerivedGru>().gates);
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedGru& d = op.as<DerivedGru>();
  check_gate_arrays(k, "gru", d.gates, d.input_size, d.hidden_size, gru_gate_name);
  check_array(k, "gru.new_gate_zero_state_bias", d.new_gate_zero_state_bias.size(),
              static_cast<size_t>(std::max(d.hidden_size, 0)));
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  auto visit = [](qlstm_gru_s8_params& q, auto& reader) { visit_gru_s8_fields(q, reader); };
  // Version 5's record ends before new_gate_zero_state_bias, one before version 19 before
  // input_repeated (a sequence).
  const qlstm_gru_s8_params p =
      from.version < kModelFormatVersionRepeatedGru
          ? decode_record<ShorterRecordReader, qlstm_gru_s8_params>(
                r, from, aligned, visit, from.version == 5 ? "new_gate_zero_state_bias" : "input_repeated")
          : decode_record<RecordReader, qlstm_gru_s8_params>(r, from, aligned, visit);
  no_call_dims(from, p.dims.batch, p.dims.time_steps);
  op->set(DerivedGru::from_kernel_params(p, r.input, r.output));
  if (from.version == 5) {  // a zero state's accumulator, as version 6 stores it
    op->as<DerivedGru>().new_gate_zero_state_bias =
        zero_state_bias(op->as<DerivedGru>().gates[QLSTM_GRU_GATE_NEW], p.dims.hidden_size, r.output.zero_point);
  }
  set_weight_scales(op->as<DerivedGru>().gates, r.weight_scales);
}

// A repeated input's projection runs once per call.
int64_t macs(const qlstm_op& o, int64_t, int64_t B, int64_t T) {
  const qlstm_gru_s8_params& p = block_of(o);
  const int64_t G = QLSTM_GRU_GATE_COUNT, I = p.dims.input_size, H = p.dims.hidden_size;
  if (p.input_repeated) return B * G * H * I + B * T * G * H * (1 + H);
  return B * T * G * H * (I + H);
}

// Its state: one Q0.15 h in the cell array (its hidden rows unused), no c.
StateValue state_h(const ProgramOp&) { return power_of_two_state(kGruHiddenPower); }
StateValue state_c(const ProgramOp&) { return StateValue{}; }

void initial_rows(const ProgramOp& op, int32_t batch, std::vector<int8_t>* hidden, std::vector<int16_t>* cell) {
  const DerivedGru& gru = op.as<DerivedGru>();
  const size_t H = static_cast<size_t>(gru.hidden_size);
  append_state_rows(*hidden, op.initial_hidden, H, batch, static_cast<int8_t>(gru.output.zero_point));
  append_state_rows(*cell, op.initial_cell, H, batch, int16_t{0});
}

// Its h0 is Q0.15 in its int16 state row: initial_cell, from the initial_hidden source.
std::string initial_state_problem(const ProgramOp& op, const CompiledModel& m) {
  if (!op.initial_hidden.empty()) return ".initial_hidden': a GRU keeps its initial state in initial_cell";
  const size_t H = static_cast<size_t>(op.as<DerivedGru>().hidden_size);
  if (!state_matches_source(m, m.initial_hidden, op.initial_cell.size(), H)) {
    return ".initial_cell' does not match the model's initial hidden state";
  }
  return "";
}

void header_defines(const ProgramOp&, const std::string& prefix, std::ostream& h) {
  h << "#define " << prefix << "_GRU_HIDDEN_Q0_15 1 /* its state: h in Q0.15 in its cell (int16) rows; its hidden\n"
    << "   (int8) rows are unused */\n";
}

void report_state_row(const ProgramOp&, nlohmann::json* row) {
  (*row)["hidden_state"] = "q0_15 in the int16 row (c), its int8 row (h) unused";
}

void report_details(const ProgramOp& op, nlohmann::json* entry) {
  const DerivedGru& gru = op.as<DerivedGru>();
  (*entry)["cell"] = {{"none", "a GRU has no cell; its hidden state is kept in Q0.15"}};
  (*entry)["weights"] = weights_json(gru.weights, QLSTM_GRU_GATE_COUNT);
  (*entry)["gates"] = gates_json(gru.gates, gru_gate_name);
}

// Its h0 is its Q0.15 state row (initial_cell); it has no c.
void set_initial_state(ProgramOp* op, const std::vector<float>* h0, const std::vector<float>*) {
  if (h0 == nullptr) return;
  for (float v : *h0) op->initial_cell.push_back(state_h(*op).quantize_s16(v));
}

std::vector<int16_t> emitted_cell_rows(const ProgramOp& op, int32_t) { return op.initial_cell; }

std::string summary_state(const ProgramOp&) { return "state  Q0.15 hidden (a GRU has no cell)"; }

const RecurrentState kGruS8State = {
    "GRU", "a GRU", affine_recurrent_shape<DerivedGru>, set_recurrent_output_steps<DerivedGru>, state_h, state_c,
    initial_rows, set_initial_state, emitted_cell_rows, summary_state, /*output_observer=*/nullptr,
    initial_state_problem, header_defines, report_state_row, report_details};

}  // namespace

extern const OpKind kGruS8Kind = {
    QLSTM_OP_GRU_S8, "gru", "QLSTM_OP_GRU_S8",
    "qlstm_op_handler_gru_s8",
    &kGruS8State, /*int16_data=*/false, /*file_version=*/5,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
