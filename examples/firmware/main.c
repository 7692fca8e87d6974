/* Runs a compiled model's emitted source on the device:
 *   model_firmware IN.bin OUT.bin [CHUNK]
 * IN.bin: int8 input, BATCH x T x INPUT_SIZE in the model's layout (T follows from the size);
 * OUT.bin: int8 output, BATCH x T x HIDDEN_SIZE. Files come and go through semihosting.
 * With CHUNK, the sequence is streamed through NAME_stream, CHUNK steps per call (a time-major
 * model, or batch 1, where a chunk of steps is contiguous), as a keyword spotter would. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include QLSTM_MODEL_HEADER

#define MAX_INPUT_BYTES (256u * 1024u)
#define MAX_OUTPUT_BYTES (1024u * 1024u)

static int8_t g_input[MAX_INPUT_BYTES];
static int8_t g_output[MAX_OUTPUT_BYTES];

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    printf("usage: model_firmware IN.bin OUT.bin [CHUNK]\n");
    return 2;
  }
  FILE* in = fopen(argv[1], "rb");
  if (!in) {
    printf("model_firmware: cannot open %s\n", argv[1]);
    return 2;
  }
  const size_t n = fread(g_input, 1, sizeof g_input, in);
  const int more = fgetc(in) != EOF;
  fclose(in);
  const size_t row = (size_t)QLSTM_MODEL_BATCH * QLSTM_MODEL_INPUT_SIZE;
  const size_t time_steps = n / row;
  const size_t out_bytes = time_steps * QLSTM_MODEL_BATCH * QLSTM_MODEL_HIDDEN_SIZE;
  if (more || n % row != 0 || out_bytes > sizeof g_output) {
    printf("model_firmware: %s: %lu bytes is not BATCH x T x INPUT_SIZE within this firmware's buffers\n", argv[1],
           (unsigned long)n);
    return 2;
  }
  qlstm_status st = QLSTM_OK;
  if (argc == 3) {
    st = QLSTM_MODEL_RUN(g_input, g_output, (int32_t)time_steps);
  } else {
    const long chunk = strtol(argv[3], NULL, 10);
    if (chunk < 1 || !(QLSTM_MODEL_TIME_MAJOR || QLSTM_MODEL_BATCH == 1)) {
      printf("model_firmware: CHUNK must be >= 1, for a time-major model or batch 1\n");
      return 2;
    }
    const size_t out_row = (size_t)QLSTM_MODEL_BATCH * QLSTM_MODEL_HIDDEN_SIZE;
    st = QLSTM_MODEL_RESET();
    for (size_t t0 = 0; st == QLSTM_OK && t0 < time_steps; t0 += (size_t)chunk) {
      const size_t steps = time_steps - t0 < (size_t)chunk ? time_steps - t0 : (size_t)chunk;
      st = QLSTM_MODEL_STREAM(g_input + t0 * row, g_output + t0 * out_row, (int32_t)steps);
    }
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
