// The 16x8 softmax op (qlstm_softmax_s16: docs/arithmetic.md §16; parameters derive_s16.h): an
// int16 symmetric input, its output fixed at 1/32768, 0.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_softmax_s16_params& block_of(const qlstm_op& o) { return op_block<qlstm_softmax_s16_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->softmax_s16 = op.as<DerivedSoftmaxS16>().kernel_params(0);
  return &block->softmax_s16;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedSoftmaxS16& softmax = op.as<DerivedSoftmaxS16>();
  *b = {{softmax.input_scale, 0}, softmax_s16_output_quant(), softmax.row_size, softmax.row_size};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // its tables are the runtime's

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedSoftmaxS16& softmax = op.as<DerivedSoftmaxS16>();
  (*row)["beta"] = softmax.beta;
  (*row)["input_left_shift"] = softmax.input_left_shift;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return "16x8 softmax over " + std::to_string(block_of(o).row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_softmax_s16_params& p, auto& w) { visit_softmax_s16_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  symmetric_s16(r, from);
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_softmax_s16_fields<qlstm_softmax_s16_params, RecordReader>);
  op->set(DerivedSoftmaxS16::from_kernel_params(p, r.input.scale));
}

}  // namespace

extern const OpKind kSoftmaxS16Kind = {
    QLSTM_OP_SOFTMAX_S16, "softmax_s16", "QLSTM_OP_SOFTMAX_S16",
    "qlstm_op_handler_softmax_s16",
    /*state=*/nullptr, /*int16_data=*/true, /*file_version=*/7,
    /*fixed_output=*/"softmax_s16: fixed 1/32768, 0",
    /*selected_step=*/nullptr, to_kernel, boundary, memory, report, describe,
    encode, file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
