#include "qlstm/compiler/model_file.h"

#include <zlib.h>


#include "qlstm/compiler/file_io.h"
#include "qlstm/kernels.h"
#include "qlstm_model_generated.h"

namespace qlstm {
namespace compiler {
namespace {

uint32_t crc32_of(const uint8_t* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large buffers in pieces.
  while (size > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, data, n);
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

fb::Requant to_fb(const qlstm_requant& q) { return fb::Requant(q.multiplier, q.shift); }
qlstm_requant from_fb(const fb::Requant* q) {
  return q ? qlstm_requant{q->multiplier(), q->shift()} : qlstm_requant{-1, 0};
}

[[noreturn]] void bad(const std::string& origin, const std::string& why) {
  throw CompileError(origin + ": " + why);
}

}  // namespace

std::string serialize_model(const CompiledModel& m) {
  const DerivedLstm& d = m.derived;
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Gate>> gates;
  for (const DerivedGate& g : d.gates) {
    const fb::Requant in_q = to_fb(g.input_to_q3_12), h_q = to_fb(g.hidden_to_q3_12);
    gates.push_back(fb::CreateGateDirect(b, static_cast<int8_t>(g.activation), &in_q, &g.w_x,
                                         &g.input_effective_bias, &h_q, &g.w_h,
                                         &g.hidden_effective_bias, g.w_x_scale, g.w_h_scale));
  }
  const fb::Requant f = to_fb(d.forget_times_cell_to_cell), i = to_fb(d.input_times_cell_gate_to_cell),
                    o = to_fb(d.output_times_tanh_cell_to_hidden);
  const auto lstm = fb::CreateLstmDirect(b, d.input_size, d.hidden_size, &gates, &f, &i, &o,
                                         d.cell.power, d.cell_clip, d.time_direction);
  const fb::AffineQuant in(d.input.scale, d.input.zero_point), out(d.output.scale, d.output.zero_point);
  b.Finish(fb::CreateModelDirect(b, m.name.c_str(), m.batch_first, &in, &out, lstm, m.report_json.c_str()));
  std::vector<uint8_t> model(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());

  flatbuffers::FlatBufferBuilder file;
  file.Finish(fb::CreateModelFileDirect(file, kModelFormatVersion, crc32_of(model.data(), model.size()), &model),
              fb::ModelFileIdentifier());
  return std::string(reinterpret_cast<const char*>(file.GetBufferPointer()), file.GetSize());
}

CompiledModel parse_model(const std::string& bytes, const std::string& origin) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 8 || !fb::ModelFileBufferHasIdentifier(data)) {
    bad(origin, "not a qlstm model file (no 'QLSM' identifier)");
  }
  flatbuffers::Verifier outer(data, bytes.size());
  if (!fb::VerifyModelFileBuffer(outer)) bad(origin, "the file is truncated or corrupted (structure)");
  const fb::ModelFile* file = fb::GetModelFile(data);
  if (file->format_version() != kModelFormatVersion) {
    bad(origin, "format_version " + std::to_string(file->format_version()) + " is not supported (this qlstm reads " +
                    std::to_string(kModelFormatVersion) + ")");
  }
  if (file->model() == nullptr) bad(origin, "field 'model' missing");
  const uint32_t crc = crc32_of(file->model()->data(), file->model()->size());
  if (crc != file->crc32()) bad(origin, "checksum mismatch (crc32): the model bytes are corrupted");
  flatbuffers::Verifier inner(file->model()->data(), file->model()->size());
  if (!inner.VerifyBuffer<fb::Model>(nullptr)) bad(origin, "the model is corrupted (structure)");
  const fb::Model* m = file->model_nested_root();
  CompiledModel c;
  if (m->name()) c.name = m->name()->str();
  c.batch_first = m->batch_first();
  if (m->report_json()) c.report_json = m->report_json()->str();
  if (!m->input() || !m->output()) bad(origin, "field 'input' or 'output' quantization missing");
  if (!(m->input()->scale() > 0) || !(m->output()->scale() > 0)) bad(origin, "field 'input.scale' or 'output.scale' is not positive");
  if (m->input()->zero_point() < -128 || m->input()->zero_point() > 127) bad(origin, "field 'input.zero_point' out of int8 range");
  const fb::Lstm* l = m->lstm();
  if (l == nullptr) bad(origin, "field 'lstm' missing");
  DerivedLstm& d = c.derived;
  d.input = {m->input()->scale(), m->input()->zero_point()};
  d.output = {m->output()->scale(), m->output()->zero_point()};
  d.input_size = l->input_size();
  d.hidden_size = l->hidden_size();
  if (d.input_size < 1 || d.hidden_size < 1 || d.input_size > (1 << 16) || d.hidden_size > (1 << 14)) {
    bad(origin, "field 'lstm.input_size' or 'lstm.hidden_size' out of range");
  }
  const size_t I = static_cast<size_t>(d.input_size), H = static_cast<size_t>(d.hidden_size);
  if (!l->gates() || l->gates()->size() != QLSTM_GATE_COUNT) bad(origin, "field 'lstm.gates': expected 4 gates");
  for (uint32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const fb::Gate* fg = l->gates()->Get(g);
    const std::string where = std::string("field 'lstm.gates[") + gate_name(static_cast<int32_t>(g)) + "]";
    auto need = [&](const auto* v, size_t n, const char* what) {
      if (v == nullptr || v->size() != n) bad(origin, where + "." + what + "': expected " + std::to_string(n) + " values");
    };
    need(fg->input_weights(), H * I, "input_weights");
    need(fg->hidden_weights(), H * H, "hidden_weights");
    need(fg->input_effective_bias(), H, "input_effective_bias");
    need(fg->hidden_effective_bias(), H, "hidden_effective_bias");
    DerivedGate& dg = d.gates[g];
    dg.activation = fg->activation();
    dg.input_to_q3_12 = from_fb(fg->input_to_q3_12());
    dg.hidden_to_q3_12 = from_fb(fg->hidden_to_q3_12());
    dg.w_x.assign(fg->input_weights()->begin(), fg->input_weights()->end());
    dg.w_h.assign(fg->hidden_weights()->begin(), fg->hidden_weights()->end());
    dg.input_effective_bias.assign(fg->input_effective_bias()->begin(), fg->input_effective_bias()->end());
    dg.hidden_effective_bias.assign(fg->hidden_effective_bias()->begin(), fg->hidden_effective_bias()->end());
    dg.w_x_scale = fg->input_weight_scale();
    dg.w_h_scale = fg->hidden_weight_scale();
  }
  d.forget_times_cell_to_cell = from_fb(l->forget_times_cell_to_cell());
  d.input_times_cell_gate_to_cell = from_fb(l->input_times_cell_gate_to_cell());
  d.output_times_tanh_cell_to_hidden = from_fb(l->output_times_tanh_cell_to_hidden());
  d.cell.power = l->cell_scale_power();
  d.cell_clip = l->cell_clip();
  d.time_direction = l->time_direction();
  const qlstm_lstm_s8_params p = d.kernel_params(1, 1, Layout::kBatchMajor);
  const char* field = nullptr;
  const qlstm_status st = qlstm_lstm_s8_validate(&p, &field);
  if (st != QLSTM_OK) {
    bad(origin, std::string("field '") + (field ? field : "?") + "': " + qlstm_status_string(st));
  }
  return c;
}

CompiledModel load_model(const std::string& path) { return parse_model(read_file(path), path); }

}  // namespace compiler
}  // namespace qlstm
