// The portable reference kernel: the specification (docs/arithmetic.md) in code. Optimized
// variants are checked against these three stages bit for bit.
#include "gate_activation.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace reference {

using fxp::requantize_double_rounding;
using fxp::saturate_to_s16;
using fxp::wrapping_add;

int32_t dot_s8_plus_bias(const int8_t* v, const int8_t* w_row, int32_t n, int32_t bias) {
  uint32_t acc = static_cast<uint32_t>(bias);
  for (int32_t j = 0; j < n; ++j) {
    acc += static_cast<uint32_t>(static_cast<int32_t>(v[j]) * static_cast<int32_t>(w_row[j]));
  }
  return fxp::bits_to_s32(acc);
}

void gate(const qlstm_gate_s8_params& g, const GateArgs& a, int16_t* out_q0_15) {
  for (int32_t b = 0; b < a.rows; ++b) {
    const int8_t* x = a.x + b * a.x_row_stride;
    const int8_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * a.hidden_size;
    const int32_t* x_acc = a.x_acc != nullptr ? a.x_acc + static_cast<ptrdiff_t>(b) * a.hidden_size : nullptr;
    for (int32_t r = 0; r < a.hidden_size; ++r) {
      const int32_t acc_x = x_acc != nullptr ? x_acc[r]
                                             : dot_s8_plus_bias(x, g.input_weights + static_cast<ptrdiff_t>(r) * a.input_size,
                                                                a.input_size, g.input_effective_bias[r]);
      // The input part is saturated on its own; the recurrent part only after the add.
      int32_t pre_q3_12 = saturate_to_s16(requantize_double_rounding(
          acc_x, g.input_to_q3_12.multiplier, g.input_to_q3_12.shift));
      if (h != nullptr) {
        const int32_t acc_h = dot_s8_plus_bias(
            h, g.hidden_weights + static_cast<ptrdiff_t>(r) * a.hidden_size, a.hidden_size,
            g.hidden_effective_bias[r]);
        pre_q3_12 = saturate_to_s16(wrapping_add(
            pre_q3_12, requantize_double_rounding(acc_h, g.hidden_to_q3_12.multiplier,
                                                  g.hidden_to_q3_12.shift)));
      }
      out[r] = gate_activation_q0_15(g, static_cast<int16_t>(pre_q3_12));
    }
  }
}

void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15,
                 const int16_t* i_q0_15, const int16_t* g_q0_15, int16_t* cell) {
  for (int32_t k = 0; k < count; ++k) {
    const int32_t kept = saturate_to_s16(requantize_double_rounding(
        static_cast<int32_t>(f_q0_15[k]) * cell[k], p.forget_times_cell.multiplier,
        p.forget_times_cell.shift));
    // i * g is not saturated to int16 before the add (unlike TFLM's reference).
    const int32_t added = requantize_double_rounding(
        static_cast<int32_t>(i_q0_15[k]) * g_q0_15[k], p.input_times_cell_gate.multiplier,
        p.input_times_cell_gate.shift);
    cell[k] = static_cast<int16_t>(fxp::clamp(wrapping_add(kept, added), p.clip_min, p.clip_max));
  }
}

int32_t output_times_tanh_cell(const HiddenUpdateParams& p, int16_t o_q0_15, int16_t cell) {
  const int32_t tanh_cell_q0_15 = tanh_q0_15(cell, p.tanh_left_shift);
  return requantize_double_rounding(static_cast<int32_t>(o_q0_15) * tanh_cell_q0_15,
                                    p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift);
}

void hidden_update(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size,
                   const int16_t* o_q0_15, const int16_t* cell, int8_t* h_out,
                   ptrdiff_t h_row_stride) {
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    int8_t* h = h_out + b * h_row_stride;
    for (int32_t r = 0; r < hidden_size; ++r) {
      const int32_t scaled = output_times_tanh_cell(p, o_q0_15[base + r], cell[base + r]);
      h[r] = fxp::saturate_to_s8(wrapping_add(scaled, p.output_zero_point));
    }
  }
}

bool is_supported() { return true; }

}  // namespace reference

extern const LstmS8Variant kLstmS8ReferenceVariant = {
    "reference", reference::is_supported, nullptr, reference::gate, reference::cell_update,
    reference::hidden_update, nullptr};

const LstmS8Variant& lstm_s8_reference_variant() { return kLstmS8ReferenceVariant; }

}  // namespace qlstm
