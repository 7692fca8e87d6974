// The 16x8 LSTM: calibration, derivation and the host run through the program runner.
#include "qlstm/compiler/quantized_lstm_s16.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qlstm/compiler/quantize.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

int16_t quantize_s16(double x, double scale) {
  return static_cast<int16_t>(std::clamp(std::nearbyint(x / scale), -32768.0, 32767.0));
}

QuantizedLstmS16 QuantizedLstmS16::compile(const FloatLstm& lstm, const CalibrationSet& calibration,
                                           const CompileOptions& options, const OpChoice* weights) {
  const OpObservation observed = observe_op(lstm, calibration, options.progress);
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  double max_x = 0, max_h = 0;
  std::vector<double> sum_x(static_cast<size_t>(I), 0.0);
  int64_t steps = 0;
  for (const CalibrationSequence& s : observed.inputs.sequences) {
    for (size_t k = 0; k < s.values.size(); ++k) {
      max_x = std::max(max_x, std::fabs(static_cast<double>(s.values[k])));
      sum_x[k % static_cast<size_t>(I)] += s.values[k];
    }
    for (float v : s.h0) max_h = std::max(max_h, std::fabs(static_cast<double>(v)));
    steps += s.time_steps;
  }
  DeriveOptions derive = options.derive;
  if (weights != nullptr) {
    derive.weight_clip_ratio = weights->weight_clip;
    derive.bias_correction = weights->bias_correction;
    derive.weight_rounding = WeightRounding::kNearest;  // adaptive rounding: not derived for 16x8 yet
  }
  if (derive.bias_correction && steps > 0) {
    derive.mean_x.assign(static_cast<size_t>(I), 0.0);
    derive.mean_h.assign(static_cast<size_t>(H), 0.0);
    for (int32_t i = 0; i < I; ++i) derive.mean_x[static_cast<size_t>(i)] = sum_x[static_cast<size_t>(i)] / static_cast<double>(steps);
    for (int32_t h = 0; h < H; ++h) {
      derive.mean_h[static_cast<size_t>(h)] = observed.sum_h[static_cast<size_t>(h)] / static_cast<double>(steps);
    }
  }
  for (const std::vector<float>& y : observed.outputs) {
    for (float v : y) max_h = std::max(max_h, std::fabs(static_cast<double>(v)));
  }
  QuantizedLstmS16 q;
  const CellScaleChoice cell = choose_cell_scale(options.cell_scale, observed.cell_max_abs);
  q.d_ = derive_lstm_s16_params(lstm, symmetric_s16_scale(max_x, "input (max |x| of the calibration data)"),
                                symmetric_s16_scale(max_h, "output (max |h| of the calibration run)"), cell, derive);
  return q;
}

std::vector<int16_t> QuantizedLstmS16::run_s16(const std::vector<int16_t>& x, const SequenceShape& shape,
                                               const std::vector<int16_t>* h0, const std::vector<int16_t>* c0) const {
  const int32_t B = shape.batch, T = shape.time_steps, H = d_.hidden_size;
  const size_t rows = static_cast<size_t>(B) * static_cast<size_t>(H);
  if (x.size() != static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(d_.input_size)) {
    throw CompileError("QuantizedLstmS16::run_s16: the input does not hold B x T x I values");
  }
  qlstm_op op{};
  op.kind = QLSTM_OP_LSTM_S16;
  op.lstm_s16 = d_.kernel_params(B, 0, shape.layout);
  op.input_buffer = 0;
  op.output_buffer = 1;
  const int32_t widths[2] = {d_.input_size, H};
  const int32_t steps[2] = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP};
  const int32_t types[2] = {QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16};
  const qlstm_program program = {&op, 1, 2, widths, 2 * rows, steps, B,
                                 shape.layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR,
                                 types};
  op.lstm_s16.dims.time_steps = T;
  const size_t scratch_bytes = qlstm_op_scratch_bytes(&op);
  op.lstm_s16.dims.time_steps = 0;
  struct alignas(QLSTM_SCRATCH_ALIGNMENT) Block {
    unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
  };
  std::vector<Block> scratch(scratch_bytes / sizeof(Block) + 1);
  std::vector<int16_t> cell(rows), y(static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(H));
  qlstm_program_context ctx = {scratch.data(), scratch.size() * sizeof(Block), cell.data(), {nullptr, nullptr}, 0};
  // The state: the cell rows, then the hidden rows, in the cell array; the int8 hidden array unused.
  std::vector<int16_t> state(2 * rows, 0);
  std::vector<int8_t> unused_hidden(2 * rows, 0);
  if (c0 != nullptr) std::copy(c0->begin(), c0->end(), state.begin());
  if (h0 != nullptr) std::copy(h0->begin(), h0->end(), state.begin() + static_cast<std::ptrdiff_t>(rows));
  const bool stateful = h0 != nullptr || c0 != nullptr;
  const qlstm_status st = qlstm_program_run(&program, &ctx, x.empty() ? nullptr : x.data(), y.data(), T,
                                            stateful ? unused_hidden.data() : nullptr, stateful ? state.data() : nullptr);
  if (st != QLSTM_OK) throw CompileError(std::string("QuantizedLstmS16::run_s16: ") + qlstm_status_string(st));
  return y;
}

std::vector<float> QuantizedLstmS16::run_float(const std::vector<float>& x, const SequenceShape& shape,
                                               const float* h0, const float* c0) const {
  std::vector<int16_t> x16(x.size());
  for (size_t k = 0; k < x.size(); ++k) x16[k] = quantize_s16(x[k], d_.input_scale);
  const size_t rows = static_cast<size_t>(shape.batch) * static_cast<size_t>(d_.hidden_size);
  std::vector<int16_t> h16, c16;
  if (h0 != nullptr) {
    for (size_t k = 0; k < rows; ++k) h16.push_back(quantize_s16(h0[k], d_.output_scale));
  }
  if (c0 != nullptr) {
    for (size_t k = 0; k < rows; ++k) c16.push_back(quantize_cell(c0[k], d_.cell.power));
  }
  if (h0 != nullptr && c0 == nullptr) c16.assign(rows, 0);
  if (c0 != nullptr && h0 == nullptr) h16.assign(rows, 0);
  const std::vector<int16_t> y16 = run_s16(x16, shape, h16.empty() ? nullptr : &h16, c16.empty() ? nullptr : &c16);
  std::vector<float> y(y16.size());
  for (size_t k = 0; k < y.size(); ++k) y[k] = static_cast<float>(y16[k] * d_.output_scale);
  return y;
}

}  // namespace compiler
}  // namespace qlstm
