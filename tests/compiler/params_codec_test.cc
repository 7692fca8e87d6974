// One description of each op's parameters (runtime/include/qlstm/params_codec.h), every form it
// produces: an op table goes through the model file, the emitted C++ initializer (compiled and
// run), the device bundle (read back as the firmware reads it) and the kernel-vector reader, and
// comes back equal field by field, named. The program has a reverse op and a strided output, so
// the fields that default to zero are carried too.
#include <gtest/gtest.h>
#include <sys/wait.h>

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
#include "qlstm/compiler/emit_cpp.h"
#include "qlstm/compiler/model_file.h"
#include "qlstm/params_codec.h"
#include "random_program.h"

namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;

struct Field {
  std::string name;
  std::vector<int64_t> values;
};

// The op flattened by the description itself: a field the description names is compared.
struct FieldList {
  std::vector<Field> fields;
  void open(const char*) {}
  void close() {}
  void unused(const char*) {}
  void i32(const char* name, int32_t v) { fields.push_back({name, {v}}); }
  template <class T>
  void array(const char* name, const T* data, int64_t count) {
    Field f{name, {}};
    for (int64_t k = 0; k < count; ++k) f.values.push_back(data[k]);
    fields.push_back(f);
  }
};

std::vector<Field> fields_of(const qlstm_op& op) {
  FieldList f;
  qlstm::visit_op_fields(op, f);
  return f.fields;
}

void expect_same_ops(const std::vector<qlstm_op>& want, const std::vector<qlstm_op>& got, const std::string& form) {
  ASSERT_EQ(want.size(), got.size()) << form;
  for (size_t k = 0; k < want.size(); ++k) {
    const std::vector<Field> a = fields_of(want[k]), b = fields_of(got[k]);
    ASSERT_EQ(a.size(), b.size()) << form << ": op " << k;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].name, b[i].name) << form << ": op " << k;
      EXPECT_EQ(a[i].values, b[i].values) << form << ": ops[" << k << "]." << a[i].name;
    }
  }
}

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
  std::vector<int32_t> widths;
};

DecodedOps read_ops(const std::string& bytes, size_t op_count, size_t buffer_count) {
  DecodedOps d;
  d.storage.assign((bytes.size() + 3) / 4, 0);
  std::memcpy(d.storage.data(), bytes.data(), bytes.size());
  qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(d.storage.data()), bytes.size());
  d.ops.resize(op_count);
  for (qlstm_op& op : d.ops) qlstm::visit_op_fields(op, r);
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
  EXPECT_EQ(p.ops[1].lstm.time_direction, QLSTM_TIME_REVERSE);
  EXPECT_EQ(p.ops[1].lstm.output_width, 10);
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

TEST(ParamsCodec, DeviceBundleKeepsEveryField) {
  const CompiledModel m = test_model();
  const RuntimeProgram p = runtime_program(m, kBatch, 4, Layout::kTimeMajor);
  qlstm::device::BundleCase c;
  c.name = "roundtrip";
  c.ops = p.ops;
  c.buffer_widths = p.widths;
  const std::vector<int8_t> x(static_cast<size_t>(kBatch) * 4 * 3, 1);
  c.input = x.data();
  const std::string file = qlstm::device::bundle({c});
  // "QLVB", version, count, record length, then the record, read as qlstm_device.cc reads it.
  ASSERT_GT(file.size(), 16u);
  ASSERT_EQ(file.compare(0, 4, "QLVB"), 0);
  std::vector<uint32_t> storage((file.size() - 16 + 3) / 4);
  std::memcpy(storage.data(), file.data() + 16, file.size() - 16);
  qlstm::RecordReader r(reinterpret_cast<const uint8_t*>(storage.data()), file.size() - 16);
  qlstm::bundle::CaseView v{};
  qlstm::bundle::visit_case_header(v, r);
  ASSERT_EQ(r.failed(), nullptr);
  ASSERT_EQ(v.op_count, 4);
  EXPECT_EQ(std::vector<int32_t>(v.buffer_widths, v.buffer_widths + v.buffer_count), p.widths);
  std::vector<qlstm_op> ops(4);
  for (qlstm_op& op : ops) qlstm::visit_op_fields(op, r);
  qlstm::bundle::visit_case_data(v, qlstm::bundle::case_sizes(v, ops.data()), r);
  EXPECT_TRUE(r.complete()) << (r.failed() ? r.failed() : "bytes after the last field");
  EXPECT_EQ(std::vector<int8_t>(v.input, v.input + x.size()), x);
  expect_same_ops(p.ops, ops, "device bundle");
}

// The emitted NAME_model.cc, built with the runtime alone, writes its own op table through the
// record codec; that equals the compiler's table.
TEST(ParamsCodec, EmittedInitializerHoldsEveryField) {
  const CompiledModel m = test_model();
  const fs::path dir = fs::temp_directory_path() / ("qlstm_codec_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const EmittedSource e = emit_cpp(m, "rt", kBatch, 6, "params_codec_test");
  std::ofstream(dir / "rt_model.h") << e.header;
  std::ofstream(dir / "rt_model.cc") << e.source;
  std::ofstream(dir / "dump.cc") << R"(#include <cstdio>
#include "qlstm/params_codec.h"
#include "rt_model.h"
struct FileSink {
  FILE* f;
  void put(const uint8_t* b, size_t n) { std::fwrite(b, 1, n, f); }
};
int main(int, char** argv) {
  FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr) return 2;
  FileSink sink{f};
  qlstm::RecordWriter<FileSink> w(sink);
  const qlstm_program* p = rt_program();
  for (int32_t k = 0; k < p->op_count; ++k) qlstm::visit_op_fields(p->ops[k], w);
  for (int32_t b = 0; b < p->buffer_count; ++b) w.i32("width", p->buffer_widths[b]);
  return std::fclose(f) == 0 ? 0 : 2;
}
)";
  const std::string exe = (dir / "dump").string(), out = (dir / "ops.bin").string();
  const std::string build = std::string(QLSTM_CXX) + " -std=c++17 " + QLSTM_EXTRA_FLAGS + " -I" +
                            QLSTM_RUNTIME_INCLUDE + " -I" + dir.string() + " " + (dir / "dump.cc").string() + " " +
                            (dir / "rt_model.cc").string() + " " + QLSTM_RUNTIME_LIB + " -o " + exe;
  ASSERT_EQ(std::system(build.c_str()), 0) << build;
  ASSERT_EQ(std::system((exe + " " + out).c_str()), 0);
  std::ifstream in(out, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const RuntimeProgram p = runtime_program(m, kBatch, 0, Layout::kTimeMajor);
  const DecodedOps d = read_ops(bytes, p.ops.size(), p.widths.size());
  expect_same_ops(p.ops, d.ops, "emitted initializer");
  EXPECT_EQ(d.widths, p.widths);
  fs::remove_all(dir);
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
    const DecodedOps d = read_ops(records_of(b.ops, b.buffer_widths), 1, 2);
    expect_same_ops(b.ops, d.ops, "vector case " + c.name);
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
    qlstm::visit_op_fields(op, r);
    ASSERT_NE(r.failed(), nullptr) << "cut at " << cut;
    EXPECT_FALSE(r.complete());
  }
  qlstm::RecordReader whole(reinterpret_cast<const uint8_t*>(storage.data()), record.size());
  qlstm_op op{};
  qlstm::visit_op_fields(op, whole);
  EXPECT_TRUE(whole.complete());
  // The last field of a cut record: the state offset.
  qlstm::RecordReader last(reinterpret_cast<const uint8_t*>(storage.data()), record.size() - 4);
  qlstm::visit_op_fields(op, last);
  EXPECT_STREQ(last.failed(), "state_offset");
}

}  // namespace
