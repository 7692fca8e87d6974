#include "device.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cxxabi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>

#include "bundle_format.h"
#include "qlstm/params_codec.h"

extern char** environ;

namespace qlstm {
namespace device {

namespace {

struct StringSink {
  std::string* out;
  void put(const uint8_t* bytes, size_t n) { out->append(reinterpret_cast<const char*>(bytes), n); }
};

std::string target_root() {
  if (const char* env = std::getenv("QLSTM_TARGET_DIR"); env != nullptr && *env != '\0') return env;
#ifdef QLSTM_TARGET_BUILD_DIR
  return QLSTM_TARGET_BUILD_DIR;
#else
  return "targets";
#endif
}

std::string icount_plugin() {
  if (const char* env = std::getenv("QLSTM_ICOUNT_PLUGIN"); env != nullptr && *env != '\0') return env;
#ifdef QLSTM_ICOUNT_PLUGIN_PATH
  return QLSTM_ICOUNT_PLUGIN_PATH;
#else
  return "libqlstm_icount.so";
#endif
}

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// QEMU's option syntax: a comma inside a value is written twice.
std::string qemu_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    o += c;
    if (c == ',') o += ',';
  }
  return o;
}

}  // namespace

const std::vector<std::string>& cpu_names() {
  static const std::vector<std::string> kNames = {"cortex-m55", "cortex-m55-nomve", "cortex-m33", "cortex-m4",
                                                  "cortex-m3"};
  return kNames;
}

Target find_target(const std::string& cpu) {
  bool known = false;
  std::string list;
  for (const std::string& n : cpu_names()) {
    known = known || n == cpu;
    list += (list.empty() ? "" : ", ") + n;
  }
  if (!known) throw DeviceError("unknown target CPU '" + cpu + "' (one of: " + list + ")");
  Target t;
  t.cpu = cpu;
  t.dir = target_root() + "/" + cpu;
  t.firmware = t.dir + "/qlstm_device.elf";
  std::ifstream info(t.dir + "/target.txt");
  if (!info || !is_file(t.firmware)) {
    throw DeviceError("no firmware for " + cpu + " in " + t.dir +
                      " (build it with the host build, which needs gcc-arm-none-eabi, or set QLSTM_TARGET_DIR)");
  }
  std::string key, value;
  while (info >> key && std::getline(info >> std::ws, value)) {
    if (key == "qemu_machine") t.qemu_machine = value;
    if (key == "qemu_cpu") t.qemu_cpu = value;
  }
  if (t.qemu_machine.empty() || t.qemu_cpu.empty()) {
    throw DeviceError(t.dir + "/target.txt: missing qemu_machine or qemu_cpu");
  }
  return t;
}

namespace {
// The runtime's .text input sections a firmware's linker map shows kept: (section, archive member)
// of each, with its size. GNU ld writes " .text.name  0xADDR  0xSIZE origin", the name alone on its
// line when it is long (then the address, size and origin on the next).
std::map<std::pair<std::string, std::string>, int64_t> runtime_code_sections(const std::string& map_path) {
  std::ifstream in(map_path);
  if (!in) throw DeviceError("no " + map_path + " (rebuild the firmware)");
  const std::string archive = "libqlstm_runtime.a(";
  // The probes' own variant lists (variants.cc built with QLSTM_BEST_VARIANT_ONLY) stand for the
  // runtime's, as examples/firmware builds them.
  const std::string best_variants = "/best_variants.cc.obj";
  std::map<std::pair<std::string, std::string>, int64_t> kept;
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  // The address, size and origin that follow a section's name; false when the line has none.
  auto add = [&](const std::string& section, std::istringstream& rest) {
    std::string address, size, origin;
    if (!(rest >> address >> size) || address.rfind("0x", 0) != 0 || size.rfind("0x", 0) != 0) return false;
    std::getline(rest >> std::ws, origin);
    const int64_t n = std::strtoll(size.c_str(), nullptr, 16);
    const size_t at = origin.find(archive);
    if (n > 0 && at != std::string::npos && ends_with(origin, ")")) {
      kept[{section, origin.substr(at + archive.size(), origin.size() - at - archive.size() - 1)}] = n;
    } else if (n > 0 && ends_with(origin, best_variants)) {
      kept[{section, "variants.cc.obj"}] = n;
    }
    return true;
  };
  std::string line, pending;
  bool in_map = false;
  while (std::getline(in, line)) {
    if (!in_map) {
      in_map = line == "Linker script and memory map";
      continue;
    }
    std::istringstream fields(line);
    if (!pending.empty()) {
      add(pending, fields);
      pending.clear();
    } else if (line.rfind(" .text", 0) == 0) {
      std::string name;
      fields >> name;
      if (!add(name, fields)) pending = name;  // a long name: the rest on the next line
    }
  }
  if (!in_map) throw DeviceError(map_path + ": not a linker map (no 'Linker script and memory map')");
  return kept;
}
}  // namespace

int64_t runtime_code_bytes(const Target& t, const std::vector<int32_t>& kinds) {
  std::map<std::pair<std::string, std::string>, int64_t> kept = runtime_code_sections(t.dir + "/kind_probe_none.map");
  for (int32_t k : std::set<int32_t>(kinds.begin(), kinds.end())) {
    for (const auto& s : runtime_code_sections(t.dir + "/kind_probe_" + std::to_string(k) + ".map")) kept.insert(s);
  }
  int64_t bytes = 0;
  for (const auto& s : kept) bytes += s.second;
  return bytes;
}

BundleCase single_op_case(const std::string& name, const qlstm_lstm_s8_params& params) {
  BundleCase c;
  c.name = name;
  qlstm_op op{};
  op.kind = QLSTM_OP_LSTM_S8;
  op.params = &params;
  op.input_buffer = 0;
  op.output_buffer = 1;
  c.ops = {OwnedOp(op)};
  c.buffer_widths = {params.dims.input_size, params.output_width > 0 ? params.output_width : params.dims.hidden_size};
  return c;
}

BundleCase program_case(const std::string& name, const qlstm_program& program, int32_t time_steps) {
  BundleCase c;
  c.name = name;
  for (int32_t k = 0; k < program.op_count; ++k) c.ops.emplace_back(program.ops[k]);  // each with a copy of its block
  c.buffer_widths.assign(program.buffer_widths, program.buffer_widths + program.buffer_count);
  c.buffer_steps.assign(program.buffer_steps, program.buffer_steps + program.buffer_count);
  if (program.buffer_types != nullptr) {
    c.buffer_types.assign(program.buffer_types, program.buffer_types + program.buffer_count);
  }
  c.batch = program.batch;
  c.time_steps = time_steps;
  c.layout = program.layout;
  return c;
}

namespace {

// The call's batch, steps and layout: the case's, or with batch 0 those of its first op (an LSTM).
struct CallShape {
  int32_t batch, time_steps, layout;
};
CallShape call_shape(const BundleCase& c) {
  if (c.batch == 0 && !c.ops.empty() && c.ops.front().op.kind == QLSTM_OP_LSTM_S8) {
    const qlstm_lstm_s8_params& p = op_block<qlstm_lstm_s8_params>(c.ops.front().op);
    return {p.dims.batch, p.dims.time_steps, p.layout};
  }
  return {c.batch, c.time_steps, c.layout};
}

}  // namespace

size_t output_count(const BundleCase& c) {
  if (c.buffer_widths.empty()) return 0;
  const bool one_step = !c.buffer_steps.empty() && c.buffer_steps.back() == QLSTM_BUFFER_ONE_STEP;
  const CallShape shape = call_shape(c);
  return static_cast<size_t>(shape.batch) * static_cast<size_t>(one_step ? 1 : shape.time_steps) *
         static_cast<size_t>(c.buffer_widths.back());
}

size_t output_bytes(const BundleCase& c) {
  return output_count(c) * (c.buffer_types.empty() ? 1 : qlstm_element_bytes(c.buffer_types.back()));
}

namespace {

// MAGIC, the version, the case count, then per case its record's byte count and the record, which
// write(case, writer) writes.
template <class Case, class Write>
std::string bundle_file(const char* magic, uint32_t version, const std::vector<Case>& cases, Write write) {
  std::string file;
  StringSink file_sink{&file};
  RecordWriter<StringSink> head(file_sink);
  file.append(magic, 4);
  head.i32("version", static_cast<int32_t>(version));
  head.i32("case_count", static_cast<int32_t>(cases.size()));
  for (const Case& c : cases) {
    std::string record;
    StringSink sink{&record};
    RecordWriter<StringSink> w(sink);
    write(c, w);
    head.i32("record_bytes", static_cast<int32_t>(record.size()));
    file += record;
  }
  return file;
}

}  // namespace

std::string bundle(const std::vector<BundleCase>& cases) {
  return bundle_file("QLVB", bundle::kBundleVersion, cases, [](const BundleCase& c, RecordWriter<StringSink>& w) {
    if (c.ops.empty() || c.buffer_widths.size() < 2) throw DeviceError("bundle: case '" + c.name + "' has no program");
    const CallShape shape = call_shape(c);
    const std::vector<int32_t> steps =
        c.buffer_steps.empty() ? std::vector<int32_t>(c.buffer_widths.size(), QLSTM_BUFFER_EVERY_STEP) : c.buffer_steps;
    if (steps.size() != c.buffer_widths.size()) throw DeviceError("bundle: case '" + c.name + "': buffer_steps");
    // Every buffer's type travels (all QLSTM_ELEMENT_S8 for an int8 program).
    const std::vector<int32_t> types =
        c.buffer_types.empty() ? std::vector<int32_t>(c.buffer_widths.size(), QLSTM_ELEMENT_S8) : c.buffer_types;
    if (types.size() != c.buffer_widths.size()) throw DeviceError("bundle: case '" + c.name + "': buffer_types");
    const bundle::CaseView v = {static_cast<int32_t>(c.name.size()),
                                c.name.data(),
                                (c.stateful ? bundle::kFlagStateful : 0) | (c.check ? bundle::kFlagExpected : 0),
                                shape.batch,
                                shape.time_steps,
                                static_cast<int32_t>(c.ops.size()),
                                static_cast<int32_t>(c.buffer_widths.size()),
                                c.buffer_widths.data(),
                                steps.data(),
                                types.data(),
                                shape.layout,
                                c.input,
                                c.h0,
                                c.c0,
                                c.expected,
                                c.final_h,
                                c.final_c};
    bundle::visit_case_header(v, w);
    std::vector<qlstm_op> ops;
    for (const OwnedOp& o : c.ops) ops.push_back(o.op);
    for (const qlstm_op& op : ops) visit_op_fields(op, w);
    const bundle::CaseSizes n = bundle::case_sizes(v, ops.data());
    if (n.input < 0) throw DeviceError("bundle: case '" + c.name + "' is too large");
    bundle::visit_case_data(v, n, w);
  });
}

std::string s16_bundle(const std::vector<S16BundleCase>& cases) {
  return bundle_file("QLSB", bundle::kS16BundleVersion, cases, [](const S16BundleCase& c, RecordWriter<StringSink>& w) {
    const bool stateful = c.lstm && c.stateful;
    const bundle::S16CaseView v = {static_cast<int32_t>(c.name.size()),
                                   c.name.data(),
                                   (stateful ? bundle::kFlagStateful : 0) | (c.check ? bundle::kFlagExpected : 0),
                                   c.lstm ? bundle::kS16Lstm : bundle::kS16Fc,
                                   c.fc,
                                   c.fc.bias != nullptr ? 1 : 0,
                                   c.lstm_params,
                                   c.input,
                                   c.h0,
                                   c.c0,
                                   c.expected,
                                   c.final_h,
                                   c.final_c};
    if (bundle::s16_case_sizes(v).input < 0) throw DeviceError("bundle: case '" + c.name + "' is too large");
    bundle::visit_s16_case(v, w);
  });
}

RunResult run_firmware(const Target& t, const std::vector<std::string>& args, const RunOptions& options) {
  std::string semihosting = "enable=on,target=native,arg=qlstm_device";
  for (const std::string& a : args) semihosting += ",arg=" + qemu_escape(a);
  std::vector<std::string> argv = {"timeout", "--kill-after=5", std::to_string(options.timeout_seconds),
                                   "qemu-system-arm", "-M", t.qemu_machine, "-cpu", t.qemu_cpu,
                                   "-nographic", "-monitor", "none", "-serial", "none",
                                   "-semihosting-config", semihosting, "-kernel", t.firmware};
  if (!options.icount_out.empty()) {
    const std::string plugin = icount_plugin();
    if (!is_file(plugin)) throw DeviceError("instruction counter plugin not found: " + plugin);
    argv.push_back("-plugin");
    // cpu=: the counter's cycle estimate for this core (the M55 without Helium is the same core).
    argv.push_back(qemu_escape(plugin) + ",out=" + qemu_escape(options.icount_out) + ",cpu=" + qemu_escape(t.cpu) +
                   (options.profile ? ",profile=on" : ""));
  }
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  int pipe_fd[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.capture) {
    if (::pipe(pipe_fd) != 0) throw DeviceError(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
  }
  std::fflush(stdout);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, "timeout", &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  RunResult r;
  if (options.capture) {
    ::close(pipe_fd[1]);
    if (err == 0) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(pipe_fd[0], buf, sizeof buf)) > 0) r.console.append(buf, static_cast<size_t>(n));
    }
    ::close(pipe_fd[0]);
  }
  if (err != 0) throw DeviceError(std::string("cannot start qemu-system-arm: ") + std::strerror(err));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  // timeout(1) exits 127 when it cannot run QEMU at all.
  if (r.exit_status == 127) throw DeviceError("qemu-system-arm not found (Debian package qemu-system-arm)");
  return r;
}

namespace {

// The numbers of the counter's "KEY N" lines, in order (one per marker pair).
std::vector<uint64_t> read_counter_lines(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::vector<uint64_t> counts;
  std::string line, word;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    uint64_t n = 0;
    if (fields >> word >> n && word == key) counts.push_back(n);
  }
  return counts;
}

}  // namespace

std::vector<uint64_t> read_icounts(const std::string& path) { return read_counter_lines(path, "instructions"); }

std::vector<uint64_t> read_cycles(const std::string& path) { return read_counter_lines(path, "cycles"); }

std::vector<ClassCount> read_classes(const std::string& path) {
  std::ifstream in(path);
  std::vector<ClassCount> rows;
  std::string line, word;
  int pairs = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    ClassCount c;
    if (!(fields >> word)) continue;
    if (word == "instructions" && ++pairs > 1) break;
    if (word == "class" && fields >> c.name >> c.instructions >> c.cycles) rows.push_back(c);
  }
  std::sort(rows.begin(), rows.end(), [](const ClassCount& a, const ClassCount& b) { return a.cycles > b.cycles; });
  return rows;
}

std::vector<FunctionCount> read_profile(const std::string& path) {
  std::ifstream in(path);
  std::vector<FunctionCount> rows;
  std::string line, word, name;
  int pairs = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> word)) continue;
    if (word == "instructions" && ++pairs > 1) break;
    FunctionCount f;
    if (word != "symbol" || !(fields >> name >> f.instructions)) continue;
    f.has_cycles = static_cast<bool>(fields >> f.cycles);
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    f.name = status == 0 && d != nullptr ? d : name;
    std::free(d);
    rows.push_back(f);
  }
  return rows;
}

TempFile::TempFile(const std::string& stem) {
  const char* dir = std::getenv("TMPDIR");
  std::string templ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/" + stem + ".XXXXXX";
  const int fd = ::mkstemp(templ.data());
  if (fd < 0) throw DeviceError("cannot create a temporary file " + templ + ": " + std::strerror(errno));
  ::close(fd);
  path_ = templ;
}

TempFile::~TempFile() { ::unlink(path_.c_str()); }

KernelSize kernel_size(const Target& t, const std::string& variant) {
  // kernel_sizes.txt: "name text data bss" of the size probes (targets/cortex-m/CMakeLists.txt).
  std::ifstream in(t.dir + "/kernel_sizes.txt");
  if (!in) throw DeviceError("no kernel_sizes.txt in " + t.dir + " (rebuild the firmware)");
  std::map<std::string, std::array<int64_t, 3>> sizes;
  std::string name;
  int64_t text = 0, data = 0, bss = 0;
  while (in >> name >> text >> data >> bss) sizes[name] = {text, data, bss};
  const auto none = sizes.find("none"), mine = sizes.find(variant);
  if (none == sizes.end() || mine == sizes.end()) {
    throw DeviceError("kernel_sizes.txt in " + t.dir + " has no size for '" + variant + "'");
  }
  KernelSize k;
  k.flash_bytes = mine->second[0] - none->second[0];
  k.ram_bytes = (mine->second[1] + mine->second[2]) - (none->second[1] + none->second[2]);
  return k;
}

}  // namespace device
}  // namespace qlstm
