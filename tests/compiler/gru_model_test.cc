// A compiled model with GRU ops through the compiler's program: the host run equals the GRU and
// FC kernels called one by one (with the model's constant Q0.15 initial state, and stateful
// calls), the model file keeps it exactly (byte-identical re-save, every field of every op), a
// crafted file with a cut or overlong GRU record, or a GRU op in a version-4 file, is refused
// naming the field, and an inconsistent GRU op is refused naming the op and the field.
#include <gtest/gtest.h>

#include <flatbuffers/flatbuffers.h>
#include <zlib.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gru_model.h"
#include "op_fields.h"
#include "program_ops.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/params_codec.h"
#include "qlstm_model_generated.h"
#include "scratch_buffer.h"

namespace {

using namespace qlstm::compiler;
using testing_support::GruModelOptions;
using testing_support::gru_model;
using testing_support::hand::random_s8;

constexpr int32_t kB = 2, kT = 5;

// A GRU kernel call writing the part of each [W] row at y + offset; hidden_q0_15 null: stateless.
void gru_call(const DerivedGru& d, const std::vector<int8_t>& x, int32_t B, int32_t T, Layout layout, int32_t W,
              int16_t* hidden_q0_15, int8_t* y) {
  qlstm_gru_s8_params p = d.kernel_params(B, T, layout);
  p.output_width = W;
  testing_support::ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  qlstm_gru_s8_context c = {scratch.data(), scratch.bytes(), hidden_q0_15};
  ASSERT_EQ(qlstm_gru_s8(&p, &c, x.data(), y), QLSTM_OK);
}

// The model's ops one by one: both GRUs into the [2H] rows, then the FC head. state: [2][B][H]
// Q0.15, the initial state, receives the final one.
std::vector<int8_t> ops_one_by_one(const CompiledModel& m, const std::vector<int8_t>& x, const SequenceShape& s,
                                   std::vector<int16_t>& state) {
  const int32_t H = m.ops[0].as<DerivedGru>().hidden_size;
  const bool final_only = m.ops[0].as<DerivedGru>().output_steps == QLSTM_OUTPUT_FINAL;
  const size_t positions = static_cast<size_t>(s.batch) * static_cast<size_t>(final_only ? 1 : s.time_steps);
  std::vector<int8_t> y(positions * 2 * H);
  for (int32_t d = 0; d < 2; ++d) {
    gru_call(m.ops[static_cast<size_t>(d)].as<DerivedGru>(), x, s.batch, s.time_steps, s.layout, 2 * H,
             state.data() + d * s.batch * H, y.data() + d * H);
  }
  qlstm_fc_s8_params fc = m.ops[2].as<DerivedFc>().kernel_params(static_cast<int32_t>(positions));
  std::vector<int8_t> out(positions * static_cast<size_t>(fc.output_size));
  EXPECT_EQ(qlstm_fc_s8(&fc, y.data(), out.data()), QLSTM_OK);
  return out;
}

TEST(GruModel, HostRunEqualsTheKernelsOneByOne) {
  std::mt19937_64 rng(601);
  for (const bool final_state : {false, true}) {
    for (const bool constant_state : {false, true}) {
      SCOPED_TRACE(std::string(final_state ? "final" : "every step") + (constant_state ? ", constant h0" : ""));
      const CompiledModel m = gru_model(rng, {final_state, constant_state});
      EXPECT_EQ(m.lstm_op_count(), 2);
      EXPECT_EQ(m.state_size(), 2 * testing_support::hand::H);
      EXPECT_EQ(std::string(op_kind_name(m.ops[0].kind)), "gru");
      const SequenceShape s{kB, kT, Layout::kBatchMajor};
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(kB * kT * m.input_size()), rng);
      // The model's own initial state: its constants (each [H] row repeated per batch row) or zero.
      const ProgramState initial = initial_program_state(m, kB);
      std::vector<int16_t> state = initial.cell;
      if (constant_state) {
        EXPECT_EQ(std::vector<int16_t>(state.begin(), state.begin() + testing_support::hand::H), m.ops[0].initial_cell);
      } else {
        EXPECT_EQ(state, std::vector<int16_t>(state.size(), 0));
      }
      const std::vector<int8_t> want = ops_one_by_one(m, x, s, state);
      EXPECT_EQ(run_program_s8(m, x, s), want);
      // Stateful: the final state is the kernels' (Q0.15 in cell), the int8 rows untouched.
      ProgramState st = initial;
      EXPECT_EQ(run_program_s8(m, x, s, &st), want);
      EXPECT_EQ(st.cell, state);
      EXPECT_NE(st.cell, initial.cell);
      EXPECT_EQ(st.hidden, initial.hidden);
      // A float h0 quantizes to Q0.15 in the cell rows.
      const std::vector<float> h(initial.cell.size(), 0.5f);
      EXPECT_EQ(quantize_program_state(m, kB, &h, nullptr, "h0").cell, std::vector<int16_t>(h.size(), 16384));
    }
  }
}

TEST(GruModel, MemoryCountsTheGrus) {
  std::mt19937_64 rng(602);
  const CompiledModel m = gru_model(rng, {});
  const ProgramMemory mem = program_memory(m, kB, kT);
  const int32_t I = testing_support::hand::I, H = testing_support::hand::H;
  const qlstm_gru_dims dims = {kB, 1, I, H};
  EXPECT_EQ(mem.scratch_bytes, qlstm_gru_s8_scratch_bytes(&dims));
  EXPECT_EQ(mem.state_values, static_cast<size_t>(2 * kB * H));
  EXPECT_EQ(mem.cell_values, 0u);  // no LSTM: a stateless GRU keeps its hidden in its scratch
  EXPECT_EQ(mem.ops[0].flash_bytes, static_cast<size_t>(3 * H * (I + H) + 6 * H * 4));
  const RuntimeProgram r = runtime_program(m, kB, kT, Layout::kBatchMajor);
  EXPECT_EQ(r.ops[1].state_offset, static_cast<size_t>(kB * H));
  EXPECT_EQ(testing_support::block<qlstm_gru_s8_params>(r.ops[1]).output_width, 2 * H);
  EXPECT_EQ(testing_support::block<qlstm_gru_s8_params>(r.ops[1]).time_direction, QLSTM_TIME_REVERSE);
  EXPECT_NE(m.streaming_refusal().find("reverse GRU"), std::string::npos) << m.streaming_refusal();
}

TEST(GruModel, ModelFileRoundTripIsExact) {
  std::mt19937_64 rng(603);
  for (const bool final_state : {false, true}) {
    const CompiledModel m = gru_model(rng, {final_state, true});
    const std::string bytes = serialize_model(m);
    const CompiledModel back = parse_model(bytes, "gru.qlstm");
    EXPECT_EQ(serialize_model(back), bytes);
    const RuntimeProgram a = runtime_program(m, kB, kT, Layout::kBatchMajor);
    const RuntimeProgram b = runtime_program(back, kB, kT, Layout::kBatchMajor);
    testing_support::expect_same_ops(a.ops, b.ops, "model file");
    for (size_t k = 0; k < a.ops.size(); ++k) {
      EXPECT_EQ(back.ops[k].initial_cell, m.ops[k].initial_cell);
      EXPECT_EQ(back.ops[k].initial_hidden, m.ops[k].initial_hidden);
      if (m.ops[k].recurrent()) {
        EXPECT_EQ(back.ops[k].recurrent_input().scale, m.ops[k].recurrent_input().scale);
      }
    }
    for (size_t g = 0; g < 3; ++g) EXPECT_EQ(back.ops[1].as<DerivedGru>().gates[g].w_h_scale, m.ops[1].as<DerivedGru>().gates[g].w_h_scale);
    EXPECT_EQ(back.buffers[1].steps, m.buffers[1].steps);
    EXPECT_EQ(back.initial_hidden, StateSource::kConstant);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(kB * kT * m.input_size()), rng);
    EXPECT_EQ(run_program_s8(back, x, {kB, kT, Layout::kBatchMajor}), run_program_s8(m, x, {kB, kT, Layout::kBatchMajor}));
  }
}

// A forward GRU alone streams: calls of a few steps on one state equal one call (its Q0.15 state
// carried in the cell rows); a program with a reverse GRU cannot stream and says so.
TEST(GruModel, ForwardGruStreamsAsOneCall) {
  std::mt19937_64 rng(606);
  const CompiledModel both = gru_model(rng, {false, true});
  ProgramOp forward = both.ops[0];
  CompiledModel m = assemble_program({forward}, 1);
  m.initial_hidden = StateSource::kConstant;
  m.validate("forward");
  EXPECT_EQ(m.streaming_refusal(), "");
  const SequenceShape s{kB, 7, Layout::kTimeMajor};
  const std::vector<int8_t> x = random_s8(static_cast<size_t>(kB * 7 * m.input_size()), rng);
  const std::vector<int8_t> whole = run_program_s8(m, x, s);
  for (const int32_t chunk : {1, 2, 3, 7}) EXPECT_EQ(run_program_s8_streamed(m, x, s, chunk), whole) << chunk;
  EXPECT_THROW(run_program_s8_streamed(both, x, s, 2), CompileError);
}

// A model file of m at `version` whose op records pass through `edit` (op index, record).
std::string crafted_file(const CompiledModel& m, uint32_t version,
                         const std::function<void(size_t, std::vector<uint8_t>&)>& edit) {
  namespace fb = qlstm::fb;
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const ProgramBuffer& buf : m.buffers) {
    const fb::AffineQuant q(buf.quant.scale, buf.quant.zero_point);
    buffers.push_back(fb::CreateBuffer(b, buf.width, &q, buf.steps));
  }
  const RuntimeProgram r = runtime_program(m, 1, 0, Layout::kBatchMajor);
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    std::vector<uint8_t> record =
        r.ops[k].kind == QLSTM_OP_GRU_S8
            ? testing_support::record_of(testing_support::block<qlstm_gru_s8_params>(r.ops[k]), [](const auto& p, auto& w) { qlstm::visit_gru_s8_fields(p, w); })
            : testing_support::record_of(testing_support::block<qlstm_fc_s8_params>(r.ops[k]), [](const auto& p, auto& w) { qlstm::visit_fc_s8_fields(p, w); });
    edit(k, record);
    const ProgramOp& op = m.ops[k];
    const AffineQuant qi = op.recurrent() ? op.recurrent_input() : op.as<DerivedFc>().input;
    const AffineQuant qo = op.recurrent() ? op.recurrent_output() : op.as<DerivedFc>().output;
    const fb::AffineQuant in(qi.scale, qi.zero_point), out(qo.scale, qo.zero_point);
    ops.push_back(fb::CreateOpDirect(b, op.kind, &record, op.input_buffer, op.output_buffer, op.output_offset, nullptr,
                                     op.initial_cell.empty() ? nullptr : &op.initial_cell, &in, &out));
  }
  const fb::AffineQuant in(m.input_quant().scale, m.input_quant().zero_point),
      out(m.output_quant().scale, m.output_quant().zero_point);
  b.Finish(fb::CreateModelDirect(b, "crafted", m.batch_first, &in, &out, 0, "{}", m.directions, &buffers, nullptr,
                                 fb::StateSource_Zero, fb::StateSource_Zero, false, false, &ops));
  std::vector<uint8_t> model(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  flatbuffers::FlatBufferBuilder file;
  const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), model.data(), static_cast<uInt>(model.size())));
  file.Finish(fb::CreateModelFileDirect(file, version, crc, &model), fb::ModelFileIdentifier());
  return std::string(reinterpret_cast<const char*>(file.GetBufferPointer()), file.GetSize());
}

std::string error_of(const std::string& bytes) {
  try {
    parse_model(bytes, "crafted.qlstm");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(GruModel, CraftedFilesAreRefusedNamingTheField) {
  std::mt19937_64 rng(604);
  const CompiledModel m = gru_model(rng, {});
  const auto unchanged = [](size_t, std::vector<uint8_t>&) {};
  ASSERT_EQ(error_of(crafted_file(m, kModelFormatVersion, unchanged)), "accepted");
  // The GRU record cut after dims and layout (5 fields), after the reset gate's first requant (7),
  // before its last field (input_repeated) and inside the one before; op 1's record with a field
  // too many.
  const struct {
    size_t op, keep_bytes;
    bool extra;
    std::string want;
  } cuts[] = {
      {0, 5 * 4, false, "field 'program[0].params.gates[reset].input_to_q3_12.multiplier': the record ends early"},
      {0, 7 * 4, false, "field 'program[0].params.gates[reset].input_weights': the record ends early"},
      {1, 0, false, "field 'program[1].params.dims.batch': the record ends early"},
      {0, SIZE_MAX, false, "field 'program[0].params.input_repeated': the record ends early"},
      {0, SIZE_MAX - 1, false, "field 'program[0].params.new_gate_zero_state_bias': the record ends early"},
      {1, 0, true, "field 'program[1].params': bytes after the last field"},
  };
  for (const auto& c : cuts) {
    const std::string e = error_of(crafted_file(m, kModelFormatVersion, [&](size_t k, std::vector<uint8_t>& r) {
      if (k != c.op) return;
      if (c.extra) r.insert(r.end(), 4, 0);
      else r.resize(c.keep_bytes == SIZE_MAX ? r.size() - 4 : c.keep_bytes == SIZE_MAX - 1 ? r.size() - 8 : c.keep_bytes);
    }));
    EXPECT_NE(e.find(c.want), std::string::npos) << e;
  }
  // A record whose dims carry a call's batch.
  const std::string batch = error_of(crafted_file(m, kModelFormatVersion, [](size_t k, std::vector<uint8_t>& r) {
    if (k == 0) r[0] = 2;
  }));
  EXPECT_NE(batch.find("field 'program[0].params.dims': batch must be 1"), std::string::npos) << batch;
  // A bad kernel field: the validation names the op and the field.
  const std::string shift = error_of(crafted_file(m, kModelFormatVersion, [](size_t k, std::vector<uint8_t>& r) {
    if (k == 1) r[6 * 4] = 99;  // gates[reset].input_to_q3_12.shift
  }));
  EXPECT_NE(shift.find("ops[1].gates[reset].input_to_q3_12.shift"), std::string::npos) << shift;
  // A version-5 record ends before new_gate_zero_state_bias; a version-6 one may not.
  const auto v5_record = [&](size_t k, std::vector<uint8_t>& r) {
    if (m.ops[k].kind == QLSTM_OP_GRU_S8) r.resize(r.size() - 4 * static_cast<size_t>(m.ops[k].as<DerivedGru>().hidden_size));
  };
  const std::string v6_short = error_of(crafted_file(m, kModelFormatVersion, v5_record));
  EXPECT_NE(v6_short.find("field 'program[0].params.new_gate_zero_state_bias': the record ends early"),
            std::string::npos) << v6_short;
  // Version 4 knew no GRU.
  const std::string v4 = error_of(crafted_file(m, 4, unchanged));
  EXPECT_NE(v4.find("field 'program[0].kind': 5 is not an op kind this qlstm knows"), std::string::npos) << v4;
}

// A version-5 file (GRU records without new_gate_zero_state_bias) still loads: the field is
// computed from the weights, as the compiler derives it, and the program runs as the original.
TEST(GruModel, Version5FileGetsTheZeroStateBiasFromItsWeights) {
  std::mt19937_64 rng(606);
  const CompiledModel m = gru_model(rng, {});
  // Version 5's record ends before new_gate_zero_state_bias (and version 19's input_repeated after it).
  const std::string v5 = crafted_file(m, 5, [&](size_t k, std::vector<uint8_t>& r) {
    if (m.ops[k].kind == QLSTM_OP_GRU_S8) r.resize(r.size() - 4 - 4 * static_cast<size_t>(m.ops[k].as<DerivedGru>().hidden_size));
  });
  const CompiledModel back = parse_model(v5, "v5.qlstm");
  ASSERT_EQ(back.ops.size(), m.ops.size());
  size_t grus = 0;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    if (m.ops[k].kind != QLSTM_OP_GRU_S8) continue;
    ++grus;
    EXPECT_EQ(back.ops[k].as<DerivedGru>().new_gate_zero_state_bias, m.ops[k].as<DerivedGru>().new_gate_zero_state_bias) << k;
  }
  EXPECT_GT(grus, 0u);
}

// A version-18 GRU record ends before input_repeated: it reads as 0 (a sequence).
TEST(GruModel, Version18RecordsReadAsASequence) {
  std::mt19937_64 rng(607);
  const CompiledModel m = gru_model(rng, {});
  const std::string v18 = crafted_file(m, 18, [&](size_t k, std::vector<uint8_t>& r) {
    if (m.ops[k].kind == QLSTM_OP_GRU_S8) r.resize(r.size() - 4);
  });
  const CompiledModel back = parse_model(v18, "v18.qlstm");
  for (size_t k = 0; k < m.ops.size(); ++k) {
    if (m.ops[k].kind == QLSTM_OP_GRU_S8) {
      EXPECT_EQ(back.ops[k].as<DerivedGru>().input_repeated, 0) << k;
    }
  }
  const SequenceShape s{2, 5, Layout::kBatchMajor};
  std::vector<int8_t> x(static_cast<size_t>(2 * 5 * m.input_size()));
  for (int8_t& v : x) v = static_cast<int8_t>(rng());
  EXPECT_EQ(run_program_s8(back, x, s), run_program_s8(m, x, s));
}

TEST(GruModel, InconsistentGruOpIsRefusedNamingTheField) {
  std::mt19937_64 rng(605);
  const CompiledModel good = gru_model(rng, {false, true});
  const struct {
    const char* name;
    std::function<void(CompiledModel&)> edit;
    std::string want;
  } bads[] = {
      {"kernel field", [](CompiledModel& m) { m.ops[1].as<DerivedGru>().update_times_difference_to_q0_15.shift = 40; },
       "ops[1].update_times_difference_to_q0_15.shift"},
      {"int8 h0", [](CompiledModel& m) { m.ops[0].initial_hidden.assign(m.ops[0].as<DerivedGru>().hidden_size, 0); },
       "field 'ops[0].initial_hidden': a GRU keeps its initial state in initial_cell"},
      {"h0 size", [](CompiledModel& m) { m.ops[1].initial_cell.pop_back(); },
       "field 'ops[1].initial_cell' does not match the model's initial hidden state"},
      {"direction", [](CompiledModel& m) { m.ops[1].as<DerivedGru>().time_direction = QLSTM_TIME_FORWARD; },
       "field 'ops[1].time_direction' does not match its half of the layer"},
      {"quantization", [](CompiledModel& m) { m.ops[1].as<DerivedGru>().output.scale *= 2; },
       "field 'ops[1]': output quantization differs from its output buffer's"},
      {"offset", [](CompiledModel& m) { m.ops[1].output_offset = 0; }, "ops[1].output_offset"},
  };
  for (const auto& bad : bads) {
    SCOPED_TRACE(bad.name);
    CompiledModel m = good;
    bad.edit(m);
    try {
      m.validate("m");
      ADD_FAILURE() << "accepted";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.want), std::string::npos) << e.what();
    }
  }
}

}  // namespace
