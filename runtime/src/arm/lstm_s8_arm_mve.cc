// "arm_mve": Helium (Cortex-M55). The gate in chunks of rows (blocked::gate_chunked): the dot
// products of whole four-row blocks in one assembly call (qlstm_arm_rows4_s8_mve: VMLADAVA, v
// held in registers up to 16 and over 32 columns), then the chunk's requantization, saturation and table sigmoid or tanh
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
#include "blocked/lstm_chunked.h"
#include "qlstm/activation_s16.h"

// The parameters of the assembly cell and hidden updates (dot4_s8_arm.S), in its load order.
struct qlstm_arm_cell_update_mve_params {
  int32_t fc_left, fc_multiplier, fc_minus_right;
  int32_t ig_left, ig_multiplier, ig_minus_right;
  int32_t clip_min, clip_max;
  int32_t fc_negative_fix, ig_negative_fix;
};
struct qlstm_arm_hidden_update_mve_params {
  int32_t prescale_multiplier, prescale_round, prescale_minus_right;  // v = (cell x 3 x 2^left + round) >> right
  const uint16_t* table;
  int32_t ot_left, ot_multiplier, ot_minus_right;
  int32_t output_zero_point;
  int32_t ot_negative_fix;
};
static_assert(offsetof(qlstm_arm_cell_update_mve_params, fc_negative_fix) == 32 &&
                  offsetof(qlstm_arm_hidden_update_mve_params, ot_negative_fix) == 32,
              "dot4_s8_arm.S loads these offsets");
extern "C" void qlstm_arm_cell_update_mve(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g,
                                          int16_t* cell, const qlstm_arm_cell_update_mve_params* p);
extern "C" void qlstm_arm_hidden_update_mve(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
                                            const qlstm_arm_hidden_update_mve_params* p);

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
  using Finish = GateFinish;
};

// The cell and hidden updates in assembly too (dot4_s8_arm.S): every constant in a register,
// where GCC 12's intrinsics reload them and move the predicate through core registers.
void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                 const int16_t* g_q0_15, int16_t* cell) {
  const Requant fc(fxp::RequantDoubleRounding::make(p.forget_times_cell.multiplier, p.forget_times_cell.shift));
  const Requant ig(fxp::RequantDoubleRounding::make(p.input_times_cell_gate.multiplier, p.input_times_cell_gate.shift));
  const qlstm_arm_cell_update_mve_params ap = {fc.left,     fc.multiplier, fc.minus_right,     ig.left,
                                               ig.multiplier, ig.minus_right, p.clip_min,       p.clip_max,
                                               fc.negative_fix, ig.negative_fix};
  qlstm_arm_cell_update_mve(count, f_q0_15, i_q0_15, g_q0_15, cell, &ap);
}

void hidden_update(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                   const int16_t* cell, int8_t* h_out, ptrdiff_t h_row_stride) {
  using namespace detail;
  const Requant ot(
      fxp::RequantDoubleRounding::make(p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift));
  const int32_t left = p.tanh_left_shift >= 0 ? p.tanh_left_shift : 0;
  const int32_t right = p.tanh_left_shift >= 0 ? 0 : -p.tanh_left_shift;
  const qlstm_arm_hidden_update_mve_params ap = {kPrescaleFactor << left,
                                                 right > 0 ? 1 << (right - 1) : 0,
                                                 -right,
                                                 kSigmoidTableU16,
                                                 ot.left,
                                                 ot.multiplier,
                                                 ot.minus_right,
                                                 p.output_zero_point,
                                                 ot.negative_fix};
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    qlstm_arm_hidden_update_mve(hidden_size, o_q0_15 + base, cell + base, h_out + b * h_row_stride, &ap);
  }
}

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace

// Four rows per pass: the pre-activation as the assembly finish's, then the line. The sum
// saturates to int32 (VQADD) where the reference's is 64-bit: a sum beyond int32 is beyond
// [0, 32767] either way, so the clamp gives the same. The rows after the last four: the scalar one.
void finish_hard_sigmoid(const qlstm_gate_s8_params& g, const int32_t* ax, const int32_t* ah, int32_t n,
                         int16_t* out) {
  const blocked::GateRequant rq(g);
  const Requant x(rq.input), h(rq.hidden);
  const Requant slope(fxp::RequantDoubleRounding::make(g.hard_sigmoid.slope.multiplier, g.hard_sigmoid.slope.shift));
  const int32x4_t offset = vdupq_n_s32(g.hard_sigmoid.offset_q0_15);
  int32_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    int32x4_t pre = saturate(x(vld1q_s32(ax + k)), fxp::kInt16Min, fxp::kInt16Max);
    pre = saturate(vaddq_s32(pre, h(vld1q_s32(ah + k))), fxp::kInt16Min, fxp::kInt16Max);
    vstrhq_s32(out + k, saturate(vqaddq_s32(slope(pre), offset), 0, fxp::kInt16Max));
  }
  if (k < n) blocked::finish_hard_sigmoid(g, ax + k, ah + k, n - k, out + k);
}

}  // namespace arm_mve

// The stages, and the whole call with the gates' finishes built once (blocked/lstm_chunked.h).
extern const LstmS8Variant kLstmS8ArmMveVariant =
    blocked::chunked_variant<arm_mve::Kernel, arm_mve::cell_update, arm_mve::hidden_update>("arm_mve",
                                                                                           arm_mve::is_supported);

}  // namespace qlstm

#endif  // MVE
