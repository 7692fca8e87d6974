// Streaming: a sequence fed in chunks of random sizes (stateful calls) gives exactly the result
// of one call, in both layouts; and reset + chunks equals one stateless call.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "qlstm/lstm_s8.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;

// Copies time steps [t0, t0 + n) of a [B][T][W] or [T][B][W] tensor into a chunk of the same
// layout with T = n (or back, with to_chunk = false).
template <typename T>
void copy_steps(bool time_major, int B, int T_total, int W, int t0, int n, std::vector<T>& full,
                std::vector<T>& chunk, bool to_chunk) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < n; ++t) {
      const size_t f = time_major ? (static_cast<size_t>(t0 + t) * B + b) * W
                                  : (static_cast<size_t>(b) * T_total + t0 + t) * W;
      const size_t c = time_major ? (static_cast<size_t>(t) * B + b) * W
                                  : (static_cast<size_t>(b) * n + t) * W;
      for (int w = 0; w < W; ++w) {
        if (to_chunk) chunk[c + w] = full[f + w];
        else full[f + w] = chunk[c + w];
      }
    }
  }
}

TEST(Streaming, RandomChunksEqualOneCall) {
  std::mt19937_64 rng(777);
  for (int k = 0; k < 150; ++k) {
    const int B = 1 + static_cast<int>(rng() % 4), T = static_cast<int>(rng() % 40);
    const int I = 1 + static_cast<int>(rng() % 24), H = 1 + static_cast<int>(rng() % 24);
    const bool tm = rng() % 2 == 0;
    RandomLstm l;
    make_random_lstm(l, rng, {B, T, I, H}, tm, static_cast<Regime>(k % 3));
    const size_t BH = static_cast<size_t>(B * H);
    testing_support::ScratchBuffer scratch(l.params.dims);

    // One stateless call.
    std::vector<int16_t> cell_one(BH);
    std::vector<int8_t> out_one(BH * static_cast<size_t>(T));
    qlstm_lstm_s8_context one = scratch.context(cell_one.data(), nullptr);
    ASSERT_EQ(qlstm_lstm_s8(&l.params, &one, l.input.data(), out_one.data()), QLSTM_OK);

    // One stateful call from a random state.
    std::vector<int16_t> cell0(BH);
    std::vector<int8_t> hidden0(BH);
    for (auto& c : cell0) c = static_cast<int16_t>(rng());
    for (auto& h : hidden0) h = static_cast<int8_t>(rng());
    std::vector<int16_t> cell_sf = cell0;
    std::vector<int8_t> hidden_sf = hidden0, out_sf(out_one.size());
    qlstm_lstm_s8_context sf = scratch.context(cell_sf.data(), hidden_sf.data());
    ASSERT_EQ(qlstm_lstm_s8(&l.params, &sf, l.input.data(), out_sf.data()), QLSTM_OK);

    // pass 0: reset, then chunks == stateless (needs converter-consistent hidden biases, which
    // the extreme regime does not have); pass 1: from the random state == stateful.
    const bool consistent_biases = k % 3 != static_cast<int>(Regime::kExtreme);
    for (int pass = consistent_biases ? 0 : 1; pass < 2; ++pass) {
      std::vector<int16_t> cell = pass == 0 ? std::vector<int16_t>(BH, 1) : cell0;
      std::vector<int8_t> hidden = pass == 0 ? std::vector<int8_t>(BH, 1) : hidden0;
      qlstm_lstm_s8_context ctx = scratch.context(cell.data(), hidden.data());
      if (pass == 0) {
        ASSERT_EQ(qlstm_lstm_s8_reset_state(&l.params, &ctx), QLSTM_OK);
      }
      std::vector<int8_t> out(out_one.size(), 0);
      int t0 = 0;
      while (t0 < T || (T == 0 && t0 == 0)) {
        const int n = std::min(T - t0, static_cast<int>(rng() % 9));  // chunks of 0..8 steps
        qlstm_lstm_s8_params p = l.params;
        p.dims.time_steps = n;
        std::vector<int8_t> in_chunk(static_cast<size_t>(B * n * I)), out_chunk(BH * static_cast<size_t>(n));
        copy_steps(tm, B, T, I, t0, n, l.input, in_chunk, true);
        ASSERT_EQ(qlstm_lstm_s8(&p, &ctx, in_chunk.data(), out_chunk.data()), QLSTM_OK);
        copy_steps(tm, B, T, H, t0, n, out, out_chunk, false);
        t0 += n;
        if (T == 0) break;
      }
      const auto& want = pass == 0 ? out_one : out_sf;
      ASSERT_EQ(out, want) << "case " << k << " pass " << pass;
      if (pass == 1) {
        ASSERT_EQ(cell, cell_sf) << "case " << k;
        ASSERT_EQ(hidden, hidden_sf) << "case " << k;
      } else {
        ASSERT_EQ(cell, cell_one) << "case " << k;
      }
    }
  }
}

}  // namespace
