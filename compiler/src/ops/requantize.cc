// The requantization between an int16 and an int8 buffer (qlstm_requantize; parameters
// derive_s16.h): where a 16x8 part of a program meets an int8 one.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_requantize_params& block_of(const qlstm_op& o) { return op_block<qlstm_requantize_params>(o); }

const char* element_word(int32_t type) { return type == QLSTM_ELEMENT_S16 ? "int16" : "int8"; }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->requantize = op.as<DerivedRequantize>().kernel_params(0);
  return &block->requantize;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedRequantize& rq = op.as<DerivedRequantize>();
  *b = {rq.input, rq.output, rq.row_size, rq.row_size};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // a multiplier in the op table

void report(const ProgramOp&, nlohmann::json*) {}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return std::string("requantization ") + element_word(block_of(o).input_type) + " -> " +
         element_word(block_of(o).output_type) + " of " + std::to_string(block_of(o).row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_requantize_params& p, auto& w) { visit_requantize_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_requantize_fields<qlstm_requantize_params, RecordReader>);
  op->set(DerivedRequantize::from_kernel_params(p, r.input, r.output));
}

}  // namespace

extern const OpKind kRequantizeKind = {
    QLSTM_OP_REQUANTIZE, "requantize", "QLSTM_OP_REQUANTIZE",
    "qlstm_op_handler_requantize",
    /*state=*/nullptr, /*int16_data=*/true, /*file_version=*/7,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
