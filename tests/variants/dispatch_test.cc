// Per-call dispatch: over a test-only table [a variant that refuses reverse calls, the reference],
// a forward call runs the first entry and a reverse call falls through to the reference, bit for
// bit; a table in which no entry can run a call gives QLSTM_ERROR_NO_VARIANT, and so does an
// explicit run of a variant that declines the call. The real dispatch (qlstm_lstm_s8) goes through
// the same select_lstm_s8_variant() over the one list.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;

// The test variant: the reference's stages behind a counting gate, forward calls only.
int g_forward_only_gate_calls = 0;

void counting_gate(const qlstm_gate_s8_params& gate, const qlstm::GateArgs& args, int16_t* out_q0_15) {
  ++g_forward_only_gate_calls;
  qlstm::lstm_s8_reference_variant().gate(gate, args, out_q0_15);
}

bool forward_only(const qlstm_lstm_s8_params& p) { return p.time_direction == QLSTM_TIME_FORWARD; }

qlstm::LstmS8Variant forward_only_variant() {
  const qlstm::LstmS8Variant& ref = qlstm::lstm_s8_reference_variant();
  return {"test_forward_only", nullptr, forward_only, counting_gate, ref.cell_update, ref.hidden_update, nullptr};
}

struct Call {
  qlstm_status status;
  std::vector<int8_t> out;
  std::vector<int16_t> cell;
};

// A stateless call, either through `table` (dispatch) or, when table is empty, `variant` alone.
Call run(const std::vector<const qlstm::LstmS8Variant*>& table, const qlstm::LstmS8Variant* variant,
         const qlstm_lstm_s8_params& p, const std::vector<int8_t>& x) {
  testing_support::ScratchBuffer scratch(p.dims);
  const size_t BH = static_cast<size_t>(p.dims.batch) * static_cast<size_t>(p.dims.hidden_size);
  Call c{QLSTM_OK, std::vector<int8_t>(BH * static_cast<size_t>(p.dims.time_steps), 0x55), std::vector<int16_t>(BH, 0)};
  qlstm_lstm_s8_context ctx = scratch.context(c.cell.data(), nullptr);
  c.status = variant != nullptr ? qlstm::run_lstm_s8(*variant, &p, &ctx, x.data(), c.out.data())
                                : qlstm::run_lstm_s8_dispatch(table.data(), table.size(), &p, &ctx, x.data(), c.out.data());
  return c;
}

class Dispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(77);
    make_random_lstm(lstm_, rng, {2, 5, 7, 9}, false, Regime::kTypical);
    reverse_ = lstm_.params;
    reverse_.time_direction = QLSTM_TIME_REVERSE;
    g_forward_only_gate_calls = 0;
  }
  RandomLstm lstm_;
  qlstm_lstm_s8_params reverse_{};
  const qlstm::LstmS8Variant test_variant_ = forward_only_variant();
  const qlstm::LstmS8Variant& ref_ = qlstm::lstm_s8_reference_variant();
};

TEST_F(Dispatch, SelectsTheFirstEntryThatCanRunTheCall) {
  const qlstm::LstmS8Variant* const table[] = {&test_variant_, &ref_};
  EXPECT_EQ(qlstm::select_lstm_s8_variant(table, 2, lstm_.params), &test_variant_);
  EXPECT_EQ(qlstm::select_lstm_s8_variant(table, 2, reverse_), &ref_);
  EXPECT_EQ(qlstm::select_lstm_s8_variant(table, 1, reverse_), nullptr);
  EXPECT_EQ(qlstm::select_lstm_s8_variant(table, 0, lstm_.params), nullptr);
}

TEST_F(Dispatch, ForwardRunsTheTestVariantReverseFallsThroughToTheReference) {
  const std::vector<const qlstm::LstmS8Variant*> table = {&test_variant_, &ref_};
  const Call fwd = run(table, nullptr, lstm_.params, lstm_.input);
  ASSERT_EQ(fwd.status, QLSTM_OK);
  EXPECT_EQ(g_forward_only_gate_calls, 4 * 5) << "four gates per step, five steps: the test variant ran";
  EXPECT_EQ(fwd.out, run({}, &ref_, lstm_.params, lstm_.input).out);

  g_forward_only_gate_calls = 0;
  const Call rev = run(table, nullptr, reverse_, lstm_.input);
  ASSERT_EQ(rev.status, QLSTM_OK);
  EXPECT_EQ(g_forward_only_gate_calls, 0) << "the test variant declined the reverse call";
  const Call want = run({}, &ref_, reverse_, lstm_.input);
  ASSERT_EQ(want.status, QLSTM_OK);
  EXPECT_EQ(rev.out, want.out);
  EXPECT_EQ(rev.cell, want.cell);
}

TEST_F(Dispatch, NoEntryCanRunTheCall) {
  const Call none = run({&test_variant_}, nullptr, reverse_, lstm_.input);
  EXPECT_EQ(none.status, QLSTM_ERROR_NO_VARIANT);
  EXPECT_EQ(g_forward_only_gate_calls, 0);
  EXPECT_EQ(none.out, std::vector<int8_t>(none.out.size(), 0x55)) << "nothing written";
  EXPECT_EQ(run({}, nullptr, reverse_, lstm_.input).status, QLSTM_ERROR_NO_VARIANT) << "an empty table";
  // Invalid parameters are reported as such before any variant is chosen.
  qlstm_lstm_s8_params bad = reverse_;
  bad.dims.hidden_size = 0;
  EXPECT_EQ(run({&test_variant_}, nullptr, bad, lstm_.input).status, QLSTM_ERROR_BAD_DIMS);
}

TEST_F(Dispatch, AnExplicitVariantThatDeclinesTheCallSaysSo) {
  EXPECT_EQ(run({}, &test_variant_, reverse_, lstm_.input).status, QLSTM_ERROR_NO_VARIANT);
  EXPECT_EQ(g_forward_only_gate_calls, 0);
  EXPECT_EQ(run({}, &test_variant_, lstm_.params, lstm_.input).status, QLSTM_OK);
  EXPECT_STRNE(qlstm_status_string(QLSTM_ERROR_NO_VARIANT), qlstm_status_string(QLSTM_ERROR_UNSUPPORTED));
}

// The real dispatch, with the one list: qlstm_lstm_s8() and the "default" entry run every call the
// way select_lstm_s8_variant() picks, and equal the reference in both directions.
TEST_F(Dispatch, TheOneListRunsEveryDirection) {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  const std::vector<const qlstm::LstmS8Variant*> list(all, all + n);
  const qlstm_lstm_s8_params* const calls[] = {&lstm_.params, &reverse_};
  for (const qlstm_lstm_s8_params* p : calls) {
    const qlstm::LstmS8Variant* chosen = qlstm::select_lstm_s8_variant(all, n, *p);
    ASSERT_NE(chosen, nullptr);
    const Call want = run({}, &ref_, *p, lstm_.input);
    for (const Call& got : {run(list, nullptr, *p, lstm_.input), run({}, &qlstm::lstm_s8_default_variant(), *p, lstm_.input),
                            run({}, chosen, *p, lstm_.input)}) {
      ASSERT_EQ(got.status, QLSTM_OK) << chosen->name;
      EXPECT_EQ(got.out, want.out) << chosen->name;
    }
    testing_support::ScratchBuffer scratch(p->dims);
    std::vector<int16_t> cell(want.cell.size());
    std::vector<int8_t> out(want.out.size());
    qlstm_lstm_s8_context ctx = scratch.context(cell.data(), nullptr);
    ASSERT_EQ(qlstm_lstm_s8(p, &ctx, lstm_.input.data(), out.data()), QLSTM_OK);
    EXPECT_EQ(out, want.out);
  }
}

}  // namespace
