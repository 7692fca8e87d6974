// qlstm: the command-line tool. Subcommands:
//   verify-vectors PATH...   run kernel conformance vectors and compare bit for bit
//   variants                 list the kernel variants built in and whether this CPU runs them
//   compile / run / eval     the compiler and the host simulation (compile_cmd.h)
//   bench                    instructions on an emulated CPU, or host time (bench_cmd.h)
//   export-vectors           kernel vectors as a device bundle
// verify-vectors, run and bench take --target CPU to run on the emulated Cortex-M (device.h).
// Every subcommand exits 0, 1 or 2 as exit_status.h says; error_exit below is the one mapping.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_cmd.h"
#include "compile_cmd.h"
#include "device.h"
#include "exit_status.h"
#include "kernel_vectors.h"
#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/compiler/lower/quantized_lstm_s16.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace cli {

int error_exit(const char* command, const std::exception& e) {
  std::fprintf(stderr, "qlstm %s: error: %s\n", command, e.what());
  const bool bad_input = dynamic_cast<const UsageError*>(&e) != nullptr ||
                         dynamic_cast<const compiler::FileError*>(&e) != nullptr ||
                         dynamic_cast<const compiler::NpyError*>(&e) != nullptr ||
                         dynamic_cast<const vectors::FormatError*>(&e) != nullptr ||
                         dynamic_cast<const device::DeviceError*>(&e) != nullptr;
  return bad_input ? kExitBadInput : kExitRefused;
}

}  // namespace cli
}  // namespace qlstm

namespace {

using qlstm::cli::kExitBadInput;
using qlstm::cli::kExitRefused;

constexpr const char* kExitStatusFooter =
    "Exit status (every subcommand):\n"
    "  0  success\n"
    "  1  the input was read and refused or failed a check: a model outside the supported scope,\n"
    "     a compile error, constant calibration data, failed vectors, an output that differs\n"
    "  2  bad usage or a file that cannot be used: bad flags or values, a missing, unreadable or\n"
    "     malformed file, an output that cannot be written, an unknown target CPU or its missing\n"
    "     firmware or QEMU";

// A CLI11 check from a compiler parser that throws on a bad value (the message is the parser's).
template <typename Parse>
CLI::Validator parsed_by(Parse parse, const std::string& what) {
  return CLI::Validator(
      [parse](std::string& value) {
        try {
          parse(value);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      what);
}

// The entries of one variant list that `name` selects: "all" every one this CPU supports, else
// the one of that name (*unsupported set when this CPU lacks it). Empty: no such name.
template <class Variant>
std::vector<const Variant*> pick_variants(const Variant* const* all, size_t count, const std::string& name,
                                          bool* unsupported) {
  std::vector<const Variant*> out;
  for (size_t k = 0; k < count; ++k) {
    const bool supported = all[k]->is_supported == nullptr || all[k]->is_supported();
    if (name == "all" ? supported : name == all[k]->name) {
      if (!supported) {
        std::fprintf(stderr, "qlstm: variant '%s' is not supported on this CPU\n", all[k]->name);
        *unsupported = true;
      }
      out.push_back(all[k]);
    }
  }
  return out;
}

// What `--variant NAME` runs: LSTM cases through `lstm`, FC cases through `fc` (nullptr: the
// dispatch of qlstm_fc_s8). "default" is the dispatch of each op; a name may belong to one op's
// list only (then the other kind's files cannot run with it), but must be in one.
struct SelectedVariants {
  std::vector<const qlstm::LstmS8Variant*> lstm;
  std::vector<const qlstm::FcS8Variant*> fc;
  std::vector<const qlstm::LstmS16Variant*> lstm_s16;  // nullptr: qlstm_lstm_s16's dispatch
  std::vector<const qlstm::FcS16Variant*> fc_s16;      // nullptr: qlstm_fc_s16's dispatch
  std::vector<const qlstm::PoolS8Variant*> pool;       // nullptr: qlstm_pool_s8's dispatch
  std::vector<const qlstm::AddS8Variant*> add;         // nullptr: qlstm_add_s8's dispatch
  std::vector<const qlstm::MulS8Variant*> mul;         // nullptr: qlstm_mul_s8's dispatch
  std::vector<const qlstm::RnnS8Variant*> rnn;         // nullptr: qlstm_rnn_s8's dispatch
};
SelectedVariants select_variants(const std::string& name, bool* ok) {
  SelectedVariants s;
  *ok = true;
  if (name == "default") {
    s.lstm.push_back(&qlstm::lstm_s8_default_variant());
    s.fc.push_back(nullptr);
    s.lstm_s16.push_back(nullptr);
    s.fc_s16.push_back(nullptr);
    s.pool.push_back(nullptr);
    s.add.push_back(nullptr);
    s.mul.push_back(nullptr);
    s.rnn.push_back(nullptr);
    return s;
  }
  bool unsupported = false;
  size_t count = 0;
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&count);
  s.lstm = pick_variants(lstm, count, name, &unsupported);
  const qlstm::FcS8Variant* const* fc = qlstm::fc_s8_variants(&count);
  s.fc = pick_variants(fc, count, name, &unsupported);
  const qlstm::LstmS16Variant* const* lstm_s16 = qlstm::lstm_s16_variants(&count);
  s.lstm_s16 = pick_variants(lstm_s16, count, name, &unsupported);
  const qlstm::FcS16Variant* const* fc_s16 = qlstm::fc_s16_variants(&count);
  s.fc_s16 = pick_variants(fc_s16, count, name, &unsupported);
  const qlstm::PoolS8Variant* const* pool = qlstm::pool_s8_variants(&count);
  s.pool = pick_variants(pool, count, name, &unsupported);
  const qlstm::AddS8Variant* const* add = qlstm::add_s8_variants(&count);
  s.add = pick_variants(add, count, name, &unsupported);
  const qlstm::MulS8Variant* const* mul = qlstm::mul_s8_variants(&count);
  s.mul = pick_variants(mul, count, name, &unsupported);
  const qlstm::RnnS8Variant* const* rnn = qlstm::rnn_s8_variants(&count);
  s.rnn = pick_variants(rnn, count, name, &unsupported);
  if (s.lstm.empty() && s.fc.empty() && s.lstm_s16.empty() && s.fc_s16.empty() && s.pool.empty() && s.add.empty() &&
      s.mul.empty() && s.rnn.empty()) {
    std::fprintf(stderr, "qlstm: unknown variant '%s' (see 'qlstm variants')\n", name.c_str());
    *ok = false;
  }
  *ok = *ok && !unsupported;
  return s;
}

std::string cpu_list() {
  std::string s;
  for (const std::string& n : qlstm::device::cpu_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Whether the variants selected can run every case of the file; if not, says which kind they lack.
bool variants_cover(const qlstm::vectors::VectorFile& file, const SelectedVariants& variants,
                    const std::string& variant_name) {
  const char* path = file.path.c_str();
  if (!file.fc_cases.empty() && variants.fc.empty()) {
    std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not a fully connected variant (see "
                 "'qlstm variants')\n", path, variant_name.c_str());
    return false;
  }
  if (!file.cases.empty() && variants.lstm.empty()) {
    std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not an LSTM variant (see 'qlstm variants')\n",
                 path, variant_name.c_str());
    return false;
  }
  if (!file.rnn_cases.empty() && variants.rnn.empty()) {
    std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not an RNN variant (see 'qlstm variants')\n",
                 path, variant_name.c_str());
    return false;
  }
  if (!file.pool_cases.empty() && variants.pool.empty()) {
    std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not a pooling variant (see 'qlstm "
                 "variants')\n", path, variant_name.c_str());
    return false;
  }
  for (const auto& c : file.elementwise_cases) {
    if (c.multiply ? variants.mul.empty() : variants.add.empty()) {
      std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not an elementwise %s variant (see 'qlstm "
                   "variants')\n", path, variant_name.c_str(), c.multiply ? "multiply" : "add");
      return false;
    }
  }
  if ((!file.lstm_s16_cases.empty() && variants.lstm_s16.empty()) ||
      (!file.fc_s16_cases.empty() && variants.fc_s16.empty())) {
    std::fprintf(stderr, "qlstm verify-vectors: error: %s: variant '%s' is not a 16x8 variant (see 'qlstm variants')\n",
                 path, variant_name.c_str());
    return false;
  }
  return true;
}

// The cases of the kinds with one implementation (the reference), each run once.
template <class Count>
void verify_single_implementation(const qlstm::vectors::VectorFile& file, Count& count) {
  for (const auto& c : file.softmax_cases) {
    const std::string detail = "rows=" + std::to_string(c.params.rows) + " row_size=" + std::to_string(c.params.row_size);
    count(c.name, "reference", qlstm::vectors::run_softmax_case(c), detail);
  }  for (const auto& c : file.attention_cases) {
    const qlstm_attention_pool_s8_params& p = c.params;
    const std::string detail = "B=" + std::to_string(p.batch) + " T=" + std::to_string(p.time_steps) +
                               " W=" + std::to_string(p.row_size) +
                               (p.layout == QLSTM_LAYOUT_TIME_MAJOR ? " time-major" : " batch-major");
    count(c.name, "reference", qlstm::vectors::run_attention_pool_case(c), detail);
  }  for (const auto& c : file.layer_norm_cases) {
    const std::string detail = "rows=" + std::to_string(c.params.rows) + " row_size=" + std::to_string(c.params.row_size);
    count(c.name, "reference", qlstm::vectors::run_layer_norm_case(c), detail);
  }  for (const auto& c : file.log_softmax_cases) {
    const std::string detail = "rows=" + std::to_string(c.params.rows) + " row_size=" + std::to_string(c.params.row_size);
    count(c.name, "reference", qlstm::vectors::run_log_softmax_case(c), detail);
  }}

// Runs every case of one file through the selected variants; counts into passed / failed. false:
// the variant named cannot run this file's op.
bool verify_file(const qlstm::vectors::VectorFile& file, const SelectedVariants& variants, const std::string& variant_name,
                 bool verbose, long* passed, long* failed) {
  using qlstm::vectors::CaseResult;
  long file_passed = 0;
  size_t runs = 0;
  const char* path = file.path.c_str();
  auto count = [&](const std::string& name, const char* variant, const CaseResult& r, const std::string& detail) {
    ++runs;
    if (r.passed) {
      ++*passed;
      ++file_passed;
      if (verbose) std::printf("PASS %s: %s [%s] %s\n", path, name.c_str(), variant, detail.c_str());
    } else {
      ++*failed;
      std::printf("FAIL %s: %s [%s]: %s\n", path, name.c_str(), variant, r.mismatch.c_str());
    }
  };
  if (!variants_cover(file, variants, variant_name)) return false;
  for (const auto& c : file.cases) {
    for (const qlstm::LstmS8Variant* v : variants.lstm) {
      char detail[160];
      std::snprintf(detail, sizeof detail, "B=%d T=%d I=%d H=%d %s %s P=%d", c.dims().batch, c.dims().time_steps,
                    c.dims().input_size, c.dims().hidden_size, c.time_major() ? "time-major" : "batch-major",
                    c.stateful ? "stateful" : "stateless", c.block.cell_scale_power);
      count(c.name, v->name, qlstm::vectors::run_case(c, *v), detail);
    }
  }
  for (const auto& c : file.fc_cases) {
    for (const qlstm::FcS8Variant* v : variants.fc) {
      char detail[160];
      std::snprintf(detail, sizeof detail, "B=%d I=%d O=%d %s", c.block.rows, c.block.input_size, c.block.output_size,
                    c.block.per_channel ? "per-channel" : "per-tensor");
      count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_fc_case(c, v), detail);
    }
  }
  for (const auto& c : file.lstm_s16_cases) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "B=%d T=%d I=%d H=%d %s %s P=%d 16x8", c.dims().batch, c.dims().time_steps,
                  c.dims().input_size, c.dims().hidden_size, c.time_major() ? "time-major" : "batch-major",
                  c.stateful ? "stateful" : "stateless", c.block.cell_scale_power);
    for (const qlstm::LstmS16Variant* v : variants.lstm_s16) {
      count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_lstm_s16_case(c, v), detail);
    }
  }
  for (const auto& c : file.fc_s16_cases) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "B=%d I=%d O=%d 16x8", c.block.rows, c.block.input_size, c.block.output_size);
    for (const qlstm::FcS16Variant* v : variants.fc_s16) {
      count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_fc_s16_case(c, v), detail);
    }
  }
  for (const auto& c : file.pool_cases) {
    const qlstm_pool_s8_params& p = c.params;
    const std::string detail = std::string(p.kind == QLSTM_POOL_MAX ? "max" : "avg") + " " +
                               std::to_string(p.batch) + "x" + std::to_string(p.input_height) + "x" +
                               std::to_string(p.input_width) + "x" + std::to_string(p.channels) + " window " +
                               std::to_string(p.window_height) + "x" + std::to_string(p.window_width);
    for (const qlstm::PoolS8Variant* v : variants.pool) {
      count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_pool_case(c, v), detail);
    }
  }


  for (const auto& c : file.rnn_cases) {
    const qlstm_rnn_dims& d = c.block.dims;
    const std::string detail = "B=" + std::to_string(d.batch) + " T=" + std::to_string(d.time_steps) +
                               " I=" + std::to_string(d.input_size) + " H=" + std::to_string(d.hidden_size) +
                               (c.block.activation == QLSTM_RNN_RELU ? " relu" : " tanh") +
                               (c.stateful ? " stateful" : " stateless");
    for (const qlstm::RnnS8Variant* v : variants.rnn) {
      count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_rnn_case(c, v), detail);
    }
  }


  for (const auto& c : file.elementwise_cases) {
    const std::string detail = std::string(c.multiply ? "mul" : "add") + " size=" + std::to_string(c.size());
    if (c.multiply) {
      for (const qlstm::MulS8Variant* v : variants.mul) {
        count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_elementwise_case(c, nullptr, v), detail);
      }
    } else {
      for (const qlstm::AddS8Variant* v : variants.add) {
        count(c.name, v != nullptr ? v->name : "default", qlstm::vectors::run_elementwise_case(c, v, nullptr), detail);
      }
    }
  }
  verify_single_implementation(file, count);
  std::printf("%s: %zu cases, %ld of %zu runs bit-exact\n", path, file.case_count(), file_passed, runs);
  return true;
}

int verify_vectors(const std::vector<std::string>& paths, const std::string& variant_name,
                   bool verbose) {
  bool ok = true;
  const SelectedVariants variants = select_variants(variant_name, &ok);
  if (!ok) return kExitBadInput;
  const std::vector<std::string> files = qlstm::vectors::collect_vector_files(paths);
  if (files.empty()) throw qlstm::cli::UsageError("no .json files under the given paths");
  long passed = 0, failed = 0, malformed = 0, unrun = 0;
  for (const std::string& path : files) {
    qlstm::vectors::VectorFile file;
    try {
      file = qlstm::vectors::load_vector_file(path);
    } catch (const qlstm::vectors::FormatError& e) {
      std::fprintf(stderr, "qlstm verify-vectors: error: %s\n", e.what());
      ++malformed;
      continue;
    }
    if (!verify_file(file, variants, variant_name, verbose, &passed, &failed)) ++unrun;
  }
  if (malformed > 0) {
    std::fprintf(stderr, "qlstm verify-vectors: %ld malformed file(s)\n", malformed);
  }
  std::printf("%ld passed, %ld failed\n", passed, failed);
  if (malformed > 0 || unrun > 0) return kExitBadInput;
  return failed == 0 ? 0 : kExitRefused;
}

std::vector<qlstm::vectors::VectorFile> load_all(const std::vector<std::string>& paths) {
  std::vector<qlstm::vectors::VectorFile> files;
  for (const std::string& p : qlstm::vectors::collect_vector_files(paths)) {
    files.push_back(qlstm::vectors::load_vector_file(p));
  }
  return files;
}

size_t case_count(const std::vector<qlstm::vectors::VectorFile>& files) {
  size_t n = 0;
  for (const auto& f : files) n += f.case_count();
  return n;
}

int export_vectors(const std::vector<std::string>& paths, const std::string& out) {
  const std::vector<qlstm::vectors::VectorFile> files = load_all(paths);
  qlstm::compiler::write_file_atomically(out, qlstm::vectors::device_bundle(files));
  std::printf("%zu cases -> %s\n", case_count(files), out.c_str());
  return 0;
}

// verify-vectors --target CPU: the same cases, run by the firmware under QEMU; it prints the
// FAIL lines and the "N passed, N failed" line itself. A firmware that fails otherwise (a fault,
// a bad variant name) is a failed check: 1.
int verify_vectors_on_target(const std::vector<std::string>& paths, const std::string& variant,
                             const std::string& cpu) {
  const qlstm::device::Target target = qlstm::device::find_target(cpu);
  const std::vector<qlstm::vectors::VectorFile> files = load_all(paths);
  const size_t cases = case_count(files);
  if (cases == 0) throw qlstm::cli::UsageError("no cases under the given paths");
  const qlstm::device::TempFile bundle("qlstm_vectors_bundle");
  qlstm::compiler::write_file_atomically(bundle.path(), qlstm::vectors::device_bundle(files));
  std::printf("%zu cases from %zu files on %s (QEMU %s)\n", cases, files.size(), cpu.c_str(),
              target.qemu_machine.c_str());
  const auto r = qlstm::device::run_firmware(target, {"verify", bundle.path(), variant}, {});
  if (r.exit_status == 0 || r.exit_status == kExitRefused) return r.exit_status;
  std::fprintf(stderr, "qlstm verify-vectors: error: the %s firmware exited with status %d\n", cpu.c_str(),
               r.exit_status);
  return kExitRefused;
}

// One op's variant list (LstmS8Variant, FcS8Variant, GruS8Variant: the same fields).
template <class V>
void print_variants(const V* const* all, size_t count, const char* declines) {
  for (size_t k = 0; k < count; ++k) {
    const bool supported = all[k]->is_supported == nullptr || all[k]->is_supported();
    std::printf("%-16s %s%s\n", all[k]->name, supported ? "supported" : "not supported",
                all[k]->can_run != nullptr ? declines : "");
  }
}

int list_variants() {
  size_t count = 0;
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&count);
  print_variants(lstm, count, ", declines some calls (e.g. reverse time)");
  std::printf("fully connected op:\n");
  const qlstm::FcS8Variant* const* fc = qlstm::fc_s8_variants(&count);
  print_variants(fc, count, ", declines some calls");
  std::printf("GRU op:\n");
  const qlstm::GruS8Variant* const* gru = qlstm::gru_s8_variants(&count);
  print_variants(gru, count, ", declines some calls");
  std::printf("RNN op:\n");
  const qlstm::RnnS8Variant* const* rnn = qlstm::rnn_s8_variants(&count);
  print_variants(rnn, count, ", declines some calls");
  std::printf("16x8 LSTM:\n");
  const qlstm::LstmS16Variant* const* lstm_s16 = qlstm::lstm_s16_variants(&count);
  print_variants(lstm_s16, count, ", declines some calls");
  std::printf("16x8 fully connected op:\n");
  const qlstm::FcS16Variant* const* fc_s16 = qlstm::fc_s16_variants(&count);
  print_variants(fc_s16, count, ", declines some calls");
  std::printf("pooling op:\n");
  const qlstm::PoolS8Variant* const* pool = qlstm::pool_s8_variants(&count);
  print_variants(pool, count, ", declines some calls");
  std::printf("elementwise add:\n");
  const qlstm::AddS8Variant* const* add = qlstm::add_s8_variants(&count);
  print_variants(add, count, ", declines some calls");
  std::printf("elementwise multiply:\n");
  const qlstm::MulS8Variant* const* mul = qlstm::mul_s8_variants(&count);
  print_variants(mul, count, ", declines some calls");
  std::printf("default: per call, the first supported variant above that can run the call\n");
  return 0;
}

// verify-vectors' and export-vectors' options.
struct VectorArgs {
  std::vector<std::string> paths;
  std::string variant = "default";
  bool verbose = false;
  std::string target;
  std::string out;  // export-vectors: the bundle
};

CLI::App* add_verify_vectors(CLI::App* app, VectorArgs* a) {
  CLI::App* vv = app->add_subcommand(
      "verify-vectors", "Run kernel test vectors (files or folders of *.json) bit for bit");
  vv->add_option("paths", a->paths, "vector files or folders")->required();
  vv->add_option("--variant", a->variant,
                 "kernel variant: 'default' (what qlstm_lstm_s8 and qlstm_fc_s8 run), 'all' (each "
                 "supported one), or a name from 'qlstm variants'")
      ->capture_default_str();
  vv->add_flag("-v,--verbose", a->verbose, "print every passing case");
  vv->add_option("--target", a->target, "run on the emulated CPU instead of the host: " + cpu_list());

  return vv;
}

CLI::App* add_compile(CLI::App* app, qlstm::cli::CompileArgs* ca) {
  CLI::App* comp = app->add_subcommand("compile", "Compile an ONNX LSTM into a fused int8 LSTM");
  comp->add_option("model", ca->model, "the ONNX model (LSTM layers, one or stacked, either direction)")->required();
  comp->add_option("--calibration", ca->calibration, "float32 .npy files of sequences in the model's layout")
      ->required();
  comp->add_option("--validation", ca->validation,
                   ".npy/.npz sequences the search scores on and the report's held-out SQNR is measured on, "
                   "never observed (default: k-fold over the calibration sequences)");
  comp->add_option("-o,--output-dir", ca->outdir, "output folder")->capture_default_str();
  comp->add_option("--name", ca->name, "base name of the outputs (default: the model file's)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == qlstm::compiler::c_identifier(v) ? std::string()
                                                          : "--name '" + v + "' is not a C identifier (letters, digits, '_')";
          },
          "C identifier"));
  comp->add_option("--target", ca->target,
                   "the Cortex-M CPU the firmware is for: the report (runtime_code) and the summary give the "
                   "runtime code a firmware of the emitted source keeps on it, as the host build's kind probes "
                   "measured it: " + cpu_list());
  comp->add_option("--batch", ca->batch,
                   "batch size the firmware source is generated for (default: the batch a learned per-row "
                   "initial state fixes, else 1)")
      ->check(CLI::PositiveNumber);
  const auto observer = parsed_by([](const std::string& v) { qlstm::compiler::parse_observer(v); }, "OBSERVER");
  // Each of these, when given, is kept as given: the search tunes only the ones left out.
  CLI::Option* input_observer =
      comp->add_option("--input-observer", ca->input_observer,
                       "minmax, percentile[:P], mse, kl (default: searched, starting from minmax)")
          ->capture_default_str()->check(observer);
  CLI::Option* output_observer =
      comp->add_option("--output-observer", ca->output_observer, "minmax, percentile[:P], mse, kl (default: searched)")
          ->capture_default_str()->check(observer);
  CLI::Option* weights =
      comp->add_option("--weights", ca->weights, "weight scales: maxabs or mse (default: per-block clips searched)")
          ->capture_default_str()
          ->check(parsed_by([](const std::string& v) { qlstm::compiler::parse_weight_method(v); }, "METHOD"));
  CLI::Option* cell_scale =
      comp->add_option("--cell-scale", ca->cell_scale,
                       "calibrated[:HEADROOM], sequence-bound:T, fixed:P (default: calibrated, headroom searched)")
          ->capture_default_str()
          ->check(parsed_by([](const std::string& v) { qlstm::compiler::parse_cell_policy(v); }, "POLICY"));
  comp->add_flag("!--no-search", ca->search, "use exactly the options given (no accuracy search)");
  comp->add_option("--activations", ca->activations,
                   "int8, int16 or int16:L,M,...: 16x8 (int16 activations and state, int8 weights, CMSIS-NN's "
                   "16x8 arithmetic) for every LSTM layer or the listed ones (from 0); the head follows the "
                   "last layer up to the first op without a 16x8 kernel (an activation table runs in int8 after "
                   "a requantization; a softmax over 2 or more values is 16x8)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& v) { qlstm::compiler::parse_activations(v, 1 << 16); }, "ACTIVATIONS"));
  comp->add_option("--int16-headroom", ca->int16_headroom,
                   "16x8 boundaries cover 2^BITS times the calibration's max |v| (an LSTM's output at most 1, "
                   "its bound): values beyond the calibration are kept for a few dB of int16 rounding noise")
      ->capture_default_str()
      ->check(CLI::Range(0, qlstm::compiler::CompileOptions::kMaxS16HeadroomBits));
  CLI::Option* weight_rounding =
      comp->add_option("--weight-rounding", ca->weight_rounding,
                       "nearest, or adaptive: each weight rounded up or down for the least gate error on the "
                       "calibration data (default: searched, starting from nearest)")
          ->capture_default_str()
          ->check(parsed_by([](const std::string& v) { qlstm::compiler::parse_weight_rounding(v); }, "ROUNDING"));
  CLI::Option* bias_correction = comp->add_flag(
      "--bias-correction", ca->bias_correction, "fold the weights' expected error into the bias (default: searched)");
  comp->callback([ca, input_observer, output_observer, weights, weight_rounding, cell_scale, bias_correction] {
    ca->user_fixed.weight_rounding = weight_rounding->count() > 0;
    ca->user_fixed.input_observer = input_observer->count() > 0;
    ca->user_fixed.output_observer = output_observer->count() > 0;
    ca->user_fixed.cell_headroom = cell_scale->count() > 0;
    ca->user_fixed.bias_correction = bias_correction->count() > 0;
    ca->user_fixed.weights = weights->count() > 0;
  });
  comp->add_option("--max-time-steps", ca->max_time_steps,
                   "a stacked model's longest call: sizes the emitted activation buffers (default: the ONNX input's T)")
      ->check(CLI::Range(1, 1 << 20));

  return comp;
}

CLI::App* add_run(CLI::App* app, qlstm::cli::RunArgs* ra) {
  CLI::App* run = app->add_subcommand("run", "Run a compiled model on the host, bit-exact with the device");
  run->add_option("model", ra->model, "the .qlstm file")->required();
  run->add_option("--input", ra->input, "input .npy (int8; float32 with --float)")->required();
  run->add_option("--output", ra->output,
                 "output .npy: the model's output, per step in the input's layout, or [B, W] for one row per sequence")
      ->required();
  run->add_flag("--float", ra->float_io,
               "float32 in and out (the model's own graph output, e.g. a softmax's probabilities), quantized and "
               "dequantized at the boundaries");
  run->add_option("--target", ra->target, "run on the emulated CPU instead of the host: " + cpu_list());
  run->add_option("--chunk", ra->chunk, "stream: reset, then stateful calls of N time steps each (equals one call)")
      ->check(CLI::Range(1, 1 << 30));
  run->add_option("--h0", ra->h0, "initial hidden state .npy [ops, B, H] (int8, a GRU model's int16 Q0.15; float32 with --float)");
  run->add_option("--c0", ra->c0, "initial cell state .npy [ops, B, H] (int16 at 2^P; float32 with --float)");
  run->add_option("--h-n", ra->h_n, "write the final hidden state .npy [ops, B, H] (as --h0)");
  run->add_option("--c-n", ra->c_n, "write the final cell state .npy [ops, B, H]");

  return run;
}

CLI::App* add_bench(CLI::App* app, qlstm::cli::BenchArgs* ba) {
  CLI::App* bench = app->add_subcommand(
      "bench", "Measure one call of a model's program: executed instructions on an emulated CPU, or time on the host");
  bench->footer(
      std::string("With --target the figure is the number of instructions the emulated CPU executed in the\n"
      "call, counted by the project's QEMU plugin (tools/qemu_icount): not cycles (QEMU models no\n"
      "pipeline, wait states or memory timing). With a program of several ops, each op's count, then\n"
      "the sum.\n"
      "A model runs at B=1 and at its own sequence length T: the ONNX input's T (\"time_steps\" in\n"
      "NAME_report.json), else a stacked model's --max-time-steps, else the mean length of the\n"
      "calibration sequences; the first line says which. --shape B=..,T=.. overrides them.\n"
      "On the host, every variant built in and supported on this CPU also runs on the same input\n"
      "and is compared with the reference variant, one line each; a difference exits 1.\n" +
      std::string(kExitStatusFooter)));
  bench->add_option("model", ba->model, "a .qlstm file (or give --shape)");
  bench->add_option("--shape", ba->shape, "B=1,T=49,I=10,H=64[,time_major] (with a model: B and T; T defaults to the model's own)");
  bench->add_option("--cell", ba->cell,
                    "with --shape: the synthetic layer, lstm, lstm_repeated (a decoder: one input step read at every "
                    "step), gru, gru_repeated, rnn (tanh) or rnn_relu")
      ->capture_default_str();
  bench->add_option("--target", ba->target, "the emulated CPU: " + cpu_list());
  bench->add_option("--variant", ba->variant, "kernel variant (see 'qlstm variants')")->capture_default_str();
  bench->add_flag("--profile", ba->profile, "with --target: instructions and estimated cycles per function and class");
  bench->add_option("--runs", ba->min_runs, "host: at least this many timed calls")->capture_default_str()
      ->check(CLI::PositiveNumber);

  return bench;
}

CLI::App* add_export_vectors(CLI::App* app, VectorArgs* a) {
  CLI::App* ex = app->add_subcommand("export-vectors", "Write kernel vectors as a bundle for the device's vector runner");
  ex->add_option("paths", a->paths, "vector files or folders")->required();
  ex->add_option("-o,--output", a->out, "the bundle file")->required();

  return ex;
}

CLI::App* add_eval(CLI::App* app, qlstm::cli::EvalArgs* ea) {
  CLI::App* ev = app->add_subcommand("eval", "Accuracy of a compiled model against its float ONNX source");
  ev->add_option("onnx", ea->onnx, "the ONNX model")->required();
  ev->add_option("model", ea->model, "the .qlstm file compiled from it")->required();
  ev->add_option("--data", ea->data, "float32 .npy sequences in the model's layout")->required();
  ev->add_option("--plot", ea->plot, "write an SVG: float vs int8 over time, and the error histogram");
  ev->add_option("--labels", ea->labels,
                 "a classifier's true class per sequence, integer .npy [B]: top-1 accuracy float vs int8");
  ev->add_option("--targets", ea->targets,
                 "a forecaster's expected outputs, float32 .npy of the output's shape: its error float vs int8");
  ev->add_option("--units", ea->units,
                 "with --targets: a JSON file whose \"output_units\" {name, scale, offset} give that error in the "
                 "user's units (v * scale + offset)");
  ev->add_option("--h0", ea->h0,
                 "initial hidden state of both runs, float32 .npy [ops, B, H] (default: the model's own; zero for a "
                 "state input)");
  ev->add_option("--c0", ea->c0, "initial cell state of both runs, float32 .npy [ops, B, H] (as --h0)");
  ev->add_option("--json", ea->json, "write every figure printed (SQNR per output, saturation, ...) as JSON");

  return ev;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qlstm: fused int8 LSTM compiler and runtime tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "qlstm 0.1.0");
  app.footer(kExitStatusFooter);

  VectorArgs va, xa;
  qlstm::cli::CompileArgs ca;
  qlstm::cli::RunArgs ra;
  qlstm::cli::BenchArgs ba;
  qlstm::cli::EvalArgs ea;
  CLI::App* vv = add_verify_vectors(&app, &va);
  CLI::App* vars = app.add_subcommand("variants", "List the kernel variants built in");
  CLI::App* comp = add_compile(&app, &ca);
  CLI::App* run = add_run(&app, &ra);
  CLI::App* bench = add_bench(&app, &ba);
  CLI::App* ex = add_export_vectors(&app, &xa);
  CLI::App* ev = add_eval(&app, &ea);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help and --version: 0
    return rc == 0 ? 0 : kExitBadInput;
  }
  const CLI::App* sub = app.get_subcommands().front();
  try {
    if (sub == vv) return va.target.empty() ? verify_vectors(va.paths, va.variant, va.verbose)
                                            : verify_vectors_on_target(va.paths, va.variant, va.target);
    if (sub == bench) return qlstm::cli::bench_command(ba);
    if (sub == vars) return list_variants();
    if (sub == comp) return qlstm::cli::compile_command(ca);
    if (sub == run) return qlstm::cli::run_command(ra);
    if (sub == ev) return qlstm::cli::eval_command(ea);
    if (sub == ex) return export_vectors(xa.paths, xa.out);
  } catch (const std::exception& e) {
    return qlstm::cli::error_exit(sub->get_name().c_str(), e);
  }
  return kExitBadInput;
}
