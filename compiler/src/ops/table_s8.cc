// The int8 table op (qlstm_table_s8; parameters derive_ops.h): any elementwise activation as 256
// entries computed at compile time.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/table_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_table_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_table_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->table = op.as<DerivedTable>().kernel_params(0);
  return &block->table;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedTable& table = op.as<DerivedTable>();
  *b = {table.input, table.output, table.row_size, table.row_size};
  return true;
}

void memory(const ProgramOp& op, int32_t, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedTable& d = op.as<DerivedTable>();
  mem->table_bytes += d.table.size();
  om->flash_bytes = d.table.size();
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedTable& d = op.as<DerivedTable>();
  (*row)["function"] = d.function.empty() ? "table" : d.function;
}

std::string describe(const qlstm_op& o, const ProgramOp& op) {
  const DerivedTable& d = op.as<DerivedTable>();
  return "table " + (d.function.empty() ? std::string("activation") : d.function) + " on " +
         std::to_string(block_of(o).row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_table_s8_params& p, auto& w) { visit_table_s8_fields(p, w); });
}

void file_extras(const ProgramOp& op, std::vector<double>*, std::string* label) {
  *label = op.as<DerivedTable>().function;
}

void check_arrays(const ProgramOp& op, size_t k) {
  check_array(k, "table.table", op.as<DerivedTable>().table.size(), QLSTM_TABLE_S8_ENTRIES);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_table_s8_fields<qlstm_table_s8_params, RecordReader>);
  op->set(DerivedTable::from_kernel_params(p, r.input, r.output));
  op->as<DerivedTable>().function = r.label;
}

qlstm_status run_rows(const ProgramOp& op, const int8_t* x, int32_t rows, std::vector<int8_t>* y) {
  const DerivedTable& table = op.as<DerivedTable>();
  return run_kernel_rows(table.kernel_params(rows), qlstm_table_s8, x, rows, table.row_size, y);
}

}  // namespace

extern const OpKind kTableS8Kind = {
    QLSTM_OP_TABLE_S8, "table", "QLSTM_OP_TABLE_S8",
    "qlstm_op_handler_table_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/4,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, no_macs, run_rows};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
