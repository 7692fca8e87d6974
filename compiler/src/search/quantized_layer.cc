#include "qlstm/compiler/search/quantized_layer.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {

QuantizedLayer::QuantizedLayer(FloatLstm source, DerivedLstm derived, CalibrationStats stats)
    : source_(std::move(source)), derived_(std::move(derived)), stats_(stats) {
  if (source_.cell != CellKind::kLstm) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer given LSTM parameters");
}

QuantizedLayer::QuantizedLayer(FloatLstm source, DerivedRnn derived, CalibrationStats stats)
    : source_(std::move(source)), rnn_(std::move(derived)), stats_(stats) {
  if (!is_rnn()) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer given RNN parameters");
}

QuantizedLayer::QuantizedLayer(FloatLstm source, DerivedGru derived, CalibrationStats stats)
    : source_(std::move(source)), gru_(std::move(derived)), stats_(stats) {
  if (!is_gru()) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer given GRU parameters");
}

const DerivedLstm& QuantizedLayer::derived() const {
  if (source_.cell != CellKind::kLstm) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer has no LSTM parameters");
  return derived_;
}

const DerivedGru& QuantizedLayer::derived_gru() const {
  if (!is_gru()) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer has no GRU parameters");
  return gru_;
}

const DerivedRnn& QuantizedLayer::derived_rnn() const {
  if (!is_rnn()) throw CompileError(std::string("a ") + cell_kind_name(source_.cell) + " layer has no RNN parameters");
  return rnn_;
}

ProgramOp QuantizedLayer::program_op() const {
  ProgramOp op;
  if (is_gru()) {
    op.set(gru_);
  } else if (is_rnn()) {
    op.set(rnn_);
  } else {
    op.set(derived_);
  }
  return op;
}

QuantizedLayer::State QuantizedLayer::initial_state(int32_t batch) const {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(source_.hidden_size);
  return {std::vector<int8_t>(n, static_cast<int8_t>(output_quant().zero_point)), std::vector<int16_t>(n, 0)};
}

QuantizedLayer::State QuantizedLayer::quantize_state(const std::vector<float>& h, const std::vector<float>& c,
                                                  int32_t batch) const {
  State s = initial_state(batch);
  if (is_gru()) {  // its Q0.15 hidden in the int16 row, as the program keeps it
    for (size_t k = 0; k < h.size() && k < s.cell.size(); ++k) s.cell[k] = quantize_cell(h[k], kGruHiddenPower);
    return s;
  }
  if (is_rnn()) {  // its int16 hidden in the int16 row
    for (size_t k = 0; k < h.size() && k < s.cell.size(); ++k) s.cell[k] = quantize_cell(h[k], rnn_.hidden_power);
    return s;
  }
  for (size_t k = 0; k < h.size() && k < s.hidden.size(); ++k) s.hidden[k] = derived_.output.quantize(h[k]);
  for (size_t k = 0; k < c.size() && k < s.cell.size(); ++k) s.cell[k] = quantize_cell(c[k], derived_.cell.power);
  return s;
}

namespace {

// A one-op program: the one path every model takes to the runtime.
std::vector<int8_t> run_single_op(const CompiledModel& m, const std::vector<int8_t>& x, const SequenceShape& shape,
                                  QuantizedLayer::State* state) {
  check_tensor_shape(shape, x.size(), m.input_size(), "input");
  if (state == nullptr) return run_program_s8(m, x, shape);
  ProgramState s{std::move(state->hidden), std::move(state->cell)};
  struct PutBack {  // the state goes back to the caller whatever happens
    ProgramState& from;
    QuantizedLayer::State& to;
    ~PutBack() {
      to.hidden = std::move(from.hidden);
      to.cell = std::move(from.cell);
    }
  } put_back{s, *state};
  return run_program_s8(m, x, shape, &s);
}

}  // namespace

std::vector<int8_t> run_kernel_s8(const DerivedLstm& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state) {
  return run_single_op(single_op_model(d), x, shape, state);
}

std::vector<int8_t> run_kernel_s8(const DerivedGru& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state) {
  return run_single_op(single_op_model(d), x, shape, state);
}

std::vector<int8_t> run_kernel_s8(const DerivedRnn& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLayer::State* state) {
  return run_single_op(single_op_model(d), x, shape, state);
}

std::vector<int8_t> run_kernel_s8_streamed(const DerivedLstm& d, const std::vector<int8_t>& x,
                                           const SequenceShape& shape, int32_t chunk) {
  return run_program_s8_streamed(single_op_model(d), x, shape, chunk);
}

std::vector<int8_t> QuantizedLayer::run_s8(const std::vector<int8_t>& x, const SequenceShape& shape,
                                          State* state) const {
  if (is_gru()) return run_kernel_s8(gru_, x, shape, state);
  if (is_rnn()) return run_kernel_s8(rnn_, x, shape, state);
  return run_kernel_s8(derived_, x, shape, state);
}

std::vector<int8_t> QuantizedLayer::quantize_input(const std::vector<float>& x) const {
  std::vector<int8_t> q(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    if (!std::isfinite(x[k])) {
      throw CompileError("input: non-finite value at index " + std::to_string(k));
    }
    q[k] = input_quant().quantize(x[k]);
  }
  return q;
}

std::vector<float> QuantizedLayer::dequantize_output(const std::vector<int8_t>& y) const {
  std::vector<float> f(y.size());
  for (size_t k = 0; k < y.size(); ++k) f[k] = static_cast<float>(output_quant().dequantize(y[k]));
  return f;
}

std::vector<float> QuantizedLayer::run_float(const std::vector<float>& x,
                                            const SequenceShape& shape) const {
  return dequantize_output(run_s8(quantize_input(x), shape));
}


double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test) {
  double signal = 0, noise = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    signal += static_cast<double>(reference[k]) * reference[k];
    const double d = static_cast<double>(reference[k]) - test[k];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test) {
  double m = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    m = std::max(m, std::fabs(static_cast<double>(reference[k]) - test[k]));
  }
  return m;
}

}  // namespace compiler
}  // namespace qlstm
