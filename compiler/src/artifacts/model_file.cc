#include "qlstm/compiler/artifacts/model_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"
#include "qlstm/params_codec.h"
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

qlstm_requant from_fb(const fb::Requant* q) {
  return q ? qlstm_requant{q->multiplier(), q->shift()} : qlstm_requant{-1, 0};
}

[[noreturn]] void bad(const std::string& origin, const std::string& why) {
  throw CompileError(origin + ": " + why);
}

}  // namespace

namespace {

// One LSTM's parameters; `where` names it in messages ("lstm" or "ops[k].lstm").
DerivedLstm read_lstm(const fb::Lstm* l, const AffineQuant& input, const AffineQuant& output,
                      const std::string& origin, const std::string& where) {
  if (l == nullptr) bad(origin, "field '" + where + "' missing");
  DerivedLstm d;
  d.input = input;
  d.output = output;
  d.input_size = l->input_size();
  d.hidden_size = l->hidden_size();
  if (d.input_size < 1 || d.hidden_size < 1 || d.input_size > (1 << 16) || d.hidden_size > (1 << 14)) {
    bad(origin, "field '" + where + ".input_size' or '" + where + ".hidden_size' out of range");
  }
  const size_t I = static_cast<size_t>(d.input_size), H = static_cast<size_t>(d.hidden_size);
  if (!l->gates() || l->gates()->size() != QLSTM_GATE_COUNT) bad(origin, "field '" + where + ".gates': expected 4 gates");
  for (uint32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const fb::Gate* fg = l->gates()->Get(g);
    const std::string at = "field '" + where + ".gates[" + gate_name(static_cast<int32_t>(g)) + "]";
    auto need = [&](const auto* v, size_t n, const char* what) {
      if (v == nullptr || v->size() != n) bad(origin, at + "." + what + "': expected " + std::to_string(n) + " values");
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
  return d;
}

AffineQuant read_quant(const fb::AffineQuant* q, const std::string& origin, const std::string& where) {
  if (q == nullptr) bad(origin, "field '" + where + "' missing");
  return {q->scale(), q->zero_point()};
}

StateSource read_source(fb::StateSource s, const std::string& origin, const char* where) {
  switch (s) {
    case fb::StateSource_Zero: return StateSource::kZero;
    case fb::StateSource_Constant: return StateSource::kConstant;
    case fb::StateSource_Input: return StateSource::kInput;
  }
  bad(origin, std::string("field '") + where + "' is not a state source");
}

// Copied bytewise: a mutated file may place the vector off its 8-byte alignment (little-endian, as
// FlatBuffers and every host qlstm runs on).
std::vector<double> doubles(const flatbuffers::Vector<double>* v) {
  std::vector<double> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(double));
  return out;
}

// The op kinds each version knows: 3 the LSTM, 4 the kinds around it, 5 and 6 the GRU too, 7
// the 16x8 kinds as well (each kind's file_version).
const OpKind* known_kind(int32_t kind, uint32_t version) {
  const OpKind* k = find_op_kind(kind);
  return k != nullptr && version >= k->file_version ? k : nullptr;
}

// A version-3 or later op: its parameter record decoded by the runtime's description of its kind's block.
ProgramOp read_op(const fb::Op* o, uint32_t version, const std::string& origin, const std::string& where) {
  const int32_t kind = o->kind();
  const OpKind* known = known_kind(kind, version);
  if (!known) bad(origin, "field '" + where + ".kind': " + std::to_string(kind) + " is not an op kind this qlstm knows");
  OpFileRecord record;
  record.input = read_quant(o->input(), origin, where + ".input");
  record.output = read_quant(o->output(), origin, where + ".output");
  if (o->second_input() != nullptr) record.second_input = read_quant(o->second_input(), origin, where + ".second_input");
  if (o->params() == nullptr) bad(origin, "field '" + where + ".params' missing");
  record.params.assign(o->params()->begin(), o->params()->end());
  record.weight_scales = doubles(o->weight_scales());
  if (o->label()) record.label = o->label()->str();
  ProgramOp op;
  op.kind = kind;
  try {
    known->decode(record, OpFileOrigin{origin, where, version}, &op);
  } catch (const CompileError& e) {
    const std::string what = e.what();
    if (what.rfind(origin + ":", 0) == 0) throw;  // already names the file and the field
    bad(origin, "field '" + where + ".params': " + what);
  }
  op.input_buffer = o->input_buffer();
  op.output_buffer = o->output_buffer();
  op.output_offset = o->output_offset();
  op.second_input_buffer = o->second_input_buffer();
  if (o->initial_hidden()) op.initial_hidden.assign(o->initial_hidden()->begin(), o->initial_hidden()->end());
  if (o->initial_cell()) op.initial_cell.assign(o->initial_cell()->begin(), o->initial_cell()->end());
  return op;
}

fb::StateSource to_fb(StateSource s) {
  return s == StateSource::kConstant ? fb::StateSource_Constant
         : s == StateSource::kInput  ? fb::StateSource_Input
                                     : fb::StateSource_Zero;
}

}  // namespace

uint32_t model_format_version(const CompiledModel& m) {
  bool typed = !m.all_s8();
  uint32_t kinds_version = 0;
  for (const ProgramOp& op : m.ops) {
    const OpKind* kind = find_op_kind(op.kind);
    typed = typed || (kind != nullptr && kind->int16_data);
    if (kind != nullptr) kinds_version = std::max(kinds_version, kind->file_version);
    if (op.recurrent() && op.output_steps() == QLSTM_OUTPUT_FIRST) {
      kinds_version = std::max(kinds_version, kModelFormatVersionFirstStep);
    }
    if (op.kind == QLSTM_OP_LSTM_S8) {
      for (const DerivedGate& g : op.as<DerivedLstm>().gates) {
        if (g.activation == QLSTM_ACTIVATION_HARD_SIGMOID) kinds_version = std::max(kinds_version, kModelFormatVersionGateLines);
      }
      if (op.as<DerivedLstm>().input_repeated != 0) kinds_version = std::max(kinds_version, kModelFormatVersionRepeatedInput);
    }
    if (op.kind == QLSTM_OP_GRU_S8 && op.as<DerivedGru>().input_repeated != 0) {
      kinds_version = std::max(kinds_version, kModelFormatVersionRepeatedGru);
    }
  }
  // The oldest version that reads the model: 6 for int8 kinds, 7 with int16 buffers or kinds, or
  // the newest kind's own.
  return std::max(typed ? kModelFormatVersionTyped : kModelFormatVersionS8, kinds_version);
}

std::string serialize_model(const CompiledModel& m) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const ProgramBuffer& buf : m.buffers) {
    const fb::AffineQuant q(buf.quant.scale, buf.quant.zero_point);
    buffers.push_back(fb::CreateBuffer(b, buf.width, &q, buf.steps, buf.type));
  }
  // Every op's parameter block as the runtime's record (batch 1, no time steps: the call's).
  const RuntimeProgram table = runtime_program(m, 1, 0, m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor);
  const std::vector<qlstm_op>& kernel_ops = table.ops;  // their params point into table
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  const uint32_t version = model_format_version(m);
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const ProgramOp& op = m.ops[k];
    const OpKind& kind = op_kind(op.kind, "serialize_model: field 'ops[" + std::to_string(k) + "].kind'");
    kind.check_arrays(op, k);
    const std::vector<uint8_t> record = kind.encode(kernel_ops[k], version);
    std::vector<double> weight_scales;
    std::string label;
    kind.file_extras(op, &weight_scales, &label);
    // The quantization the op was derived for (the loader checks it against its buffers'); a
    // step selection has none of its own: its buffer's.
    OpBoundary ob;
    AffineQuant qi, qo;
    if (kind.boundary(op, &ob)) {
      qi = ob.input, qo = ob.output;
    } else if (op.input_buffer >= 0 && static_cast<size_t>(op.input_buffer) < m.buffers.size()) {
      qi = qo = m.buffers[static_cast<size_t>(op.input_buffer)].quant;
    }
    const fb::AffineQuant in(qi.scale, qi.zero_point), out(qo.scale, qo.zero_point);
    const fb::AffineQuant in2(ob.second_input.scale, ob.second_input.zero_point);
    const bool two_operands = ob.second_input_width > 0;
    ops.push_back(fb::CreateOpDirect(b, kernel_ops[k].kind, &record, op.input_buffer, op.output_buffer,
                                     op.output_offset, op.initial_hidden.empty() ? nullptr : &op.initial_hidden,
                                     op.initial_cell.empty() ? nullptr : &op.initial_cell, &in, &out,
                                     &weight_scales, label.empty() ? nullptr : label.c_str(),
                                     op.second_input_buffer, two_operands ? &in2 : nullptr));
  }
  const fb::AffineQuant in(m.input_quant().scale, m.input_quant().zero_point),
      out(m.output_quant().scale, m.output_quant().zero_point);
  b.Finish(fb::CreateModelDirect(b, m.name.c_str(), m.batch_first, &in, &out, 0, m.report_json.c_str(),
                                 m.directions, &buffers, nullptr, to_fb(m.initial_hidden), to_fb(m.initial_cell),
                                 m.hidden_output, m.cell_output, &ops));
  return seal_model(std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()), version);
}

std::string seal_model(const std::string& model_bytes, uint32_t version) {
  const std::vector<uint8_t> model(model_bytes.begin(), model_bytes.end());
  flatbuffers::FlatBufferBuilder file;
  file.Finish(fb::CreateModelFileDirect(file, version, crc32_of(model.data(), model.size()), &model),
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
  const uint32_t version = file->format_version();
  if (version < 1 || version > kModelFormatVersion) {
    bad(origin, "format_version " + std::to_string(version) + " is not supported (this qlstm reads 1 to " +
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
  if (version == 1) {
    // One LSTM, its boundary quantization in the model.
    const AffineQuant in = read_quant(m->input(), origin, "input"), out = read_quant(m->output(), origin, "output");
    if (!(in.scale > 0) || !(out.scale > 0)) bad(origin, "field 'input.scale' or 'output.scale' is not positive");
    if (in.zero_point < -128 || in.zero_point > 127) bad(origin, "field 'input.zero_point' out of int8 range");
    std::vector<ProgramOp> ops(1);
    ops[0].set(read_lstm(m->lstm(), in, out, origin, "lstm"));
    const std::string name = c.name, report = c.report_json;
    const bool batch_first = c.batch_first;
    c = assemble_program(std::move(ops), 1);
    c.name = name;
    c.report_json = report;
    c.batch_first = batch_first;
  } else {
    c.directions = m->directions();
    if (c.directions != 1 && c.directions != 2) bad(origin, "field 'directions' must be 1 or 2");
    if (!m->buffers() || m->buffers()->size() < 2 || m->buffers()->size() > 1024) {
      bad(origin, "field 'buffers': expected 2 to 1024 buffers");
    }
    for (uint32_t k = 0; k < m->buffers()->size(); ++k) {
      const fb::Buffer* buf = m->buffers()->Get(k);
      const std::string w = "buffers[" + std::to_string(k) + "]";
      c.buffers.push_back({buf->width(), read_quant(buf->quant(), origin, w + ".quant"),
                           version >= 4 ? buf->steps() : QLSTM_BUFFER_EVERY_STEP,
                           version >= 7 ? buf->type() : QLSTM_ELEMENT_S8});
    }
    const uint32_t n_ops = version == 2 ? (m->ops() ? m->ops()->size() : 0) : (m->program() ? m->program()->size() : 0);
    if (n_ops < 1 || n_ops > 2048) bad(origin, std::string("field '") + (version == 2 ? "ops" : "program") +
                                                   "': expected 1 to 2048 ops");
    c.initial_hidden = read_source(m->initial_hidden_source(), origin, "initial_hidden_source");
    c.initial_cell = read_source(m->initial_cell_source(), origin, "initial_cell_source");
    c.hidden_output = m->hidden_output();
    c.cell_output = m->cell_output();
    for (uint32_t k = 0; version >= 3 && k < n_ops; ++k) {
      c.ops.push_back(read_op(m->program()->Get(k), version, origin, "program[" + std::to_string(k) + "]"));
    }
    for (uint32_t k = 0; version == 2 && k < n_ops; ++k) {
      const fb::LstmOp* o = m->ops()->Get(k);
      const std::string w = "ops[" + std::to_string(k) + "]";
      const fb::Lstm* l = o->lstm();
      if (l == nullptr) bad(origin, "field '" + w + ".lstm' missing");
      ProgramOp op;
      op.set(read_lstm(l, read_quant(l->input(), origin, w + ".lstm.input"),
                          read_quant(l->output(), origin, w + ".lstm.output"), origin, w + ".lstm"));
      op.input_buffer = o->input_buffer();
      op.output_buffer = o->output_buffer();
      op.output_offset = o->output_offset();
      if (o->initial_hidden()) op.initial_hidden.assign(o->initial_hidden()->begin(), o->initial_hidden()->end());
      if (o->initial_cell()) op.initial_cell.assign(o->initial_cell()->begin(), o->initial_cell()->end());
      c.ops.push_back(std::move(op));
    }
  }
  c.validate(origin);
  return c;
}

CompiledModel load_model(const std::string& path) { return parse_model(read_file(path), path); }

}  // namespace compiler
}  // namespace qlstm
