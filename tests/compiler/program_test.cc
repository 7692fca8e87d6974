// The program of fused ops: each op of a stacked or bidirectional program computes exactly what
// the kernel computes for that op alone on the buffer it reads (the layout of the concatenated
// output, the chaining of layers), the model file keeps the program bit for bit (version 2, and
// version 1 files of one LSTM still load), streaming equals one call, and an inconsistent program
// is refused naming the field.
#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>
#include <zlib.h>

#include <functional>
#include <random>

#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"
#include "qlstm_model_generated.h"
#include "op_fields.h"
#include "program_ops.h"
#include "random_program.h"

using testing_support::lstm_op;

namespace {

using namespace qlstm::compiler;

std::vector<int8_t> random_s8(size_t n, std::mt19937_64& rng) {
  std::vector<int8_t> x(n);
  for (int8_t& v : x) v = static_cast<int8_t>(rng());
  return x;
}

// Columns [c0, c0 + n) of each row of a [rows][width] buffer.
std::vector<int8_t> columns(const std::vector<int8_t>& y, int32_t width, int32_t c0, int32_t n) {
  std::vector<int8_t> out;
  for (size_t r = 0; r < y.size() / static_cast<size_t>(width); ++r) {
    out.insert(out.end(), y.begin() + static_cast<ptrdiff_t>(r * width + c0),
               y.begin() + static_cast<ptrdiff_t>(r * width + c0 + n));
  }
  return out;
}

TEST(Program, AnOpHoldsOnlyItsOwnKindsBlock) {
  // set() writes the kind with its block; reading the block as another kind's is refused (a
  // non-recurrent op has no hidden size either), where one member per kind read zeros.
  ProgramOp op;
  EXPECT_EQ(op.kind, QLSTM_OP_LSTM_S8);
  EXPECT_TRUE(op.holds<DerivedLstm>());
  DerivedFc fc;
  fc.input_size = 3;
  fc.output_size = 2;
  op.set(fc);
  EXPECT_EQ(op.kind, QLSTM_OP_FULLY_CONNECTED_S8);
  EXPECT_TRUE(op.holds<DerivedFc>());
  EXPECT_FALSE(op.holds<DerivedLstm>());
  EXPECT_EQ(op.as<DerivedFc>().output_size, 2);
  EXPECT_FALSE(op.recurrent());
  try {
    (void)op.as<DerivedLstm>();
    ADD_FAILURE() << "an FC op read as an LSTM";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("a fully_connected op read as a lstm op"), std::string::npos) << e.what();
  }
  EXPECT_THROW(op.hidden_size(), CompileError);
  op.kind = QLSTM_OP_GRU_S8;  // a kind changed without its block
  EXPECT_FALSE(op.holds<DerivedFc>());
  EXPECT_THROW(op.as<DerivedGru>(), CompileError);
  DerivedGru gru;
  gru.hidden_size = 5;
  op.set(gru);
  EXPECT_TRUE(op.recurrent());
  EXPECT_EQ(op.hidden_size(), 5);
  EXPECT_EQ(op.state_size(), 5);
  op.set_output_steps(QLSTM_OUTPUT_FINAL);
  EXPECT_EQ(op.as<DerivedGru>().output_steps, QLSTM_OUTPUT_FINAL);
}

TEST(Program, BidirectionalLayerIsTwoOpsWritingTheirHalves) {
  std::mt19937_64 rng(1);
  const int32_t I = 5, H = 7, B = 3, T = 9;
  const QuantizedProgram q = compile_program(random_program(I, H, 1, 2, rng), calibration(I, rng), fast());
  const CompiledModel& m = q.model;
  ASSERT_EQ(m.ops.size(), 2u);
  EXPECT_EQ(m.output_size(), 2 * H);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().time_direction, QLSTM_TIME_REVERSE);
  // One buffer quantization for the concatenated output, shared by both directions.
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output.scale, m.ops[1].as<DerivedLstm>().output.scale);
  EXPECT_EQ(m.ops[0].as<DerivedLstm>().output.zero_point, m.ops[1].as<DerivedLstm>().output.zero_point);
  for (Layout layout : {Layout::kBatchMajor, Layout::kTimeMajor}) {
    const SequenceShape s{B, T, layout};
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B) * T * I, rng);
    const std::vector<int8_t> y = run_program_s8(m, x, s);
    EXPECT_EQ(columns(y, 2 * H, 0, H), run_kernel_s8(m.ops[0].as<DerivedLstm>(), x, s));
    EXPECT_EQ(columns(y, 2 * H, H, H), run_kernel_s8(m.ops[1].as<DerivedLstm>(), x, s));
  }
}

TEST(Program, StackedLayersChainTheirInt8Outputs) {
  std::mt19937_64 rng(2);
  const int32_t I = 4, H = 6, B = 2, T = 11;
  const QuantizedProgram q = compile_program(random_program(I, H, 3, 1, rng), calibration(I, rng), fast());
  const CompiledModel& m = q.model;
  ASSERT_EQ(m.ops.size(), 3u);
  for (size_t k = 1; k < m.ops.size(); ++k) {  // a layer's input quantization is the one below's output's
    EXPECT_EQ(m.ops[k].as<DerivedLstm>().input.scale, m.ops[k - 1].as<DerivedLstm>().output.scale);
    EXPECT_EQ(m.ops[k].as<DerivedLstm>().input.zero_point, m.ops[k - 1].as<DerivedLstm>().output.zero_point);
  }
  const SequenceShape s{B, T, Layout::kTimeMajor};
  const std::vector<int8_t> x = random_s8(static_cast<size_t>(B) * T * I, rng);
  std::vector<int8_t> chain = x;
  for (const ProgramOp& op : m.ops) chain = run_kernel_s8(op.as<DerivedLstm>(), chain, s);
  EXPECT_EQ(run_program_s8(m, x, s), chain);
  // Streamed from the same state: chunks of any size give the one-call output and final state.
  ProgramState one = initial_program_state(m, B);
  const std::vector<int8_t> y = run_program_s8(m, x, s, &one);
  for (int32_t chunk : {1, 2, 5, T}) {
    ProgramState st = initial_program_state(m, B);
    EXPECT_EQ(run_program_s8_streamed(m, x, s, chunk, &st), y) << chunk;
    EXPECT_EQ(st.hidden, one.hidden) << chunk;
    EXPECT_EQ(st.cell, one.cell) << chunk;
  }
}

TEST(Program, CellScaleCoversAConstantInitialCell) {
  std::mt19937_64 rng(3);
  const int32_t I = 3, H = 4;
  FloatProgram p = random_program(I, H, 1, 1, rng);
  p.initial_cell = StateSource::kConstant;
  p.initial_hidden = StateSource::kConstant;
  p.c0 = {std::vector<float>(H, 6.0f)};  // far beyond what the inputs drive the cell to
  p.h0 = {std::vector<float>(H, 0.25f)};
  const QuantizedProgram q = compile_program(p, calibration(I, rng), fast());
  const DerivedLstm& d = q.model.ops[0].as<DerivedLstm>();
  EXPECT_GE(d.cell.observed_max_abs, 6.0);
  EXPECT_GE(std::ldexp(32767.0, d.cell.power), 6.0);
  ASSERT_EQ(q.model.ops[0].initial_cell.size(), static_cast<size_t>(H));
  EXPECT_EQ(q.model.ops[0].initial_cell[0], quantize_cell(6.0, d.cell.power));
  EXPECT_EQ(q.model.ops[0].initial_hidden[0], d.output.quantize(0.25));
}

TEST(Program, ModelFileKeepsTheProgram) {
  std::mt19937_64 rng(4);
  const int32_t I = 3, H = 5, B = 2, T = 6;
  FloatProgram p = random_program(I, H, 2, 2, rng);
  p.initial_hidden = p.initial_cell = StateSource::kInput;
  p.hidden_output = p.cell_output = true;
  QuantizedProgram q = compile_program(p, calibration(I, rng), fast());
  q.model.name = "prog";
  const CompiledModel back = parse_model(serialize_model(q.model), "memory");
  EXPECT_EQ(back.ops.size(), 4u);
  EXPECT_EQ(back.directions, 2);
  EXPECT_EQ(back.initial_hidden, StateSource::kInput);
  EXPECT_TRUE(back.hidden_output && back.cell_output);
  const SequenceShape s{B, T, Layout::kBatchMajor};
  const std::vector<int8_t> x = random_s8(static_cast<size_t>(B) * T * I, rng);
  ProgramState a = initial_program_state(q.model, B);
  a.hidden = random_s8(a.hidden.size(), rng);
  ProgramState b = a;
  EXPECT_EQ(run_program_s8(back, x, s, &b), run_program_s8(q.model, x, s, &a));
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.cell, b.cell);
  // The emitted source has the state calls and no streaming (a reverse op needs the whole sequence).
  const EmittedSource e = emit_cpp(back, "prog", B, T, "test");
  EXPECT_NE(e.header.find("prog_run_state("), std::string::npos);
  EXPECT_EQ(e.header.find("prog_stream("), std::string::npos);
  EXPECT_NE(e.source.find("QLSTM_TIME_REVERSE, 10, QLSTM_OUTPUT_ALL_STEPS, 0};"), std::string::npos);  // the reverse half: width 2H
  EXPECT_THROW(emit_cpp(back, "prog", B, 0, "test"), CompileError);  // stacked: needs max time steps
  EXPECT_THROW(run_program_s8_streamed(back, x, s, 2, &a), CompileError);
}

TEST(Program, InconsistentProgramIsRefusedNamingTheField) {
  std::mt19937_64 rng(5);
  const QuantizedProgram q = compile_program(random_program(3, 4, 2, 1, rng), calibration(3, rng), fast());
  CompiledModel m = q.model;
  m.ops[1].as<DerivedLstm>().input.scale *= 2;
  try {
    m.validate("x.qlstm");
    FAIL() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[1]': input quantization differs"), std::string::npos) << e.what();
  }
  m = q.model;
  m.buffers.pop_back();
  EXPECT_THROW(parse_model(serialize_model(m), "x.qlstm"), CompileError);
}

// The typed Lstm table of versions 1 and 2, as earlier qlstm wrote it (version 2 adds the
// boundary quantizations and the direction).
flatbuffers::Offset<qlstm::fb::Lstm> legacy_lstm(flatbuffers::FlatBufferBuilder& b, const DerivedLstm& d, bool v2) {
  namespace fb = qlstm::fb;
  std::vector<flatbuffers::Offset<fb::Gate>> gates;
  for (const DerivedGate& g : d.gates) {
    const fb::Requant in_q(g.input_to_q3_12.multiplier, g.input_to_q3_12.shift);
    const fb::Requant h_q(g.hidden_to_q3_12.multiplier, g.hidden_to_q3_12.shift);
    gates.push_back(fb::CreateGateDirect(b, static_cast<int8_t>(g.activation), &in_q, &g.w_x,
                                         &g.input_effective_bias, &h_q, &g.w_h, &g.hidden_effective_bias));
  }
  const fb::Requant f(d.forget_times_cell_to_cell.multiplier, d.forget_times_cell_to_cell.shift);
  const fb::Requant i(d.input_times_cell_gate_to_cell.multiplier, d.input_times_cell_gate_to_cell.shift);
  const fb::Requant o(d.output_times_tanh_cell_to_hidden.multiplier, d.output_times_tanh_cell_to_hidden.shift);
  const fb::AffineQuant in(d.input.scale, d.input.zero_point), out(d.output.scale, d.output.zero_point);
  return fb::CreateLstmDirect(b, d.input_size, d.hidden_size, &gates, &f, &i, &o, d.cell.power, d.cell_clip,
                              v2 ? d.time_direction : 0, v2 ? &in : nullptr, v2 ? &out : nullptr);
}

// A file of an earlier format version around the model bytes b holds.
std::string legacy_file(const flatbuffers::FlatBufferBuilder& b, uint32_t version) {
  namespace fb = qlstm::fb;
  std::vector<uint8_t> model(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  flatbuffers::FlatBufferBuilder file;
  const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), model.data(), static_cast<uInt>(model.size())));
  file.Finish(fb::CreateModelFileDirect(file, version, crc, &model), fb::ModelFileIdentifier());
  return std::string(reinterpret_cast<const char*>(file.GetBufferPointer()), file.GetSize());
}

TEST(Program, VersionOneFileOfOneLstmStillLoads) {
  std::mt19937_64 rng(6);
  const int32_t I = 3, H = 4;
  const QuantizedProgram q = compile_program(random_program(I, H, 1, 1, rng), calibration(I, rng), fast());
  const DerivedLstm& d = q.model.ops[0].as<DerivedLstm>();
  // A version-1 file as earlier qlstm wrote it: the boundary quantization in Model, one Lstm.
  namespace fb = qlstm::fb;
  flatbuffers::FlatBufferBuilder b;
  const auto lstm = legacy_lstm(b, d, false);
  const fb::AffineQuant in(d.input.scale, d.input.zero_point), out(d.output.scale, d.output.zero_point);
  b.Finish(fb::CreateModelDirect(b, "v1", true, &in, &out, lstm, "{}"));
  const CompiledModel m = parse_model(legacy_file(b, 1), "v1.qlstm");
  ASSERT_EQ(m.ops.size(), 1u);
  EXPECT_EQ(m.name, "v1");
  EXPECT_TRUE(m.batch_first);
  const SequenceShape s{2, 5, Layout::kBatchMajor};
  const std::vector<int8_t> x = random_s8(2u * 5 * I, rng);
  EXPECT_EQ(run_program_s8(m, x, s), run_kernel_s8(d, x, s));
}

// The buffers as versions 2 and 3 wrote them (without version 4's steps).
std::vector<flatbuffers::Offset<qlstm::fb::Buffer>> legacy_buffers(flatbuffers::FlatBufferBuilder& b,
                                                                  const CompiledModel& m) {
  std::vector<flatbuffers::Offset<qlstm::fb::Buffer>> buffers;
  for (const ProgramBuffer& buf : m.buffers) {
    const qlstm::fb::AffineQuant bq(buf.quant.scale, buf.quant.zero_point);
    buffers.push_back(qlstm::fb::CreateBuffer(b, buf.width, &bq));
  }
  return buffers;
}

// A version-2 file (typed Lstm tables in LstmOp) of a stacked bidirectional program still loads
// and runs exactly as the program it was written from.
TEST(Program, VersionTwoFileOfAProgramStillLoads) {
  std::mt19937_64 rng(9);
  const QuantizedProgram q = compile_program(random_program(3, 4, 2, 2, rng), calibration(3, rng), fast());
  const CompiledModel& m = q.model;
  namespace fb = qlstm::fb;
  flatbuffers::FlatBufferBuilder b;
  const std::vector<flatbuffers::Offset<fb::Buffer>> buffers = legacy_buffers(b, m);
  std::vector<flatbuffers::Offset<fb::LstmOp>> ops;
  for (const ProgramOp& op : m.ops) {
    ops.push_back(fb::CreateLstmOpDirect(b, legacy_lstm(b, op.as<DerivedLstm>(), true), op.input_buffer, op.output_buffer,
                                         op.output_offset));
  }
  const fb::AffineQuant in(m.input_quant().scale, m.input_quant().zero_point),
      out(m.output_quant().scale, m.output_quant().zero_point);
  b.Finish(fb::CreateModelDirect(b, "v2", false, &in, &out, 0, "{}", m.directions, &buffers, &ops));
  const CompiledModel back = parse_model(legacy_file(b, 2), "v2.qlstm");
  ASSERT_EQ(back.ops.size(), 4u);
  EXPECT_EQ(back.ops[1].as<DerivedLstm>().time_direction, QLSTM_TIME_REVERSE);
  const SequenceShape s{2, 6, Layout::kTimeMajor};
  const std::vector<int8_t> x = random_s8(2u * 6 * 3, rng);
  EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));
}

// Version 3 wrote each op's record as the LSTM block then had it: without output_steps, its
// last field. Such a file still loads, every op writing every step, and runs as the model did.
TEST(Program, VersionThreeFileWithoutOutputStepsStillLoads) {
  std::mt19937_64 rng(10);
  const QuantizedProgram q = compile_program(random_program(3, 4, 2, 1, rng), calibration(3, rng), fast());
  const CompiledModel& m = q.model;
  namespace fb = qlstm::fb;
  flatbuffers::FlatBufferBuilder b;
  const std::vector<flatbuffers::Offset<fb::Buffer>> buffers = legacy_buffers(b, m);
  const RuntimeProgram r = runtime_program(m, 1, 0, Layout::kTimeMajor);
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    std::vector<uint8_t> record =
        testing_support::record_of(testing_support::block<qlstm_lstm_s8_params>(r.ops[k]), [](const auto& p, auto& w) { qlstm::visit_lstm_s8_fields(p, w); },
                                   ".hard_sigmoid");  // no gate lines before version 13
    ASSERT_EQ(testing_support::block<qlstm_lstm_s8_params>(r.ops[k]).output_steps, QLSTM_OUTPUT_ALL_STEPS);
    // Version 3's record ends before output_steps (and input_repeated, version 18's last field).
    record.resize(record.size() - 2 * sizeof(int32_t));
    const ProgramOp& op = m.ops[k];
    const fb::AffineQuant in(op.as<DerivedLstm>().input.scale, op.as<DerivedLstm>().input.zero_point),
        out(op.as<DerivedLstm>().output.scale, op.as<DerivedLstm>().output.zero_point);
    ops.push_back(fb::CreateOpDirect(b, QLSTM_OP_LSTM_S8, &record, op.input_buffer, op.output_buffer,
                                     op.output_offset, nullptr, nullptr, &in, &out));
  }
  const fb::AffineQuant in(m.input_quant().scale, m.input_quant().zero_point),
      out(m.output_quant().scale, m.output_quant().zero_point);
  b.Finish(fb::CreateModelDirect(b, "v3", false, &in, &out, 0, "{}", m.directions, &buffers, nullptr,
                                 fb::StateSource_Zero, fb::StateSource_Zero, false, false, &ops));
  const CompiledModel back = parse_model(legacy_file(b, 3), "v3.qlstm");
  ASSERT_EQ(back.ops.size(), 2u);
  for (const ProgramOp& op : back.ops) EXPECT_EQ(op.as<DerivedLstm>().output_steps, QLSTM_OUTPUT_ALL_STEPS);
  for (const ProgramBuffer& buf : back.buffers) EXPECT_EQ(buf.steps, QLSTM_BUFFER_EVERY_STEP);
  const SequenceShape s{2, 6, Layout::kTimeMajor};
  const std::vector<int8_t> x = random_s8(2u * 6 * 3, rng);
  EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));
  // The same bytes as a version-4 file: the record is one field short.
  try {
    parse_model(legacy_file(b, 4), "v4.qlstm");
    FAIL() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'program[0].params.output_steps': the record ends early"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// The runtime's runner refuses a malformed program or too small a context, with its status.
TEST(ProgramRunner, RefusesBadProgramsAndSmallContexts) {
  std::mt19937_64 rng(7);
  const int32_t I = 3, H = 4, B = 1, T = 5;
  const QuantizedProgram q = compile_program(random_program(I, H, 2, 1, rng), calibration(I, rng), fast());
  std::vector<qlstm_op> ops(2);
  for (size_t k = 0; k < 2; ++k) {
    ops[k] = lstm_op(q.model.ops[k].as<DerivedLstm>().kernel_params(B, T, Layout::kBatchMajor), static_cast<int32_t>(k),
                     static_cast<int32_t>(k + 1), k * static_cast<size_t>(B * H));
  }
  alignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char scratch[1024];
  int16_t cell[B * H];
  std::vector<int8_t> area(static_cast<size_t>(B) * T * H), x = random_s8(static_cast<size_t>(B) * T * I, rng);
  std::vector<int8_t> y(static_cast<size_t>(B) * T * H);
  const int32_t widths[3] = {I, H, H};
  const int32_t steps[3] = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP};
  qlstm_program program = {ops.data(), 2, 3, widths, 2 * static_cast<size_t>(B * H), steps, B, QLSTM_LAYOUT_BATCH_MAJOR, nullptr};
  qlstm_program_context ctx = {scratch, sizeof scratch, cell, {area.data(), nullptr}, area.size()};
  ASSERT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(y, run_program_s8(q.model, x, {B, T, Layout::kBatchMajor}));
  EXPECT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T + 1, nullptr, nullptr),
            QLSTM_ERROR_SCRATCH_TOO_SMALL);  // the intermediate buffer holds T steps
  int8_t hidden[2 * B * H] = {};
  EXPECT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, hidden, nullptr), QLSTM_ERROR_NULL_POINTER);
  ops[1].kind = QLSTM_OP_KIND_COUNT;
  EXPECT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_ERROR_BAD_PROGRAM);
  ops[1].kind = QLSTM_OP_LSTM_S8;
  ops[1].output_buffer = 1;  // reads and writes the same buffer
  EXPECT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_ERROR_BAD_PROGRAM);
  ops[1].output_buffer = 2;
  ctx.activations[0] = nullptr;
  EXPECT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
}

}  // namespace

namespace {

using testing_support::verdict;

std::string bad_program(const char* field, int32_t op) { return testing_support::refusal(QLSTM_ERROR_BAD_PROGRAM, field, op); }

// A hand-built table of four stacked layers of width H (op k: buffer k -> k + 1, so buffers 1
// and 3 share activation area 0), and its context for T steps.
struct StackTable {
  static constexpr int32_t H = 4, B = 2, T = 3;
  std::vector<qlstm_op> ops;
  std::vector<int32_t> widths{H, H, H, H, H};
  std::vector<int32_t> steps = std::vector<int32_t>(5, QLSTM_BUFFER_EVERY_STEP);
  std::vector<int8_t> areas[2] = {std::vector<int8_t>(B * T * H), std::vector<int8_t>(B * T * H)};
  alignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char scratch[1024] = {};
  int16_t cell[B * H] = {};
  qlstm_program program{};
  qlstm_program_context ctx{};

  explicit StackTable(const CompiledModel& m) {
    for (size_t k = 0; k < m.ops.size(); ++k) {
      ops.push_back(lstm_op(m.ops[k].as<DerivedLstm>().kernel_params(B, T, Layout::kBatchMajor), static_cast<int32_t>(k),
                            static_cast<int32_t>(k + 1), k * static_cast<size_t>(B * H)));
    }
    program = {ops.data(), 4, 5, widths.data(), 4 * static_cast<size_t>(B * H), steps.data(), B,
               QLSTM_LAYOUT_BATCH_MAJOR, nullptr};
    ctx = {scratch, sizeof scratch, cell, {areas[0].data(), areas[1].data()}, areas[0].size()};
  }
};

// Every field the runner relies on is checked, and named; a good table passes.
TEST(ProgramValidate, NamesEachBadFieldOfAHandBuiltTable) {
  std::mt19937_64 rng(11);
  const int32_t H = StackTable::H, B = StackTable::B, T = StackTable::T;
  const QuantizedProgram q = compile_program(random_program(H, H, 4, 1, rng), calibration(H, rng), fast());
  const StackTable good(q.model);
  EXPECT_EQ(verdict(&good.program, &good.ctx, T), "ok");
  EXPECT_EQ(verdict(&good.program, nullptr, 1000), "ok");  // no context: the table only
  EXPECT_EQ(verdict(nullptr, &good.ctx, T), "1 program -1");
  EXPECT_EQ(verdict(&good.program, &good.ctx, -1), "2 max_time_steps -1");

  // One mutation of the table (or context) per case, and the verdict naming it.
  struct Case {
    const char* what;
    std::function<void(StackTable&)> mutate;
    std::string expected;
  };
  const Case cases[] = {
      {"no ops", [](StackTable& t) { t.program.ops = nullptr; }, "1 ops -1"},
      {"no widths", [](StackTable& t) { t.program.buffer_widths = nullptr; }, "1 buffer_widths -1"},
      {"no op", [](StackTable& t) { t.program.op_count = 0; }, bad_program("op_count", -1)},
      {"one buffer", [](StackTable& t) { t.program.buffer_count = 1; }, bad_program("buffer_count", -1)},
      {"fewer buffers", [](StackTable& t) { t.program.buffer_count = 4; }, bad_program("input_buffer", 3)},
      {"kind", [](StackTable& t) { t.ops[1].kind = QLSTM_OP_KIND_COUNT; }, bad_program("kind", 1)},
      {"input is the output", [](StackTable& t) { t.ops[1].input_buffer = 4; }, bad_program("input_buffer", 1)},
      {"negative input", [](StackTable& t) { t.ops[1].input_buffer = -1; }, bad_program("input_buffer", 1)},
      {"writes the input", [](StackTable& t) { t.ops[1].output_buffer = 0; }, bad_program("output_buffer", 1)},
      {"past the output", [](StackTable& t) { t.ops[1].output_buffer = 5; }, bad_program("output_buffer", 1)},
      {"reads and writes one buffer", [](StackTable& t) { t.ops[1].output_buffer = 1; },
       bad_program("output_buffer", 1)},
      // Buffers 1 and 3 share area 0: reading 1 while writing 3 would overwrite what it reads.
      {"1 -> 3 share an area", [](StackTable& t) { t.ops[2].input_buffer = 1; }, bad_program("output_buffer", 2)},
      {"reads an unwritten buffer", [](StackTable& t) { t.ops[1].input_buffer = 2; t.ops[1].output_buffer = 3; },
       bad_program("input_buffer", 1)},
      {"reads an overwritten buffer",  // op 1 writes buffer 3 into area 0, over buffer 1
       [](StackTable& t) {
         t.ops[1].input_buffer = 0;
         t.ops[1].output_buffer = 3;
         t.ops[2].input_buffer = 1;
         t.ops[2].output_buffer = 2;
       },
       bad_program("input_buffer", 2)},
      {"input width", [](StackTable& t) { t.widths[1] = H + 1; }, bad_program("dims.input_size", 1)},
      {"output width", [](StackTable& t) { t.widths[4] = H - 1; }, bad_program("output_offset", 3)},
      {"output offset past the row", [](StackTable& t) { t.ops[2].output_offset = 1; },
       bad_program("output_offset", 2)},
      {"negative output offset", [](StackTable& t) { t.ops[2].output_offset = -1; },
       bad_program("output_offset", 2)},
      {"batch", [](StackTable& t) { testing_support::block<qlstm_lstm_s8_params>(t.ops[1]).dims.batch = B + 1; }, bad_program("dims.batch", 1)},
      {"layout", [](StackTable& t) { testing_support::block<qlstm_lstm_s8_params>(t.ops[1]).layout = QLSTM_LAYOUT_TIME_MAJOR; }, bad_program("layout", 1)},
      {"state offset", [](StackTable& t) { t.ops[3].state_offset += 1; }, bad_program("state_offset", 3)},
      {"huge state offset", [](StackTable& t) { t.ops[0].state_offset = SIZE_MAX; }, bad_program("state_offset", 0)},
      {"state size", [](StackTable& t) { t.program.state_values -= 1; }, bad_program("state_offset", 3)},
      {"shift", [](StackTable& t) { testing_support::block<qlstm_lstm_s8_params>(t.ops[1]).gates[QLSTM_GATE_FORGET].hidden_to_q3_12.shift = 40; },
       std::to_string(QLSTM_ERROR_BAD_SHIFT) + " gates[forget].hidden_to_q3_12.shift 1"},
      {"direction", [](StackTable& t) { testing_support::block<qlstm_lstm_s8_params>(t.ops[2]).time_direction = 5; },
       std::to_string(QLSTM_ERROR_BAD_DIRECTION) + " time_direction 2"},
      {"weights", [](StackTable& t) { testing_support::block<qlstm_lstm_s8_params>(t.ops[0]).gates[QLSTM_GATE_CELL].input_weights = nullptr; },
       "1 gates[cell].input_weights 0"},
      {"scratch", [](StackTable& t) { t.ctx.scratch_bytes = 8; },
       std::to_string(QLSTM_ERROR_SCRATCH_TOO_SMALL) + " scratch_bytes -1"},
      {"activation size", [](StackTable& t) { t.ctx.activation_bytes -= 1; },
       std::to_string(QLSTM_ERROR_SCRATCH_TOO_SMALL) + " activation_bytes -1"},
      {"activation area", [](StackTable& t) { t.ctx.activations[1] = nullptr; }, "1 activations -1"},
  };
  const std::vector<int8_t> x(static_cast<size_t>(B) * T * H, 3);
  for (const Case& c : cases) {
    StackTable t(q.model);
    c.mutate(t);
    EXPECT_EQ(verdict(&t.program, &t.ctx, T), c.expected) << c.what;
    // The runner refuses it too, before any op: the output and the state stay untouched.
    std::vector<int8_t> y(static_cast<size_t>(B) * T * H, 0x55), hidden(t.program.state_values + 8, 0x66);
    std::vector<int16_t> cell(hidden.size(), 0x77);
    EXPECT_NE(qlstm_program_run(&t.program, &t.ctx, x.data(), y.data(), T, hidden.data(), cell.data()), QLSTM_OK)
        << c.what;
    EXPECT_EQ(y, std::vector<int8_t>(y.size(), 0x55)) << c.what;
    EXPECT_EQ(hidden, std::vector<int8_t>(hidden.size(), 0x66)) << c.what;
    EXPECT_EQ(cell, std::vector<int16_t>(cell.size(), 0x77)) << c.what;
  }
  // A call longer than the areas hold; the good table runs as the host simulation does.
  EXPECT_EQ(verdict(&good.program, &good.ctx, T + 1),
            std::to_string(QLSTM_ERROR_SCRATCH_TOO_SMALL) + " activation_bytes -1");
  StackTable t(q.model);
  std::vector<int8_t> y(static_cast<size_t>(B) * T * H);
  ASSERT_EQ(qlstm_program_run(&t.program, &t.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(y, run_program_s8(q.model, x, {B, T, Layout::kBatchMajor}));
}

// What parse_model says of a model file (with a valid checksum) of this program.
std::string load_error(const CompiledModel& m) {
  try {
    parse_model(serialize_model(m), "model.qlstm");
    return "accepted";
  } catch (const CompileError& e) {
    return e.what();
  }
}

// Model files whose checksum is right but whose program is not: each is refused naming the field
// and the op, by the runtime's validation where the device would refuse it too.
TEST(Program, LoaderRefusesEachInconsistentFieldBehindAValidChecksum) {
  std::mt19937_64 rng(12);
  const QuantizedProgram bi = compile_program(random_program(3, 4, 2, 2, rng), calibration(3, rng), fast());
  const QuantizedProgram stack = compile_program(random_program(3, 4, 4, 1, rng), calibration(3, rng), fast());
  ASSERT_EQ(load_error(bi.model), "accepted");
  ASSERT_EQ(load_error(stack.model), "accepted");
  struct Case {
    const CompiledModel* base;
    std::function<void(CompiledModel&)> mutate;
    std::string expected;  // the start of the message
  };
  const std::string program = std::string(": ") + qlstm_status_string(QLSTM_ERROR_BAD_PROGRAM);
  const Case cases[] = {
      {&bi.model, [](CompiledModel& m) { m.ops[1].input_buffer = 2; }, "model.qlstm: ops[1].input_buffer" + program},
      {&bi.model, [](CompiledModel& m) { m.ops[1].input_buffer = -3; }, "model.qlstm: ops[1].input_buffer" + program},
      {&bi.model, [](CompiledModel& m) { m.ops[1].output_buffer = 0; }, "model.qlstm: ops[1].output_buffer" + program},
      {&bi.model, [](CompiledModel& m) { m.ops[3].output_buffer = 9; }, "model.qlstm: ops[3].output_buffer" + program},
      {&bi.model, [](CompiledModel& m) { m.ops[1].output_offset = 5; }, "model.qlstm: ops[1].output_offset" + program},
      {&bi.model, [](CompiledModel& m) { m.ops[1].output_offset = 0; },  // fits, but not its half
       "model.qlstm: field 'ops[1].output_offset' is not its direction's half"},
      {&bi.model, [](CompiledModel& m) { m.buffers[0].width = 2; }, "model.qlstm: ops[0].dims.input_size" + program},
      {&bi.model, [](CompiledModel& m) { m.buffers[1].width = 9; }, "model.qlstm: ops[2].dims.input_size" + program},
      {&bi.model, [](CompiledModel& m) { m.buffers[2].width = 7; }, "model.qlstm: ops[3].output_offset" + program},
      {&bi.model, [](CompiledModel& m) { m.buffers.pop_back(); }, "model.qlstm: ops[2].input_buffer" + program},
      {&bi.model, [](CompiledModel& m) { m.buffers.push_back(m.buffers.back()); },
       "model.qlstm: field 'buffers': 4 buffers, the last op writes buffer 2"},
      {&bi.model, [](CompiledModel& m) { m.ops[1].as<DerivedLstm>().hidden_size = 5; },
       "serialize_model: field 'ops[1].lstm.gates[forget].input_weights': expected 15 values"},
      {&bi.model, [](CompiledModel& m) { m.ops[1].as<DerivedLstm>().time_direction = 7; },
       std::string("model.qlstm: ops[1].time_direction: ") + qlstm_status_string(QLSTM_ERROR_BAD_DIRECTION)},
      {&bi.model, [](CompiledModel& m) { m.ops[1].as<DerivedLstm>().time_direction = QLSTM_TIME_FORWARD; },
       "model.qlstm: field 'ops[1].time_direction' does not match its half of the layer"},
      {&bi.model, [](CompiledModel& m) { m.ops[2].as<DerivedLstm>().gates[QLSTM_GATE_INPUT].input_to_q3_12.shift = -40; },
       std::string("model.qlstm: ops[2].gates[input].input_to_q3_12.shift: ") +
           qlstm_status_string(QLSTM_ERROR_BAD_SHIFT)},
      {&bi.model, [](CompiledModel& m) { m.ops[0].as<DerivedLstm>().cell_clip = 40000; },
       std::string("model.qlstm: ops[0].cell_clip: ") + qlstm_status_string(QLSTM_ERROR_BAD_CELL_CLIP)},
      // Buffers 1 and 3 share activation area 0.
      {&stack.model, [](CompiledModel& m) { m.ops[2].input_buffer = 1; }, "model.qlstm: ops[2].output_buffer" + program},
      {&stack.model, [](CompiledModel& m) { m.ops[1].input_buffer = 2; }, "model.qlstm: ops[1].input_buffer" + program},
  };
  for (const Case& c : cases) {
    CompiledModel m = *c.base;
    c.mutate(m);
    const std::string error = load_error(m);
    EXPECT_EQ(error.rfind(c.expected, 0), 0u) << error << "\n  expected: " << c.expected;
  }
}

}  // namespace
