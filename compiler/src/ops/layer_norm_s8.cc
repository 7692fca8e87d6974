// The int8 layer normalization op (qlstm_layer_norm_s8, docs/arithmetic.md §21; parameters
// derive_ops.h): gamma and beta per feature, in the output's steps.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/layer_norm_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_layer_norm_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_layer_norm_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->layer_norm = op.as<DerivedLayerNorm>().kernel_params(0);
  return &block->layer_norm;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedLayerNorm& d = op.as<DerivedLayerNorm>();
  *b = {d.input, d.output, d.row_size, d.row_size};
  return true;
}

void memory(const ProgramOp& op, int32_t, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedLayerNorm& d = op.as<DerivedLayerNorm>();
  const size_t bytes = (d.weights.size() + d.biases.size()) * sizeof(int32_t);
  mem->bias_bytes += bytes;
  om->flash_bytes = bytes;
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedLayerNorm& d = op.as<DerivedLayerNorm>();
  (*row)["epsilon"] = d.epsilon();
  (*row)["output_shift"] = d.output_shift;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return "layer norm over " + std::to_string(block_of(o).row_size);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_layer_norm_s8_params& p, auto& w) { visit_layer_norm_s8_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedLayerNorm& d = op.as<DerivedLayerNorm>();
  const size_t F = static_cast<size_t>(std::max(d.row_size, 0));
  check_array(k, "layer_norm.weights", d.weights.size(), F);
  check_array(k, "layer_norm.biases", d.biases.size(), F);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p =
      decode_rows_record(r, from, aligned, visit_layer_norm_s8_fields<qlstm_layer_norm_s8_params, RecordReader>);
  if (p.output_zero_point != r.output.zero_point) {
    bad_record(from, "field '" + from.where + ".params.output_zero_point': differs from the output buffer's zero point");
  }
  op->set(DerivedLayerNorm::from_kernel_params(p, r.input, r.output));
}

// Per feature: its square in the row's sums, its normalization and its gamma.
constexpr int64_t kMacsPerFeature = 3;
int64_t macs(const qlstm_op& o, int64_t in_positions, int64_t, int64_t) {
  return in_positions * kMacsPerFeature * block_of(o).row_size;
}

qlstm_status run_rows(const ProgramOp& op, const int8_t* x, int32_t rows, std::vector<int8_t>* y) {
  const DerivedLayerNorm& d = op.as<DerivedLayerNorm>();
  return run_kernel_rows(d.kernel_params(rows), qlstm_layer_norm_s8, x, rows, d.row_size, y);
}

}  // namespace

extern const OpKind kLayerNormS8Kind = {
    QLSTM_OP_LAYER_NORM_S8, "layer_norm", "QLSTM_OP_LAYER_NORM_S8",
    "qlstm_op_handler_layer_norm_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/15,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, run_rows};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
