"""pytest for `import qlstm` (python/): every entry point, torch modules compiled in-process, the
error types and messages, and the same files and outputs as the `qlstm` CLI.

Run by ctest (python/CMakeLists.txt) with PYTHONPATH at the build's python/ folder and QLSTM_CLI
the build's qlstm executable."""

import io
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import qlstm

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.normpath(os.path.join(HERE, "..", "..", "examples"))
DIGITS = os.path.join(EXAMPLES, "digits")
CLI = os.environ.get("QLSTM_CLI", "qlstm")


def cli(*args):
    """Runs the qlstm CLI; returns (exit status, stdout, stderr)."""
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def files_of(folder):
    return {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))}


@pytest.fixture(scope="module")
def digits_lstm():
    return qlstm.compile(os.path.join(DIGITS, "digits_lstm.onnx"), os.path.join(DIGITS, "calibration.npy"))


# --- the same results as the CLI ----------------------------------------------------------------

@pytest.mark.parametrize("model", ["digits_lstm", "digits_gru"])
def test_save_writes_the_cli_files_byte_for_byte(tmp_path, model):
    onnx_path = os.path.join(DIGITS, model + ".onnx")
    calibration = os.path.join(DIGITS, "calibration.npy")
    status, _, err = cli("compile", onnx_path, "--calibration", calibration, "-o", tmp_path / "cli")
    assert status == 0, err
    written = qlstm.compile(onnx_path, calibration).save(tmp_path / "py")
    assert sorted(written) == sorted(files_of(tmp_path / "cli"))
    assert files_of(tmp_path / "py") == files_of(tmp_path / "cli")


def test_options_as_the_cli_flags(tmp_path):
    onnx_path = os.path.join(DIGITS, "digits_lstm.onnx")
    calibration = os.path.join(DIGITS, "calibration.npy")
    status, _, err = cli("compile", onnx_path, "--calibration", calibration, "-o", tmp_path / "cli", "--no-search",
                         "--input-observer", "percentile:99.9", "--batch", "4", "--name", "digits4")
    assert status == 0, err
    compiled = qlstm.compile(onnx_path, calibration, search=False, input_observer="percentile:99.9", batch=4,
                             name="digits4")
    compiled.save(tmp_path / "py")
    assert files_of(tmp_path / "py") == files_of(tmp_path / "cli")
    assert compiled.report["firmware_batch"] == 4


def test_run_equals_cli_run_float_bit_for_bit(tmp_path, digits_lstm):
    digits_lstm.save(tmp_path)
    x = os.path.join(DIGITS, "test.npy")
    status, _, err = cli("run", tmp_path / "digits_lstm.qlstm", "--input", x, "--output", tmp_path / "y.npy",
                         "--float")
    assert status == 0, err
    expected = np.load(tmp_path / "y.npy")
    got = digits_lstm.run(np.load(x))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_run_int8_equals_cli_run(tmp_path, digits_lstm):
    digits_lstm.save(tmp_path)
    scale, zero_point = digits_lstm.input_quant
    x8 = np.clip(np.round(np.load(os.path.join(DIGITS, "test.npy")) / scale) + zero_point, -128, 127).astype(np.int8)
    np.save(tmp_path / "x8.npy", x8)
    status, _, err = cli("run", tmp_path / "digits_lstm.qlstm", "--input", tmp_path / "x8.npy", "--output",
                         tmp_path / "y8.npy")
    assert status == 0, err
    got = digits_lstm.run_int8(x8)
    assert got.dtype == np.int8
    assert got.tobytes() == np.load(tmp_path / "y8.npy").tobytes()


# --- every entry point ----------------------------------------------------------------------------

def test_report_ops_and_accuracy(digits_lstm):
    assert digits_lstm.name == "digits_lstm"
    assert digits_lstm.report["name"] == "digits_lstm"
    assert [op["kind"] for op in digits_lstm.ops] == [row["kind"] for row in digits_lstm.report["op_table"]]
    assert digits_lstm.ops[0]["kind"] == "lstm"
    y = digits_lstm.run(np.load(os.path.join(DIGITS, "test.npy")))
    labels = np.load(os.path.join(DIGITS, "test_labels.npy"))
    assert y.shape == (len(labels), 10)
    assert (y.argmax(1) == labels).mean() > 0.9


def test_run_takes_torch_float64_and_one_sequence(digits_lstm):
    torch = pytest.importorskip("torch")
    x = np.load(os.path.join(DIGITS, "test.npy"))[:3]
    y = digits_lstm.run(x)
    assert digits_lstm.run(torch.from_numpy(x)).tobytes() == y.tobytes()
    assert digits_lstm.run(x.astype(np.float64)).tobytes() == y.tobytes()
    assert digits_lstm.run(x[1]).tobytes() == y[1].tobytes()  # [T, I]: one sequence, output [W]


def test_model_as_bytes_and_modelproto_and_arrays(digits_lstm):
    onnx = pytest.importorskip("onnx")
    path = os.path.join(DIGITS, "digits_lstm.onnx")
    calibration = np.load(os.path.join(DIGITS, "calibration.npy"))
    x = np.load(os.path.join(DIGITS, "test.npy"))
    expected = digits_lstm.run(x)
    from_bytes = qlstm.compile(open(path, "rb").read(), calibration)
    from_proto = qlstm.compile(onnx.load(path), calibration, name="digits_proto")
    assert from_bytes.name == "model" and from_proto.name == "digits_proto"
    for m in (from_bytes, from_proto):
        assert m.run(x).tobytes() == expected.tobytes()  # the same data from an array: the same program
        assert m.ops == digits_lstm.ops
    shape = ", ".join(map(str, calibration.shape))
    assert from_bytes.report["calibration"]["files"] == ["<float32 array [%s]>" % shape]


def test_save_load_and_rename(tmp_path, digits_lstm):
    written = digits_lstm.save(tmp_path, name="renamed")
    assert sorted(os.path.basename(p) for p in written.values()) == [
        "renamed.qlstm", "renamed_model.cc", "renamed_model.h", "renamed_report.json"]
    loaded = qlstm.load(tmp_path / "renamed.qlstm")
    assert loaded.name == "renamed" and loaded.report["name"] == "renamed"
    x = np.load(os.path.join(DIGITS, "test.npy"))
    assert loaded.run(x).tobytes() == digits_lstm.run(x).tobytes()
    assert "renamed_run" in open(written["renamed_model.h"]).read()
    # A loaded model writes the same files again.
    first = files_of(tmp_path)
    loaded.save(tmp_path / "again")
    assert files_of(tmp_path / "again") == first
    assert qlstm.from_bytes(open(tmp_path / "renamed.qlstm", "rb").read()).run(x).tobytes() == loaded.run(x).tobytes()


# --- torch modules compiled in-process ----------------------------------------------------------

def sqnr_db(ref, got):
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - got) ** 2), 1e-30))


def test_torch_classifier_module_with_example_input():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(3, 16, num_layers=2, batch_first=True)
            self.head = torch.nn.Linear(16, 5)

        def forward(self, x):
            y, _ = self.rnn(x)
            return torch.softmax(self.head(y[:, -1]), dim=-1)

    net = Classifier()
    calibration = np.random.default_rng(0).normal(size=(256, 10, 3)).astype(np.float32)
    compiled = qlstm.compile(net, calibration, example_input=torch.randn(2, 10, 3))
    assert compiled.name == "classifier"
    assert [op["kind"] for op in compiled.ops][-1] == "softmax"
    x = torch.randn(64, 10, 3)
    with torch.no_grad():
        ref = net(x).numpy()
    got = compiled.run(x)
    assert got.shape == (64, 5)
    assert (got.argmax(1) == ref.argmax(1)).mean() > 0.9
    assert net.training  # the module's mode is restored after the export


def test_dataloader_calibration_and_as_torch_module(digits_lstm):
    torch = pytest.importorskip("torch")
    calibration = np.load(os.path.join(DIGITS, "calibration.npy"))
    labels = torch.zeros(len(calibration), dtype=torch.long)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(calibration), labels),
                                         batch_size=64)
    compiled = qlstm.compile(os.path.join(DIGITS, "digits_lstm.onnx"), loader)
    assert compiled.report["calibration"]["sequences"] == len(calibration)
    assert len(compiled.report["calibration"]["files"]) == len(loader)
    x = np.load(os.path.join(DIGITS, "test.npy"))
    module = digits_lstm.as_torch_module()
    with torch.no_grad():
        y = module(torch.from_numpy(x))
    assert isinstance(y, torch.Tensor) and y.numpy().tobytes() == digits_lstm.run(x).tobytes()
    # The batches are the same sequences in the same order as the whole array: the same program.
    whole = qlstm.compile(os.path.join(DIGITS, "digits_lstm.onnx"), calibration)
    assert compiled.run(x).tobytes() == whole.run(x).tobytes()


def test_progress(capsys):
    path, calibration = os.path.join(DIGITS, "digits_lstm.onnx"), os.path.join(DIGITS, "calibration.npy")
    qlstm.compile(path, calibration, search=False)
    assert capsys.readouterr().err == ""  # 200 sequences: below the CLI's threshold
    qlstm.compile(path, calibration, search=False, progress=True)
    err = capsys.readouterr().err
    assert "qlstm compile: calibrating" in err and err.endswith("100%\n")


# --- errors -------------------------------------------------------------------------------------

def compile_fails_as_the_cli(tmp_path, onnx_path, calibration, error):
    """Compiles onnx_path on `calibration` (saved as .npy) both ways: the CLI exits 1, qlstm raises
    `error` with the CLI's message. Returns the exception."""
    np.save(tmp_path / "calibration.npy", calibration)
    status, _, err = cli("compile", onnx_path, "--calibration", tmp_path / "calibration.npy", "-o", tmp_path / "out")
    assert status == 1
    with pytest.raises(error) as e:
        qlstm.compile(onnx_path, str(tmp_path / "calibration.npy"))
    assert "qlstm compile: error: " + str(e.value) + "\n" == err
    return e.value


def test_layernorm_over_time_is_unsupported_naming_the_node_with_the_cli_message(tmp_path):
    torch = pytest.importorskip("torch")

    class WithLayerNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(4, 8, batch_first=True)
            self.norm = torch.nn.LayerNorm((6, 8))  # over the steps and the features: not per position

        def forward(self, x):
            return self.norm(self.lstm(x)[0])

    net = WithLayerNorm().eval()
    path = str(tmp_path / "layernorm.onnx")
    torch.onnx.export(net, (torch.randn(1, 6, 4),), path, opset_version=17, input_names=["x"], output_names=["y"])
    calibration = np.random.default_rng(0).normal(size=(32, 6, 4)).astype(np.float32)
    error = compile_fails_as_the_cli(tmp_path, path, calibration, qlstm.UnsupportedModelError)
    assert any("LayerNormalization" in p and "more than the last (feature) axis" in p for p in error.problems)
    assert isinstance(error, qlstm.Error)
    with pytest.raises(qlstm.UnsupportedModelError) as e:  # the module itself, exported in memory
        qlstm.compile(net, calibration, opset=17)
    assert any("LayerNormalization" in p for p in e.value.problems)


def test_layernorm_over_the_features_compiles_in_either_export_form():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.norm, self.fc = torch.nn.LSTM(4, 8, batch_first=True), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3)
            with torch.no_grad():
                self.norm.weight.uniform_(0.5, 1.5)
                self.norm.bias.uniform_(-0.3, 0.3)

        def forward(self, x):
            return self.fc(self.norm(self.lstm(x)[0][:, -1]))

    net = Norm().eval()
    rng = np.random.default_rng(0)
    calibration = rng.normal(size=(256, 6, 4)).astype(np.float32)
    x = rng.normal(size=(64, 6, 4)).astype(np.float32)  # held out
    for opset in (13, 17):  # decomposed, and LayerNormalization
        compiled = qlstm.compile(net, calibration, opset=opset)
        assert [op["kind"] for op in compiled.ops] == ["lstm", "layer_norm", "fully_connected"]
        y = compiled.run(x)
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        assert sqnr_db(ref, y) > 25


def test_compile_error_with_the_cli_message(tmp_path):
    path = os.path.join(DIGITS, "digits_lstm.onnx")
    compile_fails_as_the_cli(tmp_path, path, np.zeros((16, 8, 8), np.float32), qlstm.CompileError)
    with pytest.raises(qlstm.CompileError, match="feature size 3 does not match the model's input_size 8"):
        qlstm.compile(path, np.ones((4, 8, 3), np.float32))
    with pytest.raises(qlstm.CompileError, match="is not a C identifier"):
        qlstm.compile(path, os.path.join(DIGITS, "calibration.npy"), name="not an identifier")
    with pytest.raises(qlstm.CompileError, match="observer"):
        qlstm.compile(path, os.path.join(DIGITS, "calibration.npy"), input_observer="percentile?")
    with pytest.raises(TypeError, match="no_such_option"):
        qlstm.compile(path, os.path.join(DIGITS, "calibration.npy"), no_such_option=1)
    assert issubclass(qlstm.CompileError, qlstm.Error)


def test_model_file_error_with_the_cli_message(tmp_path):
    bad = tmp_path / "bad.qlstm"
    bad.write_bytes(b"not a model")
    status, _, err = cli("run", bad, "--input", os.path.join(DIGITS, "test.npy"), "--output", tmp_path / "y.npy",
                         "--float")
    assert status == 2
    with pytest.raises(qlstm.ModelFileError) as e:
        qlstm.load(bad)
    assert "qlstm run: error: " + str(e.value) + "\n" == err
    with pytest.raises(qlstm.ModelFileError):
        qlstm.load(tmp_path / "missing.qlstm")
    with pytest.raises(qlstm.ModelFileError, match="not a valid ONNX model"):
        qlstm.compile(b"not onnx", np.ones((4, 8, 8), np.float32))
    assert issubclass(qlstm.ModelFileError, qlstm.Error)


# --- evaluate: qlstm eval's figures -------------------------------------------------------------

@pytest.fixture(scope="module")
def digits_gru():
    return qlstm.compile(os.path.join(DIGITS, "digits_gru.onnx"), os.path.join(DIGITS, "calibration.npy"))


def cli_eval_json(tmp_path, onnx_path, compiled, data, *flags):
    """`qlstm eval --json` of a compiled model saved into tmp_path, on `data` (saved as .npy)."""
    written = compiled.save(tmp_path)
    np.save(tmp_path / "data.npy", data)
    out = tmp_path / "eval.json"
    status, _, err = cli("eval", onnx_path, written[compiled.name + ".qlstm"], "--data", tmp_path / "data.npy",
                         "--json", out, *flags)
    assert status == 0, err
    return json.load(open(out))


def same_figures(got, expected):
    """Every figure of two eval JSONs, leaving out the names of the files (the CLI's paths, Python's
    descriptions of arrays)."""
    names = {"model", "onnx", "data", "targets"}

    def strip(j):
        if isinstance(j, dict) and set(j) == {"h0", "c0"}:  # initial_state: "model", "zero" or a name
            return {k: v if v in ("model", "zero") else "given" for k, v in j.items()}
        if isinstance(j, dict):
            return {k: strip(v) for k, v in j.items() if k not in names}
        if isinstance(j, list):
            return [strip(v) for v in j]
        return j

    assert strip(got) == strip(expected)


def test_evaluate_equals_cli_eval_with_labels(tmp_path, digits_lstm):
    x = np.load(os.path.join(DIGITS, "test.npy"))
    labels = np.load(os.path.join(DIGITS, "test_labels.npy"))
    np.save(tmp_path / "labels.npy", labels)
    onnx_path = os.path.join(DIGITS, "digits_lstm.onnx")
    expected = cli_eval_json(tmp_path, onnx_path, digits_lstm, x, "--labels", tmp_path / "labels.npy")
    ev = digits_lstm.evaluate(x, labels)
    same_figures(ev.json, expected)
    y = expected["outputs"][0]
    assert ev.sqnr_db == y["sqnr_db"] and ev.max_abs_error == y["max_abs_error"]
    assert ev.argmax_agreement == expected["classifier"]["argmax_agreement"]
    assert (ev.float_top1, ev.int8_top1) == (expected["classifier"]["float_top1"], expected["classifier"]["int8_top1"])
    # The int8 top-1 is run's: the figure an evaluation loop over run() would find.
    assert ev.int8_top1 == (digits_lstm.run(x).argmax(1) == labels).mean()
    assert str(ev).startswith("qlstm eval: digits_lstm vs ") and "top-1 accuracy on 450" in str(ev)
    unlabelled = digits_lstm.evaluate(x)
    assert unlabelled.float_top1 is None and unlabelled.argmax_agreement == ev.argmax_agreement


def test_evaluate_equals_cli_eval_per_step_gru_from_a_state(tmp_path):
    """A GRU with an output per step, batch-first False, from a given h0, with targets: the same JSON."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    net = torch.nn.GRU(3, 12, num_layers=2)
    calibration = torch.randn(10, 64, 3)
    onnx_path = str(tmp_path / "gru.onnx")
    torch.onnx.export(net.eval(), (calibration[:, :1],), onnx_path, opset_version=14, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {1: "batch"}})
    compiled = qlstm.compile(onnx_path, calibration)
    x = np.random.default_rng(1).normal(size=(10, 6, 3)).astype(np.float32)
    h0 = np.random.default_rng(2).uniform(-0.5, 0.5, size=(2, 6, 12)).astype(np.float32)
    targets = np.random.default_rng(3).normal(size=(10, 6, 12)).astype(np.float32)
    np.save(tmp_path / "h0.npy", h0)
    np.save(tmp_path / "targets.npy", targets)
    expected = cli_eval_json(tmp_path, onnx_path, compiled, x, "--h0", tmp_path / "h0.npy", "--targets",
                             tmp_path / "targets.npy")
    ev = compiled.evaluate(x, h0=h0, targets=targets)
    same_figures(ev.json, expected)
    assert ev.argmax_agreement is None and len(ev.rms_error_per_step) == 10
    assert ev.forecast["int8"] == expected["forecast"]["int8"]
    # Not the model's own state: a different figure.
    assert compiled.evaluate(x).json["outputs"] != ev.json["outputs"]


def test_evaluate_reference_of_a_loaded_model(tmp_path, digits_lstm):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:64]
    digits_lstm.save(tmp_path)
    loaded = qlstm.load(tmp_path / "digits_lstm.qlstm")
    with pytest.raises(qlstm.CompileError, match="give reference="):
        loaded.evaluate(x)
    onnx_path = os.path.join(DIGITS, "digits_lstm.onnx")
    assert loaded.evaluate(x, reference=onnx_path).json["outputs"] == digits_lstm.evaluate(x).json["outputs"]
    with pytest.raises(qlstm.CompileError, match="recurrent op 0 is an LSTM, in .*digits_gru.onnx it is a GRU"):
        loaded.evaluate(x, reference=os.path.join(DIGITS, "digits_gru.onnx"))


def test_evaluate_refusals(digits_lstm):
    sunspots = qlstm.compile(os.path.join(EXAMPLES, "sunspots", "sunspots_lstm.onnx"),
                             os.path.join(EXAMPLES, "sunspots", "calibration.npy"), search=False)
    x = np.load(os.path.join(EXAMPLES, "sunspots", "test.npy"))
    with pytest.raises(qlstm.CompileError, match="is not a classifier"):
        sunspots.evaluate(x, labels=np.zeros(len(x), np.int64))
    x = np.load(os.path.join(DIGITS, "test.npy"))[:8]
    with pytest.raises(qlstm.CompileError, match="is not a class of the model's output"):
        digits_lstm.evaluate(x, labels=np.full(8, 10))
    with pytest.raises(qlstm.CompileError, match="4 labels for 8 sequences"):
        digits_lstm.evaluate(x, labels=np.zeros(4, np.int64))


# --- run with a state: qlstm run --h0 / --c0 / --h-n / --c-n ------------------------------------

def cli_run_state(tmp_path, compiled, x, h0=None, c0=None, float_io=True, extra=()):
    """`qlstm run` of the saved model on x from h0 / c0; returns (y, h_n, c_n) as the CLI writes them
    (c_n None for a GRU model)."""
    model = compiled.save(tmp_path)[compiled.name + ".qlstm"]
    args = ["run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", "--h-n", tmp_path / "h_n.npy"]
    np.save(tmp_path / "x.npy", x)
    for flag, state in (("--h0", h0), ("--c0", c0)):
        if state is not None:
            np.save(tmp_path / (flag[2:] + ".npy"), state)
            args += [flag, tmp_path / (flag[2:] + ".npy")]
    gru = compiled.ops[0]["kind"] in ("gru", "rnn")  # no cell
    if not gru:
        args += ["--c-n", tmp_path / "c_n.npy"]
    status, _, err = cli(*(args + (["--float"] if float_io else []) + list(extra)))
    assert status == 0, err
    return (np.load(tmp_path / "y.npy"), np.load(tmp_path / "h_n.npy"),
            None if gru else np.load(tmp_path / "c_n.npy"))


def assert_same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_stateful_run_equals_cli_run_lstm(tmp_path, digits_lstm):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:5]
    rng = np.random.default_rng(4)
    h0 = rng.uniform(-0.8, 0.8, size=(1, 5, 32)).astype(np.float32)
    c0 = rng.uniform(-2, 2, size=(1, 5, 32)).astype(np.float32)
    y_cli, h_cli, c_cli = cli_run_state(tmp_path, digits_lstm, x, h0, c0)
    y, (h_n, c_n) = digits_lstm.run(x, h0, c0, return_state=True)
    for a, b in ((y, y_cli), (h_n, h_cli), (c_n, c_cli)):
        assert_same(a, b)
    assert y.tobytes() != digits_lstm.run(x).tobytes()  # the state matters
    # int8 in and out, the state in the kernel's int forms.
    scale, zero_point = digits_lstm.input_quant
    x8 = np.clip(np.round(x / scale) + zero_point, -128, 127).astype(np.int8)
    h8 = rng.integers(-128, 128, size=(1, 5, 32)).astype(np.int8)
    c16 = rng.integers(-3000, 3000, size=(1, 5, 32)).astype(np.int16)
    y_cli, h_cli, c_cli = cli_run_state(tmp_path, digits_lstm, x8, h8, c16, float_io=False)
    y, (h_n, c_n) = digits_lstm.run_int8(x8, h8, c16, return_state=True)
    for a, b in ((y, y_cli), (h_n, h_cli), (c_n, c_cli)):
        assert_same(a, b)
    assert h_n.dtype == np.int8 and c_n.dtype == np.int16


def test_int16_activations_as_the_cli(tmp_path):
    """16x8: the files byte for byte as `qlstm compile --activations int16 --int16-headroom 3`; float
    and int16 runs equal the CLI's and each other; streamed equal to one call."""
    sunspots = os.path.join(EXAMPLES, "sunspots")
    onnx_path, calibration = os.path.join(sunspots, "sunspots_lstm.onnx"), os.path.join(sunspots, "calibration.npy")
    status, _, err = cli("compile", onnx_path, "--calibration", calibration, "-o", tmp_path / "cli",
                         "--activations", "int16", "--int16-headroom", "3")
    assert status == 0, err
    compiled = qlstm.compile(onnx_path, calibration, activations="int16", int16_headroom=3)
    compiled.save(tmp_path / "py")
    assert files_of(tmp_path / "py") == files_of(tmp_path / "cli")
    x = np.load(os.path.join(sunspots, "test.npy"))[:4]
    np.save(tmp_path / "x.npy", x)
    status, _, err = cli("run", tmp_path / "cli" / "sunspots_lstm.qlstm", "--input", tmp_path / "x.npy", "--output",
                         tmp_path / "y.npy", "--float")
    assert status == 0, err
    y = compiled.run(x)
    assert_same(y, np.load(tmp_path / "y.npy"))
    assert_same(compiled.run(x, chunk=5), y)
    scale, zero_point = compiled.input_quant
    assert zero_point == 0
    x16 = np.clip(np.rint(x / scale), -32768, 32767).astype(np.int16)
    y16 = compiled.run_int8(x16)
    assert y16.dtype == np.int16
    out_scale, _ = compiled.output_quant
    assert_same((y16.astype(np.float64) * out_scale).astype(np.float32), y)
    with pytest.raises(qlstm.CompileError, match="expected int16"):
        compiled.run_int8(x16.astype(np.int8))
    with pytest.raises(qlstm.CompileError, match="headroom of 9 bits"):
        qlstm.compile(onnx_path, calibration, activations="int16", int16_headroom=9)


def test_stateful_run_equals_cli_run_gru(tmp_path, digits_gru):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:3]
    h0 = np.random.default_rng(5).uniform(-0.9, 0.9, size=(1, 3, 32)).astype(np.float32)
    y_cli, h_cli, _ = cli_run_state(tmp_path, digits_gru, x, h0)
    y, h_n = digits_gru.run(x, h0, return_state=True)  # a GRU: h_n alone, as torch's nn.GRU
    assert_same(y, y_cli)
    assert_same(h_n, h_cli)
    q15 = np.random.default_rng(6).integers(-20000, 20000, size=(1, 3, 32)).astype(np.int16)
    x8 = np.zeros((3, 8, 8), np.int8)
    y_cli, h_cli, _ = cli_run_state(tmp_path, digits_gru, x8, q15, float_io=False)
    y, h_n = digits_gru.run_int8(x8, q15, return_state=True)
    assert_same(y, y_cli)
    assert_same(h_n, h_cli)
    assert h_n.dtype == np.int16  # Q0.15


def test_stateful_run_equals_cli_run_relu_rnn(tmp_path):
    """A ReLU nn.RNN's state: int16 at each op's own 2^P; float and int forms equal the CLI's, and
    two chunks from the returned state equal one call."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(13)
    net = torch.nn.RNN(3, 10, num_layers=2, nonlinearity="relu", batch_first=True)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if "weight_hh" in name:
                p.mul_(0.5)  # a stable recurrence, as training leaves one
    compiled = qlstm.compile(net, torch.randn(64, 12, 3), search=False)
    assert [op["kind"] for op in compiled.ops] == ["rnn", "rnn"]
    x = np.random.default_rng(7).normal(size=(3, 12, 3)).astype(np.float32)
    h0 = np.random.default_rng(8).uniform(0, 0.5, size=(2, 3, 10)).astype(np.float32)
    y_cli, h_cli, _ = cli_run_state(tmp_path, compiled, x, h0)
    y, h_n = compiled.run(x, h0, return_state=True)
    assert_same(y, y_cli)
    assert_same(h_n, h_cli)
    y1, h1 = compiled.run(x[:, :5], h0, return_state=True)
    y2, h2 = compiled.run(x[:, 5:], h1, return_state=True)
    assert_same(np.concatenate([y1, y2], axis=1), y)
    assert_same(h2, h_n)
    with pytest.raises(qlstm.CompileError, match="the model.s recurrent ops are RNNs, which have no cell state"):
        compiled.run(x, h0, h0)


def test_gru_refuses_c0_with_the_cli_message(tmp_path, digits_gru):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:2]
    c0 = np.zeros((1, 2, 32), np.float32)
    model = digits_gru.save(tmp_path)["digits_gru.qlstm"]
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c0.npy", c0)
    status, _, err = cli("run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", "--float",
                         "--c0", tmp_path / "c0.npy")
    assert status == 2
    refusal = "the model's recurrent ops are GRUs, which have no cell state"
    assert err == "qlstm run: error: %s: --c0: %s\n" % (model, refusal)
    with pytest.raises(qlstm.CompileError) as e:
        digits_gru.run(x, c0=c0)
    assert str(e.value) == "digits_gru: c0: " + refusal


def test_state_errors_name_the_argument(digits_lstm):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:2]
    with pytest.raises(qlstm.CompileError, match=r"h0: shape \[1, 3, 32\], expected \[1, 2, 32\]"):
        digits_lstm.run(x, h0=np.zeros((1, 3, 32), np.float32))
    with pytest.raises(qlstm.CompileError, match="c0: dtype <i2, expected <f4"):
        digits_lstm.run(x, c0=np.zeros((1, 2, 32), np.int16))
    with pytest.raises(qlstm.CompileError, match=r"h0: dtype <f4, expected \|i1 \(use run\(\) \(float state\) for float32\)"):
        digits_lstm.run_int8(np.zeros((2, 8, 8), np.int8), h0=np.zeros((1, 2, 32), np.float32))
    with pytest.warns(UserWarning, match="were clipped"):
        digits_lstm.run(x, c0=np.full((1, 2, 32), 1e4, np.float32))


def test_state_as_a_graph_input(tmp_path):
    """A model whose initial state is an input of its ONNX graph: run needs h0 and c0 (the CLI's
    refusal otherwise) and then equals qlstm run --h0 --c0 and torch."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(13)

    class Stateful(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(3, 8, batch_first=True)

        def forward(self, x, h0, c0):
            return self.lstm(x, (h0, c0))[0]

    net = Stateful().eval()
    onnx_path = str(tmp_path / "stateful.onnx")
    torch.onnx.export(net, (torch.randn(2, 5, 3), torch.zeros(1, 2, 8), torch.zeros(1, 2, 8)), onnx_path,
                      opset_version=14, input_names=["x", "h0", "c0"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"}})
    compiled = qlstm.compile(onnx_path, np.random.default_rng(0).normal(size=(64, 5, 3)).astype(np.float32))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 3)).astype(np.float32)
    h0, c0 = (rng.uniform(-0.5, 0.5, size=(1, 2, 8)).astype(np.float32) for _ in range(2))
    with pytest.raises(qlstm.CompileError, match="takes its initial hidden state as an input: give h0"):
        compiled.run(x)
    y_cli, h_cli, c_cli = cli_run_state(tmp_path, compiled, x, h0, c0)
    y, (h_n, c_n) = compiled.run(x, h0, c0, return_state=True)
    for a, b in ((y, y_cli), (h_n, h_cli), (c_n, c_cli)):
        assert_same(a, b)
    with torch.no_grad():
        ref = net(*(torch.from_numpy(a) for a in (x, h0, c0))).numpy()
    assert sqnr_db(ref, y) > 25
    assert compiled.evaluate(x).json["initial_state"] == {"h0": "zero", "c0": "zero"}


def test_streaming_with_the_returned_state_equals_one_call():
    torch = pytest.importorskip("torch")
    torch.manual_seed(7)
    net = torch.nn.LSTM(4, 16, num_layers=2, bidirectional=False, batch_first=True)
    compiled = qlstm.compile(net, torch.randn(64, 20, 4))
    x = np.random.default_rng(8).normal(size=(3, 20, 4)).astype(np.float32)
    whole, (h_whole, c_whole) = compiled.run(x, return_state=True)
    first, state = compiled.run(x[:, :7], return_state=True)
    second, (h_n, c_n) = compiled.run(x[:, 7:], *state, return_state=True)
    assert_same(np.concatenate([first, second], axis=1), whole)
    assert_same(h_n, h_whole)
    assert_same(c_n, c_whole)
    assert_same(compiled.run(x, chunk=6), whole)  # --chunk: the same
    with pytest.raises(qlstm.CompileError, match="chunk"):
        compiled.run(x, chunk=0)


# --- the emulated device: run_on_target, bench ----------------------------------------------------

def need_target(cpu):
    missing = qlstm.target_missing(cpu)
    if missing is not None:
        pytest.skip("no emulated %s here: %s" % (cpu, missing))


@pytest.mark.parametrize("cpu", ["cortex-m55", "cortex-m4"])
def test_run_on_target_equals_run_bit_for_bit(cpu, digits_lstm, digits_gru):
    need_target(cpu)
    x = np.load(os.path.join(DIGITS, "test.npy"))[:6]
    for m in (digits_lstm, digits_gru):
        assert_same(m.run_on_target(x, cpu=cpu), m.run(x))
    rng = np.random.default_rng(9)
    h0 = rng.uniform(-0.5, 0.5, size=(1, 6, 32)).astype(np.float32)
    c0 = rng.uniform(-1, 1, size=(1, 6, 32)).astype(np.float32)
    y, (h_n, c_n) = digits_lstm.run_on_target(x, cpu=cpu, h0=h0, c0=c0, return_state=True)
    y_host, (h_host, c_host) = digits_lstm.run(x, h0, c0, return_state=True)
    for a, b in ((y, y_host), (h_n, h_host), (c_n, c_host)):
        assert_same(a, b)
    x8 = rng.integers(-128, 128, size=(6, 8, 8)).astype(np.int8)
    assert_same(digits_gru.run_on_target(x8, cpu=cpu, int8=True), digits_gru.run_int8(x8))


def test_bench_equals_cli_bench(tmp_path, digits_gru):
    cpu = "cortex-m4"
    need_target(cpu)
    model = digits_gru.save(tmp_path)["digits_gru.qlstm"]
    status, out, err = cli("bench", model, "--target", cpu)
    assert status == 0, err
    b = digits_gru.bench(cpu)
    assert out.splitlines()[-1] == "instructions: %d" % b.instructions
    assert b.instructions == sum(b.op_instructions) > 0 and len(b.op_instructions) == len(digits_gru.ops)
    assert b.time_steps == 8 and b.cpu == cpu
    for o, n in enumerate(b.op_instructions):  # each op's line: "op K (...): N instructions"
        assert any(line.startswith("op %d " % o) and line.endswith(": %d instructions" % n) for line in out.splitlines())
    # The cycle estimate: the CLI's line, the per-op sum, and more cycles than instructions.
    assert "estimated cycles: %d (" % b.cycles in out
    assert b.cycles == sum(b.op_cycles) >= b.instructions and len(b.op_cycles) == len(b.op_instructions)
    longer = digits_gru.bench(cpu, time_steps=16)
    assert longer.instructions > b.instructions
    # The profile splits op 0's instructions and estimated cycles by function.
    p = digits_gru.bench(cpu, profile=True)
    assert p.instructions == b.instructions and p.cycles == b.cycles
    assert sum(f["instructions"] for f in p.profile) == b.op_instructions[0]
    assert sum(f["cycles"] for f in p.profile) == b.op_cycles[0]


def test_device_errors_name_what_is_missing(tmp_path, digits_lstm, monkeypatch):
    x = np.load(os.path.join(DIGITS, "test.npy"))[:1]
    with pytest.raises(qlstm.DeviceError, match="unknown target CPU 'cortex-m99'"):
        digits_lstm.run_on_target(x, cpu="cortex-m99")
    assert "cortex-m99" in qlstm.target_missing("cortex-m99")
    assert issubclass(qlstm.DeviceError, qlstm.Error)
    monkeypatch.setenv("QLSTM_TARGET_DIR", str(tmp_path))  # where no firmware was built
    with pytest.raises(qlstm.DeviceError, match="no firmware for cortex-m4"):
        digits_lstm.bench("cortex-m4")
    monkeypatch.delenv("QLSTM_TARGET_DIR")
    if qlstm.target_missing("cortex-m4") is None:
        monkeypatch.setenv("PATH", str(tmp_path))  # no qemu-system-arm
        with pytest.raises(qlstm.DeviceError, match="qemu-system-arm not found"):
            digits_lstm.run_on_target(x, cpu="cortex-m4")


# --- progress: a terminal, a notebook, a log -----------------------------------------------------

class Tty(io.StringIO):
    def isatty(self):
        return True


def progress_of(stream):
    """Drives the compile's progress through two stages on stream; returns what it wrote."""
    bar = qlstm._Progress(stream)
    for stage in ("calibrating", "searching"):
        for done in range(0, 21):
            bar(stage, done, 20)
    return stream.getvalue()


def test_progress_in_a_terminal_a_notebook_and_a_log(monkeypatch):
    log = progress_of(io.StringIO())
    assert "\r" not in log
    assert log.splitlines()[:2] == ["qlstm compile: calibrating   0%", "qlstm compile: calibrating  10%"]
    assert len(log.splitlines()) == 22  # a line per tenth of each stage
    terminal = progress_of(Tty())
    assert terminal.count("\n") == 2 and terminal.count("\r") == 22  # one line per stage, redrawn
    assert terminal.endswith("[##########] 100%\n")
    # A Jupyter kernel: stderr is no tty, yet the line is redrawn (the output area draws "\r").
    kernel_shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel_shell))
    assert progress_of(io.StringIO()) == terminal
    # IPython in a terminal (no kernel) is not a notebook.
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: types.SimpleNamespace()))
    assert progress_of(io.StringIO()) == log


# --- torch modules of each kind: the layout, the program, the accuracy, evaluate's reference ----

RECURRENT_KINDS = {
    "lstm": lambda torch, bf: torch.nn.LSTM(4, 16, batch_first=bf),
    "gru": lambda torch, bf: torch.nn.GRU(4, 16, batch_first=bf),
    "gru_stacked": lambda torch, bf: torch.nn.GRU(4, 16, num_layers=2, batch_first=bf),
    "lstm_bidirectional": lambda torch, bf: torch.nn.LSTM(4, 16, bidirectional=True, batch_first=bf),
    "gru_bidirectional": lambda torch, bf: torch.nn.GRU(4, 16, bidirectional=True, batch_first=bf),
    "lstm_stacked_bidirectional": lambda torch, bf: torch.nn.LSTM(4, 12, num_layers=2, bidirectional=True,
                                                                  batch_first=bf),
    "rnn": lambda torch, bf: torch.nn.RNN(4, 16, batch_first=bf),
    "rnn_relu_stacked_bidirectional": lambda torch, bf: torch.nn.RNN(4, 12, num_layers=2, nonlinearity="relu",
                                                                     bidirectional=True, batch_first=bf),
}


@pytest.mark.parametrize("kind", sorted(RECURRENT_KINDS))
@pytest.mark.parametrize("batch_first", [True, False])
def test_torch_module_kinds(kind, batch_first):
    torch = pytest.importorskip("torch")
    torch.manual_seed(11)
    net = RECURRENT_KINDS[kind](torch, batch_first)
    shape = (lambda b: (b, 10, 4)) if batch_first else (lambda b: (10, b, 4))
    compiled = qlstm.compile(net, torch.randn(*shape(96)), search=False)
    assert compiled.name == type(net).__name__.lower() and compiled.batch_first == batch_first
    recurrent = [op["kind"] for op in compiled.ops if op["kind"] in ("lstm", "gru", "rnn")]
    assert recurrent == [kind.split("_")[0]] * (net.num_layers * (2 if net.bidirectional else 1))
    x = torch.randn(*shape(16))
    with torch.no_grad():
        ref = net(x)[0].numpy()
    got = compiled.run(x)
    assert got.shape == ref.shape
    assert sqnr_db(ref, got) > 20
    # evaluate's float model is the module (exported): its SQNR is the one against torch's output.
    ev = compiled.evaluate(x)
    assert abs(ev.sqnr_db - sqnr_db(ref, got)) < 0.01
    assert len(ev.rms_error_per_step) == 10 and ev.argmax_agreement is None


@pytest.mark.parametrize("batch_first", [True, False])
def test_torch_whole_model_projection_gru_head_softmax(batch_first):
    """A Linear input projection, a GRU, a Linear head and a softmax on the last step: one program."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(12)

    class Whole(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.project = torch.nn.Linear(6, 8)
            self.gru = torch.nn.GRU(8, 24, batch_first=batch_first)
            self.head = torch.nn.Linear(24, 4)

        def forward(self, x):
            y, _ = self.gru(torch.relu(self.project(x)))
            last = y[:, -1] if batch_first else y[-1]
            return torch.softmax(self.head(last), dim=-1)

    net = Whole()
    with torch.no_grad():
        net.head.weight.mul_(6)  # decisive classes, as a trained head's (untrained ones are near ties)
    shape = (lambda b: (b, 9, 6)) if batch_first else (lambda b: (9, b, 6))
    compiled = qlstm.compile(net, torch.randn(*shape(128)))
    kinds = [op["kind"] for op in compiled.ops]
    assert kinds[0] == "fully_connected" and "gru" in kinds and kinds[-1] == "softmax"
    x = torch.randn(*shape(200))
    with torch.no_grad():
        ref = net(x).numpy()
    got = compiled.run(x)
    assert got.shape == (200, 4)
    labels = ref.argmax(1)
    ev = compiled.evaluate(x, labels)
    assert ev.argmax_agreement == (got.argmax(1) == ref.argmax(1)).mean() > 0.9
    assert ev.float_top1 == 1.0  # the labels are the float model's own argmax
    assert ev.int8_top1 == ev.argmax_agreement


@pytest.mark.parametrize("batch_first", [True, False])
def test_torch_autoencoder_decoder_reads_the_repeated_state(batch_first):
    """An LSTM autoencoder: h_n[-1] repeated over the steps into the decoder (input_repeated)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(13)
    time = 1 if batch_first else 0

    class Autoencoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.LSTM(4, 8, batch_first=batch_first)
            self.dec = torch.nn.LSTM(8, 12, batch_first=batch_first)
            self.out = torch.nn.Linear(12, 4)

        def forward(self, x):
            h = self.enc(x)[1][0][-1].unsqueeze(time)
            reps = [1, 1, 1]
            reps[time] = x.shape[time]
            return self.out(self.dec(h.repeat(*reps))[0])

    net = Autoencoder()
    shape = (lambda b: (b, 10, 4)) if batch_first else (lambda b: (10, b, 4))
    compiled = qlstm.compile(net, torch.randn(*shape(96)), search=False)
    assert [op["kind"] for op in compiled.ops] == ["lstm", "lstm", "fully_connected"]
    assert compiled.ops[0]["output_steps"] == "final" and compiled.ops[1].get("input_repeated") is True
    x = torch.randn(*shape(16))
    with torch.no_grad():
        ref = net(x).numpy()
    got = compiled.run(x)
    assert got.shape == ref.shape
    assert sqnr_db(ref, got) > 30


def test_evaluate_forecast_in_units_equals_cli_eval(tmp_path):
    sunspots = os.path.join(EXAMPLES, "sunspots")
    onnx_path = os.path.join(sunspots, "sunspots_lstm.onnx")
    compiled = qlstm.compile(onnx_path, os.path.join(sunspots, "calibration.npy"))
    x = np.load(os.path.join(sunspots, "test.npy"))
    targets = os.path.join(sunspots, "test_targets.npy")
    units_file = os.path.join(sunspots, "model.json")
    expected = cli_eval_json(tmp_path, onnx_path, compiled, x, "--targets", targets, "--units", units_file)
    units = json.load(open(units_file))["output_units"]
    for given in (units, units_file):
        ev = compiled.evaluate(x, targets=np.load(targets), units=given)
        same_figures(ev.json, expected)
        assert ev.forecast["units"] == units["name"]
    plain = compiled.evaluate(x, targets=np.load(targets))
    assert plain.forecast["int8"]["mae"] * units["scale"] == pytest.approx(ev.forecast["int8"]["mae"], rel=1e-9)
    with pytest.raises(qlstm.CompileError, match="give targets too"):
        compiled.evaluate(x, units=units)
    with pytest.raises(qlstm.CompileError, match="expected a positive number"):
        compiled.evaluate(x, targets=np.load(targets), units=dict(units, scale=-1))


# --- token ids: a model that starts with an embedding --------------------------------------------

IMPORT_MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "onnx", "models"))


def test_embedding_on_token_ids_as_the_cli(tmp_path):
    onnx_path = os.path.join(IMPORT_MODELS, "import_embedding_lstm_last_step.onnx")
    calibration = os.path.join(IMPORT_MODELS, "import_embedding_calibration.npy")
    held_out = os.path.join(IMPORT_MODELS, "import_embedding_held_out.npy")
    status, _, err = cli("compile", onnx_path, "--calibration", calibration, "-o", tmp_path / "cli", "--no-search",
                         "--max-time-steps", "8")
    assert status == 0, err
    compiled = qlstm.compile(onnx_path, calibration, search=False, max_time_steps=8)
    compiled.save(tmp_path / "py")
    assert files_of(tmp_path / "py") == files_of(tmp_path / "cli")
    for flag, method in (("--float", compiled.run), (None, compiled.run_int8)):
        y = tmp_path / ("y%s.npy" % (flag or ""))
        status, _, err = cli("run", tmp_path / "cli" / "import_embedding_lstm_last_step.qlstm", "--input", held_out,
                             "--output", y, *([flag] if flag else []))
        assert status == 0, err
        ids = np.load(held_out)
        assert method(ids).tobytes() == np.load(y).tobytes()
        assert method(ids.astype(np.int32)).tobytes() == np.load(y).tobytes()  # any integer dtype
    bad = np.load(held_out)
    bad[1, 3] = 20
    with pytest.raises(qlstm.CompileError, match=r"value 20 at index 10 is not a token id of the embedding's table"):
        compiled.run(bad)
    with pytest.raises(qlstm.CompileError, match="expected integer token ids"):
        compiled.run(np.load(held_out).astype(np.float32))


def test_embedding_torch_module_compiles_on_its_ids():
    import torch

    class TextClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(50, 8, padding_idx=0)
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True, bidirectional=True)
            self.fc = torch.nn.Linear(32, 4)

        def forward(self, ids):
            y, (h, _) = self.lstm(self.emb(ids))
            return self.fc(torch.cat((h[-2], h[-1]), dim=1))

    torch.manual_seed(0)
    module = TextClassifier().eval()
    rng = np.random.default_rng(3)
    ids, held_out = rng.integers(0, 50, (64, 12)), rng.integers(0, 50, (32, 12))
    compiled = qlstm.compile(module, ids, search=False)
    assert compiled.ops[0]["kind"] == "embedding"
    with torch.no_grad():
        want = module(torch.from_numpy(held_out)).numpy()
    got = compiled.run(held_out)
    assert got.shape == want.shape
    assert (got.argmax(1) == want.argmax(1)).mean() >= 0.9
