// The .qlstm file: a round trip keeps every parameter and the bits of every output; damaged,
// truncated, foreign and future-version files are refused with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <tuple>

#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm_model_generated.h"
#include "random_program.h"
#include "s16_model.h"

namespace {

using namespace qlstm::compiler;

// small_model's LSTM with HardSigmoid gates (Keras' line; the float model's alpha and beta).
FloatLstm hard_sigmoid_lstm(FloatLstm l) {
  l.gate_sigmoid = {true, 0.2f, 0.5f};
  return l;
}

CompiledModel small_model(bool hard_sigmoid = false) {
  std::mt19937_64 rng(21);
  std::normal_distribution<float> n(0.0f, 0.4f);
  const int32_t I = 3, H = 4;
  std::vector<float> wih(4 * H * I), whh(4 * H * H), b(4 * H);
  for (auto& v : wih) v = n(rng);
  for (auto& v : whh) v = n(rng);
  for (auto& v : b) v = n(rng);
  FloatLstm l = FloatLstm::from_torch(I, H, wih, whh, b, b);
  if (hard_sigmoid) l = hard_sigmoid_lstm(l);
  std::vector<float> x(8 * 10 * I);
  for (auto& v : x) v = n(rng) * 3;
  CalibrationSet set;
  set.add_batch(x, {8, 10, Layout::kBatchMajor}, I);
  CompileOptions o;
  o.tuning = Tuning::kNone;
  CompiledModel m = single_op_model(QuantizedLayer::compile(l, set, o).derived(), "small", true);
  m.report_json = "{\"note\": \"test\"}";
  return m;
}

std::string error_of(const std::string& bytes) {
  try {
    parse_model(bytes, "model.qlstm");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFile, RoundTripIsExact) {
  const CompiledModel m = small_model();
  const CompiledModel r = parse_model(serialize_model(m), "mem");
  EXPECT_EQ(r.name, "small");
  EXPECT_TRUE(r.batch_first);
  EXPECT_EQ(r.report_json, m.report_json);
  EXPECT_EQ(r.ops[0].as<DerivedLstm>().input.scale, m.ops[0].as<DerivedLstm>().input.scale);
  EXPECT_EQ(r.ops[0].as<DerivedLstm>().output.zero_point, m.ops[0].as<DerivedLstm>().output.zero_point);
  EXPECT_EQ(r.ops[0].as<DerivedLstm>().cell.power, m.ops[0].as<DerivedLstm>().cell.power);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    EXPECT_EQ(r.ops[0].as<DerivedLstm>().gates[g].w_x, m.ops[0].as<DerivedLstm>().gates[g].w_x);
    EXPECT_EQ(r.ops[0].as<DerivedLstm>().gates[g].hidden_effective_bias, m.ops[0].as<DerivedLstm>().gates[g].hidden_effective_bias);
    EXPECT_EQ(r.ops[0].as<DerivedLstm>().gates[g].input_to_q3_12.multiplier, m.ops[0].as<DerivedLstm>().gates[g].input_to_q3_12.multiplier);
  }
  std::mt19937_64 rng(2);
  std::vector<int8_t> x(2 * 7 * 3);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  const SequenceShape shape{2, 7, Layout::kBatchMajor};
  EXPECT_EQ(run_kernel_s8(r.ops[0].as<DerivedLstm>(), x, shape), run_kernel_s8(m.ops[0].as<DerivedLstm>(), x, shape));
}

// A HardSigmoid gate's line (docs/arithmetic.md §3.1) makes the file version 13 and reads back
// exactly; a model without one is still written as before (the int8 version), its records without
// lines.
TEST(ModelFile, HardSigmoidLinesRoundTripAsVersion13) {
  const CompiledModel m = small_model(true);
  const DerivedLstm& d = m.ops[0].as<DerivedLstm>();
  ASSERT_EQ(d.gates[QLSTM_GATE_FORGET].activation, QLSTM_ACTIVATION_HARD_SIGMOID);
  ASSERT_EQ(d.gates[QLSTM_GATE_CELL].activation, QLSTM_ACTIVATION_TANH);
  EXPECT_EQ(d.gates[QLSTM_GATE_INPUT].hard_sigmoid.offset_q0_15, 16384);  // round(0.5 * 2^15)
  EXPECT_EQ(d.gates[QLSTM_GATE_INPUT].hard_sigmoid.slope.shift, 1);       // 1.6 = 0.8 * 2^1
  EXPECT_EQ(model_format_version(m), kModelFormatVersionGateLines);
  EXPECT_EQ(model_format_version(small_model()), kModelFormatVersionS8);
  const std::string file = serialize_model(m);
  const CompiledModel r = parse_model(file, "mem");
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const DerivedGate &want = d.gates[g], &got = r.ops[0].as<DerivedLstm>().gates[g];
    EXPECT_EQ(got.activation, want.activation) << g;
    EXPECT_EQ(got.hard_sigmoid.slope.multiplier, want.hard_sigmoid.slope.multiplier) << g;
    EXPECT_EQ(got.hard_sigmoid.slope.shift, want.hard_sigmoid.slope.shift) << g;
    EXPECT_EQ(got.hard_sigmoid.offset_q0_15, want.hard_sigmoid.offset_q0_15) << g;
  }
  std::mt19937_64 rng(3);
  std::vector<int8_t> x(2 * 7 * 3);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  const SequenceShape shape{2, 7, Layout::kBatchMajor};
  const std::vector<int8_t> hard = run_kernel_s8(d, x, shape);
  EXPECT_EQ(run_kernel_s8(r.ops[0].as<DerivedLstm>(), x, shape), hard);
  EXPECT_NE(run_kernel_s8(small_model().ops[0].as<DerivedLstm>(), x, shape), hard) << "the line is not the sigmoid";
  // The same file labelled version 12 (the version is outside the checksum) is read without the
  // lines, so its records are too long: refused, not misread.
  bool relabelled = false;
  for (size_t k = 0; k + 4 <= file.size() && !relabelled; ++k) {
    const char v13[4] = {static_cast<char>(kModelFormatVersionGateLines), 0, 0, 0};
    if (file.compare(k, 4, std::string(v13, 4)) != 0) continue;
    std::string d12 = file;
    d12[k] = static_cast<char>(kModelFormatVersionGateLines - 1);
    relabelled = error_of(d12).find("bytes after the last field") != std::string::npos;
  }
  EXPECT_TRUE(relabelled);
}

// An embedding (7 rows of 3) on token ids in front of small_model's kind of LSTM.
CompiledModel embedding_model() {
  std::mt19937_64 rng(22);
  std::normal_distribution<float> n(0.0f, 0.4f);
  const int32_t V = 7, E = 3, H = 4;
  FloatProgram p;
  FloatLayer emb;
  emb.kind = FloatLayerKind::kEmbedding;
  emb.node = "emb";
  emb.input_size = 1;
  emb.output_size = E;
  emb.weight.resize(static_cast<size_t>(V) * E);
  for (auto& v : emb.weight) v = n(rng) * 2;
  p.front = {emb};
  std::vector<float> wih(4 * H * E), whh(4 * H * H), b(4 * H);
  for (auto* w : {&wih, &whh, &b}) {
    for (auto& v : *w) v = n(rng);
  }
  p.ops = {FloatLstm::from_torch(E, H, wih, whh, b, b)};
  std::vector<float> ids(8 * 10);
  for (auto& v : ids) v = static_cast<float>(rng() % V);
  CalibrationSet set;
  set.add_batch(ids, {8, 10, Layout::kBatchMajor}, 1);
  CompileOptions o;
  o.tuning = Tuning::kNone;
  CompiledModel m = compile_program(p, set, o).model;
  m.name = "embedding";
  m.batch_first = true;
  return m;
}

// Version 14: the embedding's table and the int32 input buffer round-trip, the same output bits;
// relabelled version 13, its kind is unknown: refused naming the field.
TEST(ModelFile, EmbeddingRoundTripsAsVersion14) {
  const CompiledModel m = embedding_model();
  ASSERT_EQ(m.ops.front().kind, QLSTM_OP_EMBEDDING_S8);
  ASSERT_TRUE(m.token_ids());
  EXPECT_EQ(model_format_version(m), 14u);
  const std::string file = serialize_model(m);
  const CompiledModel r = parse_model(file, "mem");
  EXPECT_EQ(r.buffers.front().type, QLSTM_ELEMENT_S32);
  EXPECT_EQ(r.ops.front().as<DerivedEmbedding>().table, m.ops.front().as<DerivedEmbedding>().table);
  EXPECT_EQ(r.ops.front().as<DerivedEmbedding>().table_rows, 7);
  std::vector<float> ids(2 * 9);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<float>((k * 5) % 7);
  const SequenceShape shape{2, 9, Layout::kBatchMajor};
  EXPECT_EQ(run_program_float(r, ids, shape), run_program_float(m, ids, shape));
  bool relabelled = false;
  for (size_t k = 0; k + 4 <= file.size() && !relabelled; ++k) {
    const char v14[4] = {14, 0, 0, 0};
    if (file.compare(k, 4, std::string(v14, 4)) != 0) continue;
    std::string v13 = file;
    v13[k] = 13;
    relabelled = error_of(v13).find("program[0].kind': 14 is not an op kind this qlstm knows") != std::string::npos;
  }
  EXPECT_TRUE(relabelled);
  // Token ids only as the input: an int32 buffer elsewhere is refused, naming the op that writes it.
  CompiledModel moved = m;
  moved.buffers[1].type = QLSTM_ELEMENT_S32;
  EXPECT_THROW(moved.validate("moved"), CompileError);
  try {
    moved.validate("moved");
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0].output_buffer: element type not int8, int16 or int32"), std::string::npos)
        << e.what();
  }
}

// Two LSTM layers with a LayerNorm between them and one on the last step (gamma, beta, epsilon).
CompiledModel layer_norm_model() {
  std::mt19937_64 rng(23);
  std::normal_distribution<float> n(0.0f, 0.4f);
  const int32_t I = 3, H = 4;
  FloatProgram p;
  for (int32_t in : {I, H}) {
    std::vector<float> wih(4 * H * in), whh(4 * H * H), b(4 * H);
    for (auto* w : {&wih, &whh, &b}) {
      for (auto& v : *w) v = n(rng);
    }
    p.ops.push_back(FloatLstm::from_torch(in, H, wih, whh, b, b));
  }
  p.between = {{random_layer_norm(H, rng, "between")}, {}};
  FloatLayer select;
  select.kind = FloatLayerKind::kSelectStep;
  select.node = "last";
  select.input_size = select.output_size = H;
  p.head = {select, random_layer_norm(H, rng, "head")};
  std::vector<float> x(8 * 10 * I);
  for (auto& v : x) v = n(rng) * 2;
  CalibrationSet set;
  set.add_batch(x, {8, 10, Layout::kBatchMajor}, I);
  CompileOptions o;
  o.tuning = Tuning::kNone;
  CompiledModel m = compile_program(p, set, o).model;
  m.name = "layer_norm";
  return m;
}

TEST(ModelFile, LayerNormRoundTripsAsVersion15) {
  const CompiledModel m = layer_norm_model();
  std::vector<int32_t> kinds;
  for (const ProgramOp& op : m.ops) kinds.push_back(op.kind);
  ASSERT_EQ(kinds, (std::vector<int32_t>{QLSTM_OP_LSTM_S8, QLSTM_OP_LAYER_NORM_S8, QLSTM_OP_LSTM_S8,
                                         QLSTM_OP_LAYER_NORM_S8}));
  EXPECT_EQ(model_format_version(m), 15u);
  const std::string file = serialize_model(m);
  const CompiledModel r = parse_model(file, "mem");
  for (size_t k : {size_t{1}, size_t{3}}) {
    const DerivedLayerNorm& a = m.ops[k].as<DerivedLayerNorm>();
    const DerivedLayerNorm& b = r.ops[k].as<DerivedLayerNorm>();
    EXPECT_EQ(b.weights, a.weights);
    EXPECT_EQ(b.biases, a.biases);
    EXPECT_EQ(std::make_tuple(b.epsilon_term, b.epsilon_shift, b.output_shift),
              std::make_tuple(a.epsilon_term, a.epsilon_shift, a.output_shift));
    EXPECT_EQ(b.epsilon(), a.epsilon());
    // FloatLayer's default 1e-5, to the block's unit: a squared input step over F^2, rounded.
    const double unit = a.input.scale * a.input.scale / (a.row_size * a.row_size) * std::ldexp(1.0, a.epsilon_shift);
    EXPECT_NEAR(a.epsilon(), 1e-5, unit / 2);
  }
  std::mt19937_64 rng(5);
  std::vector<float> x(2 * 9 * 3);
  for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 50.0f;
  const SequenceShape shape{2, 9, Layout::kBatchMajor};
  EXPECT_EQ(run_program_float(r, x, shape), run_program_float(m, x, shape));
  // The same file labelled 14 does not know the kind.
  bool relabelled = false;
  for (size_t k = 0; k + 4 <= file.size() && !relabelled; ++k) {
    const char v15[4] = {15, 0, 0, 0};
    if (file.compare(k, 4, std::string(v15, 4)) != 0) continue;
    std::string v14 = file;
    v14[k] = 14;
    relabelled = error_of(v14).find("kind': 15 is not an op kind this qlstm knows") != std::string::npos;
  }
  EXPECT_TRUE(relabelled);
  // A record whose zero point disagrees with its output buffer's is refused, naming the field.
  CompiledModel moved = m;
  moved.buffers[2].quant.zero_point += 1;
  EXPECT_THROW(parse_model(serialize_model(moved), "moved"), CompileError);
}

TEST(ModelFile, DamageIsRefusedWithTheReason) {
  const std::string good = serialize_model(small_model());
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)).find("truncated or corrupted"), std::string::npos);
  EXPECT_NE(error_of("hello world, not a model").find("no 'QLSM' identifier"), std::string::npos);
  EXPECT_NE(error_of("").find("model.qlstm"), std::string::npos);
  // Every single-byte change is either refused, or (alignment padding) means exactly the same.
  const CompiledModel ref = small_model();
  std::mt19937_64 rng(2);
  std::vector<int8_t> x(2 * 7 * 3);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  const SequenceShape shape{2, 7, Layout::kBatchMajor};
  const std::vector<int8_t> want = run_kernel_s8(ref.ops[0].as<DerivedLstm>(), x, shape);
  size_t refused = 0, harmless = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    std::string d = good;
    d[k] = static_cast<char>(d[k] ^ 0x5A);
    try {
      const CompiledModel m = parse_model(d, "damaged");
      ASSERT_EQ(run_kernel_s8(m.ops[0].as<DerivedLstm>(), x, shape), want) << "byte " << k << " changed the model silently";
      ASSERT_EQ(m.name, ref.name);
      ++harmless;
    } catch (const CompileError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, good.size() * 9 / 10);
  // A future format version is refused as such (an int8 model's file is of the int8 version).
  bool version_seen = false;
  for (size_t k = 0; k + 4 <= good.size() && !version_seen; ++k) {
    const char current[4] = {static_cast<char>(kModelFormatVersionS8), 0, 0, 0};
    if (good.compare(k, 4, std::string(current, 4)) != 0) continue;
    std::string d = good;
    d[k] = static_cast<char>(kModelFormatVersion + 1);
    version_seen = error_of(d).find("format_version " + std::to_string(kModelFormatVersion + 1) +
                                    " is not supported") != std::string::npos;
  }
  EXPECT_TRUE(version_seen);
}

// A 16x8 program's int16 input as raw bytes.
std::vector<uint8_t> s16_input(const CompiledModel& m, const SequenceShape& shape, std::mt19937_64& rng) {
  std::vector<int16_t> x(static_cast<size_t>(shape.batch) * shape.time_steps * m.input_size());
  std::uniform_int_distribution<int32_t> d(INT16_MIN, INT16_MAX);
  for (int16_t& v : x) v = static_cast<int16_t>(d(rng));
  std::vector<uint8_t> bytes(x.size() * sizeof(int16_t));
  std::memcpy(bytes.data(), x.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> run_raw(const CompiledModel& m, const std::vector<uint8_t>& x, const SequenceShape& shape) {
  return run_program_raw(m, x.data(), x.size(), shape);
}

// A typed program (int16 buffers, the 16x8 kinds, a requantization to an int8 softmax or the 16x8
// softmax) is a
// version-7 file; it reads back with every type and parameter and runs bit for bit as before.
void expect_s16_round_trip(const CompiledModel& m, std::mt19937_64& rng) {
  ASSERT_FALSE(m.all_s8());
  EXPECT_EQ(model_format_version(m), kModelFormatVersionTyped);
  EXPECT_EQ(model_format_version(small_model()), kModelFormatVersionS8);
  const CompiledModel r = parse_model(serialize_model(m), "mem");
  ASSERT_EQ(r.buffers.size(), m.buffers.size());
  for (size_t b = 0; b < m.buffers.size(); ++b) {
    EXPECT_EQ(r.buffers[b].type, m.buffers[b].type) << b;
    EXPECT_EQ(r.buffers[b].quant.scale, m.buffers[b].quant.scale) << b;
  }
  ASSERT_EQ(r.ops.size(), m.ops.size());
  for (size_t k = 0; k < m.ops.size(); ++k) EXPECT_EQ(r.ops[k].kind, m.ops[k].kind) << k;
  const DerivedLstmS16 &a = m.ops[0].as<DerivedLstmS16>(), &b = r.ops[0].as<DerivedLstmS16>();
  EXPECT_EQ(b.input_scale, a.input_scale);
  EXPECT_EQ(b.output_scale, a.output_scale);
  EXPECT_EQ(b.cell.power, a.cell.power);
  EXPECT_EQ(b.output_steps, a.output_steps);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    EXPECT_EQ(b.gates[g].w_h, a.gates[g].w_h);
    EXPECT_EQ(b.gates[g].input_effective_bias, a.gates[g].input_effective_bias);
    EXPECT_EQ(b.gates[g].w_x_scale, a.gates[g].w_x_scale);
  }
  EXPECT_EQ(r.ops[1].as<DerivedFcS16>().bias, m.ops[1].as<DerivedFcS16>().bias);
  EXPECT_EQ(r.ops[1].as<DerivedFcS16>().weight_scale, m.ops[1].as<DerivedFcS16>().weight_scale);
  if (m.ops[2].kind == QLSTM_OP_SOFTMAX_S16) {
    const DerivedSoftmaxS16 &sa = m.ops[2].as<DerivedSoftmaxS16>(), &sb = r.ops[2].as<DerivedSoftmaxS16>();
    EXPECT_EQ(sb.row_size, sa.row_size);
    EXPECT_EQ(sb.input_multiplier, sa.input_multiplier);
    EXPECT_EQ(sb.input_left_shift, sa.input_left_shift);
    EXPECT_EQ(sb.input_scale, sa.input_scale);
    EXPECT_NEAR(sb.beta, sa.beta, 1e-9);  // the beta its multiplier stands for
    EXPECT_EQ(r.buffers.back().quant.scale, 1.0 / 32768);
  } else {
    EXPECT_EQ(r.ops[2].as<DerivedRequantize>().to_output.multiplier, m.ops[2].as<DerivedRequantize>().to_output.multiplier);
  }
  // Written again, the same bytes.
  EXPECT_EQ(serialize_model(r), serialize_model(m));
  for (const SequenceShape& shape : {SequenceShape{2, 7, Layout::kBatchMajor}, SequenceShape{1, 1, Layout::kBatchMajor}}) {
    const std::vector<uint8_t> x = s16_input(m, shape, rng);
    EXPECT_EQ(run_raw(r, x, shape), run_raw(m, x, shape));
  }
}

TEST(ModelFile, S16ProgramRoundTripIsExact) {
  for (const bool softmax_s16 : {false, true}) {
    for (const bool final_state : {false, true}) {
      SCOPED_TRACE(std::string(final_state ? "final state" : "every step") + (softmax_s16 ? ", 16x8 softmax" : ""));
      std::mt19937_64 rng(71);
      testing_support::S16ModelShape shape;
      shape.final_state = final_state;
      shape.softmax_s16 = softmax_s16;
      expect_s16_round_trip(testing_support::s16_model(rng, shape), rng);
    }
  }
}

// A 16x8 program with a constant initial state (its LSTM's [c | h] row in initial_cell) and h_n,
// c_n outputs: written and read back equal, laid out as the runtime keeps it (B x H cells, then
// B x H int16 hiddens), and run from it bit for bit as before.
TEST(ModelFile, S16ProgramWithStateRoundTripIsExact) {
  std::mt19937_64 rng(73);
  CompiledModel m = testing_support::s16_model(rng);
  m.initial_hidden = m.initial_cell = StateSource::kConstant;
  m.hidden_output = m.cell_output = true;
  const int32_t H = m.ops[0].hidden_size();
  std::uniform_int_distribution<int32_t> d(-20000, 20000);
  for (int32_t e = 0; e < 2 * H; ++e) m.ops[0].initial_cell.push_back(static_cast<int16_t>(d(rng)));
  ASSERT_NO_THROW(m.validate("state"));
  EXPECT_EQ(model_format_version(m), kModelFormatVersionTyped);
  const CompiledModel r = parse_model(serialize_model(m), "mem");
  EXPECT_EQ(r.initial_hidden, StateSource::kConstant);
  EXPECT_EQ(r.initial_cell, StateSource::kConstant);
  EXPECT_TRUE(r.hidden_output && r.cell_output);
  EXPECT_EQ(r.ops[0].initial_cell, m.ops[0].initial_cell);
  EXPECT_TRUE(r.ops[0].initial_hidden.empty());
  EXPECT_EQ(serialize_model(r), serialize_model(m));
  const SequenceShape shape{2, 5, Layout::kBatchMajor};
  ProgramState a = initial_program_state(m, shape.batch), b = initial_program_state(r, shape.batch);
  ASSERT_EQ(a.cell.size(), static_cast<size_t>(4 * H));
  const std::vector<int16_t>& c = m.ops[0].initial_cell;
  for (int32_t row = 0; row < 2; ++row) {
    for (int32_t u = 0; u < H; ++u) {
      EXPECT_EQ(a.cell[static_cast<size_t>(row * H + u)], c[static_cast<size_t>(u)]);
      EXPECT_EQ(a.cell[static_cast<size_t>(2 * H + row * H + u)], c[static_cast<size_t>(H + u)]);
    }
  }
  const std::vector<uint8_t> x = s16_input(m, shape, rng);
  EXPECT_EQ(run_program_raw(r, x.data(), x.size(), shape, &b), run_program_raw(m, x.data(), x.size(), shape, &a));
  EXPECT_EQ(b.cell, a.cell);
  // The constant state matters: from a zero state the output differs.
  EXPECT_NE(run_raw(m, x, shape), [&] {
    CompiledModel z = m;
    z.ops[0].initial_cell.clear();
    z.initial_hidden = z.initial_cell = StateSource::kZero;
    return run_raw(z, x, shape);
  }());
}

// Every single-byte change of a 16x8 model's file is refused or changes nothing; a cut file and
// crafted fields (a buffer's type, a 16x8 op's zero point) are refused naming the field.
TEST(ModelFile, DamagedS16FileIsRefused) {
  std::mt19937_64 rng(72);
  const CompiledModel ref = testing_support::s16_model(rng);
  const std::string good = serialize_model(ref);
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)).find("truncated or corrupted"), std::string::npos);
  const SequenceShape shape{2, 5, Layout::kBatchMajor};
  const std::vector<uint8_t> x = s16_input(ref, shape, rng);
  const std::vector<uint8_t> want = run_raw(ref, x, shape);
  size_t refused = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    std::string d = good;
    d[k] = static_cast<char>(d[k] ^ 0x5A);
    CompiledModel m;
    try {
      m = parse_model(d, "damaged");
    } catch (const CompileError&) {
      ++refused;
      continue;
    }
    std::vector<uint8_t> y;
    ASSERT_NO_THROW(y = run_raw(m, x, shape)) << "byte " << k;
    ASSERT_EQ(y, want) << "byte " << k << " changed the model silently";
  }
  EXPECT_GT(refused, good.size() * 9 / 10);
  // Behind a valid checksum: the model bytes rewritten, then sealed again.
  auto crafted = [&](const std::function<void(CompiledModel&)>& change) {
    CompiledModel m = ref;
    change(m);
    return error_of(serialize_model(m));
  };
  const std::string type = crafted([](CompiledModel& m) { m.buffers[1].type = 7; });
  EXPECT_NE(type.find("buffer_types"), std::string::npos) << type;
  const std::string s8_input = crafted([](CompiledModel& m) { m.buffers[0].type = QLSTM_ELEMENT_S8; });
  EXPECT_NE(s8_input.find("model.qlstm"), std::string::npos) << s8_input;
  const std::string zero_point = crafted([](CompiledModel& m) { m.buffers[0].quant.zero_point = 3; });
  EXPECT_NE(zero_point.find("buffers[0].zero_point' must be 0 for int16"), std::string::npos) << zero_point;
  const std::string shift = crafted([](CompiledModel& m) { m.ops[1].as<DerivedFcS16>().to_output.shift = 99; });
  EXPECT_NE(shift.find("ops[1].shift"), std::string::npos) << shift;
  // A 16x8 op's int16 side with a zero point: the model bytes edited in place, sealed again.
  {
    const auto* file = qlstm::fb::GetModelFile(good.data());
    std::string model(reinterpret_cast<const char*>(file->model()->data()), file->model()->size());
    const auto* op = flatbuffers::GetRoot<qlstm::fb::Model>(model.data())->program()->Get(0);
    const size_t zero_point_offset = sizeof(double);  // struct AffineQuant { scale: double; zero_point: int }
    const size_t at = static_cast<size_t>(reinterpret_cast<const char*>(op->output()) - model.data()) + zero_point_offset;
    model[at] = 3;
    const std::string e = error_of(seal_model(model, kModelFormatVersion));
    EXPECT_NE(e.find("field 'program[0].output.zero_point': must be 0 for a 16x8 op"), std::string::npos) << e;
  }
  // A version-6 file knows no 16x8 kind (the version is outside the checksum).
  bool kind_refused = false;
  for (size_t k = 0; k + 4 <= good.size() && !kind_refused; ++k) {
    const char current[4] = {static_cast<char>(kModelFormatVersionTyped), 0, 0, 0};
    if (good.compare(k, 4, std::string(current, 4)) != 0) continue;
    std::string d = good;
    d[k] = static_cast<char>(kModelFormatVersionS8);
    kind_refused = error_of(d).find("field 'program[0].kind': 6 is not an op kind this qlstm knows") != std::string::npos;
  }
  EXPECT_TRUE(kind_refused);
}

}  // namespace
