// Sequence to sequence (docs/compiler.md, "A final state repeated over time"): an imported LSTM
// autoencoder compiles into an encoder that writes its final state alone and a decoder that reads
// it at every step (input_repeated); the program equals the decoder run on the T copies of that
// state, survives the model file, keeps its accuracy on held-out sequences, and refuses streaming.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/kernels.h"
#include "qlstm_model_generated.h"

namespace {

using namespace qlstm::compiler;

std::vector<float> normal(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Compiled {
  OnnxLstm onnx;
  QuantizedProgram q;
};

Compiled compile_fixture(const std::string& name, std::mt19937_64& rng) {
  Compiled c{import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/" + name + ".onnx"), {}};
  const int32_t I = c.onnx.program.input_size();
  CalibrationSet cal;
  cal.add_batch(normal(rng, static_cast<size_t>(32 * 6 * I)), {32, 6, Layout::kBatchMajor}, I);
  CompileOptions options;
  options.tuning = Tuning::kNone;
  c.q = compile_program(c.onnx.program, cal, options);
  return c;
}

// The program's output is the decoder (op `dec`, then the head) run on T copies of what the ops
// before it write: the encoder's final state and the layers on it, one step per batch row.
void expect_decoder_on_copies(const CompiledModel& m, size_t dec, const std::vector<int8_t>& x, const SequenceShape& s) {
  CompiledModel front = m;  // the ops up to the decoder: a model whose output is that one step
  front.ops.resize(dec);
  front.buffers.resize(dec + 1);
  const std::vector<int8_t> state = run_program_s8(front, x, s);  // [B][W]
  const size_t W = static_cast<size_t>(m.buffers[dec].width);
  ASSERT_EQ(state.size(), static_cast<size_t>(s.batch) * W);
  std::vector<int8_t> copies;
  for (int32_t b = 0; b < s.batch; ++b) {
    const auto row = state.begin() + static_cast<ptrdiff_t>(b * W);
    for (int32_t t = 0; t < s.time_steps; ++t) copies.insert(copies.end(), row, row + static_cast<ptrdiff_t>(W));
  }
  CompiledModel tail = m;  // the decoder and the head, on the copies
  tail.ops.erase(tail.ops.begin(), tail.ops.begin() + static_cast<ptrdiff_t>(dec));
  if (m.ops[dec].holds<DerivedGru>()) {
    DerivedGru on_sequence = m.ops[dec].as<DerivedGru>();
    on_sequence.input_repeated = 0;
    tail.ops[0].set(on_sequence);
  } else {
    DerivedLstm on_sequence = m.ops[dec].as<DerivedLstm>();
    on_sequence.input_repeated = 0;
    tail.ops[0].set(on_sequence);
  }
  tail.buffers.erase(tail.buffers.begin(), tail.buffers.begin() + static_cast<ptrdiff_t>(dec));
  tail.buffers[0].steps = QLSTM_BUFFER_EVERY_STEP;
  for (ProgramOp& op : tail.ops) {
    op.input_buffer -= static_cast<int32_t>(dec);
    op.output_buffer -= static_cast<int32_t>(dec);
  }
  EXPECT_EQ(run_program_s8(m, x, s), run_program_s8(tail, copies, s));
}

TEST(Seq2Seq, EncoderWritesItsFinalStateTheDecoderReadsItRepeated) {
  std::mt19937_64 rng(301);
  const Compiled c = compile_fixture("seq2seq_repeat_h_n", rng);
  EXPECT_EQ(c.onnx.program.repeated, (std::vector<bool>{true, false}));
  const CompiledModel& m = c.q.model;
  ASSERT_EQ(m.ops.size(), 3u);  // encoder, decoder, the Linear per step
  const DerivedLstm& enc = m.ops[0].as<DerivedLstm>();
  const DerivedLstm& dec = m.ops[1].as<DerivedLstm>();
  EXPECT_EQ(enc.output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(enc.input_repeated, 0);
  EXPECT_EQ(dec.output_steps, QLSTM_OUTPUT_ALL_STEPS);
  EXPECT_EQ(dec.input_repeated, 1);
  EXPECT_EQ(m.buffers[static_cast<size_t>(m.ops[1].input_buffer)].steps, QLSTM_BUFFER_ONE_STEP);
  EXPECT_EQ(model_format_version(m), kModelFormatVersionRepeatedInput);

  const SequenceShape s{3, 6, Layout::kBatchMajor};
  const int32_t I = enc.input_size;
  std::vector<int8_t> x(static_cast<size_t>(3 * 6 * I));
  for (int8_t& v : x) v = static_cast<int8_t>(rng());
  expect_decoder_on_copies(m, 1, x, s);

  // The model file keeps both, and the program runs the same.
  const CompiledModel back = parse_model(serialize_model(m), "memory");
  EXPECT_EQ(back.ops[1].as<DerivedLstm>().input_repeated, 1);
  EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));

  // The emitted source has no streaming entry: a chunk's final state is not the sequence's.
  EXPECT_NE(m.streaming_refusal().find("cannot be streamed"), std::string::npos) << m.streaming_refusal();
  const EmittedSource e = emit_cpp(m, "ae", 1, 6, "test");
  EXPECT_EQ(e.header.find("ae_stream("), std::string::npos);
}

// A bottleneck between the encoder's state and the repetition (Linear, ReLU, Linear), or a layer
// after the repetition (Linear, Tanh): each runs once per call, on the one-step state.
TEST(Seq2Seq, LayersOnTheRepeatedStateRunOnItsOneStep) {
  for (const char* name : {"seq2seq_bottleneck_h_n", "seq2seq_linear_after_repeat"}) {
    SCOPED_TRACE(name);
    std::mt19937_64 rng(304);
    const Compiled c = compile_fixture(name, rng);
    const CompiledModel& m = c.q.model;
    // Encoder, two per-position ops (a ReLU folds into its Linear's clamp, a Tanh is a table),
    // decoder, the Linear per step.
    ASSERT_EQ(m.ops.size(), 5u);
    EXPECT_EQ(m.ops[0].as<DerivedLstm>().output_steps, QLSTM_OUTPUT_FINAL);
    for (size_t k : {1u, 2u}) {
      EXPECT_FALSE(m.ops[k].recurrent());
      EXPECT_EQ(m.buffers[static_cast<size_t>(m.ops[k].output_buffer)].steps, QLSTM_BUFFER_ONE_STEP);
    }
    EXPECT_EQ(m.ops[3].as<DerivedLstm>().input_repeated, 1);
    EXPECT_EQ(m.ops[3].as<DerivedLstm>().input_size, c.onnx.program.ops[1].input_size);
    const SequenceShape s{3, 6, Layout::kBatchMajor};
    std::vector<int8_t> x(static_cast<size_t>(3 * 6 * c.onnx.program.input_size()));
    for (int8_t& v : x) v = static_cast<int8_t>(rng());
    expect_decoder_on_copies(m, 3, x, s);
    const CompiledModel back = parse_model(serialize_model(m), "memory");
    EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));
    // A layer on the state that writes a sequence is refused by the model check.
    CompiledModel every_step = m;
    every_step.buffers[static_cast<size_t>(m.ops[1].output_buffer)].steps = QLSTM_BUFFER_EVERY_STEP;
    EXPECT_THROW(every_step.validate("memory"), CompileError);
  }
}

// A GRU autoencoder: the GRU decoder reads the encoder's final state repeated (its three gates'
// input projection once per call), survives the model file (version 19) and equals the decoder on
// the copies.
TEST(Seq2Seq, GruDecoderReadsTheStateRepeated) {
  std::mt19937_64 rng(305);
  const Compiled c = compile_fixture("seq2seq_gru_h_n", rng);
  const CompiledModel& m = c.q.model;
  ASSERT_EQ(m.ops.size(), 3u);
  EXPECT_EQ(m.ops[0].as<DerivedGru>().output_steps, QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(m.ops[1].as<DerivedGru>().input_repeated, 1);
  EXPECT_EQ(model_format_version(m), kModelFormatVersionRepeatedGru);
  const SequenceShape s{3, 6, Layout::kBatchMajor};
  std::vector<int8_t> x(static_cast<size_t>(3 * 6 * c.onnx.program.input_size()));
  for (int8_t& v : x) v = static_cast<int8_t>(rng());
  expect_decoder_on_copies(m, 1, x, s);
  const CompiledModel back = parse_model(serialize_model(m), "memory");
  EXPECT_EQ(back.ops[1].as<DerivedGru>().input_repeated, 1);
  EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));
  // Labelled version 18, its GRU record is one field too long.
  const std::string bytes = serialize_model(m);
  const flatbuffers::Vector<uint8_t>* inner = qlstm::fb::GetModelFile(bytes.data())->model();
  EXPECT_THROW(parse_model(seal_model(std::string(inner->begin(), inner->end()), 18), "v18.qlstm"), CompileError);
}

// The runtime refuses the pair broken either way: a decoder that reads a sequence buffer repeated,
// or a one-step buffer as a sequence; and a model file of version 17 cannot hold the field.
TEST(Seq2Seq, InconsistentRepeatedInputsAreRefused) {
  std::mt19937_64 rng(302);
  const Compiled c = compile_fixture("seq2seq_last_step_static", rng);
  CompiledModel m = c.q.model;
  DerivedLstm dec = m.ops[1].as<DerivedLstm>();
  ASSERT_EQ(dec.input_repeated, 1);
  dec.input_repeated = 0;
  CompiledModel reads_sequence = m;
  reads_sequence.ops[1].set(dec);
  try {
    reads_sequence.validate("memory");
    ADD_FAILURE() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("input_buffer"), std::string::npos) << e.what();
  }
  CompiledModel every_step = m;
  every_step.buffers[static_cast<size_t>(m.ops[1].input_buffer)].steps = QLSTM_BUFFER_EVERY_STEP;
  EXPECT_THROW(every_step.validate("memory"), CompileError);
  // The same model's bytes labelled version 17: its LSTM records are one field too long.
  const std::string bytes = serialize_model(m);
  const flatbuffers::Vector<uint8_t>* inner = qlstm::fb::GetModelFile(bytes.data())->model();
  try {
    parse_model(seal_model(std::string(inner->begin(), inner->end()), 17), "v17.qlstm");
    ADD_FAILURE() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes after the last field"), std::string::npos) << e.what();
  }
}

// Held out: the int8 autoencoder against the float program on sequences the compiler never saw.
TEST(Seq2Seq, HeldOutAgainstTheFloatProgram) {
  for (const char* name : {"seq2seq_repeat_h_n", "seq2seq_expand_h_n", "seq2seq_last_step_opset17",
                           "seq2seq_stacked_h_n", "seq2seq_bottleneck_h_n", "seq2seq_linear_after_repeat",
                           "seq2seq_batch_of_one_unbatched", "seq2seq_gru_h_n"}) {
    std::mt19937_64 rng(303);
    const Compiled c = compile_fixture(name, rng);
    const int32_t I = c.onnx.program.input_size();
    const SequenceShape s{16, 6, Layout::kBatchMajor};
    const std::vector<float> x = normal(rng, static_cast<size_t>(16 * 6 * I));
    const std::vector<float> want = run_float_program(c.onnx.program, x.data(), s).output;
    const double db = sqnr_db(want, run_program_float(c.q.model, x, s));
    EXPECT_GT(db, 30.0) << name;
    std::printf("%s: held out %.2f dB\n", name, db);
  }
}

}  // namespace
