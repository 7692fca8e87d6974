// Every pooling variant built into this binary and supported by this CPU against the reference
// (runtime/src/pool/pool_s8.cc) with zero tolerance, and the reference against this test's own
// model of the definition (docs/arithmetic.md §17): max and average; channel counts at the block
// widths and their neighbours (1 to 65, 127); windows with padding, strides and clipped edges;
// pooling over a sequence of up to 600 steps (past the 16-bit sums' 256 positions); 0, 1 and 3
// images; values at the int8 ends (sums of -128 over 256 positions); narrow and full clamps; inputs
// one byte off alignment; guard bytes after the output. A variant this CPU lacks returns
// QLSTM_ERROR_UNSUPPORTED when run explicitly and is skipped by name.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"

namespace {

std::vector<const qlstm::PoolS8Variant*> all_pool_variants() {
  size_t n = 0;
  const qlstm::PoolS8Variant* const* all = qlstm::pool_s8_variants(&n);
  return std::vector<const qlstm::PoolS8Variant*>(all, all + n);
}

const int kChannels[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127};
enum class Values { kTypical, kExtreme, kAllMin, kAllMax };

int32_t pick(std::mt19937_64& rng, int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); }

struct PoolCase {
  qlstm_pool_s8_params p{};
  std::vector<int8_t> input_area;  // one byte before the input: unaligned
  const int8_t* input() const { return input_area.data() + 1; }
  size_t output_size() const {
    return static_cast<size_t>(p.batch) * p.output_height * p.output_width * p.channels;
  }
};

int8_t value(std::mt19937_64& rng, Values v) {
  switch (v) {
    case Values::kAllMin: return -128;
    case Values::kAllMax: return 127;
    case Values::kExtreme: return rng() % 2 ? int8_t{127} : int8_t{-128};
    default: return static_cast<int8_t>(pick(rng, -128, 127));
  }
}

// The most output positions whose last window still starts inside the image.
int32_t outputs(int32_t in, int32_t window, int32_t stride, int32_t padding) {
  (void)window;
  return (in - 1 + padding) / stride + 1;
}

void fill(PoolCase& c, std::mt19937_64& rng, Values v) {
  qlstm_pool_s8_params& p = c.p;
  c.input_area.resize(1 + static_cast<size_t>(p.batch) * p.input_height * p.input_width * p.channels);
  for (auto& x : c.input_area) x = value(rng, v);
  if (rng() % 3 == 0) {
    p.activation_min = pick(rng, -128, 127);
    p.activation_max = pick(rng, p.activation_min, 127);
  } else {
    p.activation_min = -128;
    p.activation_max = 127;
  }
}

PoolCase image_case(std::mt19937_64& rng, int kind, int batch, int C, Values v) {
  PoolCase c;
  qlstm_pool_s8_params& p = c.p;
  p.kind = kind;
  p.batch = batch;
  p.channels = C;
  p.input_height = pick(rng, 1, 7);
  p.input_width = pick(rng, 1, 7);
  p.window_height = pick(rng, 1, 4);
  p.window_width = pick(rng, 1, 4);
  p.stride_height = pick(rng, 1, 3);
  p.stride_width = pick(rng, 1, 3);
  p.padding_height = pick(rng, 0, p.window_height - 1);
  p.padding_width = pick(rng, 0, p.window_width - 1);
  p.output_height = outputs(p.input_height, p.window_height, p.stride_height, p.padding_height);
  p.output_width = outputs(p.input_width, p.window_width, p.stride_width, p.padding_width);
  fill(c, rng, v);
  return c;
}

// A sequence of T steps pooled over time, as the program runner calls it (batch-major rows).
PoolCase time_case(std::mt19937_64& rng, int kind, int batch, int T, int C, Values v) {
  PoolCase c;
  qlstm_pool_s8_params& p = c.p;
  p.kind = kind;
  p.batch = batch;
  p.channels = C;
  p.input_height = p.window_height = T;
  p.input_width = p.window_width = 1;
  p.stride_height = p.stride_width = 1;
  p.output_height = p.output_width = 1;
  fill(c, rng, v);
  return c;
}

// The definition, in 64-bit sums and a floor-based rounding independent of the reference's.
std::vector<int8_t> model(const PoolCase& c) {
  const qlstm_pool_s8_params& p = c.p;
  std::vector<int8_t> y;
  for (int n = 0; n < p.batch; ++n) {
    for (int oy = 0; oy < p.output_height; ++oy) {
      for (int ox = 0; ox < p.output_width; ++ox) {
        for (int ch = 0; ch < p.channels; ++ch) {
          long long sum = 0, count = 0;
          int best = -128;
          for (int y = oy * p.stride_height - p.padding_height, k = 0; k < p.window_height; ++k, ++y) {
            for (int x = ox * p.stride_width - p.padding_width, j = 0; j < p.window_width; ++j, ++x) {
              if (y < 0 || y >= p.input_height || x < 0 || x >= p.input_width) continue;
              const int v = c.input()[((static_cast<long long>(n) * p.input_height + y) * p.input_width + x) *
                                          p.channels + ch];
              sum += v;
              ++count;
              best = std::max(best, v);
            }
          }
          // Nearest, halves away from zero: |sum| / count rounded half up, the sign put back.
          const long long mag = (2 * (sum < 0 ? -sum : sum) + count) / (2 * count);
          const long long avg = sum < 0 ? -mag : mag;
          const long long r = p.kind == QLSTM_POOL_MAX ? best : avg;
          y.push_back(static_cast<int8_t>(std::min<long long>(std::max<long long>(r, p.activation_min), p.activation_max)));
        }
      }
    }
  }
  return y;
}

constexpr size_t kGuardBytes = 16;
constexpr int8_t kGuard = 0x5A;

struct PoolRun {
  qlstm_status status;
  std::vector<int8_t> out;
};

PoolRun run(const qlstm::PoolS8Variant& v, const PoolCase& c) {
  PoolRun r;
  r.out.assign(c.output_size() + kGuardBytes, kGuard);
  r.status = qlstm::run_pool_s8(v, &c.p, c.p.batch > 0 ? c.input() : nullptr, c.p.batch > 0 ? r.out.data() : nullptr);
  return r;
}

std::string describe(const qlstm::PoolS8Variant& v, const PoolCase& c) {
  const qlstm_pool_s8_params& p = c.p;
  return std::string(v.name) + (p.kind == QLSTM_POOL_MAX ? " max" : " average") + " batch=" +
         std::to_string(p.batch) + " in " + std::to_string(p.input_height) + "x" + std::to_string(p.input_width) +
         "x" + std::to_string(p.channels) + " window " + std::to_string(p.window_height) + "x" +
         std::to_string(p.window_width) + " stride " + std::to_string(p.stride_height) + "x" +
         std::to_string(p.stride_width) + " pad " + std::to_string(p.padding_height) + "x" +
         std::to_string(p.padding_width) + " clamp [" + std::to_string(p.activation_min) + ", " +
         std::to_string(p.activation_max) + "]";
}

class PoolVariantTest : public ::testing::TestWithParam<const qlstm::PoolS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::PoolS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      std::mt19937_64 rng(1);
      ASSERT_EQ(run(v, time_case(rng, QLSTM_POOL_MAX, 1, 3, 4, Values::kTypical)).status, QLSTM_ERROR_UNSUPPORTED)
          << v.name << " run explicitly on a CPU that lacks it";
      GTEST_SKIP() << "pooling variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
  void check(const PoolCase& c) {
    const std::string what = describe(*GetParam(), c);
    const PoolRun ref = run(qlstm::kPoolS8ReferenceVariant, c);
    const PoolRun got = run(*GetParam(), c);
    ASSERT_EQ(ref.status, QLSTM_OK) << what;
    ASSERT_EQ(got.status, QLSTM_OK) << what;
    std::vector<int8_t> want = model(c);
    want.insert(want.end(), kGuardBytes, kGuard);
    ASSERT_EQ(ref.out, want) << what << ": the reference against the model";
    ASSERT_EQ(got.out, ref.out) << what << ": against the reference (or wrote past the output)";
  }
};

TEST_P(PoolVariantTest, ImagesEveryChannelCountBothKinds) {
  std::mt19937_64 rng(9100);
  for (int C : kChannels) {
    for (int kind : {QLSTM_POOL_MAX, QLSTM_POOL_AVERAGE}) {
      for (int batch : {0, 1, 3}) {
        for (Values v : {Values::kTypical, Values::kExtreme}) {
          check(image_case(rng, kind, batch, C, v));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Over time: T up to 600 steps (the 16-bit sums widen every 256), all -128 and all 127 included.
TEST_P(PoolVariantTest, SequencesOverTime) {
  std::mt19937_64 rng(9200);
  for (int T : {1, 2, 3, 7, 100, 128, 129, 254, 255, 256, 257, 511, 512, 600}) {
    for (int C : {1, 8, 16, 17, 32, 33, 64, 100}) {
      for (int kind : {QLSTM_POOL_MAX, QLSTM_POOL_AVERAGE}) {
        for (Values v : {Values::kTypical, Values::kAllMin, Values::kAllMax}) {
          check(time_case(rng, kind, 2, T, C, v));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// A window larger than 16-bit sums hold at once in both axes (a 20 x 20 window: 400 positions).
TEST_P(PoolVariantTest, LargeWindows) {
  std::mt19937_64 rng(9300);
  for (int C : {8, 16, 32, 40}) {
    for (Values v : {Values::kTypical, Values::kAllMin}) {
      PoolCase c;
      qlstm_pool_s8_params& p = c.p;
      p.kind = QLSTM_POOL_AVERAGE;
      p.batch = 1;
      p.channels = C;
      p.input_height = p.input_width = p.window_height = p.window_width = 20;
      p.stride_height = p.stride_width = 1;
      p.output_height = p.output_width = 1;
      fill(c, rng, v);
      check(c);
      if (HasFatalFailure()) return;
    }
  }
}

std::string variant_name(const ::testing::TestParamInfo<const qlstm::PoolS8Variant*>& info) {
  return info.param->name;
}

INSTANTIATE_TEST_SUITE_P(All, PoolVariantTest, ::testing::ValuesIn(all_pool_variants()), variant_name);

}  // namespace
