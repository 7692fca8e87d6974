// ONNX direction "reverse" through the compiler: the float reference walks time backwards, the
// imported model carries the direction into the kernel parameters, the model file and the
// emitted source, and the int8 result is the forward kernel's on the time-reversed input.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace {

using namespace qlstm::compiler;

template <typename V>
std::vector<V> reverse_time(const std::vector<V>& x, const SequenceShape& s, size_t width) {
  std::vector<V> y(x.size());
  for (int32_t b = 0; b < s.batch; ++b) {
    for (int32_t t = 0; t < s.time_steps; ++t) {
      auto pos = [&](int32_t tt) {
        return s.layout == Layout::kTimeMajor ? static_cast<size_t>(tt) * s.batch + b
                                              : static_cast<size_t>(b) * s.time_steps + tt;
      };
      for (size_t w = 0; w < width; ++w) y[pos(s.time_steps - 1 - t) * width + w] = x[pos(t) * width + w];
    }
  }
  return y;
}

std::vector<float> normal(std::mt19937_64& rng, size_t n, float sigma = 1.0f) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(Reverse, FloatReferenceWalksTimeBackwards) {
  std::mt19937_64 rng(21);
  const int32_t I = 5, H = 7;
  FloatLstm f = FloatLstm::from_torch(I, H, normal(rng, 4 * H * I, 0.4f), normal(rng, 4 * H * H, 0.4f),
                                      normal(rng, 4 * H, 0.2f), normal(rng, 4 * H, 0.2f));
  for (Layout layout : {Layout::kBatchMajor, Layout::kTimeMajor}) {
    const SequenceShape s{3, 9, layout};
    const std::vector<float> x = normal(rng, 3 * 9 * I);
    f.reverse = false;
    const FloatResult fwd = run_float(f, reverse_time(x, s, I).data(), s);
    f.reverse = true;
    const FloatResult rev = run_float(f, x.data(), s);
    EXPECT_EQ(rev.output, reverse_time(fwd.output, s, H));
    EXPECT_EQ(rev.h_n, fwd.h_n);
    EXPECT_EQ(rev.c_n, fwd.c_n);
  }
}

TEST(Reverse, ImportedReverseModelCompilesRunsAndRoundTrips) {
  const OnnxLstm onnx = import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/plain_reverse.onnx");
  ASSERT_TRUE(onnx.program.ops[0].reverse);
  const int32_t I = onnx.program.ops[0].input_size, H = onnx.program.ops[0].hidden_size;
  std::mt19937_64 rng(22);
  CalibrationSet cal;
  const SequenceShape cs{8, 20, Layout::kBatchMajor};
  cal.add_batch(normal(rng, static_cast<size_t>(8 * 20 * I)), cs, I);
  CompileOptions opt;
  opt.tuning = Tuning::kNone;
  const QuantizedLayer q = QuantizedLayer::compile(onnx.program.ops[0], cal, opt);
  ASSERT_EQ(q.derived().time_direction, QLSTM_TIME_REVERSE);
  EXPECT_EQ(q.kernel_params({2, 5, Layout::kTimeMajor}).time_direction, QLSTM_TIME_REVERSE);

  // Accuracy against the float reverse LSTM.
  const SequenceShape s{2, 30, Layout::kTimeMajor};
  const std::vector<float> x = normal(rng, static_cast<size_t>(2 * 30 * I));
  const std::vector<float> want = run_float(onnx.program.ops[0], x.data(), s).output;
  EXPECT_GT(sqnr_db(want, q.run_float(x, s)), 30.0);

  // Bit for bit: the forward kernel on the time-reversed int8 input, reversed back.
  const std::vector<int8_t> x8 = q.quantize_input(x);
  DerivedLstm forward = q.derived();
  forward.time_direction = QLSTM_TIME_FORWARD;
  EXPECT_EQ(q.run_s8(x8, s), reverse_time(run_kernel_s8(forward, reverse_time(x8, s, I), s), s, H));

  // The model file and the emitted source keep the direction.
  const CompiledModel m = single_op_model(q.derived(), "rev");
  const CompiledModel back = parse_model(serialize_model(m), "memory");
  EXPECT_EQ(back.ops[0].as<DerivedLstm>().time_direction, QLSTM_TIME_REVERSE);
  EXPECT_EQ(run_kernel_s8(back.ops[0].as<DerivedLstm>(), x8, s), q.run_s8(x8, s));
  const EmittedSource e = emit_cpp(m, "rev", 1, 0, "test");
  EXPECT_NE(e.source.find("QLSTM_TIME_REVERSE, 0, QLSTM_OUTPUT_ALL_STEPS, 0}"), std::string::npos);
  EXPECT_EQ(e.header.find("rev_stream("), std::string::npos);  // a reverse LSTM needs the whole sequence
  EXPECT_EQ(e.source.find("rev_stream("), std::string::npos);
  try {
    run_kernel_s8_streamed(q.derived(), x8, s, 4);
    ADD_FAILURE() << "a reverse model was streamed";
  } catch (const CompileError& err) {
    EXPECT_NE(std::string(err.what()).find("cannot be streamed"), std::string::npos) << err.what();
  }
  const CompiledModel fwd_m = single_op_model(forward, "fwd");
  EXPECT_EQ(emit_cpp(fwd_m, "fwd", 1, 0, "test").source.find("QLSTM_TIME_REVERSE"), std::string::npos);
}

}  // namespace
