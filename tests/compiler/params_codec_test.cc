// One description of each op's parameters (runtime/include/qlstm/params_codec.h), every form it
// produces: an op table goes through the model file, the emitted C++ initializer (compiled and
// run), the device bundle (read back as the firmware reads it) and the kernel-vector reader, and
// comes back equal field by field, named. The program has a reverse op and a strided output, so
// the fields that default to zero are carried too.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>

#include "bundle_format.h"
#include "device.h"
#include "kernel_vectors.h"
#include "program_ops.h"
#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/params_codec.h"
#include "emitted_build.h"
#include "gru_model.h"
#include "op_fields.h"
#include "random_program.h"
#include "s16_model.h"
#include "whole_program.h"

namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;
using testing_support::expect_same_ops;

// Ops (and buffer widths) as records, written by the description.
std::string records_of(const std::vector<qlstm_op>& ops, const std::vector<int32_t>& widths) {
  std::string record;
  struct Sink {
    std::string* s;
    void put(const uint8_t* bytes, size_t n) { s->append(reinterpret_cast<const char*>(bytes), n); }
  } sink{&record};
  qlstm::RecordWriter<Sink> w(sink);
  for (const qlstm_op& op : ops) qlstm::visit_op_fields(op, w);
  for (int32_t width : widths) w.i32("width", width);
  return record;
}

// Ops read back from records the way the firmware reads them (an aligned copy, in place).
struct DecodedOps {
  std::vector<uint32_t> storage;
  std::vector<qlstm_op> ops;
  std::vector<qlstm::OpBlock> blocks;  // ops[k].params points into blocks[k]
  std::vector<int32_t> widths;
};

DecodedOps read_ops(const std::string& bytes, size_t op_count, size_t buffer_count) {
  DecodedOps d;
  d.storage.assign((bytes.size() + 3) / 4, 0);
  std::memcpy(d.storage.data(), bytes.data(), bytes.size());
  qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(d.storage.data()), bytes.size());
  d.ops.resize(op_count);
  d.blocks.resize(op_count);
  for (size_t k = 0; k < op_count; ++k) qlstm::visit_op_fields(d.ops[k], d.blocks[k], r);
  d.widths.resize(buffer_count);
  for (int32_t& w : d.widths) r.i32("width", w);
  EXPECT_TRUE(r.complete()) << (r.failed() ? r.failed() : "bytes after the last field");
  return d;
}

// A bidirectional two-layer program: reverse ops, output_width 2H, four distinct parameter sets.
CompiledModel test_model() {
  std::mt19937_64 rng(31);
  return compile_program(random_program(3, 5, 2, 2, rng), calibration(3, rng), fast()).model;
}

constexpr int32_t kBatch = 2;

TEST(ParamsCodec, TheTestProgramHasNonDefaultDirectionAndWidth) {
  const CompiledModel m = test_model();  // the table points into it
  const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kBatchMajor);
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(testing_support::block<qlstm_lstm_s8_params>(p.ops[1]).time_direction, QLSTM_TIME_REVERSE);
  EXPECT_EQ(testing_support::block<qlstm_lstm_s8_params>(p.ops[1]).output_width, 10);
  EXPECT_EQ(p.ops[1].output_offset, 5);
}

TEST(ParamsCodec, ModelFileKeepsEveryField) {
  const CompiledModel m = test_model();
  const CompiledModel back = parse_model(serialize_model(m), "roundtrip.qlstm");
  for (Layout layout : {Layout::kBatchMajor, Layout::kTimeMajor}) {
    expect_same_ops(runtime_program(m, kBatch, 7, layout).ops, runtime_program(back, kBatch, 7, layout).ops,
                    "model file");
  }
}

// The bundle of case c (program p, the input x as raw bytes), read back as qlstm_device.cc reads
// it: every op, the widths, the buffer types (all int8 when p has none) and the input bytes.
void expect_bundle_round_trip(const qlstm::device::BundleCase& c, const RuntimeProgram& p, const std::vector<int8_t>& x) {
  const std::string file = qlstm::device::bundle({c});
  // "QLVB", version, count, record length, then the record.
  ASSERT_GT(file.size(), 16u);
  ASSERT_EQ(file.compare(0, 4, "QLVB"), 0);
  std::vector<uint32_t> storage((file.size() - 16 + 3) / 4);
  std::memcpy(storage.data(), file.data() + 16, file.size() - 16);
  qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(storage.data()), file.size() - 16);
  qlstm::bundle::CaseView v{};
  qlstm::bundle::visit_case_header(v, r);
  ASSERT_EQ(r.failed(), nullptr);
  ASSERT_EQ(v.op_count, static_cast<int32_t>(p.ops.size()));
  EXPECT_EQ(std::vector<int32_t>(v.buffer_widths, v.buffer_widths + v.buffer_count), p.widths);
  const std::vector<int32_t> types = p.types.empty() ? std::vector<int32_t>(p.widths.size(), QLSTM_ELEMENT_S8) : p.types;
  EXPECT_EQ(std::vector<int32_t>(v.buffer_types, v.buffer_types + v.buffer_count), types);
  std::vector<qlstm_op> ops(p.ops.size());
  std::vector<qlstm::OpBlock> blocks(p.ops.size());
  for (size_t k = 0; k < ops.size(); ++k) qlstm::visit_op_fields(ops[k], blocks[k], r);
  const qlstm::bundle::CaseSizes n = qlstm::bundle::case_sizes(v, ops.data());
  EXPECT_EQ(n.input_bytes, static_cast<int64_t>(x.size()));
  qlstm::bundle::visit_case_data(v, n, r);
  EXPECT_TRUE(r.complete()) << (r.failed() ? r.failed() : "bytes after the last field");
  EXPECT_EQ(std::vector<int8_t>(v.input, v.input + x.size()), x);
  expect_same_ops(p.ops, ops, "device bundle");
}

TEST(ParamsCodec, DeviceBundleKeepsEveryField) {
  const CompiledModel m = test_model();
  const RuntimeProgram p = runtime_program(m, kBatch, 4, Layout::kTimeMajor);
  qlstm::device::BundleCase c;
  c.name = "roundtrip";
  for (const qlstm_op& op : p.ops) c.ops.emplace_back(op);
  c.buffer_widths = p.widths;
  const std::vector<int8_t> x(static_cast<size_t>(kBatch) * 4 * 3, 1);
  c.input = x.data();
  expect_bundle_round_trip(c, p, x);
}

// A 16x8 program carries its buffer types, and its int16 input as raw bytes (2 per value).
TEST(ParamsCodec, DeviceBundleKeepsBufferTypes) {
  std::mt19937_64 rng(16);
  const CompiledModel m = testing_support::s16_model(rng);
  const RuntimeProgram p = runtime_program(m, kBatch, 4, Layout::kBatchMajor);
  ASSERT_FALSE(p.types.empty());
  const qlstm::device::BundleCase base = qlstm::device::program_case("s16", p.table(), 4);
  EXPECT_EQ(base.buffer_types, p.types);
  qlstm::device::BundleCase c = base;
  std::vector<int8_t> x(static_cast<size_t>(kBatch) * 4 * static_cast<size_t>(m.input_size()) * 2);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<int8_t>(k * 7);
  c.input = x.data();
  expect_bundle_round_trip(c, p, x);
  // The output is the last buffer's bytes: int8 softmax scores.
  EXPECT_EQ(qlstm::device::output_bytes(c), qlstm::device::output_count(c));
}

// A program built with an emitted NAME_model.cc (-DMODEL=NAME, its header and NAME_OUTPUT_BYTES;
// MODEL_INPUT_T / MODEL_OUTPUT_T its run's element types, int8_t unless given):
//   probe table OUT          the op table (NAME_program) through the record codec: each op's
//                            fields, then per buffer its width, steps and type, the batch and layout
//   probe run IN T OUT       NAME_run over T steps of IN's input; OUT: NAME_OUTPUT_BYTES(T)
//   probe quant IN OUT       NAME_quantize_input of each float32 of IN, then
//                            NAME_dequantize_output of -128 ... 127 as float32
const char* const kProbe = R"(#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "qlstm/params_codec.h"
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#include MODEL_HEADER
#ifndef MODEL_INPUT_T
#define MODEL_INPUT_T int8_t
#endif
#ifndef MODEL_OUTPUT_T
#define MODEL_OUTPUT_T int8_t
#endif
struct FileSink {
  FILE* f;
  void put(const uint8_t* b, size_t n) { std::fwrite(b, 1, n, f); }
};
static std::vector<char> slurp(const char* path) {
  std::vector<char> v;
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return v;
  int c;
  while ((c = std::fgetc(f)) != EOF) v.push_back(static_cast<char>(c));
  std::fclose(f);
  return v;
}
int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  FILE* f = std::fopen(argv[argc - 1], "wb");
  if (f == nullptr) return 2;
  if (mode == "table" && argc == 3) {
    FileSink sink{f};
    qlstm::RecordWriter<FileSink> w(sink);
    const qlstm_program* p = CAT(MODEL, _program)();
    for (int32_t k = 0; k < p->op_count; ++k) qlstm::visit_op_fields(p->ops[k], w);
    for (int32_t b = 0; b < p->buffer_count; ++b) w.i32("width", p->buffer_widths[b]);
    for (int32_t b = 0; b < p->buffer_count; ++b) w.i32("steps", p->buffer_steps[b]);
    for (int32_t b = 0; b < p->buffer_count; ++b) w.i32("type", p->buffer_types ? p->buffer_types[b] : 0);
    w.i32("batch", p->batch);
    w.i32("layout", p->layout);
  } else if (mode == "run" && argc == 5) {
    const std::vector<char> bytes = slurp(argv[2]);
    std::vector<MODEL_INPUT_T> x(bytes.size() / sizeof(MODEL_INPUT_T));
    if (!x.empty()) std::memcpy(x.data(), bytes.data(), x.size() * sizeof(MODEL_INPUT_T));
    const int32_t T = std::atoi(argv[3]);
    std::vector<MODEL_OUTPUT_T> y(MODEL_OUTPUT_BYTES(T) / sizeof(MODEL_OUTPUT_T));
    if (CAT(MODEL, _run)(x.data(), y.data(), T) != QLSTM_OK) return 3;
    std::fwrite(y.data(), sizeof(MODEL_OUTPUT_T), y.size(), f);
  } else if (mode == "quant" && argc == 4) {
    const std::vector<char> x = slurp(argv[2]);
    for (size_t k = 0; k + sizeof(float) <= x.size(); k += sizeof(float)) {
      float v;
      std::memcpy(&v, x.data() + k, sizeof v);
      const MODEL_INPUT_T q = CAT(MODEL, _quantize_input)(v);
      std::fwrite(&q, sizeof q, 1, f);
    }
    for (int q = -128; q <= 127; ++q) {
      const float v = CAT(MODEL, _dequantize_output)(static_cast<MODEL_OUTPUT_T>(q));
      std::fwrite(&v, sizeof v, 1, f);
    }
  } else {
    return 2;
  }
  return std::fclose(f) == 0 ? 0 : 2;
}
)";

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A model's emitted source built with the probe, in a temporary folder of its own.
class EmittedProbe {
 public:
  EmittedProbe(const CompiledModel& m, const std::string& name, int32_t batch, int32_t max_time_steps,
               const std::string& defines = "")
      : dir_(fs::temp_directory_path() / ("qlstm_codec_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "probe.cc") << kProbe;
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    build_ = build_emitted(emit_cpp(m, name, batch, max_time_steps, "params_codec_test"), name, dir_,
                           (dir_ / "probe.cc").string(), "-DMODEL=" + name + " '-DMODEL_HEADER=\"" + name + "_model.h\"' -DMODEL_OUTPUT_BYTES=" + upper + "_OUTPUT_BYTES " + defines);
  }
  ~EmittedProbe() { fs::remove_all(dir_); }
  const EmittedBuild& build() const { return build_; }
  // Runs the probe with `args`; returns what it wrote to its last argument, `out`.
  std::string run(const std::string& args, const std::string& out, int* status) const {
    const std::string path = (dir_ / out).string();
    *status = std::system((build_.exe + " " + args + " " + path).c_str());
    return file_bytes(path);
  }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }

 private:
  fs::path dir_;
  EmittedBuild build_;
};

// The emitted table, read back: each field equals the compiler's table for the same batch.
void expect_emitted_table(const EmittedProbe& probe, const RuntimeProgram& p) {
  int status = -1;
  const std::string bytes = probe.run("table", "table.bin", &status);
  ASSERT_EQ(status, 0);
  std::vector<uint32_t> storage((bytes.size() + 3) / 4);
  std::memcpy(storage.data(), bytes.data(), bytes.size());
  qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(storage.data()), bytes.size());
  std::vector<qlstm_op> ops(p.ops.size());
  std::vector<qlstm::OpBlock> blocks(p.ops.size());
  for (size_t k = 0; k < ops.size(); ++k) qlstm::visit_op_fields(ops[k], blocks[k], r);
  std::vector<int32_t> widths(p.widths.size()), steps(p.steps.size()), types(p.widths.size());
  for (int32_t& w : widths) r.i32("width", w);
  for (int32_t& s : steps) r.i32("steps", s);
  for (int32_t& t : types) r.i32("type", t);
  int32_t batch = 0, layout = -1;
  r.i32("batch", batch);
  r.i32("layout", layout);
  EXPECT_TRUE(r.complete()) << (r.failed() ? r.failed() : "bytes after the last field");
  expect_same_ops(p.ops, ops, "emitted initializer");
  EXPECT_EQ(widths, p.widths);
  EXPECT_EQ(steps, p.steps);
  EXPECT_EQ(types, p.types.empty() ? std::vector<int32_t>(p.widths.size(), QLSTM_ELEMENT_S8) : p.types);
  EXPECT_EQ(batch, p.batch);
  EXPECT_EQ(layout, p.layout);
}

// The emitted NAME_model.cc, built with the runtime alone, writes its own op table through the
// record codec; that equals the compiler's table.
TEST(ParamsCodec, EmittedInitializerHoldsEveryField) {
  const CompiledModel m = test_model();
  const EmittedProbe probe(m, "rt", kBatch, 6);
  ASSERT_TRUE(probe.build().ok) << probe.build().log;
  expect_emitted_table(probe, runtime_program(m, kBatch, 0, Layout::kTimeMajor));
}

// A program of every op kind (a front Linear with a fused ReLU, the LSTM, a step selection, a
// Linear, a table, a Linear, a softmax): its emitted table equals the compiler's field by field,
// and NAME_run equals the host's run_program_s8 byte for byte.
TEST(ParamsCodec, EmittedWholeProgramHoldsEveryFieldAndRunsAsTheHost) {
  std::mt19937_64 rng(41);
  constexpr int32_t kInput = 3, kSteps = 7;
  const CompiledModel m = compile_program(every_kind_program(kInput, 5, 2, rng), calibration(kInput, rng), fast()).model;
  std::vector<int32_t> kinds;
  for (const ProgramOp& op : m.ops) kinds.push_back(op.kind);
  ASSERT_EQ(kinds, (std::vector<int32_t>{QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_LSTM_S8, QLSTM_OP_SELECT_STEP,
                                         QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_TABLE_S8,
                                         QLSTM_OP_FULLY_CONNECTED_S8, QLSTM_OP_SOFTMAX_S8}));
  const EmittedProbe probe(m, "wm", kBatch, kSteps);
  ASSERT_TRUE(probe.build().ok) << probe.build().log;
  const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kTimeMajor);
  ASSERT_EQ(p.steps.back(), QLSTM_BUFFER_ONE_STEP);
  expect_emitted_table(probe, p);
  for (int32_t T : {3, kSteps}) {
    std::vector<int8_t> x(static_cast<size_t>(kBatch) * T * kInput);
    for (int8_t& v : x) v = static_cast<int8_t>(rng());
    std::ofstream(probe.path("x.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size());
    int status = -1;
    const std::string y = probe.run("run " + probe.path("x.bin") + " " + std::to_string(T), "y.bin", &status);
    ASSERT_EQ(status, 0) << "T = " << T;
    const std::vector<int8_t> want = run_program_s8(m, x, {kBatch, T, Layout::kTimeMajor});
    EXPECT_EQ(want.size(), static_cast<size_t>(kBatch) * 4u);  // one row of 4 classes per batch row
    EXPECT_EQ(std::vector<int8_t>(y.begin(), y.end()), want) << "T = " << T;
  }
  // More steps than the emitted activation areas hold: the runtime refuses (the probe's status 3).
  std::vector<int8_t> longer(static_cast<size_t>(kBatch) * (kSteps + 1) * kInput, 1);
  std::ofstream(probe.path("long.bin"), std::ios::binary).write(reinterpret_cast<const char*>(longer.data()), longer.size());
  int status = -1;
  probe.run("run " + probe.path("long.bin") + " " + std::to_string(kSteps + 1), "y_long.bin", &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
}

// A program of GRU ops (a bidirectional layer from a constant Q0.15 h0, then an FC head; every
// step and FINAL): the emitted table equals the compiler's field by field, NAME_run equals the
// host's run_program_s8 byte for byte, and the records the bundle and the file hold read back equal.
TEST(ParamsCodec, EmittedGruProgramHoldsEveryFieldAndRunsAsTheHost) {
  std::mt19937_64 rng(53);
  constexpr int32_t kSteps = 6;
  for (const bool final_state : {false, true}) {
    SCOPED_TRACE(final_state ? "final" : "every step");
    const CompiledModel m = testing_support::gru_model(rng, {final_state, true});
    const std::string name = final_state ? "gf" : "gs";
    const EmittedProbe probe(m, name, kBatch, kSteps);
    ASSERT_TRUE(probe.build().ok) << probe.build().log;
    const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kBatchMajor);
    ASSERT_EQ(p.ops[0].kind, QLSTM_OP_GRU_S8);
    expect_emitted_table(probe, p);
    const DecodedOps d = read_ops(records_of(p.ops, p.widths), p.ops.size(), p.widths.size());
    expect_same_ops(p.ops, d.ops, "records");
    for (int32_t T : {1, kSteps}) {
      std::vector<int8_t> x(static_cast<size_t>(kBatch) * T * m.input_size());
      for (int8_t& v : x) v = static_cast<int8_t>(rng());
      std::ofstream(probe.path("x.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size());
      int status = -1;
      const std::string y = probe.run("run " + probe.path("x.bin") + " " + std::to_string(T), "y.bin", &status);
      ASSERT_EQ(status, 0) << "T = " << T;
      const std::vector<int8_t> want = run_program_s8(m, x, {kBatch, T, Layout::kBatchMajor});
      EXPECT_EQ(want.size(), static_cast<size_t>(kBatch) * (final_state ? 1 : T) * m.output_size());
      EXPECT_EQ(std::vector<int8_t>(y.begin(), y.end()), want) << "T = " << T;
    }
  }
}

// NAME_run of an emitted program with int16 input over 1 and max_steps steps equals the host's
// run_program_raw byte for byte.
void run_and_compare(const EmittedProbe& probe, const CompiledModel& m, std::mt19937_64& rng, int32_t max_steps) {
  const bool one_row = m.output_is_one_step();  // one output row per batch row
  for (int32_t T : {1, max_steps}) {
    std::vector<int16_t> x(static_cast<size_t>(kBatch) * T * m.input_size());
    std::uniform_int_distribution<int32_t> u(INT16_MIN, INT16_MAX);
    for (int16_t& v : x) v = static_cast<int16_t>(u(rng));
    const size_t x_bytes = x.size() * sizeof(int16_t);
    std::ofstream(probe.path("x.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x_bytes);
    int status = -1;
    const std::string y = probe.run("run " + probe.path("x.bin") + " " + std::to_string(T), "y.bin", &status);
    ASSERT_EQ(status, 0) << "T = " << T;
    const std::vector<uint8_t> want = run_program_raw(m, x.data(), x_bytes, {kBatch, T, Layout::kBatchMajor});
    const size_t output_bytes = m.buffers.back().type == QLSTM_ELEMENT_S16 ? 2 : 1;
    EXPECT_EQ(want.size(), static_cast<size_t>(kBatch) * (one_row ? 1 : T) * m.output_size() * output_bytes);
    EXPECT_EQ(std::vector<uint8_t>(y.begin(), y.end()), want) << "T = " << T;
  }
}

// A 16x8 program (int16 input, a 16x8 LSTM and FC, a requantization to an int8 softmax): the
// emitted table, its buffer types included, equals the compiler's field by field, NAME_run takes
// int16 input and equals the host's run_program_raw byte for byte, and the records read back equal.
TEST(ParamsCodec, EmittedS16ProgramHoldsEveryFieldAndRunsAsTheHost) {
  std::mt19937_64 rng(59);
  constexpr int32_t kSteps = 6;
  // A one-step head (the LSTM's final state): its record's output_steps, one output row per batch row.
  testing_support::S16ModelShape final_shape;
  final_shape.final_state = true;
  const CompiledModel one_step = testing_support::s16_model(rng, final_shape);
  const EmittedProbe final_probe(one_step, "sf", kBatch, kSteps, "-DMODEL_INPUT_T=int16_t");
  ASSERT_TRUE(final_probe.build().ok) << final_probe.build().log;
  const RuntimeProgram pf = runtime_program(one_step, kBatch, 0, Layout::kBatchMajor);
  ASSERT_EQ(pf.steps.back(), QLSTM_BUFFER_ONE_STEP);
  expect_emitted_table(final_probe, pf);
  run_and_compare(final_probe, one_step, rng, kSteps);

  const CompiledModel m = testing_support::s16_model(rng);
  const EmittedSource e = emit_cpp(m, "sx", kBatch, kSteps, "params_codec_test");
  EXPECT_NE(e.header.find("qlstm_status sx_run(const int16_t* input, int8_t* output, int32_t time_steps);"),
            std::string::npos) << e.header;
  EXPECT_NE(e.header.find("#define SX_HIDDEN_SIZE 4 "), std::string::npos);
  EXPECT_NE(e.source.find("kBufferTypes[5] = {QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16, "
                          "QLSTM_ELEMENT_S8, QLSTM_ELEMENT_S8}"),
            std::string::npos);
  const EmittedProbe probe(m, "sx", kBatch, kSteps, "-DMODEL_INPUT_T=int16_t");
  ASSERT_TRUE(probe.build().ok) << probe.build().log;
  const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kBatchMajor);
  ASSERT_FALSE(p.types.empty());
  expect_emitted_table(probe, p);
  const DecodedOps d = read_ops(records_of(p.ops, p.widths), p.ops.size(), p.widths.size());
  expect_same_ops(p.ops, d.ops, "records");
  run_and_compare(probe, m, rng, kSteps);

  // The 16x8 softmax head (FC_S16 -> SOFTMAX_S16): int16 in, int16 probabilities out.
  testing_support::S16ModelShape softmax_shape;
  softmax_shape.softmax_s16 = true;
  const CompiledModel ms = testing_support::s16_model(rng, softmax_shape);
  ASSERT_EQ(ms.ops.back().kind, QLSTM_OP_SOFTMAX_S16);
  const EmittedSource es = emit_cpp(ms, "ss", kBatch, kSteps, "params_codec_test");
  EXPECT_NE(es.header.find("qlstm_status ss_run(const int16_t* input, int16_t* output, int32_t time_steps);"),
            std::string::npos) << es.header;
  EXPECT_NE(es.source.find("QLSTM_OP_SOFTMAX_S16"), std::string::npos);
  const EmittedProbe softmax_probe(ms, "ss", kBatch, kSteps, "-DMODEL_INPUT_T=int16_t -DMODEL_OUTPUT_T=int16_t");
  ASSERT_TRUE(softmax_probe.build().ok) << softmax_probe.build().log;
  const RuntimeProgram ps = runtime_program(ms, kBatch, 0, Layout::kBatchMajor);
  expect_emitted_table(softmax_probe, ps);
  const DecodedOps ds = read_ops(records_of(ps.ops, ps.widths), ps.ops.size(), ps.widths.size());
  expect_same_ops(ps.ops, ds.ops, "records");
  run_and_compare(softmax_probe, ms, rng, kSteps);
  // The int16 input helper: the host's rounding (ties to even) and saturation, for int16 codes'
  // own values and for random ones beyond the range.
  const double scale = m.input_quant().scale;
  std::vector<float> f;
  for (int32_t q = INT16_MIN; q <= INT16_MAX; q += 97) f.push_back(static_cast<float>(q * scale));
  std::uniform_real_distribution<double> wide(-40000.0 * scale, 40000.0 * scale);
  for (int k = 0; k < 2000; ++k) f.push_back(static_cast<float>(wide(rng)));
  std::ofstream(probe.path("f.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
  int status = -1;
  const std::string q = probe.run("quant " + probe.path("f.bin"), "q.bin", &status);
  ASSERT_EQ(status, 0);
  ASSERT_EQ(q.size(), f.size() * sizeof(int16_t) + 256 * sizeof(float));
  size_t compared = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    const double quotient = static_cast<double>(f[k]) / scale;
    if (std::abs(quotient - std::floor(quotient) - 0.5) < 1e-3) continue;  // the float quotient may round the other way
    ++compared;
    int16_t got;
    std::memcpy(&got, q.data() + k * sizeof got, sizeof got);
    EXPECT_EQ(got, static_cast<int16_t>(std::clamp(std::nearbyint(quotient), -32768.0, 32767.0))) << "x = " << f[k];
  }
  EXPECT_GT(compared, f.size() * 9 / 10);
}

// A learned initial state with one row per batch row ([L, B, H]) is emitted as it is: NAME_run at
// the model's batch equals run_program_s8 from the same state; another --batch is refused, saying
// which.
TEST(ParamsCodec, EmittedPerRowInitialStateRunsAsTheHost) {
  std::mt19937_64 rng(47);
  constexpr int32_t kInput = 3, kHidden = 4, kRows = 3, kSteps = 5;
  FloatProgram f = per_step_program(kInput, kHidden, 2, rng);
  f.initial_hidden = f.initial_cell = StateSource::kConstant;
  std::normal_distribution<float> n(0.0f, 0.5f);
  f.h0.assign(1, std::vector<float>(static_cast<size_t>(kRows) * kHidden));
  f.c0 = f.h0;
  for (std::vector<float>* v : {&f.h0[0], &f.c0[0]}) {
    for (float& x : *v) x = n(rng);
  }
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> cal(static_cast<size_t>(kRows) * 12 * kInput);
  for (float& x : cal) x = n01(rng);
  CalibrationSet set;
  set.add_batch(cal, {kRows, 12, Layout::kBatchMajor}, kInput);
  const CompiledModel m = compile_program(f, set, fast()).model;
  ASSERT_EQ(m.constant_state_batch(), kRows);
  try {
    emit_cpp(m, "ps", 1, kSteps, "params_codec_test");
    ADD_FAILURE() << "a batch other than the state's rows was emitted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("give --batch 3"), std::string::npos) << e.what();
  }
  const EmittedProbe probe(m, "ps", kRows, kSteps);
  ASSERT_TRUE(probe.build().ok) << probe.build().log;
  std::vector<int8_t> x(static_cast<size_t>(kRows) * kSteps * kInput);
  for (int8_t& v : x) v = static_cast<int8_t>(rng());
  std::ofstream(probe.path("x.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size());
  int status = -1;
  const std::string y = probe.run("run " + probe.path("x.bin") + " " + std::to_string(kSteps), "y.bin", &status);
  ASSERT_EQ(status, 0);
  // The rows' states differ, so a row's output depends on which state it started from.
  const std::vector<int8_t> want = run_program_s8(m, x, {kRows, kSteps, Layout::kTimeMajor});
  EXPECT_EQ(std::vector<int8_t>(y.begin(), y.end()), want);
}

// NAME_quantize_input and NAME_dequantize_output, in single precision on the device, agree with the
// compiler's quantization (double): every int8 value's own float comes back to it, random floats
// land on the host's int8 except within 1e-3 of a rounding tie, and the dequantized values equal
// the host's to float precision.
TEST(ParamsCodec, EmittedQuantizeHelpersAgreeWithTheHost) {
  std::mt19937_64 rng(43);
  const CompiledModel m = compile_program(classifier_program(2, 4, 3, rng), calibration(2, rng), fast()).model;
  const EmittedProbe probe(m, "qh", 1, 0);
  ASSERT_TRUE(probe.build().ok) << probe.build().log;
  const AffineQuant in = m.input_quant(), out = m.output_quant();
  std::vector<float> x;
  for (int q = -128; q <= 127; ++q) x.push_back(static_cast<float>(in.dequantize(q)));
  std::uniform_real_distribution<double> u(-200.0 * in.scale, 200.0 * in.scale);
  for (int k = 0; k < 4000; ++k) x.push_back(static_cast<float>(u(rng)));
  std::ofstream(probe.path("f.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  int status = -1;
  const std::string bytes = probe.run("quant " + probe.path("f.bin"), "q.bin", &status);
  ASSERT_EQ(status, 0);
  ASSERT_EQ(bytes.size(), x.size() + 256 * sizeof(float));
  size_t compared = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const double quotient = static_cast<double>(x[k]) / in.scale;
    const double from_tie = std::abs(quotient - std::floor(quotient) - 0.5);
    if (k >= 256 && from_tie < 1e-3) continue;  // the float quotient may round the other way
    ++compared;
    EXPECT_EQ(static_cast<int8_t>(bytes[k]), in.quantize(x[k])) << "x = " << x[k];
  }
  EXPECT_GT(compared, x.size() * 9 / 10);
  for (int q = -128; q <= 127; ++q) {
    float got;
    std::memcpy(&got, bytes.data() + x.size() + static_cast<size_t>(q + 128) * sizeof(float), sizeof got);
    EXPECT_FLOAT_EQ(got, static_cast<float>(out.dequantize(q))) << "q = " << q;
  }
}

// A kernel vector's case sets every field of its block (none left to zero-initialization by
// accident) and goes through the device bundle unchanged.
TEST(ParamsCodec, VectorCaseKeepsEveryFieldThroughTheBundle) {
  const qlstm::vectors::VectorFile f =
      qlstm::vectors::load_vector_file(std::string(QLSTM_GOLDEN_DIR) + "/qlstm_golden_v1.json");
  ASSERT_FALSE(f.cases.empty());
  for (size_t k = 0; k < f.cases.size(); k += 17) {
    const qlstm::vectors::KernelCase& c = f.cases[k];
    const qlstm_lstm_s8_params p = c.params();
    EXPECT_EQ(p.time_direction, QLSTM_TIME_FORWARD);
    EXPECT_EQ(p.output_width, 0);
    const char* field = nullptr;
    EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_OK) << (field ? field : "");
    const qlstm::device::BundleCase b = qlstm::device::single_op_case(c.name, p);
    const std::vector<qlstm_op> ops = {b.ops[0].op};
    const DecodedOps d = read_ops(records_of(ops, b.buffer_widths), 1, 2);
    expect_same_ops(ops, d.ops, "vector case " + c.name);
    EXPECT_EQ(d.widths, (std::vector<int32_t>{p.dims.input_size, p.dims.hidden_size}));
  }
}

// A record cut anywhere is refused, naming the first field that does not fit.
TEST(ParamsCodec, TruncatedRecordNamesTheField) {
  const CompiledModel m = test_model();  // the table points into it
  const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kBatchMajor);
  const std::string record = records_of({p.ops[0]}, {});
  std::vector<uint32_t> storage(record.size() / 4 + 1);
  std::memcpy(storage.data(), record.data(), record.size());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{8}, record.size() / 2, record.size() - 4}) {
    qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(storage.data()), cut);
    qlstm_op op{};
    qlstm::OpBlock block{};
    qlstm::visit_op_fields(op, block, r);
    ASSERT_NE(r.failed(), nullptr) << "cut at " << cut;
    EXPECT_FALSE(r.complete());
  }
  qlstm::RecordReader whole(reinterpret_cast<const uint8_t*>(storage.data()), record.size());
  qlstm_op op{};
  qlstm::OpBlock block{};
  qlstm::visit_op_fields(op, block, whole);
  EXPECT_TRUE(whole.complete());
  // The last fields of a cut record: the state offset, then the second input buffer.
  qlstm::RecordReader last(reinterpret_cast<const uint8_t*>(storage.data()), record.size() - 4);
  qlstm::visit_op_fields(op, block, last);
  EXPECT_STREQ(last.failed(), "second_input_buffer");
  qlstm::RecordReader before_last(reinterpret_cast<const uint8_t*>(storage.data()), record.size() - 8);
  qlstm::visit_op_fields(op, block, before_last);
  EXPECT_STREQ(before_last.failed(), "state_offset");
}

}  // namespace
