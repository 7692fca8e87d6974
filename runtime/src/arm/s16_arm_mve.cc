// "arm_mve" for the 16x8 kernels (Cortex-M55 with Helium): eight int16 x int8 products per
// VMLALDAVA, the weights sign-extended to int16 lanes by their load (VLDRB.S16), accumulated in
// 64 bits from the row's int64 bias on: exactly the reference's int64 sum (docs/arithmetic.md
// §14) with no range condition (CMSIS-NN's Helium path loads the bias into 32 bits). Four weight
// rows per pass over x, the last columns in one tail-predicated pass. Rows of at most
// blocked::kS16ColumnsPer32BitSum columns (every shape of the tables) take arm/s16_dots_arm.S's
// block loop instead: 32-bit sums by VMLADAVA (no overflow at that length), then the int64 bias.
// The gate's per-row arithmetic is arm/s16_finish_arm.h's, the FC's the reference's
// (blocked/rows_s16.h); the cell update is the int8 arm_mve variant's, the hidden update in four
// int32 lanes (arm/mve_s8.h's hidden_update_lanes) storing int16.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>

#include "arm/mve_s8.h"
#include "arm/s16_finish_arm.h"
#include "blocked/rows_s16.h"
#include "reference/lstm_s16_reference.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmMveVariant;

extern "C" void qlstm_arm_s16_rows4_mve(const int16_t* x, const int8_t* w, int32_t n, int32_t blocks,
                                        const int64_t* bias, int64_t* acc);  // arm/s16_dots_arm.S

namespace arm_mve_s16 {
namespace {

constexpr int32_t kLanes = 8;  // int16 lanes

struct MveS16 {
  using Operand = blocked::PlainS16Operand;

  static void rows4(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias, int64_t* acc) {
    if (n <= blocked::kS16ColumnsPer32BitSum) {
      rows4_short(x, w, n, blocks, bias, acc);
    } else {
      rows4_long(x, w, n, blocks, bias, acc);
    }
  }

  // Rows of at most kS16ColumnsPer32BitSum columns: 32-bit sums (VMLADAVA) by the assembly block
  // loop (arm/s16_dots_arm.S), four core registers instead of eight, then the int64 bias.
  static void rows4_short(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias,
                          int64_t* acc) {
    qlstm_arm_s16_rows4_mve(x.v, w, n, blocks, bias, acc);
  }

  // Longer rows: 64-bit sums from the bias on.
  static void rows4_long(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias,
                         int64_t* acc) {
    for (int32_t blk = 0; blk < blocks; ++blk) {
      const int8_t* w0 = w;
      const int8_t* w1 = w0 + n;
      const int8_t* w2 = w1 + n;
      const int8_t* w3 = w2 + n;
      int64_t a0 = bias[0], a1 = bias[1], a2 = bias[2], a3 = bias[3];
      int32_t j = 0;
      for (; j + kLanes <= n; j += kLanes) {
        const int16x8_t xv = vldrhq_s16(x.v + j);
        a0 = vmlaldavaq_s16(a0, xv, vldrbq_s16(w0 + j));
        a1 = vmlaldavaq_s16(a1, xv, vldrbq_s16(w1 + j));
        a2 = vmlaldavaq_s16(a2, xv, vldrbq_s16(w2 + j));
        a3 = vmlaldavaq_s16(a3, xv, vldrbq_s16(w3 + j));
      }
      if (j < n) {
        const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n - j));
        const int16x8_t xv = vldrhq_z_s16(x.v + j, p);
        a0 = vmlaldavaq_p_s16(a0, xv, vldrbq_z_s16(w0 + j, p), p);
        a1 = vmlaldavaq_p_s16(a1, xv, vldrbq_z_s16(w1 + j, p), p);
        a2 = vmlaldavaq_p_s16(a2, xv, vldrbq_z_s16(w2 + j, p), p);
        a3 = vmlaldavaq_p_s16(a3, xv, vldrbq_z_s16(w3 + j, p), p);
      }
      acc[0] = a0;
      acc[1] = a1;
      acc[2] = a2;
      acc[3] = a3;
      w += static_cast<ptrdiff_t>(blocked::kRowsPerPass) * n;
      bias += blocked::kRowsPerPass;
      acc += blocked::kRowsPerPass;
    }
  }

  static int64_t dot1(const Operand& x, const int8_t* w, int32_t n, int64_t acc) {
    for (int32_t j = 0; j < n; j += kLanes) {
      const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n - j));
      acc = vmlaldavaq_p_s16(acc, vldrhq_z_s16(x.v + j, p), vldrbq_z_s16(w + j, p), p);
    }
    return acc;
  }
};

}  // namespace
}  // namespace arm_mve_s16

extern const LstmS16Variant kLstmS16ArmMveVariant =
    blocked::lstm_s16_variant<arm_mve_s16::MveS16, kLstmS8ArmMveVariant, arm_mve::hidden_update_lanes<int16_t>,
                              arm_s16::GateFinish>("arm_mve");
extern const FcS16Variant kFcS16ArmMveVariant = blocked::fc_s16_variant<arm_mve_s16::MveS16>("arm_mve");

}  // namespace qlstm

#endif  // MVE
