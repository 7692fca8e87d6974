// qlstm bench: one kernel call measured on the emulated device (executed instructions, exact) or
// on the host (median wall time over many calls), for a compiled model or a synthetic shape.
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
#include "qlstm/compiler/file_io.h"
#include "qlstm/compiler/model_file.h"
#include "qlstm/compiler/quantized_lstm.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace cli {
namespace {

using namespace qlstm::compiler;

constexpr uint64_t kBenchSeed = 20261202;

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

// A float LSTM with PyTorch's default initialization (uniform in +-1/sqrt(H)), calibrated on
// standard-normal inputs: typical scales, as a trained model would have them.
DerivedLstm synthetic_model(const ShapeSpec& s, std::mt19937_64& rng) {
  const size_t I = static_cast<size_t>(s.input_size), H = static_cast<size_t>(s.hidden_size);
  const float k = 1.0f / std::sqrt(static_cast<float>(H));
  std::uniform_real_distribution<float> u(-k, k);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const std::vector<float> w_ih = fill(4 * H * I), w_hh = fill(4 * H * H), b_ih = fill(4 * H), b_hh = fill(4 * H);
  const FloatLstm f = FloatLstm::from_torch(s.input_size, s.hidden_size, w_ih, w_hh, b_ih, b_hh);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  CalibrationSet cal;
  const SequenceShape cal_shape{4, s.time_steps, Layout::kBatchMajor};
  std::vector<float> x(4 * static_cast<size_t>(s.time_steps) * I);
  for (float& v : x) v = n01(rng);
  cal.add_batch(x, cal_shape, s.input_size);
  CompileOptions options;
  options.tuning = Tuning::kNone;
  return QuantizedLstm::compile(f, cal, options).derived();
}

const LstmS8Variant* host_variant(const std::string& name) {
  if (name == "default") return &lstm_s8_default_variant();
  size_t n = 0;
  const LstmS8Variant* const* all = lstm_s8_variants(&n);
  for (size_t k = 0; k < n; ++k) {
    if (name == all[k]->name) {
      if (all[k]->is_supported != nullptr && !all[k]->is_supported()) {
        throw UsageError("variant '" + name + "' is not supported on this CPU");
      }
      return all[k];
    }
  }
  throw UsageError("unknown variant '" + name + "' (see 'qlstm variants')");
}

// The sequence length a compiled model is benchmarked at, and where it comes from: its report's
// "time_steps" (the ONNX input's T), "max_time_steps" (a stacked model's longest call), else the
// calibration sequences' mean length; kDefaultBenchSteps when the report knows none.
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

// The runtime's program of a model and the memory a call needs, on the host.
struct HostProgram {
  RuntimeProgram program;
  ProgramMemory memory;
  std::vector<std::max_align_t> scratch;
  std::vector<int16_t> cell;
  std::vector<int8_t> areas[2];

  HostProgram(const CompiledModel& m, const SequenceShape& shape)
      : program(runtime_program(m, shape.batch, shape.time_steps, shape.layout)),
        memory(program_memory(m, shape.batch, shape.time_steps)),
        scratch(memory.scratch_bytes / sizeof(std::max_align_t) + 1),
        cell(memory.cell_values),
        areas{std::vector<int8_t>(memory.activation_bytes), std::vector<int8_t>(memory.activation_bytes)} {}

  // One stateless call of the whole program with `variant` for every op (nullptr: dispatch).
  qlstm_status run(const LstmS8Variant* variant, const std::vector<int8_t>& x, std::vector<int8_t>* y,
                   int32_t time_steps) {
    qlstm_program_context ctx{scratch.data(), scratch.size() * sizeof(std::max_align_t), cell.data(),
                              {areas[0].data(), areas[1].data()}, memory.activation_bytes};
    const qlstm_program table = program.table();
    ProgramRunOptions options;
    options.variant = variant;
    return run_program_s8(&table, &ctx, x.data(), y->data(), time_steps, nullptr, nullptr, options);
  }
};

// Every variant built in and supported on this CPU against the reference variant, on the
// benchmark's input: one line each. Returns whether all are bit-exact.
bool variants_match_reference(HostProgram& p, const std::vector<int8_t>& x, size_t out_size, int32_t T) {
  const LstmS8Variant& ref = lstm_s8_reference_variant();
  std::vector<int8_t> want(out_size);
  const qlstm_status rs = p.run(&ref, x, &want, T);
  if (rs != QLSTM_OK) throw CompileError(std::string("reference kernel error: ") + qlstm_status_string(rs));
  size_t n = 0;
  const LstmS8Variant* const* all = lstm_s8_variants(&n);
  bool ok = true;
  for (size_t k = 0; k < n; ++k) {
    const LstmS8Variant& v = *all[k];
    if (&v == &ref || (v.is_supported != nullptr && !v.is_supported())) continue;
    std::vector<int8_t> got(out_size);
    const qlstm_status st = p.run(&v, x, &got, T);
    if (st == QLSTM_ERROR_NO_VARIANT) {
      std::printf("variant %s: declines this call (dispatch runs another)\n", v.name);
      continue;
    }
    if (st != QLSTM_OK) {
      std::printf("variant %s: FAILED with status %s\n", v.name, qlstm_status_string(st));
      ok = false;
      continue;
    }
    size_t at = 0;
    while (at < want.size() && want[at] == got[at]) ++at;
    if (at == want.size()) {
      std::printf("variant %s: bit-exact with reference\n", v.name);
    } else {
      std::printf("variant %s: DIFFERS from reference at output[%zu]: expected %d, got %d\n", v.name, at,
                  want[at], got[at]);
      ok = false;
    }
  }
  return ok;
}

std::string console_value(const std::string& console, const std::string& key) {
  const size_t at = console.find(key);
  if (at == std::string::npos) return "";
  const size_t end = console.find('\n', at);
  return console.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
}

// One call of the program of `m` over `s` (B, T, layout; I and H are the model's): its figures
// printed, the last line the instructions (target: the sum over the ops, each op's first) or the
// median microseconds (host). Returns the exit status.
int bench_program(const CompiledModel& m, const ShapeSpec& s, const std::string& what, const BenchArgs& args,
                  std::mt19937_64& rng) {
  const SequenceShape shape{s.batch, s.time_steps, s.time_major ? Layout::kTimeMajor : Layout::kBatchMajor};
  const size_t B = static_cast<size_t>(s.batch), T = static_cast<size_t>(s.time_steps);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<int8_t> x(B * T * static_cast<size_t>(m.input_size()));
  for (int8_t& v : x) v = m.input_quant().quantize(n01(rng));
  const std::vector<int8_t> expected = run_program_s8(m, x, shape);  // the host simulation
  int64_t macs = 0;
  for (const ProgramOp& op : m.ops) {
    macs += static_cast<int64_t>(B * T) * QLSTM_GATE_COUNT * op.lstm.hidden_size *
            (op.lstm.input_size + op.lstm.hidden_size);
  }
  const ProgramMemory mem = program_memory(m, s.batch, s.time_steps);
  const size_t call_ram = mem.scratch_bytes + mem.cell_values * sizeof(int16_t) + 2 * mem.activation_bytes;

  std::printf("model: %s\n", what.c_str());
  std::printf("shape: B=%d T=%d I=%d H=%d %s, %lld MACs\n", s.batch, s.time_steps, m.input_size(),
              m.ops.back().lstm.hidden_size, s.time_major ? "time-major" : "batch-major", static_cast<long long>(macs));
  if (m.ops.size() > 1) std::printf("program: %zu ops\n", m.ops.size());
  std::printf("flash for the weights and biases: %zu bytes\n", mem.flash_bytes());
  std::printf("RAM per call: %zu bytes (scratch %zu, cell state %zu, activations %zu)\n", call_ram,
              mem.scratch_bytes, mem.cell_values * sizeof(int16_t), 2 * mem.activation_bytes);

  if (args.target.empty()) {
    const LstmS8Variant& v = *host_variant(args.variant);
    const LstmS8Variant* forced = &v == &lstm_s8_default_variant() ? nullptr : &v;
    HostProgram program(m, shape);
    std::vector<int8_t> y(expected.size());
    std::vector<double> us;
    const auto run_once = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      const qlstm_status st = program.run(forced, x, &y, s.time_steps);
      const auto t1 = std::chrono::steady_clock::now();
      if (st != QLSTM_OK) {
        throw CompileError(std::string("kernel error (variant ") + v.name + "): " + qlstm_status_string(st));
      }
      return std::chrono::duration<double, std::micro>(t1 - t0).count();
    };
    run_once();  // warm-up
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(args.min_ms);
    while (static_cast<int>(us.size()) < args.min_runs || std::chrono::steady_clock::now() < until) {
      us.push_back(run_once());
    }
    std::sort(us.begin(), us.end());
    size_t n = 0;
    const LstmS8Variant* const* all = lstm_s8_variants(&n);
    const LstmS8Variant* chosen = select_lstm_s8_variant(all, n, program.program.ops.front().lstm);
    if (forced == nullptr && chosen != nullptr) {
      std::printf("host variant: %s (dispatched: %s)\n", v.name, chosen->name);
    } else {
      std::printf("host variant: %s\n", v.name);
    }
    const bool exact = y == expected && variants_match_reference(program, x, y.size(), s.time_steps);
    std::printf("runs: %zu, min %.2f us, median per sequence: %.2f us\n", us.size(), us.front(), us[us.size() / 2]);
    std::printf("microseconds: %.2f\n", us[us.size() / 2]);
    return exact ? kExitOk : kExitRefused;
  }

  // The whole program in one case on the device; the firmware marks each op's call.
  const device::Target target = device::find_target(args.target);
  device::BundleCase c;
  c.name = "bench";
  c.ops = runtime_program(m, shape.batch, shape.time_steps, shape.layout).ops;
  for (const ProgramBuffer& b : m.buffers) c.buffer_widths.push_back(b.width);
  c.input = x.data();
  c.check = true;
  c.expected = expected.data();
  const device::TempFile bundle("qlstm_bench_bundle"), counts("qlstm_bench_icount");
  write_file_atomically(bundle.path(), device::bundle({c}));
  device::RunOptions options;
  options.capture = true;
  options.icount_out = counts.path();
  options.profile = args.profile;
  const device::RunResult r = device::run_firmware(target, {"bench", bundle.path(), args.variant}, options);
  const std::vector<uint64_t> n = device::read_icounts(counts.path());
  const std::string variant = console_value(r.console, "variant: ");
  if (r.exit_status != 0 || n.size() != m.ops.size() || variant.empty()) {
    std::fprintf(stderr, "qlstm bench: error: the %s firmware failed (exit status %d, %zu counts for %zu ops):\n%s",
                 args.target.c_str(), r.exit_status, n.size(), m.ops.size(), r.console.c_str());
    return kExitRefused;
  }
  uint64_t total = 0;
  for (uint64_t k : n) total += k;
  const device::KernelSize k = device::kernel_size(target, variant);
  std::printf("target: %s (QEMU %s, -cpu %s), variant: %s\n", target.cpu.c_str(), target.qemu_machine.c_str(),
              target.qemu_cpu.c_str(), variant.c_str());
  std::printf("output: bit-exact with the host simulation\n");
  std::printf("kernel flash: %lld bytes (code and tables), static RAM: %lld bytes\n",
              static_cast<long long>(k.flash_bytes), static_cast<long long>(k.ram_bytes));
  if (args.profile) {
    std::printf("instructions per function (blocks starting in it):\n");
    for (const auto& [name, count] : device::read_profile(counts.path())) {
      std::printf("  %10llu  %5.1f%%  %s\n", static_cast<unsigned long long>(count),
                  100.0 * static_cast<double>(count) / static_cast<double>(total), name.c_str());
    }
  }
  for (size_t o = 0; o < n.size() && n.size() > 1; ++o) {
    const DerivedLstm& d = m.ops[o].lstm;
    std::printf("op %zu (layer %zu %s): %llu instructions\n", o, o / static_cast<size_t>(m.directions),
                d.time_direction == QLSTM_TIME_REVERSE ? "reverse" : "forward", static_cast<unsigned long long>(n[o]));
  }
  std::printf("instructions per MAC: %.3f\n", static_cast<double>(total) / static_cast<double>(macs));
  std::printf("instructions: %llu\n", static_cast<unsigned long long>(total));
  return 0;
}

}  // namespace

int bench_command(const BenchArgs& args) {
  if (args.model.empty() && args.shape.empty()) {
    throw UsageError("give a compiled model or --shape B=..,T=..,I=..,H=..[,time_major]");
  }
  ShapeSpec s = args.shape.empty() ? ShapeSpec{} : parse_shape(args.shape);
  std::mt19937_64 rng(kBenchSeed);
  if (!args.model.empty()) {
    const CompiledModel m = load_model_file(args.model);
    const DerivedLstm& first = m.ops[0].lstm;
    if ((s.input_size != 0 && s.input_size != first.input_size) ||
        (s.hidden_size != 0 && s.hidden_size != first.hidden_size)) {
      throw UsageError("--shape I/H do not match the model's input_size " + std::to_string(first.input_size) +
                       " and hidden_size " + std::to_string(first.hidden_size));
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
  const CompiledModel m = single_op_model(synthetic_model(s, rng), "synthetic", !s.time_major);
  return bench_program(m, s, "synthetic (PyTorch-initialized weights, calibrated on N(0,1))", args, rng);
}

}  // namespace cli
}  // namespace qlstm
