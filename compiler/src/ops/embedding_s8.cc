// The embedding op (qlstm_embedding_s8; parameters derive_ops.h): token ids to int8 table rows,
// the program's first op.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/embedding_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_embedding_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_embedding_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->embedding = op.as<DerivedEmbedding>().kernel_params(0);
  return &block->embedding;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedEmbedding& d = op.as<DerivedEmbedding>();
  *b = {token_id_quant(), d.output, 1, d.row_size};
  return true;
}

void memory(const ProgramOp& op, int32_t, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedEmbedding& d = op.as<DerivedEmbedding>();
  mem->weight_bytes += d.table.size();
  om->flash_bytes = d.table.size();
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedEmbedding& d = op.as<DerivedEmbedding>();
  (*row)["vocabulary"] = d.table_rows;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  const qlstm_embedding_s8_params& p = block_of(o);
  return "embedding " + std::to_string(p.table_rows) + " ids -> " + std::to_string(p.row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_embedding_s8_params& p, auto& w) { visit_embedding_s8_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedEmbedding& d = op.as<DerivedEmbedding>();
  check_array(k, "embedding.table", d.table.size(),
              static_cast<size_t>(std::max(d.table_rows, 0)) * static_cast<size_t>(std::max(d.row_size, 0)));
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p =
      decode_rows_record(r, from, aligned, visit_embedding_s8_fields<qlstm_embedding_s8_params, RecordReader>);
  if (r.input.scale != token_id_quant().scale || r.input.zero_point != token_id_quant().zero_point) {
    bad_record(from, "field '" + from.where + ".input': token ids have scale 1 and zero point 0");
  }
  op->set(DerivedEmbedding::from_kernel_params(p, r.output));
}

}  // namespace

extern const OpKind kEmbeddingS8Kind = {
    QLSTM_OP_EMBEDDING_S8, "embedding", "QLSTM_OP_EMBEDDING_S8",
    "qlstm_op_handler_embedding_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/14,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
