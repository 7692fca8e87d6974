// The step selection (qlstm_select_step_params): one time step of a sequence buffer into a
// one-step buffer, at its input buffer's quantization (it has none of its own).
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
  b->input_width = b->output_width = op.as<DerivedSelect>().row_size;
  return false;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // two scalars in the op table

void report(const ProgramOp& op, nlohmann::json* row) { (*row)["step"] = op.as<DerivedSelect>().step; }

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return "time step " + std::to_string(block_of(o).step) + " of each sequence, " + std::to_string(block_of(o).row_size) +
         " wide";
}

std::vector<uint8_t> encode(const qlstm_op& o) {
  return encode_record(block_of(o), [](qlstm_select_step_params& p, auto& w) { visit_select_step_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_record<RecordReader, qlstm_select_step_params>(
      r, from, aligned, visit_select_step_fields<qlstm_select_step_params, RecordReader>);
  DerivedSelect d;
  d.step = p.step;
  d.row_size = p.row_size;
  op->set(d);
}

int32_t selected_step(const ProgramOp& op) { return op.as<DerivedSelect>().step; }

}  // namespace

extern const OpKind kSelectStepKind = {
    QLSTM_OP_SELECT_STEP, "select_step", "QLSTM_OP_SELECT_STEP",
    "qlstm_op_handler_select_step",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/4,
    /*fixed_output=*/nullptr, selected_step,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
