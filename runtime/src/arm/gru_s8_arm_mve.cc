// "arm_mve" GRU: Helium (Cortex-M55). r and z by the arm_mve LSTM variant's gate; the new gate's
// two matmuls in chunks of rows by the same VMLADAVA blocks (arm/mve_s8.h,
// blocked::gru_new_gate_chunked), then the reset product in four int32 lanes and the LSTM's
// assembly tanh gate finish (NewGateFinish), the update and the output in four int32 lanes as the
// LSTM's cell and hidden updates (VQRDMULH is the SRDHM, VRSHL the rounding divide), the last
// partial vector predicated.
// Each is the reference's arithmetic lane by lane (reference/gru_s8_reference.cc); tests/variants
// and the device's variant-test check it bit for bit.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include "arm/mve_s8.h"
#include "blocked/gate_rows.h"
#include "reference/gru_s8_reference.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmMveVariant;

namespace arm_mve {
namespace {

Requant requant(const qlstm_requant& q) { return Requant(fxp::RequantDoubleRounding::make(q.multiplier, q.shift)); }

// n = tanh(sat16(sat16(RQ_x(ax)) + RQ_r(r * sat16(RQ_h(ah))))), four rows per pass: the product
// r * sat16(RQ_h(ah)) (|.| <= 2^30, exact in int32) replaces ah, and the LSTM's tanh gate finish
// in assembly, tanh(sat16(sat16(RQ_x(ax)) + RQ_h'(ah))), with RQ_r as its h side, does the rest.
class NewGateFinish {
 public:
  NewGateFinish(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden)
      : hidden_(requant(g.hidden_to_q3_12)),
        p_(gate_finish_params(requant(g.input_to_q3_12), requant(reset_times_hidden))) {}
  void operator()(const int32_t* ax, int32_t* ah, int32_t n, const int16_t* reset_q0_15, int16_t* new_q0_15) const {
    for (int32_t k = 0; k < n; k += kLanes) {
      const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(n - k));
      const int32x4_t h_part_q3_12 = saturate(hidden_(vldrwq_z_s32(ah + k, pr)), fxp::kInt16Min, fxp::kInt16Max);
      vstrwq_p_s32(ah + k, vmulq_s32(vldrhq_z_s32(reset_q0_15 + k, pr), h_part_q3_12), pr);
    }
    qlstm_arm_gate_finish_tanh_mve(ax, ah, n, new_q0_15, &p_);
  }

 private:
  Requant hidden_;
  qlstm_arm_gate_finish_params p_;
};

struct GruKernel : MveDot {
  using NewGateFinish = arm_mve::NewGateFinish;
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

extern const GruS8Variant kGruS8ArmMveVariant = {
    "arm_mve", nullptr, nullptr, gru_reference::sigmoid_gate_of<kLstmS8ArmMveVariant>,
    blocked::gru_new_gate_chunked<arm_mve::GruKernel>, arm_mve::gru_update, arm_mve::gru_output};

}  // namespace qlstm

#endif  // MVE
