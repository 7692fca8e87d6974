// The one description of each op's parameter block (C++, freestanding, header only).
//
// visit_lstm_s8_fields() names every field of qlstm_lstm_s8_params once, in declaration order
// (visit_gru_s8_fields those of qlstm_gru_s8_params, and so on for every kind);
// everything that moves a parameter block between forms is a visitor of it: the record codec
// below (the device bundle, the model file's op records), the emitted C initializer, the
// field-by-field comparison of the tests. Adding a field to an op is one line here plus its use.
//
// A visitor provides
//   void open(const char* name);   void close();           an aggregate: the block, dims, a gate, a requant
//   void i32(const char* name, int32_t& field);          every scalar (const int32_t& for a const block)
//   template <class T> void array(const char* name, const T*& data, int64_t count);
// Array extents follow from the dims visited before them (count < 0: the dims are invalid).
// Names are full paths, e.g. "gates[forget].input_to_q3_12.shift", static strings.
#ifndef QLSTM_PARAMS_CODEC_H_
#define QLSTM_PARAMS_CODEC_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qlstm/fully_connected_s16.h"
#include "qlstm/gru_s8.h"
#include "qlstm/rnn_s8.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/program_s8.h"

namespace qlstm {

namespace codec_detail {

template <class V, class Q>
void requant(V& v, const char* name, const char* multiplier, const char* shift, Q& q) {
  v.open(name);
  v.i32(multiplier, q.multiplier);
  v.i32(shift, q.shift);
  v.close();
}

// A gate's two matmuls, the fields an LSTM gate and a GRU gate share; N is the gate's path prefix
// as a literal ("gates[forget]"). The gate macros below add what differs.
#define QLSTM_VISIT_GATE_MATMULS(v, g, N, H, I)                                                         \
  do {                                                                                                  \
    codec_detail::requant(v, N ".input_to_q3_12", N ".input_to_q3_12.multiplier",                       \
                          N ".input_to_q3_12.shift", (g).input_to_q3_12);                               \
    (v).array(N ".input_weights", (g).input_weights, (H) < 0 || (I) < 0 ? -1 : (H) * (I));              \
    (v).array(N ".input_effective_bias", (g).input_effective_bias, (H));                                \
    codec_detail::requant(v, N ".hidden_to_q3_12", N ".hidden_to_q3_12.multiplier",                     \
                          N ".hidden_to_q3_12.shift", (g).hidden_to_q3_12);                             \
    (v).array(N ".hidden_weights", (g).hidden_weights, (H) < 0 ? -1 : (H) * (H));                       \
    (v).array(N ".hidden_effective_bias", (g).hidden_effective_bias, (H));                              \
  } while (0)

// The names of an int8 LSTM gate's HardSigmoid line (qlstm_hard_sigmoid_params).
struct HardSigmoidNames {
  const char *line, *slope, *multiplier, *shift, *offset;
};
// An int8 LSTM gate's HardSigmoid line (G: qlstm_gate_s8_params, maybe const); a 16x8 gate has none.
template <class V, class G>
void hard_sigmoid_line(V& v, G& g, const HardSigmoidNames& n) {
  v.open(n.line);
  requant(v, n.slope, n.multiplier, n.shift, g.hard_sigmoid.slope);
  v.i32(n.offset, g.hard_sigmoid.offset_q0_15);
  v.close();
}
template <class V>
void hard_sigmoid_line(V&, qlstm_gate_s16_params&, const HardSigmoidNames&) {}
template <class V>
void hard_sigmoid_line(V&, const qlstm_gate_s16_params&, const HardSigmoidNames&) {}

// An LSTM gate: its matmuls, its activation and (the int8 LSTM's) its HardSigmoid line.
#define QLSTM_VISIT_GATE(v, g, N, H, I)                                                                 \
  do {                                                                                                  \
    (v).open(N);                                                                                        \
    QLSTM_VISIT_GATE_MATMULS(v, g, N, H, I);                                                            \
    (v).i32(N ".activation", (g).activation);                                                           \
    codec_detail::hard_sigmoid_line(v, g,                                                               \
                                    {N ".hard_sigmoid", N ".hard_sigmoid.slope",                       \
                                     N ".hard_sigmoid.slope.multiplier", N ".hard_sigmoid.slope.shift", \
                                     N ".hard_sigmoid.offset_q0_15"});                                  \
    (v).close();                                                                                        \
  } while (0)

// A GRU gate: its matmuls only (its activation is fixed by its index).
#define QLSTM_VISIT_GRU_GATE(v, g, N, H, I)                                                             \
  do {                                                                                                  \
    (v).open(N);                                                                                        \
    QLSTM_VISIT_GATE_MATMULS(v, g, N, H, I);                                                            \
    (v).close();                                                                                        \
  } while (0)

// The first fields of a recurrent op's block (P: qlstm_lstm_s8_params or qlstm_gru_s8_params,
// maybe const), the same in the LSTM and the GRU: opens the block, visits its dims and layout.
template <class V, class P>
void recurrent_head(V& v, const char* block, P& p) {
  v.open(block);
  v.open("dims");
  v.i32("dims.batch", p.dims.batch);
  v.i32("dims.time_steps", p.dims.time_steps);
  v.i32("dims.input_size", p.dims.input_size);
  v.i32("dims.hidden_size", p.dims.hidden_size);
  v.close();
  v.i32("layout", p.layout);
}

// The sequence options, the last fields of every recurrent op's block.
template <class V, class P>
void sequence_options(V& v, P& p) {
  v.i32("time_direction", p.time_direction);
  v.i32("output_width", p.output_width);
  v.i32("output_steps", p.output_steps);
}

// The last fields of an int8 recurrent op's block, the same in the LSTM and the GRU.
template <class V, class P>
void sequence_tail(V& v, P& p) {
  v.i32("output_zero_point", p.output_zero_point);
  sequence_options(v, p);
}

inline int64_t extent(int32_t n) { return n < 0 ? -1 : static_cast<int64_t>(n); }

// An optional array's pointer set to null when a reader read it empty (a const block: no-op).
template <class T>
void set_null(const T*& q) {
  q = nullptr;
}
template <class T>
void set_null(const T* const&) {}

// An LSTM block's gates and cell fields, the same in the int8 and the 16x8 LSTM.
template <class P, class V>
void lstm_gates_and_cell(P& p, V& v) {
  const int64_t H = extent(p.dims.hidden_size), I = extent(p.dims.input_size);
  v.open("gates");
  QLSTM_VISIT_GATE(v, p.gates[QLSTM_GATE_FORGET], "gates[forget]", H, I);
  QLSTM_VISIT_GATE(v, p.gates[QLSTM_GATE_INPUT], "gates[input]", H, I);
  QLSTM_VISIT_GATE(v, p.gates[QLSTM_GATE_CELL], "gates[cell]", H, I);
  QLSTM_VISIT_GATE(v, p.gates[QLSTM_GATE_OUTPUT], "gates[output]", H, I);
  v.close();
  requant(v, "forget_times_cell_to_cell", "forget_times_cell_to_cell.multiplier", "forget_times_cell_to_cell.shift",
          p.forget_times_cell_to_cell);
  requant(v, "input_times_cell_gate_to_cell", "input_times_cell_gate_to_cell.multiplier",
          "input_times_cell_gate_to_cell.shift", p.input_times_cell_gate_to_cell);
  requant(v, "output_times_tanh_cell_to_hidden", "output_times_tanh_cell_to_hidden.multiplier",
          "output_times_tanh_cell_to_hidden.shift", p.output_times_tanh_cell_to_hidden);
  v.i32("cell_scale_power", p.cell_scale_power);
  v.i32("cell_clip", p.cell_clip);
}
}  // namespace codec_detail

// P is qlstm_lstm_s8_params or const qlstm_lstm_s8_params.
template <class P, class V>
void visit_lstm_s8_fields(P& p, V& v) {
  codec_detail::recurrent_head(v, "lstm", p);
  codec_detail::lstm_gates_and_cell(p, v);
  codec_detail::sequence_tail(v, p);
  v.i32("input_repeated", p.input_repeated);
  v.close();
}

// P is qlstm_lstm_s16_params or const qlstm_lstm_s16_params: the int8 LSTM's fields without the
// output zero point (its effective biases int64).
template <class P, class V>
void visit_lstm_s16_fields(P& p, V& v) {
  codec_detail::recurrent_head(v, "lstm_s16", p);
  codec_detail::lstm_gates_and_cell(p, v);
  codec_detail::sequence_options(v, p);
  v.close();
}

namespace codec_detail {
// The 16x8 fully connected block's fields before its bias, and after it.
template <class P, class V>
void fc_s16_head(P& p, V& v) {
  v.open("fc_s16");
  v.i32("rows", p.rows);
  v.i32("input_size", p.input_size);
  v.i32("output_size", p.output_size);
  v.i32("multiplier", p.multiplier);
  v.i32("shift", p.shift);
  v.array("weights", p.weights, p.input_size < 0 || p.output_size < 0 ? -1 : extent(p.input_size) * p.output_size);
}
template <class P, class V>
void fc_s16_tail(P& p, V& v) {
  v.i32("activation_min", p.activation_min);
  v.i32("activation_max", p.activation_max);
  v.close();
}
}  // namespace codec_detail

// P is qlstm_fc_s16_params or const qlstm_fc_s16_params (Flag int32_t, const for a const block). The
// bias is optional: has_bias (0 or 1) is on the wire, the pointer null without it.
template <class P, class V, class Flag>
void visit_fc_s16_fields(P& p, V& v, Flag& has_bias) {
  codec_detail::fc_s16_head(p, v);
  v.i32("has_bias", has_bias);
  v.array("bias", p.bias, has_bias == 0 ? 0 : (has_bias == 1 ? codec_detail::extent(p.output_size) : -1));
  if (has_bias == 0) codec_detail::set_null(p.bias);
  codec_detail::fc_s16_tail(p, v);
}

// The same block as a program's op holds it: its bias always there ([O]; the program requires it).
template <class P, class V>
void visit_fc_s16_op_fields(P& p, V& v) {
  codec_detail::fc_s16_head(p, v);
  v.array("bias", p.bias, codec_detail::extent(p.output_size));
  codec_detail::fc_s16_tail(p, v);
}

// P is qlstm_requantize_params or const qlstm_requantize_params.
template <class P, class V>
void visit_requantize_fields(P& p, V& v) {
  v.open("requantize");
  v.i32("rows", p.rows);
  v.i32("row_size", p.row_size);
  v.i32("input_type", p.input_type);
  v.i32("output_type", p.output_type);
  v.i32("input_zero_point", p.input_zero_point);
  v.i32("output_zero_point", p.output_zero_point);
  codec_detail::requant(v, "to_output", "to_output.multiplier", "to_output.shift", p.to_output);
  v.close();
}

// P is qlstm_gru_s8_params or const qlstm_gru_s8_params.
template <class P, class V>
void visit_gru_s8_fields(P& p, V& v) {
  codec_detail::recurrent_head(v, "gru", p);
  const int64_t H = codec_detail::extent(p.dims.hidden_size), I = codec_detail::extent(p.dims.input_size);
  v.open("gates");
  QLSTM_VISIT_GRU_GATE(v, p.gates[QLSTM_GRU_GATE_RESET], "gates[reset]", H, I);
  QLSTM_VISIT_GRU_GATE(v, p.gates[QLSTM_GRU_GATE_UPDATE], "gates[update]", H, I);
  QLSTM_VISIT_GRU_GATE(v, p.gates[QLSTM_GRU_GATE_NEW], "gates[new]", H, I);
  v.close();
  codec_detail::requant(v, "reset_times_hidden_to_q3_12", "reset_times_hidden_to_q3_12.multiplier",
                        "reset_times_hidden_to_q3_12.shift", p.reset_times_hidden_to_q3_12);
  codec_detail::requant(v, "update_times_difference_to_q0_15", "update_times_difference_to_q0_15.multiplier",
                        "update_times_difference_to_q0_15.shift", p.update_times_difference_to_q0_15);
  codec_detail::requant(v, "hidden_q0_15_to_output", "hidden_q0_15_to_output.multiplier",
                        "hidden_q0_15_to_output.shift", p.hidden_q0_15_to_output);
  codec_detail::sequence_tail(v, p);
  v.array("new_gate_zero_state_bias", p.new_gate_zero_state_bias, H);  // model format 6 on
  v.i32("input_repeated", p.input_repeated);                           // model format 19 on
  v.close();
}

// P is qlstm_rnn_s8_params or const qlstm_rnn_s8_params.
template <class P, class V>
void visit_rnn_s8_fields(P& p, V& v) {
  codec_detail::recurrent_head(v, "rnn", p);
  const int64_t H = codec_detail::extent(p.dims.hidden_size), I = codec_detail::extent(p.dims.input_size);
  QLSTM_VISIT_GRU_GATE(v, p.gate, "gate", H, I);
  v.i32("activation", p.activation);
  codec_detail::requant(v, "hidden_to_output", "hidden_to_output.multiplier", "hidden_to_output.shift",
                        p.hidden_to_output);
  codec_detail::sequence_tail(v, p);
  v.close();
}

// P is qlstm_fc_s8_params or const qlstm_fc_s8_params.
template <class P, class V>
void visit_fc_s8_fields(P& p, V& v) {
  v.open("fc");
  v.i32("rows", p.rows);
  v.i32("input_size", p.input_size);
  v.i32("output_size", p.output_size);
  v.i32("per_channel", p.per_channel);
  const int64_t I = codec_detail::extent(p.input_size), O = codec_detail::extent(p.output_size);
  const int64_t requants = p.per_channel == 0 ? 1 : (p.per_channel == 1 ? O : -1);
  v.array("multipliers", p.multipliers, requants);
  v.array("shifts", p.shifts, requants);
  v.array("weights", p.weights, I < 0 || O < 0 ? -1 : I * O);
  v.array("effective_bias", p.effective_bias, O);
  v.i32("output_zero_point", p.output_zero_point);
  v.i32("activation_min", p.activation_min);
  v.i32("activation_max", p.activation_max);
  v.close();
}

namespace codec_detail {
// The fields the int8 and the 16x8 softmax share, in both blocks' order.
template <class P, class V>
void softmax_scaling(P& p, V& v) {
  v.i32("rows", p.rows);
  v.i32("row_size", p.row_size);
  v.i32("input_multiplier", p.input_multiplier);
  v.i32("input_left_shift", p.input_left_shift);
}
}  // namespace codec_detail

template <class P, class V>
void visit_softmax_s8_fields(P& p, V& v) {
  v.open("softmax");
  codec_detail::softmax_scaling(p, v);
  v.i32("diff_min", p.diff_min);
  v.close();
}

template <class P, class V>
void visit_log_softmax_s8_fields(P& p, V& v) {
  v.open("log_softmax");
  codec_detail::softmax_scaling(p, v);
  v.i32("reverse_multiplier", p.reverse_multiplier);
  v.i32("reverse_shift", p.reverse_shift);
  v.i32("diff_min", p.diff_min);
  v.close();
}

// P is qlstm_softmax_s16_params or const qlstm_softmax_s16_params.
namespace codec_detail {
// The operands' shape of an elementwise op (qlstm_elementwise_s8_shape, maybe const).
template <class V, class S>
void elementwise_shape(V& v, S& s) {
  v.open("shape");
  v.i32("shape.rows", s.rows);
  v.i32("shape.row_size", s.row_size);
  v.i32("shape.input1_offset", s.input1_offset);
  v.i32("shape.input2_offset", s.input2_offset);
  v.close();
}
// The zero points, the output requantization and the clamp: the last fields of both blocks.
template <class V, class P>
void elementwise_output(V& v, P& p) {
  v.i32("output_multiplier", p.output_multiplier);
  v.i32("output_shift", p.output_shift);
  v.i32("output_zero_point", p.output_zero_point);
  v.i32("activation_min", p.activation_min);
  v.i32("activation_max", p.activation_max);
}
}  // namespace codec_detail

template <class P, class V>
void visit_add_s8_fields(P& p, V& v) {
  v.open("add");
  codec_detail::elementwise_shape(v, p.shape);
  v.i32("input1_zero_point", p.input1_zero_point);
  v.i32("input2_zero_point", p.input2_zero_point);
  v.i32("left_shift", p.left_shift);
  v.i32("input1_multiplier", p.input1_multiplier);
  v.i32("input1_shift", p.input1_shift);
  v.i32("input2_multiplier", p.input2_multiplier);
  v.i32("input2_shift", p.input2_shift);
  codec_detail::elementwise_output(v, p);
  v.close();
}

template <class P, class V>
void visit_mul_s8_fields(P& p, V& v) {
  v.open("mul");
  codec_detail::elementwise_shape(v, p.shape);
  v.i32("input1_zero_point", p.input1_zero_point);
  v.i32("input2_zero_point", p.input2_zero_point);
  codec_detail::elementwise_output(v, p);
  v.close();
}

template <class P, class V>
void visit_softmax_s16_fields(P& p, V& v) {
  v.open("softmax_s16");
  codec_detail::softmax_scaling(p, v);
  v.close();
}

template <class P, class V>
void visit_table_s8_fields(P& p, V& v) {
  v.open("table");
  v.i32("rows", p.rows);
  v.i32("row_size", p.row_size);
  v.array("table", p.table, QLSTM_TABLE_S8_ENTRIES);
  v.close();
}

template <class P, class V>
void visit_embedding_s8_fields(P& p, V& v) {
  v.open("embedding");
  v.i32("rows", p.rows);
  v.i32("table_rows", p.table_rows);
  v.i32("row_size", p.row_size);
  const int64_t V_rows = codec_detail::extent(p.table_rows), E = codec_detail::extent(p.row_size);
  v.array("table", p.table, V_rows < 0 || E < 0 ? -1 : V_rows * E);
  v.close();
}

template <class P, class V>
void visit_layer_norm_s8_fields(P& p, V& v) {
  v.open("layer_norm");
  v.i32("rows", p.rows);
  v.i32("row_size", p.row_size);
  v.i32("epsilon_term", p.epsilon_term);
  v.i32("epsilon_shift", p.epsilon_shift);
  const int64_t F = codec_detail::extent(p.row_size);
  v.array("weights", p.weights, F);
  v.array("biases", p.biases, F);
  v.i32("output_shift", p.output_shift);
  v.i32("output_zero_point", p.output_zero_point);
  v.close();
}

template <class P, class V>
void visit_attention_pool_s8_fields(P& p, V& v) {
  v.open("attention");
  v.i32("batch", p.batch);
  v.i32("time_steps", p.time_steps);
  v.i32("layout", p.layout);
  v.i32("row_size", p.row_size);
  v.i32("input_multiplier", p.input_multiplier);
  v.i32("input_left_shift", p.input_left_shift);
  v.i32("diff_min", p.diff_min);
  v.i32("zero_point", p.zero_point);
  v.close();
}

template <class P, class V>
void visit_select_step_fields(P& p, V& v) {
  v.open("select");
  v.i32("step", p.step);
  v.i32("row_size", p.row_size);
  v.i32("step_count", p.step_count);
  v.close();
}

template <class P, class V>
void visit_pool_s8_fields(P& p, V& v) {
  v.open("pool");
  v.i32("kind", p.kind);
  v.i32("batch", p.batch);
  v.i32("input_height", p.input_height);
  v.i32("input_width", p.input_width);
  v.i32("channels", p.channels);
  v.i32("window_height", p.window_height);
  v.i32("window_width", p.window_width);
  v.i32("stride_height", p.stride_height);
  v.i32("stride_width", p.stride_width);
  v.i32("padding_height", p.padding_height);
  v.i32("padding_width", p.padding_width);
  v.i32("output_height", p.output_height);
  v.i32("output_width", p.output_width);
  v.i32("activation_min", p.activation_min);
  v.i32("activation_max", p.activation_max);
  v.close();
}

#undef QLSTM_VISIT_GRU_GATE
#undef QLSTM_VISIT_GATE
#undef QLSTM_VISIT_GATE_MATMULS

namespace codec_detail {
// state_offset is a size_t in qlstm_op; on the wire (and in a visitor) an int32.
template <class V>
void offset(V& v, const char* name, const size_t& field) {
  v.i32(name, static_cast<int32_t>(field));
}
template <class V>
void offset(V& v, const char* name, size_t& field) {
  int32_t x = static_cast<int32_t>(field);
  v.i32(name, x);
  field = x < 0 ? static_cast<size_t>(-1) : static_cast<size_t>(x);  // negative: refused by validation
}
}  // namespace codec_detail

// The block an op's params points to, as its kind's type P (the op's kind must be P's).
template <class P>
const P& op_block(const qlstm_op& op) {
  return *static_cast<const P*>(op.params);
}

// Every kind's block, from op_kinds.h's list: QLSTM_OP_KINDS(X) with
// X(NAME, value, handler, member, block type, visitor of its fields).

// Room for one op's block of any kind: where a reader of op records (the device bundle, the
// model file, the host's table) keeps the block the op's params points to.
union OpBlock {
#define QLSTM_BLOCK_MEMBER(name, value, handler, member, type, visit) type member;
  QLSTM_OP_KINDS(QLSTM_BLOCK_MEMBER)
#undef QLSTM_BLOCK_MEMBER
};

namespace codec_detail {
// Reading: the block of the kind read into `block`; returns where op.params must point (NULL for
// an unknown kind, which visits nothing).
template <class V>
const void* visit_block(int32_t kind, OpBlock& block, V& v) {
  switch (kind) {
#define QLSTM_BLOCK_READ(name, value, handler, member, type, visit) \
  case QLSTM_OP_##name: visit(block.member, v); return &block.member;
    QLSTM_OP_KINDS(QLSTM_BLOCK_READ)
#undef QLSTM_BLOCK_READ
    default: return nullptr;
  }
}

// Writing: the block `params` points to, as its kind's type.
template <class V>
void visit_block(int32_t kind, const void* params, V& v) {
  switch (kind) {
#define QLSTM_BLOCK_WRITE(name, value, handler, member, type, visit) \
  case QLSTM_OP_##name: visit(*static_cast<const type*>(params), v); return;
    QLSTM_OP_KINDS(QLSTM_BLOCK_WRITE)
#undef QLSTM_BLOCK_WRITE
    default: return;
  }
}

template <class Op, class V>
void visit_wiring(Op& op, V& v) {
  v.i32("input_buffer", op.input_buffer);
  v.i32("output_buffer", op.output_buffer);
  v.i32("output_offset", op.output_offset);
  offset(v, "state_offset", op.state_offset);
  v.i32("second_input_buffer", op.second_input_buffer);
}
}  // namespace codec_detail

// Copies the block op's params points to into *to, as its kind's type; returns where a copy of
// op must point (NULL for NULL params or an unknown kind).
inline const void* copy_op_block(const qlstm_op& op, OpBlock* to) {
  if (op.params == nullptr) return nullptr;
  switch (op.kind) {
#define QLSTM_BLOCK_COPY(name, value, handler, member, type, visit) \
  case QLSTM_OP_##name: to->member = *static_cast<const type*>(op.params); return &to->member;
    QLSTM_OP_KINDS(QLSTM_BLOCK_COPY)
#undef QLSTM_BLOCK_COPY
    default: return nullptr;
  }
}

// The C type of the kind's block ("qlstm_lstm_s8_params"), or NULL for an unknown kind: the
// emitted source's block declarations.
inline const char* op_block_type(int32_t kind) {
  switch (kind) {
#define QLSTM_BLOCK_TYPE(name, value, handler, member, type, visit) \
  case QLSTM_OP_##name: return #type;
    QLSTM_OP_KINDS(QLSTM_BLOCK_TYPE)
#undef QLSTM_BLOCK_TYPE
    default: return nullptr;
  }
}

// An op with its own copy of its block: its params point to it, also after a copy (a case that
// outlives the table it came from).
struct OwnedOp {
  qlstm_op op{};
  OpBlock block{};
  OwnedOp() = default;
  explicit OwnedOp(const qlstm_op& o) : op(o) { op.params = copy_op_block(o, &block); }
  OwnedOp(const OwnedOp& o) : OwnedOp(o.op) {}
  OwnedOp& operator=(const OwnedOp& o) {
    if (this != &o) {
      op = o.op;
      op.params = copy_op_block(o.op, &block);
    }
    return *this;
  }
};

// The block of op's kind alone (its params must be set): the emitted block initializer.
template <class V>
void visit_block_fields(const qlstm_op& op, V& v) {
  if (op.params != nullptr) codec_detail::visit_block(op.kind, op.params, v);
}

// One op of a program as written: its kind, its kind's block (none when params is NULL or the
// kind unknown), its wiring.
template <class V>
void visit_op_fields(const qlstm_op& op, V& v) {
  v.open("op");
  v.i32("kind", op.kind);
  visit_block_fields(op, v);
  codec_detail::visit_wiring(op, v);
  v.close();
}

// The same as read: the block goes to `block` and op.params points to it (NULL for an unknown
// kind: a reader then stops at the next field, or validation refuses the kind).
template <class V>
void visit_op_fields(qlstm_op& op, OpBlock& block, V& v) {
  v.open("op");
  v.i32("kind", op.kind);
  op.params = codec_detail::visit_block(op.kind, block, v);
  codec_detail::visit_wiring(op, v);
  v.close();
}

// ---- The record codec: every int32 field as 4 little-endian bytes, every array's elements
// little-endian and padded with zeros to a multiple of 4 bytes (an int64 array starts at a multiple
// of 8 bytes from the record's start, after 4 zero bytes when needed), in visiting order. No names or
// counts are stored: the dims in front give every extent. A record read in place keeps the
// array pointers into it, so the device runs a block straight from its bundle.

// Writes into a Sink with `void put(const uint8_t* bytes, size_t n)`.
template <class Sink>
class RecordWriter {
 public:
  explicit RecordWriter(Sink& sink) : sink_(sink) {}
  void open(const char*) {}
  void close() {}
  void i32(const char*, int32_t v) { put_le(static_cast<uint32_t>(v), 4); }
  template <class T>
  void array(const char*, const T* data, int64_t count) {
    static const uint8_t kZero[4] = {0, 0, 0, 0};
    if (sizeof(T) == 8 && written_ % 8 != 0) put(kZero, 4);  // int64 arrays start 8-aligned
    for (int64_t k = 0; k < count; ++k) put_le(static_cast<uint64_t>(data[k]), sizeof(T));
    const size_t tail = static_cast<size_t>(count > 0 ? count : 0) * sizeof(T) % 4;
    if (tail != 0) put(kZero, 4 - tail);
  }

 private:
  void put(const uint8_t* b, size_t n) {
    sink_.put(b, n);
    written_ += n;
  }
  void put_le(uint64_t u, size_t n) {
    uint8_t b[8];
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>((u >> (8 * k)) & 0xFFu);
    put(b, n);
  }
  Sink& sink_;
  size_t written_ = 0;  // bytes of this record so far
};

// Passes every field to Writer but those whose names contain `absent` (null: none): a record as
// an earlier version wrote it, before those fields were added (the model file's versions).
template <class Writer>
class RecordWriterWithout {
 public:
  RecordWriterWithout(Writer& w, const char* absent) : w_(w), absent_(absent) {}
  void open(const char* name) { w_.open(name); }
  void close() { w_.close(); }
  void i32(const char* name, int32_t v) {
    if (!left_out(name)) w_.i32(name, v);
  }
  template <class T>
  void array(const char* name, const T* data, int64_t count) {
    if (!left_out(name)) w_.array(name, data, count);
  }

 private:
  bool left_out(const char* name) const { return absent_ != nullptr && strstr(name, absent_) != nullptr; }
  Writer& w_;
  const char* absent_;
};

// Reads a record in place: arrays point into it (so it must be 8-byte aligned, for int64 arrays,
// and outlive the block). The first field that does not fit stops the reading; failed() names it.
class RecordReader {
 public:
  RecordReader(const uint8_t* data, size_t size) : start_(data), p_(data), end_(data + size) {}
  void open(const char*) {}
  void close() {}
  void i32(const char* name, int32_t& v) {
    v = 0;
    if (failed_ != nullptr) return;
    if (static_cast<size_t>(end_ - p_) < 4) {
      failed_ = name;
      return;
    }
    uint32_t u = 0;
    for (size_t k = 0; k < 4; ++k) u |= static_cast<uint32_t>(p_[k]) << (8 * k);
    memcpy(&v, &u, 4);
    p_ += 4;
  }
  template <class T>
  void array(const char* name, const T*& data, int64_t count) {
    data = nullptr;
    if (failed_ != nullptr) return;
    if (sizeof(T) == 8 && (p_ - start_) % 8 != 0) {  // int64 arrays start 8-aligned (RecordWriter)
      if (end_ - p_ < 4) {
        failed_ = name;
        return;
      }
      p_ += 4;
    }
    const size_t left = static_cast<size_t>(end_ - p_);
    if (count < 0 || static_cast<uint64_t>(count) > left / sizeof(T)) {
      failed_ = name;
      return;
    }
    const size_t bytes = static_cast<size_t>(count) * sizeof(T), padded = (bytes + 3u) & ~static_cast<size_t>(3);
    if (padded > left) {
      failed_ = name;
      return;
    }
    data = reinterpret_cast<const T*>(p_);
    p_ += padded;
  }
  const char* failed() const { return failed_; }
  // Every byte was read and every field fitted.
  bool complete() const { return failed_ == nullptr && p_ == end_; }
  const uint8_t* position() const { return p_; }

 private:
  const uint8_t* start_;
  const uint8_t* p_;
  const uint8_t* end_;
  const char* failed_ = nullptr;
};

// Reads one LSTM block from a record; returns the bytes it took (0 with *field set on failure).
inline size_t read_lstm_s8_record(const uint8_t* data, size_t size, qlstm_lstm_s8_params* params,
                                  const char** field) {
  RecordReader r(data, size);
  visit_lstm_s8_fields(*params, r);
  if (r.failed() != nullptr) {
    if (field != nullptr) *field = r.failed();
    return 0;
  }
  return static_cast<size_t>(r.position() - data);
}

}  // namespace qlstm

#endif  // QLSTM_PARAMS_CODEC_H_
