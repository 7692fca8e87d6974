// _qlstm: the Python extension under `import qlstm` (python/qlstm/__init__.py is its typed,
// documented face). The compiler, the model file and the int8 program run exactly as `qlstm compile`
// and `qlstm run` do them (tools/qlstm/compile_run.h), in-process: no subprocess, no second
// implementation. Errors become the exceptions qlstm.Error, UnsupportedModelError, CompileError and
// ModelFileError, with the CLI's messages.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_cmd.h"
#include "compile_run.h"
#include "device.h"
#include "exit_status.h"
#include "run_eval.h"
#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/program/program.h"

namespace py = pybind11;
using namespace qlstm::compiler;
using qlstm::cli::SequenceTensor;

namespace {

// The exception types (set when the module loads).
PyObject* g_error = nullptr;
PyObject* g_unsupported = nullptr;
PyObject* g_compile_error = nullptr;
PyObject* g_model_file_error = nullptr;
PyObject* g_device_error = nullptr;

// Thrown inside the module and translated to the Python exception of the same name.
struct UnsupportedModel : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ModelFileProblem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// UnsupportedModelError(message) with .problems: one entry per node and reason (the importer's
// message has a header line, then one indented line per problem).
void raise_unsupported(const std::string& message) {
  py::list problems;
  const size_t first = message.find('\n');
  if (first == std::string::npos) {
    problems.append(message);
  } else {
    size_t at = first + 1;
    while (at <= message.size()) {
      size_t end = message.find('\n', at);
      if (end == std::string::npos) end = message.size();
      std::string line = message.substr(at, end - at);
      line.erase(0, line.find_first_not_of(' '));
      if (!line.empty()) problems.append(line);
      at = end + 1;
    }
  }
  py::object exc = py::reinterpret_borrow<py::object>(g_unsupported)(message);
  exc.attr("problems") = problems;
  PyErr_SetObject(g_unsupported, exc.ptr());
}

// The ONNX model imported: the importer's refusals as UnsupportedModel, a file that cannot be
// read or parsed as ModelFileProblem. `path` set: read from that file (as the CLI does).
OnnxLstm import_model(const std::string& path, const std::string& bytes, const std::string& origin) {
  try {
    return path.empty() ? import_onnx_bytes(bytes, origin) : import_onnx(path);
  } catch (const FileError& e) {
    throw ModelFileProblem(e.what());
  } catch (const CompileError& e) {
    throw UnsupportedModel(e.what());
  }
}

// A C-contiguous numpy array as the .npy reader's NpyArray (its dtype checked by the caller's
// conversion, with the CLI's messages).
NpyArray npy_array(const py::array& a, const std::string& origin) {
  const py::dtype dt = a.dtype();
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  NpyArray n;
  if (kind == 'f' && size == 4) n.dtype = DType::kFloat32;
  else if (kind == 'f' && size == 8) n.dtype = DType::kFloat64;
  else if (kind == 'i' && size == 1) n.dtype = DType::kInt8;
  else if (kind == 'i' && size == 2) n.dtype = DType::kInt16;
  else if (kind == 'i' && size == 4) n.dtype = DType::kInt32;
  else if (kind == 'i' && size == 8) n.dtype = DType::kInt64;
  else throw CompileError(origin + ": dtype " + dt.attr("name").cast<std::string>() + " is not supported");
  if (dt.byteorder() == '>') throw CompileError(origin + ": a big-endian array (convert it with astype)");
  if (!(a.flags() & py::array::c_style)) throw CompileError(origin + ": the array is not C-contiguous");
  for (py::ssize_t d = 0; d < a.ndim(); ++d) n.shape.push_back(static_cast<int64_t>(a.shape(d)));
  n.bytes.resize(static_cast<size_t>(a.nbytes()));
  if (!n.bytes.empty()) std::memcpy(n.bytes.data(), a.data(), n.bytes.size());
  return n;
}

// A calibration or validation entry: a path (a .npy/.npz file, read as the CLI reads it) or an array.
SequenceTensor sequences(const py::handle& item, const std::string& origin, const OnnxLstm& onnx) {
  if (py::isinstance<py::str>(item)) {
    return qlstm::cli::read_sequences(item.cast<std::string>(), onnx.program.input_size(), onnx.batch_first, false,
                                      qlstm::cli::model_input_type(onnx));
  }
  return qlstm::cli::sequences_from_array(npy_array(item.cast<py::array>(), origin), origin,
                                          onnx.program.input_size(), onnx.batch_first, false,
                                          qlstm::cli::model_input_type(onnx));
}

// A compiled model with what its files need: the report, the firmware's batch and longest call,
// and the model as given (the emitted source names its file).
struct Model {
  CompiledModel model;
  nlohmann::json report;
  int32_t batch = 1;
  int32_t max_time_steps = 0;
  std::string model_path;
  std::vector<std::string> warnings;
  std::shared_ptr<const OnnxLstm> onnx;  // the float model it was compiled from (null: loaded from a file)

  qlstm::cli::ModelFiles files(const std::string& name) const {
    if (name.empty() || name == model.name) {
      return qlstm::cli::model_files(model, report, batch, max_time_steps, model_path);
    }
    if (name != c_identifier(name)) {
      throw CompileError("--name '" + name + "' is not a C identifier (letters, digits, '_')");
    }
    CompiledModel renamed = model;
    nlohmann::json renamed_report = report;
    renamed.name = name;
    renamed_report["name"] = name;
    renamed.report_json = renamed_report.dump();
    return qlstm::cli::model_files(renamed, renamed_report, batch, max_time_steps, model_path);
  }

  // How Python spells the state arguments in the shared messages.
  static qlstm::cli::StateNames python_state_names() {
    qlstm::cli::StateNames n;
    n.h0 = "h0";
    n.c0 = "c0";
    n.h_n = n.c_n = "return_state";
    n.float_io = "use run() (float state)";
    return n;
  }

  // "[2, 8, 8]"
  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s;
    for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
  }

  // x (float, or int8 when `int8`) through the int8 program, as `qlstm run [--float]`: from h0 / c0
  // (None: the model's own initial state), on the host (chunk > 0: streamed) or on the emulated
  // `target`. Returns y, or with return_state (y, h_n) for a model with GRU or RNN ops, else (y, (h_n, c_n)).
  py::object run(const py::array& x, bool int8, const py::object& h0, const py::object& c0, bool return_state,
                 int32_t chunk, const std::string& target) const {
    qlstm::cli::RunRequest req;
    req.model_name = model.name;
    req.input_name = "x";
    req.float_io = !int8;
    req.target = target;
    req.chunk = chunk;
    req.names = python_state_names();
    req.h0_name = "h0";
    req.c0_name = "c0";
    const bool gru = qlstm::cli::state_cells(model) != qlstm::cli::StateCells::kLstm;
    req.want_h_n = return_state;
    req.want_c_n = return_state && !gru;
    req.warn = [](const std::string& w) {
      PyErr_WarnEx(PyExc_UserWarning, ("qlstm run: " + w).c_str(), 2);
    };
    NpyArray h0a, c0a;
    if (!h0.is_none()) {
      h0a = npy_array(h0.cast<py::array>(), "h0");
      req.h0 = &h0a;
    }
    if (!c0.is_none()) {
      c0a = npy_array(c0.cast<py::array>(), "c0");
      req.c0 = &c0a;
    }
    qlstm::cli::check_run_flags(req);
    if (!target.empty()) qlstm::device::find_target(target);  // what is missing first, as the CLI
    qlstm::cli::check_run_request(model, req);
    req.x = qlstm::cli::sequences_from_array(npy_array(x, "x"), "x", model.input_size(), model.batch_first, int8,
                                             model.buffers.front().type);
    const qlstm::cli::RunOutput out = qlstm::cli::run_model(model, req);
    py::object y = int8 ? numpy_of(out.y_int) : array_of<float>(out.shape, out.y.data());
    if (!return_state) return y;
    py::object h_n = numpy_of(out.h_n);
    if (gru) return py::make_tuple(y, h_n);
    return py::make_tuple(y, py::make_tuple(h_n, numpy_of(out.c_n)));
  }

  template <typename T>
  static py::array array_of(const std::vector<int64_t>& shape, const T* data) {
    std::vector<py::ssize_t> dims(shape.begin(), shape.end());
    py::array_t<T> a(dims);
    std::memcpy(a.mutable_data(), data, static_cast<size_t>(a.size()) * sizeof(T));
    return std::move(a);
  }

  static py::array numpy_of(const NpyArray& a) {
    switch (a.dtype) {
      case DType::kFloat32: return array_of<float>(a.shape, reinterpret_cast<const float*>(a.bytes.data()));
      case DType::kInt16: return array_of<int16_t>(a.shape, reinterpret_cast<const int16_t*>(a.bytes.data()));
      default: return array_of<int8_t>(a.shape, reinterpret_cast<const int8_t*>(a.bytes.data()));
    }
  }

  // `qlstm eval` on x against the float model `onnx` (the one compiled from when null): eval's JSON
  // and text.
  py::tuple evaluate(const py::array& x, const py::object& labels, const py::object& targets, const py::object& h0,
                     const py::object& c0, const std::string& ref_path, const py::bytes& ref_bytes,
                     const std::string& ref_origin, const std::string& units_path,
                     const std::string& units_json) const {
    const bool given = !ref_origin.empty();
    std::shared_ptr<const OnnxLstm> ref = onnx;
    if (given) ref = std::make_shared<const OnnxLstm>(import_model(ref_path, ref_bytes, ref_origin));
    if (!ref) {
      throw CompileError(model.name + ": loaded from a file, the model has no float reference: give reference= "
                         "(the torch module, ONNX model or path it was compiled from)");
    }
    qlstm::cli::EvalRequest req;
    req.model_name = model.name;
    req.onnx_name = given ? ref_origin : model_path;
    req.names = python_state_names();
    qlstm::cli::check_eval_pair(*ref, model, req.model_name, req.onnx_name);
    const NpyArray xa = npy_array(x, "x");
    req.data_name = "<" + py::str(x.dtype()).cast<std::string>() + " array " + shape_text(xa.shape) + ">";
    req.x = qlstm::cli::sequences_from_array(xa, "x", model.input_size(), ref->batch_first, false,
                                             model.buffers.front().type);
    if (!labels.is_none()) {
      qlstm::cli::check_labels_usable(model, model.name);
      req.labels = qlstm::cli::labels_from_array(npy_array(labels.cast<py::array>(), "labels"), "labels",
                                                 req.x.shape.batch, model.output_size());
    }
    if (!targets.is_none()) {
      req.targets = qlstm::cli::targets_from_array(npy_array(targets.cast<py::array>(), "targets"), "targets",
                                                   qlstm::cli::output_shape(model, req.x));
      req.targets_name = "targets";
    }
    if (!units_path.empty() || !units_json.empty()) {
      if (targets.is_none()) {
        throw CompileError("units converts the forecast error against targets: give targets too");
      }
      if (!units_path.empty()) {
        req.units = qlstm::cli::read_output_units(units_path);
      } else {
        try {  // a dict: an argument's value, not a file
          req.units = qlstm::cli::output_units_from_json(nlohmann::json::parse(units_json), "units");
        } catch (const FileError& e) {
          throw CompileError(e.what());
        }
      }
    }
    NpyArray h0a, c0a;
    if (!c0.is_none()) qlstm::cli::check_c0_usable(model, "c0", req.names);
    if (!h0.is_none()) {
      h0a = npy_array(h0.cast<py::array>(), "h0");
      req.h0 = &h0a;
      req.h0_name = "h0";
    }
    if (!c0.is_none()) {
      c0a = npy_array(c0.cast<py::array>(), "c0");
      req.c0 = &c0a;
      req.c0_name = "c0";
    }
    const qlstm::cli::Evaluation ev = qlstm::cli::evaluate(*ref, model, req);
    return py::make_tuple(ev.json.dump(), ev.text);
  }

  // One call on the emulated CPU, as `qlstm bench MODEL --target CPU`: the same input (the fixed
  // seed's), B and T (default: 1 and the model's own length); the figures as JSON.
  std::string bench(const std::string& cpu, const std::string& variant, int32_t batch, int32_t time_steps,
                    bool time_major, bool profile) const {
    qlstm::device::find_target(cpu);
    std::string from = "given";
    if (time_steps == 0) time_steps = qlstm::cli::model_time_steps(model, &from);
    if (batch < 1 || time_steps < 1) throw CompileError("bench: batch and time_steps must be positive");
    const SequenceShape shape{batch, time_steps, time_major ? Layout::kTimeMajor : Layout::kBatchMajor};
    std::mt19937_64 rng(qlstm::cli::kBenchSeed);
    const std::vector<int8_t> x = qlstm::cli::bench_input(model, shape, rng);
    const qlstm::cli::TargetBench b = qlstm::cli::bench_on_target(model, x, shape, cpu, variant, profile);
    nlohmann::json j = {{"cpu", b.cpu},
                        {"qemu_machine", b.qemu_machine},
                        {"qemu_cpu", b.qemu_cpu},
                        {"variant", b.variant},
                        {"batch", batch},
                        {"time_steps", time_steps},
                        {"time_steps_from", from},
                        {"macs", b.macs},
                        {"op_macs", b.op_macs},
                        {"op_instructions", b.op_instructions},
                        {"instructions", b.instructions},
                        {"instructions_per_mac",
                         b.macs > 0 ? static_cast<double>(b.instructions) / static_cast<double>(b.macs) : 0.0},
                        {"op_cycles", b.op_cycles},
                        {"cycles", b.cycles},
                        {"cycles_per_mac", b.macs > 0 ? static_cast<double>(b.cycles) / static_cast<double>(b.macs) : 0.0}};
    j["kernel_flash_bytes"] = b.kernel_size_measured ? nlohmann::json(b.kernel_flash_bytes) : nlohmann::json(nullptr);
    j["kernel_ram_bytes"] = b.kernel_size_measured ? nlohmann::json(b.kernel_ram_bytes) : nlohmann::json(nullptr);
    j["profile"] = nlohmann::json::array();
    for (const auto& f : b.profile) {
      nlohmann::json row = {{"function", f.name}, {"instructions", f.instructions}};
      if (f.has_cycles) row["cycles"] = f.cycles;
      j["profile"].push_back(row);
    }
    return j.dump();
  }
};

// qlstm compile's options from keywords of the same names (CompileArgs' defaults for those
// missing); `given` lists those the caller set, which the search keeps as given.
qlstm::cli::CompileArgs compile_args(const py::dict& options, const std::vector<std::string>& given) {
  qlstm::cli::CompileArgs a;
  std::map<std::string, std::string*> strings = {
      {"input_observer", &a.input_observer}, {"output_observer", &a.output_observer},
      {"weights", &a.weights},               {"weight_rounding", &a.weight_rounding},
      {"cell_scale", &a.cell_scale},         {"name", &a.name},
      {"activations", &a.activations}};
  std::map<std::string, int32_t*> ints = {
      {"batch", &a.batch}, {"max_time_steps", &a.max_time_steps}, {"int16_headroom", &a.int16_headroom}};
  std::map<std::string, bool*> bools = {{"search", &a.search}, {"bias_correction", &a.bias_correction}};
  for (const auto& [key, value] : options) {
    const std::string k = key.cast<std::string>();
    if (strings.count(k)) *strings[k] = value.cast<std::string>();
    else if (ints.count(k)) *ints[k] = value.cast<int32_t>();
    else if (bools.count(k)) *bools[k] = value.cast<bool>();
    else throw py::type_error("compile() got an unexpected keyword argument '" + k + "'");
  }
  for (const std::string& g : given) {
    a.user_fixed.input_observer |= g == "input_observer";
    a.user_fixed.output_observer |= g == "output_observer";
    a.user_fixed.weights |= g == "weights";
    a.user_fixed.weight_rounding |= g == "weight_rounding";
    a.user_fixed.cell_headroom |= g == "cell_scale";
    a.user_fixed.bias_correction |= g == "bias_correction";
  }
  return a;
}

Model compile(const std::string& path, const py::bytes& onnx_bytes, const std::string& origin,
              const py::list& calibration, const std::vector<std::string>& calibration_names, const py::list& validation,
              const std::vector<std::string>& validation_names, const py::dict& options,
              const std::vector<std::string>& given, const py::object& progress, bool progress_auto) {
  const OnnxLstm onnx = import_model(path, onnx_bytes, origin);
  qlstm::cli::CompileArgs args = compile_args(options, given);
  args.model = origin;
  args.calibration = calibration_names;
  ModelCompileOptions mo = qlstm::cli::model_compile_options(args, onnx);
  std::vector<CalibrationTensor> calib;
  for (size_t k = 0; k < calibration.size(); ++k) {
    SequenceTensor t = sequences(calibration[k], calibration_names.at(k), onnx);
    calib.push_back({std::move(t.values), t.shape});
  }
  for (size_t k = 0; k < validation.size(); ++k) {
    SequenceTensor t = sequences(validation[k], validation_names.at(k), onnx);
    mo.validation.push_back({std::move(t.values), t.shape});
  }
  mo.validation_files = validation_names;
  // progress(stage, done, total) on each step of each stage (None: none); progress_auto: only for a
  // large calibration set, as the CLI.
  size_t sequences = 0;
  for (const CalibrationTensor& t : calib) sequences += static_cast<size_t>(t.shape.batch);
  if (!progress.is_none() && (!progress_auto || sequences >= qlstm::cli::kLargeCalibrationSet)) {
    mo.quantization.progress = [progress](const char* stage, int64_t done, int64_t total) {
      progress(stage, done, total);
    };
  }
  ModelCompileResult r = compile_model(onnx, calib, mo);
  Model m;
  m.model = std::move(r.model);
  m.report = std::move(r.report);
  m.batch = mo.batch;
  m.max_time_steps = r.max_time_steps;
  m.model_path = origin;
  m.warnings = std::move(r.warnings);
  m.onnx = std::make_shared<const OnnxLstm>(onnx);
  return m;
}

py::tuple quant_tuple(const AffineQuant& q) { return py::make_tuple(q.scale, q.zero_point); }

Model model_from_file(const CompiledModel& cm, const std::string& origin) {
  Model m;
  m.model = cm;
  m.report = cm.report_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(cm.report_json);
  m.batch = m.report.value("firmware_batch", 1);
  m.max_time_steps = m.report.value("max_time_steps", 0);
  m.model_path = m.report.value("model", origin);
  return m;
}

Model load(const std::string& path) {
  try {
    return model_from_file(load_model(path), path);
  } catch (const CompileError& e) {  // every load error is about the file (as qlstm run says)
    throw ModelFileProblem(e.what());
  }
}

Model from_bytes(const py::bytes& bytes, const std::string& origin) {
  try {
    return model_from_file(parse_model(bytes, origin), origin);
  } catch (const CompileError& e) {
    throw ModelFileProblem(e.what());
  }
}

}  // namespace

PYBIND11_MODULE(_qlstm, mod) {
  mod.doc() = "The qlstm compiler and bit-exact int8 simulation (use the qlstm package, not this module)";
  g_error = PyErr_NewExceptionWithDoc("qlstm.Error", "Every error qlstm raises.", PyExc_Exception, nullptr);
  g_unsupported = PyErr_NewExceptionWithDoc(
      "qlstm.UnsupportedModelError",
      "The model is outside what qlstm compiles; .problems has one entry per node and reason.", g_error, nullptr);
  g_compile_error = PyErr_NewExceptionWithDoc(
      "qlstm.CompileError", "Compilation failed (calibration data, options, derivation, a run's input).", g_error,
      nullptr);
  g_device_error = PyErr_NewExceptionWithDoc(
      "qlstm.DeviceError",
      "The emulated device cannot run: an unknown CPU, its firmware not built, or qemu-system-arm missing.", g_error,
      nullptr);
  g_model_file_error = PyErr_NewExceptionWithDoc(
      "qlstm.ModelFileError", "A model file (ONNX, .qlstm) that cannot be read, or is malformed or corrupted.",
      g_error, nullptr);
  mod.add_object("Error", py::handle(g_error));
  mod.add_object("UnsupportedModelError", py::handle(g_unsupported));
  mod.add_object("CompileError", py::handle(g_compile_error));
  mod.add_object("ModelFileError", py::handle(g_model_file_error));
  mod.add_object("DeviceError", py::handle(g_device_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UnsupportedModel& e) {
      raise_unsupported(e.what());
    } catch (const ModelFileProblem& e) {
      PyErr_SetString(g_model_file_error, e.what());
    } catch (const FileError& e) {
      PyErr_SetString(g_model_file_error, e.what());
    } catch (const CompileError& e) {
      PyErr_SetString(g_compile_error, e.what());
    } catch (const NpyError& e) {
      PyErr_SetString(g_compile_error, e.what());
    } catch (const qlstm::device::DeviceError& e) {
      PyErr_SetString(g_device_error, e.what());
    } catch (const qlstm::cli::UsageError& e) {  // a run's or evaluate's arguments: as its input's errors
      PyErr_SetString(g_compile_error, e.what());
    }
  });

  py::class_<Model>(mod, "Model")
      .def_property_readonly("name", [](const Model& m) { return m.model.name; })
      .def_property_readonly("report_json", [](const Model& m) { return m.report.dump(); })
      .def_property_readonly("batch_first", [](const Model& m) { return m.model.batch_first; })
      .def_property_readonly("input_size", [](const Model& m) { return m.model.input_size(); })
      .def_property_readonly("output_size", [](const Model& m) { return m.model.output_size(); })
      .def_property_readonly("input_quant", [](const Model& m) { return quant_tuple(m.model.input_quant()); })
      .def_property_readonly("output_quant", [](const Model& m) { return quant_tuple(m.model.output_quant()); })
      .def_readonly("warnings", &Model::warnings)
      .def("run", &Model::run)
      .def("evaluate", &Model::evaluate)
      .def("bench", &Model::bench)
      .def("files",
           [](const Model& m, const std::string& name) {
             const qlstm::cli::ModelFiles f = m.files(name);
             py::dict d;
             d[py::str(f.name + ".qlstm")] = py::bytes(f.model_bytes);
             d[py::str(f.name + "_model.h")] = py::bytes(f.header);
             d[py::str(f.name + "_model.cc")] = py::bytes(f.source);
             d[py::str(f.name + "_report.json")] = py::bytes(f.report);
             return d;
           })
      .def("save", [](const Model& m, const std::string& outdir, const std::string& name) {
        const qlstm::cli::ModelFiles f = m.files(name);
        qlstm::cli::write_model_files(f, outdir);
        return f.name;
      });
  mod.def("compile", &compile);
  mod.def("load", &load);
  mod.def("from_bytes", &from_bytes);
  mod.def("c_identifier", &c_identifier);
  mod.def("cpu_names", &qlstm::device::cpu_names);
  mod.def("find_target", [](const std::string& cpu) {
    const qlstm::device::Target t = qlstm::device::find_target(cpu);
    py::dict d;
    d["cpu"] = t.cpu;
    d["qemu_machine"] = t.qemu_machine;
    d["qemu_cpu"] = t.qemu_cpu;
    d["firmware"] = t.firmware;
    return d;
  });
}
