#include "qlstm/compiler/emit_cpp.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <cstring>
#include <sstream>

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

// Visitors of qlstm::visit_lstm_s8_fields (runtime/include/qlstm/params_codec.h): the arrays of a
// parameter block as static const arrays, then the block as a nested initializer naming them.
class ArrayDeclarations {
 public:
  ArrayDeclarations(std::ostringstream& s, std::string prefix) : s_(s), prefix_(std::move(prefix)) {}
  void open(const char*) {}
  void close() {}
  void unused(const char*) {}
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
  void unused(const char*) {
    separate();
    s_ << "{}";
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
    if (n == "kind" && v == QLSTM_OP_LSTM_S8) return "QLSTM_OP_LSTM_S8";
    if (n == "layout" && (v == QLSTM_LAYOUT_BATCH_MAJOR || v == QLSTM_LAYOUT_TIME_MAJOR)) {
      return v == QLSTM_LAYOUT_TIME_MAJOR ? "QLSTM_LAYOUT_TIME_MAJOR" : "QLSTM_LAYOUT_BATCH_MAJOR";
    }
    if (ends(".activation") && (v == QLSTM_ACTIVATION_SIGMOID || v == QLSTM_ACTIVATION_TANH)) {
      return v == QLSTM_ACTIVATION_TANH ? "QLSTM_ACTIVATION_TANH" : "QLSTM_ACTIVATION_SIGMOID";
    }
    if (n == "time_direction" && (v == QLSTM_TIME_FORWARD || v == QLSTM_TIME_REVERSE)) {
      return v == QLSTM_TIME_REVERSE ? "QLSTM_TIME_REVERSE" : "QLSTM_TIME_FORWARD";
    }
    return std::to_string(v);
  }
  std::ostringstream& s_;
  std::string prefix_, indent_;
  bool first_ = true;
};

EmittedSource emit_program(const CompiledModel& m, const std::string& name, int32_t batch,
                           int32_t max_time_steps, const std::string& origin);

}  // namespace

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

EmittedSource emit_program(const CompiledModel& m, const std::string& name, int32_t batch,
                           int32_t max_time_steps, const std::string& origin) {
  const int32_t L = m.layers(), D = m.directions, n_ops = static_cast<int32_t>(m.ops.size());
  if (L > 1 && max_time_steps < 1) {
    throw CompileError("emit: a stacked model needs --max-time-steps (the activation buffers between layers "
                       "hold a whole sequence)");
  }
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string layout = m.batch_first ? "batch-major [B][T][F]" : "time-major [T][B][F]";
  const ProgramMemory mem = program_memory(m, batch, max_time_steps);
  const size_t scratch = mem.scratch_bytes, max_cell = mem.cell_values, state = mem.state_values;
  const bool stateful = m.initial_hidden != StateSource::kZero || m.initial_cell != StateSource::kZero ||
                        m.hidden_output || m.cell_output;
  const bool constant_state = m.initial_hidden == StateSource::kConstant || m.initial_cell == StateSource::kConstant;
  const bool streamable = m.all_forward();
  const std::vector<int32_t> hs = m.hidden_sizes();

  std::ostringstream h;
  h << "// GENERATED by qlstm compile from " << origin << " -- do not edit.\n"
    << "// A program of " << n_ops << " fused int8 LSTM ops: " << L << " layer" << (L > 1 ? "s" : "")
    << (D == 2 ? ", bidirectional" : "") << ", input " << m.input_size() << ", output " << m.output_size()
    << ", batch " << batch << ", " << layout << ".\n"
    << "#ifndef QLSTM_MODEL_" << upper << "_H_\n#define QLSTM_MODEL_" << upper << "_H_\n\n"
    << "#include \"qlstm/program_s8.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << upper << "_BATCH " << batch << "\n"
    << "#define " << upper << "_INPUT_SIZE " << m.input_size() << "\n"
    << "#define " << upper << "_HIDDEN_SIZE " << m.ops.back().lstm.hidden_size << " /* of the last layer */\n"
    << "#define " << upper << "_OUTPUT_SIZE " << m.output_size() << " /* int8 per output position"
    << (D == 2 ? ": [forward H | reverse H]" : "") << " */\n"
    << "#define " << upper << "_TIME_MAJOR " << (m.batch_first ? 0 : 1) << "\n"
    << "#define " << upper << "_OPS " << n_ops << " /* layer-major, forward before reverse */\n"
    << "#define " << upper << "_STATE_SIZE " << m.state_size()
    << " /* per batch row: the state is [OPS][BATCH][H], hidden int8 and cell int16 */\n";
  if (L > 1) {
    h << "#define " << upper << "_MAX_TIME_STEPS " << max_time_steps
      << " /* per call: the activations between layers are static */\n";
  }
  h << "#define " << upper << "_SCRATCH_BYTES " << scratch << "\n"
    << std::setprecision(9)
    << "#define " << upper << "_INPUT_SCALE " << m.input_quant().scale << "f\n"
    << "#define " << upper << "_INPUT_ZERO_POINT " << m.input_quant().zero_point << "\n"
    << "#define " << upper << "_OUTPUT_SCALE " << m.output_quant().scale << "f\n"
    << "#define " << upper << "_OUTPUT_ZERO_POINT " << m.output_quant().zero_point << "\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    const DerivedLstm& d = m.ops[static_cast<size_t>(k)].lstm;
    const std::string op = upper + "_OP" + std::to_string(k);
    h << "#define " << op << "_HIDDEN_SCALE " << d.output.scale << "f /* its state rows: h, and c at 2^P */\n"
      << "#define " << op << "_HIDDEN_ZERO_POINT " << d.output.zero_point << "\n"
      << "#define " << op << "_CELL_SCALE_POWER " << d.cell.power << "\n";
  }
  h << "#define " << upper << "_CAN_STREAM " << (streamable ? 1 : 0) << " /* " << name << "_reset and " << name
    << "_stream exist */\n#define " << upper << "_HAS_STATE_IO " << (stateful ? 1 : 0) << " /* " << name
    << "_initial_state and " << name << "_run_state exist */\n";
  h << "\n/* One call over `time_steps` steps" << (L > 1 ? " (at most " + upper + "_MAX_TIME_STEPS)" : "")
    << " from the model's initial state" << (constant_state ? " (its constants)" : " (zero)")
    << ": input " << upper << "_BATCH x T x " << upper << "_INPUT_SIZE int8,\n   output " << upper
    << "_BATCH x T x " << upper << "_OUTPUT_SIZE int8, both " << layout << ". Not reentrant. */\n"
    << "qlstm_status " << name << "_run(const int8_t* input, int8_t* output, int32_t time_steps);\n\n"
    << "/* The op table itself (in flash), for a caller that runs it with its own qlstm_program_context\n"
    << "   (sized by the defines above; qlstm_program_validate checks a context against the table). */\n"
    << "const qlstm_program* " << name << "_program(void);\n\n";
  if (stateful) {
    h << "/* The model's initial state into hidden / cell ([OPS][BATCH][H] each). */\n"
      << "void " << name << "_initial_state(int8_t* hidden, int16_t* cell);\n"
      << "/* As " << name << "_run, from the state in hidden / cell (h0, c0: row k of op k in op k's\n"
      << "   quantization), which receives the final state (h_n, c_n). */\n"
      << "qlstm_status " << name << "_run_state(const int8_t* input, int8_t* output, int32_t time_steps,\n"
      << "    int8_t* hidden, int16_t* cell);\n\n";
  }
  if (streamable) {
    h << "/* Streaming with the model's own static state: " << name << "_reset starts a sequence from the\n"
      << "   initial state; each " << name << "_stream call continues it over `time_steps` more steps"
      << (L > 1 ? " (at most\n   " + upper + "_MAX_TIME_STEPS per call)" : "") << ". Chunks of any sizes give exactly the output of one " << name
      << "_run.\n   The first " << name << "_stream call resets. Not reentrant. */\n"
      << "qlstm_status " << name << "_reset(void);\n"
      << "qlstm_status " << name << "_stream(const int8_t* input, int8_t* output, int32_t time_steps);\n\n";
  } else {
    h << "/* No " << name << "_stream: a reverse LSTM starts from the last time step, so it needs the whole\n"
      << "   sequence in one call. */\n\n";
  }
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";

  std::ostringstream s;
  s << "// GENERATED by qlstm compile from " << origin << " -- do not edit.\n"
    << "#include \"" << name << "_model.h\"\n\nnamespace {\n\n";
  // Every op's parameter block in the runtime's form (dims.time_steps is set per call).
  const RuntimeProgram rt = runtime_program(m, batch, 0, m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor);
  const std::vector<qlstm_op>& ops = rt.ops;
  for (int32_t k = 0; k < n_ops; ++k) {
    const ProgramOp& op = m.ops[static_cast<size_t>(k)];
    const std::string prefix = "kOp" + std::to_string(k) + "_";
    ArrayDeclarations decl(s, prefix);
    visit_lstm_s8_fields(ops[static_cast<size_t>(k)].lstm, decl);
    if (!op.initial_hidden.empty()) emit_array(s, c_type<int8_t>(), prefix + "initial_hidden", op.initial_hidden);
    if (!op.initial_cell.empty()) emit_array(s, c_type<int16_t>(), prefix + "initial_cell", op.initial_cell);
  }
  s << "\nalignas(QLSTM_SCRATCH_ALIGNMENT) unsigned char g_scratch[" << upper << "_SCRATCH_BYTES];\n"
    << "int16_t g_cell[" << max_cell << "];  // the cell of a stateless op\n";
  if (L > 1) {
    s << "// Layer l's output is buffer (l % 2): a layer reads the one its predecessor wrote.\n"
      << "int8_t g_activations[2][" << mem.activation_bytes << "];  // " << upper << "_BATCH x " << upper
      << "_MAX_TIME_STEPS x the widest inner buffer;"
      << " a longer call: QLSTM_ERROR_SCRATCH_TOO_SMALL\n";
  }
  if (constant_state) s << "int8_t g_hidden[" << state << "];\nint16_t g_cell_state[" << state << "];\n";
  if (streamable) {
    s << "int8_t g_stream_hidden[" << state << "];\nint16_t g_stream_cell[" << state << "];\n"
      << "bool g_stream_started = false;\n";
  }
  // The program as data: one qlstm_op per op (its parameter block in flash), run by the runtime.
  s << "\nconst qlstm_op kOps[" << upper << "_OPS] = {\n";
  for (int32_t k = 0; k < n_ops; ++k) {
    const qlstm_op& o = ops[static_cast<size_t>(k)];
    s << "  ";
    Initializer init(s, "kOp" + std::to_string(k) + "_", "    ");
    visit_op_fields(o, init);
    s << ",  // layer " << k / D << (o.lstm.time_direction == QLSTM_TIME_REVERSE ? " reverse" : " forward") << "\n";
  }
  s << "};\nconst int32_t kBufferWidths[" << m.buffers.size() << "] = {";
  for (size_t b = 0; b < m.buffers.size(); ++b) s << (b ? ", " : "") << m.buffers[b].width;
  s << "};\nconst int32_t kBufferSteps[" << m.buffers.size() << "] = {";
  for (size_t b = 0; b < m.buffers.size(); ++b) s << (b ? ", " : "") << rt.steps[b];
  s << "};\nconst qlstm_program kProgram = {kOps, " << upper << "_OPS, " << m.buffers.size() << ", kBufferWidths, "
    << state << ", kBufferSteps, " << rt.batch << ", " << rt.layout << "};\n\n"
    << "qlstm_status run_program(const int8_t* input, int8_t* output, int32_t time_steps, int8_t* hidden,\n"
    << "                         int16_t* cell) {\n"
    << "  qlstm_program_context ctx = {g_scratch, sizeof g_scratch, g_cell, {"
    << (L > 1 ? "g_activations[0], g_activations[1]}, sizeof g_activations[0]" : "nullptr, nullptr}, 0") << "};\n"
    << "  return qlstm_program_run(&kProgram, &ctx, input, output, time_steps, hidden, cell);\n}\n\n";
  if (stateful || constant_state || streamable) s << "void initial_state(int8_t* hidden, int16_t* cell) {\n";
  for (int32_t k = 0; k < n_ops && (stateful || constant_state || streamable); ++k) {
    const ProgramOp& op = m.ops[static_cast<size_t>(k)];
    const size_t off = state_offset(hs, k, batch), H = static_cast<size_t>(op.lstm.hidden_size);
    const std::string prefix = "kOp" + std::to_string(k) + "_";
    s << "  for (int32_t e = 0; e < " << static_cast<size_t>(batch) * H << "; ++e) {\n"
      << "    hidden[" << off << " + e] = " << (op.initial_hidden.empty() ? std::to_string(op.lstm.output.zero_point)
                                                  : prefix + "initial_hidden[e % " + std::to_string(H) + "]") << ";\n"
      << "    cell[" << off << " + e] = " << (op.initial_cell.empty() ? std::string("0")
                                                : prefix + "initial_cell[e % " + std::to_string(H) + "]") << ";\n  }\n";
  }
  if (stateful || constant_state || streamable) s << "}\n\n";
  s << "}  // namespace\n\n"
    << "extern \"C\" const qlstm_program* " << name << "_program(void) { return &kProgram; }\n\n"
    << "extern \"C\" qlstm_status " << name << "_run(const int8_t* input, int8_t* output, int32_t time_steps) {\n";
  if (constant_state) {
    s << "  initial_state(g_hidden, g_cell_state);\n"
      << "  return run_program(input, output, time_steps, g_hidden, g_cell_state);\n}\n";
  } else {
    s << "  return run_program(input, output, time_steps, nullptr, nullptr);\n}\n";
  }
  if (stateful) {
    s << "\nextern \"C\" void " << name << "_initial_state(int8_t* hidden, int16_t* cell) {\n"
      << "  initial_state(hidden, cell);\n}\n\n"
      << "extern \"C\" qlstm_status " << name << "_run_state(const int8_t* input, int8_t* output, int32_t time_steps,\n"
      << "    int8_t* hidden, int16_t* cell) {\n"
      << "  if (hidden == nullptr || cell == nullptr) return QLSTM_ERROR_NULL_POINTER;\n"
      << "  return run_program(input, output, time_steps, hidden, cell);\n}\n";
  }
  if (streamable) {
    s << "\nextern \"C\" qlstm_status " << name << "_reset(void) {\n"
      << "  initial_state(g_stream_hidden, g_stream_cell);\n  g_stream_started = true;\n  return QLSTM_OK;\n}\n\n"
      << "extern \"C\" qlstm_status " << name << "_stream(const int8_t* input, int8_t* output, int32_t time_steps) {\n"
      << "  if (!g_stream_started) " << name << "_reset();\n"
      << "  return run_program(input, output, time_steps, g_stream_hidden, g_stream_cell);\n}\n";
  }
  return {h.str(), s.str()};
}

}  // namespace

}  // namespace compiler
}  // namespace qlstm
