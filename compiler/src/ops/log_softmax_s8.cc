// The int8 log-softmax op (qlstm_log_softmax_s8, TFLite's int8 LOG_SOFTMAX arithmetic; parameters
// derive_ops.h): its output is fixed at 16/256, 127.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/log_softmax_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_log_softmax_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_log_softmax_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->log_softmax = op.as<DerivedLogSoftmax>().kernel_params(0);
  return &block->log_softmax;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedLogSoftmax& d = op.as<DerivedLogSoftmax>();
  *b = {d.input, log_softmax_output_quant(), d.row_size, d.row_size};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // a few scalars in the op table

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedLogSoftmax& d = op.as<DerivedLogSoftmax>();
  (*row)["diff_min"] = d.diff_min;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return "log-softmax over " + std::to_string(block_of(o).row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_log_softmax_s8_params& p, auto& w) { visit_log_softmax_s8_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_log_softmax_s8_fields<qlstm_log_softmax_s8_params, RecordReader>);
  op->set(DerivedLogSoftmax::from_kernel_params(p, r.input));
}

qlstm_status run_rows(const ProgramOp& op, const int8_t* x, int32_t rows, std::vector<int8_t>* y) {
  const DerivedLogSoftmax& d = op.as<DerivedLogSoftmax>();
  return run_kernel_rows(d.kernel_params(rows), qlstm_log_softmax_s8, x, rows, d.row_size, y);
}

}  // namespace

extern const OpKind kLogSoftmaxS8Kind = {
    QLSTM_OP_LOG_SOFTMAX_S8, "log_softmax", "QLSTM_OP_LOG_SOFTMAX_S8",
    "qlstm_op_handler_log_softmax_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/10,
    /*fixed_output=*/"log-softmax: fixed 16/256, 127",
    /*selected_step=*/nullptr, to_kernel, boundary, memory, report, describe,
    encode, file_extras, check_arrays, decode, no_macs, run_rows};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
