"""qlstm: compile a PyTorch recurrent model into one int8 program for Cortex-M, in-process.

The same C++ compiler and bit-exact simulation as the ``qlstm`` command line (the ``_qlstm``
extension; no subprocess), with torch and numpy in and out::

    import qlstm
    compiled = qlstm.compile(model, calibration)   # an nn.Module, ONNX (bytes, ModelProto, path)
    y = compiled.run(x)                            # float in, float out through the int8 program
    y, (h_n, c_n) = compiled.run(x, h0, c0, return_state=True)   # from a state, as --h0/--c0
    print(compiled.evaluate(x, labels))            # qlstm eval's figures: SQNR, top-1 float vs int8
    compiled.run_on_target(x, cpu="cortex-m4")     # on the emulated Cortex-M (QEMU), bit-exact
    compiled.save("out")                           # NAME.qlstm, NAME_model.h/.cc, NAME_report.json

Errors are :class:`Error` subclasses carrying the CLI's messages: :class:`UnsupportedModelError`
(the model is outside what qlstm compiles; ``.problems`` names each node and reason),
:class:`CompileError`, :class:`ModelFileError` and :class:`DeviceError` (the emulated device is
missing its firmware or QEMU). See docs/python.md.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import shutil
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _qlstm

Error = _qlstm.Error
UnsupportedModelError = _qlstm.UnsupportedModelError
CompileError = _qlstm.CompileError
ModelFileError = _qlstm.ModelFileError
DeviceError = _qlstm.DeviceError

__all__ = ["compile", "load", "from_bytes", "CompiledModel", "Evaluation", "Bench", "cpu_names", "target_missing",
           "Error", "UnsupportedModelError", "CompileError", "ModelFileError", "DeviceError"]

# `qlstm compile`'s options: keyword (the CLI's flag with '_' for '-') -> its default. `search`
# is the CLI's --no-search inverted.
OPTIONS: Dict[str, Any] = {
    "input_observer": "minmax",
    "output_observer": "minmax",
    "weights": "maxabs",
    "weight_rounding": "nearest",
    "cell_scale": "calibrated:1.25",
    "search": True,
    "bias_correction": False,
    "batch": 0,
    "max_time_steps": 0,
    "activations": "int8",
    "int16_headroom": 2,
}

PathLike = Union[str, "os.PathLike[str]"]


def _is_torch_module(obj: Any) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(obj, torch.nn.Module)


def _as_array(x: Any) -> np.ndarray:
    """A numpy array of x (a numpy array, a torch tensor or anything np.asarray takes), C-ordered."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x))


def _describe(a: np.ndarray) -> str:
    return "<%s array [%s]>" % (a.dtype, ", ".join(str(d) for d in a.shape))


def _is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or (hasattr(x, "detach") and hasattr(x, "cpu"))


def _tensors(data: Any, what: str) -> Tuple[List[Any], List[str]]:
    """Calibration or validation data as the extension takes it: paths (read as the CLI reads
    them, named by themselves in the report) and arrays (named by dtype and shape). data: one
    array, tensor or path, or an iterable of them (a list, or a DataLoader's batches, of which an
    (inputs, targets) pair gives its inputs)."""
    if data is None:
        return [], []
    if _is_array(data) or isinstance(data, (str, os.PathLike)):
        items = [data]
    else:
        items = [b[0] if isinstance(b, (tuple, list)) and b and _is_array(b[0]) else b for b in data]
    out: List[Any] = []
    names: List[str] = []
    for k, item in enumerate(items):
        if isinstance(item, (str, os.PathLike)):
            out.append(os.fspath(item))
            names.append(os.fspath(item))
        else:
            a = _as_array(item)
            out.append(a)
            names.append(_describe(a) if len(items) == 1 else "%s %d %s" % (what, k, _describe(a)))
    return out, names


def _module_batch_first(module: Any) -> bool:
    """The layout of a torch module's input: the batch_first of its first nn.LSTM / nn.GRU (or of
    the module itself), else batch-first."""
    import torch
    if hasattr(module, "batch_first"):
        return bool(module.batch_first)
    for sub in module.modules():
        if isinstance(sub, torch.nn.RNNBase):
            return bool(sub.batch_first)
    return True


def _export_module(module: Any, example_input: Any, calibration: List[Any], batch_first: Optional[bool],
                   opset: int) -> bytes:
    """torch.onnx.export in memory, in eval mode, the batch axis dynamic."""
    import torch
    if batch_first is None:
        batch_first = _module_batch_first(module)
    batch_axis = 0 if batch_first else 1
    if example_input is None:
        arrays = [c for c in calibration if isinstance(c, np.ndarray)]
        if not arrays:
            raise TypeError("compile(): a torch module needs example_input= or array calibration data")
        first = arrays[0]
        example_input = first[:1] if first.ndim == 2 or batch_first else first[:, :1]
    if not isinstance(example_input, torch.Tensor):
        example_input = torch.from_numpy(np.ascontiguousarray(np.asarray(example_input)))
    # Integers are token ids (an nn.Embedding reads them, as int64); anything else is values.
    ids = not (example_input.is_floating_point() or example_input.is_complex())
    example_input = example_input.long() if ids else example_input.float()
    batched = example_input.dim() == (2 if ids else 3)
    dynamic = {"x": {batch_axis: "batch"}} if batched else None
    buf = io.BytesIO()
    training = module.training
    module.eval()
    try:
        # torch's export notes (about its own shape inference of RNNs) are not the caller's concern.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            torch.onnx.export(module, (example_input,), buf, opset_version=opset, input_names=["x"],
                              output_names=["y"], dynamic_axes=dynamic)
    finally:
        module.train(training)
    return buf.getvalue()


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython kernel: ipykernel loaded and its shell live)."""
    import sys
    if "ipykernel" not in sys.modules:
        return False
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Progress:
    """The compile's progress on a stream (sys.stderr), each stage in tenths, as fits where it goes:

    - a terminal: a bar redrawn in place ("\\r"), a line per stage;
    - a notebook (a Jupyter kernel, whose stderr is no tty): the same carriage-return updates,
      which the notebook's output area draws over one line;
    - anything else (a log, a pipe): one plain line per tenth, as `qlstm compile` writes in a log.
    """

    def __init__(self, stream: Any = None) -> None:
        import sys
        self._stream = stream if stream is not None else sys.stderr
        isatty = getattr(self._stream, "isatty", None)
        self._redraw = bool(isatty is not None and isatty()) or _in_notebook()
        self._last: Tuple[str, int] = ("", -1)

    def __call__(self, stage: str, done: int, total: int) -> None:
        tenth = min(10, done * 10 // total) if total > 0 else 10
        if (stage, tenth) == self._last:
            return
        self._last = (stage, tenth)
        if self._redraw:
            self._stream.write("\rqlstm compile: %-40s [%-10s] %3d%%%s" % (
                stage, "#" * tenth, tenth * 10, "\n" if tenth == 10 else ""))
        else:
            self._stream.write("qlstm compile: %s %3d%%\n" % (stage, tenth * 10))
        self._stream.flush()


def _sqnr(value: Optional[float]) -> float:
    """eval's JSON writes an infinite SQNR (int8 equal to float everywhere) as null."""
    return math.inf if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """int8 against float on one data set: the figures of `qlstm eval` (its --json, in `json`).

    sqnr_db and max_abs_error are the model output's (y); outputs has every output's (y, then h_n
    and c_n of each recurrent op when the model returns them) as dicts of name, label, sqnr_db,
    max_abs_error and scale (one int8 step). A classifier (one row of scores per sequence) has
    argmax_agreement (the fraction of sequences whose int8 argmax equals the float one) and, with
    labels, float_top1 / int8_top1; a model with an output per step has rms_error_per_step; with
    targets, forecast has the error of both. saturation counts the float values outside the ranges
    the int8 program holds (input, output, each op's cell and hidden). str() is eval's text.
    """

    sqnr_db: float
    max_abs_error: float
    outputs: List[Dict[str, Any]]
    argmax_agreement: Optional[float]
    float_top1: Optional[float]
    int8_top1: Optional[float]
    rms_error_per_step: Optional[List[float]]
    forecast: Optional[Dict[str, Any]]
    saturation: Dict[str, Any]
    json: Dict[str, Any]
    text: str

    @classmethod
    def _from_json(cls, j: Dict[str, Any], text: str) -> "Evaluation":
        outputs = [dict(o, sqnr_db=_sqnr(o.get("sqnr_db"))) for o in j["outputs"]]
        classifier = j.get("classifier") or {}
        return cls(sqnr_db=outputs[0]["sqnr_db"], max_abs_error=float(outputs[0]["max_abs_error"]), outputs=outputs,
                   argmax_agreement=classifier.get("argmax_agreement"), float_top1=classifier.get("float_top1"),
                   int8_top1=classifier.get("int8_top1"), rms_error_per_step=j.get("rms_error_per_step"),
                   forecast=j.get("forecast"), saturation=j["saturation"], json=j, text=text)

    def __str__(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True)
class Bench:
    """One call of a program on an emulated Cortex-M: `qlstm bench MODEL --target CPU`'s figures.

    instructions: executed instructions of the call (the QEMU plugin's count), the sum of
    op_instructions (one per op); cycles / op_cycles: the plugin's cycle estimate from the core's
    timing tables (zero wait states, no caches; docs/targets.md); macs / op_macs:
    multiply-accumulates; kernel_flash_bytes / kernel_ram_bytes: the recurrent kernel's cost in the
    firmware (None for a program without one recurrent kind); profile: with profile=True,
    one dict per function, most instructions first: its name ("function"), "instructions" and
    estimated "cycles" (of the translated blocks that start in it).
    """

    cpu: str
    qemu_machine: str
    qemu_cpu: str
    variant: str
    batch: int
    time_steps: int
    time_steps_from: str
    macs: int
    op_macs: List[int]
    op_instructions: List[int]
    instructions: int
    instructions_per_mac: float
    op_cycles: List[int]
    cycles: int
    cycles_per_mac: float
    kernel_flash_bytes: Optional[int]
    kernel_ram_bytes: Optional[int]
    profile: List[Dict[str, Any]]


def cpu_names() -> List[str]:
    """The emulated CPUs run_on_target and bench take (as the CLI's --target)."""
    return list(_qlstm.cpu_names())


def target_missing(cpu: str = "cortex-m55") -> Optional[str]:
    """None when run_on_target and bench can run on cpu here, else what is missing: the firmware of
    that CPU (built by the cmake build when gcc-arm-none-eabi is installed), or qemu-system-arm on
    PATH. The message of the DeviceError they would raise."""
    try:
        _require_target(cpu)
    except DeviceError as e:
        return str(e)
    return None


def _require_target(cpu: str) -> None:
    """Raises DeviceError naming what the emulated cpu lacks here: its firmware (checked by the
    C++), or QEMU, looked for on PATH as the C++ starts it. (bench's instruction counter plugin is
    checked by the C++ when it starts QEMU.)"""
    _qlstm.find_target(cpu)
    if shutil.which("qemu-system-arm") is None:
        raise DeviceError("qemu-system-arm not found (Debian package qemu-system-arm)")


class CompiledModel:
    """A compiled int8 program: run it on the host (bit-exact with the device), read its report,
    write its files."""

    def __init__(self, model: "_qlstm.Model") -> None:
        self._model = model
        self._report: Optional[Dict[str, Any]] = None

    @property
    def name(self) -> str:
        """The model's C identifier: the prefix of its files and of the firmware's symbols."""
        return self._model.name

    @property
    def report(self) -> Dict[str, Any]:
        """The JSON report of `qlstm compile` (NAME_report.json) as a dict."""
        if self._report is None:
            self._report = json.loads(self._model.report_json)
        return self._report

    @property
    def ops(self) -> List[Dict[str, Any]]:
        """The op table: one dict per op of the program (kind, shape, output quantization, flash
        and RAM bytes), as the report's "op_table"."""
        return list(self.report.get("op_table", []))

    @property
    def batch_first(self) -> bool:
        """The input's layout: [B, T, I] (True) or [T, B, I]."""
        return self._model.batch_first

    @property
    def input_quant(self) -> Tuple[float, int]:
        """The int8 input's (scale, zero point): x ~= scale * (q - zero_point)."""
        return self._model.input_quant

    @property
    def output_quant(self) -> Tuple[float, int]:
        """The int8 output's (scale, zero point)."""
        return self._model.output_quant

    @property
    def warnings(self) -> List[str]:
        """The calibration warnings of the compile (also issued as Python warnings)."""
        return list(self._model.warnings)

    def run(self, x: Any, h0: Any = None, c0: Any = None, *, return_state: bool = False,
            chunk: Optional[int] = None) -> Any:
        """Float in, float out through the int8 program, as `qlstm run --float` (bit for bit).

        x: [B, T, I] (batch-first models), [T, B, I] (sequence-first) or one sequence [T, I];
        float32 or float64 (numpy or torch). A model that starts with an embedding takes integer
        token ids instead, [B, T], [T, B] or [T], of any integer dtype (run_int8 too); an id
        outside the table raises CompileError naming it. Returns float32: [B, W] for a model with one output
        row per sequence ([W] for one sequence), else the sequence in the input's layout.

        h0, c0: the initial state, float [ops, B, H] (ops: the recurrent ops, layer-major, forward
        first), as --h0 / --c0; None: the model's own (required for a model that takes its state
        as an input). A GRU or an RNN has no cell: c0 is refused. Values beyond the int8 hidden or int16
        cell range are clipped, with a warning.
        return_state: also return the final state, float [ops, B, H], as --h-n / --c-n:
        (y, (h_n, c_n)) for an LSTM model, (y, h_n) for one with GRU or RNN ops. Passing it back as
        h0 / c0 continues the sequence exactly (the state's int form survives the round trip).
        chunk: stream x in stateful calls of this many steps, as --chunk (the same output).
        """
        return self._run(x, False, h0, c0, return_state, chunk, "")

    def run_int8(self, x: Any, h0: Any = None, c0: Any = None, *, return_state: bool = False,
                 chunk: Optional[int] = None) -> Any:
        """The program's own integers in and out, as `qlstm run` without --float: int8, or int16
        where a 16x8 model's input or output buffer is int16; x quantized by input_quant.

        h0, c0 and the returned state are in the kernel's int forms, as the CLI's files: h int8
        at each op's output quantization (a GRU model's: int16 Q0.15; an RNN model's: int16 at each
        op's 2^P, Q0.15 for tanh), c int16 at 2^P. A 16x8
        model's state is float only (run).
        """
        return self._run(x, True, h0, c0, return_state, chunk, "")

    def run_on_target(self, x: Any, cpu: str = "cortex-m55", *, int8: bool = False, h0: Any = None, c0: Any = None,
                      return_state: bool = False) -> Any:
        """run (or run_int8 with int8=True) on the emulated Cortex-M, as `qlstm run --target CPU`: the
        program on the firmware built for cpu (one of cpu_names()) under qemu-system-arm, bit-exact
        with run. Raises DeviceError naming what is missing (the firmware, QEMU); see
        target_missing()."""
        _require_target(cpu)
        return self._run(x, int8, h0, c0, return_state, None, cpu)

    def _run(self, x: Any, int8: bool, h0: Any, c0: Any, return_state: bool, chunk: Optional[int],
             target: str) -> Any:
        if chunk is not None and chunk < 1:
            raise CompileError("chunk: %d, expected a positive number of steps" % chunk)
        state = [None if s is None else _as_array(s) for s in (h0, c0)]
        return self._model.run(_as_array(x), int8, state[0], state[1], bool(return_state), chunk or 0, target)

    def evaluate(self, x: Any, labels: Any = None, *, targets: Any = None, units: Any = None, h0: Any = None,
                 c0: Any = None, reference: Any = None) -> "Evaluation":
        """int8 against float on x, as `qlstm eval` (its figures, computed by the same C++).

        The float model is the one compiled from (the exported torch module or the ONNX model), or
        reference= (a torch module, an onnx.ModelProto, ONNX bytes or a path) for a model loaded
        from a .qlstm file. Both run from the same initial state: h0 / c0 (float [ops, B, H]) or
        the model's own. labels: a classifier's true class per sequence (integer [B]): the top-1
        accuracy of both. targets: a forecaster's expected outputs (float32, the output's shape):
        the error of both, in the user's units with units= (as --units: a dict {"name", "scale",
        "offset"}, an output v being v * scale + offset in them, or the path of a JSON file with an
        "output_units" object). Returns an Evaluation: SQNR and max abs error of every output, the
        argmax agreement (a classifier), the RMS error per step (an output per step), saturation.
        """
        ref_path, ref_bytes, ref_origin = "", b"", ""
        if reference is not None:
            ref_path, ref_bytes, ref_origin, _ = _model_source(reference, None, [_as_array(x)], self.batch_first, 14)
        arrays = [None if a is None else _as_array(a) for a in (labels, targets, h0, c0)]
        units_path = os.fspath(units) if isinstance(units, (str, os.PathLike)) else ""
        units_json = json.dumps({"output_units": units}) if isinstance(units, dict) else ""
        if units is not None and not (units_path or units_json):
            raise TypeError("evaluate(): units must be a dict or the path of a JSON file, not %s" % type(units).__name__)
        text_json, text = self._model.evaluate(_as_array(x), *arrays, ref_path, ref_bytes, ref_origin, units_path,
                                               units_json)
        return Evaluation._from_json(json.loads(text_json), text)

    def bench(self, cpu: str = "cortex-m55", *, variant: str = "default", batch: int = 1,
              time_steps: Optional[int] = None, time_major: bool = False, profile: bool = False) -> "Bench":
        """One call of the program on the emulated cpu, as `qlstm bench MODEL --target CPU`: the
        executed instructions of each op (counted by the project's QEMU plugin; not cycles), on
        the same input (a fixed seed) and, by default, the model's own sequence length. The
        firmware checks its output against the host simulation. Raises DeviceError naming what is
        missing (the firmware, QEMU, the instruction counter); see target_missing()."""
        _require_target(cpu)
        return Bench(**json.loads(self._model.bench(cpu, variant, batch, time_steps or 0, time_major, profile)))

    def files(self, name: Optional[str] = None) -> Dict[str, bytes]:
        """The four files `save` writes, by file name, without writing them."""
        return self._model.files(name or "")

    def save(self, outdir: PathLike, name: Optional[str] = None) -> Dict[str, str]:
        """Write exactly the files of `qlstm compile` into outdir (created if needed): NAME.qlstm,
        NAME_model.h, NAME_model.cc, NAME_report.json. name: another C identifier than the
        model's. Returns the paths written, by file name."""
        outdir = os.fspath(outdir)
        written = self._model.save(outdir, name or "")
        return {k: os.path.join(outdir, k) for k in (written + ".qlstm", written + "_model.h",
                                                     written + "_model.cc", written + "_report.json")}

    def as_torch_module(self) -> Any:
        """A torch.nn.Module whose forward(x) is run(x) (as a float32 tensor on x's device): the
        int8 simulation dropped into an existing evaluation loop. It has no parameters."""
        import torch

        compiled = self

        class Int8Module(torch.nn.Module):
            def forward(self, x: Any) -> Any:
                device = x.device if isinstance(x, torch.Tensor) else None
                y = torch.from_numpy(compiled.run(x))
                return y.to(device) if device is not None else y

            def extra_repr(self) -> str:
                return compiled.name

        return Int8Module()

    def __repr__(self) -> str:
        return "<qlstm.CompiledModel %s: %d ops>" % (self.name, len(self.ops))


def _model_source(model: Any, example_input: Any, calibration: List[Any], batch_first: Optional[bool],
                  opset: int) -> Tuple[str, bytes, str, Optional[str]]:
    """(path, ONNX bytes, origin, default name) of a model given to compile or evaluate: a path (read
    by the extension as the CLI reads it; its default name is the CLI's, the file's stem: None),
    ONNX bytes, an onnx.ModelProto or a torch module (exported in memory)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), b"", os.fspath(model), None
    if isinstance(model, (bytes, bytearray)):
        return "", bytes(model), "<onnx bytes>", "model"
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        return "", model.SerializeToString(), "<onnx.ModelProto %s>" % (model.graph.name or "model"), "model"
    if _is_torch_module(model):
        return ("", _export_module(model, example_input, calibration, batch_first, opset),
                "<torch %s>" % type(model).__name__, _qlstm.c_identifier(type(model).__name__.lower()))
    raise TypeError("model must be a torch.nn.Module, an onnx.ModelProto, ONNX bytes or a path, not %s"
                    % type(model).__name__)


def compile(model: Any, calibration: Any, *, name: Optional[str] = None, validation: Any = None,
            example_input: Any = None, batch_first: Optional[bool] = None, opset: int = 14,
            progress: Optional[bool] = None, **options: Any) -> CompiledModel:
    """Compile a recurrent model into an int8 program, as `qlstm compile` does.

    model: a torch.nn.Module (exported in memory with torch.onnx.export, the batch axis dynamic,
    in the layout of its nn.LSTM / nn.GRU unless batch_first= says; the example input is
    example_input= or the first sequence of the calibration data), an onnx.ModelProto, ONNX bytes
    or the path of an .onnx file.
    calibration: float sequences in the model's layout (or, for a model that starts with an
    nn.Embedding, integer token ids [B, T]), a numpy array or torch tensor, a .npy
    path, or an iterable of these (a list, or a DataLoader's batches: of an (inputs, targets)
    batch the inputs); validation: the same, the search's held-out data (never observed).
    name: the model's C identifier (default: the file's stem for a path, else the module's class
    name, else "model").
    options: `qlstm compile`'s, with '_' for '-' and the same defaults: input_observer,
    output_observer ("minmax", "percentile[:P]", "mse", "kl"), weights ("maxabs", "mse"),
    weight_rounding ("nearest", "adaptive"), cell_scale ("calibrated[:HEADROOM]",
    "sequence-bound:T", "fixed:P"), bias_correction, search (False is --no-search), batch,
    max_time_steps, activations ("int8", "int16" or "int16:L,M,...": 16x8), int16_headroom.
    Those given are kept as given; the search tunes the others.
    progress: a progress bar on sys.stderr for each stage (default: from as many calibration
    sequences on as `qlstm compile` shows its progress from, 256).

    Raises UnsupportedModelError, CompileError or ModelFileError (all qlstm.Error).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError("compile() got an unexpected keyword argument '%s'" % unknown[0])
    calib, calib_names = _tensors(calibration, "calibration")
    if not calib:
        raise CompileError("no calibration data")
    valid, valid_names = _tensors(validation, "validation")
    path, onnx_bytes, origin, default_name = _model_source(model, example_input, calib, batch_first, opset)
    opts = dict(options)
    if name is not None:
        opts["name"] = name
    elif default_name is not None:
        opts["name"] = default_name
    # None: the extension shows it from the CLI's number of calibration sequences on.
    compiled = CompiledModel(_qlstm.compile(path, onnx_bytes, origin, calib, calib_names, valid, valid_names, opts,
                                            list(options), None if progress is False else _Progress(),
                                            progress is None))
    for w in compiled.warnings:
        warnings.warn("qlstm compile: " + w, stacklevel=2)
    return compiled


def load(path: PathLike) -> CompiledModel:
    """A compiled model from its .qlstm file (checked as `qlstm run` checks it: ModelFileError)."""
    return CompiledModel(_qlstm.load(os.fspath(path)))


def from_bytes(data: bytes, origin: str = "<bytes>") -> CompiledModel:
    """A compiled model from the bytes of a .qlstm file."""
    return CompiledModel(_qlstm.from_bytes(bytes(data), origin))
