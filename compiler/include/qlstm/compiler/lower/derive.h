// From float weights and boundary scales to the kernel's integer parameters
// (docs/compiler.md). Host only.
#ifndef QLSTM_COMPILER_DERIVE_H_
#define QLSTM_COMPILER_DERIVE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

// How each gate block's symmetric int8 weight scale is chosen.
enum class WeightScaleMethod {
  kMaxAbs,    // s = max|W| / 127 (upstream)
  kMseClip,   // s = c / 127 with the clip c <= max|W| that minimizes sum (W - deq(q(W)))^2
};
const char* weight_method_name(WeightScaleMethod m);
WeightScaleMethod parse_weight_method(const std::string& text);  // "maxabs" | "mse"

// How each weight is rounded to int8 at its block's scale.
enum class WeightRounding {
  kNearest,   // q = round(w / s)
  kAdaptive,  // floor or ceil of w / s, per gate row, minimizing the pre-activation error on the
              // calibration operands (weight_rounding.h)
};
const char* weight_rounding_name(WeightRounding r);
WeightRounding parse_weight_rounding(const std::string& text);  // "nearest" | "adaptive"

// The cell-state scale 2^P.
enum class CellScalePolicy {
  kCalibrated,     // observed max |c| times headroom fits in int16
  kSequenceBound,  // upstream's rule: |c_t| <= t from a zero state, for a given T
  kFixed,          // P given
};
struct CellScaleRequest {
  CellScalePolicy policy = CellScalePolicy::kCalibrated;
  double headroom = 1.25;      // kCalibrated: the range covers headroom * observed max |c|
  int32_t sequence_length = 0;  // kSequenceBound
  int32_t fixed_power = 0;      // kFixed
};
const char* cell_policy_name(CellScalePolicy p);
// Parses "calibrated[:HEADROOM]", "sequence-bound:T", "fixed:P".
CellScaleRequest parse_cell_policy(const std::string& text);

// Smallest P accepted for the cell: P >= -15 keeps RQ(i * g) inside int16 (docs/arithmetic.md §8).
constexpr int32_t kCellScalePowerMin = -15;
// Largest P the compiler emits: tanh's pre-scale P + 12 stays a left shift the kernel accepts.
constexpr int32_t kCellScalePowerMax = QLSTM_CELL_SCALE_POWER_MAX;

struct CellScaleChoice {
  CellScalePolicy policy = CellScalePolicy::kCalibrated;
  int32_t power = 0;               // the resulting P
  double observed_max_abs = 0.0;   // from calibration (kCalibrated and for the report)
  double headroom = 0.0;
  int32_t sequence_length = 0;
  bool clamped_to_min = false;     // the calibrated P was below -15 and was raised to -15
};
// Resolves a request to P. Errors (CompileError) for a fixed P outside [-15, 2], a sequence
// length < 1, or a cell range beyond 32767 * 2^2; a calibrated P below -15 is raised to -15
// (finer is not representable) and the choice says so.
CellScaleChoice choose_cell_scale(const CellScaleRequest& request, double observed_max_abs);

// Index of a weight block in WeightDecision::weight_clip_ratio: (gate, input or recurrent side).
constexpr int32_t kWeightBlocks = 2 * QLSTM_GATE_COUNT;
constexpr int32_t weight_block(int32_t gate, bool recurrent) { return 2 * gate + (recurrent ? 1 : 0); }

// How a recurrent op's weights and cell clip are derived: decisions only (the search's, or the
// user's), no calibration data; part of the op's decision record (search/decision.h).
struct WeightDecision {
  WeightScaleMethod weight_method = WeightScaleMethod::kMaxAbs;
  // Per block: 0 = scale by weight_method; r in (0, 1] = clip at r * max|W| (scale r * max|W| / 127).
  std::array<double, kWeightBlocks> weight_clip_ratio{};
  // Bias correction: fold the expected matmul error of the int8 weights, (W - W_q) . E[x] and
  // (W_h - W_hq) . E[h], into the bias (OperandStats' means).
  bool bias_correction = false;
  // kAdaptive: each gate row [w_x ; w_h] is rounded, at its two blocks' scales, to minimize
  // e^T C e (e = w - s q) over OperandStats::operand_second_moment; with bias_correction the bias
  // absorbs the mean error, so the rounding minimizes e^T (C - m m^T) e, m = [mean_x ; mean_h].
  WeightRounding weight_rounding = WeightRounding::kNearest;
  int32_t cell_clip = 0;  // quantized clip for the kernel; 0 = none (PyTorch has none)
};

// What calibration observed that derivation needs for a WeightDecision: data, not decisions.
struct OperandStats {
  std::vector<double> mean_x, mean_h;  // bias correction: E[x] ([I]) and E[h] ([H])
  // Adaptive rounding: E[z z^T] over the calibration steps, z = [x_t ; h_{t-1}] (float,
  // [(I+H)][(I+H)] row-major; weight_rounding.h computes it). A missing or misshapen moment is a
  // CompileError naming the field.
  std::vector<double> operand_second_moment;
};

struct DerivedGate {
  std::vector<int8_t> w_x;               // [H][I]
  std::vector<int8_t> w_h;               // [H][H]
  std::vector<int32_t> input_effective_bias;   // [H]
  std::vector<int32_t> hidden_effective_bias;  // [H]
  std::vector<int32_t> bias_q;           // [H], the folded float bias at scale s_x * s_wx
  double w_x_scale = 0, w_h_scale = 0;
  qlstm_requant input_to_q3_12{}, hidden_to_q3_12{};
  int32_t activation = QLSTM_ACTIVATION_SIGMOID;
  qlstm_hard_sigmoid_params hard_sigmoid{};  // its line when activation is QLSTM_ACTIVATION_HARD_SIGMOID
};

// A HardSigmoid gate's line in the kernel's terms (docs/arithmetic.md §3.1): the slope 8 alpha
// (Q3.12 in, Q0.15 out) as a requantization, the offset round(beta * 2^15).
qlstm_hard_sigmoid_params hard_sigmoid_line(const GateSigmoid& sigmoid);

// Everything the kernel needs, owned, plus what it was derived from.
struct DerivedLstm {
  static constexpr int32_t kKind = QLSTM_OP_LSTM_S8;  // its op kind (ProgramOp::set)
  int32_t input_size = 0, hidden_size = 0;
  AffineQuant input, output;  // the hidden state shares the output's scale and zero point
  CellScaleChoice cell;
  int32_t cell_clip = 0;
  int32_t time_direction = QLSTM_TIME_FORWARD;  // QLSTM_TIME_REVERSE for an ONNX "reverse" LSTM
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;  // QLSTM_OUTPUT_FINAL: only h_n (a head reads nothing else)
  int32_t input_repeated = 0;  // 1: it reads one step at every step (the decoder of a repeated vector)
  WeightDecision weights;  // as derived
  std::array<DerivedGate, QLSTM_GATE_COUNT> gates;
  qlstm_requant forget_times_cell_to_cell{}, input_times_cell_gate_to_cell{},
      output_times_tanh_cell_to_hidden{};

  // A kernel parameter block pointing into this object (valid while it lives).
  qlstm_lstm_s8_params kernel_params(int32_t batch, int32_t time_steps, Layout layout) const;
  // The inverse: the kernel's fields of a parameter block (arrays copied), with the boundary
  // quantizations the block does not hold. Throws CompileError when the block's output zero point
  // is not `output`'s.
  static DerivedLstm from_kernel_params(const qlstm_lstm_s8_params& p, const AffineQuant& input,
                                        const AffineQuant& output);
};

// Throws CompileError (naming the gate and the quantity) for a bias that overflows int32 at its
// scale, a multiplier out of range, or an accumulator that could overflow int32 (including the
// kernel's 32-bit left shift before the multiply).
DerivedLstm derive_params(const FloatLstm& lstm, const AffineQuant& input,
                          const AffineQuant& output, const CellScaleChoice& cell,
                          const WeightDecision& weights, const OperandStats& observed = {});

// Symmetric per-tensor int8 quantization of one weight block; returns the scale. clip_ratio > 0
// overrides the method: the scale is clip_ratio * max|W| / 127.
double quantize_weights(const std::vector<float>& w, WeightScaleMethod method, double clip_ratio,
                        std::vector<int8_t>* q);

// ---- Shared by derive_params and derive_gru_params (derive_gru.h).

// A gate pre-activation's scale in Q3.12.
constexpr double kQ3_12Scale = 1.0 / 4096;

// Where a gate's float recurrent bias b_h goes: folded into the input side's bias (the LSTM's
// gates, the GRU's r and z), or kept on the recurrent side at scale s_h * s_Wh (the GRU's n, whose
// b_hn is multiplied by r: docs/arithmetic.md §13).
enum class RecurrentBias { kFolded, kRecurrentSide };

// Throws CompileError for a boundary scale that is not positive and finite, or bias correction
// without calibration means of x [I] and h [H].
void check_derive_inputs(const AffineQuant& input, const AffineQuant& output, const WeightDecision& weights,
                         const OperandStats& observed, int32_t input_size, int32_t hidden_size);

// One gate: int8 weights of both blocks (`block_gate`'s clip ratios in weights.weight_clip_ratio),
// then, when rounding_moment is set, adaptive rounding of each row against it; the effective
// biases (bias-corrected, with observed's means, if weights say so), the Q3.12 multipliers, the accumulator checks.
// `label` ("gate 'forget'") starts every error message. dg->activation is left to the caller.
// pre_activation_scale: the int16 pre-activation's scale, Q3.12 but for a ReLU RNN's (§23).
void derive_gate(const FloatGate& fg, int32_t input_size, int32_t hidden_size, const AffineQuant& input,
                 const AffineQuant& output, const WeightDecision& weights, const OperandStats& observed, int32_t block_gate,
                 RecurrentBias recurrent_bias, const std::vector<double>* rounding_moment,
                 const std::string& label, DerivedGate* dg, double pre_activation_scale = kQ3_12Scale);

// A derived layer (DerivedLstm, DerivedGru) with its sizes and boundary quantizations set.
template <class Derived>
Derived derived_layer(int32_t input_size, int32_t hidden_size, const AffineQuant& input, const AffineQuant& output) {
  Derived d;
  d.input_size = input_size;
  d.hidden_size = hidden_size;
  d.input = input;
  d.output = output;
  return d;
}

// A kernel gate's arrays (they may sit unaligned in a file's bytes) copied bytewise.
void copy_kernel_gate_arrays(const int8_t* input_weights, const int32_t* input_effective_bias,
                             const int8_t* hidden_weights, const int32_t* hidden_effective_bias,
                             int32_t input_size, int32_t hidden_size, DerivedGate* dg);

// The fields the LSTM's and the GRU's parameter blocks share (dims, layout, the gates' matmuls,
// output zero point, direction, output steps), from a derived layer and back; each layer's
// kernel_params / from_kernel_params adds its own.
// Gate g of a kernel block: its gates[g], an RNN's one gate.
template <class Params>
auto& kernel_gate(Params& p, size_t g) {
  return p.gates[g];
}
inline qlstm_gru_gate_s8_params& kernel_gate(qlstm_rnn_s8_params& p, size_t) { return p.gate; }
inline const qlstm_gru_gate_s8_params& kernel_gate(const qlstm_rnn_s8_params& p, size_t) { return p.gate; }

template <class Derived, class Params>
void common_kernel_params(const Derived& d, int32_t batch, int32_t time_steps, Layout layout, Params* p) {
  p->dims = {batch, time_steps, d.input_size, d.hidden_size};
  p->layout = layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  for (size_t g = 0; g < d.gates.size(); ++g) {
    const DerivedGate& dg = d.gates[g];
    auto& kg = kernel_gate(*p, g);
    kg.input_to_q3_12 = dg.input_to_q3_12;
    kg.input_weights = dg.w_x.data();
    kg.input_effective_bias = dg.input_effective_bias.data();
    kg.hidden_to_q3_12 = dg.hidden_to_q3_12;
    kg.hidden_weights = dg.w_h.data();
    kg.hidden_effective_bias = dg.hidden_effective_bias.data();
  }
  p->output_zero_point = d.output.zero_point;
  p->time_direction = d.time_direction;
  p->output_steps = d.output_steps;
}
// Throws CompileError when a parameter block's output zero point is not `output`'s.
void check_output_zero_point(int32_t output_zero_point, const AffineQuant& output);
template <class Derived, class Params>
Derived common_from_kernel_params(const Params& p, const AffineQuant& input, const AffineQuant& output) {
  check_output_zero_point(p.output_zero_point, output);
  Derived d = derived_layer<Derived>(p.dims.input_size, p.dims.hidden_size, input, output);
  for (size_t g = 0; g < d.gates.size(); ++g) {
    DerivedGate& dg = d.gates[g];
    const auto& kg = kernel_gate(p, g);
    dg.input_to_q3_12 = kg.input_to_q3_12;
    dg.hidden_to_q3_12 = kg.hidden_to_q3_12;
    copy_kernel_gate_arrays(kg.input_weights, kg.input_effective_bias, kg.hidden_weights, kg.hidden_effective_bias,
                            p.dims.input_size, p.dims.hidden_size, &dg);
  }
  d.time_direction = p.time_direction;
  d.output_steps = p.output_steps;
  return d;
}

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_DERIVE_H_
