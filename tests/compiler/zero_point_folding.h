// The zero-point folding identity of docs/arithmetic.md §1, checked on one derived gate (LSTM or
// GRU) over random int8 operands.
#ifndef QLSTM_TESTS_COMPILER_ZERO_POINT_FOLDING_H_
#define QLSTM_TESTS_COMPILER_ZERO_POINT_FOLDING_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/compiler/lower/derive.h"

namespace testing_support {

// For every row r and `trials` random x, h: Σ(x − zp_x)·W_x + bias_x[r] = Σ x·W_x +
// input_effective_bias[r] and Σ(h − zp_h)·W_h + bias_h[r] = Σ h·W_h + hidden_effective_bias[r],
// with bias_x / bias_h the quantized biases each side carries (computed by the caller).
inline void expect_zero_point_folding(const qlstm::compiler::DerivedGate& dg, int32_t I, int32_t H,
                                      const qlstm::compiler::AffineQuant& in, const qlstm::compiler::AffineQuant& out,
                                      const std::vector<int64_t>& bias_x, const std::vector<int64_t>& bias_h,
                                      std::mt19937_64& rng, int trials = 50) {
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<int8_t> x(static_cast<size_t>(I)), h(static_cast<size_t>(H));
    for (auto& v : x) v = static_cast<int8_t>(rng());
    for (auto& v : h) v = static_cast<int8_t>(rng());
    for (int r = 0; r < H; ++r) {
      int64_t with_zp = bias_x[r], folded = dg.input_effective_bias[r];
      int64_t h_with_zp = bias_h[r], h_folded = dg.hidden_effective_bias[r];
      for (int j = 0; j < I; ++j) {
        with_zp += (x[j] - in.zero_point) * dg.w_x[r * I + j];
        folded += x[j] * dg.w_x[r * I + j];
      }
      for (int j = 0; j < H; ++j) {
        h_with_zp += (h[j] - out.zero_point) * dg.w_h[r * H + j];
        h_folded += h[j] * dg.w_h[r * H + j];
      }
      ASSERT_EQ(with_zp, folded) << "row " << r;
      ASSERT_EQ(h_with_zp, h_folded) << "row " << r;
    }
  }
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_COMPILER_ZERO_POINT_FOLDING_H_
