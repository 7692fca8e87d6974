// Runs an emitted model (NAME_model.h/.cc, compiled with the runtime alone) on raw int8 input:
//   emitted_driver IN.bin OUT.bin TIME_STEPS
// QLSTM_MODEL_HEADER and QLSTM_MODEL_RUN name the header and the NAME_run function.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include QLSTM_MODEL_HEADER

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in) return 2;
  std::vector<int8_t> x;
  int c;
  while ((c = std::fgetc(in)) != EOF) x.push_back(static_cast<int8_t>(c));
  std::fclose(in);
  const int32_t T = std::atoi(argv[3]);
  std::vector<int8_t> y(static_cast<size_t>(T) * QLSTM_MODEL_BATCH * QLSTM_MODEL_HIDDEN);
  if (QLSTM_MODEL_RUN(x.data(), y.data(), T) != QLSTM_OK) return 3;
  std::FILE* out = std::fopen(argv[2], "wb");
  std::fwrite(y.data(), 1, y.size(), out);
  std::fclose(out);
  return 0;
}
