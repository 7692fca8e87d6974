// Hand-built mixed programs for tests of the program runner (host and device): their owned
// parameters, a context sized for T steps, and three shapes of model: LSTM -> select step -> FC
// -> softmax or log-softmax (a classifier on y[:, step]), LSTM final state -> FC (ReLU) -> table (a head on
// h_n), and FC -> LSTM -> FC on every step (an input projection and a per-step head); and GRU
// programs: a GRU -> FC head, a bidirectional GRU layer (two ops writing the halves of each row).
#ifndef QLSTM_TESTS_HAND_PROGRAMS_H_
#define QLSTM_TESTS_HAND_PROGRAMS_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "program_ops.h"
#include "qlstm/program_s8.h"
#include "random_gru.h"
#include "random_lstm.h"

namespace testing_support {
namespace hand {

using testing_support::block;
using testing_support::set_block;

inline constexpr int32_t kEvery = QLSTM_BUFFER_EVERY_STEP, kOne = QLSTM_BUFFER_ONE_STEP;

inline std::vector<int8_t> random_s8(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> s8(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(s8(rng));
  return v;
}

// Uniform int16 values in [lo, hi] (the whole range by default).
inline std::vector<int16_t> random_s16(size_t n, std::mt19937_64& rng, int32_t lo = INT16_MIN, int32_t hi = INT16_MAX) {
  std::uniform_int_distribution<int32_t> s16(lo, hi);
  std::vector<int16_t> v(n);
  for (auto& x : v) x = static_cast<int16_t>(s16(rng));
  return v;
}

// An FC op's owned arrays.
struct Fc {
  std::vector<int8_t> weights;
  std::vector<int32_t> bias, multipliers, shifts;
  qlstm_fc_s8_params params{};
};
inline void make_fc(Fc& f, int32_t I, int32_t O, bool per_channel, bool relu, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> bias(-3000, 3000), m(1 << 30, INT32_MAX), s(-11, -7), zp(-20, 20);
  f.weights = random_s8(static_cast<size_t>(I * O), rng);
  f.bias.resize(static_cast<size_t>(O));
  for (auto& b : f.bias) b = bias(rng);
  const size_t n = per_channel ? static_cast<size_t>(O) : 1;
  f.multipliers.resize(n);
  f.shifts.resize(n);
  for (size_t k = 0; k < n; ++k) {
    f.multipliers[k] = m(rng);
    f.shifts[k] = s(rng);
  }
  const int32_t out_zp = zp(rng);
  f.params = {0, I, O, per_channel ? 1 : 0, f.multipliers.data(), f.shifts.data(), f.weights.data(),
              f.bias.data(), out_zp, relu ? out_zp : -128, 127};
}

struct Table {
  std::vector<int8_t> entries;
  qlstm_table_s8_params params{};
};
inline void make_table(Table& t, int32_t row_size, std::mt19937_64& rng) {
  t.entries = random_s8(QLSTM_TABLE_S8_ENTRIES, rng);
  t.params = {0, row_size, t.entries.data()};
}

// A hand-built program with its owned parameters and a context sized for T steps.
struct Built {
  std::deque<RandomLstm> lstms;
  std::deque<RandomGru> grus;
  std::deque<Fc> fcs;
  std::deque<Table> tables;
  std::vector<qlstm_op> ops;
  std::vector<int32_t> widths, steps;
  std::vector<int32_t> types;  // per buffer (a qlstm_element_type); empty: every buffer int8
  int32_t B = 0, T = 0, layout = QLSTM_LAYOUT_BATCH_MAJOR;
  size_t state_values = 0;
  std::vector<unsigned char> scratch_storage;
  std::vector<int16_t> cell;
  std::vector<int8_t> areas[2];
  qlstm_program program{};
  qlstm_program_context ctx{};

  void finish() {
    program = {ops.data(), static_cast<int32_t>(ops.size()), static_cast<int32_t>(widths.size()), widths.data(),
               state_values, steps.data(), B, layout, types.empty() ? nullptr : types.data()};
    size_t scratch = 0, largest_h = 1, area = 1;
    for (const qlstm_op& op : ops) {
      // A copy of its block with the call's steps.
      qlstm::OpBlock copy{};
      qlstm_op call = op;
      call.params = qlstm::copy_op_block(op, &copy);
      if (op.kind == QLSTM_OP_LSTM_S8) copy.lstm.dims.time_steps = T;
      if (op.kind == QLSTM_OP_GRU_S8) copy.gru.dims.time_steps = T;
      if (op.kind == QLSTM_OP_LSTM_S16) copy.lstm_s16.dims.time_steps = T;
      scratch = std::max(scratch, qlstm_op_scratch_bytes(&call));
      if (op.kind == QLSTM_OP_LSTM_S8) largest_h = std::max(largest_h, static_cast<size_t>(block<qlstm_lstm_s8_params>(op).dims.hidden_size));
      if (op.kind == QLSTM_OP_LSTM_S16) {
        largest_h = std::max(largest_h, static_cast<size_t>(block<qlstm_lstm_s16_params>(op).dims.hidden_size));
      }
    }
    for (size_t b = 1; b + 1 < widths.size(); ++b) {
      const size_t bytes = types.empty() ? 1 : qlstm_element_bytes(types[b]);
      area = std::max(area, bytes * static_cast<size_t>(widths[b]) * static_cast<size_t>(steps[b] == kOne ? B : B * T));
    }
    scratch_storage.assign(scratch + QLSTM_SCRATCH_ALIGNMENT, 0);
    void* aligned = scratch_storage.data();
    size_t space = scratch_storage.size();
    std::align(QLSTM_SCRATCH_ALIGNMENT, scratch, aligned, space);
    cell.assign(static_cast<size_t>(B) * largest_h, 0);
    areas[0].assign(area, 0);
    areas[1].assign(area, 0);
    ctx = {aligned, scratch, cell.data(), {areas[0].data(), areas[1].data()}, area};
  }
  size_t output_size() const {
    return static_cast<size_t>(widths.back()) * static_cast<size_t>(steps.back() == kOne ? B : B * T);
  }
};

inline constexpr int32_t B = 3, T = 5, I = 4, H = 6, O = 5;

// The FC alone, as qlstm_fc_s8 runs it, on every position of x.
inline std::vector<int8_t> fc_alone(const qlstm_fc_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_fc_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.input_size;
  std::vector<int8_t> y(static_cast<size_t>(p.rows * p.output_size));
  EXPECT_EQ(qlstm_fc_s8(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}

inline qlstm_op fc_op(const qlstm_fc_s8_params& p, int32_t input_buffer, int32_t output_buffer) {
  qlstm_op op = program_op(QLSTM_OP_FULLY_CONNECTED_S8, input_buffer, output_buffer);
  set_block(op, p);
  return op;
}

// A program of B rows, T steps, in the layout asked for.
inline void start(Built& b, bool time_major) {
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
}

// A program of B rows and T steps in the layout whose first op is a random LSTM (b.lstms[0]).
inline void begin_with_lstm(Built& b, bool time_major, std::mt19937_64& rng) {
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, I, H}, time_major, Regime::kTypical);
}

// LSTM (every step) -> select step -> FC -> softmax (or log-softmax): a classifier on y[:, step].
inline void build_classifier(Built& b, bool time_major, int32_t step, std::mt19937_64& rng, bool log_softmax = false) {
  begin_with_lstm(b, time_major, rng);
  make_fc(b.fcs.emplace_back(), H, O, true, false, rng);
  b.widths = {I, H, H, O, O};
  b.steps = {kEvery, kEvery, kOne, kOne, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  qlstm_op select = program_op(QLSTM_OP_SELECT_STEP, 1, 2);
  set_block(select, qlstm_select_step_params{step, H, 1});
  b.ops.push_back(select);
  qlstm_op fc = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 2, 3);
  set_block(fc, b.fcs[0].params);
  b.ops.push_back(fc);
  if (log_softmax) {
    // TFLite's preparation for an input scale of 2^-4.5 (the softmax's below): the reverse scaling
    // 2^9 / 1518500250 is 1518500250 x 2^-21.
    qlstm_op op = program_op(QLSTM_OP_LOG_SOFTMAX_S8, 3, 4);
    set_block(op, qlstm_log_softmax_s8_params{0, O, 1518500250, 22, 1518500250, -21, -496});
    b.ops.push_back(op);
  } else {
    qlstm_op softmax = program_op(QLSTM_OP_SOFTMAX_S8, 3, 4);
    set_block(softmax, qlstm_softmax_s8_params{0, O, 1518500250, 22, -496});
    b.ops.push_back(softmax);
  }
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// LSTM final state -> FC (ReLU, per tensor) -> table: a head on h_n.
inline void build_final_head(Built& b, bool time_major, std::mt19937_64& rng) {
  begin_with_lstm(b, time_major, rng);
  b.lstms[0].params.output_steps = QLSTM_OUTPUT_FINAL;
  make_fc(b.fcs.emplace_back(), H, O, false, true, rng);
  make_table(b.tables.emplace_back(), O, rng);
  b.widths = {I, H, O, O};
  b.steps = {kEvery, kOne, kOne, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  qlstm_op fc = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 1, 2);
  set_block(fc, b.fcs[0].params);
  b.ops.push_back(fc);
  qlstm_op table = program_op(QLSTM_OP_TABLE_S8, 2, 3);
  set_block(table, b.tables[0].params);
  b.ops.push_back(table);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// Appends an op of `kind` from buffer `in` to buffer `out` with (a copy of) its block.
template <class P>
inline void add_op(Built& b, int32_t kind, int32_t in, int32_t out, const P& params) {
  qlstm_op op = program_op(kind, in, out);
  set_block(op, params);
  b.ops.push_back(op);
}

// LSTM (every step) -> the mean or max over time (kind: a qlstm_pool_kind) -> FC: a classifier
// on y.mean(dim=1) or y.max(dim=1).values.
inline void build_pooled(Built& b, bool time_major, int32_t kind, std::mt19937_64& rng) {
  begin_with_lstm(b, time_major, rng);
  make_fc(b.fcs.emplace_back(), H, O, true, false, rng);
  b.widths = {I, H, H, O};
  b.steps = {kEvery, kEvery, kOne, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  qlstm_pool_s8_params pool{};
  pool.kind = kind;
  pool.channels = H;
  pool.activation_min = -128;
  pool.activation_max = 127;
  add_op(b, QLSTM_OP_POOL_S8, 1, 2, pool);
  add_op(b, QLSTM_OP_FULLY_CONNECTED_S8, 2, 3, b.fcs[0].params);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// LSTM (every step) -> FC on all T steps of each batch row at once (y.reshape(B, -1) then a
// Linear of T x H inputs): batch-major, calls of exactly T steps.
inline void build_flattened(Built& b, std::mt19937_64& rng) {
  begin_with_lstm(b, false, rng);
  make_fc(b.fcs.emplace_back(), T * H, O, true, false, rng);
  b.widths = {I, H, O};
  b.steps = {kEvery, kEvery, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  add_op(b, QLSTM_OP_FULLY_CONNECTED_S8, 1, 2, b.fcs[0].params);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// Front FC -> LSTM -> FC on every step: a forecaster with an input projection.
inline void build_front(Built& b, bool time_major, std::mt19937_64& rng) {
  const int32_t F = 7;
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  make_fc(b.fcs.emplace_back(), I, F, true, true, rng);
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, F, H}, time_major, Regime::kTypical);
  make_fc(b.fcs.emplace_back(), H, O, false, false, rng);
  b.widths = {I, F, H, O};
  b.steps = {kEvery, kEvery, kEvery, kEvery};
  qlstm_op front = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 0, 1);
  set_block(front, b.fcs[0].params);
  b.ops.push_back(front);
  b.ops.push_back(lstm_op(b.lstms[0].params, 1, 2, 0));
  qlstm_op head = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 2, 3);
  set_block(head, b.fcs[1].params);
  b.ops.push_back(head);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// A GRU (output_steps as given: every step into a sequence, or FINAL into a one-step buffer),
// then, if with_head, an FC on each of its positions.
inline void build_gru(Built& b, bool time_major, int32_t output_steps, bool with_head, std::mt19937_64& rng) {
  start(b, time_major);
  make_random_gru(b.grus.emplace_back(), rng, {B, T, I, H}, time_major, Regime::kTypical);
  b.grus[0].params.output_steps = output_steps;
  const int32_t steps = output_steps == QLSTM_OUTPUT_FINAL ? kOne : kEvery;
  b.widths = {I, H};
  b.steps = {kEvery, steps};
  b.ops.push_back(gru_op(b.grus[0].params, 0, 1, 0));
  if (with_head) {
    make_fc(b.fcs.emplace_back(), H, O, true, false, rng);
    b.widths.push_back(O);
    b.steps.push_back(steps);
    b.ops.push_back(fc_op(b.fcs[0].params, 1, 2));
  }
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// A bidirectional GRU layer: a forward and a reverse GRU op reading the input and writing the two
// halves of each [2H] row (FINAL: of each batch row's final states; with reverse_steps FIRST the
// reverse op runs its first step alone: y[:, -1] as the compiler writes it), their states one
// after the other.
inline void build_bidirectional_gru(Built& b, bool time_major, int32_t output_steps, std::mt19937_64& rng,
                                    int32_t reverse_steps = -1) {
  start(b, time_major);
  b.widths = {I, 2 * H};
  b.steps = {kEvery, output_steps == QLSTM_OUTPUT_ALL_STEPS ? kEvery : kOne};
  for (int32_t d = 0; d < 2; ++d) {
    RandomGru& g = b.grus.emplace_back();
    make_random_gru(g, rng, {B, T, I, H}, time_major, Regime::kTypical);
    g.params.output_steps = d == 1 && reverse_steps >= 0 ? reverse_steps : output_steps;
    g.params.time_direction = d == 0 ? QLSTM_TIME_FORWARD : QLSTM_TIME_REVERSE;
    qlstm_op op = gru_op(g.params, 0, 1, static_cast<size_t>(d * B * H));
    op.output_offset = d * H;
    b.ops.push_back(op);
  }
  b.state_values = static_cast<size_t>(2 * B * H);
  b.finish();
}

// Random parameters of an elementwise add or multiply over rows of `row_size`, as TFLite's
// preparation makes them (the add: operand 1 at the larger scale, x 0.5 exactly; left shift 20).
// P: qlstm_add_s8_params or qlstm_mul_s8_params; the output shift's range [lo, hi].
template <class P>
inline P random_elementwise(int32_t row_size, int32_t lo, int32_t hi, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> m(1 << 30, INT32_MAX), zp(-20, 20), out_s(lo, hi);
  P p{};
  p.shape = {0, row_size, 0, 0};
  p.input1_zero_point = zp(rng);
  p.input2_zero_point = zp(rng);
  p.output_multiplier = m(rng);
  p.output_shift = out_s(rng);
  p.output_zero_point = zp(rng);
  p.activation_min = -128;
  p.activation_max = 127;
  return p;
}
inline qlstm_add_s8_params random_add(int32_t row_size, std::mt19937_64& rng) {
  qlstm_add_s8_params p = random_elementwise<qlstm_add_s8_params>(row_size, -20, -17, rng);
  std::uniform_int_distribution<int32_t> m(1 << 30, INT32_MAX), s(-3, -1);
  p.left_shift = 20;
  p.input1_multiplier = 1 << 30;
  p.input1_shift = 0;
  p.input2_multiplier = m(rng);
  p.input2_shift = s(rng);
  return p;
}
inline qlstm_mul_s8_params random_mul(int32_t row_size, std::mt19937_64& rng) {
  return random_elementwise<qlstm_mul_s8_params>(row_size, -10, -7, rng);
}

// Front FC -> LSTM, then the add (or multiply) of the two, every step: y1 + lstm(y1), a residual
// connection around a layer (the elementwise op reads two intermediate buffers, one in each area).
// With a head, an FC on every step of the sum follows, which the add then writes in place over y1
// (the program's two areas hold y1 and the LSTM's output).
inline void build_residual(Built& b, bool time_major, bool multiply, std::mt19937_64& rng, bool with_head = false) {
  start(b, time_major);
  make_fc(b.fcs.emplace_back(), I, H, true, false, rng);
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, H, H}, time_major, Regime::kTypical);
  b.widths = {I, H, H, H};
  b.steps = {kEvery, kEvery, kEvery, kEvery};
  b.ops.push_back(fc_op(b.fcs[0].params, 0, 1));
  b.ops.push_back(lstm_op(b.lstms[0].params, 1, 2, 0));
  if (multiply) {
    add_op(b, QLSTM_OP_MUL_S8, 1, 3, random_mul(H, rng));
  } else {
    add_op(b, QLSTM_OP_ADD_S8, 1, 3, random_add(H, rng));
  }
  b.ops.back().second_input_buffer = 2;
  if (with_head) {
    make_fc(b.fcs.emplace_back(), H, O, false, false, rng);
    b.widths.push_back(O);
    b.steps.push_back(kEvery);
    b.ops.push_back(fc_op(b.fcs[1].params, 3, 4));
  }
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

}  // namespace hand
}  // namespace testing_support

#endif  // QLSTM_TESTS_HAND_PROGRAMS_H_
