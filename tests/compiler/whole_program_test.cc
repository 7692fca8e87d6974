// Whole models compiled from hand-built float programs (the layers around the LSTM): the int8
// program run on the host through the runtime against the float program in double, on held-out
// sequences the compiler never saw; the structure the compiler chooses (a final-state LSTM for a
// last-step head, no B x T x H buffer), streaming, and the model file of every op kind.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "random_program.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr double kMinSqnrDb = 30.0;
constexpr double kMinArgmaxAgreement = 0.97;
constexpr int32_t kCalibrationSequences = 1024;

FloatLayer linear(int32_t I, int32_t O, float sigma, std::mt19937_64& rng, const std::string& node) {
  std::normal_distribution<float> n(0.0f, sigma);
  FloatLayer l;
  l.kind = FloatLayerKind::kLinear;
  l.node = node;
  l.input_size = I;
  l.output_size = O;
  for (int32_t k = 0; k < I * O; ++k) l.weight.push_back(n(rng));
  for (int32_t o = 0; o < O; ++o) l.bias.push_back(n(rng) * 0.5f);
  return l;
}

FloatLayer elementwise(FloatLayerKind kind, int32_t n, const std::string& node, ActivationFn fn = ActivationFn::kRelu) {
  FloatLayer l;
  l.kind = kind;
  l.node = node;
  l.input_size = l.output_size = n;
  l.fn = fn;
  return l;
}

FloatLayer select_step(int32_t step, int32_t width) {
  FloatLayer l = elementwise(FloatLayerKind::kSelectStep, width, "/Gather");
  l.step = step;
  return l;
}

// B sequences of T steps, batch-major: a smooth random walk per feature plus noise, so the LSTM's
// last steps depend on the sequence.
std::vector<float> sequences(int32_t B, int32_t T, int32_t I, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(B) * T * I);
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t i = 0; i < I; ++i) {
      float level = n(rng);
      for (int32_t t = 0; t < T; ++t) {
        level = 0.8f * level + 0.5f * n(rng);
        x[(static_cast<size_t>(b) * T + t) * I + i] = level;
      }
    }
  }
  return x;
}

struct Compiled {
  QuantizedProgram q;
  SequenceShape shape;  // of the held-out data
  std::vector<float> x, want, got;  // held-out input, float output, int8 output dequantized
};

// Compiles on 1024 calibration sequences and runs the int8 program and the float program on 64
// other sequences. (A head on one step sees one value per sequence and channel: its ranges need
// many sequences.)
Compiled compile_and_run(const FloatProgram& p, int32_t T, const CompileOptions& options) {
  Compiled c;
  const int32_t I = p.input_size(), B = 64;
  CalibrationSet calib;
  calib.add_batch(sequences(kCalibrationSequences, T, I, 1), {kCalibrationSequences, T, Layout::kBatchMajor}, I);
  c.q = compile_program(p, calib, options);
  c.q.model.batch_first = true;
  c.q.model.validate("compiled");
  c.shape = {B, T, Layout::kBatchMajor};
  c.x = sequences(B, T, I, 2);  // held out
  c.want = run_float_program(p, c.x.data(), c.shape).output;
  std::vector<int8_t> x8(c.x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = c.q.model.input_quant().quantize(c.x[k]);
  for (int8_t v : run_program_s8(c.q.model, x8, c.shape)) {
    c.got.push_back(static_cast<float>(c.q.model.output_quant().dequantize(v)));
  }
  return c;
}

std::vector<int32_t> kinds(const CompiledModel& m) {
  std::vector<int32_t> k;
  for (const ProgramOp& op : m.ops) k.push_back(op.kind);
  return k;
}

double argmax_agreement(const std::vector<float>& a, const std::vector<float>& b, size_t classes) {
  size_t agree = 0, rows = a.size() / classes;
  for (size_t r = 0; r < rows; ++r) {
    const auto ra = a.begin() + static_cast<ptrdiff_t>(r * classes), rb = b.begin() + static_cast<ptrdiff_t>(r * classes);
    agree += std::max_element(ra, ra + static_cast<ptrdiff_t>(classes)) - ra ==
             std::max_element(rb, rb + static_cast<ptrdiff_t>(classes)) - rb;
  }
  return static_cast<double>(agree) / static_cast<double>(rows);
}

std::vector<int8_t> quantized_input(const Compiled& c) {
  std::vector<int8_t> x8(c.x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = c.q.model.input_quant().quantize(c.x[k]);
  return x8;
}

// LSTM -> y[:, -1] -> Linear -> Softmax, with the accuracy search.
TEST(WholeProgram, ClassifierOnTheLastStepHoldsNoSequence) {
  std::mt19937_64 rng(21);
  const int32_t I = 4, H = 16, C = 5, T = 20;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {select_step(-1, H), linear(H, C, 1.5f, rng, "/fc/Gemm"), elementwise(FloatLayerKind::kSoftmax, C, "/Softmax")};
  CompileOptions options;
  options.search_max_macs = int64_t{1} << 22;
  const Compiled c = compile_and_run(p, T, options);
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_SOFTMAX_S8}));
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.buffers[1].steps, QLSTM_BUFFER_ONE_STEP);
  EXPECT_TRUE(m.output_is_one_step());
  EXPECT_EQ(m.output_quant().scale, 1.0 / 256);
  EXPECT_EQ(m.output_quant().zero_point, -128);
  ASSERT_EQ(c.got.size(), static_cast<size_t>(c.shape.batch) * C);
  const double sqnr = sqnr_db(c.want, c.got), agree = argmax_agreement(c.want, c.got, C);
  EXPECT_GE(sqnr, kMinSqnrDb);
  EXPECT_GE(agree, kMinArgmaxAgreement);
  EXPECT_GE(c.q.stats.back().final_sqnr_db, c.q.stats.back().start_sqnr_db);
  // RAM: the inner buffers hold B x H and B x C values, never B x T x H.
  const int32_t B = 8;
  const ProgramMemory mem = program_memory(m, B, T);
  EXPECT_EQ(mem.activation_bytes, static_cast<size_t>(B) * H);
  EXPECT_EQ(mem.ops[0].output_bytes, static_cast<size_t>(B) * H);
  EXPECT_EQ(mem.ops[2].output_bytes, static_cast<size_t>(B) * C);
  EXPECT_EQ(mem.requant_bytes, 2u * C * sizeof(int32_t));  // one multiplier and shift per class
  std::printf("classifier: SQNR %.1f dB, argmax agreement %.1f%% on %d held-out sequences\n", sqnr, 100 * agree,
              c.shape.batch);
}

// A bidirectional classifier: y[:, -1] holds the reverse direction's first step, so the reverse
// op runs that step alone (QLSTM_OUTPUT_FIRST) beside the forward op's final state: no sequence
// is stored and no selection op copies a step; the model file is version 9 and reads back.
TEST(WholeProgram, BidirectionalClassifierRunsTheReverseOpOneStep) {
  std::mt19937_64 rng(32);
  const int32_t I = 4, H = 10, C = 4, T = 14;
  FloatProgram p = random_program(I, H, 1, 2, rng);
  p.head = {select_step(-1, 2 * H), linear(2 * H, C, 1.0f, rng, "/fc/Gemm"),
            elementwise(FloatLayerKind::kSoftmax, C, "/Softmax")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8,
                                            QLSTM_OP_SOFTMAX_S8}));
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FIRST);
  EXPECT_EQ(m.buffers[static_cast<size_t>(m.ops[1].output_buffer)].steps, QLSTM_BUFFER_ONE_STEP);
  EXPECT_FALSE(keeps_inner_sequence(p));
  EXPECT_EQ(model_format_version(m), kModelFormatVersionFirstStep);
  std::vector<int8_t> x8(c.x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = m.input_quant().quantize(c.x[k]);
  EXPECT_EQ(run_program_s8(parse_model(serialize_model(m), "mem"), x8, c.shape), run_program_s8(m, x8, c.shape));
  const double sqnr = sqnr_db(c.want, c.got), agree = argmax_agreement(c.want, c.got, C);
  EXPECT_GE(sqnr, kMinSqnrDb);
  EXPECT_GE(agree, kMinArgmaxAgreement);
  std::printf("bidirectional classifier: SQNR %.1f dB, argmax agreement %.1f%%\n", sqnr, 100 * agree);
}

// h_n[-1] -> Linear -> ReLU -> Linear: the ReLU folds into the first FC's clamp.
TEST(WholeProgram, FinalStateHeadWithFoldedRelu) {
  std::mt19937_64 rng(22);
  const int32_t I = 3, H = 12, T = 16;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.lstm_output = LstmOutput::kFinalState;
  // Weights of the scale torch initializes a Linear with (~ 1 / sqrt(inputs)).
  p.head = {linear(H, 10, 0.3f, rng, "/fc1/Gemm"), elementwise(FloatLayerKind::kActivation, 10, "/Relu"),
            linear(10, 3, 0.3f, rng, "/fc2/Gemm")};
  CompileOptions options;  // with the search, scored on h_n
  options.search_max_macs = int64_t{1} << 22;
  const Compiled c = compile_and_run(p, T, options);
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_FULLY_CONNECTED_S8}));
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.ops[1].as<DerivedFc>().fused_activation, "relu");
  EXPECT_EQ(m.ops[1].as<DerivedFc>().activation_min, m.buffers[2].quant.zero_point);
  EXPECT_EQ(m.buffers[2].quant.dequantize(-128), 0.0);  // the ReLU's output range starts at 0
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("h_n head: SQNR %.1f dB\n", sqnr);
}

// A Linear on every step (a forecaster); streaming it in chunks gives the whole run's output.
TEST(WholeProgram, PerStepHeadStreamsAsOneCall) {
  std::mt19937_64 rng(23);
  const int32_t I = 2, H = 10, T = 18;
  FloatProgram p = random_program(I, H, 2, 1, rng);
  p.head = {linear(H, 2, 0.5f, rng, "/head/MatMul")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8}));
  EXPECT_FALSE(m.output_is_one_step());
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("per-step head: SQNR %.1f dB\n", sqnr);
  const std::vector<int8_t> x8 = quantized_input(c);
  const std::vector<int8_t> whole = run_program_s8(m, x8, c.shape);
  for (int32_t chunk : {1, 5, 7}) EXPECT_EQ(run_program_s8_streamed(m, x8, c.shape, chunk), whole) << chunk;
}

// Linear (+ ReLU) front end -> LSTM: the front's output quantization is the LSTM's input.
TEST(WholeProgram, LinearFrontEnd) {
  std::mt19937_64 rng(24);
  const int32_t I = 6, F = 8, H = 12, T = 16;
  FloatProgram p = random_program(F, H, 1, 1, rng);
  p.front = {linear(I, F, 0.5f, rng, "/proj/MatMul"), elementwise(FloatLayerKind::kActivation, F, "/Relu")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_LSTM_S8}));
  EXPECT_EQ(m.input_size(), I);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().input.scale, m.buffers[1].quant.scale);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().input.zero_point, m.buffers[1].quant.zero_point);
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("front end: SQNR %.1f dB\n", sqnr);
}

// Streaming a last-step head: each chunk's output is the output at the chunk's last step, which is
// the run over the sequence up to that step.
TEST(WholeProgram, StreamingALastStepHeadGivesEachChunksLastStep) {
  std::mt19937_64 rng(25);
  const int32_t I = 3, H = 8, C = 4, T = 12, chunk = 5;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {select_step(-1, H), linear(H, C, 1.0f, rng, "/fc/Gemm"), elementwise(FloatLayerKind::kSoftmax, C, "/Softmax")};
  const Compiled c = compile_and_run(p, T, fast());
  const std::vector<int8_t> x8 = quantized_input(c);
  const SequenceShape s = {4, T, Layout::kBatchMajor};
  const std::vector<int8_t> x(x8.begin(), x8.begin() + static_cast<ptrdiff_t>(4 * T * I));
  const std::vector<int8_t> y = run_program_s8_streamed(c.q.model, x, s, chunk);
  const int32_t chunks = (T + chunk - 1) / chunk;
  ASSERT_EQ(y.size(), static_cast<size_t>(4 * chunks * C));
  for (int32_t k = 0; k < chunks; ++k) {
    const int32_t end = std::min(T, (k + 1) * chunk);
    std::vector<int8_t> prefix(static_cast<size_t>(4 * end * I));
    gather_steps(x.data(), 4, T, I, Layout::kBatchMajor, 0, end, prefix.data());
    const std::vector<int8_t> want = run_program_s8(c.q.model, prefix, {4, end, Layout::kBatchMajor});
    for (int32_t b = 0; b < 4; ++b) {
      for (int32_t o = 0; o < C; ++o) {
        EXPECT_EQ(y[static_cast<size_t>((b * chunks + k) * C + o)], want[static_cast<size_t>(b * C + o)])
            << "chunk " << k << " row " << b;
      }
    }
  }
}

// Every op kind through the model file: y[:, 2] (a selection op), FC, table, softmax, an FC front.
TEST(WholeProgram, ModelFileKeepsEveryOpKind) {
  std::mt19937_64 rng(26);
  const int32_t I = 3, F = 5, H = 8, T = 10;
  FloatProgram p = random_program(F, H, 1, 1, rng);
  p.front = {linear(I, F, 0.5f, rng, "/proj/MatMul")};
  p.head = {select_step(2, H), linear(H, 6, 0.8f, rng, "/fc1/Gemm"),
            elementwise(FloatLayerKind::kActivation, 6, "/Sigmoid", ActivationFn::kSigmoid),
            linear(6, 3, 1.0f, rng, "/fc2/Gemm"), elementwise(FloatLayerKind::kSoftmax, 3, "/Softmax")};
  CompileOptions options = fast();
  options.fc_per_channel = false;  // the per-tensor FC through the file too
  const Compiled c = compile_and_run(p, T, options);
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_LSTM_S8, QLSTM_OP_SELECT_STEP,
                                            QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_TABLE_S8,
                                            QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_SOFTMAX_S8}));
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_ALL_STEPS);  // y[:, 2] needs the sequence
  EXPECT_GE(sqnr_db(c.want, c.got), kMinSqnrDb);
  const CompiledModel back = parse_model(serialize_model(m), "m.qlstm");
  ASSERT_EQ(kinds(back), kinds(m));
  ASSERT_EQ(back.buffers.size(), m.buffers.size());
  for (size_t b = 0; b < m.buffers.size(); ++b) EXPECT_EQ(back.buffers[b].steps, m.buffers[b].steps) << b;
  EXPECT_EQ(back.ops[2].as<DerivedSelect>().step, 2);
  EXPECT_EQ(back.ops[3].as<DerivedFc>().weights, m.ops[3].as<DerivedFc>().weights);
  EXPECT_EQ(back.ops[3].as<DerivedFc>().weight_scales, m.ops[3].as<DerivedFc>().weight_scales);
  EXPECT_FALSE(back.ops[3].as<DerivedFc>().per_channel);
  EXPECT_EQ(back.ops[3].as<DerivedFc>().fused_activation, m.ops[3].as<DerivedFc>().fused_activation);
  EXPECT_EQ(back.ops[3].as<DerivedFc>().bias_q, m.ops[3].as<DerivedFc>().bias_q);
  EXPECT_EQ(back.ops[4].as<DerivedTable>().table, m.ops[4].as<DerivedTable>().table);
  EXPECT_EQ(back.ops[4].as<DerivedTable>().function, activation_fn_name(ActivationFn::kSigmoid));
  EXPECT_EQ(back.ops[6].as<DerivedSoftmax>().diff_min, m.ops[6].as<DerivedSoftmax>().diff_min);
  const std::vector<int8_t> x8 = quantized_input(c);
  EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
  // A fixed step of the whole sequence cannot be streamed.
  try {
    run_program_s8_streamed(m, x8, c.shape, 4);
    FAIL() << "streamed";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("selects time step 2"), std::string::npos) << e.what();
  }
}

// The per-op step visitor (what qlstm eval's saturation counts) sees every step of every op, batch
// row by batch row, and each row's last step is that op's h_n and c_n.
TEST(WholeProgram, StepVisitorSeesEveryStepOfEveryOp) {
  std::mt19937_64 rng(41);
  const int32_t I = 3, H = 5, T = 4, B = 2, layers = 2, directions = 2;
  const FloatProgram p = random_program(I, H, layers, directions, rng);
  const std::vector<float> x = sequences(B, T, I, 7);
  const size_t ops = p.ops.size();
  std::vector<int32_t> calls(ops, 0);
  std::vector<float> h_last(ops * B * H), c_last(ops * B * H);
  const FloatProgramResult r = run_float_program(
      p, x.data(), {B, T, Layout::kBatchMajor}, nullptr, nullptr,
      [&](int32_t op, const double* c, const double* h, int32_t n) {
        ASSERT_EQ(n, H);
        const int32_t k = calls[static_cast<size_t>(op)]++;
        if (k % T != T - 1) return;  // a row's last step: its final state
        const size_t at = (static_cast<size_t>(op) * B + static_cast<size_t>(k / T)) * H;
        for (int32_t u = 0; u < H; ++u) h_last[at + u] = static_cast<float>(h[u]), c_last[at + u] = static_cast<float>(c[u]);
      });
  EXPECT_EQ(calls, std::vector<int32_t>(ops, B * T));
  EXPECT_EQ(h_last, r.h_n);
  EXPECT_EQ(c_last, r.c_n);
}

// h_n[-1] of a bidirectional LSTM (the reverse direction's state): both ops write their final
// states into one [B][2H] row and the first Linear reads only the reverse half.
TEST(WholeProgram, BidirectionalFinalStateHead) {
  std::mt19937_64 rng(33);
  const int32_t I = 3, H = 8, T = 12;
  FloatProgram p = random_program(I, H, 1, 2, rng);
  p.lstm_output = LstmOutput::kFinalState;
  p.head = {linear(H, 6, 0.35f, rng, "/fc1/Gemm"), elementwise(FloatLayerKind::kActivation, 6, "/Relu"),
            linear(6, 2, 0.4f, rng, "/fc2/Gemm")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8,
                                            QLSTM_OP_FULLY_CONNECTED_S8}));
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.buffers[1].width, 2 * H);
  EXPECT_EQ(m.buffers[1].steps, QLSTM_BUFFER_ONE_STEP);
  for (int32_t o = 0; o < 6; ++o) {  // the forward half's weights are zero
    for (int32_t i = 0; i < H; ++i) EXPECT_EQ(m.ops[2].as<DerivedFc>().weights[static_cast<size_t>(o * 2 * H + i)], 0);
  }
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("bidirectional h_n head: SQNR %.1f dB\n", sqnr);
  // Without a Linear to read it, h_n[-1] of a bidirectional LSTM is refused, saying what to do.
  p.head = {elementwise(FloatLayerKind::kActivation, H, "/Tanh", ActivationFn::kTanh)};
  CalibrationSet calib;
  calib.add_batch(sequences(4, T, I, 1), {4, T, Layout::kBatchMajor}, I);
  try {
    compile_program(p, calib, fast());
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node '/Tanh' does; read y[:, -1] or torch.cat((h_n[-2], h_n[-1]), 1), or "
                                         "put the Linear first"),
              std::string::npos)
        << e.what();
  }
}

// Both directions' final states side by side: torch.cat((h_n[-2], h_n[-1]), 1) is the [B][2H] row
// the two ops write, read as it is (no Linear needed), and torch.cat((h_n[-1], h_n[-2]), 1) the
// same row with the first Linear's columns swapped; both equal the float program to the SQNR bound.
TEST(WholeProgram, BothDirectionsFinalStatesSideBySide) {
  std::mt19937_64 rng(34);
  const int32_t I = 3, H = 8, T = 12;
  FloatProgram p = random_program(I, H, 2, 2, rng);
  p.lstm_output = LstmOutput::kFinalState;
  p.final_directions = {0, 1};
  const Compiled alone = compile_and_run(p, T, fast());
  EXPECT_EQ(alone.q.model.output_size(), 2 * H);
  EXPECT_TRUE(alone.q.model.output_is_one_step());
  double sqnr = sqnr_db(alone.want, alone.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("cat(h_n[-2], h_n[-1]) as the output: SQNR %.1f dB\n", sqnr);
  p.final_directions = {1, 0};
  p.head = {linear(2 * H, 5, 0.35f, rng, "/fc/Gemm")};
  const Compiled swapped = compile_and_run(p, T, fast());
  const FloatLayer& fc = p.head.front();
  const DerivedFc& d = swapped.q.model.ops.back().as<DerivedFc>();
  ASSERT_EQ(d.input_size, 2 * H);
  for (int32_t o = 0; o < 5; ++o) {  // the Linear's reverse-state columns moved first, its forward-state ones second
    for (int32_t i = 0; i < H; ++i) {
      const double s_w = d.weight_scales[static_cast<size_t>(o)];
      EXPECT_EQ(d.weights[static_cast<size_t>(o * 2 * H + H + i)], std::nearbyint(fc.weight[static_cast<size_t>(o * 2 * H + i)] / s_w));
      EXPECT_EQ(d.weights[static_cast<size_t>(o * 2 * H + i)], std::nearbyint(fc.weight[static_cast<size_t>(o * 2 * H + H + i)] / s_w));
    }
  }
  sqnr = sqnr_db(swapped.want, swapped.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("cat(h_n[-1], h_n[-2]) -> Linear: SQNR %.1f dB\n", sqnr);
}

// Pooling over time (y.mean(dim=1), y.max(dim=1).values) then a Linear: the last layer writes its
// sequence, a pool op (its input's quantization) writes one row per batch row, and the held-out
// SQNR against the float program reaches the bound; in the time-major layout the same int8 model
// gives the same bytes per sequence.
TEST(WholeProgram, PoolingOverTime) {
  for (PoolFn fn : {PoolFn::kMean, PoolFn::kMax}) {
    std::mt19937_64 rng(fn == PoolFn::kMean ? 41 : 42);
    const int32_t I = 3, H = 8, T = 12;
    FloatProgram p = random_program(I, H, 1, fn == PoolFn::kMean ? 1 : 2, rng);
    const int32_t W = p.directions * H;
    FloatLayer pool = elementwise(FloatLayerKind::kPoolTime, W, "/ReduceMean");
    pool.pool = fn;
    p.head = {pool, linear(W, 4, 0.4f, rng, "/fc/Gemm")};
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    const size_t lstms = static_cast<size_t>(p.directions);
    ASSERT_EQ(m.ops.size(), lstms + 2);
    EXPECT_EQ(m.ops[lstms].kind, QLSTM_OP_POOL_S8);
    const DerivedPool& d = m.ops[lstms].as<DerivedPool>();
    EXPECT_EQ(d.block.kind, fn == PoolFn::kMean ? QLSTM_POOL_AVERAGE : QLSTM_POOL_MAX);
    EXPECT_TRUE(d.over_time());
    const ProgramBuffer& in = m.buffers[static_cast<size_t>(m.ops[lstms].input_buffer)];
    const ProgramBuffer& out = m.buffers[static_cast<size_t>(m.ops[lstms].output_buffer)];
    EXPECT_EQ(in.steps, QLSTM_BUFFER_EVERY_STEP);
    EXPECT_EQ(out.steps, QLSTM_BUFFER_ONE_STEP);
    EXPECT_EQ(in.quant.scale, out.quant.scale);
    EXPECT_EQ(in.quant.zero_point, out.quant.zero_point);
    EXPECT_TRUE(m.output_is_one_step());
    // Not streamable: a chunk holds part of what it pools (the bidirectional one: its reverse op says so first).
    EXPECT_NE(m.streaming_refusal().find(p.directions == 1 ? "the mean over every time step of the whole sequence"
                                                           : "reverse"),
              std::string::npos)
        << m.streaming_refusal();
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("%s over time -> Linear: SQNR %.1f dB\n", fn == PoolFn::kMean ? "mean" : "max", sqnr);
    // Time-major: the same sequences transposed give the same output bytes.
    const int32_t B = c.shape.batch;
    std::vector<int8_t> x8(c.x.size()), x8_tm(c.x.size());
    for (size_t k = 0; k < x8.size(); ++k) x8[k] = m.input_quant().quantize(c.x[k]);
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t t = 0; t < T; ++t) {
        std::copy_n(x8.begin() + (static_cast<ptrdiff_t>(b) * T + t) * I, I, x8_tm.begin() + (static_cast<ptrdiff_t>(t) * B + b) * I);
      }
    }
    EXPECT_EQ(run_program_s8(m, x8_tm, {B, T, Layout::kTimeMajor}), run_program_s8(m, x8, c.shape));
    // The model file: version 8 (the pooling kind), read back to the same program and bytes.
    const std::string file = serialize_model(m);
    EXPECT_EQ(model_format_version(m), 8u);
    const CompiledModel back = parse_model(file, "mem");
    EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
  }
}

// torch.cat((y.mean(1), y.max(1).values), 1) -> Linear, a bidirectional layer: one pooling op per
// reduction, each writing its part of one [B][2 x 2H] row at its output offset; the held-out SQNR
// reaches the bound; the model file reads back to the same bytes; an offset out of its place, or a
// part left unwritten, is refused naming the op.
TEST(WholeProgram, PoolingsConcatenated) {
  // The first and the last step as parts too: one-step selections writing their parts.
  {
    std::mt19937_64 rng(46);
    const int32_t H = 8, T = 10;
    FloatProgram p = random_program(3, H, 1, 1, rng);
    FloatLayer parts = elementwise(FloatLayerKind::kPoolTime, H, "/Concat");
    parts.pools = {PoolFn::kLastStep, PoolFn::kMean, PoolFn::kFirstStep};
    parts.output_size = 3 * H;
    p.head = {parts, linear(3 * H, 4, 0.4f, rng, "/fc/Gemm")};
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    ASSERT_EQ(m.ops.size(), 5u);
    EXPECT_EQ(m.ops[1].kind, QLSTM_OP_SELECT_STEP);
    EXPECT_EQ(m.ops[1].as<DerivedSelect>().step, -1);
    EXPECT_EQ(m.ops[2].kind, QLSTM_OP_POOL_S8);
    EXPECT_EQ(m.ops[3].as<DerivedSelect>().step, 0);
    EXPECT_EQ(m.ops[3].output_offset, 2 * H);
    EXPECT_TRUE(m.continues_row(2) && m.continues_row(3) && !m.continues_row(4));
    EXPECT_EQ(m.ops[0].output_steps(), QLSTM_OUTPUT_ALL_STEPS);  // the mean reads every step
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("cat(y[:, -1], mean over time, y[:, 0]) -> Linear: SQNR %.1f dB\n", sqnr);
  }
  std::mt19937_64 rng(45);
  const int32_t I = 3, H = 8, T = 12;
  FloatProgram p = random_program(I, H, 1, 2, rng);
  const int32_t W = p.directions * H;
  FloatLayer pools = elementwise(FloatLayerKind::kPoolTime, W, "/Concat");
  pools.pools = {PoolFn::kMean, PoolFn::kMax};
  pools.output_size = 2 * W;
  p.head = {pools, linear(2 * W, 4, 0.4f, rng, "/fc/Gemm")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  ASSERT_EQ(m.ops.size(), 5u);
  for (size_t k = 2; k < 4; ++k) {
    EXPECT_EQ(m.ops[k].kind, QLSTM_OP_POOL_S8);
    EXPECT_EQ(m.ops[k].output_offset, static_cast<int32_t>(k - 2) * W);
    EXPECT_EQ(m.ops[k].output_buffer, m.ops[2].output_buffer);
    EXPECT_EQ(m.op_rows(k), 1);
  }
  EXPECT_EQ(m.ops[2].as<DerivedPool>().block.kind, QLSTM_POOL_AVERAGE);
  EXPECT_EQ(m.ops[3].as<DerivedPool>().block.kind, QLSTM_POOL_MAX);
  EXPECT_EQ(m.buffers[static_cast<size_t>(m.ops[2].output_buffer)].width, 2 * W);
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("cat(mean, max over time) -> Linear: SQNR %.1f dB\n", sqnr);
  std::vector<int8_t> x8(c.x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = m.input_quant().quantize(c.x[k]);
  const CompiledModel back = parse_model(serialize_model(m), "mem");
  EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
  auto refusal = [](const CompiledModel& bad) {
    try {
      bad.validate("bad");
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CompiledModel swapped = m;
  std::swap(swapped.ops[2].output_offset, swapped.ops[3].output_offset);
  EXPECT_NE(refusal(swapped).find("ops[2].output_offset' must be its part's place in the row"), std::string::npos)
      << refusal(swapped);
  CompiledModel half = m;
  half.ops.erase(half.ops.begin() + 3);
  EXPECT_NE(refusal(half).find("the reads of one sequence write 1 of the 2 parts of their row"), std::string::npos)
      << refusal(half);
}

// A classifier trained with NLLLoss: LSTM -> y[:, -1] -> Linear -> LogSoftmax. The head ends in the
// log-softmax op at its fixed 16/256, 127 (TFLite's), the argmax is kept, and the model file is
// version 10 and reads back to the same bytes.
TEST(WholeProgram, LogSoftmaxHead) {
  std::mt19937_64 rng(44);
  const int32_t I = 4, H = 12, C = 6, T = 15;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {select_step(-1, H), linear(H, C, 1.5f, rng, "/fc/Gemm"), elementwise(FloatLayerKind::kLogSoftmax, C, "/LogSoftmax")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_LOG_SOFTMAX_S8}));
  EXPECT_EQ(m.output_quant().scale, 1.0 / 16);
  EXPECT_EQ(m.output_quant().zero_point, 127);
  const double sqnr = sqnr_db(c.want, c.got), agree = argmax_agreement(c.want, c.got, C);
  EXPECT_GE(sqnr, kMinSqnrDb);
  // The output step 1/16 holds two close classes as one value: where the int8 argmax differs from
  // the float one, the class it picks is within two steps of the float maximum.
  constexpr float kStep = 1.0f / 16;
  for (size_t r = 0; r < c.want.size() / C; ++r) {
    const auto want = c.want.begin() + static_cast<ptrdiff_t>(r * C), got = c.got.begin() + static_cast<ptrdiff_t>(r * C);
    const ptrdiff_t picked = std::max_element(got, got + C) - got;
    EXPECT_LE(*std::max_element(want, want + C) - want[picked], 2 * kStep) << "row " << r;
  }
  for (float v : c.got) EXPECT_LE(v, 0.0f);  // log-probabilities
  const std::vector<int8_t> x8 = quantized_input(c);
  const std::string file = serialize_model(m);
  EXPECT_EQ(model_format_version(m), 10u);
  const CompiledModel back = parse_model(file, "mem");
  EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
  std::printf("log-softmax classifier: SQNR %.1f dB, argmax agreement %.1f%%\n", sqnr, 100 * agree);
}

// Every step flattened into one Linear (y.reshape(B, -1) then Linear(T x H)): the FC reads the
// last layer's sequence buffer as one row of T x H per batch row, with no copy; the model runs on
// exactly T steps (another T is refused, naming both), cannot be streamed, and reads back from its
// model file to the same bytes.
TEST(WholeProgram, FlattenEveryStepIntoALinear) {
  std::mt19937_64 rng(43);
  const int32_t I = 3, H = 6, T = 7;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  FloatLayer flat = elementwise(FloatLayerKind::kFlattenTime, H, "/Reshape");
  flat.flatten_steps = T;
  flat.output_size = T * H;
  p.head = {flat, linear(T * H, 3, 0.3f, rng, "/fc/Gemm")};
  const Compiled c = compile_and_run(p, T, fast());
  const CompiledModel& m = c.q.model;
  EXPECT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8}));
  EXPECT_EQ(m.ops[1].as<DerivedFc>().input_size, T * H);
  EXPECT_EQ(m.buffers[1].steps, QLSTM_BUFFER_EVERY_STEP);
  EXPECT_EQ(m.buffers[2].steps, QLSTM_BUFFER_ONE_STEP);
  EXPECT_EQ(m.fixed_time_steps(), T);
  EXPECT_NE(m.streaming_refusal().find("reads all 7 steps of a sequence at once"), std::string::npos)
      << m.streaming_refusal();
  const double sqnr = sqnr_db(c.want, c.got);
  EXPECT_GE(sqnr, kMinSqnrDb);
  std::printf("flatten of every step -> Linear: SQNR %.1f dB\n", sqnr);
  std::vector<int8_t> x8(c.x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = m.input_quant().quantize(c.x[k]);
  const CompiledModel back = parse_model(serialize_model(m), "mem");
  EXPECT_EQ(back.fixed_time_steps(), T);
  EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
  // Another number of steps: refused before the runtime sees it.
  const std::vector<int8_t> longer(static_cast<size_t>(c.shape.batch) * (T + 1) * I, 0);
  try {
    run_program_s8(m, longer, {c.shape.batch, T + 1, Layout::kBatchMajor});
    FAIL() << "ran " << T + 1 << " steps";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("8 time steps; the model reads exactly 7 per sequence"), std::string::npos)
        << e.what();
  }
}

// A learned initial state that differs per batch row ([L, B, H]) is compiled in; the model then
// runs only at that batch.
TEST(WholeProgram, PerRowConstantInitialState) {
  std::mt19937_64 rng(28);
  const int32_t I = 3, H = 8, B = 3, T = 10;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.initial_hidden = p.initial_cell = StateSource::kConstant;
  std::normal_distribution<float> n(0.0f, 0.5f);
  p.h0.assign(1, std::vector<float>(static_cast<size_t>(B) * H));
  p.c0.assign(1, std::vector<float>(static_cast<size_t>(B) * H));
  for (float& v : p.h0[0]) v = std::tanh(n(rng));
  for (float& v : p.c0[0]) v = 2 * n(rng);
  CalibrationSet calib;
  for (uint64_t seed = 1; seed <= 64; ++seed) calib.add_batch(sequences(B, T, I, seed), {B, T, Layout::kBatchMajor}, I);
  QuantizedProgram q = compile_program(p, calib, fast());
  q.model.validate("per-row");
  EXPECT_EQ(q.model.constant_state_batch(), B);
  ASSERT_EQ(q.model.ops[0].initial_hidden.size(), static_cast<size_t>(B) * H);
  const SequenceShape s = {B, T, Layout::kBatchMajor};
  const std::vector<float> x = sequences(B, T, I, 100);  // held out
  const std::vector<float> want = run_float_program(p, x.data(), s).output;
  std::vector<int8_t> x8(x.size());
  for (size_t k = 0; k < x8.size(); ++k) x8[k] = q.model.input_quant().quantize(x[k]);
  std::vector<float> got;
  for (int8_t v : run_program_s8(q.model, x8, s)) got.push_back(static_cast<float>(q.model.output_quant().dequantize(v)));
  EXPECT_GE(sqnr_db(want, got), kMinSqnrDb);
  // Each row starts from its own state: the same input in every row gives different outputs.
  std::vector<int8_t> same(x8.begin(), x8.begin() + T * I);
  for (int32_t b = 1; b < B; ++b) same.insert(same.end(), x8.begin(), x8.begin() + T * I);
  const std::vector<int8_t> y = run_program_s8(q.model, same, s);
  EXPECT_NE(std::vector<int8_t>(y.begin(), y.begin() + H), std::vector<int8_t>(y.begin() + T * H, y.begin() + T * H + H));
  try {
    run_program_s8(q.model, std::vector<int8_t>(x8.begin(), x8.begin() + 2 * T * I), {2, T, Layout::kBatchMajor});
    FAIL() << "ran at batch 2";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the batch must be 3"), std::string::npos) << e.what();
  }
}

std::string load_error(const CompiledModel& m) {
  try {
    parse_model(serialize_model(m), "model.qlstm");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "accepted";
}

// A file with a valid checksum and one inconsistent field of a new op kind is refused naming it.
TEST(WholeProgram, LoaderRefusesEachInconsistentFieldOfTheNewKinds) {
  std::mt19937_64 rng(29);
  const int32_t I = 3, H = 6, T = 8;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.head = {select_step(-1, H), linear(H, 4, 0.5f, rng, "/fc/Gemm"),
            elementwise(FloatLayerKind::kActivation, 4, "/Tanh", ActivationFn::kTanh),
            elementwise(FloatLayerKind::kSoftmax, 4, "/Softmax")};
  CalibrationSet calib;
  calib.add_batch(sequences(16, T, I, 1), {16, T, Layout::kBatchMajor}, I);
  CompiledModel base = compile_program(p, calib, fast()).model;
  ASSERT_EQ(kinds(base), (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_TABLE_S8,
                                               QLSTM_OP_SOFTMAX_S8}));
  ASSERT_EQ(load_error(base), "accepted");
  struct Case {
    std::function<void(CompiledModel&)> mutate;
    std::string expected;  // part of the message
  };
  const Case cases[] = {
      {[](CompiledModel& m) { m.ops[1].as<DerivedFc>().shifts[0] = 40; }, "model.qlstm: ops[1].shifts"},
      {[](CompiledModel& m) { m.ops[1].as<DerivedFc>().activation_min = 100, m.ops[1].as<DerivedFc>().activation_max = 50; },
       "model.qlstm: ops[1].activation_max"},
      {[](CompiledModel& m) { m.ops[1].as<DerivedFc>().weights.pop_back(); },
       "serialize_model: field 'ops[1].fc.weights': expected 24 values"},
      {[](CompiledModel& m) { m.ops[2].as<DerivedTable>().table.resize(255); },
       "serialize_model: field 'ops[2].table.table': expected 256 values"},
      {[](CompiledModel& m) { m.ops[3].as<DerivedSoftmax>().diff_min = 5; }, "model.qlstm: ops[3].diff_min"},
      {[](CompiledModel& m) { m.ops[0].as<DerivedLstm>().output_steps = QLSTM_OUTPUT_ALL_STEPS; }, "model.qlstm: ops[0].output_steps"},
      {[](CompiledModel& m) { m.buffers[2].steps = QLSTM_BUFFER_EVERY_STEP; }, "model.qlstm: ops[1].output_buffer"},
      {[](CompiledModel& m) { m.buffers[2].quant.scale *= 2; },
       "model.qlstm: field 'ops[1]': output quantization differs from its output buffer's"},
      {[](CompiledModel& m) { m.ops[3].kind = QLSTM_OP_KIND_COUNT; }, "field 'ops[3].kind': " + std::to_string(QLSTM_OP_KIND_COUNT) + " is not an op kind this qlstm knows"},
  };
  for (const Case& c : cases) {
    CompiledModel m = base;
    c.mutate(m);
    std::string error;
    try {
      error = load_error(m);
    } catch (const CompileError& e) {
      error = e.what();  // serialize_model refuses an array that does not match its dims
    }
    EXPECT_NE(error.find(c.expected), std::string::npos) << "expected: " << c.expected << "\n     got: " << error;
  }
}

// Residual connections (y_l + x_l) after every layer of a stack, one direction and two, LSTM and
// GRU: an add op follows each layer, reading the layer's output and its input buffer and writing
// the sum over the input's area (no third activation area); the next layer and the head read the
// sum at its own calibrated quantization. Held out, the int8 program reaches the SQNR bound against
// the float program; the model file is version 11 and reads back to the same bytes; the loader
// refuses a second input that is not the operand the add was derived for.
TEST(WholeProgram, ResidualConnectionsBetweenLayers) {
  const auto same_quant = [](const AffineQuant& a, const AffineQuant& b) {
    return a.scale == b.scale && a.zero_point == b.zero_point;
  };
  struct Case {
    int32_t directions;
    CellKind cell;
    bool last_step;  // y[:, -1] -> Linear, else a per-step Linear
  };
  for (const Case& k : {Case{1, CellKind::kLstm, true}, Case{2, CellKind::kLstm, false}, Case{1, CellKind::kGru, false}}) {
    std::mt19937_64 rng(51 + k.directions + (k.cell == CellKind::kGru ? 10 : 0));
    const int32_t H = 8, W = k.directions * H, T = 12;
    FloatProgram p = random_program(W, H, 2, k.directions, rng, k.cell);
    p.residual = {true, true};
    p.head = {linear(W, 3, 0.4f, rng, "/fc/Gemm")};
    if (k.last_step) p.head.insert(p.head.begin(), select_step(-1, W));
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    const size_t D = static_cast<size_t>(k.directions);
    ASSERT_EQ(m.ops.size(), 2 * (D + 1) + (k.last_step ? 2 : 1));
    for (size_t layer = 0; layer < 2; ++layer) {
      const ProgramOp& add = m.ops[layer * (D + 1) + D];
      const ProgramOp& lstm = m.ops[layer * (D + 1)];
      ASSERT_EQ(add.kind, QLSTM_OP_ADD_S8) << "layer " << layer;
      EXPECT_EQ(add.input_buffer, lstm.output_buffer);
      EXPECT_EQ(add.second_input_buffer, lstm.input_buffer);
      EXPECT_EQ(add.output_buffer, lstm.output_buffer + 1);
      const DerivedAdd& d = add.as<DerivedAdd>();
      EXPECT_TRUE(same_quant(d.input1, lstm.recurrent_output()));
      EXPECT_TRUE(same_quant(d.input2, lstm.recurrent_input()));
      EXPECT_EQ(d.block.left_shift, 20);
    }
    // The second layer reads the first's sum.
    EXPECT_TRUE(same_quant(m.ops[D + 1].recurrent_input(), m.ops[D].as<DerivedAdd>().output));
    // Each of the two areas holds one B x T x W sequence: each sum is written over its layer's input.
    const ProgramMemory mem = program_memory(m, c.shape.batch, T);
    EXPECT_EQ(mem.activation_bytes, static_cast<size_t>(c.shape.batch) * T * W) << "activations";
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("residual %s stack, %d direction(s), %s head: SQNR %.1f dB\n", k.cell == CellKind::kGru ? "GRU" : "LSTM",
                k.directions, k.last_step ? "last-step" : "per-step", sqnr);
    const std::vector<int8_t> x8 = quantized_input(c);
    EXPECT_EQ(model_format_version(m), k.last_step ? 12u : 11u);  // a step selection's record: version 12
    const CompiledModel back = parse_model(serialize_model(m), "mem");
    EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
    const size_t a = D;  // the first add
    CompiledModel wrong = m;
    wrong.ops[a].second_input_buffer = wrong.ops[a].output_buffer;
    EXPECT_NE(load_error(wrong).find("ops[" + std::to_string(a) + "].second_input_buffer"), std::string::npos)
        << load_error(wrong);
    wrong = m;
    wrong.ops[a].as<DerivedAdd>().input2.scale *= 2;
    EXPECT_NE(load_error(wrong).find("its quantization differs from the op's second_input"), std::string::npos)
        << load_error(wrong);
    wrong = m;
    wrong.ops[a].as<DerivedAdd>().block.input2_zero_point += 1;
    EXPECT_NE(load_error(wrong).find("its zero points differ"), std::string::npos) << load_error(wrong);
    wrong = m;
    wrong.ops[0].second_input_buffer = 1;
    EXPECT_NE(load_error(wrong).find("second_input_buffer"), std::string::npos) << load_error(wrong);
  }
}

// LayerNorms (docs/arithmetic.md §21) between two stacked layers (the second with a residual
// connection, whose sum reads the LayerNorm's output as the layer's input) and in the head:
// each an op of its own between the buffers, what the layer above reads at its own calibrated
// quantization; held out, the 30 dB bound; the model file and the checker keep them in place.
TEST(WholeProgram, LayerNormsBetweenLayersAndInTheHead) {
  struct Case {
    int32_t directions;
    CellKind cell;
    bool residual;
  };
  for (const Case& k : {Case{1, CellKind::kLstm, false}, Case{2, CellKind::kLstm, true}, Case{1, CellKind::kGru, true}}) {
    std::mt19937_64 rng(71 + k.directions + (k.cell == CellKind::kGru ? 10 : 0));
    const int32_t H = 8, W = k.directions * H, T = 12;
    FloatProgram p = random_program(W, H, 2, k.directions, rng, k.cell);
    if (k.residual) p.residual = {false, true};
    p.between = {{random_layer_norm(W, rng, "/ln0")}, {}};
    p.head = {select_step(-1, W), random_layer_norm(W, rng, "/ln_head"), linear(W, 3, 0.4f, rng, "/fc/Gemm")};
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    const size_t D = static_cast<size_t>(k.directions);
    std::vector<int32_t> want;
    for (int32_t layer = 0; layer < 2; ++layer) {
      want.insert(want.end(), D, k.cell == CellKind::kGru ? QLSTM_OP_GRU_S8 : QLSTM_OP_LSTM_S8);
      if (layer == 1 && k.residual) want.push_back(QLSTM_OP_ADD_S8);
      if (layer == 0) want.push_back(QLSTM_OP_LAYER_NORM_S8);
    }
    // Without a residual sum the last layer's ops write the last step alone; the sum needs every step.
    if (k.residual) want.push_back(QLSTM_OP_SELECT_STEP);
    want.insert(want.end(), {QLSTM_OP_LAYER_NORM_S8, QLSTM_OP_FULLY_CONNECTED_S8});
    ASSERT_EQ(kinds(m), want);
    // The layer above reads each LayerNorm's output at its quantization.
    for (size_t j = 0; j + 1 < m.ops.size(); ++j) {
      if (m.ops[j].kind != QLSTM_OP_LAYER_NORM_S8 || !m.ops[j + 1].recurrent()) continue;
      const AffineQuant& out = m.ops[j].as<DerivedLayerNorm>().output;
      EXPECT_EQ(m.ops[j + 1].recurrent_input().scale, out.scale);
      EXPECT_EQ(m.ops[j + 1].recurrent_input().zero_point, out.zero_point);
      EXPECT_EQ(m.ops[j + 1].input_buffer, m.ops[j].output_buffer);
    }
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("LayerNorms in a %s stack, %d direction(s)%s: SQNR %.1f dB\n", k.cell == CellKind::kGru ? "GRU" : "LSTM",
                k.directions, k.residual ? ", a residual sum" : "", sqnr);
    const std::vector<int8_t> x8 = quantized_input(c);
    EXPECT_EQ(model_format_version(m), 15u);
    const CompiledModel back = parse_model(serialize_model(m), "mem");
    EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
    // A LayerNorm reading another buffer than the one before it is out of program order.
    CompiledModel wrong = m;
    const size_t ln = D;
    wrong.ops[ln].input_buffer -= 1;
    EXPECT_NE(load_error(wrong).find("ops[" + std::to_string(ln) + "]': buffers out of program order"), std::string::npos)
        << load_error(wrong);
  }
}

// A Linear and its activation between two stacked layers (FloatProgram::between; Keras'
// TimeDistributed(Dense) between two LSTMs): an FC op and a table op between the recurrent ops,
// the layer above reading the last one's output at its quantization; held out, the 30 dB bound; a
// forward stack with a per-step head streams as one call; the model file keeps them.
TEST(WholeProgram, LinearLayersBetweenRecurrentLayers) {
  struct Case {
    int32_t directions;
    CellKind cell;
  };
  for (const Case& k : {Case{1, CellKind::kLstm}, Case{2, CellKind::kLstm}, Case{1, CellKind::kGru}}) {
    std::mt19937_64 rng(91 + k.directions + (k.cell == CellKind::kGru ? 10 : 0));
    const int32_t H = 8, W = k.directions * H, T = 12;
    FloatProgram p = random_program(W, H, 2, k.directions, rng, k.cell);
    p.between = {{linear(W, W, 0.3f, rng, "/between/fc"),
                  elementwise(FloatLayerKind::kActivation, W, "/between/tanh", ActivationFn::kTanh)},
                 {}};
    p.head = {linear(W, 3, 0.4f, rng, "/fc/MatMul")};  // on every step
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    const size_t D = static_cast<size_t>(k.directions);
    const int32_t rec = k.cell == CellKind::kGru ? QLSTM_OP_GRU_S8 : QLSTM_OP_LSTM_S8;
    std::vector<int32_t> want(D, rec);
    want.insert(want.end(), {QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_TABLE_S8});
    want.insert(want.end(), D, rec);
    want.push_back(QLSTM_OP_FULLY_CONNECTED_S8);
    ASSERT_EQ(kinds(m), want);
    EXPECT_EQ(m.ops[D + 2].recurrent_input().scale, m.buffers[static_cast<size_t>(m.ops[D + 1].output_buffer)].quant.scale);
    EXPECT_EQ(m.ops[D + 2].input_buffer, m.ops[D + 1].output_buffer);
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("A Linear and Tanh between two %s layers, %d direction(s): SQNR %.1f dB\n",
                k.cell == CellKind::kGru ? "GRU" : "LSTM", k.directions, sqnr);
    const std::vector<int8_t> x8 = quantized_input(c);
    const std::vector<int8_t> whole = run_program_s8(m, x8, c.shape);
    const CompiledModel back = parse_model(serialize_model(m), "mem");
    EXPECT_EQ(run_program_s8(back, x8, c.shape), whole);
    if (k.directions == 1) {
      for (const int32_t chunk : {1, 5}) EXPECT_EQ(run_program_s8_streamed(m, x8, c.shape, chunk), whole) << chunk;
    }
  }
}

// Attention pooling (docs/arithmetic.md §22) on a stack's sequence, batch-first and
// sequence-first: the score Linear on every step into a one-value sequence, the pooling reading it
// and, as its second input, the stack's sequence, at the sequence's quantization; held out, the
// 30 dB bound; its output may share the sequence's area.
TEST(WholeProgram, AttentionPooling) {
  for (const int32_t directions : {1, 2}) {
    std::mt19937_64 rng(81 + directions);
    const int32_t H = 8, W = directions * H, T = 12;
    FloatProgram p = random_program(4, H, 1, directions, rng);
    std::normal_distribution<float> n(0.0f, 0.5f);
    FloatLayer attention;
    attention.kind = FloatLayerKind::kPoolTime;
    attention.pool = PoolFn::kAttention;
    attention.node = "/Softmax";
    attention.input_size = attention.output_size = W;
    for (int32_t i = 0; i < W; ++i) attention.weight.push_back(n(rng) * 3);
    attention.bias = {0.1f};
    p.head = {attention, linear(W, 3, 0.4f, rng, "/fc/Gemm")};
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    const size_t D = static_cast<size_t>(directions);
    std::vector<int32_t> want(D, QLSTM_OP_LSTM_S8);
    want.insert(want.end(), {QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_ATTENTION_POOL_S8, QLSTM_OP_FULLY_CONNECTED_S8});
    ASSERT_EQ(kinds(m), want);
    const ProgramOp& pool = m.ops[D + 1];
    EXPECT_EQ(pool.input_buffer, m.ops[D].output_buffer);          // the scores
    EXPECT_EQ(pool.second_input_buffer, m.ops[D].input_buffer);    // the sequence
    EXPECT_EQ(m.buffers[static_cast<size_t>(m.ops[D].output_buffer)].width, 1);
    const DerivedAttentionPool& d = pool.as<DerivedAttentionPool>();
    EXPECT_EQ(d.sequence.scale, m.ops[0].recurrent_output().scale);
    EXPECT_EQ(d.sequence.zero_point, m.ops[0].recurrent_output().zero_point);
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("attention pooling of %d direction(s) -> Linear: SQNR %.1f dB\n", directions, sqnr);
    EXPECT_EQ(model_format_version(m), 16u);
    const std::vector<int8_t> x8 = quantized_input(c);
    const CompiledModel back = parse_model(serialize_model(m), "mem");
    EXPECT_EQ(run_program_s8(back, x8, c.shape), run_program_s8(m, x8, c.shape));
    // The scores' buffer read as the sequence is refused, named.
    CompiledModel wrong = m;
    wrong.ops[D + 1].second_input_buffer = wrong.ops[D + 1].input_buffer;
    EXPECT_NE(load_error(wrong).find("second_input_buffer"), std::string::npos) << load_error(wrong);
  }
}

// Recurrent weights halved: random normal(0, 0.4) weights over H = 8 units have a spectral radius
// above 1, under which a ReLU RNN's state grows without bound over the steps (a trained one is
// stable; tanh saturates instead).
void damp_recurrence(FloatProgram* p) {
  for (FloatLstm& op : p->ops) {
    for (float& w : op.gates[0].w_h) w *= 0.5f;
  }
}

// nn.RNN, tanh and ReLU: two bidirectional layers, a Linear on every step; one RNN op per layer and
// direction, the held-out SQNR, the model file (version 17) and a stream of stateful calls equal
// to one call.
TEST(WholeProgram, VanillaRnnStacks) {
  for (const bool relu : {false, true}) {
    std::mt19937_64 rng(91 + relu);
    const int32_t H = 8, T = 12;
    FloatProgram p = random_program(4, H, 2, 2, rng, CellKind::kRnn, relu);
    damp_recurrence(&p);
    p.head = {linear(2 * H, 3, 0.4f, rng, "/fc/MatMul")};
    const Compiled c = compile_and_run(p, T, fast());
    const CompiledModel& m = c.q.model;
    ASSERT_EQ(kinds(m), (std::vector<int32_t>{QLSTM_OP_RNN_S8, QLSTM_OP_RNN_S8, QLSTM_OP_RNN_S8, QLSTM_OP_RNN_S8,
                                              QLSTM_OP_FULLY_CONNECTED_S8}));
    const DerivedRnn& first = m.ops[0].as<DerivedRnn>();
    EXPECT_EQ(first.activation, relu ? QLSTM_RNN_RELU : QLSTM_RNN_TANH);
    EXPECT_EQ(first.hidden_power, relu ? first.hidden_power : kRnnTanhHiddenPower);
    EXPECT_EQ(m.ops[1].as<DerivedRnn>().time_direction, QLSTM_TIME_REVERSE);
    const double sqnr = sqnr_db(c.want, c.got);
    EXPECT_GE(sqnr, kMinSqnrDb);
    std::printf("nn.RNN (%s) 2 x bidirectional -> Linear per step: SQNR %.1f dB held out, hidden format 2^%d\n",
                relu ? "relu" : "tanh", sqnr, first.hidden_power);
    EXPECT_EQ(model_format_version(m), 17u);
    const std::vector<int8_t> x8 = quantized_input(c);
    const std::vector<int8_t> whole = run_program_s8(m, x8, c.shape);
    const CompiledModel back = parse_model(serialize_model(m), "mem");
    EXPECT_EQ(back.ops[0].as<DerivedRnn>().hidden_power, first.hidden_power);
    EXPECT_EQ(run_program_s8(back, x8, c.shape), whole);
    // The forward-only stack streams: calls of 5 steps continue one sequence.
    FloatProgram forward = random_program(4, H, 2, 1, rng, CellKind::kRnn, relu);
    damp_recurrence(&forward);
    forward.head = {linear(H, 3, 0.4f, rng, "/fc/MatMul")};
    const Compiled f = compile_and_run(forward, T, fast());
    const std::vector<int8_t> fx8 = quantized_input(f);
    EXPECT_EQ(run_program_s8_streamed(f.q.model, fx8, f.shape, 5), run_program_s8(f.q.model, fx8, f.shape));
  }
}

// A residual connection needs its input as wide as its output, and the head to read the sum (not
// h_n); the 16x8 layers do not take one yet. Each is refused naming the layer.
TEST(WholeProgram, ResidualConnectionRefusals) {
  std::mt19937_64 rng(57);
  const int32_t T = 6;
  CalibrationSet calib;
  calib.add_batch(sequences(16, T, 8, 1), {16, T, Layout::kBatchMajor}, 8);
  const auto error = [&](const FloatProgram& p, const CompileOptions& o) {
    try {
      compile_program(p, calib, o);
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  FloatProgram narrow = random_program(8, 6, 2, 1, rng);
  narrow.residual = {true, false};
  EXPECT_NE(error(narrow, fast()).find("layer 0: a residual connection adds its input of 8 features to its output of 6"),
            std::string::npos)
      << error(narrow, fast());
  FloatProgram final_state = random_program(8, 8, 2, 1, rng);
  final_state.residual = {false, true};
  final_state.lstm_output = LstmOutput::kFinalState;
  EXPECT_NE(error(final_state, fast()).find("the head reads its final states"), std::string::npos)
      << error(final_state, fast());
  FloatProgram s16 = random_program(8, 8, 2, 1, rng);
  s16.residual = {true, false};
  CompileOptions o = fast();
  o.s16_layers = {true, true};
  EXPECT_NE(error(s16, o).find("a residual connection between 16x8 layers is not supported yet"), std::string::npos)
      << error(s16, o);
}

// Which programs keep a sequence between ops (so a symbolic length needs --max-time-steps): the
// compiled buffers say the same.
TEST(WholeProgram, KeepsAnInnerSequenceOnlyWhereABufferHoldsOne) {
  std::mt19937_64 rng(30);
  const int32_t I = 2, H = 4;
  std::vector<FloatProgram> programs(5, random_program(I, H, 1, 1, rng));
  programs[1].head = {select_step(-1, H), linear(H, 2, 0.5f, rng, "/fc")};            // last step: FINAL
  programs[2].head = {linear(H, 2, 0.5f, rng, "/fc")};                                // per step
  programs[3].head = {select_step(1, H)};                                             // y[:, 1]
  programs[4].front = {linear(I, I, 0.5f, rng, "/proj")};                             // front end
  const bool want[] = {false, false, true, true, true};
  CalibrationSet calib;
  calib.add_batch(sequences(4, 6, I, 1), {4, 6, Layout::kBatchMajor}, I);
  for (size_t k = 0; k < programs.size(); ++k) {
    EXPECT_EQ(keeps_inner_sequence(programs[k]), want[k]) << k;
    const CompiledModel m = compile_program(programs[k], calib, fast()).model;
    bool inner = false;
    for (size_t b = 1; b + 1 < m.buffers.size(); ++b) inner |= m.buffers[b].steps == QLSTM_BUFFER_EVERY_STEP;
    EXPECT_EQ(inner, want[k]) << k;
  }
}

// The report of a whole model: one op-table row per op (kind, shape, scales, fused activation,
// flash, RAM), every buffer, and memory totals that count them; the output is the last buffer's.
TEST(WholeProgram, ReportHasTheOpTableAndCountsEveryBuffer) {
  std::mt19937_64 rng(31);
  const int32_t I = 3, H = 8, C = 4, T = 12, B = 2;
  OnnxLstm onnx;
  onnx.program = random_program(I, H, 1, 1, rng);
  onnx.program.head = {select_step(-1, H), linear(H, 6, 0.5f, rng, "/fc1/Gemm"),
                       elementwise(FloatLayerKind::kActivation, 6, "/Relu"), linear(6, C, 0.8f, rng, "/fc2/Gemm"),
                       elementwise(FloatLayerKind::kSoftmax, C, "/Softmax")};
  onnx.batch_first = true;
  onnx.input_shape = {-1, T, I};
  ModelCompileOptions options;
  options.quantization = fast();
  options.batch = B;
  options.name = "clf";
  const ModelCompileResult r = compile_model(onnx, {{sequences(32, T, I, 1), {32, T, Layout::kBatchMajor}}}, options);
  const nlohmann::json& table = r.report.at("op_table");
  ASSERT_EQ(table.size(), 4u);
  const char* want_kinds[] = {"lstm", "fully_connected", "fully_connected", "softmax"};
  size_t flash = 0;
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(table[k].at("kind"), want_kinds[k]);
    flash += table[k].at("flash_bytes").get<size_t>();
    const ProgramBuffer& out = r.model.buffers[k + 1];
    EXPECT_EQ(table[k].at("output").at("scale").get<double>(), out.quant.scale);
    EXPECT_EQ(table[k].at("output").at("zero_point").get<int32_t>(), out.quant.zero_point);
    EXPECT_EQ(table[k].at("ram_bytes").get<size_t>(), static_cast<size_t>(B) * out.width);  // one step each
  }
  EXPECT_EQ(table[0].at("shape"), "[T, 3] -> [1, 8]");
  EXPECT_EQ(table[0].at("output_steps"), "final");
  EXPECT_EQ(table[1].at("fused_activation"), "relu");
  EXPECT_EQ(table[2].at("fused_activation"), "none");
  EXPECT_EQ(table[1].at("flash_bytes").get<size_t>(), 6u * H + 6 * 4 + 2 * 6 * 4);  // weights, biases, requants
  const nlohmann::json& memory = r.report.at("memory");
  EXPECT_EQ(memory.at("flash_bytes").get<size_t>(), flash);
  EXPECT_EQ(memory.at("activation_bytes").get<size_t>(), 2u * B * H);  // two areas, the widest one-step buffer
  EXPECT_EQ(r.report.at("buffers").size(), 5u);
  EXPECT_EQ(r.report.at("output").at("scale").get<double>(), 1.0 / 256);
  EXPECT_EQ(r.report.at("output").at("zero_point").get<int32_t>(), -128);
  EXPECT_EQ(r.report.at("output").at("observer"), "softmax: fixed 1/256, -128");
  EXPECT_EQ(r.report.at("output").at("steps"), "one per batch row");
  EXPECT_TRUE(std::isfinite(r.sqnr_db));
}

TEST(WholeProgram, RefusesWhatItCannotCompileNamingTheNode) {
  std::mt19937_64 rng(27);
  FloatProgram p = random_program(3, 4, 1, 1, rng);
  p.head = {linear(4, 2, 0.5f, rng, "/fc/Gemm"), select_step(-1, 2)};
  CalibrationSet calib;
  calib.add_batch(sequences(4, 6, 3, 1), {4, 6, Layout::kBatchMajor}, 3);
  try {
    compile_program(p, calib, fast());
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'/Gather'"), std::string::npos) << e.what();
  }
  p.head = {select_step(7, 4)};  // step 7 of 6-step calibration sequences
  try {
    compile_program(p, calib, fast());
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the head reads step 7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace qlstm
