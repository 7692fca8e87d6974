/* Runs a compiled model's emitted source on the device:
 *   model_firmware IN.bin OUT.bin [CHUNK [STATE_IN.bin STATE_OUT.bin]]
 * IN.bin: the input, BATCH x T x INPUT_SIZE in the model's layout (T follows from the size), of its
 * element type: int8, or int32 little-endian token ids for a model that starts with an embedding;
 * OUT.bin: int8 output, BATCH x T x OUTPUT_SIZE, or BATCH x OUTPUT_SIZE for a model whose output is
 * one row per batch row (a last-step head; NAME_OUTPUT_PER_STEP 0). Files come and go through
 * semihosting.
 * CHUNK > 0 streams the sequence, CHUNK steps per call (a time-major model, or batch 1, where a
 * chunk of steps is contiguous), as a keyword spotter would: through NAME_stream, or with a
 * state through NAME_run_state on the same state buffers. CHUNK 0 is one call. Streamed, a
 * last-step head's output is the last chunk's: the head on the sequence's last step.
 * STATE_IN.bin / STATE_OUT.bin (a model with NAME_run_state): the initial and the final state,
 * hidden int8 [OPS][BATCH][H] then cell int16 (little-endian) [OPS][BATCH][H].
 * The one call (CHUNK 0, no state files) runs between qlstm_bench_begin() and qlstm_bench_end(),
 * the markers of the instruction counter tools/qemu_icount (bench/emitted_firmware.py). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include QLSTM_MODEL_HEADER

#define MAX_INPUT_BYTES (256u * 1024u)
#define MAX_OUTPUT_BYTES (1024u * 1024u)

/* Word-aligned: the input may be int32 token ids. */
static int32_t g_input_words[MAX_INPUT_BYTES / sizeof(int32_t)];
static int8_t* const g_input = (int8_t*)g_input_words;
static int8_t g_output[MAX_OUTPUT_BYTES];

#if QLSTM_MODEL_HAS_STATE_IO
#define STATE_VALUES ((size_t)QLSTM_MODEL_BATCH * QLSTM_MODEL_STATE_SIZE)
static int8_t g_hidden[STATE_VALUES];
static int16_t g_cell[STATE_VALUES];

static int state_file(const char* path, int write) {
  FILE* f = fopen(path, write ? "wb" : "rb");
  if (!f) return 0;
  int ok = write ? fwrite(g_hidden, 1, sizeof g_hidden, f) == sizeof g_hidden &&
                       fwrite(g_cell, 1, sizeof g_cell, f) == sizeof g_cell
                 : fread(g_hidden, 1, sizeof g_hidden, f) == sizeof g_hidden &&
                       fread(g_cell, 1, sizeof g_cell, f) == sizeof g_cell;
  if (fclose(f) != 0) ok = 0;
  return ok;
}
#endif

/* The instruction counter's markers: empty, never inlined, weak so that a firmware with its own
 * pair (targets/cortex-m/firmware/qlstm_device.cc) still links. */
__attribute__((weak, noinline, used)) void qlstm_bench_begin(void) { __asm volatile("" ::: "memory"); }
__attribute__((weak, noinline, used)) void qlstm_bench_end(void) { __asm volatile("" ::: "memory"); }

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4 && argc != 6) {
    printf("usage: model_firmware IN.bin OUT.bin [CHUNK [STATE_IN.bin STATE_OUT.bin]]\n");
    return 2;
  }
  FILE* in = fopen(argv[1], "rb");
  if (!in) {
    printf("model_firmware: cannot open %s\n", argv[1]);
    return 2;
  }
  const size_t n = fread(g_input, 1, MAX_INPUT_BYTES, in);
  const int more = fgetc(in) != EOF;
  fclose(in);
  const size_t row = QLSTM_MODEL_INPUT_BYTES(1); /* bytes of one step of every batch row */
  const size_t out_row = (size_t)QLSTM_MODEL_BATCH * QLSTM_MODEL_OUTPUT_SIZE;
  const size_t time_steps = n / row;
  /* Where the output of the steps from t0 goes: every chunk's after the last, or one row per batch
   * row that each chunk overwrites. */
  const size_t out_step = QLSTM_MODEL_OUTPUT_PER_STEP ? out_row : 0;
  const size_t out_bytes = QLSTM_MODEL_OUTPUT_PER_STEP ? time_steps * out_row : out_row;
  if (more || n % row != 0 || out_bytes > sizeof g_output) {
    printf("model_firmware: %s: %lu bytes is not BATCH x T x INPUT_SIZE within this firmware's buffers\n", argv[1],
           (unsigned long)n);
    return 2;
  }
  const long chunk = argc >= 4 ? strtol(argv[3], NULL, 10) : 0;
  if (chunk < 0 || (chunk > 0 && !(QLSTM_MODEL_TIME_MAJOR || QLSTM_MODEL_BATCH == 1))) {
    printf("model_firmware: CHUNK must be >= 0, and streaming needs a time-major model or batch 1\n");
    return 2;
  }
  const size_t step = chunk > 0 ? (size_t)chunk : (time_steps > 0 ? time_steps : 1);
  (void)step;  /* unused by a model that neither streams nor takes a state */
  (void)out_step;
  qlstm_status st = QLSTM_OK;
  if (argc == 6) {
#if QLSTM_MODEL_HAS_STATE_IO
    if (chunk > 0 && !QLSTM_MODEL_CAN_STREAM) {
      printf("model_firmware: this model walks time backwards: it takes the whole sequence (CHUNK 0)\n");
      return 2;
    }
    if (!state_file(argv[4], 0)) {
      printf("model_firmware: cannot read %lu state bytes from %s\n", (unsigned long)(3 * STATE_VALUES), argv[4]);
      return 2;
    }
    for (size_t t0 = 0; st == QLSTM_OK && t0 < time_steps; t0 += step) {
      const size_t steps = time_steps - t0 < step ? time_steps - t0 : step;
      st = QLSTM_MODEL_RUN_STATE((const void*)(g_input + t0 * row), g_output + t0 * out_step, (int32_t)steps, g_hidden, g_cell);
    }
    if (st == QLSTM_OK && !state_file(argv[5], 1)) {
      printf("model_firmware: cannot write %s\n", argv[5]);
      return 2;
    }
#else
    printf("model_firmware: this model has no state input or output\n");
    return 2;
#endif
  } else if (chunk == 0) {
    qlstm_bench_begin();
    st = QLSTM_MODEL_RUN((const void*)g_input, g_output, (int32_t)time_steps);
    qlstm_bench_end();
  } else {
#if QLSTM_MODEL_CAN_STREAM
    st = QLSTM_MODEL_RESET();
    for (size_t t0 = 0; st == QLSTM_OK && t0 < time_steps; t0 += step) {
      const size_t steps = time_steps - t0 < step ? time_steps - t0 : step;
      st = QLSTM_MODEL_STREAM((const void*)(g_input + t0 * row), g_output + t0 * out_step, (int32_t)steps);
    }
#else
    printf("model_firmware: this model cannot be streamed (it walks time backwards)\n");
    return 2;
#endif
  }
  if (st != QLSTM_OK) {
    printf("model_firmware: %s\n", qlstm_status_string(st));
    return 3;
  }
  FILE* out = fopen(argv[2], "wb");
  if (!out || fwrite(g_output, 1, out_bytes, out) != out_bytes || fclose(out) != 0) {
    printf("model_firmware: cannot write %s\n", argv[2]);
    return 2;
  }
  printf("%lu time steps\n", (unsigned long)time_steps);
  return 0;
}
