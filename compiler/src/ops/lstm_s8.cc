// The int8 LSTM op (qlstm_lstm_s8: docs/arithmetic.md; parameters derive.h).
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_lstm_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_lstm_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t output_width, OpBlock* block) {
  block->lstm = op.as<DerivedLstm>().kernel_params(B, T, layout);
  block->lstm.output_width = output_width;
  return &block->lstm;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedLstm& lstm = op.as<DerivedLstm>();
  *b = {lstm.input, lstm.output, lstm.input_size, lstm.hidden_size};
  return true;
}

void memory(const ProgramOp& op, int32_t batch, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedLstm& lstm = op.as<DerivedLstm>();
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  qlstm_lstm_s8_params p{};
  p.dims = {std::max(batch, 1), 1, I, H};
  p.input_repeated = lstm.input_repeated;
  add_recurrent_memory(mem, om, batch, QLSTM_GATE_COUNT, I, H, qlstm_lstm_s8_call_scratch_bytes(&p));
  // A stateless LSTM's cell.
  mem->cell_values = std::max(mem->cell_values, static_cast<size_t>(std::max(batch, 0)) * static_cast<size_t>(H));
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedLstm& lstm = op.as<DerivedLstm>();
  report_recurrent(lstm.time_direction, lstm.output_steps, row);
  if (lstm.input_repeated) (*row)["input_repeated"] = true;
  // HardSigmoid gates: their line back in float terms, alpha = slope / 8, beta = offset / 2^15.
  const DerivedGate& forget = lstm.gates[QLSTM_GATE_FORGET];
  if (forget.activation == QLSTM_ACTIVATION_HARD_SIGMOID) {
    const qlstm_hard_sigmoid_params& line = forget.hard_sigmoid;
    constexpr int kQ3_12ToQ0_15 = 3, kQ0_15Bits = 15, kQ31Bits = 31;
    const double alpha = std::ldexp(line.slope.multiplier, line.slope.shift - kQ31Bits - kQ3_12ToQ0_15);
    const double beta = std::ldexp(line.offset_q0_15, -kQ0_15Bits);
    char text[96];
    std::snprintf(text, sizeof text, "HardSigmoid (alpha %.4g, beta %.4g)", alpha, beta);
    (*row)["gate_activation"] = text;
  }
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return describe_recurrent("LSTM", block_of(o)) + (block_of(o).input_repeated ? ", one input step repeated over time" : "");
}

// Gate lines from version 13 on (a model with a HardSigmoid gate: model_format_version), the
// record's last field input_repeated from version 18 on.
std::vector<uint8_t> encode(const qlstm_op& o, uint32_t file_version) {
  auto visit = [](qlstm_lstm_s8_params& p, auto& w) { visit_lstm_s8_fields(p, w); };
  return encode_record_without(block_of(o), visit, file_version < kModelFormatVersionGateLines ? ".hard_sigmoid" : nullptr,
                               file_version < kModelFormatVersionRepeatedInput ? "input_repeated" : nullptr);
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string*) {
  *weight_scales = weight_scales_of(op.as<DerivedLstm>().gates);
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedLstm& d = op.as<DerivedLstm>();
  check_gate_arrays(k, "lstm", d.gates, d.input_size, d.hidden_size, gate_name);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  auto visit = [](qlstm_lstm_s8_params& p, auto& reader) { visit_lstm_s8_fields(p, reader); };
  // Version 3's record ends before output_steps (every step), one before version 18 before
  // input_repeated (a sequence); before version 13 a gate has no HardSigmoid line (every gate
  // sigmoid or tanh).
  const qlstm_lstm_s8_params p =
      from.version < kModelFormatVersionRepeatedInput
          ? decode_record<ShorterRecordReader, qlstm_lstm_s8_params>(
                r, from, aligned, visit, from.version == 3 ? "output_steps" : "input_repeated",
                from.version < kModelFormatVersionGateLines ? ".hard_sigmoid" : nullptr)
          : decode_record<RecordReader, qlstm_lstm_s8_params>(r, from, aligned, visit);
  no_call_dims(from, p.dims.batch, p.dims.time_steps);
  op->set(DerivedLstm::from_kernel_params(p, r.input, r.output));
  set_weight_scales(op->as<DerivedLstm>().gates, r.weight_scales);
}

// A repeated input's projection runs once per call, then one multiply-accumulate per unit and step.
int64_t macs(const qlstm_op& o, int64_t, int64_t B, int64_t T) {
  const qlstm_lstm_s8_params& p = block_of(o);
  const int64_t G = QLSTM_GATE_COUNT, I = p.dims.input_size, H = p.dims.hidden_size;
  if (p.input_repeated) return B * G * H * I + B * T * G * H * (1 + H);
  return B * T * G * H * (I + H);
}

// Its state: h int8 at its output quantization in the hidden array, c at 2^P in the cell array.
StateValue state_h(const ProgramOp& op) { return affine_s8_state(op.as<DerivedLstm>().output); }
StateValue state_c(const ProgramOp& op) { return power_of_two_state(op.as<DerivedLstm>().cell.power); }

void initial_rows(const ProgramOp& op, int32_t batch, std::vector<int8_t>* hidden, std::vector<int16_t>* cell) {
  const DerivedLstm& lstm = op.as<DerivedLstm>();
  const size_t H = static_cast<size_t>(lstm.hidden_size);
  append_state_rows(*hidden, op.initial_hidden, H, batch, static_cast<int8_t>(lstm.output.zero_point));
  append_state_rows(*cell, op.initial_cell, H, batch, int16_t{0});
}

std::string initial_state_problem(const ProgramOp& op, const CompiledModel& m) {
  const size_t H = static_cast<size_t>(op.as<DerivedLstm>().hidden_size);
  if (!state_matches_source(m, m.initial_hidden, op.initial_hidden.size(), H)) {
    return ".initial_hidden' does not match the model's initial state";
  }
  if (!state_matches_source(m, m.initial_cell, op.initial_cell.size(), H)) {
    return ".initial_cell' does not match the model's initial state";
  }
  return "";
}

void header_defines(const ProgramOp& op, const std::string& prefix, std::ostream& h) {
  const DerivedLstm& d = op.as<DerivedLstm>();
  h << "#define " << prefix << "_HIDDEN_SCALE " << d.output.scale << "f /* its state rows: h, and c at 2^P */\n"
    << "#define " << prefix << "_HIDDEN_ZERO_POINT " << d.output.zero_point << "\n"
    << "#define " << prefix << "_CELL_SCALE_POWER " << d.cell.power << "\n";
}

void report_state_row(const ProgramOp& op, nlohmann::json* row) {
  (*row)["cell_scale_power"] = op.as<DerivedLstm>().cell.power;
}

void report_details(const ProgramOp& op, nlohmann::json* entry) { report_lstm_details(op.as<DerivedLstm>(), entry); }

// h0 at its output quantization in initial_hidden, c0 at 2^P in initial_cell.
void set_initial_state(ProgramOp* op, const std::vector<float>* h0, const std::vector<float>* c0) {
  const StateValue h = state_h(*op), c = state_c(*op);
  if (h0 != nullptr) {
    for (float v : *h0) op->initial_hidden.push_back(h.quantize_s8(v));
  }
  if (c0 != nullptr) {
    for (float v : *c0) op->initial_cell.push_back(c.quantize_s16(v));
  }
}

std::vector<int16_t> emitted_cell_rows(const ProgramOp& op, int32_t) { return op.initial_cell; }

std::string summary_state(const ProgramOp& op) { return cell_summary(op.as<DerivedLstm>().cell, ""); }

const RecurrentState kLstmS8State = {
    "LSTM", "an LSTM", affine_recurrent_shape<DerivedLstm>, set_recurrent_output_steps<DerivedLstm>, state_h, state_c,
    initial_rows, set_initial_state, emitted_cell_rows, summary_state, /*output_observer=*/nullptr,
    initial_state_problem, header_defines, report_state_row, report_details};

}  // namespace

extern const OpKind kLstmS8Kind = {
    QLSTM_OP_LSTM_S8, "lstm", "QLSTM_OP_LSTM_S8",
    "qlstm_op_handler_lstm_s8",
    &kLstmS8State, /*int16_data=*/false, /*file_version=*/3,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
