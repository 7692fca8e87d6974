// What the add's and the multiply's parts of the program runner share (program_op.h): operand 1
// is the input buffer, operand 2 the second input buffer, each position's row_size values from
// their offsets into its rows; the output buffer's width is row_size.
#ifndef QLSTM_SRC_ELEMENTWISE_ELEMENTWISE_OP_H_
#define QLSTM_SRC_ELEMENTWISE_ELEMENTWISE_OP_H_

#include "program_op.h"

namespace qlstm::program {

// P: qlstm_add_s8_params or qlstm_mul_s8_params, with rows set to the call's positions.
template <class P>
P elementwise_call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  P p = block_of<P>(op);
  p.shape.rows = positions(program, op.input_buffer, time_steps);
  return p;
}

template <class P, ValidateFn<P> Validate>
Failure check_elementwise(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const int32_t second = op.second_input_buffer;
  if (one_step(program, second) != one_step(program, op.input_buffer)) return bad_op("second_input_buffer", k);
  const int64_t rows = positions(program, op.input_buffer, time_steps);
  if (rows * program.buffer_widths[second] > INT32_MAX) return {QLSTM_ERROR_BAD_DIMS, "rows", k};
  const qlstm_elementwise_s8_shape& s = block_of<P>(op).shape;
  if (s.row_size != out_width(program, op)) return bad_op("shape.row_size", k);
  // Each operand's slice lies within its buffer's rows (negative offsets: the kernel's validation).
  if (static_cast<int64_t>(s.input1_offset) + s.row_size > in_width(program, op)) return bad_op("shape.input1_offset", k);
  if (static_cast<int64_t>(s.input2_offset) + s.row_size > program.buffer_widths[second]) {
    return bad_op("shape.input2_offset", k);
  }
  return validated(Validate, elementwise_call_params<P>(program, op, time_steps), k);
}

// Kernel: the kind's dispatch on validated params, the variant the options fix or the per-call
// choice (add_s8_prechecked, mul_s8_prechecked). Whole rows of both operands are one call;
// slices, a call per position.
template <class P, void (*Kernel)(const ElementwiseS8Variant<P>*, const P&, const int8_t*, const int8_t*, int8_t*),
          const ElementwiseS8Variant<P>* ProgramRunOptions::*Forced>
qlstm_status run_elementwise(const OpCall& c) {
  const ElementwiseS8Variant<P>* variant = c.options.*Forced;
  P p = elementwise_call_params<P>(c.program, c.op, c.time_steps);
  const int32_t w1 = in_width(c.program, c.op), w2 = c.program.buffer_widths[c.op.second_input_buffer];
  const int8_t* in1 = in_as<int8_t>(c);
  const int8_t* in2 = static_cast<const int8_t*>(c.in2);
  int8_t* out = out_as<int8_t>(c);
  if (w1 == p.shape.row_size && w2 == p.shape.row_size) {
    Kernel(variant, p, in1, in2, out);
    return QLSTM_OK;
  }
  const int32_t positions = p.shape.rows;
  p.shape.rows = 1;
  for (int32_t r = 0; r < positions; ++r) {
    Kernel(variant, p, in1 + static_cast<ptrdiff_t>(r) * w1 + p.shape.input1_offset,
           in2 + static_cast<ptrdiff_t>(r) * w2 + p.shape.input2_offset, out + static_cast<ptrdiff_t>(r) * p.shape.row_size);
  }
  return QLSTM_OK;
}

template <class P, ValidateFn<P> Validate,
          void (*Kernel)(const ElementwiseS8Variant<P>*, const P&, const int8_t*, const int8_t*, int8_t*),
          const ElementwiseS8Variant<P>* ProgramRunOptions::*Forced>
constexpr qlstm_op_handler elementwise_handler(int32_t kind) {
  return {kind, types_of<QLSTM_ELEMENT_S8>, check_elementwise<P, Validate>, nullptr, run_elementwise<P, Kernel, Forced>,
          true, true};
}

}  // namespace qlstm::program

#endif  // QLSTM_SRC_ELEMENTWISE_ELEMENTWISE_OP_H_
