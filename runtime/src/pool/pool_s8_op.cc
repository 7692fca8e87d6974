// The pooling op's part of the program runner (program_op.h). Its block's input_height says what
// it pools: 0, a sequence over all its time steps into a one-step buffer (y.mean(dim=1),
// y.max(dim=1).values; the runner sets the geometry of each call from T, the batch and the
// layout), or >= 1, each position's [input_height][input_width][channels] image into an
// [output_height][output_width][channels] one.
#include "program_op.h"
#include "qlstm/kernels.h"
#include "qlstm/pool_s8.h"

namespace {

using namespace qlstm::program;

// The block's geometry for this call: a sequence pooled over time is a batch of [T][1][C] images
// (batch-major) or one [T][B][C] image (time-major), with a window of T x 1.
qlstm_pool_s8_params call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  qlstm_pool_s8_params p = block_of<qlstm_pool_s8_params>(op);
  if (p.input_height != 0) {
    p.batch = positions(program, op.input_buffer, time_steps);
    return p;
  }
  const bool time_major = program.layout == QLSTM_LAYOUT_TIME_MAJOR;
  p.batch = time_major ? 1 : program.batch;
  p.input_height = p.window_height = time_steps;
  p.input_width = p.output_width = time_major ? program.batch : 1;
  p.window_width = p.stride_height = p.stride_width = p.output_height = 1;
  p.padding_height = p.padding_width = 0;
  return p;
}

// A batch-major pooling over time may write a part of each output row (from output_offset, as
// wide as its channels): torch.cat((y.mean(1), y.max(1).values), 1) is two such ops on one buffer.
bool writes_part(const qlstm_program& program, const qlstm_op& op, const qlstm_pool_s8_params& block) {
  return block.input_height == 0 && program.layout == QLSTM_LAYOUT_BATCH_MAJOR &&
         (op.output_offset != 0 || block.channels != out_width(program, op));
}

Failure check_pool(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const qlstm_pool_s8_params& block = block_of<qlstm_pool_s8_params>(op);
  const bool over_time = block.input_height == 0;
  const bool part = writes_part(program, op, block);
  const Failure f = check_rows(program, k, time_steps, over_time, part && block.channels > 0 ? block.channels : 0);
  if (f.status != QLSTM_OK) return f;
  const int64_t in = over_time ? block.channels : static_cast<int64_t>(block.input_height) * block.input_width * block.channels;
  const int64_t out = over_time ? block.channels
                                : static_cast<int64_t>(block.output_height) * block.output_width * block.channels;
  if (in != in_width(program, op)) return bad_op("channels", k);
  if (!part && out != out_width(program, op)) return bad_op("output_width", k);
  if (over_time && time_steps < 1) return bad_op("time_steps", k);  // no step to pool
  if (program.batch == 0) return kNoFailure;
  return validated(qlstm_pool_s8_validate, call_params(program, op, time_steps), k);
}

qlstm_status run_pool(const OpCall& c) {
  if (c.program.batch == 0) return QLSTM_OK;
  qlstm_pool_s8_params p = call_params(c.program, c.op, c.time_steps);
  if (!writes_part(c.program, c.op, block_of<qlstm_pool_s8_params>(c.op))) {
    return qlstm::run_pool_s8_prechecked(c.options.pool_variant, p, in_as<int8_t>(c), out_as<int8_t>(c));
  }
  // A part of each row: one batch row's sequence at a time, into its row at the offset.
  const int32_t B = p.batch;
  const ptrdiff_t in_row = static_cast<ptrdiff_t>(c.time_steps) * p.channels;
  const ptrdiff_t out_row = out_width(c.program, c.op);
  p.batch = 1;
  for (int32_t b = 0; b < B; ++b) {
    const qlstm_status st = qlstm::run_pool_s8_prechecked(c.options.pool_variant, p, in_as<int8_t>(c) + b * in_row,
                                                          out_as<int8_t>(c) + b * out_row + c.op.output_offset);
    if (st != QLSTM_OK) return st;
  }
  return QLSTM_OK;
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_pool_s8 = {
    QLSTM_OP_POOL_S8, types_of<QLSTM_ELEMENT_S8>, check_pool, nullptr, run_pool,
};
