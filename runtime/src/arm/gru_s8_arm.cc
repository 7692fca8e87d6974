// The Arm M-profile GRU variants (blocked::gru_variant): r and z by the LSTM variant's gate of the
// same name (the assembly dot products and gate finish of lstm_s8_arm.cc), the new gate's two
// matmuls in chunks of rows by the same dot-product blocks (arm/dot_s8_arm.h), its finish, the
// update and the output in assembly (dot4_s8_arm.S), each the reference's arithmetic. The whole
// call (blocked/gru_chunked.h) builds every finish and the update's and output's parameters once.
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD (Cortex-M4, M33, M55)
// (arm_mve: gru_s8_arm_mve.cc.)
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

#include "arm/dot_s8_arm.h"
#include "blocked/gate_rows.h"
#include "blocked/gru_chunked.h"
#include "reference/rnn_s8_reference.h"

// The output's requantization and zero point, in the assembly's load order.
struct qlstm_arm_gru_output_params {
  qlstm_arm_requant_params q;
  int32_t zero_point;
};
extern "C" {
void qlstm_arm_gru_update_thumb2(int32_t count, const int16_t* z, const int16_t* n, int16_t* h,
                                 const qlstm_arm_requant_params* q);
void qlstm_arm_gru_output_thumb2(int32_t count, const int16_t* h, int8_t* y, const qlstm_arm_gru_output_params* p);
// The same with the requantization folded (its right shift at least 1).
void qlstm_arm_gru_update_folded(int32_t count, const int16_t* z, const int16_t* n, int16_t* h,
                                 const qlstm_arm_requant_params* q);
void qlstm_arm_gru_output_folded(int32_t count, const int16_t* h, int8_t* y, const qlstm_arm_gru_output_params* p);
}

namespace qlstm {
namespace arm {
namespace {

fxp::RequantDoubleRounding requant(const qlstm_requant& q) { return fxp::RequantDoubleRounding::make(q.multiplier, q.shift); }

// n = tanh(sat16(sat16(RQ_x(ax)) + RQ_r(r * sat16(RQ_h(ah))))) (docs/arithmetic.md §13), all of
// it in assembly (qlstm_arm_gru_new_gate_finish_thumb2: the LSTM's tanh gate finish with the reset
// product between the recurrent part and the add), the reference's arithmetic row by row. When all
// three right shifts are at least 1, the folded finish (qlstm_arm_gru_new_gate_finish_fast_thumb2:
// three passes, every constant in a register, as the LSTM gate's folded finish).
class NewGateFinish {
 public:
  NewGateFinish(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden) {
    const fxp::RequantDoubleRounding x = requant(g.input_to_q3_12), h = requant(g.hidden_to_q3_12),
                                     r = requant(reset_times_hidden);
    fast_ = x.right >= 1 && h.right >= 1 && r.right >= 1;
    if (fast_) {
      folded_ = {folded_requant_params(x), folded_requant_params(h), folded_requant_params(r), kSigmoidTableU16};
    } else {
      p_ = {{requant_params(x), requant_params(h), kSigmoidTableU16, kSigmoidTableU16 + 1}, requant_params(r)};
    }
  }
  // Reads ah at ax + kChunkRows (the folded one overwrites both).
  void operator()(const int32_t* ax, const int32_t*, int32_t n, const int16_t* reset_q0_15, int16_t* new_q0_15) const {
    if (fast_) {
      qlstm_arm_gru_new_gate_finish_fast_thumb2(const_cast<int32_t*>(ax), n, new_q0_15, &folded_, reset_q0_15);
    } else {
      qlstm_arm_gru_new_gate_finish_thumb2(ax, n, new_q0_15, &p_, reset_q0_15);
    }
  }

 private:
  bool fast_ = false;
  union {
    qlstm_arm_gru_new_gate_finish_params p_;
    qlstm_arm_gru_new_gate_finish_fast_params folded_;
  };
};

// The update and the output in assembly, folded where the right shift is at least 1.
using UpdateAsm = void (*)(int32_t, const int16_t*, const int16_t*, int16_t*, const qlstm_arm_requant_params*);
using OutputAsm = void (*)(int32_t, const int16_t*, int8_t*, const qlstm_arm_gru_output_params*);
UpdateAsm update_asm(const fxp::RequantDoubleRounding& q) {
  return q.right >= 1 ? qlstm_arm_gru_update_folded : qlstm_arm_gru_update_thumb2;
}
OutputAsm output_asm(const fxp::RequantDoubleRounding& q) {
  return q.right >= 1 ? qlstm_arm_gru_output_folded : qlstm_arm_gru_output_thumb2;
}

// A step's update and output in assembly, their parameters and functions chosen once per call.
class UpdateOutput {
 public:
  explicit UpdateOutput(const qlstm_gru_s8_params& p) {
    const fxp::RequantDoubleRounding u = requant(p.update_times_difference_to_q0_15), o = requant(p.hidden_q0_15_to_output);
    update_ = requant_params(u);
    output_ = {requant_params(o), p.output_zero_point};
    update_fn_ = update_asm(u);
    output_fn_ = output_asm(o);
  }
  void operator()(int32_t rows, int32_t hidden_size, const int16_t* update_q0_15, const int16_t* new_q0_15,
                  int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) const {
    update_fn_(rows * hidden_size, update_q0_15, new_q0_15, hidden_q0_15, &update_);
    for (int32_t b = 0; b < rows; ++b) {
      output_fn_(hidden_size, hidden_q0_15 + static_cast<ptrdiff_t>(b) * hidden_size, y + b * y_row_stride, &output_);
    }
  }

 private:
  qlstm_arm_requant_params update_;
  qlstm_arm_gru_output_params output_;
  UpdateAsm update_fn_;
  OutputAsm output_fn_;
};

template <typename Dot>
struct GruKernel : Dot {
  using Finish = GateFinish;
  using NewGateFinish = arm::NewGateFinish;
  using UpdateOutput = arm::UpdateOutput;
};
#if defined(__ARM_FEATURE_DSP)
// x and h sign-extended once per step for r, z and n, the chunks' dot products inlined
// (blocked/gate_rows.h), as the arm_dsp LSTM's.
template <>
struct GruKernel<DspDot> : DspDot {
  using Finish = GateFinish;
  using NewGateFinish = arm::NewGateFinish;
  using UpdateOutput = arm::UpdateOutput;
  static constexpr bool kPrepareOncePerStep = true;
};
#endif

// The update and the output stages, as UpdateOutput runs them (about 21 and 17 instructions per
// unit unfolded, where the portable C takes about 28 and 24).
void update(const qlstm_requant& update_times_difference, int32_t count, const int16_t* update_q0_15,
            const int16_t* new_q0_15, int16_t* hidden_q0_15) {
  const fxp::RequantDoubleRounding u = requant(update_times_difference);
  const qlstm_arm_requant_params q = requant_params(u);
  update_asm(u)(count, update_q0_15, new_q0_15, hidden_q0_15, &q);
}

void output(const qlstm_requant& hidden_to_output, int32_t zero_point, int32_t rows, int32_t hidden_size,
            const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  const fxp::RequantDoubleRounding o = requant(hidden_to_output);
  const qlstm_arm_gru_output_params p = {requant_params(o), zero_point};
  const OutputAsm run = output_asm(o);
  for (int32_t b = 0; b < rows; ++b) {
    run(hidden_size, hidden_q0_15 + static_cast<ptrdiff_t>(b) * hidden_size, y + b * y_row_stride, &p);
  }
}

}  // namespace

// blocked::gru_variant with these stages for the update and the output, and the whole call with
// every finish built once (blocked/gru_chunked.h).
template <const LstmS8Variant& kLstm, typename Dot>
constexpr GruS8Variant gru_variant(const char* name) {
  GruS8Variant v = blocked::gru_variant<kLstm, GruKernel<Dot>>(name);
  v.update = update;
  v.output = output;
  v.sequence = blocked::gru_chunked<GruKernel<Dot>, output>;
  return v;
}

}  // namespace arm

extern const LstmS8Variant kLstmS8ArmThumb2Variant;
extern const GruS8Variant kGruS8ArmThumb2Variant =
    arm::gru_variant<kLstmS8ArmThumb2Variant, arm::Thumb2Dot>("arm_thumb2");
// The RNN's of each ISA: its LSTM's gate, the GRU's output stage above (kernels.h).
extern const RnnS8Variant kRnnS8ArmThumb2Variant = {
    "arm_thumb2", nullptr, nullptr, rnn_reference::lstm_gate_of<kLstmS8ArmThumb2Variant>, arm::output};

#if defined(__ARM_FEATURE_DSP)
extern const LstmS8Variant kLstmS8ArmDspVariant;
extern const GruS8Variant kGruS8ArmDspVariant =
    arm::gru_variant<kLstmS8ArmDspVariant, arm::DspDot>("arm_dsp");
extern const RnnS8Variant kRnnS8ArmDspVariant = {"arm_dsp", nullptr, nullptr,
                                                 rnn_reference::lstm_gate_of<kLstmS8ArmDspVariant>, arm::output};
#endif

}  // namespace qlstm

#endif  // Thumb-2 M-profile
