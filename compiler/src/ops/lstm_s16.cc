// The 16x8 LSTM op (qlstm_lstm_s16: docs/arithmetic.md §14; parameters derive_s16.h): int16
// buffers on both sides, symmetric; its state rows hold its cell and then its int16 hidden.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s16.h"

namespace qlstm {
namespace compiler {

std::vector<int16_t> s16_state_block(const std::vector<int16_t>& constant, size_t H, int32_t batch) {
  std::vector<int16_t> rows;
  ops::append_state_rows(rows, constant, 2 * H, batch, int16_t{0});
  std::vector<int16_t> block(rows.size());
  const size_t B = static_cast<size_t>(batch);
  for (size_t b = 0; b < B; ++b) {
    std::copy_n(rows.begin() + static_cast<ptrdiff_t>(2 * H * b), H, block.begin() + static_cast<ptrdiff_t>(H * b));
    std::copy_n(rows.begin() + static_cast<ptrdiff_t>(2 * H * b + H), H,
                block.begin() + static_cast<ptrdiff_t>(B * H + H * b));
  }
  return block;
}

namespace ops {
namespace {

const qlstm_lstm_s16_params& block_of(const qlstm_op& o) { return op_block<qlstm_lstm_s16_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t output_width, OpBlock* block) {
  block->lstm_s16 = op.as<DerivedLstmS16>().kernel_params(B, T, layout);
  block->lstm_s16.output_width = output_width;
  return &block->lstm_s16;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedLstmS16& lstm = op.as<DerivedLstmS16>();
  *b = {op.recurrent_input(), op.recurrent_output(), lstm.input_size, lstm.hidden_size};
  return true;
}

// int64 biases; its state: the cell and the int16 hidden rows.
void memory(const ProgramOp& op, int32_t batch, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedLstmS16& lstm = op.as<DerivedLstmS16>();
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  const qlstm_lstm_dims dims = {std::max(batch, 1), 1, I, H};
  add_recurrent_memory(mem, om, batch, QLSTM_GATE_COUNT, I, H, qlstm_lstm_s16_scratch_bytes(&dims));
  const size_t wide_biases = static_cast<size_t>(2 * QLSTM_GATE_COUNT) * static_cast<size_t>(H) * sizeof(int32_t);
  const size_t BH = static_cast<size_t>(std::max(batch, 0)) * static_cast<size_t>(H);
  mem->bias_bytes += wide_biases;
  om->flash_bytes += wide_biases;
  mem->state_values += BH;
  mem->cell_values = std::max(mem->cell_values, BH);
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedLstmS16& lstm = op.as<DerivedLstmS16>();
  report_recurrent(lstm.time_direction, lstm.output_steps, row);
}

std::string describe(const qlstm_op& o, const ProgramOp&) { return describe_recurrent("16x8 LSTM", block_of(o)); }

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_lstm_s16_params& p, auto& w) { visit_lstm_s16_fields(p, w); });
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string*) {
  *weight_scales = weight_scales_of(op.as<DerivedLstmS16>().gates);
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedLstmS16& lstm = op.as<DerivedLstmS16>();
  check_gate_arrays(k, "lstm_s16", lstm.gates, lstm.input_size, lstm.hidden_size, gate_name);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  symmetric_s16(r, from);
  std::vector<uint32_t> aligned;
  const auto p = decode_record<RecordReader, qlstm_lstm_s16_params>(
      r, from, aligned, visit_lstm_s16_fields<qlstm_lstm_s16_params, RecordReader>);
  no_call_dims(from, p.dims.batch, p.dims.time_steps);
  op->set(DerivedLstmS16::from_kernel_params(p, r.input.scale, r.output.scale));
  set_weight_scales(op->as<DerivedLstmS16>().gates, r.weight_scales);
}

int64_t macs(const qlstm_op& o, int64_t, int64_t B, int64_t T) {
  return B * T * QLSTM_GATE_COUNT * block_of(o).dims.hidden_size *
         (block_of(o).dims.input_size + block_of(o).dims.hidden_size);
}

// Its state, int16 only, in the cell array: B x H c at 2^P, then B x H h at its output scale (its
// hidden rows unused).
StateValue state_h(const ProgramOp& op) {
  return scaled_s16_state(op.as<DerivedLstmS16>().output_scale, /*after_cell=*/true);
}
StateValue state_c(const ProgramOp& op) { return power_of_two_state(op.as<DerivedLstmS16>().cell.power); }

void initial_rows(const ProgramOp& op, int32_t batch, std::vector<int8_t>* hidden, std::vector<int16_t>* cell) {
  const size_t H = static_cast<size_t>(op.as<DerivedLstmS16>().hidden_size);
  hidden->insert(hidden->end(), 2 * H * static_cast<size_t>(batch), int8_t{0});
  const std::vector<int16_t> block = s16_state_block(op.initial_cell, H, batch);
  cell->insert(cell->end(), block.begin(), block.end());
}

// Its constant state: rows of [c | h] (2H int16) in initial_cell, from either constant source.
std::string initial_state_problem(const ProgramOp& op, const CompiledModel& m) {
  const size_t H = static_cast<size_t>(op.as<DerivedLstmS16>().hidden_size);
  const bool constant = m.initial_hidden == StateSource::kConstant || m.initial_cell == StateSource::kConstant;
  const size_t n = op.initial_cell.size();
  const size_t rows = static_cast<size_t>(std::max(m.constant_state_batch(), 1));
  if (!op.initial_hidden.empty()) return ".initial_hidden': a 16x8 LSTM keeps its initial state in initial_cell";
  if (constant != (n != 0) || (n != 0 && n != 2 * H && n != rows * 2 * H)) {
    return ".initial_cell' does not match the model's initial state (rows of 2H: c, then h)";
  }
  return "";
}

void header_defines(const ProgramOp& op, const std::string& prefix, std::ostream& h) {
  const DerivedLstmS16& d = op.as<DerivedLstmS16>();
  h << "#define " << prefix << "_HIDDEN_SCALE " << d.output_scale
    << "f /* 16x8: its state, in cell at its offset: B x H c at 2^P, then B x H int16 h at\n"
    << "   this scale; its hidden (int8) rows are unused */\n"
    << "#define " << prefix << "_CELL_SCALE_POWER " << d.cell.power << "\n";
}

void report_state_row(const ProgramOp& op, nlohmann::json* row) {
  (*row)["cell_scale_power"] = op.as<DerivedLstmS16>().cell.power;
  (*row)["hidden_state"] = "int16 after its cell in the int16 rows (c: 2H per batch row), its int8 rows unused";
}

// Its weights: the candidate its own selection kept.
void report_details(const ProgramOp& op, nlohmann::json* entry) { report_lstm_details(op.as<DerivedLstmS16>(), entry); }

RecurrentShape shape(const ProgramOp& op) {
  const DerivedLstmS16& d = op.as<DerivedLstmS16>();
  // Its state is int16 only: c, then h, in the cell array (2H per batch row).
  return {d.hidden_size, d.time_direction, d.output_steps, {d.input_scale, 0}, {d.output_scale, 0}, 2 * d.hidden_size};
}

// Its constant state in initial_cell: rows of [c at 2^P | h at its output scale], one row shared
// or one per batch row as the model's constants; a source that is not constant leaves its half 0.
void set_initial_state(ProgramOp* op, const std::vector<float>* h0, const std::vector<float>* c0) {
  if (h0 == nullptr && c0 == nullptr) return;
  const StateValue h = state_h(*op), c = state_c(*op);
  const size_t H = static_cast<size_t>(op->as<DerivedLstmS16>().hidden_size);
  const size_t rows = (h0 != nullptr ? h0 : c0)->size() / H;
  std::vector<int16_t>& out = op->initial_cell;
  out.assign(rows * 2 * H, 0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t u = 0; u < H; ++u) {
      if (c0 != nullptr) out[2 * H * r + u] = c.quantize_s16(c0->at((r * H + u) % c0->size()));
      if (h0 != nullptr) out[2 * H * r + H + u] = h.quantize_s16(h0->at((r * H + u) % h0->size()));
    }
  }
}

// Its [c | h] rows laid out for the batch as the runtime keeps them (B x H cells, then B x H h).
std::vector<int16_t> emitted_cell_rows(const ProgramOp& op, int32_t batch) {
  return s16_state_block(op.initial_cell, static_cast<size_t>(op.as<DerivedLstmS16>().hidden_size), batch);
}

std::string summary_state(const ProgramOp& op) { return cell_summary(op.as<DerivedLstmS16>().cell, "; hidden int16"); }

const RecurrentState kLstmS16State = {"LSTM", "an LSTM", shape, set_recurrent_output_steps<DerivedLstmS16>,
                                      state_h, state_c, initial_rows, set_initial_state, emitted_cell_rows,
                                      summary_state, "16x8: max |h| and headroom, at most 1",
                                      initial_state_problem, header_defines, report_state_row, report_details};

}  // namespace

extern const OpKind kLstmS16Kind = {
    QLSTM_OP_LSTM_S16, "lstm_s16", "QLSTM_OP_LSTM_S16",
    "qlstm_op_handler_lstm_s16",
    &kLstmS16State, /*int16_data=*/true, /*file_version=*/7,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
