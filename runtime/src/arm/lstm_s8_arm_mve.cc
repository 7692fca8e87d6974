// "arm_mve": Helium (Cortex-M55). The gate in chunks of rows (blocked::gate_chunked): the dot
// products of whole four-row blocks in one assembly call (qlstm_arm_rows4_s8_mve: VMLADAVA in a
// tail-predicated loop), then the chunk's requantization, saturation and table sigmoid or tanh
// in one assembly loop (qlstm_arm_gate_finish_*_mve). The cell and hidden updates in intrinsics,
// vectors of four int32 lanes: VQRDMULH is exactly the SRDHM, the rounding divide a VRSHL, the
// activations two gathers and a multiply-add per lane. Each is the
// reference's arithmetic lane by lane (docs/arithmetic.md); tests/variants and the device's
// variant-test check it bit for bit.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>
#include <stddef.h>

#include "arm/mve_s8.h"
#include "blocked/gate_rows.h"
#include "qlstm/activation_s16.h"

namespace qlstm {
namespace arm_mve {
namespace {

// Saturation to int16 without constants: the saturating shift clamps at 2^31, the shift back
// leaves [-2^15, 2^15 - 1].
inline int32x4_t saturate_s16(int32x4_t x) { return vshrq_n_s32(vqshlq_n_s32(x, 16), 16); }

// The negative half in one step from the positive one (docs/arithmetic.md §4): with the same r,
// the reference's negative-input results are exactly 2^15 - y (sigmoid; tanh: arm/mve_s8.h).
inline int32x4_t sigmoid_of_prescaled(int32x4_t v) {
  using namespace detail;
  constexpr int32_t kSaturated = INT16_MAX << kSigmoidDropBits;
  constexpr int32_t kRound = 1 << (kSigmoidDropBits - 1);
  constexpr int32_t kOneQ0_15 = 1 << kQ0_15FractionalBits;
  const int32x4_t r = interpolate<kSigmoidStepBits>(vabsq_s32(v), kSaturated);
  const int32x4_t y = vshrq_n_s32(vaddq_n_s32(r, kRound), kSigmoidDropBits);
  return vaddq_m_n_s32(y, vnegq_s32(y), kOneQ0_15, vcmpltq_n_s32(v, 0));
}

inline int32x4_t sigmoid(int32x4_t x, int32_t left_shift) { return sigmoid_of_prescaled(prescale(x, left_shift)); }

struct Kernel : MveDot {
  // In assembly (dot4_s8_arm.S): with every constant in a register, the loop is 39 instructions
  // per four rows (sigmoid), where GCC 12 spills to about 70.
  struct Finish {
    qlstm_arm_gate_finish_params p;
    void (*activate)(const int32_t*, const int32_t*, int32_t, int16_t*, const qlstm_arm_gate_finish_params*);
    Finish(const blocked::GateRequant& rq, bool is_tanh)
        : p(gate_finish_params(Requant(rq.input), Requant(rq.hidden))),
          activate(is_tanh ? qlstm_arm_gate_finish_tanh_mve : qlstm_arm_gate_finish_sigmoid_mve) {}
    void operator()(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out) const {
      activate(ax, ah, n, out, &p);
    }
  };
};

void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                 const int16_t* g_q0_15, int16_t* cell) {
  const Requant fc(fxp::RequantDoubleRounding::make(p.forget_times_cell.multiplier, p.forget_times_cell.shift));
  const Requant ig(fxp::RequantDoubleRounding::make(p.input_times_cell_gate.multiplier, p.input_times_cell_gate.shift));
  for (int32_t k = 0; k < count; k += kLanes) {
    const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(count - k));
    const int32x4_t c = vldrhq_z_s32(cell + k, pr);
    const int32x4_t kept =
        saturate(fc(vmulq_s32(vldrhq_z_s32(f_q0_15 + k, pr), c)), fxp::kInt16Min, fxp::kInt16Max);
    const int32x4_t added = ig(vmulq_s32(vldrhq_z_s32(i_q0_15 + k, pr), vldrhq_z_s32(g_q0_15 + k, pr)));
    vstrhq_p_s32(cell + k, saturate(vaddq_s32(kept, added), p.clip_min, p.clip_max), pr);
  }
}

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm_mve

extern const LstmS8Variant kLstmS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, nullptr, blocked::gate_chunked<arm_mve::Kernel>,
                                                   arm_mve::cell_update, arm_mve::hidden_update_lanes<int8_t>, nullptr};

}  // namespace qlstm

#endif  // MVE
