// Time direction and strided output, for every variant built in: a reverse call equals a forward
// call on the time-reversed sequence with its output reversed back (stateless and from a random
// state, final state included); output_width > H writes the dense result's rows in place and
// touches nothing else, so two directions fill the halves of one [..][2H] output. Each call goes
// through dispatch over [variant, reference], as qlstm_lstm_s8() would: a call the variant
// declines (can_run) runs on the reference, and the count of those is printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;

size_t position(bool time_major, int B, int T, int b, int t) {
  return time_major ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t;
}

// x with its time axis reversed ([B][T][W] or [T][B][W]).
template <typename V>
std::vector<V> reverse_time(const std::vector<V>& x, bool time_major, int B, int T, int W) {
  std::vector<V> y(x.size());
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const size_t from = position(time_major, B, T, b, t) * W;
      const size_t to = position(time_major, B, T, b, T - 1 - t) * W;
      for (int w = 0; w < W; ++w) y[to + w] = x[from + w];
    }
  }
  return y;
}

int g_declined = 0;  // calls the variant under test declined since the last report

struct CallResult {
  std::vector<int8_t> out, hidden;
  std::vector<int16_t> cell;
};

// One call with `variant`; a non-empty hidden0 makes it stateful. `out` starts as `canvas`.
CallResult run(const qlstm::LstmS8Variant& variant, const qlstm_lstm_s8_params& p, const std::vector<int8_t>& x,
        const std::vector<int8_t>& hidden0, const std::vector<int16_t>& cell0, std::vector<int8_t> canvas,
        ptrdiff_t out_offset = 0) {
  testing_support::ScratchBuffer scratch(p.dims);
  CallResult r{std::move(canvas), hidden0, cell0};
  const size_t BH = static_cast<size_t>(p.dims.batch) * p.dims.hidden_size;
  if (r.cell.empty()) r.cell.assign(BH, 0);
  qlstm_lstm_s8_context ctx = scratch.context(r.cell.data(), r.hidden.empty() ? nullptr : r.hidden.data());
  const qlstm::LstmS8Variant* const table[] = {&variant, &qlstm::lstm_s8_reference_variant()};
  if (qlstm::select_lstm_s8_variant(table, 2, p) != &variant) ++g_declined;
  EXPECT_EQ(qlstm::run_lstm_s8_dispatch(table, 2, &p, &ctx, x.data(), r.out.data() + out_offset), QLSTM_OK)
      << variant.name;
  return r;
}

// The variants this CPU supports; one it lacks is named on the output.
std::vector<const qlstm::LstmS8Variant*> runnable_variants() {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  std::vector<const qlstm::LstmS8Variant*> v;
  for (size_t k = 0; k < n; ++k) {
    if (all[k]->is_supported == nullptr || all[k]->is_supported()) {
      v.push_back(all[k]);
    } else {
      std::printf("variant %s: not supported on this CPU, not tested\n", all[k]->name);
    }
  }
  return v;
}

void report_declined(const qlstm::LstmS8Variant& variant) {
  if (g_declined > 0) {
    std::printf("variant %s declined %d calls (can_run); the reference ran them\n", variant.name, g_declined);
  }
  g_declined = 0;
}

TEST(TimeDirection, ReverseEqualsForwardOnReversedTime) {
  std::mt19937_64 rng(4242);
  for (const qlstm::LstmS8Variant* variant : runnable_variants()) {
    for (int k = 0; k < 60; ++k) {
      const int B = 1 + static_cast<int>(rng() % 3), T = static_cast<int>(rng() % 20);
      const int I = 1 + static_cast<int>(rng() % 40), H = 1 + static_cast<int>(rng() % 40);
      const bool tm = rng() % 2 == 0;
      RandomLstm l;
      make_random_lstm(l, rng, {B, T, I, H}, tm, static_cast<Regime>(k % 3));
      const size_t BH = static_cast<size_t>(B * H);
      std::vector<int8_t> hidden0;
      std::vector<int16_t> cell0;
      if (k % 2 == 1) {  // stateful from a random state
        hidden0.resize(BH);
        cell0.resize(BH);
        for (auto& h : hidden0) h = static_cast<int8_t>(rng());
        for (auto& c : cell0) c = static_cast<int16_t>(rng());
      }
      const std::vector<int8_t> canvas(BH * static_cast<size_t>(T), 0);
      qlstm_lstm_s8_params rev = l.params;
      rev.time_direction = QLSTM_TIME_REVERSE;
      const CallResult got = run(*variant, rev, l.input, hidden0, cell0, canvas);
      const CallResult fwd = run(*variant, l.params, reverse_time(l.input, tm, B, T, I), hidden0, cell0, canvas);
      const std::string where = std::string(variant->name) + " case " + std::to_string(k);
      ASSERT_EQ(got.out, reverse_time(fwd.out, tm, B, T, H)) << where;
      ASSERT_EQ(got.cell, fwd.cell) << where;
      ASSERT_EQ(got.hidden, fwd.hidden) << where;
    }
    report_declined(*variant);
  }
}

TEST(TimeDirection, OutputWidthWritesRowsInPlace) {
  std::mt19937_64 rng(4343);
  constexpr int8_t kSentinel = 0x5a;
  for (const qlstm::LstmS8Variant* variant : runnable_variants()) {
    for (int k = 0; k < 40; ++k) {
      const int B = 1 + static_cast<int>(rng() % 3), T = 1 + static_cast<int>(rng() % 12);
      const int I = 1 + static_cast<int>(rng() % 30), H = 1 + static_cast<int>(rng() % 30);
      const bool tm = rng() % 2 == 0;
      RandomLstm l;
      make_random_lstm(l, rng, {B, T, I, H}, tm, static_cast<Regime>(k % 3));
      const size_t positions = static_cast<size_t>(B * T);
      const std::string where = std::string(variant->name) + " case " + std::to_string(k);

      // Both directions into the halves of one [..][2H] output.
      const int W = 2 * H;
      std::vector<int8_t> both(positions * W, kSentinel);
      qlstm_lstm_s8_params fwd = l.params, rev = l.params;
      fwd.output_width = rev.output_width = W;
      rev.time_direction = QLSTM_TIME_REVERSE;
      both = run(*variant, fwd, l.input, {}, {}, both).out;
      both = run(*variant, rev, l.input, {}, {}, both, H).out;
      const std::vector<int8_t> dense(positions * H, 0);
      qlstm_lstm_s8_params dense_rev = l.params;
      dense_rev.time_direction = QLSTM_TIME_REVERSE;
      const CallResult f = run(*variant, l.params, l.input, {}, {}, dense);
      const CallResult r = run(*variant, dense_rev, l.input, {}, {}, dense);
      for (size_t q = 0; q < positions; ++q) {
        for (int u = 0; u < H; ++u) {
          ASSERT_EQ(both[q * W + u], f.out[q * H + u]) << where << " forward position " << q;
          ASSERT_EQ(both[q * W + H + u], r.out[q * H + u]) << where << " reverse position " << q;
        }
      }

      // A wider row: the H values at its start, the rest untouched; the final state as dense.
      const int wide = H + 1 + static_cast<int>(rng() % 5);
      qlstm_lstm_s8_params p = l.params;
      p.output_width = wide;
      std::vector<int8_t> hidden0(static_cast<size_t>(B * H), 3);
      const CallResult s = run(*variant, p, l.input, hidden0, std::vector<int16_t>(hidden0.size(), 7),
                        std::vector<int8_t>(positions * wide, kSentinel));
      const CallResult sd = run(*variant, l.params, l.input, hidden0, std::vector<int16_t>(hidden0.size(), 7), dense);
      for (size_t q = 0; q < positions; ++q) {
        for (int u = 0; u < wide; ++u) {
          const int8_t want = u < H ? sd.out[q * H + u] : kSentinel;
          ASSERT_EQ(s.out[q * wide + u], want) << where << " position " << q << " element " << u;
        }
      }
      ASSERT_EQ(s.hidden, sd.hidden) << where;
      ASSERT_EQ(s.cell, sd.cell) << where;
    }
    report_declined(*variant);
  }
}

TEST(TimeDirection, BadFieldsAreNamed) {
  std::mt19937_64 rng(1);
  RandomLstm l;
  make_random_lstm(l, rng, {2, 3, 4, 5}, false, Regime::kTypical);
  const char* field = nullptr;
  qlstm_lstm_s8_params p = l.params;
  p.time_direction = 2;
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_DIRECTION);
  EXPECT_STREQ(field, "time_direction");
  p = l.params;
  p.output_width = 4;  // < H
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_OUTPUT_WIDTH);
  EXPECT_STREQ(field, "output_width");
  p.output_width = -1;
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_OUTPUT_WIDTH);
  p.output_width = 0x7fffffff;  // B * T * W beyond int32
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_OUTPUT_WIDTH);
  p.output_width = 5;  // == H: dense
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_OK);
}

}  // namespace
