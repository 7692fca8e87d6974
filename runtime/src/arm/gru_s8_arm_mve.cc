// "arm_mve" GRU: Helium (Cortex-M55). r and z by the arm_mve LSTM variant's gate (its dot-product
// blocks and assembly finish); the new gate's two matmuls in chunks of rows by the same VMLADAVA
// blocks (arm/mve_s8.h, blocked::gru_new_gate_chunked), then its finish in assembly: the reset
// product, then the LSTM's tanh gate finish with the reset product's requantization as its h side
// (qlstm_arm_gru_new_gate_finish_mve). The whole call (blocked/gru_chunked.h) builds every finish
// once and runs each step's update and output in one assembly loop
// (qlstm_arm_gru_update_output_mve); the update and output stages on their own are in four int32
// lanes of intrinsics (VQRDMULH is the SRDHM, VRSHL the rounding divide), the last partial vector
// predicated. Each is the reference's arithmetic lane by lane (reference/gru_s8_reference.cc);
// tests/variants and the device's variant-test check it bit for bit.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <stddef.h>

#include "arm/mve_s8.h"
#include "blocked/gate_rows.h"
#include "blocked/gru_chunked.h"
#include "reference/rnn_s8_reference.h"
#include "reference/gru_s8_reference.h"

// The new gate's finish: the tanh gate finish's parameters (x's requantization and the reset
// product's as its h side), then the recurrent part's requantization, in the assembly's load order.
struct qlstm_arm_gru_new_gate_finish_mve_params {
  qlstm_arm_gate_finish_params finish;
  int32_t h_left, h_multiplier, h_minus_right, h_negative_fix;
};
// The update's and the output's requantizations, the output zero point, then their fix masks.
struct qlstm_arm_gru_update_output_mve_params {
  int32_t u_left, u_multiplier, u_minus_right;
  int32_t o_left, o_multiplier, o_minus_right;
  int32_t output_zero_point;
  int32_t u_negative_fix, o_negative_fix;
};
static_assert(offsetof(qlstm_arm_gru_new_gate_finish_mve_params, h_left) == 36 &&
                  offsetof(qlstm_arm_gru_update_output_mve_params, u_negative_fix) == 28,
              "dot4_s8_arm.S loads these offsets");
extern "C" {
// ah[r] becomes reset[r] * sat16(RQ_h(ah[r])), then out[r] = tanh(sat16(sat16(RQ_x(ax[r])) + RQ_r(ah[r]))).
void qlstm_arm_gru_new_gate_finish_mve(const int32_t* ax, int32_t* ah, int32_t n, int16_t* out,
                                       const qlstm_arm_gru_new_gate_finish_mve_params* p, const int16_t* reset);
void qlstm_arm_gru_update_output_mve(int32_t count, const int16_t* z, const int16_t* n, int16_t* h, int8_t* y,
                                     const qlstm_arm_gru_update_output_mve_params* p);
}

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmMveVariant;

namespace arm_mve {
namespace {

Requant requant(const qlstm_requant& q) { return Requant(fxp::RequantDoubleRounding::make(q.multiplier, q.shift)); }

// n = tanh(sat16(sat16(RQ_x(ax)) + RQ_r(r * sat16(RQ_h(ah))))) for a chunk of rows, in assembly.
class NewGateFinish {
 public:
  NewGateFinish(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden) {
    const Requant h = requant(g.hidden_to_q3_12);
    p_ = {gate_finish_params(requant(g.input_to_q3_12), requant(reset_times_hidden)), h.left, h.multiplier,
          h.minus_right, h.negative_fix};
  }
  void operator()(const int32_t* ax, int32_t* ah, int32_t n, const int16_t* reset_q0_15, int16_t* new_q0_15) const {
    qlstm_arm_gru_new_gate_finish_mve(ax, ah, n, new_q0_15, &p_, reset_q0_15);
  }

 private:
  qlstm_arm_gru_new_gate_finish_mve_params p_;
};

// A step's update and output, one assembly loop per batch row.
class UpdateOutput {
 public:
  explicit UpdateOutput(const qlstm_gru_s8_params& p) {
    const Requant u = requant(p.update_times_difference_to_q0_15), o = requant(p.hidden_q0_15_to_output);
    p_ = {u.left, u.multiplier, u.minus_right, o.left, o.multiplier, o.minus_right, p.output_zero_point,
          u.negative_fix, o.negative_fix};
  }
  void operator()(int32_t rows, int32_t hidden_size, const int16_t* update_q0_15, const int16_t* new_q0_15,
                  int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) const {
    for (int32_t b = 0; b < rows; ++b) {
      const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
      qlstm_arm_gru_update_output_mve(hidden_size, update_q0_15 + base, new_q0_15 + base, hidden_q0_15 + base,
                                      y + b * y_row_stride, &p_);
    }
  }

 private:
  qlstm_arm_gru_update_output_mve_params p_;
};

struct GruKernel : MveDot {
  using Finish = GateFinish;
  using NewGateFinish = arm_mve::NewGateFinish;
  using UpdateOutput = arm_mve::UpdateOutput;
};

void gru_update(const qlstm_requant& update_times_difference, int32_t count, const int16_t* update_q0_15,
                const int16_t* new_q0_15, int16_t* hidden_q0_15) {
  const Requant q = requant(update_times_difference);
  for (int32_t k = 0; k < count; k += kLanes) {
    const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(count - k));
    const int32x4_t n = vldrhq_z_s32(new_q0_15 + k, pr);
    // |h - n| <= 65535 and |z| <= 32768: the product is exact in int32.
    const int32x4_t difference_q0_15 = vsubq_s32(vldrhq_z_s32(hidden_q0_15 + k, pr), n);
    const int32x4_t scaled_q0_15 = q(vmulq_s32(vldrhq_z_s32(update_q0_15 + k, pr), difference_q0_15));
    vstrhq_p_s32(hidden_q0_15 + k, saturate(vaddq_s32(n, scaled_q0_15), fxp::kInt16Min, fxp::kInt16Max), pr);
  }
}

void gru_output(const qlstm_requant& hidden_to_output, int32_t zero_point, int32_t rows, int32_t hidden_size,
                const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  const Requant q = requant(hidden_to_output);
  for (int32_t b = 0; b < rows; ++b) {
    const int16_t* h = hidden_q0_15 + static_cast<ptrdiff_t>(b) * hidden_size;
    int8_t* row = y + b * y_row_stride;
    for (int32_t k = 0; k < hidden_size; k += kLanes) {
      const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(hidden_size - k));
      const int32x4_t v = vaddq_n_s32(q(vldrhq_z_s32(h + k, pr)), zero_point);  // wraps, as the reference's add
      vstrbq_p_s32(row + k, saturate(v, fxp::kInt8Min, fxp::kInt8Max), pr);
    }
  }
}

}  // namespace
}  // namespace arm_mve

extern const GruS8Variant kGruS8ArmMveVariant = {"arm_mve",
                                                 nullptr,
                                                 nullptr,
                                                 gru_reference::sigmoid_gate_of<kLstmS8ArmMveVariant>,
                                                 blocked::gru_new_gate_chunked<arm_mve::GruKernel>,
                                                 arm_mve::gru_update,
                                                 arm_mve::gru_output,
                                                 blocked::gru_chunked<arm_mve::GruKernel, arm_mve::gru_output>};

// The RNN's: the MVE LSTM's gate, the GRU's output stage above (kernels.h).
extern const RnnS8Variant kRnnS8ArmMveVariant = {"arm_mve", nullptr, nullptr,
                                                 rnn_reference::lstm_gate_of<kLstmS8ArmMveVariant>, arm_mve::gru_output};

}  // namespace qlstm

#endif  // MVE
