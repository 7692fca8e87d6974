#include "qlstm/compiler/program.h"

#include <algorithm>
#include <cmath>

#include "qlstm/kernels.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {
namespace {

size_t position(Layout layout, int32_t B, int32_t T, int32_t b, int32_t t) {
  return layout == Layout::kTimeMajor ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t;
}

// A field qlstm_program_validate names: "ops[k].field" for a field of op k.
std::string program_field(const char* field, int32_t op_index) {
  return (op_index >= 0 ? "ops[" + std::to_string(op_index) + "]." : std::string()) + (field ? field : "?");
}

}  // namespace

int16_t quantize_cell(double c, int32_t power) {
  const double q = std::nearbyint(std::ldexp(c, -power));
  return static_cast<int16_t>(std::clamp(q, -32768.0, 32767.0));
}

const char* state_source_name(StateSource s) {
  switch (s) {
    case StateSource::kZero: return "zero";
    case StateSource::kConstant: return "constant";
    case StateSource::kInput: return "input";
  }
  return "?";
}

int32_t FloatProgram::state_size() const {
  int32_t n = 0;
  for (const FloatLstm& op : ops) n += op.hidden_size;
  return n;
}

void FloatProgram::validate() const {
  if (ops.empty()) throw CompileError("program: no LSTM op");
  if (directions != 1 && directions != 2) throw CompileError("program: directions must be 1 or 2");
  if (ops.size() % static_cast<size_t>(directions) != 0) {
    throw CompileError("program: the op count is not a multiple of the directions");
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    const FloatLstm& op = ops[k];
    const std::string where = "layer " + std::to_string(k / directions) +
                              (directions == 2 ? (k % 2 ? " reverse" : " forward") : "");
    try {
      op.validate();
    } catch (const CompileError& e) {
      throw CompileError(where + ": " + e.what());
    }
    const bool want_reverse = directions == 2 && k % 2 == 1;
    if (directions == 2 && op.reverse != want_reverse) {
      throw CompileError(where + ": the direction does not match its position in the layer");
    }
    const size_t layer = k / static_cast<size_t>(directions);
    if (layer > 0) {
      const int32_t below = directions * ops[(layer - 1) * directions].hidden_size;
      if (op.input_size != below) {
        throw CompileError(where + ": input_size " + std::to_string(op.input_size) +
                           " is not the layer below's output size " + std::to_string(below));
      }
    } else if (op.input_size != ops[0].input_size) {
      throw CompileError(where + ": input_size differs from the other direction's");
    }
    if (directions == 2 && op.hidden_size != ops[layer * 2].hidden_size) {
      throw CompileError(where + ": hidden_size differs from the other direction's");
    }
    if (initial_hidden == StateSource::kConstant &&
        (h0.size() != ops.size() || h0[k].size() != static_cast<size_t>(op.hidden_size))) {
      throw CompileError(where + ": the constant initial_h needs " + std::to_string(op.hidden_size) + " values");
    }
    if (initial_cell == StateSource::kConstant &&
        (c0.size() != ops.size() || c0[k].size() != static_cast<size_t>(op.hidden_size))) {
      throw CompileError(where + ": the constant initial_c needs " + std::to_string(op.hidden_size) + " values");
    }
  }
}

size_t state_offset(const std::vector<int32_t>& hidden_sizes, int32_t op, int32_t batch) {
  size_t n = 0;
  for (int32_t k = 0; k < op; ++k) n += static_cast<size_t>(batch) * static_cast<size_t>(hidden_sizes[k]);
  return n;
}

FloatProgramResult run_float_program(const FloatProgram& p, const float* x, const SequenceShape& shape,
                                     const float* h0, const float* c0) {
  const int32_t B = shape.batch, T = shape.time_steps, D = p.directions;
  std::vector<int32_t> hs;
  for (const FloatLstm& op : p.ops) hs.push_back(op.hidden_size);
  FloatProgramResult r;
  const size_t S = state_offset(hs, static_cast<int32_t>(hs.size()), B);
  r.h_n.assign(S, 0.0f);
  r.c_n.assign(S, 0.0f);
  std::vector<float> input(x, x + static_cast<size_t>(B) * T * p.input_size());
  for (int32_t l = 0; l < p.layers(); ++l) {
    const int32_t H = p.ops[static_cast<size_t>(l * D)].hidden_size, W = D * H;
    std::vector<float> out(static_cast<size_t>(B) * T * W);
    for (int32_t d = 0; d < D; ++d) {
      const int32_t k = l * D + d;
      const FloatLstm& op = p.ops[static_cast<size_t>(k)];
      const size_t off = state_offset(hs, k, B);
      std::vector<float> hk, ck;
      const float* hp = h0 ? h0 + off : nullptr;
      const float* cp = c0 ? c0 + off : nullptr;
      if (!h0 && p.initial_hidden == StateSource::kConstant) {
        for (int32_t b = 0; b < B; ++b) hk.insert(hk.end(), p.h0[k].begin(), p.h0[k].end());
        hp = hk.data();
      }
      if (!c0 && p.initial_cell == StateSource::kConstant) {
        for (int32_t b = 0; b < B; ++b) ck.insert(ck.end(), p.c0[k].begin(), p.c0[k].end());
        cp = ck.data();
      }
      const FloatResult f = run_float(op, input.data(), shape, hp, cp);
      for (size_t row = 0; row < static_cast<size_t>(B) * T; ++row) {
        std::copy_n(f.output.begin() + static_cast<ptrdiff_t>(row * H), H,
                    out.begin() + static_cast<ptrdiff_t>(row * W + static_cast<size_t>(d) * H));
      }
      std::copy(f.h_n.begin(), f.h_n.end(), r.h_n.begin() + static_cast<ptrdiff_t>(off));
      std::copy(f.c_n.begin(), f.c_n.end(), r.c_n.begin() + static_cast<ptrdiff_t>(off));
    }
    r.layer_outputs.push_back(out);
    input = std::move(out);
  }
  r.output = r.layer_outputs.back();
  return r;
}

std::vector<int32_t> CompiledModel::hidden_sizes() const {
  std::vector<int32_t> hs;
  for (const ProgramOp& op : ops) hs.push_back(op.lstm.hidden_size);
  return hs;
}

int32_t CompiledModel::state_size() const {
  int32_t n = 0;
  for (const ProgramOp& op : ops) n += op.lstm.hidden_size;
  return n;
}

bool CompiledModel::all_forward() const {
  for (const ProgramOp& op : ops) {
    if (op.lstm.time_direction != QLSTM_TIME_FORWARD) return false;
  }
  return true;
}

void CompiledModel::validate(const std::string& origin) const {
  auto bad = [&](const std::string& why) { throw CompileError(origin + ": " + why); };
  // First what the runtime checks on the device (indices, widths, areas, state, each op's params),
  // on the very table run_program_s8 runs; then what only the compiler knows (the layer order,
  // the quantization of each buffer, the initial state).
  const RuntimeProgram r = runtime_program(*this, 1, 1, batch_first ? Layout::kBatchMajor : Layout::kTimeMajor);
  const qlstm_program table = r.table();
  const char* field = nullptr;
  int32_t op_index = -1;
  const qlstm_status st = qlstm_program_validate(&table, nullptr, 1, &field, &op_index);
  if (st != QLSTM_OK) bad(program_field(field, op_index) + ": " + qlstm_status_string(st));
  if (ops.empty()) bad("field 'ops': the program has no op");
  if (directions != 1 && directions != 2) bad("field 'directions' must be 1 or 2");
  if (ops.size() % static_cast<size_t>(directions) != 0) bad("field 'ops': not a whole number of layers");
  if (buffers.size() != static_cast<size_t>(layers()) + 1) {
    bad("field 'buffers': " + std::to_string(buffers.size()) + " buffers, expected layers + 1 = " +
        std::to_string(layers() + 1));
  }
  for (size_t b = 0; b < buffers.size(); ++b) {
    const ProgramBuffer& buf = buffers[b];
    const std::string w = "field 'buffers[" + std::to_string(b) + "]";
    if (buf.width < 1 || buf.width > (1 << 16)) bad(w + ".width' out of range");
    if (!(buf.quant.scale > 0) || !std::isfinite(buf.quant.scale)) bad(w + ".scale' is not positive");
    if (buf.quant.zero_point < -128 || buf.quant.zero_point > 127) bad(w + ".zero_point' out of int8 range");
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    const ProgramOp& op = ops[k];
    const DerivedLstm& d = op.lstm;
    const std::string w = "field 'ops[" + std::to_string(k) + "]";
    const int32_t layer = static_cast<int32_t>(k) / directions, dir = static_cast<int32_t>(k) % directions;
    if (op.input_buffer != layer || op.output_buffer != layer + 1) bad(w + "': buffers out of program order");
    if (op.output_offset != dir * d.hidden_size) bad(w + ".output_offset' is not its direction's half");
    const ProgramBuffer& in = buffers[static_cast<size_t>(op.input_buffer)];
    const ProgramBuffer& out = buffers[static_cast<size_t>(op.output_buffer)];
    if (directions * d.hidden_size != out.width) bad(w + "': hidden_size does not fill its output buffer");
    if (d.input.scale != in.quant.scale || d.input.zero_point != in.quant.zero_point) {
      bad(w + "': input quantization differs from its input buffer's");
    }
    if (d.output.scale != out.quant.scale || d.output.zero_point != out.quant.zero_point) {
      bad(w + "': output quantization differs from its output buffer's");
    }
    const bool want_reverse = dir == 1;
    if ((d.time_direction == QLSTM_TIME_REVERSE) != want_reverse && directions == 2) {
      bad(w + ".time_direction' does not match its half of the layer");
    }
    const size_t H = static_cast<size_t>(d.hidden_size);
    if ((initial_hidden == StateSource::kConstant) != !op.initial_hidden.empty() ||
        (!op.initial_hidden.empty() && op.initial_hidden.size() != H)) {
      bad(w + ".initial_hidden' does not match the model's initial state");
    }
    if ((initial_cell == StateSource::kConstant) != !op.initial_cell.empty() ||
        (!op.initial_cell.empty() && op.initial_cell.size() != H)) {
      bad(w + ".initial_cell' does not match the model's initial state");
    }
  }
}

CompiledModel assemble_program(std::vector<ProgramOp> ops, int32_t directions) {
  CompiledModel m;
  m.directions = directions;
  const int32_t layers = static_cast<int32_t>(ops.size()) / directions;
  m.buffers.push_back({ops.front().lstm.input_size, ops.front().lstm.input});
  for (int32_t l = 0; l < layers; ++l) {
    const DerivedLstm& d = ops[static_cast<size_t>(l * directions)].lstm;
    m.buffers.push_back({directions * d.hidden_size, d.output});
    for (int32_t dir = 0; dir < directions; ++dir) {
      ProgramOp& op = ops[static_cast<size_t>(l * directions + dir)];
      op.input_buffer = l;
      op.output_buffer = l + 1;
      op.output_offset = dir * d.hidden_size;
    }
  }
  m.ops = std::move(ops);
  return m;
}

CompiledModel single_op_model(const DerivedLstm& d, const std::string& name, bool batch_first) {
  std::vector<ProgramOp> ops(1);
  ops[0].lstm = d;
  CompiledModel m = assemble_program(std::move(ops), 1);
  m.name = name;
  m.batch_first = batch_first;
  return m;
}

ProgramState initial_program_state(const CompiledModel& m, int32_t batch) {
  ProgramState s;
  for (const ProgramOp& op : m.ops) {
    const size_t H = static_cast<size_t>(op.lstm.hidden_size);
    for (int32_t b = 0; b < batch; ++b) {
      if (op.initial_hidden.empty()) {
        s.hidden.insert(s.hidden.end(), H, static_cast<int8_t>(op.lstm.output.zero_point));
      } else {
        s.hidden.insert(s.hidden.end(), op.initial_hidden.begin(), op.initial_hidden.end());
      }
      if (op.initial_cell.empty()) {
        s.cell.insert(s.cell.end(), H, 0);
      } else {
        s.cell.insert(s.cell.end(), op.initial_cell.begin(), op.initial_cell.end());
      }
    }
  }
  return s;
}

ProgramState quantize_program_state(const CompiledModel& m, int32_t batch, const std::vector<float>* h,
                                    const std::vector<float>* c, const std::string& what) {
  ProgramState s = initial_program_state(m, batch);
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(m.state_size());
  for (const std::vector<float>* v : {h, c}) {
    if (v != nullptr && v->size() != n) {
      throw CompileError(what + ": " + std::to_string(v->size()) + " state values, expected ops x B x H = " +
                         std::to_string(n));
    }
  }
  size_t at = 0;
  for (const ProgramOp& op : m.ops) {
    for (size_t e = 0; e < static_cast<size_t>(batch) * static_cast<size_t>(op.lstm.hidden_size); ++e, ++at) {
      for (const std::vector<float>* v : {h, c}) {
        if (v != nullptr && !std::isfinite((*v)[at])) {
          throw CompileError(what + ": non-finite state value at index " + std::to_string(at));
        }
      }
      if (h) s.hidden[at] = op.lstm.output.quantize((*h)[at]);
      if (c) s.cell[at] = quantize_cell((*c)[at], op.lstm.cell.power);
    }
  }
  return s;
}

ProgramMemory program_memory(const CompiledModel& m, int32_t batch, int32_t max_time_steps) {
  ProgramMemory mem;
  const size_t B = static_cast<size_t>(std::max(batch, 0));
  for (const ProgramOp& op : m.ops) {
    const int32_t I = op.lstm.input_size, H = op.lstm.hidden_size;
    const qlstm_lstm_dims dims = {std::max(batch, 1), 1, I, H};
    mem.scratch_bytes = std::max(mem.scratch_bytes, qlstm_lstm_s8_scratch_bytes(&dims));
    mem.cell_values = std::max(mem.cell_values, B * static_cast<size_t>(H));
    mem.state_values += B * static_cast<size_t>(H);
    mem.weight_bytes += static_cast<size_t>(QLSTM_GATE_COUNT) * static_cast<size_t>(H) * static_cast<size_t>(I + H);
    mem.bias_bytes += static_cast<size_t>(2 * QLSTM_GATE_COUNT) * static_cast<size_t>(H) * sizeof(int32_t);
  }
  size_t widest = 0;
  for (size_t b = 1; b + 1 < m.buffers.size(); ++b) widest = std::max(widest, static_cast<size_t>(m.buffers[b].width));
  mem.activation_bytes = widest * B * static_cast<size_t>(std::max(max_time_steps, 0));
  return mem;
}

RuntimeProgram runtime_program(const CompiledModel& m, int32_t B, int32_t T, Layout layout) {
  RuntimeProgram r;
  const std::vector<int32_t> hs = m.hidden_sizes();
  for (const ProgramBuffer& buf : m.buffers) {
    r.widths.push_back(buf.width);
    r.steps.push_back(QLSTM_BUFFER_EVERY_STEP);
  }
  r.batch = B;
  r.layout = layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const ProgramOp& op = m.ops[k];
    qlstm_op o{};
    o.kind = QLSTM_OP_LSTM_S8;
    o.lstm = op.lstm.kernel_params(B, T, layout);
    // The output buffer's width (an index out of range is left for the validation to name).
    if (op.output_buffer >= 0 && static_cast<size_t>(op.output_buffer) < m.buffers.size()) {
      const int32_t width = m.buffers[static_cast<size_t>(op.output_buffer)].width;
      o.lstm.output_width = width == op.lstm.hidden_size ? 0 : width;
    }
    o.input_buffer = op.input_buffer;
    o.output_buffer = op.output_buffer;
    o.output_offset = op.output_offset;
    o.state_offset = state_offset(hs, static_cast<int32_t>(k), B);
    r.ops.push_back(o);
  }
  r.state_values = state_offset(hs, static_cast<int32_t>(hs.size()), B);
  return r;
}

std::vector<int8_t> run_program_s8(const CompiledModel& m, const std::vector<int8_t>& x,
                                   const SequenceShape& shape, ProgramState* state) {
  const int32_t B = shape.batch, T = shape.time_steps;
  if (B < 1 || T < 0) throw CompileError("input: batch must be >= 1 and time steps >= 0");
  const size_t positions = static_cast<size_t>(B) * static_cast<size_t>(T);
  if (x.size() != positions * static_cast<size_t>(m.input_size())) {
    throw CompileError("input: " + std::to_string(x.size()) + " values, expected " +
                       std::to_string(positions * static_cast<size_t>(m.input_size())) + " (B=" +
                       std::to_string(B) + " T=" + std::to_string(T) + " x " + std::to_string(m.input_size()) + ")");
  }
  ProgramState own;
  if (state == nullptr) {
    own = initial_program_state(m, B);
    state = &own;
  }
  const size_t S = static_cast<size_t>(B) * static_cast<size_t>(m.state_size());
  if (state->hidden.size() != S || state->cell.size() != S) {
    throw CompileError("state: hidden and cell must have ops x B x H = " + std::to_string(S) + " values");
  }
  // The runtime's own program runner, as the emitted source calls it on the device.
  const ProgramMemory mem = program_memory(m, B, T);
  const RuntimeProgram r = runtime_program(m, B, T, shape.layout);
  ProgramContextStorage storage(mem);
  std::vector<int8_t> y(positions * static_cast<size_t>(m.output_size()));
  const qlstm_program program = r.table();
  qlstm_program_context ctx = storage.context();
  const qlstm_status st = qlstm_program_run(&program, &ctx, x.data(), y.data(), T, state->hidden.data(),
                                            state->cell.data());
  if (st != QLSTM_OK) {
    const char* field = nullptr;
    int32_t op_index = -1;
    qlstm_program_validate(&program, &ctx, T, &field, &op_index);
    throw CompileError(std::string("program: the runtime refused to run it: ") + qlstm_status_string(st) +
                       (field ? " (" + program_field(field, op_index) + ")" : std::string()));
  }
  return y;
}

void gather_steps(const int8_t* x, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                  int8_t* chunk) {
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t t = 0; t < n; ++t) {
      std::copy_n(x + position(layout, B, T, b, t0 + t) * F, F, chunk + position(layout, B, n, b, t) * F);
    }
  }
}

void scatter_steps(const int8_t* chunk, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                   int8_t* y) {
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t t = 0; t < n; ++t) {
      std::copy_n(chunk + position(layout, B, n, b, t) * F, F, y + position(layout, B, T, b, t0 + t) * F);
    }
  }
}

std::vector<int8_t> run_program_s8_streamed(const CompiledModel& m, const std::vector<int8_t>& x,
                                            const SequenceShape& shape, int32_t chunk, ProgramState* state) {
  if (chunk < 1) throw CompileError("chunk: must be at least 1 time step, got " + std::to_string(chunk));
  if (!m.all_forward()) {
    throw CompileError("chunk: the model has a reverse LSTM, which starts from the last time step; it cannot be "
                       "streamed in chunks");
  }
  const int32_t B = shape.batch, T = shape.time_steps, I = m.input_size(), O = m.output_size();
  if (B < 1 || T < 0 || x.size() != static_cast<size_t>(B) * T * I) {
    return run_program_s8(m, x, shape, state);  // reports the shape error
  }
  ProgramState own;
  if (state == nullptr) {
    own = initial_program_state(m, B);
    state = &own;
  }
  std::vector<int8_t> y(static_cast<size_t>(B) * T * O), xc;
  for (int32_t t0 = 0; t0 < T; t0 += chunk) {
    const int32_t n = std::min(chunk, T - t0);
    xc.resize(static_cast<size_t>(B) * n * I);
    gather_steps(x.data(), B, T, I, shape.layout, t0, n, xc.data());
    const std::vector<int8_t> yc = run_program_s8(m, xc, {B, n, shape.layout}, state);
    scatter_steps(yc.data(), B, T, O, shape.layout, t0, n, y.data());
  }
  return y;
}

}  // namespace compiler
}  // namespace qlstm
