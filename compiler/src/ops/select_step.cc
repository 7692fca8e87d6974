// The step selection (qlstm_select_step_params): one time step, or a range of consecutive steps,
// of a sequence buffer into a one-step buffer, at its input buffer's quantization (it has none of
// its own).
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_select_step_params& block_of(const qlstm_op& o) { return op_block<qlstm_select_step_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->select = op.as<DerivedSelect>().kernel_params();
  return &block->select;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedSelect& d = op.as<DerivedSelect>();
  b->input_width = d.row_size;
  b->output_width = d.row_size * d.step_count;
  return false;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // two scalars in the op table

void report(const ProgramOp& op, nlohmann::json* row) {
  (*row)["step"] = op.as<DerivedSelect>().step;
  (*row)["step_count"] = op.as<DerivedSelect>().step_count;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  const qlstm_select_step_params& p = block_of(o);
  if (p.step_count > 1) {
    return std::to_string(p.step_count) + " time steps from step " + std::to_string(p.step) + " of each sequence, " +
           std::to_string(p.row_size) + " wide each";
  }
  return "time step " + std::to_string(p.step) + " of each sequence, " + std::to_string(p.row_size) + " wide";
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_select_step_params& p, auto& w) { visit_select_step_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  // A record before version 12 ends before step_count (one step).
  const auto p = from.version < 12 ? decode_record<ShorterRecordReader, qlstm_select_step_params>(
                                         r, from, aligned, visit_select_step_fields<qlstm_select_step_params, ShorterRecordReader>,
                                         "step_count")
                                   : decode_record<RecordReader, qlstm_select_step_params>(
                                         r, from, aligned, visit_select_step_fields<qlstm_select_step_params, RecordReader>);
  DerivedSelect d;
  d.step = p.step;
  d.row_size = p.row_size;
  d.step_count = from.version < 12 ? 1 : p.step_count;
  op->set(d);
}

int32_t selected_step(const ProgramOp& op) { return op.as<DerivedSelect>().step; }

}  // namespace

extern const OpKind kSelectStepKind = {
    QLSTM_OP_SELECT_STEP, "select_step", "QLSTM_OP_SELECT_STEP",
    "qlstm_op_handler_select_step",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/12,
    /*fixed_output=*/nullptr, selected_step,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
