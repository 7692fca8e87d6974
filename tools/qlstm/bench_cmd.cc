// qlstm bench: one kernel call measured on the emulated device (executed instructions, exact, and
// their estimated cycles) or on the host (median wall time over many calls), for a compiled model or a
// synthetic shape.
#include "bench_cmd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "device.h"
#include "exit_status.h"
#include "qlstm/compiler/lower/derive_gru.h"
#include "qlstm/compiler/lower/derive_rnn.h"
#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/float/float_rnn.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace cli {
namespace {

using namespace qlstm::compiler;

struct ShapeSpec {
  int32_t batch = 1, time_steps = 0, input_size = 0, hidden_size = 0;
  bool time_major = false;
};

// "B=1,T=49,I=10,H=64[,time_major]"; with a model, I and H may be left out.
ShapeSpec parse_shape(const std::string& text) {
  ShapeSpec s;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == "time_major") {
      s.time_major = true;
      continue;
    }
    if (item == "batch_major") continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int32_t* field = key == "B" ? &s.batch : key == "T" ? &s.time_steps : key == "I" ? &s.input_size
                   : key == "H" ? &s.hidden_size : nullptr;
    if (eq == std::string::npos || field == nullptr) {
      throw UsageError("--shape: '" + item + "' is not B=, T=, I=, H= or time_major");
    }
    const std::string value = item.substr(eq + 1);
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || v < 1 || v > (1 << 20)) {
      throw UsageError("--shape: " + key + "='" + value + "' is not a positive integer");
    }
    *field = static_cast<int32_t>(v);
  }
  return s;
}

// A decoder: m's one recurrent op reads one input step per batch row at every step (input_repeated),
// after a selection of the input's last step (a program reads a sequence); each op is counted on
// its own.
CompiledModel after_last_step_selection(CompiledModel m, int32_t input_size, const AffineQuant& input) {
  ProgramOp select;
  select.set(DerivedSelect{input_size, -1, 1});
  select.input_buffer = 0;
  select.output_buffer = 1;
  m.buffers.insert(m.buffers.begin() + 1, {input_size, input, QLSTM_BUFFER_ONE_STEP});
  m.ops.front().input_buffer = 1;
  m.ops.front().output_buffer = 2;
  m.ops.insert(m.ops.begin(), std::move(select));
  return m;
}

// A float LSTM (GRU, RNN) with PyTorch's default initialization (uniform in +-1/sqrt(H)),
// calibrated on standard-normal inputs: typical scales, as a trained model would have them. The
// GRU's and the RNN's boundary ranges come from the same observers as the LSTM's compile, without
// its search. cell: "lstm", "lstm_repeated" (its input one step read at every step: a decoder's),
// "gru", "gru_repeated", "rnn" (tanh) or "rnn_relu".
CompiledModel synthetic_model(const ShapeSpec& s, const std::string& cell, std::mt19937_64& rng) {
  const bool gru = cell.rfind("gru", 0) == 0, rnn = cell.rfind("rnn", 0) == 0;
  const size_t I = static_cast<size_t>(s.input_size), H = static_cast<size_t>(s.hidden_size);
  const size_t G = gru ? size_t{QLSTM_GRU_GATE_COUNT} : rnn ? size_t{1} : size_t{QLSTM_GATE_COUNT};
  const float k = 1.0f / std::sqrt(static_cast<float>(H));
  std::uniform_real_distribution<float> u(-k, k);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const std::vector<float> w_ih = fill(G * H * I), w_hh = fill(G * H * H), b_ih = fill(G * H), b_hh = fill(G * H);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  const SequenceShape cal_shape{4, s.time_steps, Layout::kBatchMajor};
  std::vector<float> x(4 * static_cast<size_t>(s.time_steps) * I);
  for (float& v : x) v = n01(rng);
  CompileOptions options;
  options.tuning = Tuning::kNone;
  const std::string name = "synthetic";
  if (gru) {
    const FloatGru f = FloatGru::from_torch(s.input_size, s.hidden_size, w_ih, w_hh, b_ih, b_hh);
    const std::vector<float> y = run_float_gru(f, x.data(), cal_shape).output;
    const Range in = choose_range(x, options.input_observer), out = choose_range(y, options.output_observer);
    DerivedGru d = derive_gru_params(f, affine_from_range(in.lo, in.hi), affine_from_range(out.lo, out.hi),
                                     options.weights);
    if (cell != "gru_repeated") return single_op_model(d, name, !s.time_major);
    d.input_repeated = 1;
    return after_last_step_selection(single_op_model(d, name, !s.time_major), s.input_size, d.input);
  }
  if (rnn) {
    const FloatLstm f = rnn_layer_from_torch(s.input_size, s.hidden_size, w_ih, w_hh, b_ih, b_hh, cell == "rnn_relu");
    const std::vector<float> y = run_float(f, x.data(), cal_shape).output;
    const Range in = choose_range(x, options.input_observer), out = choose_range(y, options.output_observer);
    const DerivedRnn d = derive_rnn_params(f, affine_from_range(in.lo, in.hi), affine_from_range(out.lo, out.hi),
                                           options.weights);
    return single_op_model(d, name, !s.time_major);
  }
  const FloatLstm f = FloatLstm::from_torch(s.input_size, s.hidden_size, w_ih, w_hh, b_ih, b_hh);
  CalibrationSet cal;
  cal.add_batch(x, cal_shape, s.input_size);
  DerivedLstm d = QuantizedLayer::compile(f, cal, options).derived();
  if (cell != "lstm_repeated") return single_op_model(d, name, !s.time_major);
  d.input_repeated = 1;
  return after_last_step_selection(single_op_model(d, name, !s.time_major), s.input_size, d.input);
}

// The entry of a variant list named `name`, or null; throws UsageError when this CPU lacks it.
template <class Variant>
const Variant* named_variant(const Variant* const* all, size_t n, const std::string& name) {
  for (size_t k = 0; k < n; ++k) {
    if (name == all[k]->name) {
      if (all[k]->is_supported != nullptr && !all[k]->is_supported()) {
        throw UsageError("variant '" + name + "' is not supported on this CPU");
      }
      return all[k];
    }
  }
  return nullptr;
}

// What `--variant NAME` runs on the host: the LSTM ops through that LSTM variant, the GRU and RNN
// ops through the variants of the same name (nullptr for "default": the per-call dispatch).
ProgramRunOptions host_variants(const std::string& name) {
  ProgramRunOptions o;
  if (name == "default") return o;
  size_t n = 0;
  const LstmS8Variant* const* lstm = lstm_s8_variants(&n);
  o.variant = named_variant(lstm, n, name);
  const GruS8Variant* const* gru = gru_s8_variants(&n);
  o.gru_variant = named_variant(gru, n, name);
  const RnnS8Variant* const* rnn = rnn_s8_variants(&n);
  o.rnn_variant = named_variant(rnn, n, name);
  if (o.variant == nullptr && o.gru_variant == nullptr && o.rnn_variant == nullptr) {
    throw UsageError("unknown variant '" + name + "' (see 'qlstm variants')");
  }
  return o;
}


// Times each op of a host call through the runner's hooks (plain function pointers, so the
// clock they read lives here).
std::vector<std::chrono::steady_clock::time_point> g_op_started;
std::vector<double> g_op_us;
void time_op_begin(int32_t op) { g_op_started[static_cast<size_t>(op)] = std::chrono::steady_clock::now(); }
void time_op_end(int32_t op) {
  const auto now = std::chrono::steady_clock::now();
  g_op_us[static_cast<size_t>(op)] =
      std::chrono::duration<double, std::micro>(now - g_op_started[static_cast<size_t>(op)]).count();
}

// The runtime's program of a model and the memory a call needs, on the host.
struct HostProgram {
  RuntimeProgram program;
  ProgramContextStorage storage;

  HostProgram(const CompiledModel& m, const SequenceShape& shape)
      : program(runtime_program(m, shape.batch, shape.time_steps, shape.layout)),
        storage(program_memory(m, shape.batch, shape.time_steps)) {}

  // One stateless call of the whole program with the variants of `variants` (nullptr: dispatch;
  // its hooks unused); timed: each op's microseconds into g_op_us.
  qlstm_status run(const ProgramRunOptions& variants, const std::vector<int8_t>& x, std::vector<int8_t>* y,
                   int32_t time_steps, bool timed = false) {
    qlstm_program_context ctx = storage.context();
    const qlstm_program table = program.table();
    ProgramRunOptions options;
    options.variant = variants.variant;
    options.gru_variant = variants.gru_variant;
    options.rnn_variant = variants.rnn_variant;
    options.fc_variant = variants.fc_variant;
    options.pool_variant = variants.pool_variant;
    options.add_variant = variants.add_variant;
    options.mul_variant = variants.mul_variant;
    if (timed) {
      g_op_started.resize(program.ops.size());
      g_op_us.assign(program.ops.size(), 0.0);
      options.before_op = time_op_begin;
      options.after_op = time_op_end;
    }
    return run_program_s8(&table, &ctx, x.data(), y->data(), time_steps, nullptr, nullptr, options);
  }
};

// Compares one variant's whole-program output with the reference's: one line, whether equal.
bool report_variant(const char* what, const char* name, qlstm_status st, const std::vector<int8_t>& want,
                    const std::vector<int8_t>& got) {
  if (st == QLSTM_ERROR_NO_VARIANT) {
    std::printf("%s %s: declines this call (dispatch runs another)\n", what, name);
    return true;
  }
  if (st != QLSTM_OK) {
    std::printf("%s %s: FAILED with status %s\n", what, name, qlstm_status_string(st));
    return false;
  }
  size_t at = 0;
  while (at < want.size() && want[at] == got[at]) ++at;
  if (at == want.size()) {
    std::printf("%s %s: bit-exact with reference\n", what, name);
    return true;
  }
  std::printf("%s %s: DIFFERS from reference at output[%zu]: expected %d, got %d\n", what, name, at, want[at],
              got[at]);
  return false;
}

bool has_op(const RuntimeProgram& p, int32_t kind) {
  for (const qlstm_op& o : p.ops) {
    if (o.kind == kind) return true;
  }
  return false;
}

// Each variant of one op kind's list (`field` of the run options), built in and supported on this
// CPU, in place of its reference in `reference`: one line each ("what NAME: ..."). Returns whether
// all are bit-exact with `want`.
template <class Variant>
bool kind_matches_reference(HostProgram& p, const char* what, const Variant* const* all, size_t n,
                            const Variant* ProgramRunOptions::*field, const ProgramRunOptions& reference,
                            const std::vector<int8_t>& x, const std::vector<int8_t>& want, int32_t T) {
  bool ok = true;
  for (size_t k = 0; k < n; ++k) {
    const Variant& v = *all[k];
    if (&v == reference.*field || (v.is_supported != nullptr && !v.is_supported())) continue;
    ProgramRunOptions options = reference;
    options.*field = &v;
    std::vector<int8_t> got(want.size());
    ok = report_variant(what, v.name, p.run(options, x, &got, T), want, got) && ok;
  }
  return ok;
}

// Every LSTM, GRU, RNN, fully connected, pooling and elementwise variant built in and supported on this CPU against its
// reference, for each kind the program has, on the benchmark's input: one line each. Returns
// whether all are bit-exact.
bool variants_match_reference(HostProgram& p, const std::vector<int8_t>& x, size_t out_size, int32_t T) {
  ProgramRunOptions ref;
  ref.variant = &lstm_s8_reference_variant();
  ref.gru_variant = &kGruS8ReferenceVariant;
  ref.rnn_variant = &kRnnS8ReferenceVariant;
  ref.fc_variant = &kFcS8ReferenceVariant;
  ref.pool_variant = &kPoolS8ReferenceVariant;
  ref.add_variant = &kAddS8ReferenceVariant;
  ref.mul_variant = &kMulS8ReferenceVariant;
  std::vector<int8_t> want(out_size);
  const qlstm_status rs = p.run(ref, x, &want, T);
  if (rs != QLSTM_OK) throw CompileError(std::string("reference kernel error: ") + qlstm_status_string(rs));
  size_t n = 0;
  bool ok = true;
  if (has_op(p.program, QLSTM_OP_LSTM_S8)) {
    const LstmS8Variant* const* all = lstm_s8_variants(&n);
    ok = kind_matches_reference(p, "variant", all, n, &ProgramRunOptions::variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_GRU_S8)) {
    const GruS8Variant* const* all = gru_s8_variants(&n);
    ok = kind_matches_reference(p, "gru variant", all, n, &ProgramRunOptions::gru_variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_RNN_S8)) {
    const RnnS8Variant* const* all = rnn_s8_variants(&n);
    ok = kind_matches_reference(p, "rnn variant", all, n, &ProgramRunOptions::rnn_variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_FULLY_CONNECTED_S8)) {
    const FcS8Variant* const* all = fc_s8_variants(&n);
    ok = kind_matches_reference(p, "fc variant", all, n, &ProgramRunOptions::fc_variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_POOL_S8)) {
    const PoolS8Variant* const* all = pool_s8_variants(&n);
    ok = kind_matches_reference(p, "pool variant", all, n, &ProgramRunOptions::pool_variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_ADD_S8)) {
    const AddS8Variant* const* all = add_s8_variants(&n);
    ok = kind_matches_reference(p, "add variant", all, n, &ProgramRunOptions::add_variant, ref, x, want, T) && ok;
  }
  if (has_op(p.program, QLSTM_OP_MUL_S8)) {
    const MulS8Variant* const* all = mul_s8_variants(&n);
    ok = kind_matches_reference(p, "mul variant", all, n, &ProgramRunOptions::mul_variant, ref, x, want, T) && ok;
  }
  return ok;
}

// Multiply-accumulates of each op of a call of B x T positions (0 for the ops without weights).
std::vector<int64_t> op_macs(const RuntimeProgram& p, int64_t B, int64_t T) {
  std::vector<int64_t> macs;
  for (const qlstm_op& o : p.ops) {
    const int64_t in_positions =
        p.steps[static_cast<size_t>(o.input_buffer)] == QLSTM_BUFFER_ONE_STEP ? B : B * T;
    const OpKind* kind = find_op_kind(o.kind);
    macs.push_back(kind != nullptr ? kind->macs(o, in_positions, B, T) : 0);
  }
  return macs;
}

// The host simulation's output of one stateless call: its raw bytes (int16 little-endian for a
// 16x8 output), as the device writes them.
std::vector<int8_t> host_simulation(const CompiledModel& m, const std::vector<int8_t>& x, const SequenceShape& shape) {
  if (m.all_s8()) return run_program_s8(m, x, shape);
  const std::vector<uint8_t> y = run_program_raw(m, x.data(), x.size(), shape);
  return std::vector<int8_t>(y.begin(), y.end());
}

std::string console_value(const std::string& console, const std::string& key) {
  const size_t at = console.find(key);
  if (at == std::string::npos) return "";
  const size_t end = console.find('\n', at);
  return console.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

// What every part of one benchmark call reads: the model, the call's shape, its input and the host
// simulation's output, the program's table and each op's MACs.
struct BenchCall {
  const CompiledModel& m;
  const ShapeSpec& s;
  SequenceShape shape;
  std::vector<int8_t> x, expected;
  RuntimeProgram program;
  std::vector<int64_t> macs_per_op;
  int64_t macs = 0;

  BenchCall(const CompiledModel& model, const ShapeSpec& spec, std::mt19937_64& rng)
      : m(model),
        s(spec),
        shape{spec.batch, spec.time_steps, spec.time_major ? Layout::kTimeMajor : Layout::kBatchMajor},
        x(bench_input(model, shape, rng)),
        expected(host_simulation(model, x, shape)),
        program(runtime_program(model, shape.batch, shape.time_steps, shape.layout)),
        macs_per_op(op_macs(program, spec.batch, spec.time_steps)) {
    for (int64_t n : macs_per_op) macs += n;
  }
  // Op k's line: what it computes, on which sizes.
  std::string op_line(size_t k) const { return "op " + std::to_string(k) + " (" + describe_op(program.ops[k], m.ops[k]) + ")"; }
  // The last recurrent op's hidden size.
  int32_t last_hidden_size() const {
    int32_t last_h = 0;
    for (const ProgramOp& op : m.ops) {
      if (op.recurrent()) last_h = op.hidden_size();
    }
    return last_h;
  }
};

// The call's sizes, MACs per op, flash and RAM.
void print_call_figures(const BenchCall& c, const std::string& what) {
  const ProgramMemory mem = program_memory(c.m, c.s.batch, c.s.time_steps);
  const size_t call_ram = mem.scratch_bytes + mem.cell_values * sizeof(int16_t) + 2 * mem.activation_bytes;
  std::printf("model: %s\n", what.c_str());
  std::printf("shape: B=%d T=%d I=%d H=%d %s, %lld MACs\n", c.s.batch, c.s.time_steps, c.m.input_size(),
              c.last_hidden_size(), c.s.time_major ? "time-major" : "batch-major", static_cast<long long>(c.macs));
  if (c.m.ops.size() > 1) {
    std::printf("program: %zu ops\n", c.m.ops.size());
    for (size_t k = 0; k < c.m.ops.size(); ++k) {
      std::printf("  %s: %lld MACs\n", c.op_line(k).c_str(), static_cast<long long>(c.macs_per_op[k]));
    }
  }
  std::printf("flash for the weights and biases: %zu bytes\n", mem.flash_bytes());
  std::printf("RAM per call: %zu bytes (scratch %zu, cell state %zu, activations %zu)\n", call_ram,
              mem.scratch_bytes, mem.cell_values * sizeof(int16_t), 2 * mem.activation_bytes);
}

// The variant dispatch picks for the first recurrent op (LSTM, GRU or RNN), or null.
const char* dispatched_variant(const RuntimeProgram& program) {
  for (const qlstm_op& o : program.ops) {
    size_t n = 0;
    if (o.kind == QLSTM_OP_LSTM_S8) {
      const LstmS8Variant* const* all = lstm_s8_variants(&n);  // sets n before it is read
      const LstmS8Variant* c = select_lstm_s8_variant(all, n, op_block<qlstm_lstm_s8_params>(o));
      return c != nullptr ? c->name : nullptr;
    }
    if (o.kind == QLSTM_OP_GRU_S8) {
      const GruS8Variant* const* all = gru_s8_variants(&n);
      const GruS8Variant* c = select_gru_s8_variant(all, n, op_block<qlstm_gru_s8_params>(o));
      return c != nullptr ? c->name : nullptr;
    }
    if (o.kind == QLSTM_OP_RNN_S8) {
      const RnnS8Variant* const* all = rnn_s8_variants(&n);
      for (size_t k = 0; k < n; ++k) {
        if (all[k]->is_supported == nullptr || all[k]->is_supported()) return all[k]->name;
      }
      return nullptr;
    }
  }
  return nullptr;
}

// Each op's median, and its share of the sum of the medians (timer overhead aside).
void print_op_medians(const BenchCall& c, std::vector<std::vector<double>>* op_us) {
  std::vector<double> medians;
  double sum = 0;
  for (std::vector<double>& t : *op_us) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
    sum += medians.back();
  }
  for (size_t k = 0; k < medians.size(); ++k) {
    std::printf("%s: median %.2f us (%.1f%%)\n", c.op_line(k).c_str(), medians[k],
                sum > 0 ? 100.0 * medians[k] / sum : 0.0);
  }
}

// The call timed on the host (at least min_runs runs and min_ms), each variant checked against
// its reference; the last line the median microseconds.
int bench_on_host(const BenchCall& c, const BenchArgs& args) {
  const ProgramRunOptions forced = host_variants(args.variant);
  HostProgram host(c.m, c.shape);
  std::vector<int8_t> y(c.expected.size());
  std::vector<double> us;
  std::vector<std::vector<double>> op_us(c.m.ops.size());
  const auto run_once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const qlstm_status st = host.run(forced, c.x, &y, c.s.time_steps, true);
    const auto t1 = std::chrono::steady_clock::now();
    if (st != QLSTM_OK) {
      throw CompileError("kernel error (variant " + args.variant + "): " + qlstm_status_string(st));
    }
    for (size_t k = 0; k < op_us.size(); ++k) op_us[k].push_back(g_op_us[k]);
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
  };
  run_once();  // warm-up
  for (std::vector<double>& t : op_us) t.clear();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(args.min_ms);
  while (static_cast<int>(us.size()) < args.min_runs || std::chrono::steady_clock::now() < until) {
    us.push_back(run_once());
  }
  std::sort(us.begin(), us.end());
  const char* chosen = dispatched_variant(host.program);
  if (args.variant == "default" && chosen != nullptr) {
    std::printf("host variant: default (dispatched: %s)\n", chosen);
  } else {
    std::printf("host variant: %s\n", args.variant.c_str());
  }
  const bool exact = y == c.expected && variants_match_reference(host, c.x, y.size(), c.s.time_steps);
  if (c.m.ops.size() > 1) print_op_medians(c, &op_us);
  std::printf("runs: %zu, min %.2f us, median per sequence: %.2f us\n", us.size(), us.front(), us[us.size() / 2]);
  std::printf("microseconds: %.2f\n", us[us.size() / 2]);
  return exact ? kExitOk : kExitRefused;
}

// --profile: the first op's estimated cycles by timing class (docs/targets.md, "Estimated cycles"),
// then per function its blocks' instructions and their estimated cycles.
void print_target_profile(const TargetBench& b) {
  std::printf("estimated cycles per instruction class (%s):\n", b.op_cycles.size() > 1 ? "op 0" : "the call");
  for (const device::ClassCount& k : b.classes) {
    std::printf("%12llu cycles %5.1f%%  %10llu instructions  %s\n", static_cast<unsigned long long>(k.cycles),
                100.0 * static_cast<double>(k.cycles) / static_cast<double>(b.op_cycles[0]),
                static_cast<unsigned long long>(k.instructions), k.name.c_str());
  }
  std::printf("instructions per function (blocks starting in it), then estimated cycles:\n");
  for (const device::FunctionCount& f : b.profile) {
    std::printf("  %10llu  %5.1f%%", static_cast<unsigned long long>(f.instructions),
                100.0 * static_cast<double>(f.instructions) / static_cast<double>(b.instructions));
    if (f.has_cycles) {
      std::printf("  %10llu cycles %5.1f%%", static_cast<unsigned long long>(f.cycles),
                  100.0 * static_cast<double>(f.cycles) / static_cast<double>(b.cycles));
    }
    std::printf("  %s\n", f.name.c_str());
  }
}

// The call run on the target under QEMU (bit-exact with the host, or bench_on_target throws); the
// last line the instructions: the sum over the ops.
int bench_on_device(const BenchCall& c, const BenchArgs& args) {
  const TargetBench b = bench_on_target(c.m, c.x, c.shape, args.target, args.variant, args.profile);
  std::printf("target: %s (QEMU %s, -cpu %s), variant: %s\n", b.cpu.c_str(), b.qemu_machine.c_str(),
              b.qemu_cpu.c_str(), b.variant.c_str());
  std::printf("output: bit-exact with the host simulation\n");
  if (b.kernel_size_measured) {
    std::printf("kernel flash: %lld bytes (code and tables), static RAM: %lld bytes\n",
                static_cast<long long>(b.kernel_flash_bytes), static_cast<long long>(b.kernel_ram_bytes));
  } else {
    std::printf("kernel flash: not measured (the size probes hold one recurrent kernel each)\n");
  }
  if (args.profile) print_target_profile(b);
  for (size_t o = 0; o < b.op_instructions.size() && b.op_instructions.size() > 1; ++o) {
    std::printf("%s: %llu instructions\n", c.op_line(o).c_str(), static_cast<unsigned long long>(b.op_instructions[o]));
  }
  for (size_t o = 0; o < b.op_cycles.size() && b.op_cycles.size() > 1; ++o) {
    std::printf("%s: %llu estimated cycles\n", c.op_line(o).c_str(), static_cast<unsigned long long>(b.op_cycles[o]));
  }
  // The estimate: each executed instruction charged its cycles from the core's timing tables, zero
  // wait states, no caches or interrupts (docs/targets.md, "Estimated cycles").
  std::printf("estimated cycles per MAC: %.3f\n", static_cast<double>(b.cycles) / static_cast<double>(b.macs));
  std::printf("estimated cycles: %llu (%s timing model, zero wait states)\n", static_cast<unsigned long long>(b.cycles),
              b.qemu_cpu.c_str());
  std::printf("instructions per MAC: %.3f\n", static_cast<double>(b.instructions) / static_cast<double>(b.macs));
  std::printf("instructions: %llu\n", static_cast<unsigned long long>(b.instructions));
  return 0;
}

// One call of the program of `m` over `s` (B, T, layout; I and H are the model's): its figures
// printed, the last line the instructions (target: the sum over the ops) or the median
// microseconds (host). Returns the exit status.
int bench_program(const CompiledModel& m, const ShapeSpec& s, const std::string& what, const BenchArgs& args,
                  std::mt19937_64& rng) {
  const BenchCall call(m, s, rng);
  print_call_figures(call, what);
  return args.target.empty() ? bench_on_host(call, args) : bench_on_device(call, args);
}

}  // namespace

int32_t model_time_steps(const CompiledModel& m, std::string* from) {
  const nlohmann::json r = nlohmann::json::parse(m.report_json, nullptr, false);
  const auto positive = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (1 << 20);
  };
  if (r.is_object()) {
    if (r.contains("time_steps") && positive(r["time_steps"])) {
      *from = "the ONNX input's sequence length";
      return r["time_steps"].get<int32_t>();
    }
    if (r.contains("max_time_steps") && positive(r["max_time_steps"])) {
      *from = "the model's --max-time-steps";
      return r["max_time_steps"].get<int32_t>();
    }
    const nlohmann::json c = r.value("calibration", nlohmann::json());
    if (c.is_object() && c.contains("steps") && c.contains("sequences") && positive(c["sequences"]) &&
        c["steps"].is_number_integer()) {
      const int64_t mean = (c["steps"].get<int64_t>() + c["sequences"].get<int64_t>() / 2) / c["sequences"].get<int64_t>();
      if (mean >= 1 && mean <= (1 << 20)) {
        *from = "the calibration sequences' mean length";
        return static_cast<int32_t>(mean);
      }
    }
  }
  *from = "the default: the model's report gives no sequence length";
  return kDefaultBenchSteps;
}

std::vector<int8_t> bench_input(const CompiledModel& m, const SequenceShape& shape, std::mt19937_64& rng) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<int8_t> x(static_cast<size_t>(shape.batch) * static_cast<size_t>(shape.time_steps) *
                        static_cast<size_t>(m.input_size()));
  if (m.buffers.front().type != QLSTM_ELEMENT_S8) {
    // A 16x8 input: the values quantized to its type, as raw bytes; token ids: uniform over the
    // embedding's rows, as int32 bytes.
    std::vector<float> f(x.size());
    if (m.token_ids()) {
      std::uniform_int_distribution<int32_t> id(0, m.ops.front().as<DerivedEmbedding>().table_rows - 1);
      for (float& v : f) v = static_cast<float>(id(rng));
    } else {
      for (float& v : f) v = n01(rng);
    }
    const std::vector<uint8_t> raw = quantize_raw_input(m, f);
    return std::vector<int8_t>(raw.begin(), raw.end());
  }
  for (int8_t& v : x) v = m.input_quant().quantize(n01(rng));
  return x;
}

TargetBench bench_on_target(const CompiledModel& m, const std::vector<int8_t>& x, const SequenceShape& shape,
                            const std::string& cpu, const std::string& variant, bool profile) {
  const std::vector<int8_t> expected = host_simulation(m, x, shape);
  const RuntimeProgram program = runtime_program(m, shape.batch, shape.time_steps, shape.layout);
  TargetBench b;
  b.op_macs = op_macs(program, shape.batch, shape.time_steps);
  for (int64_t n : b.op_macs) b.macs += n;
  // The whole program in one case on the device; the firmware marks each op's call.
  const device::Target target = device::find_target(cpu);
  device::BundleCase c = device::program_case("bench", program.table(), shape.time_steps);
  c.input = x.data();
  c.check = true;
  c.expected = expected.data();
  const device::TempFile bundle("qlstm_bench_bundle"), counts("qlstm_bench_icount");
  write_file_atomically(bundle.path(), device::bundle({c}));
  device::RunOptions options;
  options.capture = true;
  options.icount_out = counts.path();
  options.profile = profile;
  const device::RunResult r = device::run_firmware(target, {"bench", bundle.path(), variant}, options);
  b.op_instructions = device::read_icounts(counts.path());
  b.op_cycles = device::read_cycles(counts.path());
  b.variant = console_value(r.console, "variant: ");
  if (r.exit_status != 0 || b.op_instructions.size() != m.ops.size() || b.op_cycles.size() != m.ops.size() ||
      b.variant.empty()) {
    throw CompileError("the " + cpu + " firmware failed (exit status " + std::to_string(r.exit_status) + ", " +
                       std::to_string(b.op_instructions.size()) + " counts for " + std::to_string(m.ops.size()) +
                       " ops):\n" + r.console);
  }
  for (uint64_t k : b.op_instructions) b.instructions += k;
  for (uint64_t k : b.op_cycles) b.cycles += k;
  b.cpu = target.cpu;
  b.qemu_machine = target.qemu_machine;
  b.qemu_cpu = target.qemu_cpu;
  if (has_op(program, QLSTM_OP_LSTM_S8) != has_op(program, QLSTM_OP_GRU_S8)) {
    // The size probe of the program's recurrent kernel (targets/cortex-m/CMakeLists.txt).
    const device::KernelSize k =
        device::kernel_size(target, has_op(program, QLSTM_OP_GRU_S8) ? "gru_" + b.variant : b.variant);
    b.kernel_size_measured = true;
    b.kernel_flash_bytes = k.flash_bytes;
    b.kernel_ram_bytes = k.ram_bytes;
  }
  if (profile) {
    b.profile = device::read_profile(counts.path());
    b.classes = device::read_classes(counts.path());
  }
  return b;
}

int bench_command(const BenchArgs& args) {
  if (args.model.empty() && args.shape.empty()) {
    throw UsageError("give a compiled model or --shape B=..,T=..,I=..,H=..[,time_major]");
  }
  if (args.cell != "lstm" && args.cell != "lstm_repeated" && args.cell != "gru" && args.cell != "gru_repeated" &&
      args.cell != "rnn" && args.cell != "rnn_relu") {
    throw UsageError("--cell: '" + args.cell + "' is not lstm, lstm_repeated, gru, gru_repeated, rnn or rnn_relu");
  }
  if (!args.model.empty() && args.cell != "lstm") throw UsageError("--cell is for --shape without a model");
  ShapeSpec s = args.shape.empty() ? ShapeSpec{} : parse_shape(args.shape);
  std::mt19937_64 rng(kBenchSeed);
  if (!args.model.empty()) {
    const CompiledModel m = load_model_file(args.model);
    // I is the program's input width, H the first recurrent op's hidden size (the op a synthetic shape is).
    int32_t first_h = 0;
    for (const ProgramOp& op : m.ops) {
      if (op.recurrent()) {
        first_h = op.hidden_size();
        break;
      }
    }
    if ((s.input_size != 0 && s.input_size != m.input_size()) || (s.hidden_size != 0 && s.hidden_size != first_h)) {
      throw UsageError("--shape I/H do not match the model's input_size " + std::to_string(m.input_size()) +
                       " and hidden_size " + std::to_string(first_h));
    }
    if (s.time_steps == 0) {
      std::string from;
      s.time_steps = model_time_steps(m, &from);
      std::printf("time steps: %d (%s)\n", s.time_steps, from.c_str());
    }
    return bench_program(m, s, args.model, args, rng);
  }
  if (s.time_steps == 0 || s.input_size == 0 || s.hidden_size == 0) {
    throw UsageError("--shape needs T=, I= and H= (B= defaults to 1)");
  }
  const CompiledModel m = synthetic_model(s, args.cell, rng);
  const std::string what = args.cell == "gru"             ? "GRU"
                           : args.cell == "gru_repeated"  ? "GRU (its input one step, repeated)"
                           : args.cell == "rnn"           ? "RNN (tanh)"
                           : args.cell == "rnn_relu"      ? "RNN (ReLU)"
                           : args.cell == "lstm_repeated" ? "LSTM (its input one step, repeated)"
                                                          : "LSTM";
  return bench_program(m, s, "synthetic " + what +
                                 " (PyTorch-initialized weights, calibrated on N(0,1))", args, rng);
}

}  // namespace cli
}  // namespace qlstm
