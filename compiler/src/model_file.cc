#include "qlstm/compiler/model_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "qlstm/compiler/file_io.h"
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

struct ByteSink {
  std::vector<uint8_t>* out;
  void put(const uint8_t* bytes, size_t n) { out->insert(out->end(), bytes, bytes + n); }
};

// A record of an earlier version ends before the field `first_missing`, added later (version 4:
// an LSTM's output_steps; version 6: a GRU's new_gate_zero_state_bias): that field and any after it
// are left value-initialized (output_steps 0: every step; a null array the caller fills in).
class ShorterRecordReader {
 public:
  ShorterRecordReader(const uint8_t* data, size_t size, const char* first_missing)
      : r_(data, size), first_missing_(first_missing) {}
  void open(const char* name) { r_.open(name); }
  void close() { r_.close(); }
  void unused(const char* name) { r_.unused(name); }
  void i32(const char* name, int32_t& v) {
    if (!missing(name)) r_.i32(name, v);
  }
  template <class T>
  void array(const char* name, const T*& data, int64_t count) {
    if (!missing(name)) r_.array(name, data, count);
  }
  const char* failed() const { return r_.failed(); }
  bool complete() const { return r_.complete(); }

 private:
  bool missing(const char* name) {
    if (std::strcmp(name, first_missing_) == 0) ended_ = true;
    return ended_;
  }
  RecordReader r_;
  const char* first_missing_;
  bool ended_ = false;
};

// Decodes op `where`'s record of kind block P with `visit` (visit_<kind>_fields) through a Reader.
// `aligned` keeps the bytes the block's arrays point into.
template <class Reader, class P, class Visit, class... ReaderArgs>
P decode_record(const fb::Op* o, std::vector<uint32_t>& aligned, const std::string& origin, const std::string& where,
                Visit visit, ReaderArgs... reader_args) {
  if (o->params() == nullptr) bad(origin, "field '" + where + ".params' missing");
  // Copied to aligned memory: the record's int32 arrays are read in place.
  aligned.assign((o->params()->size() + 3) / 4, 0);
  if (o->params()->size() > 0) std::memcpy(aligned.data(), o->params()->data(), o->params()->size());
  P p{};
  Reader r(reinterpret_cast<const uint8_t*>(aligned.data()), o->params()->size(), reader_args...);
  visit(p, r);
  if (r.failed() != nullptr) bad(origin, "field '" + where + ".params." + r.failed() + "': the record ends early");
  if (!r.complete()) bad(origin, "field '" + where + ".params': bytes after the last field");
  return p;
}

// Copied bytewise: a mutated file may place the vector off its 8-byte alignment (little-endian, as
// FlatBuffers and every host qlstm runs on).
std::vector<double> doubles(const flatbuffers::Vector<double>* v) {
  std::vector<double> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(double));
  return out;
}

// A recurrent op's float weight scales, per gate the input side's then the hidden side's (reports only).
template <class Gates>
void set_weight_scales(Gates& gates, const std::vector<double>& scales) {
  if (scales.size() != 2 * gates.size()) return;
  for (size_t g = 0; g < gates.size(); ++g) {
    gates[g].w_x_scale = scales[2 * g];
    gates[g].w_h_scale = scales[2 * g + 1];
  }
}
template <class Gates>
std::vector<double> weight_scales_of(const Gates& gates) {
  std::vector<double> scales;
  for (const auto& g : gates) {
    scales.push_back(g.w_x_scale);
    scales.push_back(g.w_h_scale);
  }
  return scales;
}

// The op kinds each version knows: 3 the LSTM, 4 the kinds around it, 5 and 6 the GRU too, 7
// the 16x8 kinds as well.
bool known_kind(int32_t kind, uint32_t version) {
  if (version == 3) return kind == QLSTM_OP_LSTM_S8;
  const int32_t end = version == 4 ? QLSTM_OP_GRU_S8 : version < 7 ? QLSTM_OP_LSTM_S16 : QLSTM_OP_KIND_COUNT;
  return kind >= 0 && kind < end;
}

bool s16_kind(int32_t kind) {
  return kind == QLSTM_OP_LSTM_S16 || kind == QLSTM_OP_FULLY_CONNECTED_S16 || kind == QLSTM_OP_REQUANTIZE ||
         kind == QLSTM_OP_SOFTMAX_S16;
}

// A version-3 or later op: its parameter record decoded by the runtime's description of its kind's block.
ProgramOp read_op(const fb::Op* o, uint32_t version, const std::string& origin, const std::string& where) {
  const int32_t kind = o->kind();
  const bool known = known_kind(kind, version);
  if (!known) bad(origin, "field '" + where + ".kind': " + std::to_string(kind) + " is not an op kind this qlstm knows");
  const AffineQuant in = read_quant(o->input(), origin, where + ".input");
  const AffineQuant out = read_quant(o->output(), origin, where + ".output");
  const std::string w = where + ".params";
  std::vector<uint32_t> aligned;
  ProgramOp op;
  op.kind = kind;
  auto rows_zero = [&](int32_t rows) {
    if (rows != 0) bad(origin, "field '" + w + ".rows': must be 0 in a model file");
  };
  auto s16_symmetric = [&]() {
    if (in.zero_point != 0) bad(origin, "field '" + where + ".input.zero_point': must be 0 for a 16x8 op");
    if (out.zero_point != 0) bad(origin, "field '" + where + ".output.zero_point': must be 0 for a 16x8 op");
  };
  // A recurrent op's dims hold the call's batch and time steps: 1 and 0 in a file.
  auto no_call_dims = [&](int32_t batch, int32_t time_steps) {
    if (batch != 1 || time_steps != 0) {
      bad(origin, "field '" + w + ".dims': batch must be 1 and time_steps 0 in a model file");
    }
  };
  try {
    switch (kind) {
      case QLSTM_OP_LSTM_S8: {
        auto visit = [](qlstm_lstm_s8_params& p, auto& r) { visit_lstm_s8_fields(p, r); };
        const qlstm_lstm_s8_params p =
            version == 3 ? decode_record<ShorterRecordReader, qlstm_lstm_s8_params>(o, aligned, origin, where, visit,
                                                                                    "output_steps")
                         : decode_record<RecordReader, qlstm_lstm_s8_params>(o, aligned, origin, where, visit);
        no_call_dims(p.dims.batch, p.dims.time_steps);
        op.lstm = DerivedLstm::from_kernel_params(p, in, out);
        set_weight_scales(op.lstm.gates, doubles(o->weight_scales()));
        break;
      }
      case QLSTM_OP_GRU_S8: {
        auto visit = [](qlstm_gru_s8_params& q, auto& r) { visit_gru_s8_fields(q, r); };
        const qlstm_gru_s8_params p =
            version == 5 ? decode_record<ShorterRecordReader, qlstm_gru_s8_params>(o, aligned, origin, where, visit,
                                                                                   "new_gate_zero_state_bias")
                         : decode_record<RecordReader, qlstm_gru_s8_params>(o, aligned, origin, where, visit);
        no_call_dims(p.dims.batch, p.dims.time_steps);
        op.gru = DerivedGru::from_kernel_params(p, in, out);
        if (version == 5) {  // a zero state's accumulator, as version 6 stores it
          op.gru.new_gate_zero_state_bias =
              zero_state_bias(op.gru.gates[QLSTM_GRU_GATE_NEW], p.dims.hidden_size, out.zero_point);
        }
        set_weight_scales(op.gru.gates, doubles(o->weight_scales()));
        break;
      }
      case QLSTM_OP_FULLY_CONNECTED_S8: {
        const auto p = decode_record<RecordReader, qlstm_fc_s8_params>(
            o, aligned, origin, where, [](qlstm_fc_s8_params& q, RecordReader& r) { visit_fc_s8_fields(q, r); });
        rows_zero(p.rows);
        op.fc = DerivedFc::from_kernel_params(p, in, out, doubles(o->weight_scales()));
        op.fc.fused_activation = o->label() ? o->label()->str() : "";  // as the compiler named it
        break;
      }
      case QLSTM_OP_SOFTMAX_S8: {
        const auto p = decode_record<RecordReader, qlstm_softmax_s8_params>(
            o, aligned, origin, where, [](qlstm_softmax_s8_params& q, RecordReader& r) { visit_softmax_s8_fields(q, r); });
        rows_zero(p.rows);
        op.softmax = DerivedSoftmax::from_kernel_params(p, in);
        break;
      }
      case QLSTM_OP_TABLE_S8: {
        const auto p = decode_record<RecordReader, qlstm_table_s8_params>(
            o, aligned, origin, where, [](qlstm_table_s8_params& q, RecordReader& r) { visit_table_s8_fields(q, r); });
        rows_zero(p.rows);
        op.table = DerivedTable::from_kernel_params(p, in, out);
        if (o->label()) op.table.function = o->label()->str();
        break;
      }
      case QLSTM_OP_LSTM_S16: {
        // Both sides int16, symmetric: the block holds no zero point.
        s16_symmetric();
        const auto p = decode_record<RecordReader, qlstm_lstm_s16_params>(
            o, aligned, origin, where, [](qlstm_lstm_s16_params& q, RecordReader& r) { visit_lstm_s16_fields(q, r); });
        no_call_dims(p.dims.batch, p.dims.time_steps);
        op.lstm_s16 = DerivedLstmS16::from_kernel_params(p, in.scale, out.scale);
        set_weight_scales(op.lstm_s16.gates, doubles(o->weight_scales()));
        break;
      }
      case QLSTM_OP_FULLY_CONNECTED_S16: {
        s16_symmetric();
        const auto p = decode_record<RecordReader, qlstm_fc_s16_params>(
            o, aligned, origin, where, [](qlstm_fc_s16_params& q, RecordReader& r) { visit_fc_s16_op_fields(q, r); });
        rows_zero(p.rows);
        op.fc_s16 = DerivedFcS16::from_kernel_params(p, in.scale, out.scale);
        const std::vector<double> scales = doubles(o->weight_scales());
        if (!scales.empty()) op.fc_s16.weight_scale = scales.front();  // its one weight scale
        op.fc_s16.fused_activation = o->label() ? o->label()->str() : "";
        break;
      }
      case QLSTM_OP_REQUANTIZE: {
        const auto p = decode_record<RecordReader, qlstm_requantize_params>(
            o, aligned, origin, where,
            [](qlstm_requantize_params& q, RecordReader& r) { visit_requantize_fields(q, r); });
        rows_zero(p.rows);
        op.requantize = DerivedRequantize::from_kernel_params(p, in, out);
        break;
      }
      case QLSTM_OP_SOFTMAX_S16: {
        s16_symmetric();
        const auto p = decode_record<RecordReader, qlstm_softmax_s16_params>(
            o, aligned, origin, where,
            [](qlstm_softmax_s16_params& q, RecordReader& r) { visit_softmax_s16_fields(q, r); });
        rows_zero(p.rows);
        op.softmax_s16 = DerivedSoftmaxS16::from_kernel_params(p, in.scale);
        break;
      }
      case QLSTM_OP_SELECT_STEP: {
        const auto p = decode_record<RecordReader, qlstm_select_step_params>(
            o, aligned, origin, where,
            [](qlstm_select_step_params& q, RecordReader& r) { visit_select_step_fields(q, r); });
        op.select.step = p.step;
        op.select.row_size = p.row_size;
        break;
      }
      default: break;
    }
  } catch (const CompileError& e) {
    const std::string what = e.what();
    if (what.rfind(origin + ":", 0) == 0) throw;  // already names the file and the field
    bad(origin, "field '" + w + "': " + what);
  }
  op.input_buffer = o->input_buffer();
  op.output_buffer = o->output_buffer();
  op.output_offset = o->output_offset();
  if (o->initial_hidden()) op.initial_hidden.assign(o->initial_hidden()->begin(), o->initial_hidden()->end());
  if (o->initial_cell()) op.initial_cell.assign(o->initial_cell()->begin(), o->initial_cell()->end());
  return op;
}

// The record of op k's kind block, as the runtime's table holds it.
std::vector<uint8_t> op_record(const qlstm_op& o, size_t k) {
  std::vector<uint8_t> bytes;
  ByteSink sink{&bytes};
  RecordWriter<ByteSink> w(sink);
  switch (o.kind) {
    case QLSTM_OP_LSTM_S8: visit_lstm_s8_fields(o.lstm, w); break;
    case QLSTM_OP_FULLY_CONNECTED_S8: visit_fc_s8_fields(o.fc, w); break;
    case QLSTM_OP_SOFTMAX_S8: visit_softmax_s8_fields(o.softmax, w); break;
    case QLSTM_OP_TABLE_S8: visit_table_s8_fields(o.table, w); break;
    case QLSTM_OP_SELECT_STEP: visit_select_step_fields(o.select, w); break;
    case QLSTM_OP_GRU_S8: visit_gru_s8_fields(o.gru, w); break;
    case QLSTM_OP_LSTM_S16: visit_lstm_s16_fields(o.lstm_s16, w); break;
    case QLSTM_OP_FULLY_CONNECTED_S16: visit_fc_s16_op_fields(o.fc_s16, w); break;
    case QLSTM_OP_REQUANTIZE: visit_requantize_fields(o.requantize, w); break;
    case QLSTM_OP_SOFTMAX_S16: visit_softmax_s16_fields(o.softmax_s16, w); break;
    default:
      throw CompileError("serialize_model: field 'ops[" + std::to_string(k) + "].kind': " + std::to_string(o.kind) +
                         " is not an op kind this qlstm knows");
  }
  return bytes;
}

// Throws naming op k's array whose size is not what the record's dims say (the record takes each
// array's length from them).
void check_array(size_t k, const std::string& name, size_t have, size_t want) {
  if (have != want) {
    throw CompileError("serialize_model: field 'ops[" + std::to_string(k) + "]." + name + "': expected " +
                       std::to_string(want) + " values, has " + std::to_string(have));
  }
}

// A recurrent op's gate arrays; `block` names it ("lstm", "gru"), gate_label each gate.
template <class Gates, class Label>
void check_gate_arrays(size_t k, const char* block, const Gates& gates, int32_t input_size, int32_t hidden_size,
                       Label gate_label) {
  const size_t I = static_cast<size_t>(std::max(input_size, 0)), H = static_cast<size_t>(std::max(hidden_size, 0));
  for (size_t g = 0; g < gates.size(); ++g) {
    const auto& dg = gates[g];  // a DerivedGate or a DerivedGateS16
    const std::string at = std::string(block) + ".gates[" + gate_label(static_cast<int32_t>(g)) + "].";
    check_array(k, at + "input_weights", dg.w_x.size(), H * I);
    check_array(k, at + "input_effective_bias", dg.input_effective_bias.size(), H);
    check_array(k, at + "hidden_weights", dg.w_h.size(), H * H);
    check_array(k, at + "hidden_effective_bias", dg.hidden_effective_bias.size(), H);
  }
}

void check_arrays(size_t k, const ProgramOp& op) {
  if (op.kind == QLSTM_OP_LSTM_S8) {
    check_gate_arrays(k, "lstm", op.lstm.gates, op.lstm.input_size, op.lstm.hidden_size, gate_name);
  } else if (op.kind == QLSTM_OP_GRU_S8) {
    check_gate_arrays(k, "gru", op.gru.gates, op.gru.input_size, op.gru.hidden_size, gru_gate_name);
    check_array(k, "gru.new_gate_zero_state_bias", op.gru.new_gate_zero_state_bias.size(),
                static_cast<size_t>(std::max(op.gru.hidden_size, 0)));
  } else if (op.kind == QLSTM_OP_FULLY_CONNECTED_S8) {
    const size_t I = static_cast<size_t>(std::max(op.fc.input_size, 0)), O = static_cast<size_t>(std::max(op.fc.output_size, 0));
    const size_t requants = op.fc.per_channel ? O : 1;
    check_array(k, "fc.weights", op.fc.weights.size(), O * I);
    check_array(k, "fc.effective_bias", op.fc.effective_bias.size(), O);
    check_array(k, "fc.multipliers", op.fc.multipliers.size(), requants);
    check_array(k, "fc.shifts", op.fc.shifts.size(), requants);
  } else if (op.kind == QLSTM_OP_TABLE_S8) {
    check_array(k, "table.table", op.table.table.size(), QLSTM_TABLE_S8_ENTRIES);
  } else if (op.kind == QLSTM_OP_LSTM_S16) {
    check_gate_arrays(k, "lstm_s16", op.lstm_s16.gates, op.lstm_s16.input_size, op.lstm_s16.hidden_size, gate_name);
  } else if (op.kind == QLSTM_OP_FULLY_CONNECTED_S16) {
    const size_t I = static_cast<size_t>(std::max(op.fc_s16.input_size, 0));
    const size_t O = static_cast<size_t>(std::max(op.fc_s16.output_size, 0));
    check_array(k, "fc_s16.weights", op.fc_s16.weights.size(), O * I);
    check_array(k, "fc_s16.bias", op.fc_s16.bias.size(), O);
  }
}

fb::StateSource to_fb(StateSource s) {
  return s == StateSource::kConstant ? fb::StateSource_Constant
         : s == StateSource::kInput  ? fb::StateSource_Input
                                     : fb::StateSource_Zero;
}

}  // namespace

uint32_t model_format_version(const CompiledModel& m) {
  bool typed = !m.all_s8();
  for (const ProgramOp& op : m.ops) typed = typed || s16_kind(op.kind);
  return typed ? kModelFormatVersion : kModelFormatVersionS8;
}

std::string serialize_model(const CompiledModel& m) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const ProgramBuffer& buf : m.buffers) {
    const fb::AffineQuant q(buf.quant.scale, buf.quant.zero_point);
    buffers.push_back(fb::CreateBuffer(b, buf.width, &q, buf.steps, buf.type));
  }
  // Every op's parameter block as the runtime's record (batch 1, no time steps: the call's).
  const std::vector<qlstm_op> kernel_ops =
      runtime_program(m, 1, 0, m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor).ops;
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const ProgramOp& op = m.ops[k];
    check_arrays(k, op);
    const std::vector<uint8_t> record = op_record(kernel_ops[k], k);
    std::vector<double> weight_scales;
    std::string label;
    // The quantization the op was derived for (the loader checks it against its buffers'); a
    // step selection has none of its own: its buffer's.
    AffineQuant qi, qo;
    switch (op.kind) {
      case QLSTM_OP_LSTM_S8:
        qi = op.lstm.input, qo = op.lstm.output;
        weight_scales = weight_scales_of(op.lstm.gates);
        break;
      case QLSTM_OP_GRU_S8:
        qi = op.gru.input, qo = op.gru.output;
        weight_scales = weight_scales_of(op.gru.gates);
        break;
      case QLSTM_OP_FULLY_CONNECTED_S8:
        qi = op.fc.input, qo = op.fc.output;
        weight_scales = op.fc.weight_scales;
        label = op.fc.fused_activation;
        break;
      case QLSTM_OP_SOFTMAX_S8: qi = op.softmax.input, qo = softmax_output_quant(); break;
      case QLSTM_OP_LSTM_S16:
        qi = op.recurrent_input(), qo = op.recurrent_output();
        weight_scales = weight_scales_of(op.lstm_s16.gates);
        break;
      case QLSTM_OP_FULLY_CONNECTED_S16:
        qi = {op.fc_s16.input_scale, 0}, qo = {op.fc_s16.output_scale, 0};
        weight_scales = {op.fc_s16.weight_scale};
        label = op.fc_s16.fused_activation;
        break;
      case QLSTM_OP_REQUANTIZE: qi = op.requantize.input, qo = op.requantize.output; break;
      case QLSTM_OP_SOFTMAX_S16: qi = {op.softmax_s16.input_scale, 0}, qo = softmax_s16_output_quant(); break;
      case QLSTM_OP_TABLE_S8:
        qi = op.table.input, qo = op.table.output;
        label = op.table.function;
        break;
      default:
        if (op.input_buffer >= 0 && static_cast<size_t>(op.input_buffer) < m.buffers.size()) {
          qi = qo = m.buffers[static_cast<size_t>(op.input_buffer)].quant;
        }
    }
    const fb::AffineQuant in(qi.scale, qi.zero_point), out(qo.scale, qo.zero_point);
    ops.push_back(fb::CreateOpDirect(b, kernel_ops[k].kind, &record, op.input_buffer, op.output_buffer,
                                     op.output_offset, op.initial_hidden.empty() ? nullptr : &op.initial_hidden,
                                     op.initial_cell.empty() ? nullptr : &op.initial_cell, &in, &out,
                                     &weight_scales, label.empty() ? nullptr : label.c_str()));
  }
  const fb::AffineQuant in(m.input_quant().scale, m.input_quant().zero_point),
      out(m.output_quant().scale, m.output_quant().zero_point);
  b.Finish(fb::CreateModelDirect(b, m.name.c_str(), m.batch_first, &in, &out, 0, m.report_json.c_str(),
                                 m.directions, &buffers, nullptr, to_fb(m.initial_hidden), to_fb(m.initial_cell),
                                 m.hidden_output, m.cell_output, &ops));
  return seal_model(std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()),
                    model_format_version(m));
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
    ops[0].lstm = read_lstm(m->lstm(), in, out, origin, "lstm");
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
      op.lstm = read_lstm(l, read_quant(l->input(), origin, w + ".lstm.input"),
                          read_quant(l->output(), origin, w + ".lstm.output"), origin, w + ".lstm");
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
