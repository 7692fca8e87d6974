// A calibration or test tensor of standard-normal values in an imported model's layout, from a
// fixed seed (the whole-model compile tests); token ids uniform over the table's rows for a model
// whose embedding reads them.
#ifndef QLSTM_TESTS_NORMAL_TENSOR_H_
#define QLSTM_TESTS_NORMAL_TENSOR_H_

#include <random>

#include "qlstm/compiler/compile.h"

namespace qlstm {
namespace compiler {

inline CalibrationTensor normal_tensor(const OnnxLstm& onnx, int32_t batch, int32_t T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  CalibrationTensor t;
  t.shape = {batch, T, onnx.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
  t.values.resize(static_cast<size_t>(batch) * T * onnx.program.input_size());
  const auto& front = onnx.program.front;
  if (!front.empty() && front.front().kind == FloatLayerKind::kEmbedding) {
    std::uniform_int_distribution<int32_t> id(0, front.front().embedding_rows() - 1);
    for (float& v : t.values) v = static_cast<float>(id(rng));
    return t;
  }
  for (float& v : t.values) v = n(rng);
  return t;
}

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_TESTS_NORMAL_TENSOR_H_
