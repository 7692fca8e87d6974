#include "qlstm/compiler/artifacts/emit_cpp.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <cstring>
#include <sstream>

#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"
#include "qlstm/params_codec.h"

namespace qlstm {
namespace compiler {
namespace {

template <typename T>
void emit_array(std::ostringstream& s, const char* type, const std::string& name, const std::vector<T>& v) {
  s << "static const " << type << " " << name << "[" << v.size() << "] = {";
  for (size_t k = 0; k < v.size(); ++k) {
    if (k % 16 == 0) s << "\n   ";
    s << " " << static_cast<int64_t>(v[k]) << ",";
  }
  s << "\n};\n";
}

template <typename T> const char* c_type();
template <> const char* c_type<int8_t>() { return "int8_t"; }
template <> const char* c_type<int16_t>() { return "int16_t"; }
template <> const char* c_type<int32_t>() { return "int32_t"; }
template <> const char* c_type<int64_t>() { return "int64_t"; }

// "kOp0_" + "gates[forget].input_weights" -> "kOp0_gates_forget_input_weights".
std::string array_name(const std::string& prefix, const char* path) {
  std::string out = prefix;
  for (const char* c = path; *c != '\0'; ++c) {
    const bool alnum = std::isalnum(static_cast<unsigned char>(*c)) != 0;
    if (alnum) out += *c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// Each kind by its enum name, for the emitted initializer.
const char* kind_symbol(int32_t kind) {
  const OpKind* k = find_op_kind(kind);
  return k ? k->symbol : nullptr;
}

// Each kind's handler in the runtime (program_s8.h): what the emitted kind table lists.
const char* kind_handler(int32_t kind) {
  const OpKind* k = find_op_kind(kind);
  if (k == nullptr) throw CompileError("emit: no handler for op kind " + std::to_string(kind));
  return k->handler;
}

// Each element type by its enum name.
const char* element_symbol(int32_t type) {
  switch (type) {
    case QLSTM_ELEMENT_S8: return "QLSTM_ELEMENT_S8";
    case QLSTM_ELEMENT_S16: return "QLSTM_ELEMENT_S16";
    case QLSTM_ELEMENT_S32: return "QLSTM_ELEMENT_S32";
    default: return nullptr;
  }
}

// A buffer's elements in C, and in words (the comments).
const char* element_c_type(int32_t type) {
  return type == QLSTM_ELEMENT_S32 ? "int32_t" : type == QLSTM_ELEMENT_S16 ? "int16_t" : "int8_t";
}
const char* element_word(int32_t type) {
  return type == QLSTM_ELEMENT_S32 ? "int32 token ids" : type == QLSTM_ELEMENT_S16 ? "int16" : "int8";
}

// Visitors of qlstm::visit_op_fields / visit_block_fields (runtime/include/qlstm/params_codec.h):
// the arrays of a parameter block as static const arrays, then the block as a nested initializer
// naming them.
class ArrayDeclarations {
 public:
  ArrayDeclarations(std::ostringstream& s, std::string prefix) : s_(s), prefix_(std::move(prefix)) {}
  void open(const char*) {}
  void close() {}
  void i32(const char*, int32_t) {}
  template <class T>
  void array(const char* name, const T* data, int64_t count) {
    emit_array(s_, c_type<T>(), array_name(prefix_, name), std::vector<T>(data, data + count));
  }

 private:
  std::ostringstream& s_;
  std::string prefix_;
};

class Initializer {
 public:
  Initializer(std::ostringstream& s, std::string prefix, std::string indent)
      : s_(s), prefix_(std::move(prefix)), indent_(std::move(indent)) {}
  void open(const char* name) {
    // One gate per line.
    if (std::strncmp(name, "gates[", 6) == 0 && std::strchr(name, '.') == nullptr) {
      s_ << (first_ ? "" : ",") << "\n" << indent_;
    } else {
      separate();
    }
    s_ << "{";
    first_ = true;
  }
  void close() {
    s_ << "}";
    first_ = false;
  }
  void i32(const char* name, int32_t v) {
    separate();
    s_ << symbol(name, v);
  }
  template <class T>
  void array(const char* name, const T*, int64_t) {
    separate();
    s_ << array_name(prefix_, name);
  }

 private:
  void separate() {
    if (!first_) s_ << ", ";
    first_ = false;
  }
  // The enum fields by their names, the rest as numbers.
  static std::string symbol(const char* name, int32_t v) {
    const std::string n = name;
    auto ends = [&](const std::string& suffix) {
      return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (n == "kind" && kind_symbol(v) != nullptr) return kind_symbol(v);
    if (n == "output_steps" && (v == QLSTM_OUTPUT_ALL_STEPS || v == QLSTM_OUTPUT_FINAL || v == QLSTM_OUTPUT_FIRST)) {
      return v == QLSTM_OUTPUT_FINAL ? "QLSTM_OUTPUT_FINAL" : v == QLSTM_OUTPUT_FIRST ? "QLSTM_OUTPUT_FIRST"
                                                                                      : "QLSTM_OUTPUT_ALL_STEPS";
    }
    if (n == "layout" && (v == QLSTM_LAYOUT_BATCH_MAJOR || v == QLSTM_LAYOUT_TIME_MAJOR)) {
      return v == QLSTM_LAYOUT_TIME_MAJOR ? "QLSTM_LAYOUT_TIME_MAJOR" : "QLSTM_LAYOUT_BATCH_MAJOR";
    }
    if (ends(".activation") && (v == QLSTM_ACTIVATION_SIGMOID || v == QLSTM_ACTIVATION_TANH ||
                                v == QLSTM_ACTIVATION_HARD_SIGMOID)) {
      return v == QLSTM_ACTIVATION_TANH           ? "QLSTM_ACTIVATION_TANH"
             : v == QLSTM_ACTIVATION_HARD_SIGMOID ? "QLSTM_ACTIVATION_HARD_SIGMOID"
                                                  : "QLSTM_ACTIVATION_SIGMOID";
    }
    if (n == "time_direction" && (v == QLSTM_TIME_FORWARD || v == QLSTM_TIME_REVERSE)) {
      return v == QLSTM_TIME_REVERSE ? "QLSTM_TIME_REVERSE" : "QLSTM_TIME_FORWARD";
    }
    if ((n == "input_type" || n == "output_type") && element_symbol(v) != nullptr) return element_symbol(v);
    return std::to_string(v);
  }
  std::ostringstream& s_;
  std::string prefix_, indent_;
  bool first_ = true;
};

EmittedSource emit_program(const CompiledModel& m, const std::string& name, int32_t batch,
                           int32_t max_time_steps, const std::string& origin);

}  // namespace

std::string describe_op(const qlstm_op& o, const ProgramOp& op) {
  const OpKind* k = find_op_kind(o.kind);
  return k ? k->describe(o, op) : "op of kind " + std::to_string(o.kind);
}

std::string c_identifier(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

EmittedSource emit_cpp(const CompiledModel& m, const std::string& name, int32_t batch,
                       int32_t max_time_steps, const std::string& origin) {
  if (name != c_identifier(name)) throw CompileError("emit: '" + name + "' is not a C identifier");
  if (batch < 1) throw CompileError("emit: --batch must be >= 1");
  return emit_program(m, name, batch, max_time_steps, origin);
}

namespace {

// What an op's initial_cell array holds in the source (its kind's layout of its constant).
std::vector<int16_t> cell_constant(const ProgramOp& op, int32_t batch) {
  return recurrent_state(op).emitted_cell_rows(op, batch);
}

// In bytes: an int16 buffer's elements times two.
std::string bytes_of(int32_t type) {
  return type == QLSTM_ELEMENT_S32   ? std::string(" * sizeof(int32_t)")
         : type == QLSTM_ELEMENT_S16 ? std::string(" * sizeof(int16_t)")
                                     : std::string();
}

// NAME_model.h and NAME_model.cc of a program, part by part: what every part needs is decided once
// (prepare), then each part writes its lines.
class ProgramEmitter {
 public:
  ProgramEmitter(const CompiledModel& model, const std::string& model_name, int32_t firmware_batch,
                 int32_t max_steps, const std::string& from)
      : m(model), name(model_name), batch(firmware_batch), max_time_steps(max_steps), origin(from) {}
  void prepare();
  EmittedSource emit() {
    std::ostringstream h, s;
    header_defines(h);
    header_edges(h);
    header_api(h);
    source_data(s);
    source_table(s);
    source_kinds(s);
    source_state(s);
    source_entry_points(s);
    return {h.str(), s.str()};
  }

 private:
  void header_defines(std::ostringstream& h) const;
  void header_state_formats(std::ostringstream& h) const;
  void header_edges(std::ostringstream& h) const;
  void header_api(std::ostringstream& h) const;
  void source_data(std::ostringstream& s) const;
  void source_table(std::ostringstream& s) const;
  void source_kinds(std::ostringstream& s) const;
  void source_state(std::ostringstream& s) const;
  void source_entry_points(std::ostringstream& s) const;

  const CompiledModel& m;
  const std::string& name;
  const int32_t batch, max_time_steps;
  const std::string& origin;
  RuntimeProgram rt;
  std::vector<qlstm_op> ops;
  int32_t n_ops = 0, n_buffers = 0;
  bool sequence_between_ops = false;
  std::string upper, layout;
  ProgramMemory mem;
  size_t scratch = 0, max_cell = 0, state = 0;
  bool stateful = false, constant_state = false, can_stream = false, per_step = false, has_state = false;
  std::string no_stream;  // "": chunks give the output of one call
  std::vector<int32_t> lstm_ops;  // the recurrent ops (LSTM and GRU): the ones with state
  int32_t last_h = 0;  // its H (a 16x8 LSTM keeps 2H state values per row: not its size)
  const char* last_kind = "LSTM";
  std::string one_row;  // what a one-step output holds
  bool typed = false;   // a typed program (int16 buffers) says so; an int8 one's source stays as it was
  int32_t in_type = QLSTM_ELEMENT_S8, out_type = QLSTM_ELEMENT_S8;
  std::string in_t, out_t, in_word, out_word;
  size_t activation_bytes = 0;
  std::string per_call_output;
};

void ProgramEmitter::prepare() {
  const Layout layout_kind = m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor;
  // Every op's parameter block in the runtime's form (dims.time_steps and rows are set per call).
  rt = runtime_program(m, batch, 0, layout_kind);
  ops = rt.ops;
  n_ops = static_cast<int32_t>(ops.size()), n_buffers = static_cast<int32_t>(rt.widths.size());
  for (int32_t b = 1; b + 1 < n_buffers; ++b) {
    sequence_between_ops = sequence_between_ops || rt.steps[static_cast<size_t>(b)] == QLSTM_BUFFER_EVERY_STEP;
  }
  if (sequence_between_ops && max_time_steps < 1) {
    throw CompileError("emit: the program keeps a whole sequence between two ops (a stacked LSTM or a per-step "
                       "layer after one), so it needs --max-time-steps (the activation buffers are static)");
  }
  // A learned initial state of one row per batch row is emitted as it is: the firmware's batch is
  // the model's.
  const int32_t state_batch = m.constant_state_batch();
  if (state_batch > 0 && batch != state_batch) {
    throw CompileError("emit: the model's initial state is learned per batch row (" + std::to_string(state_batch) +
                       " rows), so its firmware runs batches of " + std::to_string(state_batch) + ": give --batch " +
                       std::to_string(state_batch));
  }
  upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  layout = m.batch_first ? "batch-major [B][T][F]" : "time-major [T][B][F]";
  mem = program_memory(m, batch, sequence_between_ops ? max_time_steps : 1);
  scratch = std::max<size_t>(mem.scratch_bytes, 1), max_cell = std::max<size_t>(mem.cell_values, 1);
  state = rt.state_values;
  stateful = m.initial_hidden != StateSource::kZero || m.initial_cell != StateSource::kZero || m.hidden_output ||
             m.cell_output;
  constant_state = m.initial_hidden == StateSource::kConstant || m.initial_cell == StateSource::kConstant;
  no_stream = m.streaming_refusal();
  can_stream = no_stream.empty();
  per_step = !m.output_is_one_step();
  for (int32_t k = 0; k < n_ops; ++k) {
    if (qlstm_op_state_size(&ops[static_cast<size_t>(k)]) > 0) lstm_ops.push_back(k);
  }
  has_state = !lstm_ops.empty() && (stateful || constant_state || can_stream);
  last_h = lstm_ops.empty() ? 0 : m.ops[static_cast<size_t>(lstm_ops.back())].hidden_size();
  if (!lstm_ops.empty()) last_kind = recurrent_state(m.ops[static_cast<size_t>(lstm_ops.back())]).cell;
  // The head on a selected step or on the last recurrent op's final state.
  one_row = std::string("the ") + last_kind + "'s final hidden state";
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const ProgramOp& op = m.ops[k];
    int32_t step = 0;
    std::string read = pooled_over_time(op);
    if (selected_step(op, &step)) {
      const int32_t count = m.op_rows(k);
      if (count > 1) {
        read = step == -count ? "the last " + std::to_string(count) + " time steps"
                              : std::to_string(count) + " time steps from step " + std::to_string(step);
      } else {
        read = step == -1 ? std::string("the last time step") : "time step " + std::to_string(step);
      }
    }
    // Reads of one sequence side by side (torch.cat((y.mean(1), y.max(1).values), 1)): each part named.
    if (!read.empty()) one_row = m.continues_row(k) ? one_row + ", then " + read : read;
    if (m.fixed_time_steps() > 0) {
      one_row = "a Linear over all " + std::to_string(m.fixed_time_steps()) + " time steps (calls of exactly that many)";
    }
  }
  typed = !m.all_s8();
  in_type = m.buffers.front().type, out_type = m.buffers.back().type;
  in_t = element_c_type(in_type), out_t = element_c_type(out_type);
  in_word = element_word(in_type), out_word = element_word(out_type);
  // Two areas in one array: an even size keeps the second int16-aligned too.
  activation_bytes = typed ? (mem.activation_bytes + 1) / 2 * 2 : mem.activation_bytes;
  per_call_output = per_step
                        ? upper + "_BATCH x T x " + upper + "_OUTPUT_SIZE " + out_word + ", a position per time step"
                        : upper + "_BATCH x " + upper + "_OUTPUT_SIZE " + out_word +
                              ", one position per batch row: the output for\n   " + one_row;
}

// The header's comment, its sizes, scales and the recurrent ops' state formats.
void ProgramEmitter::header_defines(std::ostringstream& h) const {
  h << "// GENERATED by qlstm compile from " << origin << " -- do not edit.\n"
    << "// A program of " << n_ops << " fused " << (typed ? "" : "int8 ") << "op" << (n_ops > 1 ? "s" : "")
    << (typed ? " over int8 and int16 buffers" : "") << ", input " << m.input_size()
    << " per step, output " << m.output_size() << (per_step ? " per step" : " per batch row") << ", batch " << batch
    << ", " << layout << ":\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    h << "//   op " << k << ": " << describe_op(ops[static_cast<size_t>(k)], m.ops[static_cast<size_t>(k)]) << "\n";
  }
  h << "#ifndef QLSTM_MODEL_" << upper << "_H_\n#define QLSTM_MODEL_" << upper << "_H_\n\n"
    << "#include \"qlstm/program_s8.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << upper << "_BATCH " << batch << "\n"
    << "#define " << upper << "_INPUT_SIZE " << m.input_size() << " /* " << in_word
    << " per input position (time step) */\n"
    << "#define " << upper << "_HIDDEN_SIZE " << last_h << " /* of the last " << last_kind << " */\n"
    << "#define " << upper << "_OUTPUT_SIZE " << m.output_size() << " /* " << out_word << " per output position */\n"
    << "#define " << upper << "_OUTPUT_PER_STEP " << (per_step ? 1 : 0)
    << " /* 1: an output position per time step; 0: one per batch row */\n";
  if (m.output_rows() > 1) {
    h << "#define " << upper << "_OUTPUT_ROWS " << m.output_rows() << " /* " << one_row << " per output position, "
      << m.output_size() / m.output_rows() << " values each, in the input's layout */\n";
  }
  h << "#define " << upper << "_INPUT_BYTES(time_steps) ((size_t)" << upper << "_BATCH * (size_t)(time_steps) * "
    << upper << "_INPUT_SIZE" << bytes_of(in_type) << ")\n"
    << "#define " << upper << "_OUTPUT_BYTES(time_steps) ((size_t)" << upper << "_BATCH * "
    << (per_step ? "(size_t)(time_steps) * " : "") << upper << "_OUTPUT_SIZE" << bytes_of(out_type) << ")\n"
    << "#define " << upper << "_TIME_MAJOR " << (m.batch_first ? 0 : 1) << "\n"
    << "#define " << upper << "_OPS " << n_ops << "\n"
    << "#define " << upper << "_STATE_SIZE " << (batch > 0 ? state / static_cast<size_t>(batch) : 0)
    << " /* per batch row: the state is [recurrent ops][BATCH][H] in op order, hidden int8 and cell int16 */\n";
  if (sequence_between_ops) {
    h << "#define " << upper << "_MAX_TIME_STEPS " << max_time_steps
      << " /* per call: the activations between ops are static */\n";
  }
  h << "#define " << upper << "_SCRATCH_BYTES " << scratch << "\n"
    << "#define " << upper << "_ACTIVATION_BYTES " << activation_bytes
    << " /* each of the two areas between ops (0: none) */\n"
    << std::setprecision(9)
    << "#define " << upper << "_INPUT_SCALE " << m.input_quant().scale << "f\n"
    << "#define " << upper << "_INPUT_ZERO_POINT " << m.input_quant().zero_point << "\n"
    << "#define " << upper << "_OUTPUT_SCALE " << m.output_quant().scale << "f\n"
    << "#define " << upper << "_OUTPUT_ZERO_POINT " << m.output_quant().zero_point << "\n";
  header_state_formats(h);
}

// Each recurrent op's state format, and whether streaming and the state entry points exist.
void ProgramEmitter::header_state_formats(std::ostringstream& h) const {
  for (int32_t k : lstm_ops) {
    const ProgramOp& rop = m.ops[static_cast<size_t>(k)];
    op_kind(rop.kind, "emit").state->header_defines(rop, upper + "_OP" + std::to_string(k), h);
  }
  h << "#define " << upper << "_CAN_STREAM " << (can_stream ? 1 : 0) << " /* " << name << "_reset and " << name
    << "_stream exist */\n#define " << upper << "_HAS_STATE_IO " << (stateful ? 1 : 0) << " /* " << name
    << "_initial_state and " << name << "_run_state exist */\n\n";
}

// Quantization at the model's edges.
void ProgramEmitter::header_edges(std::ostringstream& h) const {
  // Quantization at the model's edges, in single precision (no libm): rounding half to even as the
  // compiler's host run does, so a value the host quantizes exactly lands on the same integer.
  const bool in_s16 = in_type == QLSTM_ELEMENT_S16;
  // Beyond this bound every zero point saturates: bounding v keeps the conversion defined.
  const std::string bound = in_s16 ? "65536.0f" : "256.0f";
  const std::string lo = in_s16 ? "-32768" : "-128", hi = in_s16 ? "32767" : "127";
  if (in_type == QLSTM_ELEMENT_S32) {
    h << "/* The input is token ids, int32 as they are (INPUT_SCALE 1, INPUT_ZERO_POINT 0): an id outside the\n"
      << "   embedding's table makes " << name << "_run return QLSTM_ERROR_BAD_INDEX before any op writes. */\n";
  } else {
    h << "/* A float input value to the model's " << in_word << ": x / INPUT_SCALE rounded to nearest (ties to even)\n"
    << "   plus INPUT_ZERO_POINT, saturated to " << in_word << "; NaN gives the zero point. */\n"
    << "static inline " << in_t << " " << name << "_quantize_input(float x) {\n"
    << "  float v = x / " << upper << "_INPUT_SCALE;\n"
    << "  int32_t q;\n"
    << "  if (v != v) return (" << in_t << ")" << upper << "_INPUT_ZERO_POINT;\n"
    << "  /* Beyond +-" << (in_s16 ? "65536" : "256") << " every zero point saturates: bounding v keeps the conversion defined. */\n"
    << "  if (v < -" << bound << ") v = -" << bound << ";\n"
    << "  if (v > " << bound << ") v = " << bound << ";\n"
    << "  q = (int32_t)v; /* toward zero */\n"
    << "  if (v - (float)q > 0.5f || (v - (float)q == 0.5f && (q & 1) != 0)) ++q;\n"
    << "  if (v - (float)q < -0.5f || (v - (float)q == -0.5f && (q & 1) != 0)) --q;\n"
    << "  q += " << upper << "_INPUT_ZERO_POINT;\n"
    << "  return (" << in_t << ")(q < " << lo << " ? " << lo << " : q > " << hi << " ? " << hi << " : q);\n}\n";
  }
  h << "/* An " << out_word << " output value in float: OUTPUT_SCALE x (q - OUTPUT_ZERO_POINT). */\n"
    << "static inline float " << name << "_dequantize_output(" << out_t << " q) {\n"
    << "  return " << upper << "_OUTPUT_SCALE * (float)((int32_t)q - " << upper << "_OUTPUT_ZERO_POINT);\n}\n\n";
}

// The entry points' declarations.
void ProgramEmitter::header_api(std::ostringstream& h) const {
  h << "/* One call over `time_steps` steps" << (sequence_between_ops ? " (at most " + upper + "_MAX_TIME_STEPS)" : "")
    << " from the model's initial state" << (constant_state ? " (its constants)" : " (zero)") << ":\n   input "
    << upper << "_BATCH x T x " << upper << "_INPUT_SIZE " << in_word << " (" << upper
    << "_INPUT_BYTES(T) bytes),\n   output "
    << per_call_output << " (" << upper << "_OUTPUT_BYTES(T) bytes),\n   " << layout
    << ". Not reentrant. */\n"
    << "qlstm_status " << name << "_run(const " << in_t << "* input, " << out_t << "* output, int32_t time_steps);\n\n"
    << "/* The op table itself (in flash), for a caller that runs it with its own qlstm_program_context\n"
    << "   (sized by the defines above; qlstm_program_validate checks a context against the table). */\n"
    << "const qlstm_program* " << name << "_program(void);\n\n";
  if (stateful) {
    h << "/* The model's initial state into hidden / cell ([recurrent ops][BATCH][H] each). */\n"
      << "void " << name << "_initial_state(int8_t* hidden, int16_t* cell);\n"
      << "/* As " << name << "_run, from the state in hidden / cell (h0, c0: row k of recurrent op k in its\n"
      << "   quantization; a GRU's h0 in Q0.15 in cell), which receives the final state (h_n, c_n). */\n"
      << "qlstm_status " << name << "_run_state(const " << in_t << "* input, " << out_t
      << "* output, int32_t time_steps,\n"
      << "    int8_t* hidden, int16_t* cell);\n\n";
  }
  if (can_stream) {
    h << "/* Streaming with the model's own static state: " << name << "_reset starts a sequence from the\n"
      << "   initial state; each " << name << "_stream call continues it over `time_steps` more steps"
      << (sequence_between_ops ? " (at most\n   " + upper + "_MAX_TIME_STEPS per call)" : "") << ".\n"
      << (per_step ? "   Each call writes the output of its steps: chunks of any sizes give exactly the output of one " +
                         name + "_run.\n"
                   : "   Each call writes the output for the last step of its chunk (" + upper + "_BATCH x " + upper +
                         "_OUTPUT_SIZE):\n   after the last chunk, exactly what one " + name +
                         "_run over the whole sequence writes.\n")
      << "   The first " << name << "_stream call resets. Not reentrant. */\n"
      << "qlstm_status " << name << "_reset(void);\n"
      << "qlstm_status " << name << "_stream(const " << in_t << "* input, " << out_t
      << "* output, int32_t time_steps);\n\n";
  } else {
    h << "/* No " << name << "_stream: " << no_stream << ". */\n\n";
  }
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
}

// The source's arrays (each op's parameters, constant states) and static memory.
void ProgramEmitter::source_data(std::ostringstream& s) const {
  s << "// GENERATED by qlstm compile from " << origin << " -- do not edit.\n"
    << "#include \"" << name << "_model.h\"\n\nnamespace {\n\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    const ProgramOp& op = m.ops[static_cast<size_t>(k)];
    const std::string prefix = "kOp" + std::to_string(k) + "_";
    ArrayDeclarations decl(s, prefix);
    visit_op_fields(ops[static_cast<size_t>(k)], decl);
    if (!op.recurrent()) continue;
    if (!op.initial_hidden.empty()) emit_array(s, c_type<int8_t>(), prefix + "initial_hidden", op.initial_hidden);
    if (!op.initial_cell.empty()) emit_array(s, c_type<int16_t>(), prefix + "initial_cell", cell_constant(op, batch));
  }
  s << "\nalignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char g_scratch[" << upper << "_SCRATCH_BYTES];\n"
    << "int16_t g_cell[" << max_cell << "];  // the cell of a stateless LSTM op\n";
  if (mem.activation_bytes > 0) {
    s << "// The buffers between the input and the output: buffer b in area (b - 1) % 2.\n"
      << (typed ? "alignas(int16_t) " : "") << "int8_t g_activations[2][" << upper << "_ACTIVATION_BYTES];"
      << (sequence_between_ops ? "  // a call longer than " + upper + "_MAX_TIME_STEPS: QLSTM_ERROR_SCRATCH_TOO_SMALL" : "")
      << "\n";
  }
  if (constant_state) s << "int8_t g_hidden[" << state << "];\nint16_t g_cell_state[" << state << "];\n";
  if (can_stream) {
    s << "int8_t g_stream_hidden[" << state << "];\nint16_t g_stream_cell[" << state << "];\n"
      << "bool g_stream_started = false;\n";
  }
}

void ProgramEmitter::source_table(std::ostringstream& s) const {
  // The program as data, in flash: each op's parameter block, then one qlstm_op per op pointing to
  // it (its kind, its block, its buffers), run by the runtime.
  s << "\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    const qlstm_op& o = ops[static_cast<size_t>(k)];
    const char* type = op_block_type(o.kind);
    if (type == nullptr) throw CompileError("emit: no parameter block for op kind " + std::to_string(o.kind));
    const std::string prefix = "kOp" + std::to_string(k) + "_";
    s << "// op " << k << ": " << describe_op(o, m.ops[static_cast<size_t>(k)]) << "\nconst " << type << " " << prefix
      << "params = ";
    Initializer init(s, prefix, "  ");
    visit_block_fields(o, init);
    s << ";\n";
  }
  s << "const qlstm_op kOps[" << upper << "_OPS] = {\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    const qlstm_op& o = ops[static_cast<size_t>(k)];
    s << "  {" << kind_symbol(o.kind) << ", &kOp" << k << "_params, " << o.input_buffer << ", " << o.output_buffer << ", "
      << o.output_offset << ", " << o.state_offset << ", " << o.second_input_buffer << "},\n";
  }
  s << "};\nconst int32_t kBufferWidths[" << n_buffers << "] = {";
  for (int32_t b = 0; b < n_buffers; ++b) s << (b ? ", " : "") << rt.widths[static_cast<size_t>(b)];
  s << "};\nconst int32_t kBufferSteps[" << n_buffers << "] = {";
  for (int32_t b = 0; b < n_buffers; ++b) {
    s << (b ? ", " : "")
      << (rt.steps[static_cast<size_t>(b)] == QLSTM_BUFFER_ONE_STEP ? "QLSTM_BUFFER_ONE_STEP" : "QLSTM_BUFFER_EVERY_STEP");
  }
  if (typed) {
    s << "};\nconst int32_t kBufferTypes[" << n_buffers << "] = {";
    for (int32_t b = 0; b < n_buffers; ++b) {
      const int32_t type = rt.types[static_cast<size_t>(b)];
      s << (b ? ", " : "") << (element_symbol(type) ? element_symbol(type) : std::to_string(type).c_str());
    }
  }
  s << "};\nconst qlstm_program kProgram = {kOps, " << upper << "_OPS, " << n_buffers << ", kBufferWidths, " << state
    << ", kBufferSteps, " << upper << "_BATCH, "
    << (rt.layout == QLSTM_LAYOUT_TIME_MAJOR ? "QLSTM_LAYOUT_TIME_MAJOR" : "QLSTM_LAYOUT_BATCH_MAJOR")
    << (typed ? ", kBufferTypes};\n" : ", nullptr};  // every buffer int8\n");
}

void ProgramEmitter::source_kinds(std::ostringstream& s) const {
  // The kinds the program uses, in order of their first op: the runner links only their checks and
  // kernels.
  std::vector<int32_t> kinds;
  for (const qlstm_op& o : ops) {
    if (std::find(kinds.begin(), kinds.end(), o.kind) == kinds.end()) kinds.push_back(o.kind);
  }
  s << "// The kinds of op the table holds: a firmware links only their checks and kernels.\n"
    << "const qlstm_op_handler* const kKinds[" << kinds.size() << "] = {";
  for (size_t i = 0; i < kinds.size(); ++i) s << (i ? ", " : "") << "&" << kind_handler(kinds[i]);
  s << "};\n\n"
    << "// Every entry point runs the table through the runtime's program runner.\n"
    << "qlstm_status run_program(const " << in_t << "* input, " << out_t
    << "* output, int32_t time_steps, int8_t* hidden,\n"
    << "                         int16_t* cell) {\n"
    << "  qlstm_program_context ctx = {g_scratch, sizeof g_scratch, g_cell, {"
    << (mem.activation_bytes > 0 ? "g_activations[0], g_activations[1]}, sizeof g_activations[0]" : "nullptr, nullptr}, 0")
    << "};\n"
    << "  return qlstm_program_run_kinds(&kProgram, kKinds, " << kinds.size()
    << ", &ctx, input, output, time_steps, hidden, cell);\n}\n\n";
}

void ProgramEmitter::source_state(std::ostringstream& s) const {
  if (has_state) {
    s << "void initial_state(int8_t* hidden, int16_t* cell) {\n";
    for (int32_t k : lstm_ops) {
      const ProgramOp& op = m.ops[static_cast<size_t>(k)];
      const qlstm_op& o = ops[static_cast<size_t>(k)];
      const size_t rows = static_cast<size_t>(batch) * static_cast<size_t>(qlstm_op_state_size(&o));
      const std::string prefix = "kOp" + std::to_string(k) + "_";
      // A constant of H values repeats for every batch row; one of B x H gives each row its own.
      s << "  for (int32_t e = 0; e < " << rows << "; ++e) {\n"
        << "    hidden[" << o.state_offset << " + e] = "
        << (op.initial_hidden.empty() ? std::to_string(op.recurrent_output().zero_point)
                                      : prefix + "initial_hidden[e % " + std::to_string(op.initial_hidden.size()) + "]")
        << ";\n    cell[" << o.state_offset << " + e] = "
        << (op.initial_cell.empty() ? std::string("0")
                                    : prefix + "initial_cell[e % " + std::to_string(cell_constant(op, batch).size()) + "]")
        << ";\n  }\n";
    }
    s << "}\n\n";
  }
}

void ProgramEmitter::source_entry_points(std::ostringstream& s) const {
  s << "}  // namespace\n\n"
    << "extern \"C\" const qlstm_program* " << name << "_program(void) { return &kProgram; }\n\n"
    << "extern \"C\" qlstm_status " << name << "_run(const " << in_t << "* input, " << out_t
    << "* output, int32_t time_steps) {\n";
  if (constant_state) {
    s << "  initial_state(g_hidden, g_cell_state);\n"
      << "  return run_program(input, output, time_steps, g_hidden, g_cell_state);\n}\n";
  } else {
    s << "  return run_program(input, output, time_steps, nullptr, nullptr);\n}\n";
  }
  if (stateful) {
    s << "\nextern \"C\" void " << name << "_initial_state(int8_t* hidden, int16_t* cell) {\n"
      << "  initial_state(hidden, cell);\n}\n\n"
      << "extern \"C\" qlstm_status " << name << "_run_state(const " << in_t << "* input, " << out_t
      << "* output, int32_t time_steps,\n"
      << "    int8_t* hidden, int16_t* cell) {\n"
      << "  if (hidden == nullptr || cell == nullptr) return QLSTM_ERROR_NULL_POINTER;\n"
      << "  return run_program(input, output, time_steps, hidden, cell);\n}\n";
  }
  if (can_stream) {
    s << "\nextern \"C\" qlstm_status " << name << "_reset(void) {\n"
      << "  initial_state(g_stream_hidden, g_stream_cell);\n  g_stream_started = true;\n  return QLSTM_OK;\n}\n\n"
      << "extern \"C\" qlstm_status " << name << "_stream(const " << in_t << "* input, " << out_t
      << "* output, int32_t time_steps) {\n"
      << "  if (!g_stream_started) " << name << "_reset();\n"
      << "  return run_program(input, output, time_steps, g_stream_hidden, g_stream_cell);\n}\n";
  }
}

EmittedSource emit_program(const CompiledModel& m, const std::string& name, int32_t batch,
                           int32_t max_time_steps, const std::string& origin) {
  ProgramEmitter e(m, name, batch, max_time_steps, origin);
  e.prepare();
  return e.emit();
}


}  // namespace

}  // namespace compiler
}  // namespace qlstm
