// The int8 elementwise add and multiply (docs/arithmetic.md §19): their outputs against the float
// sum and product at the output's scale, in place, and their validation. Bit-exactness with
// CMSIS-NN is the shared vectors' test (cli_op_vectors_elementwise_add / _mul).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qlstm/elementwise_s8.h"

namespace {

// TFLite's QuantizeMultiplier, written here from its definition: x = q x 2^(e - 31), q in [2^30, 2^31).
void quantize_multiplier(double x, int32_t* q, int32_t* e) {
  int exponent = 0;
  int64_t m = std::llround(std::frexp(x, &exponent) * 2147483648.0);
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  *q = static_cast<int32_t>(m);
  *e = exponent;
}

struct Scales {
  double s1, s2, out;
  int32_t z1, z2, zo;
};

// TFLite's int8 ADD preparation (left shift 20, both operands at twice the larger scale).
qlstm_add_s8_params add_params(const Scales& s, int32_t size) {
  qlstm_add_s8_params p{};
  p.shape = {1, size, 0, 0};
  p.input1_zero_point = s.z1;
  p.input2_zero_point = s.z2;
  p.left_shift = 20;
  const double twice_max = 2 * std::max(s.s1, s.s2);
  quantize_multiplier(s.s1 / twice_max, &p.input1_multiplier, &p.input1_shift);
  quantize_multiplier(s.s2 / twice_max, &p.input2_multiplier, &p.input2_shift);
  quantize_multiplier(twice_max / (std::ldexp(1.0, 20) * s.out), &p.output_multiplier, &p.output_shift);
  p.output_zero_point = s.zo;
  p.activation_min = -128;
  p.activation_max = 127;
  return p;
}

qlstm_mul_s8_params mul_params(const Scales& s, int32_t size) {
  qlstm_mul_s8_params p{};
  p.shape = {1, size, 0, 0};
  p.input1_zero_point = s.z1;
  p.input2_zero_point = s.z2;
  quantize_multiplier(s.s1 * s.s2 / s.out, &p.output_multiplier, &p.output_shift);
  p.output_zero_point = s.zo;
  p.activation_min = -128;
  p.activation_max = 127;
  return p;
}

// Random scales and zero points; the output scale near the result's range.
Scales random_scales(bool multiply, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> log_scale(-8, 0);
  std::uniform_int_distribution<int32_t> zp(-30, 30);
  Scales s{std::exp2(log_scale(rng)), std::exp2(log_scale(rng)), 0, zp(rng), zp(rng), zp(rng)};
  s.out = multiply ? s.s1 * s.s2 * 160 * std::exp2(log_scale(rng) / 8) : (s.s1 + s.s2) * std::exp2(log_scale(rng) / 8 + 0.7);
  return s;
}

// Every output is the float sum (product) of the dequantized operands, rounded at the output's
// scale and clamped, unless that value lies near a rounding boundary (then within one step). Near:
// within the first rounding's half unit, 2^(output_shift - 1) steps for a multiply (its product is
// exact), and 1/1000 of a step for an add (its 2^20 headroom keeps the operands' roundings far
// finer).
void expect_float_results(bool multiply) {
  std::mt19937_64 rng(multiply ? 77 : 76);
  std::uniform_int_distribution<int> s8(-128, 127);
  int64_t values = 0, at_boundary = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Scales s = random_scales(multiply, rng);
    const int32_t n = 257;
    std::vector<int8_t> a(n), b(n), y(n);
    for (int32_t i = 0; i < n; ++i) {
      a[i] = static_cast<int8_t>(s8(rng));
      b[i] = static_cast<int8_t>(s8(rng));
    }
    const qlstm_add_s8_params ap = add_params(s, n);
    const qlstm_mul_s8_params mp = mul_params(s, n);
    ASSERT_EQ(multiply ? qlstm_mul_s8(&mp, a.data(), b.data(), y.data()) : qlstm_add_s8(&ap, a.data(), b.data(), y.data()),
              QLSTM_OK);
    for (int32_t i = 0; i < n; ++i) {
      const double x1 = s.s1 * (a[i] - s.z1), x2 = s.s2 * (b[i] - s.z2);
      const double real = (multiply ? x1 * x2 : x1 + x2) / s.out + s.zo;
      const double nearest = std::min(127.0, std::max(-128.0, std::round(real)));
      ++values;
      if (y[i] == nearest) continue;
      const double frac = real - std::floor(real);
      const double near = multiply ? std::ldexp(1.0, mp.output_shift - 1) + 1e-9 : 1e-3;
      ASSERT_LE(std::fabs(frac - 0.5), near) << "trial " << trial << " i " << i << ": " << int{y[i]} << " for " << real;
      ASSERT_LE(std::fabs(y[i] - nearest), 1.0);
      ++at_boundary;
    }
  }
  std::printf("%s: %lld values, %lld off the nearest (each at a rounding boundary)\n", multiply ? "mul" : "add",
              static_cast<long long>(values), static_cast<long long>(at_boundary));
}

TEST(ElementwiseS8, AddIsTheRoundedFloatSum) { expect_float_results(false); }
TEST(ElementwiseS8, MulIsTheRoundedFloatProduct) { expect_float_results(true); }

// The output may be either operand: each value is read before it is written.
TEST(ElementwiseS8, InPlaceEqualsOutOfPlace) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> s8(-128, 127);
  const int32_t n = 100;
  std::vector<int8_t> a(n), b(n);
  for (int32_t i = 0; i < n; ++i) {
    a[i] = static_cast<int8_t>(s8(rng));
    b[i] = static_cast<int8_t>(s8(rng));
  }
  const Scales s = random_scales(false, rng);
  const qlstm_add_s8_params ap = add_params(s, n);
  const qlstm_mul_s8_params mp = mul_params(random_scales(true, rng), n);
  std::vector<int8_t> sum(n), product(n);
  ASSERT_EQ(qlstm_add_s8(&ap, a.data(), b.data(), sum.data()), QLSTM_OK);
  ASSERT_EQ(qlstm_mul_s8(&mp, a.data(), b.data(), product.data()), QLSTM_OK);
  std::vector<int8_t> in_a = a, in_b = b;
  ASSERT_EQ(qlstm_add_s8(&ap, in_a.data(), b.data(), in_a.data()), QLSTM_OK);
  ASSERT_EQ(qlstm_mul_s8(&mp, a.data(), in_b.data(), in_b.data()), QLSTM_OK);
  EXPECT_EQ(in_a, sum);
  EXPECT_EQ(in_b, product);
}

// Extreme parameters the validation lets through run without overflow (UBSan's build checks it)
// and stay within the clamp.
TEST(ElementwiseS8, ExtremeParametersStayWithinTheClamp) {
  const int8_t a[] = {-128, 127, 0, -1}, b[] = {127, -128, 0, 1};
  int8_t y[4];
  qlstm_add_s8_params ap = add_params({1, 1, 1, 127, -128, 127}, 4);
  ap.left_shift = QLSTM_ADD_S8_LEFT_SHIFT_MAX;
  ap.input1_multiplier = ap.input2_multiplier = ap.output_multiplier = INT32_MAX;
  ap.input1_shift = ap.input2_shift = ap.output_shift = 31;
  ap.activation_min = -5;
  ap.activation_max = 9;
  ASSERT_EQ(qlstm_add_s8(&ap, a, b, y), QLSTM_OK);
  for (const int8_t v : y) EXPECT_TRUE(v >= -5 && v <= 9) << int{v};
  qlstm_mul_s8_params mp = mul_params({1, 1, 1, -128, 127, -128}, 4);
  mp.output_multiplier = INT32_MAX;
  mp.output_shift = 31;
  ASSERT_EQ(qlstm_mul_s8(&mp, a, b, y), QLSTM_OK);
  for (const int8_t v : y) EXPECT_TRUE(v >= -128 && v <= 127);
}

std::string verdict_add(const qlstm_add_s8_params& p) {
  const char* field = nullptr;
  const qlstm_status st = qlstm_add_s8_validate(&p, &field);
  return st == QLSTM_OK ? "ok" : std::string(qlstm_status_string(st)) + " " + (field ? field : "null");
}
std::string verdict_mul(const qlstm_mul_s8_params& p) {
  const char* field = nullptr;
  const qlstm_status st = qlstm_mul_s8_validate(&p, &field);
  return st == QLSTM_OK ? "ok" : std::string(qlstm_status_string(st)) + " " + (field ? field : "null");
}
std::string bad(qlstm_status st, const char* field) { return std::string(qlstm_status_string(st)) + " " + field; }

TEST(ElementwiseS8, ValidationNamesEachField) {
  const qlstm_add_s8_params good_add = add_params({0.1, 0.05, 0.2, 1, 2, 3}, 8);
  const qlstm_mul_s8_params good_mul = mul_params({0.1, 0.05, 0.2, 1, 2, 3}, 8);
  ASSERT_EQ(verdict_add(good_add), "ok");
  ASSERT_EQ(verdict_mul(good_mul), "ok");
  struct AddCase {
    std::function<void(qlstm_add_s8_params&)> mutate;
    std::string expected;
  };
  const AddCase add_cases[] = {
      {[](auto& p) { p.shape.rows = -1; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.rows")},
      {[](auto& p) { p.shape.row_size = 0; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.row_size")},
      {[](auto& p) { p.shape.rows = 1 << 20; p.shape.row_size = 1 << 12; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.rows")},
      {[](auto& p) { p.shape.input1_offset = -1; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.input1_offset")},
      {[](auto& p) { p.shape.input2_offset = -1; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.input2_offset")},
      {[](auto& p) { p.left_shift = QLSTM_ADD_S8_LEFT_SHIFT_MAX + 1; }, bad(QLSTM_ERROR_BAD_SHIFT, "left_shift")},
      {[](auto& p) { p.left_shift = -1; }, bad(QLSTM_ERROR_BAD_SHIFT, "left_shift")},
      {[](auto& p) { p.input1_multiplier = -1; }, bad(QLSTM_ERROR_BAD_MULTIPLIER, "input1_multiplier")},
      {[](auto& p) { p.input1_shift = 32; }, bad(QLSTM_ERROR_BAD_SHIFT, "input1_shift")},
      {[](auto& p) { p.input2_multiplier = -1; }, bad(QLSTM_ERROR_BAD_MULTIPLIER, "input2_multiplier")},
      {[](auto& p) { p.input2_shift = -32; }, bad(QLSTM_ERROR_BAD_SHIFT, "input2_shift")},
      {[](auto& p) { p.input1_zero_point = 128; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "input1_zero_point")},
      {[](auto& p) { p.input2_zero_point = -129; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "input2_zero_point")},
      {[](auto& p) { p.output_zero_point = 200; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point")},
      {[](auto& p) { p.activation_min = -129; }, bad(QLSTM_ERROR_BAD_DIMS, "activation_min")},
      {[](auto& p) { p.activation_max = p.activation_min - 1; }, bad(QLSTM_ERROR_BAD_DIMS, "activation_max")},
      {[](auto& p) { p.output_multiplier = -1; }, bad(QLSTM_ERROR_BAD_MULTIPLIER, "output_multiplier")},
      {[](auto& p) { p.output_shift = 32; }, bad(QLSTM_ERROR_BAD_SHIFT, "output_shift")},
  };
  for (const AddCase& c : add_cases) {
    qlstm_add_s8_params p = good_add;
    c.mutate(p);
    EXPECT_EQ(verdict_add(p), c.expected);
  }
  struct MulCase {
    std::function<void(qlstm_mul_s8_params&)> mutate;
    std::string expected;
  };
  const MulCase mul_cases[] = {
      {[](auto& p) { p.shape.row_size = -3; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.row_size")},
      {[](auto& p) { p.shape.input2_offset = -1; }, bad(QLSTM_ERROR_BAD_DIMS, "shape.input2_offset")},
      {[](auto& p) { p.input1_zero_point = 128; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "input1_zero_point")},
      {[](auto& p) { p.input2_zero_point = 128; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "input2_zero_point")},
      {[](auto& p) { p.output_zero_point = -129; }, bad(QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point")},
      {[](auto& p) { p.activation_max = 128; }, bad(QLSTM_ERROR_BAD_DIMS, "activation_max")},
      {[](auto& p) { p.output_multiplier = -5; }, bad(QLSTM_ERROR_BAD_MULTIPLIER, "output_multiplier")},
      {[](auto& p) { p.output_shift = -32; }, bad(QLSTM_ERROR_BAD_SHIFT, "output_shift")},
  };
  for (const MulCase& c : mul_cases) {
    qlstm_mul_s8_params p = good_mul;
    c.mutate(p);
    EXPECT_EQ(verdict_mul(p), c.expected);
  }
  // NULL params and operands; no rows need none.
  int8_t v[8] = {};
  EXPECT_EQ(qlstm_add_s8_validate(nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_mul_s8(nullptr, v, v, v), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_add_s8(&good_add, nullptr, v, v), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_mul_s8(&good_mul, v, nullptr, v), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_add_s8(&good_add, v, v, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_add_s8_params none = good_add;
  none.shape.rows = 0;
  EXPECT_EQ(qlstm_add_s8(&none, nullptr, nullptr, nullptr), QLSTM_OK);
}

}  // namespace
