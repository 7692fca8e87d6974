// qlstm compile and qlstm run as a user runs them: an exported torch model in, the four files out;
// the host run equals the in-process kernel; the emitted source, compiled with the runtime
// alone, equals the host run byte for byte; out-of-scope models and bad calibration files are
// refused with their message and nothing written: exit status 1 for an input read and refused, 2
// for bad usage or a file that cannot be used (tools/qlstm/exit_status.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include "qlstm/kernels.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "emitted_build.h"
#include "whole_program.h"

namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;

struct ShellResult {
  int status;
  std::string output;
};

ShellResult sh(const std::string& cmd) {
  const std::string log = fs::temp_directory_path() / ("qlstm_cli_" + std::to_string(::getpid()) + ".log");
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(log.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, s.str()};
}

std::string model(const char* name) { return std::string(QLSTM_ONNX_FIXTURES) + "/" + name + ".onnx"; }

class CompileRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qlstm_compile_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }
  // Random float sequences: [B][T][I] when batch_first, else [T][B][I].
  std::string write_calibration(const std::string& f, int B, int T, int I, bool batch_first, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(B) * T * I);
    for (auto& x : v) x = n(rng);
    write_npy_float32(path(f), batch_first ? std::vector<int64_t>{B, T, I} : std::vector<int64_t>{T, B, I}, v);
    return path(f);
  }
  fs::path dir_;
};

TEST_F(CompileRun, BatchFirstAndSequenceFirstEndToEnd) {
  for (const auto& [name, batch_first] : {std::pair<const char*, bool>{"torch_batch_first_opset14", true},
                                          {"torch_seq_first_opset13", false}}) {
    const OnnxLstm onnx = import_onnx(model(name));
    const int I = onnx.program.ops[0].input_size, H = onnx.program.ops[0].hidden_size;
    const std::string calib = write_calibration("calib.npy", 24, 9, I, batch_first, 1);
    const std::string out = path(std::string("out_") + name);
    const ShellResult c = sh(std::string(QLSTM_CLI) + " compile " + model(name) + " --calibration " + calib +
                     " -o " + out + " --name m --batch 3");
    ASSERT_EQ(c.status, 0) << c.output;
    EXPECT_NE(c.output.find("SQNR"), std::string::npos) << c.output;
    for (const char* f : {"m.qlstm", "m_model.h", "m_model.cc", "m_report.json"}) {
      EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
    }
    // The batch of the exported model (2 or 1) does not constrain the run: use 3.
    const std::string x = write_calibration("x.npy", 3, 7, I, batch_first, 2);
    const ShellResult r = sh(std::string(QLSTM_CLI) + " run " + out + "/m.qlstm --input " + x + " --output " +
                     path("y.npy") + " --float");
    ASSERT_EQ(r.status, 0) << r.output;
    // Against torch-semantics float: the float reference of the imported weights.
    const NpyArray xa = read_npy(x), ya = read_npy(path("y.npy"));
    const SequenceShape shape{3, 7, batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
    const std::vector<float> y_float = run_float(onnx.program.ops[0], xa.as_float("x").data(), shape).output;
    EXPECT_GT(sqnr_db(y_float, ya.as_float("y")), 30.0) << name;
    EXPECT_EQ(ya.shape, batch_first ? std::vector<int64_t>({3, 7, H}) : std::vector<int64_t>({7, 3, H}));

    // int8 run == the in-process kernel on the loaded model.
    const CompiledModel m = load_model(out + "/m.qlstm");
    std::vector<int8_t> x8(static_cast<size_t>(3 * 7 * I));
    std::mt19937_64 rng(3);
    for (auto& v : x8) v = static_cast<int8_t>(rng());
    write_npy_int8(path("x8.npy"), batch_first ? std::vector<int64_t>{3, 7, I} : std::vector<int64_t>{7, 3, I}, x8);
    ASSERT_EQ(sh(std::string(QLSTM_CLI) + " run " + out + "/m.qlstm --input " + path("x8.npy") +
                 " --output " + path("y8.npy")).status, 0);
    const std::vector<int8_t> y8 = read_npy(path("y8.npy")).as_int8("y8");
    EXPECT_EQ(y8, run_kernel_s8(m.ops[0].as<DerivedLstm>(), x8, shape));
    // Streamed (--chunk): reset, then stateful calls of N steps; the same bytes.
    for (const char* chunk : {"1", "2", "5", "7", "100"}) {
      ASSERT_EQ(sh(std::string(QLSTM_CLI) + " run " + out + "/m.qlstm --input " + path("x8.npy") + " --output " +
                   path("y8c.npy") + " --chunk " + chunk).status, 0) << chunk;
      EXPECT_EQ(read_npy(path("y8c.npy")).as_int8("y8c"), y8) << name << " --chunk " << chunk;
    }
    EXPECT_EQ(sh(std::string(QLSTM_CLI) + " run " + out + "/m.qlstm --input " + path("x8.npy") + " --output " +
                 path("y8z.npy") + " --chunk 0").status, 2);  // CLI11's usage error
    EXPECT_FALSE(fs::exists(path("y8z.npy")));
    const ShellResult dev = sh(std::string(QLSTM_CLI) + " run " + out + "/m.qlstm --input " + path("x8.npy") +
                               " --output " + path("y8z.npy") + " --chunk 3 --target cortex-m4");
    EXPECT_EQ(dev.status, 2);  // bad usage
    EXPECT_NE(dev.output.find("--chunk runs on the host only"), std::string::npos) << dev.output;
    EXPECT_FALSE(fs::exists(path("y8z.npy")));

    // The emitted source with the runtime alone: same bytes.
    {
      std::ofstream(path("x8.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x8.data()), x8.size());
    }
    const std::string exe = path("emitted");
    const ShellResult b = sh(std::string(QLSTM_CXX) + " " QLSTM_EXTRA_FLAGS " -std=c++17 -O1 -Wall -Werror -I" + out + " -I" QLSTM_RUNTIME_INCLUDE +
                     " '-DQLSTM_MODEL_HEADER=\"m_model.h\"' -DQLSTM_MODEL_RUN=m_run -DQLSTM_MODEL_STREAM=m_stream"
                     " -DQLSTM_MODEL_BATCH=M_BATCH -DQLSTM_MODEL_TIME_MAJOR=M_TIME_MAJOR"
                     " -DQLSTM_MODEL_OUTPUT=M_OUTPUT_SIZE -DQLSTM_MODEL_CAN_STREAM=M_CAN_STREAM " QLSTM_DRIVER " " + out + "/m_model.cc " QLSTM_RUNTIME_LIB +
                     " -o " + exe);
    ASSERT_EQ(b.status, 0) << b.output;
    ASSERT_EQ(sh(exe + " " + path("x8.bin") + " " + path("y8.bin") + " 7").status, 0);
    std::ifstream yb(path("y8.bin"), std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(yb)), std::istreambuf_iterator<char>());
    EXPECT_EQ(std::vector<int8_t>(bytes.begin(), bytes.end()), y8) << name;
    // Streamed in chunks of 1, 3 and 7 steps (NAME_stream): the same bytes.
    for (const char* chunk : {"1", "3", "7"}) {
      ASSERT_EQ(sh(exe + " " + path("x8.bin") + " " + path("y8s.bin") + " 7 " + chunk).status, 0) << chunk;
      std::ifstream ys(path("y8s.bin"), std::ios::binary);
      const std::vector<char> sb((std::istreambuf_iterator<char>(ys)), std::istreambuf_iterator<char>());
      EXPECT_EQ(std::vector<int8_t>(sb.begin(), sb.end()), y8) << name << " chunks of " << chunk;
    }
  }
}

TEST_F(CompileRun, OutOfScopeModelsAreRefusedAndNothingIsWritten) {
  const std::string calib = write_calibration("calib.npy", 4, 5, 3, false, 1);
  for (const auto& [name, message] : {std::pair<const char*, const char*>{"plain_peephole", "peephole weights (input P) are not supported"},
                                      {"refused_attention", "(MatMul): a product of two activations"},
                                      {"plain_clip", "attribute 'clip' is not supported"},
                                      {"plain_sequence_lens", "input sequence_lens is not supported"}}) {
    const std::string out = path(std::string("refused_") + name);
    const ShellResult c = sh(std::string(QLSTM_CLI) + " compile " + model(name) + " --calibration " + calib + " -o " + out);
    EXPECT_EQ(c.status, 1) << name;
    EXPECT_NE(c.output.find(message), std::string::npos) << c.output;
    EXPECT_FALSE(fs::exists(out)) << "output written for " << name;
  }
}

TEST_F(CompileRun, BadCalibrationFilesAreRefused) {
  const std::string m = model("torch_seq_first_opset13");  // I = 3, sequence-first
  write_npy_int8(path("int8.npy"), {5, 2, 3}, std::vector<int8_t>(30, 1));
  write_npy_float32(path("rank1.npy"), {30}, std::vector<float>(30, 1.0f));
  write_npy_float32(path("features.npy"), {5, 2, 4}, std::vector<float>(40, 1.0f));
  std::vector<float> nan(30, 0.5f);
  nan[7] = NAN;
  write_npy_float32(path("nan.npy"), {5, 2, 3}, nan);
  write_npy_float32(path("good.npy"), {5, 2, 3}, std::vector<float>(30, 0.5f));
  std::ifstream g(path("good.npy"), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  { std::ofstream(path("truncated.npy"), std::ios::binary) << good.substr(0, good.size() - 9); }
  struct Case {
    const char* file;
    const char* message;
    int status;  // 1: read and refused; 2: the file cannot be read
  };
  const Case cases[] = {
      {"int8.npy", "dtype |i1, expected float32", 1}, {"rank1.npy", "rank 1, expected 3", 1},
      {"features.npy", "feature size 4 does not match the model's input_size 3", 1},
      {"nan.npy", "non-finite value", 1}, {"truncated.npy", "truncated data", 2},
      {"missing.npy", "cannot open file", 2}};
  for (const auto& [file, message, status] : cases) {
    const std::string out = path(std::string("o_") + file);
    const ShellResult c = sh(std::string(QLSTM_CLI) + " compile " + m + " --calibration " + path(file) + " -o " + out);
    EXPECT_EQ(c.status, status) << file << ": " << c.output;
    EXPECT_NE(c.output.find(message), std::string::npos) << file << ": " << c.output;
    EXPECT_FALSE(fs::exists(out)) << file;
  }
}

TEST_F(CompileRun, CorruptedModelFileIsRefusedByRun) {
  const std::string calib = write_calibration("calib.npy", 8, 5, 3, false, 1);
  ASSERT_EQ(sh(std::string(QLSTM_CLI) + " compile " + model("torch_seq_first_opset13") + " --calibration " +
               calib + " -o " + path("o") + " --name m").status, 0);
  std::fstream f(path("o/m.qlstm"), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(200);
  f.put('\x7f');
  f.close();
  write_npy_int8(path("x.npy"), {5, 1, 3}, std::vector<int8_t>(15, 3));
  const ShellResult r = sh(std::string(QLSTM_CLI) + " run " + path("o/m.qlstm") + " --input " + path("x.npy") +
                   " --output " + path("y.npy"));
  EXPECT_EQ(r.status, 2);  // a malformed file
  EXPECT_NE(r.output.find("m.qlstm"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("y.npy")));
}

}  // namespace

namespace {

TEST_F(CompileRun, BundledExampleCompilesRunsAndReachesItsAccuracy) {
  const std::string ex = QLSTM_EXAMPLE_DIR;
  const ShellResult c = sh(std::string(QLSTM_CLI) + " compile " + ex + "/sunspots_lstm.onnx --calibration " + ex +
                           "/calibration.npy -o " + path("ex"));
  ASSERT_EQ(c.status, 0) << c.output;
  const ShellResult e = sh(std::string(QLSTM_CLI) + " eval " + ex + "/sunspots_lstm.onnx " + path("ex/sunspots_lstm.qlstm") +
                           " --data " + ex + "/test.npy --targets " + ex + "/test_targets.npy --units " + ex +
                           "/model.json --plot " + path("ex/plot.svg"));
  ASSERT_EQ(e.status, 0) << e.output;
  // The forecaster's accuracy on the held-out years, in sunspots: int8 within 2 % of float's error.
  const std::string mae = "in sunspots: float MAE ";
  const size_t at = e.output.find(mae);
  ASSERT_NE(at, std::string::npos) << e.output;
  const double float_mae = std::stod(e.output.substr(at + mae.size()));
  const size_t q = e.output.find("int8 MAE ", at);
  ASSERT_NE(q, std::string::npos) << e.output;
  const double int8_mae = std::stod(e.output.substr(q + 9));
  EXPECT_GT(float_mae, 0.0) << e.output;
  EXPECT_LE(int8_mae, 1.02 * float_mae) << e.output;
  std::ifstream svg(path("ex/plot.svg"));
  std::string head;
  std::getline(svg, head);
  EXPECT_EQ(head.rfind("<svg", 0), 0u) << head;
  // eval refuses a model compiled from another ONNX file.
  ASSERT_EQ(sh(std::string(QLSTM_CLI) + " compile " + model("torch_seq_first_opset13") + " --calibration " +
               write_calibration("c.npy", 4, 5, 3, false, 1) + " -o " + path("other") + " --name other").status, 0);
  const ShellResult m = sh(std::string(QLSTM_CLI) + " eval " + ex + "/sunspots_lstm.onnx " + path("other/other.qlstm") +
                           " --data " + ex + "/test.npy");
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.output.find("does not match"), std::string::npos) << m.output;
}

}  // namespace

namespace {

TEST_F(CompileRun, LargeCalibrationSetsShowProgress) {
  const std::string calib = write_calibration("big.npy", 300, 4, 3, false, 5);
  const ShellResult c = sh(std::string(QLSTM_CLI) + " compile " + model("torch_seq_first_opset13") +
                           " --calibration " + calib + " -o " + path("big"));
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_NE(c.output.find("calibrating 100%"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("searching 100%"), std::string::npos) << c.output;
  // Not a terminal: plain lines, no carriage return, at most one per tenth of each stage.
  EXPECT_EQ(c.output.find('\r'), std::string::npos) << c.output;
  for (const char* stage : {"qlstm compile: calibrating ", "qlstm compile: searching "}) {
    size_t lines = 0;
    for (size_t at = c.output.find(stage); at != std::string::npos; at = c.output.find(stage, at + 1)) ++lines;
    EXPECT_GE(lines, 2u) << stage << c.output;
    EXPECT_LE(lines, 11u) << stage << c.output;
  }
  // On a terminal (script(1) gives the command one): redrawn in place with carriage returns.
  if (std::system("script -qec true /dev/null > /dev/null 2>&1") == 0) {
    const ShellResult t = sh("script -qec \"" + std::string(QLSTM_CLI) + " compile " + model("torch_seq_first_opset13") +
                             " --calibration " + calib + " -o " + path("big_tty") + "\" /dev/null");
    ASSERT_EQ(t.status, 0) << t.output;
    EXPECT_NE(t.output.find("\rqlstm compile: calibrating 100%"), std::string::npos) << t.output;
  }
}

}  // namespace

namespace {

TEST_F(CompileRun, UnbatchedModelTakesAndGivesOneSequence) {
  std::mt19937_64 rng(4);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> c(30 * 20 * 3), x(9 * 3);
  for (auto& v : c) v = n(rng);
  for (auto& v : x) v = 0.7f * n(rng);
  write_npy_float32(path("c.npy"), {30, 20, 3}, c);  // a batch of sequences for calibration
  write_npy_float32(path("x.npy"), {9, 3}, x);
  const ShellResult r = sh(std::string(QLSTM_CLI) + " compile " + model("torch_unbatched_opset15") +
                           " --calibration " + path("c.npy") + " -o " + path("u") + " --name u");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("unbatched [T, F]"), std::string::npos) << r.output;
  ASSERT_EQ(sh(std::string(QLSTM_CLI) + " run " + path("u/u.qlstm") + " --input " + path("x.npy") +
               " --output " + path("y.npy") + " --float").status, 0);
  const NpyArray y = read_npy(path("y.npy"));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{9, 4}));
  const OnnxLstm onnx = import_onnx(model("torch_unbatched_opset15"));
  EXPECT_TRUE(onnx.unbatched);
  EXPECT_GT(sqnr_db(run_float(onnx.program.ops[0], x.data(), {1, 9, Layout::kBatchMajor}).output, y.as_float("y")), 30.0);
}

}  // namespace

// A stateful, stacked or bidirectional model's interface errors: named, exit 1 (refused) or 2 (bad
// usage), nothing written.
TEST_F(CompileRun, ProgramInterfaceErrorsAreClear) {
  const std::string calib = write_calibration("calib_p.npy", 6, 5, 3, false, 1);
  const std::string cli = QLSTM_CLI;
  ASSERT_EQ(sh(cli + " compile " + model("torch_initial_state_input") + " --calibration " + calib + " -o " +
               path("st") + " --name st").status, 0);
  ASSERT_EQ(sh(cli + " compile " + model("torch_bidirectional") + " --calibration " + calib + " -o " + path("bi") +
               " --name bi").status, 0);
  const std::string x = write_calibration("x_p.npy", 2, 5, 3, false, 2);
  struct Case {
    std::string args, message;
    int status;
  };
  const Case cases[] = {
      {path("st/st.qlstm") + " --float", "give --h0", 2},
      {path("st/st.qlstm") + " --float --h0 " + x + " --c0 " + x, "expected [1, 2, 4] (ops x batch x hidden)", 1},
      {path("bi/bi.qlstm") + " --float --chunk 2", "cannot be streamed", 1},
      {path("bi/bi.qlstm") + " --float --target no-such-cpu", "no-such-cpu", 2},
  };
  for (const Case& c : cases) {
    const std::string out = path("y_p.npy");
    const ShellResult r = sh(cli + " run " + c.args + " --input " + x + " --output " + out);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  // The bidirectional output is [T, B, 2H], forward then reverse, as torch lays it out.
  ASSERT_EQ(sh(cli + " run " + path("bi/bi.qlstm") + " --float --input " + x + " --output " + path("y_bi.npy")).status, 0);
  EXPECT_EQ(read_npy(path("y_bi.npy")).shape, (std::vector<int64_t>{5, 2, 8}));
}

// A stacked and a bidirectional model's emitted source, built with the host compiler against the
// runtime alone: the same bytes as qlstm run (and, for the stacked one, streamed in chunks).
TEST_F(CompileRun, EmittedProgramsEqualTheHostRun) {
  const std::string calib = write_calibration("calib_e.npy", 6, 5, 3, false, 1);
  const std::string cli = QLSTM_CLI;
  for (const auto& [name, streams] : {std::pair<const char*, bool>{"torch_two_layers", true}, {"torch_bidirectional", false}}) {
    const std::string out = path(std::string("prog_") + name);
    ASSERT_EQ(sh(cli + " compile " + model(name) + " --calibration " + calib + " -o " + out +
                 " --name m --batch 2 --max-time-steps 9").status, 0) << name;
    std::vector<int8_t> x8(static_cast<size_t>(9 * 2 * 3));
    std::mt19937_64 rng(5);
    for (auto& v : x8) v = static_cast<int8_t>(rng());
    write_npy_int8(path("px8.npy"), {9, 2, 3}, x8);
    ASSERT_EQ(sh(cli + " run " + out + "/m.qlstm --input " + path("px8.npy") + " --output " + path("py8.npy")).status, 0);
    const std::vector<int8_t> y8 = read_npy(path("py8.npy")).as_int8("py8");
    EXPECT_EQ(y8.size(), static_cast<size_t>(9 * 2 * (streams ? 4 : 8))) << name;
    {
      std::ofstream(path("px8.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x8.data()), x8.size());
    }
    const std::string exe = path(std::string("emitted_") + name);
    const ShellResult b = sh(std::string(QLSTM_CXX) + " " QLSTM_EXTRA_FLAGS " -std=c++17 -O1 -Wall -Werror -I" + out +
                             " -I" QLSTM_RUNTIME_INCLUDE " '-DQLSTM_MODEL_HEADER=\"m_model.h\"' -DQLSTM_MODEL_RUN=m_run"
                             " -DQLSTM_MODEL_STREAM=m_stream -DQLSTM_MODEL_BATCH=M_BATCH -DQLSTM_MODEL_TIME_MAJOR=M_TIME_MAJOR"
                             " -DQLSTM_MODEL_OUTPUT=M_OUTPUT_SIZE -DQLSTM_MODEL_CAN_STREAM=M_CAN_STREAM " QLSTM_DRIVER " " +
                             out + "/m_model.cc " QLSTM_RUNTIME_LIB + " -o " + exe);
    ASSERT_EQ(b.status, 0) << b.output;
    for (const char* chunk : {"", " 1", " 4"}) {
      if (!streams && *chunk) continue;
      ASSERT_EQ(sh(exe + " " + path("px8.bin") + " " + path("py8.bin") + " 9" + chunk).status, 0) << name << chunk;
      std::ifstream yb(path("py8.bin"), std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(yb)), std::istreambuf_iterator<char>());
      EXPECT_EQ(std::vector<int8_t>(bytes.begin(), bytes.end()), y8) << name << chunk;
    }
    // bench: the whole program in one call (every variant against the reference), the time last.
    const ShellResult bench = sh(cli + " bench " + out + "/m.qlstm --shape B=2,T=9 --runs 3");
    EXPECT_EQ(bench.status, 0) << bench.output;
    EXPECT_NE(bench.output.find("program: 2 ops\n"), std::string::npos) << bench.output;
    EXPECT_NE(bench.output.find(": bit-exact with reference\n"), std::string::npos) << bench.output;
    EXPECT_EQ(bench.output.find("DIFFERS"), std::string::npos) << bench.output;
    EXPECT_NE(bench.output.rfind("\nmicroseconds: "), std::string::npos) << bench.output;
    // Longer than --max-time-steps: the emitted program refuses (status 3 from the driver).
    std::vector<int8_t> longer(static_cast<size_t>(10 * 2 * 3), 1);
    {
      std::ofstream(path("plong.bin"), std::ios::binary).write(reinterpret_cast<const char*>(longer.data()), longer.size());
    }
    EXPECT_EQ(sh(exe + " " + path("plong.bin") + " " + path("py8.bin") + " 10").status, streams ? 3 : 0) << name;
  }
}

// A 16x8 model with a constant initial state: its emitted source (batch 2), built with the host
// compiler against the runtime alone, starts from the state the host run starts from (the op's
// [c | h] row laid out as B x H cells, then B x H int16 hiddens) and equals the host run byte for
// byte, through NAME_run and NAME_initial_state + NAME_run_state (whose final state is the host's).
TEST_F(CompileRun, EmittedS16ProgramWithConstantStateEqualsTheHostRun) {
  const std::string calib = write_calibration("calib_s16.npy", 6, 5, 3, false, 1);
  const std::string out = path("prog_s16_state");
  const std::string cli = QLSTM_CLI;
  ASSERT_EQ(sh(cli + " compile " + model("plain_nonzero_initial_state") + " --calibration " + calib + " -o " + out +
               " --name m --batch 2 --activations int16").status, 0);
  const CompiledModel m = load_model(out + "/m.qlstm");
  ASSERT_EQ(m.ops.front().kind, QLSTM_OP_LSTM_S16);
  ASSERT_EQ(m.initial_hidden, StateSource::kConstant);
  ASSERT_FALSE(m.batch_first);
  ASSERT_FALSE(m.output_is_one_step());
  const int32_t B = 2, T = 6, I = m.input_size();
  std::vector<int16_t> x(static_cast<size_t>(B * T * I));
  std::mt19937_64 rng(9);
  for (int16_t& v : x) v = static_cast<int16_t>(static_cast<int32_t>(rng() % 20001) - 10000);
  ProgramState state = initial_program_state(m, B);
  const std::vector<uint8_t> y = run_program_raw(m, x.data(), x.size() * sizeof(int16_t), {B, T, Layout::kTimeMajor},
                                                 &state);
  {
    std::ofstream(path("sx.bin"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size() * 2);
    std::ofstream(path("s16_driver.cc")) << R"(#include "m_model.h"
#include <cstdio>
#include <vector>
int main(int, char** argv) {
  std::vector<int16_t> x(M_BATCH * 6 * M_INPUT_SIZE), y(M_BATCH * 6 * M_OUTPUT_SIZE), y2(y.size());
  std::vector<int8_t> h(M_BATCH * M_STATE_SIZE);
  std::vector<int16_t> c(M_BATCH * M_STATE_SIZE);
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in || std::fread(x.data(), 2, x.size(), in) != x.size()) return 2;
  std::fclose(in);
  if (m_run(x.data(), y.data(), 6) != QLSTM_OK) return 3;
  m_initial_state(h.data(), c.data());
  if (m_run_state(x.data(), y2.data(), 6, h.data(), c.data()) != QLSTM_OK || y2 != y) return 4;
  // Streamed in chunks of 4 and 2 steps (time-major: a chunk's steps are contiguous).
  std::vector<int16_t> y3(y.size());
  const int32_t in_step = M_BATCH * M_INPUT_SIZE, out_step = M_BATCH * M_OUTPUT_SIZE;
  if (m_reset() != QLSTM_OK || m_stream(x.data(), y3.data(), 4) != QLSTM_OK ||
      m_stream(x.data() + 4 * in_step, y3.data() + 4 * out_step, 2) != QLSTM_OK || y3 != y) {
    return 5;
  }
  std::FILE* out = std::fopen(argv[2], "wb");
  std::fwrite(y.data(), 2, y.size(), out);
  std::fwrite(c.data(), 2, c.size(), out);
  return std::fclose(out) == 0 ? 0 : 2;
}
)";
  }
  const std::string exe = path("emitted_s16_state");
  const ShellResult b = sh(std::string(QLSTM_CXX) + " " QLSTM_EXTRA_FLAGS " -std=c++17 -O1 -Wall -Werror -I" + out +
                           " -I" QLSTM_RUNTIME_INCLUDE " " + path("s16_driver.cc") + " " + out +
                           "/m_model.cc " QLSTM_RUNTIME_LIB + " -o " + exe);
  ASSERT_EQ(b.status, 0) << b.output;
  const ShellResult r = sh(exe + " " + path("sx.bin") + " " + path("sy.bin"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream yb(path("sy.bin"), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(yb)), std::istreambuf_iterator<char>());
  std::vector<uint8_t> want = y;
  const auto* c = reinterpret_cast<const uint8_t*>(state.cell.data());
  want.insert(want.end(), c, c + state.cell.size() * sizeof(int16_t));
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), want);
  // The host's streamed run: the same output, the same final state.
  for (int32_t chunk : {1, 4, 7}) {
    ProgramState streamed = initial_program_state(m, B);
    EXPECT_EQ(run_program_raw_streamed(m, x.data(), x.size() * sizeof(int16_t), {B, T, Layout::kTimeMajor}, chunk,
                                       &streamed),
              y)
        << "chunk " << chunk;
    EXPECT_EQ(streamed.cell, state.cell) << "chunk " << chunk;
  }
  // The constant state matters: from a zero state the output differs.
  CompiledModel zero = m;
  zero.ops.front().initial_cell.clear();
  zero.initial_hidden = StateSource::kZero;
  EXPECT_NE(run_program_raw(zero, x.data(), x.size() * sizeof(int16_t), {B, T, Layout::kTimeMajor}), y);
}

// qlstm run on a 16x8 model's own integers: int16 in, int16 out (the sunspots forecaster's
// Linear head is 16x8), equal to run_program_raw; --chunk equal to one call, with or without
// --float; an int state refused by name.
TEST_F(CompileRun, S16ModelRunsOnInt16FilesAndStreams) {
  const std::string out = path("sunspots_s16"), cli = QLSTM_CLI;
  const std::string examples = QLSTM_EXAMPLE_DIR;
  ASSERT_EQ(sh(cli + " compile " + examples + "/sunspots_lstm.onnx --calibration " + examples + "/calibration.npy -o " +
               out + " --name m --activations int16").status, 0);
  const CompiledModel m = load_model(out + "/m.qlstm");
  ASSERT_EQ(m.buffers.front().type, QLSTM_ELEMENT_S16);
  ASSERT_EQ(m.buffers.back().type, QLSTM_ELEMENT_S16);
  const int32_t B = 3, T = 11, I = m.input_size();
  const Layout layout = m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor;
  std::vector<int16_t> x(static_cast<size_t>(B * T * I));
  std::mt19937_64 rng(23);
  for (int16_t& v : x) v = static_cast<int16_t>(static_cast<int32_t>(rng() % 16001) - 8000);
  const std::vector<int64_t> shape = m.batch_first ? std::vector<int64_t>{B, T, I} : std::vector<int64_t>{T, B, I};
  write_npy(path("x16.npy"), DType::kInt16, shape, x.data());
  const std::vector<uint8_t> want = run_program_raw(m, x.data(), x.size() * sizeof(int16_t), {B, T, layout});
  for (const char* chunk : {"", " --chunk 1", " --chunk 4"}) {
    const ShellResult r = sh(cli + " run " + out + "/m.qlstm --input " + path("x16.npy") + " --output " + path("y16.npy") + chunk);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(": int16 ["), std::string::npos) << r.output;
    const NpyArray y = read_npy(path("y16.npy"));
    EXPECT_EQ(y.dtype, DType::kInt16) << chunk;
    EXPECT_EQ(y.bytes, want) << chunk;
  }
  // Float in and out, in one call and in chunks: the same values.
  std::vector<float> xf(x.size());
  for (size_t k = 0; k < x.size(); ++k) xf[k] = static_cast<float>(x[k] * m.input_quant().scale);
  write_npy_float32(path("xf.npy"), shape, xf);
  ASSERT_EQ(sh(cli + " run " + out + "/m.qlstm --float --input " + path("xf.npy") + " --output " + path("yf.npy")).status, 0);
  ASSERT_EQ(sh(cli + " run " + out + "/m.qlstm --float --chunk 3 --input " + path("xf.npy") + " --output " +
               path("yf3.npy")).status, 0);
  EXPECT_EQ(read_npy(path("yf3.npy")).bytes, read_npy(path("yf.npy")).bytes);
  EXPECT_EQ(read_npy(path("yf.npy")).as_float("yf"), dequantize_raw_output(m, want));
  // The state of a 16x8 model is float32 only.
  const ShellResult s = sh(cli + " run " + out + "/m.qlstm --input " + path("x16.npy") + " --output " +
                           path("unused.npy") + " --h-n " + path("hn.npy"));
  EXPECT_EQ(s.status, 2) << s.output;
  EXPECT_NE(s.output.find("a 16x8 model's state is given and returned as float32"), std::string::npos) << s.output;
  EXPECT_FALSE(fs::exists(path("unused.npy")));
}

// Whole models' emitted source with the driver, against the host's run_program_s8 byte for byte:
// a classifier (its LSTM writes only the last step; one output row per batch row) and a per-step
// head, in one call and streamed through NAME_stream (the classifier's last chunk gives the
// output of one call over the whole sequence).
TEST_F(CompileRun, EmittedWholeModelsEqualTheHostRun) {
  std::mt19937_64 rng(17);
  constexpr int32_t kInput = 3, kBatch = 2, kSteps = 9;
  struct Case {
    const char* name;
    FloatProgram program;
    bool per_step;
  };
  const Case cases[] = {{"classifier", classifier_program(kInput, 6, 4, rng), false},
                        {"per_step", per_step_program(kInput, 6, 2, rng), true}};
  for (const Case& c : cases) {
    const CompiledModel m = compile_program(c.program, calibration(kInput, rng), fast()).model;
    ASSERT_EQ(m.output_is_one_step(), !c.per_step) << c.name;
    const EmittedSource e = emit_cpp(m, "m", kBatch, kSteps, "compile_run_test");
    EXPECT_NE(e.header.find(std::string("#define M_OUTPUT_PER_STEP ") + (c.per_step ? "1" : "0")), std::string::npos);
    EXPECT_NE(e.header.find("qlstm_status m_stream("), std::string::npos) << c.name;
    const std::string defines =
        "'-DQLSTM_MODEL_HEADER=\"m_model.h\"' -DQLSTM_MODEL_RUN=m_run -DQLSTM_MODEL_STREAM=m_stream"
        " -DQLSTM_MODEL_BATCH=M_BATCH -DQLSTM_MODEL_TIME_MAJOR=M_TIME_MAJOR -DQLSTM_MODEL_OUTPUT=M_OUTPUT_SIZE"
        " -DQLSTM_MODEL_CAN_STREAM=M_CAN_STREAM -DQLSTM_MODEL_OUTPUT_PER_STEP=M_OUTPUT_PER_STEP";
    const fs::path dir = dir_ / c.name;
    fs::create_directories(dir);
    const EmittedBuild b = build_emitted(e, "m", dir, QLSTM_DRIVER, defines);
    ASSERT_TRUE(b.ok) << b.log;
    std::vector<int8_t> x(static_cast<size_t>(kSteps) * kBatch * kInput);
    for (int8_t& v : x) v = static_cast<int8_t>(rng());
    const std::string xin = (dir / "x.bin").string(), yout = (dir / "y.bin").string();
    std::ofstream(xin, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), x.size());
    const std::vector<int8_t> want = run_program_s8(m, x, {kBatch, kSteps, Layout::kTimeMajor});
    EXPECT_EQ(want.size(), static_cast<size_t>(kBatch) * (c.per_step ? kSteps : 1) * m.output_size()) << c.name;
    for (const char* chunk : {"", " 1", " 4"}) {
      ASSERT_EQ(sh(b.exe + " " + xin + " " + yout + " " + std::to_string(kSteps) + chunk).status, 0) << c.name << chunk;
      std::ifstream yb(yout, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(yb)), std::istreambuf_iterator<char>());
      EXPECT_EQ(std::vector<int8_t>(bytes.begin(), bytes.end()), want) << c.name << chunk;
    }
  }
}

// qlstm bench on a whole model: each op named with its MACs and its host time, every LSTM variant
// bit-exact with the reference over the whole program, the median time last.
TEST_F(CompileRun, BenchCountsEachOpOfAWholeModel) {
  std::mt19937_64 rng(19);
  CompiledModel m = compile_program(classifier_program(3, 6, 4, rng), calibration(3, rng), fast()).model;
  m.name = "cls";
  { std::ofstream(path("cls.qlstm"), std::ios::binary) << serialize_model(m); }
  const ShellResult r = sh(std::string(QLSTM_CLI) + " bench " + path("cls.qlstm") + " --shape B=2,T=9 --runs 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("program: 3 ops\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  op 0 (LSTM 3 -> 6, forward, final hidden state only): 3888 MACs\n"), std::string::npos)
      << r.output;  // B x T x 4H x (I + H) = 2 x 9 x 24 x 9
  EXPECT_NE(r.output.find("  op 1 (fully connected 6 -> 4, one multiplier per output): 48 MACs\n"), std::string::npos)
      << r.output;  // B x I x O: the head reads one step per batch row
  EXPECT_NE(r.output.find("  op 2 (softmax over 4): 0 MACs\n"), std::string::npos) << r.output;
  for (const char* op : {"\nop 0 (LSTM", "\nop 1 (fully connected", "\nop 2 (softmax"}) {
    EXPECT_NE(r.output.find(op), std::string::npos) << op << "\n" << r.output;  // its host median
  }
  EXPECT_NE(r.output.find(": bit-exact with reference\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("DIFFERS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.rfind("\nmicroseconds: "), std::string::npos) << r.output;
}

// One exit-status convention for every subcommand: 0 success, 1 read and refused or a failed
// check, 2 bad usage or a file that cannot be used; stated in --help.
TEST_F(CompileRun, ExitStatusConvention) {
  const std::string cli = QLSTM_CLI;
  const std::string calib = write_calibration("calib_x.npy", 4, 5, 3, false, 1);
  const std::string onnx = model("torch_seq_first_opset13");
  { std::ofstream(path("garbage.onnx")) << "not a protobuf at all"; }
  { std::ofstream(path("garbage.qlstm")) << "not a model"; }
  write_npy_int8(path("x8.npy"), {5, 1, 3}, std::vector<int8_t>(15, 3));
  struct Case {
    std::string args, message;
    int status;
  };
  const Case cases[] = {
      {"--help", "Exit status (every subcommand):", 0},
      {"bench --help", "not cycles", 0},
      {"bench --help", "its own sequence length", 0},
      {"", "A subcommand is required", 2},
      {"compile " + onnx + " --calibration " + calib + " --bogus", "--bogus", 2},
      {"compile " + onnx + " --calibration " + calib + " --input-observer median", "median", 2},
      {"compile " + onnx + " --calibration " + calib + " --cell-scale fixed:x", "--cell-scale", 2},
      {"compile " + onnx + " --calibration " + calib + " --name a-b", "is not a C identifier", 2},
      {"compile " + path("missing.onnx") + " --calibration " + calib, "cannot open file", 2},
      {"compile " + path("garbage.onnx") + " --calibration " + calib, "not a valid ONNX model", 2},
      {"compile " + model("refused_attention") + " --calibration " + calib, "a product of two activations", 1},
      {"run " + path("garbage.qlstm") + " --input " + path("x8.npy") + " --output " + path("y.npy"),
       "qlstm run: error: ", 2},
      {"run " + path("missing.qlstm") + " --input " + path("x8.npy") + " --output " + path("y.npy"),
       "cannot open file", 2},
      {"eval " + path("garbage.onnx") + " " + path("garbage.qlstm") + " --data " + calib, "qlstm eval: error: ", 2},
      {"bench " + path("garbage.qlstm"), "qlstm bench: error: ", 2},
      {"bench --shape T=4,I=2,H=3 --variant nope", "unknown variant 'nope'", 2},
      {"verify-vectors " + path("nothing_here"), "no such file or folder", 2},
      {"export-vectors " + path("nothing_here") + " -o " + path("bundle.bin"), "qlstm export-vectors: error: ", 2},
  };
  for (const Case& c : cases) {
    const ShellResult r = sh(cli + " " + c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

// Calibration data in which a feature never varies: a warning naming it (stderr and the report);
// in which nothing varies: an error, exit 1, nothing written.
TEST_F(CompileRun, ConstantCalibrationFeaturesAreReported) {
  const std::string cli = QLSTM_CLI;
  const std::string onnx = model("torch_seq_first_opset13");  // I = 3, sequence-first
  std::mt19937_64 rng(8);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> v(5 * 4 * 3);
  for (size_t k = 0; k < v.size(); ++k) v[k] = k % 3 == 2 ? 0.75f : n(rng);  // feature 2 constant
  write_npy_float32(path("one_constant.npy"), {5, 4, 3}, v);
  const ShellResult c = sh(cli + " compile " + onnx + " --calibration " + path("one_constant.npy") + " -o " +
                           path("oc") + " --name oc");
  ASSERT_EQ(c.status, 0) << c.output;
  const std::string warning = "calibration: input feature 2 is constant (0.75) over all 20 steps";
  EXPECT_NE(c.output.find("qlstm compile: warning: " + warning), std::string::npos) << c.output;
  std::ifstream rep(path("oc/oc_report.json"));
  const std::string report((std::istreambuf_iterator<char>(rep)), std::istreambuf_iterator<char>());
  const size_t list = report.find("\"warnings\": [");
  ASSERT_NE(list, std::string::npos) << report;
  EXPECT_EQ(report.find("\"" + warning + "\""), report.find('"', list + 13)) << report;

  write_npy_float32(path("all_constant.npy"), {5, 4, 3}, std::vector<float>(60, 0.75f));
  const ShellResult a = sh(cli + " compile " + onnx + " --calibration " + path("all_constant.npy") + " -o " +
                           path("ac"));
  EXPECT_EQ(a.status, 1) << a.output;
  EXPECT_NE(a.output.find("no input feature varies"), std::string::npos) << a.output;
  EXPECT_FALSE(fs::exists(path("ac")));
  // Random data: no warning, an empty list in the report.
  const ShellResult g = sh(cli + " compile " + onnx + " --calibration " + write_calibration("g.npy", 5, 4, 3, false, 2) +
                           " -o " + path("g") + " --name g");
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_EQ(g.output.find("warning"), std::string::npos) << g.output;
}

// qlstm bench MODEL runs the model at its own sequence length, and says where it comes from.
TEST_F(CompileRun, BenchUsesTheModelsSequenceLength) {
  const std::string cli = QLSTM_CLI;
  // The bundled example declares its input's T in the ONNX graph.
  const std::string ex = QLSTM_EXAMPLE_DIR;
  ASSERT_EQ(sh(cli + " compile " + ex + "/sunspots_lstm.onnx --calibration " + ex + "/calibration.npy -o " +
               path("ex") + " --no-search").status, 0);
  std::ifstream rep(path("ex/sunspots_lstm_report.json"));
  const std::string report((std::istreambuf_iterator<char>(rep)), std::istreambuf_iterator<char>());
  const size_t at = report.find("\"time_steps\":");
  ASSERT_NE(at, std::string::npos) << report;
  const int T = std::stoi(report.substr(at + 13));
  const ShellResult b = sh(cli + " bench " + path("ex/sunspots_lstm.qlstm") + " --runs 3");
  EXPECT_EQ(b.status, 0) << b.output;
  EXPECT_NE(b.output.find("time steps: " + std::to_string(T) + " (the ONNX input's sequence length)"),
            std::string::npos) << b.output;
  EXPECT_NE(b.output.find("shape: B=1 T=" + std::to_string(T) + " "), std::string::npos) << b.output;
  // A model whose T (5) is not the old fixed default (32).
  ASSERT_EQ(sh(cli + " compile " + model("torch_seq_first_opset13") + " --calibration " +
               write_calibration("c5.npy", 4, 5, 3, false, 1) + " -o " + path("t5") + " --name t5 --no-search").status, 0);
  const ShellResult b5 = sh(cli + " bench " + path("t5/t5.qlstm") + " --runs 3");
  EXPECT_EQ(b5.status, 0) << b5.output;
  EXPECT_NE(b5.output.find("time steps: 5 (the ONNX input's sequence length)\n"), std::string::npos) << b5.output;
  EXPECT_NE(b5.output.find("shape: B=1 T=5 "), std::string::npos) << b5.output;
  // --shape T= overrides it.
  const ShellResult o = sh(cli + " bench " + path("ex/sunspots_lstm.qlstm") + " --shape T=3 --runs 3");
  EXPECT_EQ(o.status, 0) << o.output;
  EXPECT_NE(o.output.find("shape: B=1 T=3 "), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("time steps: "), std::string::npos) << o.output;
}

// The host bench runs every variant this CPU supports on its input against the reference: one
// line each, exit 0 when all are bit-exact.
TEST_F(CompileRun, HostBenchComparesEveryVariantWithTheReference) {
  const ShellResult b = sh(std::string(QLSTM_CLI) + " bench --shape B=2,T=6,I=5,H=9,time_major --runs 3");
  ASSERT_EQ(b.status, 0) << b.output;
  size_t count = 0, lines = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&count);
  for (size_t k = 0; k < count; ++k) {
    const std::string line = std::string("variant ") + all[k]->name + ": bit-exact with reference\n";
    const bool supported = all[k]->is_supported == nullptr || all[k]->is_supported();
    const bool listed = b.output.find(line) != std::string::npos;
    if (all[k] == &qlstm::lstm_s8_reference_variant()) {
      EXPECT_FALSE(listed) << b.output;
      continue;
    }
    EXPECT_EQ(listed, supported) << all[k]->name << "\n" << b.output;
    lines += listed;
  }
  size_t printed = 0;
  for (size_t at = b.output.find("variant "); at != std::string::npos; at = b.output.find("variant ", at + 1)) {
    printed += b.output.compare(at, 8, "variant ") == 0 && (at == 0 || b.output[at - 1] == '\n');
  }
  EXPECT_EQ(printed, lines) << b.output;
  EXPECT_EQ(b.output.find("DIFFERS"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("\nmicroseconds: "), std::string::npos) << b.output;
}
