/* The public header compiles as C11 and the kernel runs from C: a tiny LSTM, stateless vs
 * reset + stateful, and an argument error. Exit status 0 on success. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qlstm/lstm_s8.h"

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

  const char* field = NULL;
  p.gates[QLSTM_GATE_OUTPUT].hidden_to_q3_12.shift = 99;
  if (qlstm_lstm_s8_validate(&p, &field) != QLSTM_ERROR_BAD_SHIFT) return fail("bad shift accepted");
  if (field == NULL || strcmp(field, "gates[output].hidden_to_q3_12.shift") != 0) return fail("field name");
  printf("c_api_test: ok (%s)\n", qlstm_status_string(QLSTM_OK));
  return 0;
}
