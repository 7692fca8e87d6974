// The Arm M-profile variants: the gate in chunks of rows (blocked/gate_rows.h), the dot products
// of whole four-row blocks and the requantization and activation in assembly (dot4_s8_arm.S).
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD, two multiply-accumulates per instruction (Cortex-M4, M33, M55)
// (arm_mve, with the vector stages: lstm_s8_arm_mve.cc.)
#include "arm/dot_s8_arm.h"
#include "blocked/gate_rows.h"
#include "blocked/lstm_chunked.h"

#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

#include <stddef.h>

struct qlstm_arm_cell_params {
  qlstm_arm_requant_params forget_times_cell, input_times_cell_gate;
  int32_t clip_min, clip_max;
};
struct qlstm_arm_hidden_params {
  int32_t prescale_multiplier, prescale_round, prescale_right;  // v = (3 x 2^left + round) >> right
  const uint16_t* table;
  const uint16_t* table_from_1;
  qlstm_arm_requant_params output_times_tanh_cell;
  int32_t output_zero_point;
};
static_assert(offsetof(qlstm_arm_cell_params, clip_min) == 40 &&
                  offsetof(qlstm_arm_hidden_params, output_times_tanh_cell) == 20 &&
                  offsetof(qlstm_arm_hidden_params, output_zero_point) == 40,
              "dot4_s8_arm.S loads these offsets");

extern "C" {
void qlstm_arm_cell_update_thumb2(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g, int16_t* cell,
                                  const qlstm_arm_cell_params* p);
void qlstm_arm_hidden_update_thumb2(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
                                    const qlstm_arm_hidden_params* p);
#if defined(__ARM_FEATURE_DSP)
// The same when the right shifts are at least 1 (the hidden one's at most 23, p's requantization
// then as hidden_update_dsp rewrites it).
void qlstm_arm_cell_update_folded(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g, int16_t* cell,
                                  const qlstm_arm_cell_params* p);
void qlstm_arm_hidden_update_folded(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
                                    const qlstm_arm_hidden_params* p);
#endif
}

namespace qlstm {
namespace arm {
namespace {

// The cell and hidden updates in assembly too (about 43 and 41 instructions per unit, where the
// reference's C takes about 61 and 56); arm_dsp's with the folded requantization where the right
// shifts allow (about 36 and 34).
using CellUpdateAsm = void (*)(int32_t, const int16_t*, const int16_t*, const int16_t*, int16_t*,
                               const qlstm_arm_cell_params*);
using HiddenUpdateAsm = void (*)(int32_t, const int16_t*, const int16_t*, int8_t*, const qlstm_arm_hidden_params*);

template <bool kFolded>
void cell_update_of(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                    const int16_t* g_q0_15, int16_t* cell) {
  const qlstm_arm_cell_params ap = {
      requant_params(fxp::RequantDoubleRounding::make(p.forget_times_cell.multiplier, p.forget_times_cell.shift)),
      requant_params(
          fxp::RequantDoubleRounding::make(p.input_times_cell_gate.multiplier, p.input_times_cell_gate.shift)),
      p.clip_min, p.clip_max};
  CellUpdateAsm update = qlstm_arm_cell_update_thumb2;
#if defined(__ARM_FEATURE_DSP)
  if (kFolded && ap.forget_times_cell.right >= 1 && ap.input_times_cell_gate.right >= 1) {
    update = qlstm_arm_cell_update_folded;
  }
#endif
  update(count, f_q0_15, i_q0_15, g_q0_15, cell, &ap);
}

template <bool kFolded>
void hidden_update_of(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                      const int16_t* cell, int8_t* h_out, ptrdiff_t h_row_stride) {
  using namespace detail;
  const int32_t left = p.tanh_left_shift >= 0 ? p.tanh_left_shift : 0;
  const int32_t right = p.tanh_left_shift >= 0 ? 0 : -p.tanh_left_shift;
  qlstm_arm_hidden_params ap = {
      kPrescaleFactor << left,
      right > 0 ? 1 << (right - 1) : 0,
      right,
      kSigmoidTableU16,
      kSigmoidTableU16 + 1,
      requant_params(
          fxp::RequantDoubleRounding::make(p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift)),
      p.output_zero_point};
  HiddenUpdateAsm update = qlstm_arm_hidden_update_thumb2;
#if defined(__ARM_FEATURE_DSP)
  qlstm_arm_requant_params& q = ap.output_times_tanh_cell;
  if (kFolded && q.right >= 1 && q.right <= 23) {
    // The folded requantization's 2^(right-1) + zero point x 2^right (within int32 up to 23),
    // and right - 1, in the fields of right and mask.
    const int32_t r = q.right;
    q.right = q.half + 1 + static_cast<int32_t>(static_cast<uint32_t>(p.output_zero_point) << r);
    q.mask = r - 1;
    update = qlstm_arm_hidden_update_folded;
  }
#endif
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    update(hidden_size, o_q0_15 + base, cell + base, h_out + b * h_row_stride, &ap);
  }
}

struct Thumb2Kernel : Thumb2Dot {
  using Finish = arm::GateFinish;
};

#if defined(__ARM_FEATURE_DSP)
struct DspKernel : DspDot {
  using Finish = arm::GateFinish;
  // x and h sign-extended once per step, the chunks' dot products inlined (blocked/gate_rows.h)
  static constexpr bool kPrepareOncePerStep = true;
};
#endif

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm

// The stages (run by the GRU's r and z gates and the variant tester), and the whole call with the
// gates' finishes built once (blocked/lstm_chunked.h).
extern const LstmS8Variant kLstmS8ArmThumb2Variant =
    blocked::chunked_variant<arm::Thumb2Kernel, arm::cell_update_of<false>, arm::hidden_update_of<false>>(
        "arm_thumb2", arm::is_supported);
#if defined(__ARM_FEATURE_DSP)
extern const LstmS8Variant kLstmS8ArmDspVariant =
    blocked::chunked_variant<arm::DspKernel, arm::cell_update_of<true>, arm::hidden_update_of<true>>(
        "arm_dsp", arm::is_supported);
#endif

}  // namespace qlstm

#endif  // Thumb-2 M-profile
