/* The public headers compile as C11 and the kernels run from C: a tiny LSTM, stateless vs
 * reset + stateful, its final-state output, an argument error, and a program LSTM final state ->
 * FC -> softmax -> table with a selection from a C table of ops. Exit status 0 on success. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qlstm/fully_connected_s8.h"
#include "qlstm/gru_s8.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/program_s8.h"
#include "qlstm/softmax_s8.h"
#include "qlstm/table_s8.h"

enum { B = 2, T = 5, I = 3, H = 4 };

static int8_t weights_x[QLSTM_GATE_COUNT][H * I];
static int8_t weights_h[QLSTM_GATE_COUNT][H * H];
static int32_t bias_x[QLSTM_GATE_COUNT][H];
static int32_t bias_h[QLSTM_GATE_COUNT][H];
static _Alignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char scratch[3 * B * H * 2];

static int fail(const char* what) {
  fprintf(stderr, "c_api_test: %s\n", what);
  return 1;
}

int main(void) {
  qlstm_lstm_s8_params p;
  memset(&p, 0, sizeof p);
  p.dims.batch = B;
  p.dims.time_steps = T;
  p.dims.input_size = I;
  p.dims.hidden_size = H;
  p.layout = QLSTM_LAYOUT_TIME_MAJOR;
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    for (int k = 0; k < H * I; ++k) weights_x[g][k] = (int8_t)((k * 37 + g * 11) % 255 - 127);
    for (int k = 0; k < H * H; ++k) weights_h[g][k] = (int8_t)((k * 53 + g * 7) % 255 - 127);
    for (int k = 0; k < H; ++k) bias_x[g][k] = (k - 2) * 1000 * (g + 1);
    /* -zp_h * rowsum(W_h), as a converter folds it (set after the zero point below). */
    p.gates[g].input_to_q3_12.multiplier = 1518500250;
    p.gates[g].input_to_q3_12.shift = -1;
    p.gates[g].hidden_to_q3_12.multiplier = 1283457024;
    p.gates[g].hidden_to_q3_12.shift = -2;
    p.gates[g].input_weights = weights_x[g];
    p.gates[g].hidden_weights = weights_h[g];
    p.gates[g].input_effective_bias = bias_x[g];
    p.gates[g].hidden_effective_bias = bias_h[g];
    p.gates[g].activation = g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
  }
  p.cell_scale_power = -11;
  p.forget_times_cell_to_cell.multiplier = 1 << 30;
  p.forget_times_cell_to_cell.shift = -14;
  p.input_times_cell_gate_to_cell.multiplier = 1 << 30;
  p.input_times_cell_gate_to_cell.shift = -29 + 11;
  p.output_times_tanh_cell_to_hidden.multiplier = 1 << 30;
  p.output_times_tanh_cell_to_hidden.shift = -22;
  p.output_zero_point = -3;
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    for (int r = 0; r < H; ++r) {
      int32_t rowsum = 0;
      for (int j = 0; j < H; ++j) rowsum += weights_h[g][r * H + j];
      bias_h[g][r] = -p.output_zero_point * rowsum;
    }
  }

  if (qlstm_lstm_s8_scratch_bytes(&p.dims) != sizeof scratch) return fail("scratch size");
  int8_t input[T * B * I];
  for (int k = 0; k < T * B * I; ++k) input[k] = (int8_t)(k * 29 % 256 - 128);

  int16_t cell[B * H];
  int8_t out_stateless[T * B * H], out_stateful[T * B * H], hidden[B * H];
  qlstm_lstm_s8_context ctx = {scratch, sizeof scratch, cell, NULL};
  if (qlstm_lstm_s8(&p, &ctx, input, out_stateless) != QLSTM_OK) return fail("stateless run");

  ctx.hidden_state = hidden;
  if (qlstm_lstm_s8_reset_state(&p, &ctx) != QLSTM_OK) return fail("reset");
  if (qlstm_lstm_s8(&p, &ctx, input, out_stateful) != QLSTM_OK) return fail("stateful run");
  if (memcmp(out_stateless, out_stateful, sizeof out_stateless) != 0) {
    return fail("stateless and reset+stateful differ");
  }
  if (memcmp(hidden, out_stateful + (T - 1) * B * H, sizeof hidden) != 0) {
    return fail("final hidden state is not the last output step");
  }
  int distinct = 0;
  for (int k = 1; k < T * B * H; ++k) distinct += out_stateless[k] != out_stateless[0];
  if (distinct == 0) return fail("degenerate output (all values equal)");

  /* Only the final state: the last step of the every-step output. */
  int8_t final_h[B * H];
  p.output_steps = QLSTM_OUTPUT_FINAL;
  ctx.hidden_state = NULL;
  if (qlstm_lstm_s8(&p, &ctx, input, final_h) != QLSTM_OK) return fail("final-state run");
  if (memcmp(final_h, out_stateless + (T - 1) * B * H, sizeof final_h) != 0) return fail("final state differs");

  /* A program: LSTM final state -> FC -> softmax, and the FC's ReLU'd output through a table. */
  enum { O = 3 };
  static const int8_t fc_weights[O * H] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
  static int32_t fc_bias[O];
  static const int32_t fc_multiplier[1] = {1 << 30}, fc_shift[1] = {-3};
  static int8_t table[QLSTM_TABLE_S8_ENTRIES];
  for (int k = 0; k < QLSTM_TABLE_S8_ENTRIES; ++k) table[k] = (int8_t)(127 - k);
  qlstm_fc_s8_effective_bias(fc_weights, NULL, p.output_zero_point, H, O, fc_bias);
  qlstm_op ops[3];
  memset(ops, 0, sizeof ops);
  ops[0].kind = QLSTM_OP_LSTM_S8;
  ops[0].params = &p;
  ops[0].input_buffer = 0;
  ops[0].output_buffer = 1;
  const qlstm_fc_s8_params fc = {0, H, O, 0, fc_multiplier, fc_shift, fc_weights, fc_bias, 5, -128, 127};
  ops[1].kind = QLSTM_OP_FULLY_CONNECTED_S8;
  ops[1].params = &fc;
  ops[1].input_buffer = 1;
  ops[1].output_buffer = 2;
  qlstm_softmax_s8_params softmax = {0, O, 1518500250, 22, -496};  /* changed below */
  ops[2].kind = QLSTM_OP_SOFTMAX_S8;
  ops[2].params = &softmax;
  ops[2].input_buffer = 2;
  ops[2].output_buffer = 3;
  const int32_t widths[4] = {I, H, O, O};
  const int32_t steps[4] = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_ONE_STEP, QLSTM_BUFFER_ONE_STEP,
                            QLSTM_BUFFER_ONE_STEP};
  const qlstm_program program = {ops, 3, 4, widths, B * H, steps, B, QLSTM_LAYOUT_TIME_MAJOR, NULL};
  int8_t area0[B * H], area1[B * O], probabilities[B * O], logits[B * O], expected[B * O];
  qlstm_program_context pctx = {scratch, sizeof scratch, cell, {area0, area1}, sizeof area0};
  if (qlstm_program_run(&program, &pctx, input, probabilities, T, NULL, NULL) != QLSTM_OK) return fail("program run");
  qlstm_fc_s8_params fc_call = fc;
  fc_call.rows = B;
  qlstm_softmax_s8_params softmax_call = softmax;
  softmax_call.rows = B;
  if (qlstm_fc_s8(&fc_call, final_h, logits) != QLSTM_OK) return fail("fc");
  if (qlstm_softmax_s8(&softmax_call, logits, expected) != QLSTM_OK) return fail("softmax");
  if (memcmp(probabilities, expected, sizeof expected) != 0) return fail("program differs from its ops");
  {
    /* The kind table is C too: the program's three kinds run it the same; without the softmax the
       call is refused naming op 2's kind, and runs no op. */
    const qlstm_op_handler* const kinds[3] = {&qlstm_op_handler_softmax_s8, &qlstm_op_handler_lstm_s8,
                                              &qlstm_op_handler_fully_connected_s8};
    int8_t again[B * O];
    const char* kind_field = NULL;
    int32_t kind_op = -1;
    if (qlstm_program_run_kinds(&program, kinds, 3, &pctx, input, again, T, NULL, NULL) != QLSTM_OK ||
        memcmp(again, probabilities, sizeof again) != 0) {
      return fail("program run with its kinds");
    }
    if (qlstm_program_validate_kinds(&program, kinds + 1, 2, &pctx, T, &kind_field, &kind_op) !=
            QLSTM_ERROR_UNSUPPORTED ||
        kind_op != 2 || strcmp(kind_field, "kind") != 0) {
      return fail("a kind missing from the table accepted or misnamed");
    }
    memset(again, 0x55, sizeof again);
    if (qlstm_program_run_kinds(&program, kinds + 1, 2, &pctx, input, again, T, NULL, NULL) != QLSTM_ERROR_UNSUPPORTED ||
        again[0] != 0x55) {
      return fail("a kind missing from the table run");
    }
  }
  const qlstm_table_s8_params reversed = {B, O, table};
  if (qlstm_table_s8(&reversed, expected, expected) != QLSTM_OK) return fail("table");
  for (int k = 0; k < B * O; ++k) {
    if (expected[k] != (int8_t)(-1 - probabilities[k])) return fail("table lookup");
  }
  const qlstm_select_step_params last_step = {-1, H, 1}; /* the selection's params are C too */
  if (last_step.row_size != H) return fail("select params");

  const char* field = NULL;
  int32_t bad_op = -1;
  softmax.diff_min = 1;
  if (qlstm_program_validate(&program, NULL, T, &field, &bad_op) != QLSTM_ERROR_BAD_DIFF_MIN || bad_op != 2 ||
      strcmp(field, "diff_min") != 0) {
    return fail("bad softmax op accepted or misnamed");
  }
  p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
  p.gates[QLSTM_GATE_OUTPUT].hidden_to_q3_12.shift = 99;
  if (qlstm_lstm_s8_validate(&p, &field) != QLSTM_ERROR_BAD_SHIFT) return fail("bad shift accepted");
  if (field == NULL || strcmp(field, "gates[output].hidden_to_q3_12.shift") != 0) return fail("field name");

  /* The GRU's header is C too: its sizes, and an unset parameter block names its first field. */
  {
    qlstm_gru_s8_params g;
    const qlstm_gru_dims gd = {B, T, I, H};
    memset(&g, 0, sizeof g);
    g.dims = gd;
    if (qlstm_gru_s8_scratch_bytes(&gd) < 4u * B * H * sizeof(int16_t)) return fail("gru scratch bytes");
    if (qlstm_gru_s8_validate(&g, &field) != QLSTM_ERROR_NULL_POINTER) return fail("gru null weights accepted");
    if (field == NULL || strcmp(field, "gates[reset].input_weights") != 0) return fail("gru field name");
  }
  printf("c_api_test: ok (%s)\n", qlstm_status_string(QLSTM_OK));
  return 0;
}
