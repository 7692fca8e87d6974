// The .qlstm file: a round trip keeps every parameter and the bits of every output; damaged,
// truncated, foreign and future-version files are refused with the reason.
#include <gtest/gtest.h>

#include <random>

#include "qlstm/compiler/model_file.h"
#include "qlstm/compiler/quantized_lstm.h"

namespace {

using namespace qlstm::compiler;

CompiledModel small_model() {
  std::mt19937_64 rng(21);
  std::normal_distribution<float> n(0.0f, 0.4f);
  const int32_t I = 3, H = 4;
  std::vector<float> wih(4 * H * I), whh(4 * H * H), b(4 * H);
  for (auto& v : wih) v = n(rng);
  for (auto& v : whh) v = n(rng);
  for (auto& v : b) v = n(rng);
  const FloatLstm l = FloatLstm::from_torch(I, H, wih, whh, b, b);
  std::vector<float> x(8 * 10 * I);
  for (auto& v : x) v = n(rng) * 3;
  CalibrationSet set;
  set.add_batch(x, {8, 10, Layout::kBatchMajor}, I);
  CompileOptions o;
  o.tuning = Tuning::kNone;
  CompiledModel m = single_op_model(QuantizedLstm::compile(l, set, o).derived(), "small", true);
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
  EXPECT_EQ(r.ops[0].lstm.input.scale, m.ops[0].lstm.input.scale);
  EXPECT_EQ(r.ops[0].lstm.output.zero_point, m.ops[0].lstm.output.zero_point);
  EXPECT_EQ(r.ops[0].lstm.cell.power, m.ops[0].lstm.cell.power);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    EXPECT_EQ(r.ops[0].lstm.gates[g].w_x, m.ops[0].lstm.gates[g].w_x);
    EXPECT_EQ(r.ops[0].lstm.gates[g].hidden_effective_bias, m.ops[0].lstm.gates[g].hidden_effective_bias);
    EXPECT_EQ(r.ops[0].lstm.gates[g].input_to_q3_12.multiplier, m.ops[0].lstm.gates[g].input_to_q3_12.multiplier);
  }
  std::mt19937_64 rng(2);
  std::vector<int8_t> x(2 * 7 * 3);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  const SequenceShape shape{2, 7, Layout::kBatchMajor};
  EXPECT_EQ(run_kernel_s8(r.ops[0].lstm, x, shape), run_kernel_s8(m.ops[0].lstm, x, shape));
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
  const std::vector<int8_t> want = run_kernel_s8(ref.ops[0].lstm, x, shape);
  size_t refused = 0, harmless = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    std::string d = good;
    d[k] = static_cast<char>(d[k] ^ 0x5A);
    try {
      const CompiledModel m = parse_model(d, "damaged");
      ASSERT_EQ(run_kernel_s8(m.ops[0].lstm, x, shape), want) << "byte " << k << " changed the model silently";
      ASSERT_EQ(m.name, ref.name);
      ++harmless;
    } catch (const CompileError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, good.size() * 9 / 10);
  // A future format version is refused as such.
  bool version_seen = false;
  for (size_t k = 0; k + 4 <= good.size() && !version_seen; ++k) {
    const char current[4] = {static_cast<char>(kModelFormatVersion), 0, 0, 0};
    if (good.compare(k, 4, std::string(current, 4)) != 0) continue;
    std::string d = good;
    d[k] = static_cast<char>(kModelFormatVersion + 1);
    version_seen = error_of(d).find("format_version " + std::to_string(kModelFormatVersion + 1) +
                                    " is not supported") != std::string::npos;
  }
  EXPECT_TRUE(version_seen);
}

}  // namespace
