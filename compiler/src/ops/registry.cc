// The one list of op kinds the compiler knows (op_kind.h), and what the kinds' files share.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {
namespace ops {

extern const OpKind kLstmS8Kind, kFullyConnectedS8Kind, kSoftmaxS8Kind, kTableS8Kind, kSelectStepKind, kGruS8Kind,
    kLstmS16Kind, kFullyConnectedS16Kind, kRequantizeKind, kSoftmaxS16Kind, kPoolS8Kind, kLogSoftmaxS8Kind,
    kAddS8Kind, kMulS8Kind, kEmbeddingS8Kind, kLayerNormS8Kind, kAttentionPoolS8Kind, kRnnS8Kind;

void bad_record(const OpFileOrigin& from, const std::string& why) { throw CompileError(from.origin + ": " + why); }

void rows_zero(const OpFileOrigin& from, int32_t rows) {
  if (rows != 0) bad_record(from, "field '" + from.where + ".params.rows': must be 0 in a model file");
}

void no_call_dims(const OpFileOrigin& from, int32_t batch, int32_t time_steps) {
  if (batch != 1 || time_steps != 0) {
    bad_record(from, "field '" + from.where + ".params.dims': batch must be 1 and time_steps 0 in a model file");
  }
}

void symmetric_s16(const OpFileRecord& r, const OpFileOrigin& from) {
  if (r.input.zero_point != 0) bad_record(from, "field '" + from.where + ".input.zero_point': must be 0 for a 16x8 op");
  if (r.output.zero_point != 0) {
    bad_record(from, "field '" + from.where + ".output.zero_point': must be 0 for a 16x8 op");
  }
}

void check_array(size_t k, const std::string& name, size_t have, size_t want) {
  if (have != want) {
    throw CompileError("serialize_model: field 'ops[" + std::to_string(k) + "]." + name + "': expected " +
                       std::to_string(want) + " values, has " + std::to_string(have));
  }
}

void add_recurrent_memory(ProgramMemory* mem, ProgramMemory::Op* om, int32_t batch, int32_t gates, int32_t I,
                          int32_t H, size_t scratch) {
  mem->scratch_bytes = std::max(mem->scratch_bytes, scratch);
  mem->state_values += static_cast<size_t>(std::max(batch, 0)) * static_cast<size_t>(H);
  const size_t weights = static_cast<size_t>(gates) * static_cast<size_t>(H) * static_cast<size_t>(I + H);
  const size_t biases = static_cast<size_t>(2 * gates) * static_cast<size_t>(H) * sizeof(int32_t);
  mem->weight_bytes += weights;
  mem->bias_bytes += biases;
  om->flash_bytes = weights + biases;
}

void report_recurrent(int32_t time_direction, int32_t output_steps, nlohmann::json* row) {
  (*row)["direction"] = time_direction == QLSTM_TIME_REVERSE ? "reverse" : "forward";
  (*row)["output_steps"] = output_steps == QLSTM_OUTPUT_FINAL ? "final" : output_steps == QLSTM_OUTPUT_FIRST ? "first" : "all";
}

}  // namespace ops

const std::vector<const OpKind*>& op_kinds() {
  // In qlstm_op_kind order: a new kind is one entry here and its file in this folder.
  static const std::vector<const OpKind*> kinds = {
      &ops::kLstmS8Kind,  &ops::kFullyConnectedS8Kind,  &ops::kSoftmaxS8Kind,  &ops::kTableS8Kind,
      &ops::kSelectStepKind, &ops::kGruS8Kind,        &ops::kLstmS16Kind,    &ops::kFullyConnectedS16Kind,
      &ops::kRequantizeKind, &ops::kSoftmaxS16Kind, &ops::kPoolS8Kind, &ops::kLogSoftmaxS8Kind,
      &ops::kAddS8Kind, &ops::kMulS8Kind, &ops::kEmbeddingS8Kind, &ops::kLayerNormS8Kind,
      &ops::kAttentionPoolS8Kind, &ops::kRnnS8Kind};
  return kinds;
}

const OpKind* find_op_kind(int32_t kind) {
  for (const OpKind* k : op_kinds()) {
    if (k->kind == kind) return k;
  }
  return nullptr;
}

const OpKind& op_kind(int32_t kind, const std::string& where) {
  const OpKind* k = find_op_kind(kind);
  if (k == nullptr) {
    throw CompileError(where + ": " + std::to_string(kind) + " is not an op kind this qlstm knows");
  }
  return *k;
}

const RecurrentState& recurrent_state(const ProgramOp& op) {
  const OpKind& k = op_kind(op.kind, "op");
  if (k.state == nullptr) throw CompileError(std::string("internal: a ") + k.name + " op has no recurrent shape");
  return *k.state;
}

void set_constant_state(const FloatProgram& p, size_t k, ProgramOp* op) {
  const std::vector<float>* h0 = p.initial_hidden == StateSource::kConstant ? &p.h0.at(k) : nullptr;
  const std::vector<float>* c0 = p.initial_cell == StateSource::kConstant ? &p.c0.at(k) : nullptr;
  recurrent_state(*op).set_initial_state(op, h0, c0);
}

bool selected_step(const ProgramOp& op, int32_t* step) {
  const OpKind* k = find_op_kind(op.kind);
  if (k == nullptr || k->selected_step == nullptr) return false;
  *step = k->selected_step(op);
  return true;
}

std::string pooled_over_time(const ProgramOp& op) {
  const OpKind* k = find_op_kind(op.kind);
  return k == nullptr || k->pools_time == nullptr ? std::string() : k->pools_time(op);
}

const char* op_kind_name(int32_t kind) {
  const OpKind* k = find_op_kind(kind);
  return k ? k->name : "?";
}

}  // namespace compiler
}  // namespace qlstm
