// Runs an emitted model (NAME_model.h/.cc, compiled with the runtime alone) on raw int8 input:
//   emitted_driver IN.bin OUT.bin TIME_STEPS [CHUNK]
// QLSTM_MODEL_HEADER and QLSTM_MODEL_RUN name the header and the NAME_run function, QLSTM_MODEL_OUTPUT
// the output elements per position, QLSTM_MODEL_OUTPUT_PER_STEP whether there is an output position
// per step (else one per batch row); with CHUNK, QLSTM_MODEL_STREAM (NAME_stream, when
// QLSTM_MODEL_CAN_STREAM) runs the sequence in chunks of CHUNK steps (the last shorter): OUT.bin
// is then the per-step output of every chunk, or the last chunk's output for a last-step head.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include QLSTM_MODEL_HEADER

#ifndef QLSTM_MODEL_OUTPUT_PER_STEP
#define QLSTM_MODEL_OUTPUT_PER_STEP 1
#endif

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) return 2;
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in) return 2;
  std::vector<int8_t> x;
  int c;
  while ((c = std::fgetc(in)) != EOF) x.push_back(static_cast<int8_t>(c));
  std::fclose(in);
  const int32_t T = std::atoi(argv[3]);
  const size_t out_positions = static_cast<size_t>(QLSTM_MODEL_OUTPUT_PER_STEP ? T : 1) * QLSTM_MODEL_BATCH;
  std::vector<int8_t> y(out_positions * QLSTM_MODEL_OUTPUT);
  if (argc == 4) {
    if (QLSTM_MODEL_RUN(x.data(), y.data(), T) != QLSTM_OK) return 3;
  } else {
#if QLSTM_MODEL_CAN_STREAM
    // Gather each chunk's steps into a [B][n][F] or [n][B][F] buffer and scatter its output back.
    const int32_t chunk = std::atoi(argv[4]), B = QLSTM_MODEL_BATCH, H = QLSTM_MODEL_OUTPUT;
    if (chunk < 1 || T < 1) return 2;
    const size_t I = x.size() / (static_cast<size_t>(T) * B);
    auto at = [&](int32_t b, int32_t t, int32_t steps) {
      return QLSTM_MODEL_TIME_MAJOR ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * steps + t;
    };
    for (int32_t t0 = 0; t0 < T; t0 += chunk) {
      const int32_t n = T - t0 < chunk ? T - t0 : chunk;
      std::vector<int8_t> xc(static_cast<size_t>(n) * B * I),
          yc(static_cast<size_t>(QLSTM_MODEL_OUTPUT_PER_STEP ? n : 1) * B * H);
      for (int32_t b = 0; b < B; ++b) {
        for (int32_t t = 0; t < n; ++t) {
          std::copy_n(x.begin() + static_cast<ptrdiff_t>(at(b, t0 + t, T) * I), I,
                      xc.begin() + static_cast<ptrdiff_t>(at(b, t, n) * I));
        }
      }
      if (QLSTM_MODEL_STREAM(xc.data(), yc.data(), n) != QLSTM_OK) return 3;
      if (!QLSTM_MODEL_OUTPUT_PER_STEP) {  // the head's output for the chunk's last step
        y = yc;
        continue;
      }
      for (int32_t b = 0; b < B; ++b) {
        for (int32_t t = 0; t < n; ++t) {
          std::copy_n(yc.begin() + static_cast<ptrdiff_t>(at(b, t, n) * H), H,
                      y.begin() + static_cast<ptrdiff_t>(at(b, t0 + t, T) * H));
        }
      }
    }
#else
    return 2;  // the model cannot be streamed
#endif
  }
  std::FILE* out = std::fopen(argv[2], "wb");
  std::fwrite(y.data(), 1, y.size(), out);
  std::fclose(out);
  return 0;
}
