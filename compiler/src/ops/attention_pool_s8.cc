// The int8 attention pooling op (qlstm_attention_pool_s8, docs/arithmetic.md §22; parameters
// derive_ops.h): the scores are its input buffer (one per step), the sequence it pools its second
// input buffer; it writes one row per batch row at the sequence's quantization.
#include <nlohmann/json.hpp>

#include "qlstm/attention_pool_s8.h"
#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const qlstm_attention_pool_s8_params& block_of(const qlstm_op& o) { return op_block<qlstm_attention_pool_s8_params>(o); }

const void* to_kernel(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t, OpBlock* block) {
  block->attention = op.as<DerivedAttentionPool>().kernel_params(
      B, T, layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR);
  return &block->attention;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedAttentionPool& d = op.as<DerivedAttentionPool>();
  *b = {d.scores, d.sequence, 1, d.row_size, d.sequence, d.row_size};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // scalars in the op table

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedAttentionPool& d = op.as<DerivedAttentionPool>();
  (*row)["scores"] = {{"scale", d.scores.scale}, {"zero_point", d.scores.zero_point}};
  (*row)["diff_min"] = d.diff_min;
}

std::string describe(const qlstm_op& o, const ProgramOp&) {
  return "attention pooling over time of buffer " + std::to_string(o.second_input_buffer) + " (" +
         std::to_string(block_of(o).row_size) + " per step) by the scores in buffer " + std::to_string(o.input_buffer);
}

// The runner sets batch, time_steps and layout per call: a model file holds 0.
std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  qlstm_attention_pool_s8_params p = block_of(o);
  p.batch = p.time_steps = p.layout = 0;
  return encode_record(p, [](qlstm_attention_pool_s8_params& b, auto& w) { visit_attention_pool_s8_fields(b, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_record<RecordReader, qlstm_attention_pool_s8_params>(
      r, from, aligned, visit_attention_pool_s8_fields<qlstm_attention_pool_s8_params, RecordReader>);
  const std::string at = "field '" + from.where + ".params";
  if (p.batch != 0 || p.time_steps != 0 || p.layout != 0) {
    bad_record(from, at + "': batch, time_steps and layout must be 0 in a model file (the runner sets them)");
  }
  if (p.zero_point != r.second_input.zero_point || p.zero_point != r.output.zero_point ||
      r.second_input.scale != r.output.scale) {
    bad_record(from, at + ".zero_point': the output is at the pooled sequence's quantization");
  }
  op->set(DerivedAttentionPool::from_kernel_params(p, r.input, r.second_input));
}

// Per batch row: a multiply-accumulate per step and feature.
int64_t macs(const qlstm_op& o, int64_t in_positions, int64_t, int64_t) { return in_positions * block_of(o).row_size; }

std::string pools_time(const ProgramOp&) { return "the attention-weighted sum over every time step"; }

}  // namespace

extern const OpKind kAttentionPoolS8Kind = {
    QLSTM_OP_ATTENTION_POOL_S8, "attention_pool", "QLSTM_OP_ATTENTION_POOL_S8",
    "qlstm_op_handler_attention_pool_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/16,
    /*fixed_output=*/nullptr, /*selected_step=*/nullptr,
    to_kernel, boundary, memory, report, describe, encode,
    file_extras, check_arrays, decode, macs, /*run_rows=*/nullptr, pools_time};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
