// Every elementwise add and multiply variant built into this binary and supported by this CPU
// against its reference (runtime/src/elementwise/elementwise_s8.cc) with zero tolerance, and the
// reference against this test's own model of the definition in 64-bit arithmetic
// (docs/arithmetic.md §19): parameters as TFLite prepares them from random scales and zero points,
// the output's in the band a calibration gives (which every optimized variant must run), and raw
// random parameters (which a variant may decline, then the reference runs them); lengths at the vector widths and their neighbours (0 to
// 67, 127, 128, 1000) as rows x row_size; values at the int8 ends; narrow and full clamps; inputs
// one byte off alignment; the output over either input (in place); guard bytes after the output.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"

namespace {

int32_t pick(std::mt19937_64& rng, int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); }

// The model: SRDHM and RDBPOT written from their definitions in 64-bit integers.
int64_t srdhm(int64_t a, int64_t b) {
  const int64_t ab = a * b;
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  return (ab + nudge) / (int64_t{1} << 31);  // C division truncates toward zero
}
int64_t rdbpot(int64_t x, int32_t e) {
  if (e == 0) return x;
  const int64_t d = int64_t{1} << e;
  const int64_t q = x >= 0 ? (x + d / 2) / d : -((-x + d / 2) / d);  // half away from zero
  return q;
}
int64_t rq(int64_t x, int32_t m, int32_t s) {
  const int64_t shifted = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(x) << (s > 0 ? s : 0)));
  return rdbpot(srdhm(shifted, m), s > 0 ? 0 : -s);
}
int8_t clamp8(int64_t v, int32_t lo, int32_t hi) { return static_cast<int8_t>(v < lo ? lo : v > hi ? hi : v); }

int8_t model_add(const qlstm_add_s8_params& p, int8_t a, int8_t b) {
  const int64_t a1 = rq((a - p.input1_zero_point) * (int64_t{1} << p.left_shift), p.input1_multiplier, p.input1_shift);
  const int64_t a2 = rq((b - p.input2_zero_point) * (int64_t{1} << p.left_shift), p.input2_multiplier, p.input2_shift);
  return clamp8(rq(a1 + a2, p.output_multiplier, p.output_shift) + p.output_zero_point, p.activation_min, p.activation_max);
}
int8_t model_mul(const qlstm_mul_s8_params& p, int8_t a, int8_t b) {
  const int64_t product = static_cast<int64_t>(a - p.input1_zero_point) * (b - p.input2_zero_point);
  return clamp8(rq(product, p.output_multiplier, p.output_shift) + p.output_zero_point, p.activation_min,
                p.activation_max);
}

// TFLite's QuantizeMultiplier: a real in (0, 1) or above as a Q0.31 multiplier and a shift.
void quantize(double real, int32_t* m, int32_t* s) {
  int e = 0;
  const double q = std::frexp(real, &e);
  int64_t qm = static_cast<int64_t>(std::round(q * (int64_t{1} << 31)));
  if (qm == (int64_t{1} << 31)) {
    qm /= 2;
    ++e;
  }
  *m = static_cast<int32_t>(qm);
  *s = e;
}

double scale(std::mt19937_64& rng) { return std::ldexp(1.0, pick(rng, -12, 2)) * std::uniform_real_distribution<double>(0.5, 1.0)(rng); }

void clamp_range(std::mt19937_64& rng, int32_t* lo, int32_t* hi) {
  *lo = -128;
  *hi = 127;
  if (rng() % 3 == 0) {
    *lo = pick(rng, -128, 127);
    *hi = pick(rng, *lo, 127);
  }
}

// TFLite's preparation (the compiler's derive_add / derive_mul), or raw random fields.
// The zero points and the clamp, as the add and the multiply both have them.
template <class P>
P with_zero_points_and_clamp(std::mt19937_64& rng) {
  P p{};
  p.input1_zero_point = pick(rng, -128, 127);
  p.input2_zero_point = pick(rng, -128, 127);
  p.output_zero_point = pick(rng, -128, 127);
  clamp_range(rng, &p.activation_min, &p.activation_max);
  return p;
}

qlstm_add_s8_params add_params(std::mt19937_64& rng, bool tflite) {
  qlstm_add_s8_params p = with_zero_points_and_clamp<qlstm_add_s8_params>(rng);
  if (tflite) {
    // The sum's scale as a calibration gives it: from half the larger operand's to twice the two.
    const double s1 = scale(rng), s2 = rng() % 4 == 0 ? s1 : scale(rng);
    const double so = std::uniform_real_distribution<double>(0.5 * std::max(s1, s2), 2 * (s1 + s2))(rng);
    const double twice_max = 2 * std::max(s1, s2);
    p.left_shift = 20;
    quantize(s1 / twice_max, &p.input1_multiplier, &p.input1_shift);
    quantize(s2 / twice_max, &p.input2_multiplier, &p.input2_shift);
    quantize(twice_max / (std::ldexp(1.0, 20) * so), &p.output_multiplier, &p.output_shift);
  } else {
    p.left_shift = pick(rng, 0, QLSTM_ADD_S8_LEFT_SHIFT_MAX);
    constexpr int32_t kOneHalfQ0_31 = 1 << 30;  // TFLite's multiplier of the larger-scale operand
    p.input1_multiplier = rng() % 2 ? kOneHalfQ0_31 : pick(rng, 0, INT32_MAX);
    p.input2_multiplier = rng() % 2 ? kOneHalfQ0_31 : pick(rng, 0, INT32_MAX);
    p.input1_shift = pick(rng, -31, 1);
    p.input2_shift = pick(rng, -31, 1);
    p.output_multiplier = pick(rng, 0, INT32_MAX);
    p.output_shift = pick(rng, -31, 2);
  }
  return p;
}

qlstm_mul_s8_params mul_params(std::mt19937_64& rng, bool tflite) {
  qlstm_mul_s8_params p = with_zero_points_and_clamp<qlstm_mul_s8_params>(rng);
  if (tflite) {
    // s1 s2 / s_out, the product's scale from 2^-4 to 2^12 times the operands' (its range is theirs).
    const double real = 1.0 / std::ldexp(std::uniform_real_distribution<double>(1.0, 2.0)(rng), pick(rng, -4, 11));
    quantize(real, &p.output_multiplier, &p.output_shift);
  } else {
    p.output_multiplier = pick(rng, 0, INT32_MAX);
    p.output_shift = pick(rng, -31, 16);
  }
  return p;
}

const int32_t kLengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 67, 127, 128, 1000};

int8_t value(std::mt19937_64& rng, int extremes) {
  if (extremes && rng() % 2) return rng() % 2 ? int8_t{127} : int8_t{-128};
  return static_cast<int8_t>(pick(rng, -128, 127));
}

// One case: every variant against the reference, the reference against the model; returns the
// variants that declined it.
template <class P, class Variant>
void check_case(const char* kind, const P& p, const Variant* const* all, size_t n_variants, std::mt19937_64& rng,
                qlstm_status (*run)(const Variant&, const P*, const int8_t*, const int8_t*, int8_t*),
                int8_t (*model)(const P&, int8_t, int8_t), const Variant& reference, bool must_run, int* declined) {
  const size_t n = static_cast<size_t>(p.shape.rows) * static_cast<size_t>(p.shape.row_size);
  const int extremes = static_cast<int>(rng() % 2);
  std::vector<int8_t> a(n + 1), b(n + 1);  // one byte before each operand: unaligned
  for (auto& v : a) v = value(rng, extremes);
  for (auto& v : b) v = value(rng, extremes);
  constexpr size_t kGuard = 16;
  std::vector<int8_t> want(n + kGuard, 0x5A);
  ASSERT_EQ(run(reference, &p, a.data() + 1, b.data() + 1, want.data()), QLSTM_OK);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(want[i], model(p, a[i + 1], b[i + 1])) << kind << " reference vs the model at " << i;
  }
  for (size_t v = 0; v < n_variants; ++v) {
    const Variant& var = *all[v];
    if (var.is_supported != nullptr && !var.is_supported()) continue;
    std::vector<int8_t> got(n + kGuard, 0x5A);
    const qlstm_status st = run(var, &p, a.data() + 1, b.data() + 1, got.data());
    if (st == QLSTM_ERROR_NO_VARIANT) {
      EXPECT_FALSE(must_run) << kind << " variant " << var.name << " declined TFLite's parameters";
      ++*declined;
      continue;
    }
    ASSERT_EQ(st, QLSTM_OK) << var.name;
    ASSERT_EQ(got, want) << kind << " variant " << var.name << ", " << n << " values";
    // In place over either operand.
    for (int operand = 0; operand < 2; ++operand) {
      std::vector<int8_t> x = operand == 0 ? a : b;
      const int8_t* other = operand == 0 ? b.data() + 1 : a.data() + 1;
      ASSERT_EQ(operand == 0 ? run(var, &p, x.data() + 1, other, x.data() + 1) : run(var, &p, other, x.data() + 1, x.data() + 1),
                QLSTM_OK);
      ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(n), x.begin() + 1))
          << kind << " variant " << var.name << " in place over operand " << operand + 1;
    }
  }
}

template <class P, class Variant>
void run_all(const char* kind, const Variant* const* (*list)(size_t*), P (*make)(std::mt19937_64&, bool),
             qlstm_status (*run)(const Variant&, const P*, const int8_t*, const int8_t*, int8_t*),
             int8_t (*model)(const P&, int8_t, int8_t), const Variant& reference, uint64_t seed) {
  size_t n_variants = 0;
  const Variant* const* all = list(&n_variants);
  std::mt19937_64 rng(seed);
  int cases = 0, declined = 0, raw_declined = 0;
  for (bool tflite : {true, false}) {
    for (int32_t length : kLengths) {
      for (int rep = 0; rep < 24; ++rep) {
        P p = make(rng, tflite);
        const int32_t row_size = length == 0 ? 1 : (rep % 3 == 0 ? length : (rep % 3 == 1 ? 1 : std::max(1, length / 4)));
        p.shape = {length == 0 ? 0 : length / row_size, row_size, 0, 0};
        p.shape.row_size = length == 0 ? 1 : row_size;
        if (length != 0 && p.shape.rows * p.shape.row_size != length) p.shape = {length, 1, 0, 0};
        ASSERT_EQ(p.shape.rows * p.shape.row_size, length);
        check_case(kind, p, all, n_variants, rng, run, model, reference, tflite, tflite ? &declined : &raw_declined);
        if (::testing::Test::HasFatalFailure()) return;
        ++cases;
      }
    }
  }
  std::printf("%s: %d cases x %zu variants, %d raw-parameter runs declined (then the reference's)\n", kind, cases,
              n_variants, raw_declined);
  EXPECT_EQ(declined, 0);
}

TEST(ElementwiseVariants, AddEveryVariantEqualsTheReference) {
  run_all<qlstm_add_s8_params, qlstm::AddS8Variant>("add", qlstm::add_s8_variants, add_params, qlstm::run_add_s8,
                                                    model_add, qlstm::kAddS8ReferenceVariant, 61);
}

TEST(ElementwiseVariants, MulEveryVariantEqualsTheReference) {
  run_all<qlstm_mul_s8_params, qlstm::MulS8Variant>("mul", qlstm::mul_s8_variants, mul_params, qlstm::run_mul_s8,
                                                    model_mul, qlstm::kMulS8ReferenceVariant, 62);
}

// Every variant of each list is named, the reference last and running every call.
TEST(ElementwiseVariants, ListsEndWithTheReference) {
  size_t n = 0;
  const qlstm::AddS8Variant* const* add = qlstm::add_s8_variants(&n);
  ASSERT_GE(n, 2u);
  EXPECT_EQ(add[n - 1], &qlstm::kAddS8ReferenceVariant);
  const qlstm::MulS8Variant* const* mul = qlstm::mul_s8_variants(&n);
  ASSERT_GE(n, 2u);
  EXPECT_EQ(mul[n - 1], &qlstm::kMulS8ReferenceVariant);
  for (size_t k = 0; k + 1 < n; ++k) EXPECT_NE(std::string(mul[k]->name), "reference");
}

}  // namespace
