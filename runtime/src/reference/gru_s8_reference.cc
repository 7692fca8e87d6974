// The GRU's portable reference kernel: docs/arithmetic.md §13 in code.
#include "reference/gru_s8_reference.h"

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace gru_reference {

using fxp::requantize_double_rounding;
using fxp::saturate_to_s16;

namespace {

int32_t requantize(int32_t x, const qlstm_requant& q) {
  return requantize_double_rounding(x, q.multiplier, q.shift);
}

// RQ of a qlstm_requant as the elementwise templates take it.
struct Requantize {
  const qlstm_requant& q;
  int32_t operator()(int32_t x) const { return requantize(x, q); }
};

// sat16(RQ(bias + v . w_row)): one matmul's part of a pre-activation, saturated on its own.
int16_t matmul_part_q3_12(const int8_t* v, const int8_t* w_row, int32_t n, int32_t bias,
                          const qlstm_requant& to_q3_12) {
  return saturate_to_s16(requantize(reference::dot_s8_plus_bias(v, w_row, n, bias), to_q3_12));
}

}  // namespace

int32_t reset_product_q3_12(int16_t reset_q0_15, int16_t h_part_q3_12, const qlstm_requant& reset_times_hidden) {
  return reset_product_q3_12_with(reset_q0_15, h_part_q3_12, Requantize{reset_times_hidden});
}

int16_t new_gate_q0_15(int16_t x_part_q3_12, int32_t gated_q3_12) {
  return new_gate_from_parts_q0_15(x_part_q3_12, gated_q3_12);
}

int16_t updated_hidden_q0_15(int16_t update_q0_15, int16_t new_q0_15, int16_t hidden_q0_15,
                             const qlstm_requant& update_times_difference) {
  return updated_hidden_q0_15_with(update_q0_15, new_q0_15, hidden_q0_15, Requantize{update_times_difference});
}

int8_t hidden_to_output_s8(int16_t hidden_q0_15, const qlstm_requant& hidden_to_output, int32_t zero_point) {
  return hidden_to_output_s8_with(hidden_q0_15, Requantize{hidden_to_output}, zero_point);
}

void new_gate(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden, const GateArgs& args,
              const int16_t* reset_q0_15, int16_t* new_q0_15) {
  for (int32_t b = 0; b < args.rows; ++b) {
    const int8_t* x = args.x + b * args.x_row_stride;
    // No h (a stateless first step): the recurrent accumulator is the bias alone.
    const int8_t* h = args.h != nullptr ? args.h + b * args.h_row_stride : nullptr;
    const int32_t h_columns = h != nullptr ? args.hidden_size : 0;
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * args.hidden_size;
    // A repeated input's accumulators (args.x_acc) stand for the input matmul and its bias.
    const int32_t* x_acc = args.x_acc != nullptr ? args.x_acc + base : nullptr;
    for (int32_t r = 0; r < args.hidden_size; ++r) {
      const int16_t x_part_q3_12 =
          x_acc != nullptr
              ? matmul_part_q3_12(nullptr, nullptr, 0, x_acc[r], g.input_to_q3_12)
              : matmul_part_q3_12(x, g.input_weights + static_cast<ptrdiff_t>(r) * args.input_size, args.input_size,
                                  g.input_effective_bias[r], g.input_to_q3_12);
      const int16_t h_part_q3_12 =
          matmul_part_q3_12(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * args.hidden_size, h_columns,
                            g.hidden_effective_bias[r], g.hidden_to_q3_12);
      const int32_t gated_q3_12 = reset_product_q3_12(reset_q0_15[base + r], h_part_q3_12, reset_times_hidden);
      new_q0_15[base + r] = new_gate_q0_15(x_part_q3_12, gated_q3_12);
    }
  }
}

void update(const qlstm_requant& update_times_difference, int32_t count, const int16_t* update_q0_15,
            const int16_t* new_q0_15, int16_t* hidden_q0_15) {
  update_with(Requantize{update_times_difference}, count, update_q0_15, new_q0_15, hidden_q0_15);
}

void output(const qlstm_requant& hidden_to_output, int32_t zero_point, int32_t rows, int32_t hidden_size,
            const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  output_with(Requantize{hidden_to_output}, zero_point, rows, hidden_size, hidden_q0_15, y, y_row_stride);
}

}  // namespace gru_reference

extern const GruS8Variant kGruS8ReferenceVariant = {"reference", nullptr, nullptr,
                                                    reference::gate,
                                                    gru_reference::new_gate, gru_reference::update,
                                                    gru_reference::output, nullptr};

}  // namespace qlstm
