// The integer parameters of the ops around the LSTM (fully connected, softmax, table, step
// selection, elementwise add and multiply), derived from their float layers and the quantization
// of the buffers they read and write (docs/compiler.md). Each owns its arrays and hands the runtime
// a parameter block pointing into it, and has the inverse for the model file. Host only.
#ifndef QLSTM_COMPILER_DERIVE_OPS_H_
#define QLSTM_COMPILER_DERIVE_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_layers.h"
#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

struct DerivedFc {
  static constexpr int32_t kKind = QLSTM_OP_FULLY_CONNECTED_S8;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, output_size = 0;
  AffineQuant input, output;
  bool per_channel = true;             // one multiplier per output (the default) or one for all
  std::vector<double> weight_scales;   // [O] (per_channel) or [1]: symmetric int8
  std::vector<int8_t> weights;         // [O][I]
  std::vector<int32_t> bias_q;         // [O]: the float bias at s_in * s_w
  std::vector<int32_t> effective_bias; // [O]: bias_q - zp_in * rowsum(weights)
  std::vector<int32_t> multipliers, shifts;  // [O] or [1]
  int32_t activation_min = -128, activation_max = 127;
  std::string fused_activation;        // "", "relu", "relu6", "clip": folded into the clamp

  qlstm_fc_s8_params kernel_params(int32_t rows) const;
  static DerivedFc from_kernel_params(const qlstm_fc_s8_params& p, const AffineQuant& input, const AffineQuant& output,
                                      const std::vector<double>& weight_scales);
};
// Whether an activation layer folds into the clamp of the Linear before it (Relu; Clip, which
// is also ReLU6), and the real range it keeps (+-inf where it does not clip).
bool folds_into_clamp(const FloatLayer& layer);
Range clamp_range(const FloatLayer& layer);
// How a report names a folded Relu or Clip: "relu", "relu6" (Clip to [0, 6]) or "clip".
std::string fused_activation_name(const FloatLayer& clamp);
// The int8 FC of `linear` between two quantizations: weights symmetric per output (or one scale),
// bias at s_in * s_w, multipliers s_in * s_w / s_out; `clamp` (a folding activation after it, or
// null) becomes activation_min / max. Throws CompileError naming the layer's node for a bias
// overflowing int32, an accumulator that could wrap, or a multiplier out of range.
DerivedFc derive_fc(const FloatLayer& linear, const FloatLayer* clamp, const AffineQuant& input,
                    const AffineQuant& output, bool per_channel = true);

struct DerivedSoftmax {
  static constexpr int32_t kKind = QLSTM_OP_SOFTMAX_S8;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  AffineQuant input;           // the output is 1/256, -128 (QLSTM_SOFTMAX_S8_*)
  double beta = 1.0;
  int32_t input_multiplier = 0, input_left_shift = 0, diff_min = 0;

  qlstm_softmax_s8_params kernel_params(int32_t rows) const;
  static DerivedSoftmax from_kernel_params(const qlstm_softmax_s8_params& p, const AffineQuant& input);
};
// TFLite Micro's int8 softmax preparation (5 integer bits for the scaled difference): multiplier,
// left shift and diff_min from beta and the input scale.
DerivedSoftmax derive_softmax(int32_t row_size, const AffineQuant& input, double beta);
AffineQuant softmax_output_quant();  // scale 1/256, zero point -128

struct DerivedLogSoftmax {
  static constexpr int32_t kKind = QLSTM_OP_LOG_SOFTMAX_S8;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  AffineQuant input;  // the output is 16/256, 127 (QLSTM_LOG_SOFTMAX_S8_*)
  int32_t input_multiplier = 0, input_left_shift = 0, reverse_multiplier = 0, reverse_shift = 0, diff_min = 0;

  qlstm_log_softmax_s8_params kernel_params(int32_t rows) const;
  static DerivedLogSoftmax from_kernel_params(const qlstm_log_softmax_s8_params& p, const AffineQuant& input);
};
// TFLite's int8 LOG_SOFTMAX preparation (PreprocessLogSoftmaxScalingExp, beta 1): the softmax's
// multiplier, left shift and diff_min, and the inverse scaling as a multiplier and right shift.
DerivedLogSoftmax derive_log_softmax(int32_t row_size, const AffineQuant& input);
AffineQuant log_softmax_output_quant();  // scale 16/256, zero point 127

// The attention pooling op (qlstm_attention_pool_s8, docs/arithmetic.md §22): the scores' softmax
// over time (the int8 softmax's scaling of the scores' scale, beta 1), the weighted sum at the
// sequence's quantization.
struct DerivedAttentionPool {
  static constexpr int32_t kKind = QLSTM_OP_ATTENTION_POOL_S8;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  AffineQuant scores, sequence;  // the output is at the sequence's quantization
  int32_t input_multiplier = 0, input_left_shift = 0, diff_min = 0;

  qlstm_attention_pool_s8_params kernel_params(int32_t batch, int32_t time_steps, int32_t layout) const;
  static DerivedAttentionPool from_kernel_params(const qlstm_attention_pool_s8_params& p, const AffineQuant& scores,
                                                 const AffineQuant& sequence);
};
DerivedAttentionPool derive_attention_pool(int32_t row_size, const AffineQuant& scores, const AffineQuant& sequence);
// The attention's score Linear (W -> 1) as a layer of its own: the first op of the pooling.
FloatLayer attention_score_layer(const FloatLayer& attention);

// The layer normalization op (qlstm_layer_norm_s8, docs/arithmetic.md §21).
struct DerivedLayerNorm {
  static constexpr int32_t kKind = QLSTM_OP_LAYER_NORM_S8;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  AffineQuant input, output;
  int32_t epsilon_term = 0, epsilon_shift = 0, output_shift = 0;
  std::vector<int32_t> weights, biases;  // [row_size]: gamma and beta in the output's steps

  // The epsilon the block stands for: epsilon_term x 2^epsilon_shift x input_scale^2 / F^2.
  double epsilon() const;
  qlstm_layer_norm_s8_params kernel_params(int32_t rows) const;
  static DerivedLayerNorm from_kernel_params(const qlstm_layer_norm_s8_params& p, const AffineQuant& input,
                                             const AffineQuant& output);
};
// epsilon in the input's steps times F^2 as a 31-bit term and a shift; gamma x 2^(S - 12) and
// beta x 2^S in the output's steps, S the largest shift (at most 62) at which both fit int32.
// Throws CompileError when epsilon is too large for the input scale or gamma or beta too large
// for the output's.
DerivedLayerNorm derive_layer_norm(const FloatLayer& layer_norm, const AffineQuant& input, const AffineQuant& output);

// The embedding op (qlstm_embedding_s8): the table quantized at its output's quantization, the
// int8 affine map of the whole table's range (with 0), so that every row, seen in calibration or
// not, is rounded once and never clipped.
struct DerivedEmbedding {
  static constexpr int32_t kKind = QLSTM_OP_EMBEDDING_S8;  // its op kind (ProgramOp::set)
  int32_t table_rows = 0, row_size = 0;
  AffineQuant output;
  std::vector<int8_t> table;  // [table_rows][row_size]

  qlstm_embedding_s8_params kernel_params(int32_t rows) const;
  static DerivedEmbedding from_kernel_params(const qlstm_embedding_s8_params& p, const AffineQuant& output);
};
DerivedEmbedding derive_embedding(const FloatLayer& embedding);
// The quantization of a program input of token ids (an int32 buffer): the ids as they are.
AffineQuant token_id_quant();

struct DerivedTable {
  static constexpr int32_t kKind = QLSTM_OP_TABLE_S8;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  AffineQuant input, output;
  std::string function;       // activation_fn_name, for the report
  std::vector<int8_t> table;  // [256]: table[x + 128] = quantize_out(f(dequantize_in(x)))

  qlstm_table_s8_params kernel_params(int32_t rows) const;
  static DerivedTable from_kernel_params(const qlstm_table_s8_params& p, const AffineQuant& input,
                                         const AffineQuant& output);
};
// Each entry exact: f in double at each of the 256 input values, rounded once to the output.
DerivedTable derive_table(const FloatLayer& activation, int32_t row_size, const AffineQuant& input,
                          const AffineQuant& output);

// A pooling op (qlstm_pool_s8): its block, and the one quantization of its input and output
// (pooling keeps it: the max and the mean of raw int8 values are at the same scale and zero point).
struct DerivedPool {
  static constexpr int32_t kKind = QLSTM_OP_POOL_S8;
  qlstm_pool_s8_params block{};  // input_height 0: a sequence over time (the runner sets the geometry)
  AffineQuant quant;
  bool over_time() const { return block.input_height == 0; }
  // Elements per position of its input and output buffers.
  int32_t input_width() const;
  int32_t output_width() const;
  const char* name() const { return block.kind == QLSTM_POOL_MAX ? "max" : "mean"; }
};
// The mean or max over every time step of a sequence of `pool.input_size` values per step, at the
// sequence's quantization (FloatLayerKind::kPoolTime): its reduction number `part` (pool_fns()),
// one op of a concatenation of several.
DerivedPool derive_pool_time(const FloatLayer& pool, const AffineQuant& quant, size_t part = 0);

// An elementwise add or multiply of two int8 values per element (qlstm_add_s8, qlstm_mul_s8):
// its block and the three quantizations it was derived for. The add of y1 + y2 (a residual
// connection), the multiply of w * y (attention's weighting).
struct DerivedAdd {
  static constexpr int32_t kKind = QLSTM_OP_ADD_S8;
  qlstm_add_s8_params block{};  // shape.rows 0 (the runner's)
  AffineQuant input1, input2, output;
  qlstm_add_s8_params kernel_params(int32_t rows) const;
};
struct DerivedMul {
  static constexpr int32_t kKind = QLSTM_OP_MUL_S8;
  qlstm_mul_s8_params block{};  // shape.rows 0 (the runner's)
  AffineQuant input1, input2, output;
  qlstm_mul_s8_params kernel_params(int32_t rows) const;
};
// TFLite's int8 ADD and MUL preparation (docs/arithmetic.md §19) over rows of row_size: the add's
// left shift 20, both operands at twice the larger scale, the sum's multiplier; the multiply's
// s1 s2 / s_out. `what` names the layer in messages; throws CompileError for a quantization or a
// multiplier out of range.
DerivedAdd derive_add(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2, const AffineQuant& output,
                      const std::string& what);
DerivedMul derive_mul(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2, const AffineQuant& output,
                      const std::string& what);

struct DerivedSelect {
  static constexpr int32_t kKind = QLSTM_OP_SELECT_STEP;  // its op kind (ProgramOp::set)
  int32_t row_size = 0;
  int32_t step = -1;
  int32_t step_count = 1;  // consecutive steps from `step` (y[:, -k:]: step -k, k steps)
  qlstm_select_step_params kernel_params() const { return {step, row_size, step_count}; }
};

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_OPS_H_
