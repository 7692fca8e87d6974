// GRU layers through the compiler (compile_program): calibration, derivation and the accuracy
// search as for the LSTM, the program's GRU ops, the state, the model file. Every accuracy figure
// is measured on sequences the compiler never saw.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "random_program.h"
#include "whole_program.h"

namespace qlstm {
namespace compiler {
namespace {

// n standard-normal sequences of T steps, [n][T][I] batch-major.
std::vector<float> sequences(int32_t n, int32_t T, int32_t I, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n) * T * I);
  for (float& v : x) v = d(rng);
  return x;
}

struct Measured {
  QuantizedProgram q;
  double held_out_sqnr_db = 0;
};

// Compiles `p` on 48 calibration sequences of 20 steps and measures the int8 program against the
// float one on 24 other sequences of 30 steps (longer than the calibration ones).
Measured compile_and_measure(const FloatProgram& p, const CompileOptions& options, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t I = p.input_size();
  CalibrationSet cal;
  cal.add_batch(sequences(48, 20, I, rng), {48, 20, Layout::kBatchMajor}, I);
  Measured m{compile_program(p, cal, options)};
  const SequenceShape test{24, 30, Layout::kBatchMajor};
  const std::vector<float> x = sequences(test.batch, test.time_steps, I, rng);
  const std::vector<float> want = run_float_program(p, x.data(), test).output;
  const CompiledModel& cm = m.q.model;
  std::vector<int8_t> x8;
  for (float v : x) x8.push_back(cm.input_quant().quantize(v));
  std::vector<float> got;
  for (int8_t v : run_program_s8(cm, x8, test)) got.push_back(static_cast<float>(cm.output_quant().dequantize(v)));
  m.held_out_sqnr_db = sqnr_db(want, got);
  return m;
}

int32_t count_kind(const CompiledModel& m, int32_t kind) {
  int32_t n = 0;
  for (const ProgramOp& op : m.ops) n += op.kind == kind;
  return n;
}

// Bar of the GRU issue: 35 dB against float on held-out data, where the LSTM of the same size
// reaches it (compared below on the same data).
constexpr double kHeldOutBarDb = 35.0;

TEST(GruCompile, OneLayerTracksTheFloatGruOnHeldOutDataLikeTheLstm) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    const FloatProgram gru = random_program(6, 16, 1, 1, rng, CellKind::kGru);
    const FloatProgram lstm = random_program(6, 16, 1, 1, rng);
    const Measured g = compile_and_measure(gru, CompileOptions{}, seed + 100);
    const Measured l = compile_and_measure(lstm, CompileOptions{}, seed + 100);
    ASSERT_EQ(count_kind(g.q.model, QLSTM_OP_GRU_S8), 1);
    EXPECT_EQ(count_kind(g.q.model, QLSTM_OP_LSTM_S8), 0);
    std::printf("seed %llu: GRU %.2f dB, LSTM %.2f dB held out\n", static_cast<unsigned long long>(seed),
                g.held_out_sqnr_db, l.held_out_sqnr_db);
    if (l.held_out_sqnr_db >= kHeldOutBarDb) {
      EXPECT_GE(g.held_out_sqnr_db, kHeldOutBarDb) << "seed " << seed;
    }
    // The search tunes what a GRU has: no cell headroom, no adaptive rounding (derive_gru.h).
    const CalibrationStats& st = g.q.stats.front();
    EXPECT_EQ(st.score_method, "k-fold");
    EXPECT_GE(st.final_sqnr_db, st.start_sqnr_db);
    for (const std::string& s : st.searched) {
      EXPECT_NE(s, "cell_headroom");
      EXPECT_NE(s, "weight_rounding");
    }
  }
}

TEST(GruCompile, SearchIsNoWorseThanUpstreamChoicesHeldOut) {
  std::mt19937_64 rng(11);
  const FloatProgram p = random_program(5, 24, 1, 1, rng, CellKind::kGru);
  CompileOptions none;
  none.tuning = Tuning::kNone;
  const Measured searched = compile_and_measure(p, CompileOptions{}, 12);
  const Measured plain = compile_and_measure(p, none, 12);
  std::printf("search %.2f dB, none %.2f dB held out\n", searched.held_out_sqnr_db, plain.held_out_sqnr_db);
  // The search changes a choice only on a held-out gain larger than the folds' spread; on other
  // held-out data it may lose a little of that, not more than a quarter dB.
  EXPECT_GE(searched.held_out_sqnr_db, plain.held_out_sqnr_db - 0.25);
}

TEST(GruCompile, StackedBidirectionalWithConstantStateAndHnOutput) {
  std::mt19937_64 rng(21);
  const int32_t I = 4, H = 12;
  FloatProgram p = random_program(I, H, 2, 2, rng, CellKind::kGru);
  p.initial_hidden = StateSource::kConstant;
  std::uniform_real_distribution<float> u(-0.8f, 0.8f);
  for (size_t k = 0; k < p.ops.size(); ++k) {
    p.h0.emplace_back(static_cast<size_t>(H));
    for (float& v : p.h0.back()) v = u(rng);
  }
  p.hidden_output = true;
  const Measured m = compile_and_measure(p, CompileOptions{}, 22);
  const CompiledModel& cm = m.q.model;
  EXPECT_EQ(count_kind(cm, QLSTM_OP_GRU_S8), 4);
  EXPECT_NO_THROW(cm.validate("test"));
  std::printf("2-layer bidirectional GRU: %.2f dB held out\n", m.held_out_sqnr_db);
  EXPECT_GE(m.held_out_sqnr_db, 30.0);
  // The constant h0 is each op's Q0.15 state row.
  for (const ProgramOp& op : cm.ops) {
    ASSERT_EQ(op.initial_cell.size(), static_cast<size_t>(H));
    EXPECT_TRUE(op.initial_hidden.empty());
  }
  // h_n is the program's final state: each op's Q0.15 row, which tracks the float model's h_n.
  std::mt19937_64 xr(23);
  const SequenceShape shape{3, 9, Layout::kBatchMajor};
  const std::vector<float> x = sequences(shape.batch, shape.time_steps, I, xr);
  const FloatProgramResult f = run_float_program(p, x.data(), shape);
  std::vector<int8_t> x8;
  for (float v : x) x8.push_back(cm.input_quant().quantize(v));
  ProgramState s = initial_program_state(cm, shape.batch);
  run_program_s8(cm, x8, shape, &s);
  ASSERT_EQ(s.cell.size(), f.h_n.size());
  std::vector<float> h_n;
  for (int16_t v : s.cell) h_n.push_back(static_cast<float>(std::ldexp(v, kGruHiddenPower)));
  const double h_n_sqnr = sqnr_db(f.h_n, h_n);
  std::printf("h_n from the Q0.15 state: %.2f dB\n", h_n_sqnr);
  EXPECT_GE(h_n_sqnr, 30.0);

  // The model file carries it: the loaded program runs bit for bit the same.
  const CompiledModel loaded = parse_model(serialize_model(cm), "gru.qlstm");
  EXPECT_EQ(run_program_s8(loaded, x8, shape), run_program_s8(cm, x8, shape));
}

TEST(GruCompile, StreamingInChunksEqualsOneCall) {
  std::mt19937_64 rng(31);
  const FloatProgram p = random_program(3, 10, 2, 1, rng, CellKind::kGru);
  const Measured m = compile_and_measure(p, CompileOptions{}, 32);
  const CompiledModel& cm = m.q.model;
  ASSERT_EQ(cm.streaming_refusal(), "");
  std::mt19937_64 xr(33);
  const SequenceShape shape{2, 17, Layout::kTimeMajor};
  std::vector<int8_t> x8;
  for (float v : sequences(shape.batch, shape.time_steps, 3, xr)) x8.push_back(cm.input_quant().quantize(v));
  const std::vector<int8_t> whole = run_program_s8(cm, x8, shape);
  for (int32_t chunk : {1, 3, 5, 17}) EXPECT_EQ(run_program_s8_streamed(cm, x8, shape, chunk), whole) << chunk;
}

TEST(GruCompile, ClassifierHeadOnTheLastStep) {
  std::mt19937_64 rng(41);
  FloatProgram p = random_program(6, 16, 1, 1, rng, CellKind::kGru);
  p.head = {select_step(16, -1), random_linear("head", 16, 5, rng)};
  const Measured m = compile_and_measure(p, CompileOptions{}, 42);
  const CompiledModel& cm = m.q.model;
  EXPECT_TRUE(cm.output_is_one_step());
  EXPECT_EQ(cm.ops.front().as<DerivedGru>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(count_kind(cm, QLSTM_OP_FULLY_CONNECTED_S8), 1);
  std::printf("GRU + Linear head: %.2f dB held out\n", m.held_out_sqnr_db);
  EXPECT_GE(m.held_out_sqnr_db, 30.0);
}

TEST(GruCompile, AdaptiveRoundingAskedForAGruIsRefusedByName) {
  std::mt19937_64 rng(51);
  const FloatProgram p = random_program(4, 8, 1, 1, rng, CellKind::kGru);
  CompileOptions o = fast();
  o.weights.weight_rounding = WeightRounding::kAdaptive;
  try {
    compile_program(p, calibration(4, rng), o);
    ADD_FAILURE() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("weight_rounding adaptive: not supported for a GRU"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace qlstm
