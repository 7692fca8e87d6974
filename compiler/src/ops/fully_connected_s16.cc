// The 16x8 fully connected op (qlstm_fc_s16, arm_fully_connected_s16's arithmetic; parameters
// derive_s16.h): int16 buffers, symmetric, one weight scale, int64 biases.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/fully_connected_s16.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_fc_s16_params& block_of(const qlstm_op& o) { return op_block<qlstm_fc_s16_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->fc_s16 = op.as<DerivedFcS16>().kernel_params(0);
  return &block->fc_s16;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  *b = {{fc.input_scale, 0}, {fc.output_scale, 0}, fc.input_size, fc.output_size};
  return true;
}

void memory(const ProgramOp& op, int32_t, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  const size_t weights = fc.weights.size(), biases = fc.bias.size() * sizeof(int64_t);
  mem->weight_bytes += weights;
  mem->bias_bytes += biases;
  om->flash_bytes = weights + biases;
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  (*row)["fused_activation"] = fc.fused_activation.empty() ? "none" : fc.fused_activation;
  (*row)["per_channel"] = false;
}

std::string describe(const qlstm_op& o, const ProgramOp& op) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  return "16x8 fully connected " + std::to_string(block_of(o).input_size) + " -> " + std::to_string(block_of(o).output_size) +
         (fc.fused_activation.empty() ? "" : ", fused " + fc.fused_activation);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_fc_s16_params& p, auto& w) { visit_fc_s16_op_fields(p, w); });
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string* label) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  *weight_scales = {fc.weight_scale};
  *label = fc.fused_activation;
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedFcS16& fc = op.as<DerivedFcS16>();
  const size_t I = static_cast<size_t>(std::max(fc.input_size, 0));
  const size_t O = static_cast<size_t>(std::max(fc.output_size, 0));
  check_array(k, "fc_s16.weights", fc.weights.size(), O * I);
  check_array(k, "fc_s16.bias", fc.bias.size(), O);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  symmetric_s16(r, from);
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_fc_s16_op_fields<qlstm_fc_s16_params, RecordReader>);
  op->set(DerivedFcS16::from_kernel_params(p, r.input.scale, r.output.scale));
  if (!r.weight_scales.empty()) op->as<DerivedFcS16>().weight_scale = r.weight_scales.front();  // its one weight scale
  op->as<DerivedFcS16>().fused_activation = r.label;
}

int64_t macs(const qlstm_op& o, int64_t in_positions, int64_t, int64_t) {
  return in_positions * block_of(o).input_size * block_of(o).output_size;
}

}  // namespace

extern const OpKind kFullyConnectedS16Kind = {
    QLSTM_OP_FULLY_CONNECTED_S16, "fully_connected_s16", "QLSTM_OP_FULLY_CONNECTED_S16",
    "qlstm_op_handler_fully_connected_s16",
    /*state=*/nullptr, /*int16_data=*/true, /*file_version=*/7,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
