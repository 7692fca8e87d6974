// The int8 fully connected op (qlstm_fc_s8, arm_fully_connected_s8's arithmetic; parameters
// derive_ops.h), on every position of its input buffer; a Relu or Clip after it is its clamp.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/fully_connected_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_fc_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_fc_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->fc = op.as<DerivedFc>().kernel_params(0);
  return &block->fc;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedFc& fc = op.as<DerivedFc>();
  *b = {fc.input, fc.output, fc.input_size, fc.output_size};
  return true;
}

void memory(const ProgramOp& op, int32_t, ProgramMemory* mem, ProgramMemory::Op* om) {
  const DerivedFc& fc = op.as<DerivedFc>();
  const size_t weights = fc.weights.size(), biases = fc.effective_bias.size() * sizeof(int32_t);
  const size_t requants = (fc.multipliers.size() + fc.shifts.size()) * sizeof(int32_t);
  mem->weight_bytes += weights;
  mem->bias_bytes += biases;
  mem->requant_bytes += requants;
  om->flash_bytes = weights + biases + requants;
}

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedFc& fc = op.as<DerivedFc>();
  (*row)["fused_activation"] = fc.fused_activation.empty() ? "none" : fc.fused_activation;
  (*row)["per_channel"] = fc.per_channel;
}

std::string describe(const qlstm_op& o, const ProgramOp& op) {
  const DerivedFc& fc = op.as<DerivedFc>();
  return "fully connected " + std::to_string(block_of(o).input_size) + " -> " + std::to_string(block_of(o).output_size) +
         (block_of(o).per_channel != 0 ? ", one multiplier per output" : ", one multiplier") +
         (fc.fused_activation.empty() ? "" : ", fused " + fc.fused_activation);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(block_of(o), [](qlstm_fc_s8_params& p, auto& w) { visit_fc_s8_fields(p, w); });
}

void file_extras(const ProgramOp& op, std::vector<double>* weight_scales, std::string* label) {
  const DerivedFc& fc = op.as<DerivedFc>();
  *weight_scales = fc.weight_scales;
  *label = fc.fused_activation;
}

void check_arrays(const ProgramOp& op, size_t k) {
  const DerivedFc& d = op.as<DerivedFc>();
  const size_t I = static_cast<size_t>(std::max(d.input_size, 0));
  const size_t O = static_cast<size_t>(std::max(d.output_size, 0));
  const size_t requants = d.per_channel ? O : 1;
  check_array(k, "fc.weights", d.weights.size(), O * I);
  check_array(k, "fc.effective_bias", d.effective_bias.size(), O);
  check_array(k, "fc.multipliers", d.multipliers.size(), requants);
  check_array(k, "fc.shifts", d.shifts.size(), requants);
}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_rows_record(r, from, aligned, visit_fc_s8_fields<qlstm_fc_s8_params, RecordReader>);
  op->set(DerivedFc::from_kernel_params(p, r.input, r.output, r.weight_scales));
  op->as<DerivedFc>().fused_activation = r.label;  // as the compiler named it
}

qlstm_status run_rows(const ProgramOp& op, const int8_t* x, int32_t rows, std::vector<int8_t>* y) {
  const DerivedFc& fc = op.as<DerivedFc>();
  return run_kernel_rows(fc.kernel_params(rows), qlstm_fc_s8, x, rows, fc.output_size, y);
}

int64_t macs(const qlstm_op& o, int64_t in_positions, int64_t, int64_t) {
  return in_positions * block_of(o).input_size * block_of(o).output_size;
}

}  // namespace

extern const OpKind kFullyConnectedS8Kind = {
    QLSTM_OP_FULLY_CONNECTED_S8, "fully_connected", "QLSTM_OP_FULLY_CONNECTED_S8",
    "qlstm_op_handler_fully_connected_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/4,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, run_rows};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
