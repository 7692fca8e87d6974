// The layers around the LSTM stack, in float: what the ONNX importer finds before it (per step:
// a Linear input projection, an activation) and after it (a step selection, Linear heads,
// activations, a softmax), and their reference evaluation in double precision. The compiler
// quantizes each into one runtime op (a ReLU / ReLU6 / Clip after a Linear folds into its clamp).
// Host only.
#ifndef QLSTM_COMPILER_FLOAT_LAYERS_H_
#define QLSTM_COMPILER_FLOAT_LAYERS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace qlstm {
namespace compiler {

// The elementwise functions a layer may apply (ONNX Relu, Clip, LeakyRelu, Sigmoid, Tanh,
// HardSigmoid; the rest as torch exports them: GELU as Gelu or Erf form, SiLU as x * Sigmoid(x),
// HardSwish).
enum class ActivationFn { kRelu, kClip, kLeakyRelu, kSigmoid, kTanh, kHardSigmoid, kGelu, kSilu, kHardSwish };
const char* activation_fn_name(ActivationFn f);

enum class FloatLayerKind {
  kLinear,      // y = W x + b on every position
  kActivation,  // y = f(x) elementwise
  kSoftmax,     // softmax over the last axis (each position's values), with beta
  kLogSoftmax,  // log of the softmax over the last axis (beta 1)
  kSelectStep,  // y[:, step] of a sequence, or y[:, step:step + k] (one position per batch row)
  kPoolTime,    // the mean or the max over every step of a sequence (one position per batch row)
  kFlattenTime, // every step of a sequence side by side, one row per batch row (y.reshape(B, -1))
  kEmbedding,   // a row of a constant table per token id (nn.Embedding): the front's first layer,
                // input_size 1 (the id), output_size the row's width
  kLayerNorm,   // each position's features normalized by their own mean and variance, then
                // times gamma (weight) plus beta (bias) per feature (nn.LayerNorm on the last axis)
};

// The most rows an embedding table may have: every id is exact in float32 (the calibration and run
// tensors carry ids as floats), 2^24.
constexpr int32_t kMaxEmbeddingRows = 1 << 24;

// kPoolTime's reduction: y.mean(dim=1) (ONNX ReduceMean), y.max(dim=1).values (ReduceMax); as a
// part of a concatenation only (FloatLayer::pools), the first or the last step (y[:, 0],
// y[:, -1]); and, alone, attention pooling: (softmax(Linear(y), dim=1) * y).sum(dim=1), the score
// Linear's weights [input_size] in `weight`, its bias (one value, or none) in `bias`.
enum class PoolFn { kMean, kMax, kFirstStep, kLastStep, kAttention };

// A head layer that reads a whole sequence and writes one position per batch row: a step
// selection or a pooling over time (the head's first layer, if any).
bool reads_whole_sequence(FloatLayerKind kind);

struct FloatLayer {
  FloatLayerKind kind = FloatLayerKind::kLinear;
  std::string node;  // the ONNX node it came from (the first, when several made it), for messages
  int32_t input_size = 0, output_size = 0;  // elements per position (equal but for kLinear)
  // kLinear; kEmbedding: the table, [rows][output_size] (embedding_rows()); kLayerNorm: gamma [F]
  std::vector<float> weight;  // [output_size][input_size]
  std::vector<float> bias;    // [output_size], empty: none
  // kActivation
  ActivationFn fn = ActivationFn::kRelu;
  double alpha = 0.0;  // LeakyRelu's slope, HardSigmoid's alpha
  double beta = 0.0;   // HardSigmoid's beta
  double clip_min = 0.0, clip_max = 0.0;  // kClip (-inf / +inf when absent)
  bool gelu_tanh = false;  // kGelu: torch's approximate='tanh' form (else the exact erf form)
  // kSoftmax
  double softmax_beta = 1.0;
  // kLayerNorm: added to the variance under the square root (weight: gamma [F]; bias: beta [F])
  double epsilon = 1e-5;
  // kSelectStep: >= 0 from the first step, < 0 from the last (-1: y[:, -1]); step_count
  // consecutive steps from it (y[:, -k:]: step -k, k steps), output_size = step_count x input_size
  int32_t step = -1;
  int32_t step_count = 1;
  // A per-position layer after a selection of several steps: the rows it runs on per position
  // (each selected step's; 1 once the steps are merged into the features, or without one).
  // input_size and output_size are one row's.
  int32_t groups = 1;
  // kPoolTime: `pool`, or several reductions side by side along the features, in this order
  // (torch.cat((y.mean(1), y.max(1).values), 1): {kMean, kMax}; torch.cat((y[:, -1], y.mean(1)), 1):
  // {kLastStep, kMean}; output_size = their count x input_size); empty: `pool` alone. pool_fns()
  // gives either.
  PoolFn pool = PoolFn::kMean;
  std::vector<PoolFn> pools;
  // kFlattenTime: the steps it takes (the model then runs on sequences of exactly that many);
  // output_size = flatten_steps x input_size
  int32_t flatten_steps = 0;

  // kPoolTime: the reductions it writes side by side (`pools`, or `pool` alone).
  std::vector<PoolFn> pool_fns() const { return pools.empty() ? std::vector<PoolFn>{pool} : pools; }
  // kEmbedding: the table's rows (its vocabulary).
  int32_t embedding_rows() const { return output_size < 1 ? 0 : static_cast<int32_t>(weight.size() / static_cast<size_t>(output_size)); }

  // Throws CompileError naming the node for inconsistent sizes or non-finite values.
  void validate() const;
};

// f(x) in double.
double apply_activation(const FloatLayer& layer, double x);

// A kPoolTime layer on one sequence x of T steps ([T][input_size]): the mean or the max of each
// feature over the steps (T >= 1), each of its reductions in turn, side by side.
std::vector<double> pool_over_time(const FloatLayer& layer, const std::vector<double>& x, int32_t T);

// Applies one per-position layer (not kSelectStep or kPoolTime) to `positions` rows of input_size values.
std::vector<double> run_float_layer(const FloatLayer& layer, const std::vector<double>& x, size_t positions);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FLOAT_LAYERS_H_
