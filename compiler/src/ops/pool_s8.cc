// The pooling op (qlstm_pool_s8, arm_max_pool_s8's and arm_avgpool_s8's arithmetic; parameters
// derive_ops.h): the mean or max over every time step of a sequence (its block's input_height 0,
// the runner setting the window per call), or over windows of each position's image. Its input
// and output share one quantization.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/pool_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  block->pool = op.as<DerivedPool>().block;
  return &block->pool;
}

bool boundary(const ProgramOp& op, OpBoundary* b) {
  const DerivedPool& d = op.as<DerivedPool>();
  *b = {d.quant, d.quant, d.input_width(), d.output_width()};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // scalars in the op table

void report(const ProgramOp& op, nlohmann::json* row) {
  const DerivedPool& d = op.as<DerivedPool>();
  (*row)["pool"] = d.name();
  if (d.over_time()) {
    (*row)["over"] = "time";
  } else {
    (*row)["window"] = {d.block.window_height, d.block.window_width};
    (*row)["stride"] = {d.block.stride_height, d.block.stride_width};
  }
}

std::string describe(const qlstm_op& o, const ProgramOp& op) {
  const qlstm_pool_s8_params& p = op_block<qlstm_pool_s8_params>(o);
  const std::string what = op.as<DerivedPool>().name();
  if (p.input_height == 0) return what + " over every time step of " + std::to_string(p.channels);
  return what + " pool " + std::to_string(p.window_height) + "x" + std::to_string(p.window_width) + " on " +
         std::to_string(p.input_height) + "x" + std::to_string(p.input_width) + "x" + std::to_string(p.channels);
}

std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  return encode_record(op_block<qlstm_pool_s8_params>(o), [](qlstm_pool_s8_params& p, auto& w) { visit_pool_s8_fields(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  std::vector<uint32_t> aligned;
  const auto p = decode_record<RecordReader, qlstm_pool_s8_params>(
      r, from, aligned, visit_pool_s8_fields<qlstm_pool_s8_params, RecordReader>);
  if (r.input.scale != r.output.scale || r.input.zero_point != r.output.zero_point) {
    bad_record(from, "field '" + from.where + ".output': a pooling op's output quantization must be its input's");
  }
  if (p.batch != 0) bad_record(from, "field '" + from.where + ".params.batch': must be 0 in a model file");
  DerivedPool d;
  d.block = p;
  d.quant = r.input;
  op->set(d);
}

std::string pools_time(const ProgramOp& op) {
  const DerivedPool& d = op.as<DerivedPool>();
  return d.over_time() ? std::string("the ") + d.name() + " over every time step" : std::string();
}

}  // namespace

extern const OpKind kPoolS8Kind = {
    QLSTM_OP_POOL_S8, "pool", "QLSTM_OP_POOL_S8",
    "qlstm_op_handler_pool_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/8,
    /*fixed_output=*/nullptr,  // its input's: calibration chose it
    /*selected_step=*/nullptr, to_kernel, boundary, memory, report, describe,
    encode, file_extras, check_arrays, decode, no_macs, /*run_rows=*/nullptr, pools_time};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
