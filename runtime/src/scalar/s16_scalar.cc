// "scalar": the 16x8 kernels' portable blocked variant (blocked/rows_s16.h), any CPU: four weight
// rows per pass over x, each row's products summed in 32 bits over at most
// kS16ColumnsPer32BitSum columns and then added into its int64 accumulator, as the DSP variant does
// with SMLAD (arm/s16_arm.cc).
#include "blocked/rows_s16.h"
#include "reference/lstm_s16_reference.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ScalarVariant;

namespace {

struct ScalarS16 {
  using Operand = blocked::PlainS16Operand;
  static void rows4(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias, int64_t* acc) {
    for (int32_t blk = 0; blk < blocks; ++blk) {
      const int8_t* w0 = w + static_cast<ptrdiff_t>(blk) * blocked::kRowsPerPass * n;
      int64_t a[blocked::kRowsPerPass];
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) a[k] = bias[k];
      for (int32_t j0 = 0; j0 < n; j0 += blocked::kS16ColumnsPer32BitSum) {
        const int32_t end = n - j0 < blocked::kS16ColumnsPer32BitSum ? n : j0 + blocked::kS16ColumnsPer32BitSum;
        int32_t s[blocked::kRowsPerPass] = {0, 0, 0, 0};
        for (int32_t j = j0; j < end; ++j) {
          const int32_t v = x.v[j];
          for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) s[k] += v * w0[static_cast<ptrdiff_t>(k) * n + j];
        }
        for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) a[k] = fxp::wrapping_add_s64(a[k], s[k]);
      }
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) acc[k] = a[k];
      bias += blocked::kRowsPerPass;
      acc += blocked::kRowsPerPass;
    }
  }
  static int64_t dot1(const Operand& x, const int8_t* w, int32_t n, int64_t acc) {
    return s16::dot_plus_bias(x.v, w, n, acc);
  }
};

}  // namespace

extern const LstmS16Variant kLstmS16ScalarVariant =
    blocked::lstm_s16_variant<ScalarS16, kLstmS8ScalarVariant>("scalar");
extern const FcS16Variant kFcS16ScalarVariant = blocked::fc_s16_variant<ScalarS16>("scalar");

}  // namespace qlstm
