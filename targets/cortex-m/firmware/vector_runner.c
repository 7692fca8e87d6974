/* Runs a kernel-vector bundle (written by `qlstm export-vectors`) on the device:
 *   vector_runner BUNDLE
 *   vector_runner --fault     (writes to an unmapped address: proves a fault fails the run)
 * prints a FAIL line per failing case and last "N passed, N failed"; exit 0 only if all pass. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qlstm/lstm_s8.h"

#define MAX_RECORD_BYTES (512u * 1024u)
#define MAX_BH 8192u
#define MAX_BTH (64u * 1024u)

static uint32_t g_record[MAX_RECORD_BYTES / 4];
static _Alignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char g_scratch[3u * MAX_BH * 2u];
static int16_t g_cell[MAX_BH];
static int8_t g_hidden[MAX_BH];
static int8_t g_output[MAX_BTH];

typedef struct {
  const uint8_t* p;
  const uint8_t* end;
  int ok;
} Cursor;

static int32_t next_i32(Cursor* c) {
  int32_t v = 0;
  if (c->p + 4 > c->end) {
    c->ok = 0;
    return 0;
  }
  memcpy(&v, c->p, 4);
  c->p += 4;
  return v;
}

/* n elements of `size` bytes, padded to 4. */
static const void* next_array(Cursor* c, int32_t n, int32_t size) {
  const uint32_t bytes = (uint32_t)n * (uint32_t)size;
  const uint32_t padded = (bytes + 3u) & ~3u;
  if (n < 0 || c->p + padded > c->end) {
    c->ok = 0;
    return NULL;
  }
  const void* a = c->p;
  c->p += padded;
  return a;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    printf("usage: vector_runner BUNDLE | --fault\n");
    return 2;
  }
  if (strcmp(argv[1], "--fault") == 0) {
    *(volatile uint32_t*)0xFFFFFFF0u = 1u; /* bus fault -> HardFault -> exit non-zero */
    printf("no fault taken\n");
    return 0;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    printf("vector_runner: cannot open %s\n", argv[1]);
    return 2;
  }
  uint32_t header[3];
  if (fread(header, 4, 3, f) != 3 || memcmp(header, "QLVB", 4) != 0 || header[1] != 1u) {
    printf("vector_runner: %s is not a version-1 vector bundle\n", argv[1]);
    return 2;
  }
  long passed = 0, failed = 0;
  for (uint32_t k = 0; k < header[2]; ++k) {
    uint32_t bytes = 0;
    if (fread(&bytes, 4, 1, f) != 1 || bytes > MAX_RECORD_BYTES || bytes % 4 != 0 ||
        fread(g_record, 1, bytes, f) != bytes) {
      printf("vector_runner: case %lu: truncated or oversized record\n", (unsigned long)k);
      return 2;
    }
    Cursor c = {(const uint8_t*)g_record, (const uint8_t*)g_record + bytes, 1};
    const int32_t name_len = next_i32(&c);
    const char* name = (const char*)next_array(&c, name_len, 1);
    qlstm_lstm_s8_params p;
    memset(&p, 0, sizeof p);
    p.layout = next_i32(&c) ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
    p.dims.batch = next_i32(&c);
    p.dims.time_steps = next_i32(&c);
    p.dims.input_size = next_i32(&c);
    p.dims.hidden_size = next_i32(&c);
    p.cell_scale_power = next_i32(&c);
    p.cell_clip = next_i32(&c);
    p.output_zero_point = next_i32(&c);
    const int32_t stateful = next_i32(&c);
    p.forget_times_cell_to_cell.multiplier = next_i32(&c);
    p.forget_times_cell_to_cell.shift = next_i32(&c);
    p.input_times_cell_gate_to_cell.multiplier = next_i32(&c);
    p.input_times_cell_gate_to_cell.shift = next_i32(&c);
    p.output_times_tanh_cell_to_hidden.multiplier = next_i32(&c);
    p.output_times_tanh_cell_to_hidden.shift = next_i32(&c);
    const int32_t B = p.dims.batch, T = p.dims.time_steps, I = p.dims.input_size, H = p.dims.hidden_size;
    for (int g = 0; g < QLSTM_GATE_COUNT && c.ok; ++g) {
      qlstm_gate_s8_params* gp = &p.gates[g];
      gp->activation = next_i32(&c);
      gp->input_to_q3_12.multiplier = next_i32(&c);
      gp->input_to_q3_12.shift = next_i32(&c);
      gp->hidden_to_q3_12.multiplier = next_i32(&c);
      gp->hidden_to_q3_12.shift = next_i32(&c);
      gp->input_weights = (const int8_t*)next_array(&c, H * I, 1);
      gp->input_effective_bias = (const int32_t*)next_array(&c, H, 4);
      gp->hidden_weights = (const int8_t*)next_array(&c, H * H, 1);
      gp->hidden_effective_bias = (const int32_t*)next_array(&c, H, 4);
    }
    const int8_t* input = (const int8_t*)next_array(&c, B * T * I, 1);
    const int8_t* h0 = stateful ? (const int8_t*)next_array(&c, B * H, 1) : NULL;
    const int16_t* c0 = stateful ? (const int16_t*)next_array(&c, B * H, 2) : NULL;
    const int8_t* expected = (const int8_t*)next_array(&c, B * T * H, 1);
    const int8_t* final_h = stateful ? (const int8_t*)next_array(&c, B * H, 1) : NULL;
    const int16_t* final_c = stateful ? (const int16_t*)next_array(&c, B * H, 2) : NULL;
    if (!c.ok || (uint32_t)(B * H) > MAX_BH || (uint32_t)(B * T * H) > MAX_BTH) {
      printf("vector_runner: case %lu: malformed or too large for this firmware\n", (unsigned long)k);
      return 2;
    }
    if (stateful) {
      memcpy(g_hidden, h0, (size_t)(B * H));
      memcpy(g_cell, c0, (size_t)(B * H) * 2u);
    }
    qlstm_lstm_s8_context ctx = {g_scratch, sizeof g_scratch, g_cell, stateful ? g_hidden : NULL};
    const qlstm_status st = qlstm_lstm_s8(&p, &ctx, input, g_output);
    const char* what = NULL;
    int32_t index = -1, want = 0, got = 0;
    if (st != QLSTM_OK) {
      what = qlstm_status_string(st);
    }
    for (int32_t i = 0; !what && i < B * T * H; ++i) {
      if (g_output[i] != expected[i]) { what = "output"; index = i; want = expected[i]; got = g_output[i]; }
    }
    for (int32_t i = 0; !what && stateful && i < B * H; ++i) {
      if (g_hidden[i] != final_h[i]) { what = "final_hidden"; index = i; want = final_h[i]; got = g_hidden[i]; }
      else if (g_cell[i] != final_c[i]) { what = "final_cell"; index = i; want = final_c[i]; got = g_cell[i]; }
    }
    if (what) {
      ++failed;
      printf("FAIL %.*s: %s[%ld]: expected %ld, got %ld\n", (int)name_len, name, what, (long)index,
             (long)want, (long)got);
    } else {
      ++passed;
    }
  }
  fclose(f);
  printf("%ld passed, %ld failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
