#!/usr/bin/python3
"""Makes the ONNX import fixtures in tests/onnx/models/ (Debian's python3-torch and python3-onnx).

Accepted models (torch.onnx.export of nn.LSTM, and plain ONNX LSTM graphs built with onnx.helper),
each with the float weights the importer must recover (NAME.weights.npz is not used: the expected
PyTorch-order weights are written as NAME.expect.json):
  torch_seq_first_opset13, torch_batch_first_opset14, torch_batch_first_opset17, torch_no_bias,
  torch_unbatched_opset15 (a 2-D input [T, I]: Unsqueeze before the LSTM, two Squeezes after),
  plain_layout0, plain_layout1_no_bias, plain_zero_initializer_state, plain_constant_of_shape_state,
  plain_reverse (direction "reverse": the same weights as plain_layout0, time walked backwards)
Models once refused, now either refused with the message the importer must give (key "error") or
accepted with their program's structure (key "program"; "front"/"head": the layers around the stack):
  torch_two_layers, torch_bidirectional, torch_linear_head, torch_h_n_output, torch_initial_state_input,
  plain_clip, plain_input_forget, plain_activations, plain_peephole,
  plain_sequence_lens, plain_nonzero_initial_state, plain_y_c_output, plain_missing_initializer,
  plain_wrong_initializer_shape, plain_lstm_input_not_graph_input (a Relu in front of the LSTM)
Whole models (tests/e2e/models.py: the layers around the LSTM), each with torch's float output on a
fixed input (NAME.expect.json keys "input", "input_shape", "output", "output_shape", "lstm_output",
"front", "head"): whole_* for every pattern (classifier, h_n head, per-step head, front end, MLP heads
with each activation, y[:, k], stacked, bidirectional, both layouts, unbatched, opsets 13-17,
learned per-row initial state; a Gemm rewritten with transB = 0, alpha, beta, a Constant weight
or its bias as an Add; an opset-10 form with Clip bounds as attributes). Refused whole models, each with every line its refusal must
contain (key "errors"): refused_*.
GRU models (gru_*, group "gru"): nn.GRU exported by torch (key "cell": "GRU", torch's output and,
when the model returns it, h_n on a fixed input and h0), hand-made GRU graphs, and the refused forms.
Import pre-pass models (import_*, group "import"): torch exports with dynamic axes (two separate
nn.LSTM / nn.GRU modules), without constant folding, at opset 9 (an attribute Slice), a forecaster
ending in .squeeze(-1), a Reshape to [0, 0, 128] between bidirectional layers (torch's output on a
fixed input), the mean and max over time (import_pool_*), heads on the last layer's final states (import_h_n_*: torch.cat((h_n[-2], h_n[-1]), 1)
in either order, flattened, one row; a row of another layer refused), BatchNorm1d folded into the
Linears (import_batchnorm_*), every step flattened into a Linear (import_flatten_*), a classifier with dead output
units (import_dead_output_units), and the refusals that must name their node (sum over time, encoder-decoder, RNN,
Loop, another domain's op, an initial state of the wrong constant shape); import_calibration.npy
for the CLI tests.
Usage: make_onnx_fixtures.py [OUTDIR] [--only lstm|gru|rnn|import|seq2seq ...]
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import models  # noqa: E402  (tests/e2e/models.py: the whole-model classes)

GENERATOR = "tests/onnx/make_onnx_fixtures.py"
torch.set_num_threads(1)
# --only GROUP (lstm, gru, rnn, import, seq2seq; repeatable) makes one group's fixtures and leaves the others' files alone.
ARGS = sys.argv[1:]
ONLY = [ARGS[k + 1] for k in range(len(ARGS) - 1) if ARGS[k] == "--only"]
POSITIONAL = [a for k, a in enumerate(ARGS) if a != "--only" and (k == 0 or ARGS[k - 1] != "--only")]
OUT = POSITIONAL[0] if POSITIONAL else os.path.join(os.path.dirname(__file__), "models")


def expect(name, **kw):
    kw["generator"] = GENERATOR
    with open(os.path.join(OUT, name + ".expect.json"), "w") as f:
        json.dump(kw, f, indent=1, sort_keys=True)
        f.write("\n")


def torch_weights(lstm, suffix="_l0"):
    g = lambda n: getattr(lstm, n + suffix).detach().numpy().reshape(-1).tolist()
    have_bias = lstm.bias
    return {"weight_ih": g("weight_ih"), "weight_hh": g("weight_hh"),
            "bias_ih": g("bias_ih") if have_bias else [], "bias_hh": g("bias_hh") if have_bias else []}


class Wrap(nn.Module):
    def __init__(self, lstm, mode="y"):
        super().__init__()
        self.lstm, self.mode = lstm, mode
        self.head = nn.Linear(lstm.hidden_size * (2 if lstm.bidirectional else 1), 2)

    def forward(self, x, *state):
        if self.mode == "full":  # (h0, c0) in, (y, h_n, c_n) out
            y, (h, c) = self.lstm(x, (state[0], state[1]))
            return y, h, c
        if self.mode == "state":
            y, _ = self.lstm(x, (state[0], state[1]))
            return y
        y, (h, c) = self.lstm(x)
        if self.mode == "head":
            return self.head(y)
        if self.mode == "h_n":
            return y, h
        return y


def export_torch(name, lstm, x, opset, mode="y", extra_inputs=()):
    model = Wrap(lstm, mode).eval()
    path = os.path.join(OUT, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, (x,) + tuple(extra_inputs), path, opset_version=opset,
                          input_names=["x"] + ["h0", "c0"][:len(extra_inputs)], output_names=None,
                          dynamic_axes=None)
    return path


def accepted_torch():
    torch.manual_seed(0)
    l = nn.LSTM(3, 4).eval()
    export_torch("torch_seq_first_opset13", l, torch.randn(5, 2, 3), 13)
    expect("torch_seq_first_opset13", input_size=3, hidden_size=4, batch_first=False, **torch_weights(l))
    l = nn.LSTM(3, 5, batch_first=True).eval()
    export_torch("torch_batch_first_opset14", l, torch.randn(2, 6, 3), 14)
    expect("torch_batch_first_opset14", input_size=3, hidden_size=5, batch_first=True, **torch_weights(l))
    l = nn.LSTM(2, 3, batch_first=True).eval()
    export_torch("torch_batch_first_opset17", l, torch.randn(1, 4, 2), 17)
    expect("torch_batch_first_opset17", input_size=2, hidden_size=3, batch_first=True, **torch_weights(l))
    l = nn.LSTM(3, 4).eval()
    export_torch("torch_unbatched_opset15", l, torch.randn(5, 3), 15)
    expect("torch_unbatched_opset15", input_size=3, hidden_size=4, batch_first=True, **torch_weights(l))
    l = nn.LSTM(4, 2, bias=False).eval()
    export_torch("torch_no_bias", l, torch.randn(3, 1, 4), 13)
    expect("torch_no_bias", input_size=4, hidden_size=2, batch_first=False, **torch_weights(l))


def refused_torch():
    torch.manual_seed(1)
    export_torch("torch_two_layers", nn.LSTM(3, 4, num_layers=2), torch.randn(5, 1, 3), 13)
    expect("torch_two_layers", input_size=3, program={'ops': 2, 'directions': 1, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': False, 'c_n': False, 'batch_first': False})
    export_torch("torch_bidirectional", nn.LSTM(3, 4, bidirectional=True), torch.randn(5, 1, 3), 13)
    expect("torch_bidirectional", input_size=3, program={'ops': 2, 'directions': 2, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': False, 'c_n': False, 'batch_first': False})
    export_torch("torch_linear_head", nn.LSTM(3, 4), torch.randn(5, 1, 3), 13, mode="head")
    expect("torch_linear_head", input_size=3, head=["Linear"],
           program={'ops': 1, 'directions': 1, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': False, 'c_n': False,
                    'batch_first': False})
    export_torch("torch_h_n_output", nn.LSTM(3, 4), torch.randn(5, 1, 3), 13, mode="h_n")
    expect("torch_h_n_output", input_size=3, program={'ops': 1, 'directions': 1, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': True, 'c_n': False, 'batch_first': False})
    export_torch("torch_initial_state_input", nn.LSTM(3, 4), torch.randn(5, 1, 3), 13, mode="state",
                 extra_inputs=(torch.zeros(1, 1, 4), torch.zeros(1, 1, 4)))
    expect("torch_initial_state_input", input_size=3, program={'ops': 1, 'directions': 1, 'initial_h': 'input', 'initial_c': 'input', 'h_n': False, 'c_n': False, 'batch_first': False})


# ----------------------------------------------------------------------------- plain ONNX graphs
def onnx_weights(I, H, rng, bias=True):
    """Random ONNX-order (i, o, f, c) weights and the PyTorch-order (i, f, g, o) expectation."""
    W = rng.standard_normal((1, 4 * H, I)).astype(np.float32)
    R = rng.standard_normal((1, 4 * H, H)).astype(np.float32)
    B = rng.standard_normal((1, 8 * H)).astype(np.float32) if bias else None
    onnx_to_torch = [0, 2, 3, 1]  # torch block k comes from ONNX block onnx_to_torch[k]
    def torch_order(a, rows):
        blocks = [a[b * rows:(b + 1) * rows] for b in range(4)]
        return np.concatenate([blocks[onnx_to_torch[k]] for k in range(4)])
    exp = {"weight_ih": torch_order(W[0], H).reshape(-1).tolist(),
           "weight_hh": torch_order(R[0], H).reshape(-1).tolist(),
           "bias_ih": torch_order(B[0, :4 * H], H).tolist() if bias else [],
           "bias_hh": torch_order(B[0, 4 * H:], H).tolist() if bias else []}
    return W, R, B, exp


def plain(name, I=3, H=4, T=5, N=2, layout=0, bias=True, attrs=None, extra_inits=(), inputs=None,
          outputs=("Y", "", ""), graph_outputs=None, pre_nodes=(), seed=0, x_is_input=True):
    rng = np.random.default_rng(seed)
    W, R, B, exp = onnx_weights(I, H, rng, bias)
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    if bias:
        inits.append(numpy_helper.from_array(B, "B"))
    inits += list(extra_inits)
    lstm_inputs = inputs if inputs is not None else ["X", "W", "R", "B" if bias else ""]
    node_attrs = {"hidden_size": H}
    if layout:
        node_attrs["layout"] = layout
    node_attrs.update(attrs or {})
    nodes = list(pre_nodes) + [helper.make_node("LSTM", lstm_inputs, list(outputs), name="lstm0", **node_attrs)]
    x_shape = [T, N, I] if layout == 0 else [N, T, I]
    y_shape = [T, 1, N, H] if layout == 0 else [N, T, 1, H]
    gin = [helper.make_tensor_value_info("X" if x_is_input else "X_src", TensorProto.FLOAT, x_shape)]
    gout = graph_outputs or [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)]
    graph = helper.make_graph(nodes, name, gin, gout, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    return exp


def accepted_plain():
    exp = plain("plain_layout0")
    expect("plain_layout0", input_size=3, hidden_size=4, batch_first=False, **exp)
    exp = plain("plain_reverse", attrs={"direction": "reverse"})
    expect("plain_reverse", input_size=3, hidden_size=4, batch_first=False, reverse=True, **exp)
    exp = plain("plain_layout1_no_bias", layout=1, bias=False, seed=1)
    expect("plain_layout1_no_bias", input_size=3, hidden_size=4, batch_first=True, **exp)
    zeros = numpy_helper.from_array(np.zeros((1, 2, 4), np.float32), "h0")
    exp = plain("plain_zero_initializer_state", extra_inits=[zeros],
                inputs=["X", "W", "R", "B", "", "h0", "h0"], seed=2)
    expect("plain_zero_initializer_state", input_size=3, hidden_size=4, batch_first=False, **exp)
    shape = numpy_helper.from_array(np.array([1, 2, 4], np.int64), "state_shape")
    cos = helper.make_node("ConstantOfShape", ["state_shape"], ["zero_state"],
                           value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]))
    exp = plain("plain_constant_of_shape_state", extra_inits=[shape], pre_nodes=[cos],
                inputs=["X", "W", "R", "B", "", "zero_state", "zero_state"], seed=3)
    expect("plain_constant_of_shape_state", input_size=3, hidden_size=4, batch_first=False, **exp)


def refused_plain():
    plain("plain_clip", attrs={"clip": 3.0})
    expect("plain_clip", error="attribute 'clip' is not supported")
    plain("plain_input_forget", attrs={"input_forget": 1})
    expect("plain_input_forget", error="attribute 'input_forget' = 1 is not supported")
    plain("plain_activations", attrs={"activations": ["Sigmoid", "Relu", "Tanh"]})
    expect("plain_activations", error="activations Sigmoid, Relu, Tanh are not supported")
    peep = numpy_helper.from_array(np.ones((1, 12), np.float32), "P")
    plain("plain_peephole", extra_inits=[peep], inputs=["X", "W", "R", "B", "", "", "", "P"])
    expect("plain_peephole", error="peephole weights (input P) are not supported")
    lens = numpy_helper.from_array(np.array([5, 5], np.int32), "lens")
    plain("plain_sequence_lens", extra_inits=[lens], inputs=["X", "W", "R", "B", "lens"])
    expect("plain_sequence_lens", error="sequence_lens is not supported")
    ones = numpy_helper.from_array(np.full((1, 2, 4), 0.5, np.float32), "h0")
    plain("plain_nonzero_initial_state", extra_inits=[ones], inputs=["X", "W", "R", "B", "", "h0", ""])
    expect("plain_nonzero_initial_state", program={'ops': 1, 'directions': 1, 'initial_h': 'constant', 'initial_c': 'zero', 'h_n': False, 'c_n': False, 'batch_first': False})
    plain("plain_y_c_output", outputs=("Y", "", "Y_c"),
          graph_outputs=[helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 1, 2, 4]),
                         helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [1, 2, 4])])
    expect("plain_y_c_output", program={'ops': 1, 'directions': 1, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': False, 'c_n': True, 'batch_first': False})
    plain("plain_missing_initializer", inputs=["X", "W", "R_missing", "B"])
    expect("plain_missing_initializer", error="input R ('R_missing') is neither an initializer nor a constant")
    bad = numpy_helper.from_array(np.ones((1, 12, 3), np.float32), "R2")
    plain("plain_wrong_initializer_shape", extra_inits=[bad], inputs=["X", "W", "R2", "B"])
    expect("plain_wrong_initializer_shape", error="R has shape [1, 12, 3], expected [1, 16, 4]")
    # A damaged size must be refused before the shape arithmetic 4H x I can overflow int64.
    plain("plain_huge_hidden_size", attrs={"hidden_size": 2**62})
    expect("plain_huge_hidden_size", error="attribute hidden_size 4611686018427387904 is above 1048576")
    relu = helper.make_node("Relu", ["X_src"], ["X"], name="relu0")
    plain("plain_lstm_input_not_graph_input", pre_nodes=[relu], x_is_input=False)
    expect("plain_lstm_input_not_graph_input", input_size=3, front=["Relu"],
           program={'ops': 1, 'directions': 1, 'initial_h': 'zero', 'initial_c': 'zero', 'h_n': False, 'c_n': False,
                    'batch_first': False})


def programs_torch():
    """Stacked and bidirectional models with a given state and the final state as outputs."""
    export_torch("torch_stack3_state", nn.LSTM(3, 6, num_layers=3, batch_first=True), torch.randn(1, 5, 3), 14,
                 mode="full", extra_inputs=(torch.zeros(3, 1, 6), torch.zeros(3, 1, 6)))
    expect("torch_stack3_state", input_size=3, program=dict(ops=3, directions=1, initial_h="input", initial_c="input",
                                                            h_n=True, c_n=True, batch_first=True))
    export_torch("torch_bi2_state", nn.LSTM(3, 5, num_layers=2, bidirectional=True), torch.randn(5, 1, 3), 14,
                 mode="full", extra_inputs=(torch.zeros(4, 1, 5), torch.zeros(4, 1, 5)))
    expect("torch_bi2_state", input_size=3, program=dict(ops=4, directions=2, initial_h="input", initial_c="input",
                                                         h_n=True, c_n=True, batch_first=False))


# ----------------------------------------------------------------------------- whole models
def rounded(t):
    """Float values as JSON numbers that read back to the same float32."""
    return [float(v) for v in t.detach().numpy().astype(np.float32).reshape(-1)]


def whole(name, model, opset, batch=2, steps=5, **expected):
    """Exports `model`, writes torch's output on a fixed input and the program's expected structure."""
    x = models.example_input(model, batch=batch, steps=steps)
    y = models.export(model, x, os.path.join(OUT, name + ".onnx"), opset)
    expect(name, input=rounded(x), input_shape=list(x.shape), output=rounded(y), output_shape=list(y.shape),
           batch_first=bool(model.batch_first or model.unbatched), unbatched=bool(model.unbatched), opset=opset,
           **expected)


def whole_models():
    torch.manual_seed(14)
    seq = dict(lstm_output="sequence")
    for opset in (13, 14, 15, 16, 17):
        whole("whole_classifier_opset%d" % opset, models.classifier(), opset, lstm_output="sequence",
              front=[], head=["select", "Linear", "Softmax"])
        whole("whole_step_head_opset%d" % opset, models.forecaster(), opset, front=[], head=["Linear"], **seq)
    whole("whole_classifier_seq_first", models.classifier(batch_first=False), 15, front=[],
          head=["select", "Linear", "Softmax"], **seq)
    whole("whole_classifier_unbatched", models.classifier(unbatched=True), 16, front=[],
          head=["select", "Linear", "Softmax"], **seq)
    whole("whole_step_head_seq_first", models.forecaster(batch_first=False), 14, front=[], head=["Linear"], **seq)
    whole("whole_step_head_unbatched", models.forecaster(unbatched=True), 17, front=[], head=["Linear"], **seq)
    fs = dict(lstm_output="final_state", front=[], head=["Linear", "Relu", "Linear"])
    whole("whole_h_n_mlp", models.h_n_mlp(), 14, **fs)
    whole("whole_h_n_mlp_stacked", models.h_n_mlp(num_layers=2), 17, **fs)
    whole("whole_h_n_mlp_bidirectional", models.h_n_mlp(bidirectional=True, batch_first=False), 13, **fs)
    whole("whole_front_end", models.front_end(), 13, front=["Linear", "Relu"], head=[], **seq)
    whole("whole_front_end_seq_first", models.front_end(batch_first=False), 16, front=["Linear", "Relu"], head=[],
          **seq)
    acts = [("relu6", nn.ReLU6(), "Clip"), ("hardtanh", nn.Hardtanh(-0.5, 0.75), "Clip"),
            ("leaky_relu", nn.LeakyReLU(0.1), "LeakyRelu"), ("sigmoid", nn.Sigmoid(), "Sigmoid"),
            ("tanh", nn.Tanh(), "Tanh"), ("hardsigmoid", nn.Hardsigmoid(), "HardSigmoid"),
            ("gelu", nn.GELU(), "Gelu"), ("gelu_tanh", nn.GELU(approximate="tanh"), "Gelu"),
            ("silu", nn.SiLU(), "SiLU"), ("hardswish", nn.Hardswish(), "HardSwish")]
    for k, (tag, act, fn) in enumerate(acts):
        whole("whole_mlp_%s" % tag, models.mlp_head(act), 13 + k % 5, front=[],
              head=["select", "Linear", fn, "Linear"], **seq)
    whole("whole_mlp_hardswish_opset13", models.mlp_head(nn.Hardswish()), 13, front=[],
          head=["select", "Linear", "HardSwish", "Linear"], **seq)
    whole("whole_step_k", models.mlp_head(nn.Tanh(), pick=1), 15, front=[],
          head=["select", "Linear", "Tanh", "Linear"], **seq)
    whole("whole_step_k_seq_first", models.mlp_head(nn.Sigmoid(), pick=-2, batch_first=False), 16, front=[],
          head=["select", "Linear", "Sigmoid", "Linear"], **seq)
    whole("whole_last_slice", models.mlp_head(nn.ReLU(), pick="last_slice"), 17, front=[],
          head=["select", "Linear", "Relu", "Linear"], **seq)
    whole("whole_classifier_bidirectional_stacked", models.classifier(bidirectional=True, num_layers=2), 14,
          front=[], head=["select", "Linear", "Softmax"], **seq)
    whole("whole_step_head_bidirectional", models.forecaster(bidirectional=True, batch_first=False), 15, front=[],
          head=["Linear"], **seq)
    drop = models.LstmModel(3, 4, head=[nn.Dropout(0.3), nn.Flatten(), nn.Linear(4, 2)], pick="last")
    whole("whole_dropout_flatten", drop, 13, front=[], head=["select", "Linear"], **seq)
    rewrite_head_gemm("whole_gemm_transposed_alpha_beta", "whole_classifier_opset13", 2.0, 0.5, split_bias=False)
    rewrite_head_gemm("whole_gemm_bias_as_add", "whole_classifier_opset14", 1.0, 1.0, split_bias=True)
    downgrade_to_opset10("whole_mlp_relu6_opset10", "whole_mlp_relu6")
    unroll_step_head("whole_step_head_unrolled", "whole_step_head_opset13")
    unroll_step_head("whole_step_head_unrolled_keepdims", "whole_step_head_opset14", squeeze=False)
    unroll_step_head("refused_step_head_unrolled_own_weights", "whole_step_head_opset15", own_weights=True)
    whole("whole_h_n_mlp_unbatched", models.h_n_mlp(unbatched=True), 15, **fs)
    whole("whole_learned_state", models.forecaster(learned_state_batch=2), 14, front=[], head=["Linear"],
          state_batch=2, **seq)


def rewrite_head_gemm(name, source, alpha, beta, split_bias):
    """The exported classifier `source` with its head Gemm rewritten as other exporters write it:
    transB = 0 (the weight transposed) held by a Constant node, alpha and beta (the weight / alpha,
    the bias / beta: the same function), or the bias as a separate Add. torch's output is unchanged."""
    m = onnx.load(os.path.join(OUT, source + ".onnx"))
    g = m.graph
    gemm = next(n for n in g.node if n.op_type == "Gemm")
    inits = {t.name: t for t in g.initializer}
    w = numpy_helper.to_array(inits[gemm.input[1]]).T / np.float32(alpha)
    b = numpy_helper.to_array(inits[gemm.input[2]])
    for t in (inits[gemm.input[1]], inits[gemm.input[2]]):
        g.initializer.remove(t)
    weight = helper.make_node("Constant", [], ["w_t"], name="head_weight", value=numpy_helper.from_array(w.astype(np.float32)))
    del gemm.attribute[:]
    gemm.attribute.extend([helper.make_attribute("transB", 0), helper.make_attribute("alpha", float(alpha))])
    gemm.input[1] = "w_t"
    nodes = [weight]
    if split_bias:
        out = gemm.output[0]
        del gemm.input[2]
        gemm.output[0] = out + "_no_bias"
        g.initializer.append(numpy_helper.from_array(b, "bias_only"))
        nodes.append(helper.make_node("Add", [gemm.output[0], "bias_only"], [out], name="head_bias"))
    else:
        gemm.attribute.append(helper.make_attribute("beta", float(beta)))
        g.initializer.append(numpy_helper.from_array((b / np.float32(beta)).astype(np.float32), gemm.input[2]))
    at = list(g.node).index(gemm)
    for k, n in enumerate(nodes):
        g.node.insert(at + k if n.op_type == "Constant" else at + k + 1, n)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    e = json.load(open(os.path.join(OUT, source + ".expect.json")))
    e.pop("generator")
    expect(name, **e)


def slice_every_axis(name, source):
    """The exported model `source` with its one Slice of the time axis rewritten as tf2onnx writes a
    strided slice: one Slice over every axis (the others whole, ends INT32_MAX, axes in another
    order). torch's output is unchanged."""
    m = onnx.load(os.path.join(OUT, source + ".onnx"))
    g = m.graph
    sl = next(n for n in g.node if n.op_type == "Slice")
    values = {}
    for n in g.node:
        if n.op_type == "Constant" and n.output[0] in sl.input[1:4]:
            values[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    for t in g.initializer:
        if t.name in sl.input[1:4]:
            values[t.name] = numpy_helper.to_array(t)
    start, axis = int(values[sl.input[1]][0]), int(values[sl.input[3]][0])
    others = [a for a in range(3) if a != axis]
    axes = [others[0], axis, others[1]]
    starts = [0, start, 0]
    ends = [2 ** 31 - 1] * 3
    for k, (tag, v) in enumerate((("starts", starts), ("ends", ends), ("axes", axes))):
        g.initializer.append(numpy_helper.from_array(np.array(v, np.int64), "every_axis_" + tag))
        sl.input[k + 1] = "every_axis_" + tag
    del sl.input[4:]
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    e = json.load(open(os.path.join(OUT, source + ".expect.json")))
    e.pop("generator")
    expect(name, **e)


def unroll_step_head(name, source, squeeze=True, own_weights=False):
    """The exported per-step head of `source` (y = Linear(lstm(x)[0]), batch-first, a fixed T) as
    Keras' TimeDistributed(Dense) exports through tf2onnx and a Python loop over the steps does:
    the sequence sliced into its T steps, the same MatMul and Add on each (the step axis squeezed
    away and put back, or kept), the T results concatenated along the time axis. torch's output
    is unchanged."""
    m = onnx.load(os.path.join(OUT, source + ".onnx"))
    g = m.graph
    matmul = next(n for n in g.node if n.op_type == "MatMul")
    add = next(n for n in g.node if n.op_type == "Add" and matmul.output[0] in n.input)
    seq, weight = matmul.input[0], matmul.input[1]
    bias = next(i for i in add.input if i != matmul.output[0])
    steps = g.input[0].type.tensor_type.shape.dim[1].dim_value
    const = lambda n, v: g.initializer.append(numpy_helper.from_array(np.array(v, np.int64), n))
    const("unroll_axis", [1])
    nodes, parts = [], []
    for t in range(steps):
        const("unroll_start_%d" % t, [t])
        const("unroll_end_%d" % t, [t + 1])
        sl, out = "step_%d" % t, "step_%d_out" % t
        nodes.append(helper.make_node("Slice", [seq, "unroll_start_%d" % t, "unroll_end_%d" % t, "unroll_axis"], [sl],
                                      name="slice_%d" % t))
        if squeeze:
            nodes.append(helper.make_node("Squeeze", [sl, "unroll_axis"], [sl + "_2d"], name="squeeze_%d" % t))
            sl += "_2d"
        w_t = weight
        if own_weights and t > 0:  # a layer per step: refused
            w_t = "own_weight_%d" % t
            w0 = numpy_helper.to_array(next(i for i in g.initializer if i.name == weight))
            g.initializer.append(numpy_helper.from_array((w0 * np.float32(1 + t)).astype(np.float32), w_t))
        nodes.append(helper.make_node("MatMul", [sl, w_t], [sl + "_mm"], name="dense_%d/MatMul" % t))
        last = sl + "_mm"
        nodes.append(helper.make_node("Add", [last, bias], [out if not squeeze else out + "_2d"], name="dense_%d/Add" % t))
        if squeeze:
            nodes.append(helper.make_node("Unsqueeze", [out + "_2d", "unroll_axis"], [out], name="unsqueeze_%d" % t))
        parts.append(out)
    nodes.append(helper.make_node("Concat", parts, [add.output[0]], name="concat_steps", axis=1))
    at = list(g.node).index(matmul)
    g.node.remove(matmul)
    g.node.remove(add)
    for k, n in enumerate(nodes):
        g.node.insert(at + k, n)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    if own_weights:
        expect(name, errors=["node 'concat_steps' (Concat): joins the %d steps of '%s' each through its own layers "
                             "(step 1's differ from step 0's): one layer per step is not supported" % (steps, seq)])
        return
    e = json.load(open(os.path.join(OUT, source + ".expect.json")))
    e.pop("generator")
    expect(name, **e)


def downgrade_to_opset10(name, source):
    """The exported opset-13 model `source` as opset 10 writes it: Squeeze/Unsqueeze axes and Clip
    bounds as attributes rather than inputs. The function, and torch's output, are unchanged."""
    m = onnx.load(os.path.join(OUT, source + ".onnx"))
    g = m.graph
    def const(value):
        node = next((n for n in g.node if value in n.output and n.op_type == "Constant"), None)
        if node is not None:
            return numpy_helper.to_array(node.attribute[0].t)
        return numpy_helper.to_array(next(t for t in g.initializer if t.name == value))
    for n in g.node:
        if n.op_type in ("Squeeze", "Unsqueeze") and len(n.input) == 2:
            n.attribute.append(helper.make_attribute("axes", [int(a) for a in const(n.input[1]).reshape(-1)]))
            del n.input[1]
        if n.op_type == "Clip":
            for k, bound in ((2, "max"), (1, "min")):
                if len(n.input) > k and n.input[k]:
                    n.attribute.append(helper.make_attribute(bound, float(const(n.input[k]))))
            del n.input[1:]
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", 10))
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    e = json.load(open(os.path.join(OUT, source + ".expect.json")))
    e.pop("generator")
    e["opset"] = 10
    expect(name, **e)


class Embedded(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lstm, self.fc = nn.Embedding(10, 3), nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

    def forward(self, tokens):
        return self.fc(self.lstm(self.emb(tokens))[0][:, -1])


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

    def forward(self, x):
        y = self.lstm(x)[0]
        a = torch.softmax(y @ y.transpose(1, 2), dim=-1) @ y
        return self.fc(a[:, -1])


class ConvFront(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.lstm = nn.Conv1d(3, 3, 3, padding=1), nn.LSTM(3, 4, batch_first=True)

    def forward(self, x):  # x [B, T, F]
        return self.lstm(self.conv(x.transpose(1, 2)).transpose(1, 2))[0]


class OverTime(nn.Module):
    """A Linear over the time axis after a Transpose (it mixes steps)."""
    def __init__(self, steps=5):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(steps, 2)

    def forward(self, x):
        return self.fc(self.lstm(x)[0].transpose(1, 2))


class Custom(nn.Module):
    def __init__(self, pick, front=None, head=None, bidirectional=False, layers=1, quantizable=False, cell=nn.LSTM):
        super().__init__()
        lstm_class = cell
        if quantizable:
            import torch.ao.nn.quantizable as q
            lstm_class = q.LSTM
        self.front, self.pick = front or nn.Identity(), pick
        self.lstm = lstm_class(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        self.head = head or nn.Identity()

    def forward(self, x):
        y, state = self.lstm(self.front(x))
        return self.head(self.pick(y, state[0] if isinstance(state, tuple) else state))


def trained_layer_norm(F, seed, affine=True):
    """nn.LayerNorm(F) with gamma and beta as training leaves them (not 1 and 0), drawn from a
    generator of their own so that the global draws stay those of an untrained LayerNorm."""
    ln = nn.LayerNorm(F, elementwise_affine=affine)
    if affine:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            ln.weight.copy_(0.5 + torch.rand(F, generator=g))
            ln.bias.copy_(0.4 * torch.randn(F, generator=g))
    return ln


def refused(name, model, opset, errors, x=None, dynamic=False):
    x = torch.randn(2, 5, 3) if x is None else x
    with torch.no_grad():
        torch.onnx.export(model.eval(), (x,), os.path.join(OUT, name + ".onnx"), opset_version=opset,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"}} if dynamic else None)
    expect(name, errors=errors)


def refused_whole():
    torch.manual_seed(15)
    advice_head = "what to do: the model up to '"
    advice_front = "what to do: from node '/lstm/LSTM' (LSTM)'s input"
    # Refused until the layer normalization op; made where their refusals were (the same draws), the
    # later fixtures unchanged. gamma and beta from a generator of their own.
    import_torch("whole_layer_norm_opset17", Custom(lambda y, h: y, head=trained_layer_norm(4, 51)), 17,
                 torch.randn(2, 5, 3), ["LayerNorm"])
    import_torch("whole_layer_norm_opset13", Custom(lambda y, h: y, head=trained_layer_norm(4, 52)), 13,
                 torch.randn(2, 5, 3), ["LayerNorm"])
    refused("refused_attention", Attention(), 14,
            ["a branch of the data path", "(MatMul): a product of two activations (as in attention)", advice_head])
    refused("refused_conv_front", ConvFront(), 13, ["(Conv): a convolution", advice_front])
    # Refused until the embedding op; made where its refusal was, the later fixtures unchanged.
    import_torch("whole_embedding_opset13", Embedded(), 13, torch.randint(0, 10, (2, 5)), ["select", "Linear"],
                 front=["embedding"])
    refused("refused_softmax_over_time", Custom(lambda y, h: y, head=nn.Softmax(dim=1)), 13,
            ["(Softmax): a Softmax over axis 1 (the time axis), not the last (feature) axis", advice_head])
    refused("refused_transpose_mixes", OverTime(), 13,
            ["(MatMul): a MatMul on a tensor whose last axis is the time axis, not the features", advice_head])
    refused("refused_batch_row", Custom(lambda y, h: y[0], head=nn.Linear(4, 2)), 13,
            ["(Gather): a Gather of one batch row", advice_head])
    # Several consecutive steps compile (import_last_steps_*); every other step does not.
    refused("refused_every_other_step", Custom(lambda y, h: y[:, ::2], head=nn.Linear(4, 2)), 13,
            ["(Slice): a Slice that is not one constant range of one axis with step 1", advice_head])
    # The LogSoftmax head compiles since the log-softmax kind, the LayerNorm in front since the layer
    # normalization op.
    import_torch("whole_layer_norm_front_log_softmax",
                 Custom(lambda y, h: y[:, -1], front=trained_layer_norm(3, 53), head=nn.LogSoftmax(dim=-1)), 17,
                 torch.randn(2, 5, 3), ["select", "LogSoftmax"], front=["LayerNorm"])
    refused("refused_quantizable_lstm", Custom(lambda y, h: y, quantizable=True), 13,
            ["the graph has no LSTM node: it is a torch.ao.nn.quantizable.LSTM", "export torch.nn.LSTM instead"])


# ----------------------------------------------------------------------------- GRU models
class GruModel(nn.Module):
    """An nn.GRU as users write it. pick: "seq" (y), "last" (y[:, -1] / y[-1]) or "h_n" (h_n[-1]);
    head: the width of a Linear after it (0: none); state: None, "input" (h0 a second model input)
    or "learned" (a [L x D, state_batch, H] parameter whose rows differ); with_h_n: h_n is a second
    output."""

    def __init__(self, input_size, hidden, num_layers=1, bidirectional=False, batch_first=True, bias=True,
                 unbatched=False, pick="seq", head=0, state=None, state_batch=2, with_h_n=False):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden, num_layers=num_layers, bidirectional=bidirectional,
                          batch_first=batch_first, bias=bias)
        width = hidden * (2 if bidirectional and pick != "h_n" else 1)
        self.head = nn.Linear(width, head) if head else nn.Identity()
        self.rows = num_layers * (2 if bidirectional else 1)
        self.input_size, self.hidden, self.pick, self.state = input_size, hidden, pick, state
        self.batch_first, self.unbatched, self.with_h_n = batch_first, unbatched, with_h_n
        self.state_batch = state_batch if state == "learned" else 0
        if state == "learned":
            self.h0 = nn.Parameter(0.5 * torch.randn(self.rows, state_batch, hidden))

    def forward(self, x, *h0):
        y, h = self.gru(x, h0[0] if h0 else (self.h0 if self.state == "learned" else None))
        seq_first = self.unbatched or not self.batch_first
        z = h[-1] if self.pick == "h_n" else (y[-1] if seq_first else y[:, -1]) if self.pick == "last" else y
        out = self.head(z)
        return (out, h) if self.with_h_n else out


def gru_torch(name, model, opset, batch=2, steps=5, cell="GRU"):
    """Exports `model` and writes torch's output (and h_n) on a fixed input (and h0)."""
    model.eval()
    g = torch.Generator().manual_seed(16)
    batch = model.state_batch or batch
    shape = (steps, model.input_size) if model.unbatched else \
        (batch, steps, model.input_size) if model.batch_first else (steps, batch, model.input_size)
    x = torch.randn(*shape, generator=g)
    args = (x,)
    if model.state == "input":
        args += (0.5 * torch.randn(model.rows, batch, model.hidden, generator=g),)
    with torch.no_grad():
        outs = model(*args)
        torch.onnx.export(model, args, os.path.join(OUT, name + ".onnx"), opset_version=opset,
                          input_names=["x", "h0"][:len(args)], output_names=["y", "h_n"][:1 + model.with_h_n])
    y, h = outs if model.with_h_n else (outs, None)
    head = ([] if model.pick != "last" else ["select"]) + (["Linear"] if isinstance(model.head, nn.Linear) else [])
    extra = {"h0": rounded(args[1])} if model.state == "input" else {}
    if h is not None:
        extra["h_n"] = rounded(h)
    if cell == "RNN":
        extra["relu"] = model.gru.nonlinearity == "relu"
    expect(name, cell=cell, input=rounded(x), input_shape=list(x.shape), output=rounded(y), output_shape=list(y.shape),
           batch_first=bool(model.batch_first or model.unbatched), unbatched=bool(model.unbatched), opset=opset,
           lstm_output="final_state" if model.pick == "h_n" else "sequence", front=[], head=head,
           state_batch=model.state_batch,
           program=dict(ops=model.rows, directions=2 if model.gru.bidirectional else 1,
                        initial_h={None: "zero", "input": "input", "learned": "constant"}[model.state],
                        initial_c="zero", h_n=h is not None, c_n=False), **extra)


class RnnModel(GruModel):
    """GruModel with an nn.RNN (tanh or relu) in the GRU's place."""

    def __init__(self, input_size, hidden, nonlinearity="tanh", num_layers=1, bidirectional=False, batch_first=True,
                 bias=True, **kw):
        super().__init__(input_size, hidden, num_layers=num_layers, bidirectional=bidirectional,
                         batch_first=batch_first, bias=bias, **kw)
        self.gru = nn.RNN(input_size, hidden, num_layers=num_layers, nonlinearity=nonlinearity,
                          bidirectional=bidirectional, batch_first=batch_first, bias=bias)


def rnn_models():
    """nn.RNN (tanh and relu) exported by torch as ONNX RNN nodes, and an activation the kernel lacks."""
    torch.manual_seed(23)
    gru_torch("rnn_torch_tanh", RnnModel(3, 6), 14, cell="RNN")
    gru_torch("rnn_torch_relu_last_linear", RnnModel(4, 6, "relu", pick="last", head=3), 17, cell="RNN")
    gru_torch("rnn_torch_no_bias_seq_first", RnnModel(3, 5, bias=False, batch_first=False), 13, cell="RNN")
    gru_torch("rnn_torch_relu_bi2_seq_first", RnnModel(3, 5, "relu", num_layers=2, bidirectional=True,
                                                       batch_first=False), 15, cell="RNN")
    gru_torch("rnn_torch_tanh_stack2_state", RnnModel(3, 4, num_layers=2, state="input", with_h_n=True), 14,
              cell="RNN")
    gru_torch("rnn_torch_h_n_linear_bidirectional", RnnModel(3, 5, bidirectional=True, pick="h_n", head=2), 16,
              cell="RNN")


def onnx_gru_weights(gru):
    """A one-layer nn.GRU's weights in ONNX's stacking (z, r, h; torch's is r, z, n), W, R and B."""
    def onnx_order(a):
        r, z, n = np.split(a.detach().numpy(), 3)
        return np.concatenate([z, r, n])[None]
    W, R = onnx_order(gru.weight_ih_l0), onnx_order(gru.weight_hh_l0)
    B = np.concatenate([onnx_order(gru.bias_ih_l0), onnx_order(gru.bias_hh_l0)], axis=1) if gru.bias else None
    return W.astype(np.float32), R.astype(np.float32), None if B is None else B.astype(np.float32)


def plain_gru(name, I=3, H=4, T=5, N=2, layout=0, reverse=False, attrs=None, inputs=None, W=None, extra_inits=(),
              expected=True):
    """A hand-made ONNX GRU graph from a torch nn.GRU's weights; for an accepted one (expected) its
    output is torch's on a fixed input (time reversed around torch for direction "reverse")."""
    torch.manual_seed(17)
    gru = nn.GRU(I, H, batch_first=layout == 1).eval()
    w, r, b = onnx_gru_weights(gru)
    inits = [numpy_helper.from_array(w if W is None else W, "W"), numpy_helper.from_array(r, "R"),
             numpy_helper.from_array(b, "B")] + list(extra_inits)
    node_attrs = {"hidden_size": H, "linear_before_reset": 1}
    if layout:
        node_attrs["layout"] = layout
    if reverse:
        node_attrs["direction"] = "reverse"
    node_attrs.update(attrs or {})
    node_attrs = {k: v for k, v in node_attrs.items() if v is not None}  # None: the attribute absent
    node = helper.make_node("GRU", inputs or ["X", "W", "R", "B"], ["Y"], name="gru0", **node_attrs)
    x_shape = [T, N, I] if layout == 0 else [N, T, I]
    y_shape = [T, 1, N, H] if layout == 0 else [N, T, 1, H]
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), os.path.join(OUT, name + ".onnx"))
    if not expected:
        return
    x = torch.randn(*x_shape, generator=torch.Generator().manual_seed(18))
    t = 1 if layout else 0
    with torch.no_grad():
        y = gru(x.flip(t) if reverse else x)[0]
    y = y.flip(t) if reverse else y
    expect(name, cell="GRU", input=rounded(x), input_shape=x_shape, output=rounded(y), output_shape=list(y.shape),
           batch_first=layout == 1, unbatched=False, opset=14, lstm_output="sequence", front=[], head=[], reverse=reverse,
           program=dict(ops=1, directions=1, initial_h="zero", initial_c="zero", h_n=False, c_n=False))


class LstmThenGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.gru = nn.LSTM(3, 4, batch_first=True), nn.GRU(4, 4, batch_first=True)

    def forward(self, x):
        return self.gru(self.lstm(x)[0])[0]


class GruCos(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 4, batch_first=True)

    def forward(self, x):
        return torch.cos(self.gru(x)[0])


def gru_models():
    """nn.GRU exported by torch (every pattern the LSTM has that a GRU can have: no cell state), hand-made
    GRU graphs (reverse, layout 1) and the refused forms."""
    torch.manual_seed(16)
    gru_torch("gru_torch_seq_first", GruModel(3, 4, batch_first=False), 13)
    gru_torch("gru_torch_no_bias", GruModel(4, 3, bias=False), 14)
    gru_torch("gru_torch_unbatched", GruModel(3, 4, unbatched=True), 15)
    gru_torch("gru_torch_last_linear", GruModel(4, 6, pick="last", head=3), 14)
    gru_torch("gru_torch_last_linear_seq_first", GruModel(4, 6, pick="last", head=3, batch_first=False), 17)
    gru_torch("gru_torch_h_n_linear_stack2", GruModel(3, 5, num_layers=2, pick="h_n", head=2), 17)
    gru_torch("gru_torch_bidirectional", GruModel(3, 4, bidirectional=True, batch_first=False), 15)
    gru_torch("gru_torch_bidirectional_last_linear", GruModel(3, 4, bidirectional=True, pick="last", head=2), 16)
    gru_torch("gru_torch_stack3_state", GruModel(3, 6, num_layers=3, state="input", with_h_n=True), 14)
    gru_torch("gru_torch_bi2_state", GruModel(3, 5, num_layers=2, bidirectional=True, batch_first=False,
                                              state="input", with_h_n=True), 14)
    gru_torch("gru_torch_learned_state", GruModel(3, 4, pick="last", head=2, state="learned"), 16)
    plain_gru("gru_plain_reverse", reverse=True)
    plain_gru("gru_plain_layout1", layout=1)
    for name, kw, error in [
            ("gru_plain_linear_before_reset0", dict(attrs={"linear_before_reset": 0}),
             "node 'gru0' (GRU): linear_before_reset = 0 is not supported (the kernel computes PyTorch's new gate"),
            ("gru_plain_linear_before_reset_absent", dict(attrs={"linear_before_reset": None}),
             "node 'gru0' (GRU): linear_before_reset = 0 (the default: attribute absent) is not supported"),
            ("gru_plain_clip", dict(attrs={"clip": 3.0}), "node 'gru0' (GRU): attribute 'clip' is not supported"),
            ("gru_plain_activations", dict(attrs={"activations": ["Sigmoid", "Relu"]}),
             "node 'gru0' (GRU): activations Sigmoid, Relu are not supported (only Sigmoid, Tanh"),
            ("gru_plain_activation_alpha", dict(attrs={"activation_alpha": [1.0, 1.0]}),
             "node 'gru0' (GRU): attribute 'activation_alpha' is not supported"),
            ("gru_plain_wrong_w_shape", dict(W=np.ones((1, 16, 3), np.float32)),
             "node 'gru0' (GRU): W has shape [1, 16, 3], expected [1, 12, 3]"),
            ("gru_plain_sequence_lens", dict(inputs=["X", "W", "R", "B", "lens"], extra_inits=[
                numpy_helper.from_array(np.array([5, 5], np.int32), "lens")]),
             "node 'gru0' (GRU): input sequence_lens is not supported"),
            ("gru_plain_initial_c", dict(inputs=["X", "W", "R", "B", "", "", "c0"], extra_inits=[
                numpy_helper.from_array(np.zeros((1, 2, 4), np.float32), "c0")]),
             "node 'gru0' (GRU): input 6 ('c0') is not one of the 6 inputs of GRU")]:
        plain_gru(name, expected=False, **kw)
        expect(name, error=error)
    refused("gru_refused_lstm_then_gru", LstmThenGru(), 14,
            ["node '/gru/GRU' (GRU): a GRU layer on node '/lstm/LSTM' (LSTM) is not supported"])
    refused("gru_refused_cos_head", GruCos(), 14,
            ["(Cos): op 'Cos' is not supported around the GRU", "what to do: the model up to '"])


# ----------------------------------------------------------------------------- import pre-pass (group "import")
class TwoModules(nn.Module):
    """Two separate recurrent modules, the second reading the first's output (not num_layers=2)."""
    def __init__(self, cell=nn.LSTM, between=lambda y: y):
        super().__init__()
        self.rnn1, self.rnn2 = cell(3, 4, batch_first=True), cell(4, 5, batch_first=True)
        self.between = between

    def forward(self, x):
        return self.rnn2(self.between(self.rnn1(x)[0]))[0]


class Lambda(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class OneValuePerStep(nn.Module):
    """A forecaster: a Linear head of one value per step, squeezed to [B, T]."""
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(self.lstm(x)[0]).squeeze(-1)


class MeanOverTime(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.lstm(x)[0].mean(dim=1))


class StateFromTimeAxis(nn.Module):
    """A zero state sized from the wrong axis of x (time, not batch): traced where the two are equal,
    it builds [1, time, H] with dynamic axes, which ONNX Runtime refuses once they differ."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)

    def forward(self, x):
        h0 = torch.zeros(1, x.shape[1], 4)
        return self.lstm(x, (h0, h0))[0]


class EncoderDecoder(nn.Module):
    """The decoder reads the encoder's h_n as its input sequence: two LSTMs that are not a chain."""
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.LSTM(3, 4, batch_first=True), nn.LSTM(4, 4, batch_first=True)

    def forward(self, x):
        _, (h, _) = self.enc(x)
        return self.dec(h.transpose(0, 1))[0]


def import_torch(name, model, opset, x, head, cell=None, dynamic=False, fold=True, traced=None, **expected):
    """torch.onnx.export with the options users pass (dynamic batch and time axes, no constant
    folding), and torch's output on `x` for the float program to be checked against (exported on
    `traced` when given: a Python loop unrolled over fewer steps than x has)."""
    model.eval()
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, (x if traced is None else traced,), os.path.join(OUT, name + ".onnx"),
                          opset_version=opset, input_names=["x"],
                          output_names=["y"], do_constant_folding=fold,
                          dynamic_axes={"x": {0: "batch", 1: "time"}} if dynamic else None)
    extra = {}
    if cell is not None:
        extra = dict(cell=cell, program=dict(ops=2, directions=1, initial_h="zero", initial_c="zero", h_n=False,
                                             c_n=False))
    fields = dict(input=rounded(x), input_shape=list(x.shape), output=rounded(y), output_shape=list(y.shape),
                  batch_first=True, unbatched=False, opset=opset, lstm_output="sequence", front=[], head=head, **extra)
    fields.update(expected)
    expect(name, **fields)


def onnx_lstm_weights(lstm, suffix):
    """One layer of a bidirectional nn.LSTM as ONNX's W, R, B ([2, 4H, .]: gates i, o, f, c)."""
    blocks = lambda a: np.concatenate([np.split(a, 4)[k] for k in (0, 3, 1, 2)])
    get = lambda n: getattr(lstm, n).detach().numpy()
    W = np.stack([blocks(get("weight_ih" + suffix + d)) for d in ("", "_reverse")])
    R = np.stack([blocks(get("weight_hh" + suffix + d)) for d in ("", "_reverse")])
    B = np.stack([np.concatenate([blocks(get("bias_ih" + suffix + d)), blocks(get("bias_hh" + suffix + d))])
                  for d in ("", "_reverse")])
    return W.astype(np.float32), R.astype(np.float32), B.astype(np.float32)


def tf2onnx_bidirectional(name, pick="slice", tensordot=False, H=8, I=3, T=5, N=2):
    """A Keras Bidirectional(LSTM(H, return_sequences=True)) x 2 as tf2onnx writes it: the input
    transposed to time-major, a zero state built from Shape (Expand of 0 to [B, H], Unsqueeze, and
    a Concat of the two directions'), each layer's Y [T, 2, B, H] cut into its directions (pick:
    "slice", Slice along axis 1 and Squeeze; "gather", Gather at axis 1) and concatenated along the
    features, and back to batch-major; or (tensordot) a Dense on every step as tf2onnx's Tensordot: Reshape to [-1, 2H]
    with a target computed by Shape, Gather and ReduceProd, MatMul, Reshape back to [B, T, C]
    computed likewise, Add of the bias. The batch axis is dynamic."""
    torch.manual_seed(24)
    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True).eval()
    dense = nn.Linear(2 * H, 2).eval()
    const = lambda n, v, dt=np.int64: numpy_helper.from_array(np.array(v, dt), n)
    inits = [const("zero", 0.0, np.float32), const("at0", [0]), const("at1", [1]), const("at2", [2]),
             const("hidden", [H]), const("unsq0", [0]), const("gather0", 0), const("gather1", 1)]
    nodes = [helper.make_node("Transpose", ["x"], ["x_t"], name="input_transpose", perm=[1, 0, 2]),
             helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
             helper.make_node("Slice", ["x_shape", "at0", "at1", "at0"], ["batch"], name="batch"),
             helper.make_node("Concat", ["batch", "hidden"], ["state_shape"], name="state_shape", axis=0),
             helper.make_node("Expand", ["zero", "state_shape"], ["zeros"], name="zeros"),
             helper.make_node("Unsqueeze", ["zeros", "unsq0"], ["zeros_1"], name="zeros_unsqueeze"),
             helper.make_node("Concat", ["zeros_1", "zeros_1"], ["state"], name="state_both", axis=0)]
    x = "x_t"
    for layer in range(2):
        W, R, B = onnx_lstm_weights(lstm, "_l%d" % layer)
        names = ["W%d" % layer, "R%d" % layer, "B%d" % layer]
        inits += [numpy_helper.from_array(a, n) for a, n in zip((W, R, B), names)]
        y, p = "Y%d" % layer, "l%d_" % layer
        nodes.append(helper.make_node("LSTM", [x] + names + ["", "state", "state"], [y], name="lstm%d" % layer,
                                      hidden_size=H, direction="bidirectional"))
        for d in range(2):
            if pick == "gather":
                nodes.append(helper.make_node("Gather", [y, "gather%d" % d], [p + "dir%d" % d], name=p + "gather%d" % d,
                                              axis=1))
            else:
                nodes += [helper.make_node("Slice", [y, "at%d" % d, "at%d" % (d + 1), "at1"], [p + "slice%d" % d],
                                           name=p + "slice%d" % d),
                          helper.make_node("Squeeze", [p + "slice%d" % d, "at1"], [p + "dir%d" % d],
                                           name=p + "squeeze%d" % d)]
        x = p + "concat"
        nodes.append(helper.make_node("Concat", [p + "dir0", p + "dir1"], [x], name=p + "concat", axis=2))
    out_dims = ["batch", T, 2 * H]
    if not tensordot:
        nodes.append(helper.make_node("Transpose", [x], ["seq"], name="to_batch_major", perm=[1, 0, 2]))
    else:
        inits += [const("dense_w", dense.weight.detach().numpy().T, np.float32),
                  const("dense_b", dense.bias.detach().numpy(), np.float32), const("free", [0, 1]),
                  const("contracted", [2]), const("units", [2])]
        nodes += [helper.make_node("Transpose", [x], ["bt"], name="to_batch_major", perm=[1, 0, 2]),
                  helper.make_node("Shape", ["bt"], ["bt_shape"], name="bt_shape"),
                  helper.make_node("Gather", ["bt_shape", "free"], ["free_sizes"], name="free_sizes", axis=0),
                  helper.make_node("Gather", ["bt_shape", "contracted"], ["contracted_sizes"], name="contracted_sizes",
                                   axis=0),
                  helper.make_node("ReduceProd", ["free_sizes"], ["rows"], name="rows", axes=[0], keepdims=0),
                  helper.make_node("ReduceProd", ["contracted_sizes"], ["cols"], name="cols", axes=[0], keepdims=0),
                  helper.make_node("Unsqueeze", ["rows", "unsq0"], ["rows_1"], name="rows_unsqueeze"),
                  helper.make_node("Unsqueeze", ["cols", "unsq0"], ["cols_1"], name="cols_unsqueeze"),
                  helper.make_node("Concat", ["rows_1", "cols_1"], ["merge_shape"], name="merge_shape", axis=0),
                  helper.make_node("Reshape", ["bt", "merge_shape"], ["merged"], name="tensordot_merge"),
                  helper.make_node("MatMul", ["merged", "dense_w"], ["product"], name="tensordot_matmul"),
                  helper.make_node("Concat", ["free_sizes", "units"], ["split_shape"], name="split_shape", axis=0),
                  helper.make_node("Reshape", ["product", "split_shape"], ["split"], name="tensordot_split"),
                  helper.make_node("Add", ["split", "dense_b"], ["seq"], name="bias")]
        out_dims = ["batch", T, 2]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", T, I])],
                              [helper.make_tensor_value_info("seq", TensorProto.FLOAT, out_dims)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    xs = torch.randn(N, T, I, generator=torch.Generator().manual_seed(25))
    with torch.no_grad():
        ys = lstm(xs)[0]
        ys = dense(ys) if tensordot else ys
    expect(name, input=rounded(xs), input_shape=[N, T, I], output=rounded(ys), output_shape=list(ys.shape),
           batch_first=True, unbatched=False, opset=13, lstm_output="sequence", front=[],
           head=["Linear"] if tensordot else [])


def reshape_0_0_2h(name, H=64, I=3, T=4, N=2, from_shape=False):
    """Two bidirectional LSTM layers joined as the dynamo exporter writes them: Y [T, 2, B, H] ->
    Transpose [T, B, 2, H] -> Reshape to the constant [0, 0, 2H] (2H = 128: a size, not an axis),
    or (from_shape, dynamic time and batch axes) to a target computed from Shape of the Transpose:
    Concat(Unsqueeze(Gather(shape, 0)), Unsqueeze(Gather(shape, 1)), [2H]); from_shape="product",
    as torch 2.x's dynamo exporter writes it: Concat(shape[0:1], shape[1:2], Reshape(shape[2:3] *
    shape[3:4], [-1]))."""
    torch.manual_seed(19)
    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True).eval()
    inits, nodes, x = [], [], "x"
    const = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
    if from_shape == "product":
        inits += [const("at%d" % k, [k]) for k in range(5)] + [const("flat", [-1])]
    elif from_shape:
        inits += [const("axis0", 0), const("axis1", 1), const("unsq_axes", [0]), const("width", [2 * H])]
    else:
        inits.append(const("merged_shape", [0, 0, 2 * H]))
    for layer in range(2):
        W, R, B = onnx_lstm_weights(lstm, "_l%d" % layer)
        names = ["W%d" % layer, "R%d" % layer, "B%d" % layer]
        inits += [numpy_helper.from_array(a, n) for a, n in zip((W, R, B), names)]
        y, out = "Y%d" % layer, ("y" if layer == 1 else "X%d" % (layer + 1))
        nodes += [helper.make_node("LSTM", [x] + names, [y], name="lstm%d" % layer, hidden_size=H,
                                   direction="bidirectional"),
                  helper.make_node("Transpose", [y], [y + "_t"], name="transpose%d" % layer, perm=[0, 2, 1, 3])]
        target = "merged_shape"
        if from_shape == "product":
            p = "l%d_" % layer
            target = p + "target"
            nodes.append(helper.make_node("Shape", [y + "_t"], [p + "shape"], name=p + "shape"))
            nodes += [helper.make_node("Slice", [p + "shape", "at%d" % k, "at%d" % (k + 1)], [p + "s%d" % k],
                                       name=p + "slice%d" % k) for k in range(4)]
            nodes += [helper.make_node("Mul", [p + "s2", p + "s3"], [p + "dh"], name=p + "mul"),
                      helper.make_node("Reshape", [p + "dh", "flat"], [p + "dh_flat"], name=p + "flat"),
                      helper.make_node("Concat", [p + "s0", p + "s1", p + "dh_flat"], [target], name=p + "concat",
                                       axis=0)]
        elif from_shape:
            p = "l%d_" % layer
            target = p + "target"
            nodes += [helper.make_node("Shape", [y + "_t"], [p + "shape"], name=p + "shape"),
                      helper.make_node("Gather", [p + "shape", "axis0"], [p + "t"], name=p + "gather_t", axis=0),
                      helper.make_node("Gather", [p + "shape", "axis1"], [p + "b"], name=p + "gather_b", axis=0),
                      helper.make_node("Unsqueeze", [p + "t", "unsq_axes"], [p + "t1"], name=p + "unsqueeze_t"),
                      helper.make_node("Unsqueeze", [p + "b", "unsq_axes"], [p + "b1"], name=p + "unsqueeze_b"),
                      helper.make_node("Concat", [p + "t1", p + "b1", "width"], [target], name=p + "concat", axis=0)]
        nodes.append(helper.make_node("Reshape", [y + "_t", target], [out], name="merge%d" % layer))
        x = out
    dims = ["time", "batch"] if from_shape else [T, N]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims + [I])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims + [2 * H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    xs = torch.randn(T, N, I, generator=torch.Generator().manual_seed(20))
    with torch.no_grad():
        ys = lstm(xs)[0]
    expect(name, input=rounded(xs), input_shape=[T, N, I], output=rounded(ys), output_shape=list(ys.shape),
           batch_first=False, unbatched=False, opset=14, lstm_output="sequence", front=[], head=[])


def onnx_lstm_numpy(x, W, R, B, f_activations):
    """ONNX's LSTM (gates i, o, f, c; no peepholes, zero state) in float64 for x [T, N, I] over
    W.shape[0] directions (the second reverse); f_activations[d]: direction d's f, a function on
    arrays (g and h are tanh). Returns Y [T, D, N, H]."""
    T, N, _ = x.shape
    D, H = W.shape[0], R.shape[2]
    y = np.zeros((T, D, N, H))
    for d in range(D):
        f = f_activations[d]
        h, c = np.zeros((N, H)), np.zeros((N, H))
        for t in (range(T) if d == 0 else reversed(range(T))):
            g = x[t].astype(np.float64) @ W[d].T.astype(np.float64) + h @ R[d].T.astype(np.float64) + B[d, :4 * H] + B[d, 4 * H:]
            i, o, fg, cc = f(g[:, :H]), f(g[:, H:2 * H]), f(g[:, 2 * H:3 * H]), np.tanh(g[:, 3 * H:])
            c = fg * c + i * cc
            h = o * np.tanh(c)
            y[t, d] = h
    return y


def hard_sigmoid_lstm(name, H=6, I=3, T=7, N=2):
    """A Keras Bidirectional(LSTM(H, return_sequences=True)) with HardSigmoid gates as keras2onnx
    writes it: activations [HardSigmoid, Tanh, Tanh] per direction, one activation_alpha and one
    activation_beta per direction's HardSigmoid, consumed in order (forward: Keras' 0.2, 0.5; reverse
    0.25, 0.45, so that a reader that takes the wrong pair is seen); Y [T, 2, B, H] to [B, T, 2H].
    The expected output is ONNX's LSTM in numpy, not torch (torch has no such gate)."""
    rng = np.random.default_rng(31)
    W = (rng.standard_normal((2, 4 * H, I)) * 0.8).astype(np.float32)
    R = (rng.standard_normal((2, 4 * H, H)) * 0.5).astype(np.float32)
    B = (rng.standard_normal((2, 8 * H)) * 0.3).astype(np.float32)
    alphas, betas = [0.2, 0.25], [0.5, 0.45]
    const = lambda n, v, dt=np.int64: numpy_helper.from_array(np.array(v, dt), n)
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"), numpy_helper.from_array(B, "B"),
             const("join", [0, 0, -1])]
    nodes = [helper.make_node("Transpose", ["x"], ["x_t"], name="input_transpose", perm=[1, 0, 2]),
             helper.make_node("LSTM", ["x_t", "W", "R", "B"], ["Y"], name="bidirectional_1", hidden_size=H,
                              direction="bidirectional", activations=["HardSigmoid", "Tanh", "Tanh"] * 2,
                              activation_alpha=alphas, activation_beta=betas),
             helper.make_node("Transpose", ["Y"], ["Y_t"], name="directions_last", perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Y_t", "join"], ["Y_j"], name="join_directions"),
             helper.make_node("Transpose", ["Y_j"], ["seq"], name="to_batch_major", perm=[1, 0, 2])]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", I])],
                              [helper.make_tensor_value_info("seq", TensorProto.FLOAT, ["batch", "time", 2 * H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    x = rng.standard_normal((N, T, I)).astype(np.float32)
    hard = [lambda v, a=a, b=b: np.clip(np.float32(a) * v + np.float32(b), 0.0, 1.0) for a, b in zip(alphas, betas)]
    y = onnx_lstm_numpy(np.transpose(x, (1, 0, 2)), W, R, B, hard)  # [T, 2, N, H]
    y = np.transpose(y, (2, 0, 1, 3)).reshape(N, T, 2 * H)
    expect(name, input=[float(v) for v in x.reshape(-1)], input_shape=[N, T, I],
           output=[float(v) for v in y.astype(np.float32).reshape(-1)], output_shape=[N, T, 2 * H],
           batch_first=True, unbatched=False, opset=13, lstm_output="sequence", front=[], head=[])


def refused_graph(name, nodes, inits=(), domains=(), errors=()):
    """A plain ONNX graph from x [5, 2, 3] to y that the importer must refuse with `errors`."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    opsets = [helper.make_opsetid("", 14)] + [helper.make_opsetid(d, 1) for d in domains]
    onnx.save(helper.make_model(graph, opset_imports=opsets), os.path.join(OUT, name + ".onnx"))
    expect(name, errors=list(errors))


def identity_loop():
    """A Loop body carrying its value unchanged, and its trip count (5)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["carried"], ["carried_out"]), helper.make_node("Identity", ["cond"], ["cond_out"])],
        "step", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("carried", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried_out", TensorProto.FLOAT, None)])
    return body, numpy_helper.from_array(np.array(5, np.int64), "trips")


def refused_recurrences():
    rng = np.random.default_rng(21)
    w = lambda n, *shape: numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n)
    refused_graph("import_refused_rnn", [helper.make_node("RNN", ["x", "W", "R"], ["y"], name="rnn0", hidden_size=4,
                                                          activations=["Sigmoid"])],
                  [w("W", 1, 4, 3), w("R", 1, 4, 4)],
                  errors=["node 'rnn0' (RNN): activations Sigmoid are not supported (only Tanh, or Relu"])
    body, trips = identity_loop()
    refused_graph("import_refused_loop", [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="steps", body=body)],
                  [trips], errors=["node 'steps' (Loop): a Loop: a recurrence written step by step (e.g. an LSTMCell "
                                   "or GRUCell stepped in Python, exported as a Loop) is not supported"])
    refused_graph("import_refused_custom_domain",
                  [helper.make_node("BlockLSTM", ["x"], ["y"], name="tf_lstm", domain="org.tensorflow")],
                  domains=["org.tensorflow"],
                  errors=["node 'tf_lstm' (BlockLSTM): an op of domain 'org.tensorflow' (a custom op, or one of "
                          "another framework"])


class SqueezeAll(nn.Module):
    def forward(self, x):
        return x.squeeze()


def batch_of_one():
    """Exports with a static batch of 1 whose head squeezes the batch axis away, as deployment
    code writes them: the compiled output keeps it (one row per batch row)."""
    x = torch.randn(1, 5, 3, generator=torch.Generator().manual_seed(24))
    import_torch("import_batch1_squeeze_sequence", Custom(lambda y, h: y.squeeze(0), head=nn.Linear(4, 2)), 14, x,
                 ["Linear"], output_squeezes_batch=True)
    import_torch("import_batch1_squeeze_without_axes",
                 Custom(lambda y, h: y, head=nn.Sequential(nn.Linear(4, 2), SqueezeAll())), 14, x, ["Linear"],
                 output_squeezes_batch=True)
    import_torch("import_batch1_squeeze_final_state", Custom(lambda y, h: h[-1].squeeze(0), head=nn.Linear(4, 2)),
                 14, x, ["Linear"], lstm_output="final_state", output_squeezes_batch=True)


def between_layers(x):
    """Layout ops between two recurrent modules, beyond torch's own: they follow the layout ops'
    one set of rules (recognize/layout_view.cc), as in front of and after the layers."""
    import_torch("import_between_layers_reshape_dynamic",
                 TwoModules(between=lambda y: y.reshape(y.shape[0], y.shape[1], -1)), 14, x, [], dynamic=True)
    import_torch("import_between_layers_unsqueeze_flatten",
                 TwoModules(between=lambda y: torch.flatten(y.unsqueeze(2), 2)), 14, x, [])
    refused("import_refused_front_squeezes_batch",
            Custom(lambda y, h: y, front=Lambda(lambda x: x.squeeze(0).unsqueeze(1).transpose(0, 1))), 14,
            ["(Squeeze): a Squeeze of the batch axis in front of the LSTM (of size 1 in this export, any size in the "
             "compiled model): not supported; keep that axis"], x=torch.randn(1, 5, 3))


def final_states(x):
    """Heads on the last layer's final states as published classifiers read them: both directions
    side by side (torch.cat((h_n[-2], h_n[-1]), dim=1), either order, or h_n.permute(1, 0, 2)
    flattened), one row of either direction, a squeezed unidirectional h_n; and the reads of
    another layer's state, refused with a route."""
    cat = lambda y, h: torch.cat((h[-2], h[-1]), dim=1)
    fs = dict(lstm_output="final_state")
    import_torch("import_h_n_cat_bidirectional", Custom(cat, head=nn.Linear(8, 2), bidirectional=True), 14, x,
                 ["Linear"], dynamic=True, final_directions=[0, 1], **fs)
    import_torch("import_h_n_cat_reversed_stacked",
                 Custom(lambda y, h: torch.cat((h[-1], h[-2]), dim=-1), head=nn.Linear(8, 3), bidirectional=True,
                        layers=2), 13, x, ["Linear"], final_directions=[1, 0], **fs)
    import_torch("import_h_n_cat_output", Custom(cat, bidirectional=True), 17, x, [], final_directions=[0, 1], **fs)
    import_torch("import_h_n_permute_reshape",
                 Custom(lambda y, h: h.permute(1, 0, 2).reshape(h.shape[1], -1), head=nn.Linear(8, 2),
                        bidirectional=True), 15, x, ["Linear"], dynamic=True, final_directions=[0, 1], **fs)
    import_torch("import_h_n_forward_row", Custom(lambda y, h: h[-2], head=nn.Linear(4, 2), bidirectional=True), 14,
                 x, ["Linear"], final_directions=[0], **fs)
    import_torch("import_h_n_squeeze", Custom(lambda y, h: h.squeeze(0), head=nn.Linear(4, 2)), 14, x, ["Linear"],
                 **fs)
    import_torch("import_gru_h_n_cat_bidirectional", Custom(cat, head=nn.Linear(8, 2), bidirectional=True, cell=nn.GRU),
                 14, x, ["Linear"], cell="GRU", final_directions=[0, 1],
                 program=dict(ops=2, directions=2, initial_h="zero", initial_c="zero", h_n=False, c_n=False), **fs)
    refused("import_refused_h_n_other_layer",
            Custom(lambda y, h: torch.cat((h[0], h[-1]), dim=1), head=nn.Linear(8, 2), bidirectional=True, layers=2),
            14, ["(Gather): a Gather of h_n row 0, the final state of layer 0 of 2: only the last layer's final "
                 "states can feed the head (h_n[-1], h_n[-2]); export the stack up to that layer as its own model"])
    refused("import_refused_h_n_every_layer",
            Custom(lambda y, h: h.permute(1, 0, 2).reshape(h.shape[1], -1), head=nn.Linear(8, 2), layers=2), 14,
            ["(Transpose): reads the final states of every layer of the stack; only the last layer's can feed the "
             "head: read h_n[-1]"])


def dead_units(x):
    """A trained classifier's dead output units: a row an L2 decay left at 1e-33 and an all-zero row,
    each with a bias: compiles (the row weight scale's floor) and equals torch in float."""
    model = Custom(lambda y, h: y[:, -1], head=nn.Linear(4, 3))
    with torch.no_grad():
        model.head.weight[1].fill_(1e-33)
        model.head.weight[2].zero_()
        model.head.bias[1], model.head.bias[2] = 0.3, -0.2
    import_torch("import_dead_output_units", model, 14, x, ["select", "Linear"])


def pooling(x):
    """Pooling over time instead of the last step, as published classifiers write it: the mean or the
    max over the time axis (keepdims either way), after an LSTM, a bidirectional LSTM or a GRU, with
    and without a head; a sum over time is refused, named (a pooling after per-step layers: pools_after_layers)."""
    import_torch("import_pool_max_bidirectional",
                 Custom(lambda y, h: y.max(dim=1).values, head=nn.Linear(8, 2), bidirectional=True), 17, x,
                 ["max", "Linear"], dynamic=True)
    import_torch("import_pool_mean_keepdim", Custom(lambda y, h: y.mean(dim=1, keepdim=True).squeeze(1),
                                                    head=nn.Linear(4, 3)), 13, x, ["mean", "Linear"])
    import_torch("import_pool_mean_output", Custom(lambda y, h: torch.mean(y, 1)), 15, x, ["mean"], dynamic=True)
    import_torch("import_pool_max_gru", Custom(lambda y, h: torch.amax(y, dim=1), head=nn.Linear(4, 2), cell=nn.GRU),
                 14, x, ["max", "Linear"], cell="GRU",
                 program=dict(ops=1, directions=1, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    refused("import_refused_sum_over_time", Custom(lambda y, h: y.sum(dim=1), head=nn.Linear(4, 2)), 14,
            ["node '/ReduceSum' (ReduceSum): a sum over time (ReduceSum over the time axis): not supported (a mean "
             "or a max over the time axis alone is: y.mean(dim=1), y.max(dim=1).values)"])
    # A mean after a Linear on every step commutes with it: the program pools first (the same draws
    # as the refusal this was).
    x_pool = torch.randn(2, 5, 3)
    import_torch("import_pool_mean_after_linear",
                 Custom(lambda y, h: y, head=nn.Sequential(nn.Linear(4, 4), Lambda(lambda z: z.mean(dim=1)))), 14,
                 x_pool, ["mean", "Linear"])


def trained_batch_norm(n):
    """A BatchNorm1d as training leaves it: running statistics and an affine far from 0 and 1."""
    bn = nn.BatchNorm1d(n)
    with torch.no_grad():
        bn.running_mean.normal_(0.0, 0.5)
        bn.running_var.uniform_(0.2, 3.0)
        bn.weight.uniform_(0.5, 2.0)
        bn.bias.normal_(0.0, 0.5)
    return bn


def batch_norm(x):
    """BatchNorm1d in eval mode around the head's Linears: folded into the Linear before it, or the
    one after it, or alone a diagonal Linear; on a sequence as BatchNorm1d on [B, F, T]. Over the
    time axis it is refused, named."""
    import_torch("import_batchnorm_before_linear",
                 Custom(lambda y, h: y[:, -1], head=nn.Sequential(trained_batch_norm(4), nn.Linear(4, 2))), 14, x,
                 ["select", "Linear"])
    import_torch("import_batchnorm_after_linear",
                 Custom(lambda y, h: h[-1], head=nn.Sequential(nn.Linear(4, 6), trained_batch_norm(6), nn.ReLU(),
                                                               nn.Linear(6, 2))), 13, x, ["Linear", "Relu", "Linear"],
                 lstm_output="final_state")
    import_torch("import_batchnorm_alone", Custom(lambda y, h: y[:, -1], head=trained_batch_norm(4)), 17, x,
                 ["select", "Linear"])
    features_first = Lambda(lambda z: z.transpose(1, 2))
    import_torch("import_batchnorm_sequence",
                 Custom(lambda y, h: y, head=nn.Sequential(features_first, trained_batch_norm(4), features_first,
                                                           nn.Linear(4, 2))), 15, x, ["Linear"], dynamic=True)
    refused("import_refused_batchnorm_over_time", Custom(lambda y, h: y, head=trained_batch_norm(5)), 14,
            ["(BatchNormalization): a BatchNormalization over the time axis (its input's axis 1), not the features"])


def more_reads(x):
    """Other spellings of the same reads: a max over axis -2, and h_n.view(-1, H)."""
    import_torch("import_pool_max_negative_axis", Custom(lambda y, h: torch.max(y, dim=-2).values, head=nn.Linear(4, 2)),
                 16, x, ["max", "Linear"], dynamic=True)
    import_torch("import_h_n_view", Custom(lambda y, h: h.view(-1, 4), head=nn.Linear(4, 2)), 14, x, ["Linear"],
                 dynamic=True, lstm_output="final_state")


def flatten_steps(x):
    """Every step flattened into one Linear (y.reshape(B, -1), torch.flatten(y, 1)): the model then
    runs on sequences of exactly T steps (T from the Linear's inputs when the time axis is dynamic).
    A flatten after a per-step layer is refused, named."""
    import_torch("import_flatten_reshape", Custom(lambda y, h: y.reshape(y.shape[0], -1), head=nn.Linear(20, 2)), 14,
                 x, ["flatten", "Linear"], dynamic=True)
    import_torch("import_flatten_bidirectional",
                 Custom(lambda y, h: torch.flatten(y, 1), head=nn.Sequential(nn.Linear(40, 6), nn.ReLU(), nn.Linear(6, 2)),
                        bidirectional=True), 17, x, ["flatten", "Linear", "Relu", "Linear"])
    refused("import_refused_flatten_after_linear",
            Custom(lambda y, h: y, head=nn.Sequential(nn.Linear(4, 4), nn.Flatten(), nn.Linear(20, 2))), 14,
            ["(Flatten): a flatten of every step after per-step layers (/head/head.0/MatMul): not supported yet; "
             "flatten the recurrent layer's output directly"])


class SeqFirstRange(nn.Module):
    """A sequence-first LSTM whose head reads `pick(y)` (a range of steps of [T, B, H])."""
    def __init__(self, pick, head):
        super().__init__()
        self.lstm, self.pick, self.head = nn.LSTM(3, 4), pick, head

    def forward(self, x):
        return self.head(self.pick(self.lstm(x)[0]))


class RangeThenLoop(nn.Module):
    """The last 3 steps, then one Linear applied to each in a Python loop (exported unrolled: a Slice,
    MatMul and Add per step, then a Concat), as Keras' Lambda then TimeDistributed(Dense) exports."""
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

    def forward(self, x):
        y = self.lstm(x)[0][:, -3:]
        return torch.cat([self.fc(y[:, t:t + 1]) for t in range(3)], 1)


def step_ranges(x):
    """A head on several consecutive steps (y[:, -k:], y[:, a:b]): per-step layers on each of them
    (the output keeps a time axis of k steps), or the steps flattened into one Linear. From a step
    to the end of a dynamic time axis is refused, named (its length depends on each call)."""
    import_torch("import_last_steps_linear", Custom(lambda y, h: y[:, -3:], head=nn.Linear(4, 2)), 14, x,
                 ["select:3", "Linear"], dynamic=True)
    import_torch("import_last_steps_flatten",
                 Custom(lambda y, h: y[:, -2:].reshape(y.shape[0], -1), head=nn.Sequential(nn.Linear(8, 3), nn.Tanh())),
                 15, x, ["select:2", "Linear", "Tanh"], dynamic=True)
    import_torch("import_steps_from_first", Custom(lambda y, h: y[:, 1:4], head=nn.Sequential(nn.Linear(4, 6), nn.ReLU(),
                                                                                               nn.Linear(6, 2))),
                 13, x, ["select:3", "Linear", "Relu", "Linear"])
    import_torch("import_last_steps_bidirectional",
                 Custom(lambda y, h: torch.flatten(nn.functional.relu(y[:, -2:]), 1), head=nn.Linear(16, 2),
                        bidirectional=True), 17, x, ["select:2", "Relu", "Linear"], dynamic=True)
    refused("import_refused_steps_to_end_dynamic", Custom(lambda y, h: y[:, 2:], head=nn.Linear(4, 2)), 14,
            ["(Slice): a Slice of the steps from 2 to the end of a time axis of dynamic size: how many it takes "
             "depends on each call; slice the last k steps (y[:, -k:]) or export with a fixed sequence length"],
            dynamic=True)
    # Sequence-first: the selected steps keep the time-major order ([k, B, C] out); their flatten
    # (a transpose to batch-first, then a reshape) is refused, named.
    xs = torch.randn(5, 2, 3)
    import_torch("import_last_steps_seq_first", SeqFirstRange(lambda y: y[-3:], nn.Linear(4, 2)), 14, xs,
                 ["select:3", "Linear"], batch_first=False)
    slice_every_axis("import_last_steps_slice_every_axis", "import_last_steps_seq_first")
    refused("import_refused_steps_flatten_seq_first",
            SeqFirstRange(lambda y: y[-2:].transpose(0, 1).reshape(y.shape[1], -1), nn.Linear(8, 2)), 14,
            ["node '/Slice': a flatten of several selected steps of a time-major (sequence-first) LSTM: not "
             "supported; export the model batch-first"], x=xs)
    import_torch("import_last_steps_unrolled_linear", RangeThenLoop(), 14, x, ["select:3", "Linear"], dynamic=True)


class CellLoop(nn.Module):
    """nn.LSTMCell / nn.GRUCell stepped in Python (exported unrolled: a Gemm or MatMul pair, Split and
    the state update per step), `layers` cells chained per step, from a zero state; the head reads
    the last h, or every step's h stacked along time."""
    def __init__(self, cell=nn.LSTMCell, layers=1, bias=True, stack=False, reverse=False, time_major=False,
                 steps=None, h0=torch.zeros, same_weights=True):
        super().__init__()
        sizes = [3] + [4] * layers
        self.cells = nn.ModuleList([cell(sizes[k], 4, bias=bias) for k in range(layers)])
        self.other = cell(3, 4, bias=bias)  # the refused loop whose odd steps have weights of their own
        self.fc = nn.Linear(4, 2)
        self.lstm, self.stack, self.reverse, self.time_major = cell is nn.LSTMCell, stack, reverse, time_major
        self.steps, self.h0, self.same_weights = steps, h0, same_weights

    def forward(self, x):
        B, T = (x.shape[1], x.shape[0]) if self.time_major else (x.shape[0], x.shape[1])
        state = [(self.h0(B, 4), self.h0(B, 4)) if self.lstm else self.h0(B, 4) for _ in self.cells]
        outs = []
        for t in range(self.steps or T):
            h = x[T - 1 - t if self.reverse else t] if self.time_major else x[:, T - 1 - t if self.reverse else t]
            for k, cell in enumerate(self.cells):
                if not self.same_weights and t % 2 == 1:
                    cell = self.other
                state[k] = cell(h, state[k])
                h = state[k][0] if self.lstm else state[k]
            outs.append(h)
        if self.stack:
            return self.fc(torch.stack(outs, 0 if self.time_major else 1))
        return self.fc(h)


class CellLoopState(nn.Module):
    """A cell loop that takes its state in and gives it back (a streaming model's form): every
    step's h stacked into a Linear, and the last h (and c) returned."""
    def __init__(self, cell=nn.LSTMCell):
        super().__init__()
        self.cell, self.fc, self.lstm = cell(3, 4), nn.Linear(4, 2), cell is nn.LSTMCell

    def forward(self, x, h, c=None):
        outs = []
        for t in range(x.shape[1]):
            if self.lstm:
                h, c = self.cell(x[:, t], (h, c))
            else:
                h = self.cell(x[:, t], h)
            outs.append(h)
        y = self.fc(torch.stack(outs, 1))
        return (y, h, c) if self.lstm else (y, h)


class CellLoopHeadOnState(nn.Module):
    """A classifier on the last h that also returns it: refused, as for nn.LSTM's h_n."""
    def __init__(self):
        super().__init__()
        self.cell, self.fc = nn.LSTMCell(3, 4), nn.Linear(4, 2)

    def forward(self, x):
        h = c = torch.zeros(x.shape[0], 4)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.fc(h), h


def cell_loop_state(name, cell, x):
    """Exports CellLoopState with a dynamic batch: its state inputs [B, H] become initial_h /
    initial_c ([1, B, H]: the same values), its returned state h_n / c_n."""
    model = CellLoopState(cell).eval()
    g = torch.Generator().manual_seed(33)
    h0, c0 = 0.5 * torch.randn(x.shape[0], 4, generator=g), 0.5 * torch.randn(x.shape[0], 4, generator=g)
    lstm = cell is nn.LSTMCell
    args = (x, h0, c0) if lstm else (x, h0)
    with torch.no_grad():
        outs = model(*args)
        names, out_names = ["x", "h0", "c0"][:len(args)], ["y", "h_n", "c_n"][:len(args)]
        torch.onnx.export(model, args, os.path.join(OUT, name + ".onnx"), opset_version=14, input_names=names,
                          output_names=out_names, dynamic_axes={n: {0: "batch"} for n in names})
    program = dict(ops=1, directions=1, initial_h="input", initial_c="input" if lstm else "zero", h_n=True, c_n=lstm)
    if lstm:  # run_float_program takes h0 only: the structure here (the CLI test runs it)
        expect(name, program=dict(program, batch_first=True), head=["Linear"])
        return
    expect(name, cell="GRU", input=rounded(x), input_shape=list(x.shape), output=rounded(outs[0]),
           output_shape=list(outs[0].shape), batch_first=True, unbatched=False, opset=14, lstm_output="sequence",
           front=[], head=["Linear"], state_batch=0, program=program, h0=rounded(h0), h_n=rounded(outs[1]))


def cell_loops(x):
    """Cells stepped in a Python loop, fused back into one LSTM or GRU node per cell (item 2)."""
    torch.manual_seed(31)
    last = dict(lstm_output="final_state")
    # Traced over 3 steps, a dynamic time axis: the fused layer runs over all 5 of x, as the loop does.
    import_torch("import_cell_lstm_loop", CellLoop(), 14, x, ["Linear"], dynamic=True, traced=x[:, :3], **last)
    import_torch("import_cell_gru_loop_stacked_outputs", CellLoop(nn.GRUCell, stack=True), 13, x, ["Linear"],
                 cell="GRU", program=dict(ops=1, directions=1, initial_h="zero", initial_c="zero", h_n=False,
                                          c_n=False))
    import_torch("import_cell_lstm_two_cells_no_bias", CellLoop(layers=2, bias=False, stack=True), 13, x, ["Linear"],
                 program=dict(ops=2, directions=1, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    import_torch("import_cell_lstm_reverse", CellLoop(reverse=True), 17, x, ["Linear"], **last)
    import_torch("import_cell_gru_time_major", CellLoop(nn.GRUCell, time_major=True, stack=True), 14,
                 x.transpose(0, 1).contiguous(), ["Linear"], batch_first=False)
    import_torch("import_cell_gru_two_cells", CellLoop(nn.GRUCell, layers=2), 14, x, ["Linear"], cell="GRU", **last)
    refused("import_refused_cell_loop_own_weights", CellLoop(same_weights=False), 14,
            ["step 1 of the LSTMCell loop at node '/cells.0/Split' (Split) has weights other than step 0's"], x=x)
    refused("import_refused_cell_loop_part", CellLoop(steps=3), 14,
            ["runs 3 steps over 'x', whose time axis has 5: a loop over part of the sequence is not supported"], x=x)
    refused("import_refused_cell_loop_state", CellLoop(nn.GRUCell, h0=torch.ones), 14,
            ["starts from the state '/cells.0/Constant_4_output_0', neither zeros nor a model input of [batch, hidden]"],
            x=x)
    cell_loop_state("import_cell_gru_state_in_and_out", nn.GRUCell, x)
    cell_loop_state("import_cell_lstm_state_in_and_out", nn.LSTMCell, x)
    refused("import_refused_cell_loop_head_on_returned_state", CellLoopHeadOnState(), 14,
            ["node '/fc/Gemm' (Gemm) reads the last state 'onnx::Gemm_103' of the LSTMCell loop at node '/cell/Split' "
             "(Split), which the model also returns: a head on a state the model gives back is not supported yet"],
            x=x)
    # Two stacked LSTM nodes, the first without a Y_h output, the head on the second's: refused
    # (it read past the first node's outputs before).
    rng = np.random.default_rng(32)
    w = lambda n, *shape: numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n)
    refused_graph("import_refused_h_n_first_layer_without_y_h", [
        helper.make_node("LSTM", ["x", "W0", "R0"], ["y0"], name="layer0", hidden_size=4),
        helper.make_node("Squeeze", ["y0", "axis1"], ["x1"], name="between"),
        helper.make_node("LSTM", ["x1", "W1", "R1"], ["", "h1"], name="layer1", hidden_size=4),
        helper.make_node("Squeeze", ["h1", "axis0"], ["y"], name="head")],
        [w("W0", 1, 16, 3), w("R0", 1, 16, 4), w("W1", 1, 16, 4), w("R1", 1, 16, 4),
         numpy_helper.from_array(np.array([1], np.int64), "axis1"), numpy_helper.from_array(np.array([0], np.int64), "axis0")],
        errors=["graph: the layers' h_n must be concatenated along axis 0, in layer order, before the head reads h_n[-1]"])


def log_softmax(x):
    """Classifiers trained with NLLLoss end in log_softmax: over the classes after the last step's
    Linear, and as opset 11 writes it (axis 1 of h_n[-1]'s [B, C]); over the time axis, refused."""
    import_torch("import_log_softmax",
                 Custom(lambda y, h: y[:, -1], head=nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=-1))), 14, x,
                 ["select", "Linear", "LogSoftmax"], dynamic=True)
    import_torch("import_log_softmax_h_n_opset11",
                 Custom(lambda y, h: h[-1], head=nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3),
                                                               nn.LogSoftmax(dim=1))), 11, x,
                 ["Linear", "Relu", "Linear", "LogSoftmax"], lstm_output="final_state")
    refused("import_refused_log_softmax_over_time", Custom(lambda y, h: torch.log_softmax(y, dim=1)), 14,
            ["(LogSoftmax): a LogSoftmax over axis 1 (the time axis), not the last (feature) axis"])


def h_n_view(x):
    """The last layer's final states as the PyTorch documentation separates the directions:
    h_n.view(num_layers, 2, B, H)[-1], its two rows concatenated (a dynamic batch: the view's target
    is computed from h_n's shape)."""
    def last_layer(y, h):
        rows = h.view(2, 2, h.size(1), 4)[-1]
        return torch.cat((rows[0], rows[1]), dim=1)
    import_torch("import_h_n_view_last_layer", Custom(last_layer, head=nn.Linear(8, 3), bidirectional=True, layers=2), 14,
                 x, ["Linear"], dynamic=True, final_directions=[0, 1], lstm_output="final_state")


class Residual(nn.Module):
    """Stacked recurrent modules with residual connections, y_l + x_l (torch's ResNet-style stacks):
    `skips` names the layers that add their input; a Linear front end makes the first layer's input
    as wide as its output."""
    def __init__(self, skips, cell=nn.LSTM, layers=2, bidirectional=False, head=None, pick=lambda y: y,
                 skip_first=False):
        super().__init__()
        width = 8 if bidirectional else 4
        self.front = nn.Linear(3, width)
        self.layers = nn.ModuleList(cell(width, 4, batch_first=True, bidirectional=bidirectional)
                                    for _ in range(layers))
        self.skips, self.skip_first = skips, skip_first
        self.head, self.pick = head or nn.Identity(), pick

    def forward(self, x):
        x = self.front(x)
        for k, layer in enumerate(self.layers):
            y = layer(x)[0]
            x = (x + y if self.skip_first else y + x) if k in self.skips else y
        return self.head(self.pick(x))


class Affine(nn.Module):
    """y = x * scale + shift per feature, the constants as buffers (tf2onnx's Mul and Add form of a
    Keras BatchNormalization in inference)."""
    def __init__(self, n):
        super().__init__()
        self.register_buffer("scale", torch.empty(n).uniform_(0.5, 2.0))
        self.register_buffer("shift", torch.empty(n).normal_(0.0, 0.5))

    def forward(self, x):
        return x * self.scale + self.shift


class AffineBetween(nn.Module):
    """Two LSTM modules with a per-feature affine between them (a BatchNorm1d on [B, F, T], or a Mul
    and an Add), and one (Mul and Add) on the last step before the Linear."""
    def __init__(self, bn):
        super().__init__()
        self.rnn1, self.rnn2 = nn.LSTM(3, 4, batch_first=True), nn.LSTM(4, 5, batch_first=True)
        self.bn, self.between, self.after, self.fc = bn, Affine(4), Affine(5), nn.Linear(5, 2)

    def forward(self, x):
        y = self.rnn1(x)[0]
        y = self.bn(y.permute(0, 2, 1)).permute(0, 2, 1) if self.bn is not None else self.between(y)
        # The second layer's zero state sized from x (torch's own reads the Transpose's shape).
        zeros = torch.zeros(1, x.shape[0], 5)
        return self.fc(self.after(self.rnn2(y, (zeros, zeros))[0][:, -1]))


def feature_affines(x):
    """A per-feature affine between two recurrent layers (Keras' BatchNormalization between LSTMs:
    torch's BatchNormalization node, or tf2onnx's Mul and Add) taken into the next layer's input
    weights and bias, and one in the head (a Mul and an Add) taken into the Linear after it."""
    torch.manual_seed(41)
    import_torch("import_batchnorm_between_layers", AffineBetween(trained_batch_norm(4)), 14, x, ["select", "Linear"],
                 dynamic=True, program=dict(ops=2, directions=1, initial_h="zero", initial_c="zero", h_n=False,
                                            c_n=False), lstm_output="sequence")
    import_torch("import_mul_add_between_layers", AffineBetween(None), 13, x, ["select", "Linear"], dynamic=True,
                 program=dict(ops=2, directions=1, initial_h="zero", initial_c="zero", h_n=False, c_n=False))


def residuals(x):
    """Residual connections between recurrent layers: after the last layer (before the head), after
    an inner one, after both, with a bidirectional stack and a GRU stack (x + y, either order); an
    Add of the output and a value that is not the layer's input is refused."""
    torch.manual_seed(31)
    import_torch("import_residual_last_layer", Residual([1], head=nn.Linear(4, 3), pick=lambda y: y[:, -1]), 14, x,
                 ["select", "Linear"], front=["Linear"], residual=[False, True], dynamic=True)
    import_torch("import_residual_every_layer", Residual([0, 1, 2], layers=3, head=nn.Linear(4, 2),
                                                         pick=lambda y: y.mean(dim=1)), 15, x,
                 ["mean", "Linear"], front=["Linear"], residual=[True, True, True])
    import_torch("import_residual_inner_bidirectional", Residual([0], bidirectional=True, head=nn.Linear(8, 1)), 13,
                 x, ["Linear"], front=["Linear"], residual=[True, False], dynamic=True)
    import_torch("import_residual_gru_skip_first", Residual([1], cell=nn.GRU, skip_first=True), 17, x, [],
                 front=["Linear"], residual=[False, True], cell="GRU")

    class OutputPlusModelInput(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1, self.lstm2 = nn.LSTM(3, 3, batch_first=True), nn.LSTM(3, 3, batch_first=True)

        def forward(self, x):
            return self.lstm2(self.lstm1(x)[0])[0] + x

    refused("import_refused_residual_not_the_input", OutputPlusModelInput(), 14,
            ["node '/Add' (Add): an Add of two activations: only a residual connection is supported, a recurrent "
             "layer's output plus that layer's own input"])


def import_models():
    """The graphs the import pre-pass and its fixes make compile, and the refusals they name."""
    torch.manual_seed(18)
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(22))
    import_torch("import_two_lstm_modules_dynamic", TwoModules(), 14, x, [], dynamic=True)
    import_torch("import_two_gru_modules_dynamic", TwoModules(nn.GRU), 14, x, [], cell="GRU", dynamic=True)
    import_torch("import_squeeze_one_value_per_step", OneValuePerStep(), 14, x, ["Linear"],
                 output_squeezes_features=True)
    import_torch("import_no_constant_folding", Custom(lambda y, h: y), 14, x, [], fold=False)
    stacked = models.LstmModel(3, 4, num_layers=2, bidirectional=True, head=[nn.Linear(8, 2)])
    import_torch("import_no_constant_folding_stacked_bidirectional", stacked, 13, x, ["Linear"], fold=False)
    last = Custom(lambda y, h: y[:, -1], head=nn.Linear(4, 2))
    import_torch("import_opset9_slice_last_step", last, 9, x, ["select", "Linear"])
    reshape_0_0_2h("import_reshape_target_0_0_128")
    reshape_0_0_2h("import_reshape_target_from_shape", from_shape=True)
    # Made where its refusal was, on an input drawn as that refusal's was: the later fixtures unchanged.
    import_torch("import_pool_mean", MeanOverTime(), 14, torch.randn(2, 5, 3), ["mean", "Linear"])
    refused("import_refused_encoder_decoder", EncoderDecoder(), 14,
            ["graph: 2 LSTM/GRU nodes, of which 1 form a chain", "off the chain: node '/dec/LSTM' (LSTM)"])
    refused_recurrences()
    refused("import_refused_state_from_time_axis", StateFromTimeAxis(), 14,
            ["node '/lstm/LSTM' (LSTM): the ConstantOfShape node '/ConstantOfShape' (ConstantOfShape) that builds "
             "initial_h ('/ConstantOfShape_output_0') has shape [1, time, 4], expected [num_directions = 1, "
             "batch = X's axis 'batch', hidden_size = 4]"], x=torch.randn(2, 2, 3), dynamic=True)
    refused("import_refused_squeeze_without_axes_dynamic", Custom(lambda y, h: y.squeeze()), 14,
            ["(Squeeze): a Squeeze without axes of a value whose batch axis is dynamic ('batch'): which axes it "
             "drops depends on each call's sizes; name the axes to squeeze"], dynamic=True)
    shape = numpy_helper.from_array(np.array([1, 2 ** 20, 2 ** 14], np.int64), "state_shape")
    cos = helper.make_node("ConstantOfShape", ["state_shape"], ["zero_state"], name="huge_state")
    plain("import_refused_state_shape", extra_inits=[shape], pre_nodes=[cos],
          inputs=["X", "W", "R", "B", "", "zero_state", ""])
    expect("import_refused_state_shape",
           error="node 'lstm0' (LSTM): the ConstantOfShape node 'huge_state' (ConstantOfShape) that builds initial_h "
                 "('zero_state') has shape [1, 1048576, 16384], expected [num_directions = 1, batch = 2, "
                 "hidden_size = 4]")
    batch_of_one()
    between_layers(x)
    final_states(x)
    dead_units(x)
    pooling(x)
    batch_norm(x)
    more_reads(x)
    flatten_steps(x)
    step_ranges(x)
    cell_loops(x)
    log_softmax(x)
    h_n_view(x)
    residuals(x)
    feature_affines(x)
    reshape_0_0_2h("import_reshape_target_from_shape_product", from_shape="product")
    tf2onnx_bidirectional("import_tf2onnx_bidirectional_slice")
    tf2onnx_bidirectional("import_tf2onnx_bidirectional_gather", pick="gather")
    tf2onnx_bidirectional("import_tf2onnx_bidirectional_tensordot", tensordot=True)
    body, trips = identity_loop()  # named as tf2onnx names a Keras layer's while_loop
    refused_graph("import_refused_tf_while_loop",
                  [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="functional_1/gru_1/while_loop", body=body)],
                  [trips], errors=["node 'functional_1/gru_1/while_loop' (Loop): a Loop from TensorFlow's while_loop: "
                                   "a Keras recurrent layer tf2onnx wrote step by step"])
    hard_sigmoid_lstm("import_keras_hard_sigmoid_bidirectional")
    lstm_w = [numpy_helper.from_array(np.zeros((1, 16, 3), np.float32), "W"),
              numpy_helper.from_array(np.zeros((1, 16, 4), np.float32), "R")]
    for refused_name, acts, alpha, why in [
            ("import_refused_hard_sigmoid_negative_alpha", ["HardSigmoid", "Tanh", "Tanh"], [-0.2],
             "HardSigmoid alpha -0.200000, beta 0.500000 is not supported (the kernel's line takes 0 <= alpha"),
            ("import_refused_hard_sigmoid_cell_gate", ["Sigmoid", "HardSigmoid", "Tanh"], [0.2],
             "activations Sigmoid, HardSigmoid, Tanh are not supported (only Sigmoid, Tanh, Tanh, or HardSigmoid "
             "in Sigmoid's place")]:
        refused_graph(refused_name, [helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="lstm0", hidden_size=4,
                                                      activations=acts, activation_alpha=alpha)],
                      lstm_w, errors=["node 'lstm0' (LSTM): " + why])
    refused_graph("import_refused_gru_hard_sigmoid",
                  [helper.make_node("GRU", ["x", "W", "R"], ["y"], name="gru0", hidden_size=4, linear_before_reset=1,
                                    activations=["HardSigmoid", "Tanh"], activation_alpha=[0.2])],
                  [numpy_helper.from_array(np.zeros((1, 12, 3), np.float32), "W"),
                   numpy_helper.from_array(np.zeros((1, 12, 4), np.float32), "R")],
                  errors=["node 'gru0' (GRU): activations HardSigmoid, Tanh are not supported (only Sigmoid, Tanh: "])
    embeddings()
    pooled_concats()
    layer_norms()
    attention_pools()
    layers_between()
    pools_after_layers()
    # compile's calibration for the CLI tests: 8 sequences of 5 steps, batch-first [B, T, 3]
    np.save(os.path.join(OUT, "import_calibration.npy"),
            np.random.default_rng(23).standard_normal((8, 5, 3)).astype(np.float32))


class LayersBetween(nn.Module):
    """Two recurrent modules with per-position layers between them (a Linear and its activation:
    Keras' TimeDistributed(Dense) between two LSTMs, or a torch projection), then a head on the
    last step or every step."""
    def __init__(self, between, width, cell=nn.LSTM, bidirectional=False, last_step=True, scale=None):
        super().__init__()
        d = 2 if bidirectional else 1
        self.rnn1 = cell(3, 6, batch_first=True, bidirectional=bidirectional)
        self.between, self.scale = between, scale
        self.rnn2 = cell(width, 5, batch_first=True, bidirectional=bidirectional)
        self.head, self.last_step = nn.Linear(5 * d, 2), last_step

    def forward(self, x):
        y = self.rnn1(x)[0]
        if self.scale is not None:
            y = y * self.scale  # a per-feature affine before the layers
        y = self.rnn2(self.between(y))[0]
        return self.head(y[:, -1] if self.last_step else y)


def pools_after_layers():
    """A pooling over time after per-step layers that commute with it (the program pools first): a
    max after a ReLU, a mean after two Linears; refused where they do not (a mean after a ReLU)."""
    torch.manual_seed(64)
    x = torch.randn(2, 5, 3)
    import_torch("import_pool_max_after_relu",
                 Custom(lambda y, h: y, head=nn.Sequential(nn.ReLU(), Lambda(lambda z: z.max(dim=1).values),
                                                           nn.Linear(4, 2))), 17, x, ["max", "Relu", "Linear"],
                 dynamic=True)
    import_torch("import_pool_mean_after_linears_gru",
                 Custom(lambda y, h: y, head=nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 3), Lambda(lambda z: z.mean(1))),
                        cell=nn.GRU), 14, x, ["mean", "Linear", "Linear"], cell="GRU",
                 program=dict(ops=1, directions=1, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    refused("import_refused_pool_mean_after_relu",
            Custom(lambda y, h: y, head=nn.Sequential(nn.Linear(4, 4), nn.ReLU(), Lambda(lambda z: z.mean(dim=1)))), 14,
            ["node '/head/head.2/ReduceMean' (ReduceMean): a pooling over time after per-step layers "
             "(/head/head.0/MatMul): not supported yet (a mean after Linears alone, a max after non-decreasing "
             "activations alone are)"])


def layers_between():
    """Per-position layers between two recurrent layers (FloatProgram::between): a Linear with its
    activation, on LSTMs, GRUs and bidirectional layers; refused after a per-feature affine."""
    torch.manual_seed(63)
    x = torch.randn(2, 5, 3)
    import_torch("import_linear_relu_between_lstms", LayersBetween(nn.Sequential(nn.Linear(6, 4), nn.ReLU()), 4),
                 14, x, ["select", "Linear"], dynamic=True, between=[["Linear", "Relu"], []])
    import_torch("import_linear_tanh_between_grus",
                 LayersBetween(nn.Sequential(nn.Linear(6, 7), nn.Tanh()), 7, cell=nn.GRU, last_step=False), 17, x,
                 ["Linear"], cell="GRU", dynamic=True, between=[["Linear", "Tanh"], []])
    import_torch("import_linear_between_bidirectional",
                 LayersBetween(nn.Linear(12, 6), 6, bidirectional=True), 13, x, ["select", "Linear"],
                 between=[["Linear"], []])
    refused("import_refused_layer_after_affine_between",
            LayersBetween(nn.Linear(6, 4), 4, scale=torch.linspace(0.5, 2.0, 6)), 14,
            ["a layer after a per-feature affine (node '/Mul' (Mul)) between two recurrent layers: not supported"])


class SeqFirstPoolConcat(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(3, 4), nn.Linear(8, 2)

    def forward(self, x):
        y = self.lstm(x)[0]
        return self.fc(torch.cat((y.mean(0), y.max(0).values), 1))


def pooled_concats():
    """Poolings over time concatenated along the features, as text classifiers pool a recurrent
    layer's output: torch.cat((y.mean(1), y.max(1).values), 1), either order, keepdim or not, with or
    without a head; a concatenation with another read of the sequence is refused, named."""
    torch.manual_seed(41)
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(43))
    import_torch("import_pool_concat_mean_max_bigru",
                 Custom(lambda y, h: torch.cat((y.mean(dim=1), y.max(dim=1).values), dim=1), head=nn.Linear(16, 3),
                        bidirectional=True, cell=nn.GRU),
                 17, x, ["mean+max", "Linear"], cell="GRU", dynamic=True,
                 program=dict(ops=2, directions=2, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    import_torch("import_pool_concat_max_mean_keepdim",
                 Custom(lambda y, h: torch.cat((torch.amax(y, 1, keepdim=True), y.mean(1, keepdim=True)), 2).squeeze(1),
                        head=nn.Linear(8, 2)),
                 14, x, ["max+mean", "Linear"])
    import_torch("import_pool_concat_output", Custom(lambda y, h: torch.cat((y.mean(1), y.max(1).values, y.mean(1)), 1)),
                 13, x, ["mean+max+mean"], dynamic=True)
    refused("import_refused_pool_concat_seq_first", SeqFirstPoolConcat(), 14,
            ["node '/Concat': a concatenation of poolings over time of a time-major (sequence-first) LSTM: not "
             "supported; export the model batch-first", "what to do: the model up to '/lstm/LSTM_output_0'"],
            x=x.transpose(0, 1).contiguous())
    import_torch("import_pool_concat_mean_last_step",
                 Custom(lambda y, h: torch.cat((y.mean(1), y[:, -1]), 1), head=nn.Linear(8, 2)), 14, x,
                 ["mean+last", "Linear"])
    import_torch("import_pool_concat_first_max_last_bidirectional",
                 Custom(lambda y, h: torch.cat((y[:, 0], y.max(1).values, y[:, -1]), 1),
                        head=nn.Linear(24, 2), bidirectional=True),
                 17, x, ["first+max+last", "Linear"], dynamic=True)
    refused("import_refused_pool_concat_middle_step",
            Custom(lambda y, h: torch.cat((y.mean(1), y[:, 2]), 1), head=nn.Linear(8, 2)), 14,
            ["is read by 2 nodes"])


class LayerNormBetween(nn.Module):
    def __init__(self, affine=True):
        super().__init__()
        self.a, self.b = nn.LSTM(3, 4, batch_first=True), nn.LSTM(4, 4, batch_first=True)
        self.ln, self.fc = trained_layer_norm(4, 61, affine), nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.b(self.ln(self.a(x)[0]))[0][:, -1])


class LayerNormResidual(nn.Module):
    """Three bidirectional layers: a LayerNorm after the first, the second with a residual
    connection and a LayerNorm after its sum (the post-norm residual block), then the third."""
    def __init__(self):
        super().__init__()
        self.a = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        self.b = nn.LSTM(8, 4, batch_first=True, bidirectional=True)
        self.c = nn.LSTM(8, 4, batch_first=True, bidirectional=True)
        self.ln1, self.ln2, self.fc = trained_layer_norm(8, 66), trained_layer_norm(8, 67), nn.Linear(8, 2)

    def forward(self, x):
        y = self.ln1(self.a(x)[0])
        y = self.ln2(self.b(y)[0] + y)
        return self.fc(self.c(y)[0][:, -1])


def layer_norms():
    """nn.LayerNorm over the features, in the head (on the last step, on every step of a
    bidirectional layer, after a Linear) and in front of the first layer, as opset 17 writes it
    (LayerNormalization) and as earlier opsets write it (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
    Div, then Mul and Add when it has gamma and beta); over more than the features, refused."""
    torch.manual_seed(57)
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(59))
    import_torch("import_layer_norm_last_step_opset13",
                 Custom(lambda y, h: y[:, -1], head=nn.Sequential(trained_layer_norm(4, 62), nn.Linear(4, 3))),
                 13, x, ["select", "LayerNorm", "Linear"], dynamic=True)
    import_torch("import_layer_norm_bidirectional_per_step",
                 Custom(lambda y, h: y, head=nn.Sequential(trained_layer_norm(8, 63), nn.Linear(8, 2)),
                        bidirectional=True),
                 17, x, ["LayerNorm", "Linear"], dynamic=True,
                 program=dict(ops=2, directions=2, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    import_torch("import_layer_norm_no_affine_front",
                 models.LstmModel(3, 4, front=[nn.Linear(3, 6), trained_layer_norm(6, 64, False), nn.Tanh()],
                                  head=[nn.Linear(4, 2)], pick="last"),
                 14, x, ["select", "Linear"], front=["Linear", "LayerNorm", "Tanh"])
    import_torch("import_layer_norm_after_linear_opset11",
                 Custom(lambda y, h: h[-1], head=nn.Sequential(nn.Linear(4, 6), trained_layer_norm(6, 65), nn.ReLU(),
                                                               nn.Linear(6, 2))),
                 11, x, ["Linear", "LayerNorm", "Relu", "Linear"], lstm_output="final_state")
    refused("import_refused_layer_norm_over_time", Custom(lambda y, h: y, head=nn.LayerNorm((5, 4))), 17,
            ["(LayerNormalization): a LayerNormalization over more than the last (feature) axis"], x=x)
    import_torch("import_layer_norm_between_layers", LayerNormBetween(), 13, x, ["select", "Linear"], dynamic=True,
                 between=[["LayerNorm"], []])
    import_torch("import_layer_norm_after_residual_bidirectional", LayerNormResidual(), 17, x, ["select", "Linear"],
                 dynamic=True, residual=[False, True, False], between=[["LayerNorm"], ["LayerNorm"], []])


class AttentionPooled(nn.Module):
    """w = softmax(Linear(y), dim over time); context = sum over time of w * y; then a Linear:
    form "sum" torch.sum(w * y, 1), "squeeze" the score squeezed for the softmax and unsqueezed
    after it, "keepdim" the sum kept and squeezed; "mlp" a tanh Linear before the score."""
    def __init__(self, form="sum", cell=nn.LSTM, bidirectional=False, batch_first=True):
        super().__init__()
        d = 2 if bidirectional else 1
        self.rnn = cell(3, 4, batch_first=batch_first, bidirectional=bidirectional)
        self.form, self.time = form, 1 if batch_first else 0
        self.hidden = nn.Linear(4 * d, 4) if form == "mlp" else None
        self.score, self.fc = nn.Linear(4 if form == "mlp" else 4 * d, 1), nn.Linear(4 * d, 2)

    def forward(self, x):
        y = self.rnn(x)[0]
        t = self.time
        s = self.score(torch.tanh(self.hidden(y)) if self.hidden is not None else y)
        if self.form == "squeeze":
            c = (torch.softmax(s.squeeze(-1), dim=t).unsqueeze(-1) * y).sum(dim=t)
        elif self.form == "keepdim":
            c = torch.sum(torch.softmax(s, dim=t) * y, dim=t, keepdim=True).squeeze(t)
        else:
            c = torch.sum(torch.softmax(s, dim=t) * y, dim=t)
        return self.fc(c)


def attention_pools():
    """Attention pooling over time, as recurrent classifiers write it: a score per step from a
    Linear(W, 1), its softmax over the time axis, the sum over time of the weighted steps; batch-
    first and sequence-first, squeezed or not, kept or not; a score MLP refused, named."""
    torch.manual_seed(71)
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(73))
    import_torch("import_attention_pool_sum", AttentionPooled(), 13, x, ["attention", "Linear"], dynamic=True)
    import_torch("import_attention_pool_squeezed_bigru", AttentionPooled("squeeze", nn.GRU, True), 14, x,
                 ["attention", "Linear"], cell="GRU", dynamic=True,
                 program=dict(ops=2, directions=2, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    import_torch("import_attention_pool_keepdim_seq_first", AttentionPooled("keepdim", batch_first=False), 17,
                 x.transpose(0, 1).contiguous(), ["attention", "Linear"], batch_first=False, dynamic=True)
    refused("import_refused_attention_mlp_score", AttentionPooled("mlp"), 14, ["is read by 2 nodes"], x=x)


def embeddings():
    """nn.Embedding on token ids (an int64 input) in front of the recurrent layers, as text models
    write it: a Gather from the table, batch-first or sequence-first, with a padding row; ids that
    reach anything but an embedding are refused, named."""
    ids = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(31))
    import_torch("import_embedding_lstm_last_step", Custom(lambda y, h: y[:, -1], front=nn.Embedding(20, 3),
                                                           head=nn.Linear(4, 2)),
                 14, ids, ["select", "Linear"], front=["embedding"], dynamic=True)
    gru = Custom(lambda y, h: y.mean(dim=1), front=nn.Embedding(20, 3, padding_idx=0), head=nn.Linear(8, 3),
                 bidirectional=True, cell=nn.GRU)
    import_torch("import_embedding_bigru_mean", gru, 17, ids, ["mean", "Linear"], front=["embedding"], cell="GRU",
                 program=dict(ops=2, directions=2, initial_h="zero", initial_c="zero", h_n=False, c_n=False))
    seq_first = models.LstmModel(3, 4, front=[nn.Embedding(20, 3)], batch_first=False, head=[nn.Linear(4, 2)])
    import_torch("import_embedding_seq_first", seq_first, 14, ids.t().contiguous(),
                 ["Linear"], front=["embedding"], batch_first=False, dynamic=True)
    import_torch("import_embedding_unbatched", Custom(lambda y, h: y[-1], front=nn.Embedding(20, 3),
                                                      head=nn.Linear(4, 2)),
                 14, ids[0], ["select", "Linear"], front=["embedding"], unbatched=True)
    refused("import_refused_ids_not_embedded",
            Custom(lambda y, h: y, front=Lambda(lambda t: t.float().unsqueeze(-1).expand(-1, -1, 3))), 14,
            ["node '/front/Cast' (Cast): reads the token ids (the model's integer input): only an embedding may"],
            x=ids)
    # compile's calibration and held-out data for the embedding CLI tests: int64 ids [B, T]
    rng = np.random.default_rng(37)
    np.save(os.path.join(OUT, "import_embedding_calibration.npy"), rng.integers(0, 20, (16, 6)))
    held_out = rng.integers(0, 20, (8, 7))
    np.save(os.path.join(OUT, "import_embedding_held_out.npy"), held_out)
    held_out[1, 3] = 20  # one past the table's last row
    np.save(os.path.join(OUT, "import_embedding_id_outside_table.npy"), held_out)


class Autoencoder(nn.Module):
    """An LSTM autoencoder as published ones write it: the encoder's final hidden state (h_n[-1], or
    its last step y[:, -1:]) repeated over the input's steps (repeat, expand, or a fixed count) as
    the decoder's input, then a Linear per step."""
    def __init__(self, read="h_n", how="repeat", count=None, features=3, hidden=6, latent=5, cell=nn.LSTM,
                 bidirectional=False, pass_state=False, layers=1, before=None, after=None, decoder_input=None):
        super().__init__()
        self.read, self.how, self.count, self.pass_state = read, how, count, pass_state
        # Layers on the final state before the repetition (a bottleneck) and after it, per step.
        self.before, self.after = before or nn.Identity(), after or nn.Identity()
        self.enc = cell(features, latent, batch_first=True, bidirectional=bidirectional, num_layers=layers)
        self.dec = cell(decoder_input or latent * (2 if bidirectional else 1), hidden, batch_first=True,
                        num_layers=layers)
        self.out = nn.Linear(hidden, features)

    def forward(self, x):
        y, state = self.enc(x)
        h = state[0] if isinstance(state, tuple) else state
        T = x.shape[1] if self.count is None else self.count
        z = self.before(h[-1]).unsqueeze(1) if self.read == "h_n" else self.before(y[:, -1:])
        z = self.after(z.repeat(1, T, 1) if self.how == "repeat" else z.expand(-1, T, -1))
        return self.out(self.dec(z, state)[0] if self.pass_state else self.dec(z)[0])


class BatchOfOneAutoencoder(nn.Module):
    """The LSTM autoencoder of a widely copied tutorial (the form of Charlie-Bell/lstm-autoencoder):
    one unbatched [T, F] sequence reshaped to a batch of one, two encoder LSTMs, h_n reshaped to
    [F, E] and repeated T times with x.repeat(T, F), reshaped to [F, T, E], two decoder LSTMs, the
    output reshaped to [T, 2E] and a Linear per step; F = 1."""
    def __init__(self, T, E):
        super().__init__()
        self.T, self.E = T, E
        self.enc1, self.enc2 = nn.LSTM(1, 2 * E, batch_first=True), nn.LSTM(2 * E, E, batch_first=True)
        self.dec1, self.dec2 = nn.LSTM(E, E, batch_first=True), nn.LSTM(E, 2 * E, batch_first=True)
        self.out = nn.Linear(2 * E, 1)

    def forward(self, x):
        y = self.enc1(x.reshape((1, self.T, 1)))[0]
        z = self.enc2(y)[1][0].reshape((1, self.E)).repeat(self.T, 1).reshape((1, self.T, self.E))
        return self.out(self.dec2(self.dec1(z)[0])[0].reshape((self.T, 2 * self.E)))


def keras_repeat_vector(name):
    """A Keras LSTM autoencoder as tf2onnx writes it: LSTM(return_sequences=False) -> RepeatVector(T)
    (an Unsqueeze and a Tile of constant multiples) -> LSTM(return_sequences=True) ->
    TimeDistributed(Dense) (a MatMul and an Add on [B, T, H]), node by node, with torch's weights
    (ONNX's gate order i, o, f, c) so that torch's output is the reference; batch dynamic, T fixed."""
    torch.manual_seed(58)
    B, T, I, L, H, O = 2, 6, 3, 5, 6, 3
    enc, dec, out = nn.LSTM(I, L, batch_first=True), nn.LSTM(L, H, batch_first=True), nn.Linear(H, O)
    x = torch.randn(B, T, I)
    with torch.no_grad():
        h = enc(x)[1][0][-1].unsqueeze(1).repeat(1, T, 1)
        y = out(dec(h)[0])
    order = lambda a: np.concatenate([np.split(a, 4)[k] for k in (0, 3, 1, 2)])
    get = lambda m, n: getattr(m, n).detach().numpy()
    inits = [numpy_helper.from_array(np.ascontiguousarray(v), n) for n, v in [
        ("W_enc", order(get(enc, "weight_ih_l0"))[None]), ("R_enc", order(get(enc, "weight_hh_l0"))[None]),
        ("B_enc", np.concatenate([order(get(enc, "bias_ih_l0")), order(get(enc, "bias_hh_l0"))])[None]),
        ("W_dec", order(get(dec, "weight_ih_l0"))[None]), ("R_dec", order(get(dec, "weight_hh_l0"))[None]),
        ("B_dec", np.concatenate([order(get(dec, "bias_ih_l0")), order(get(dec, "bias_hh_l0"))])[None]),
        ("dense_w", get(out, "weight").T), ("dense_b", get(out, "bias")),
        ("axis0", np.array([0], np.int64)), ("axis1", np.array([1], np.int64)),
        ("multiples", np.array([1, T, 1], np.int64))]]
    nodes = [
        helper.make_node("Transpose", ["x"], ["x_tbf"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["x_tbf", "W_enc", "R_enc", "B_enc"], ["enc_y", "enc_h"], name="lstm/LSTM",
                         hidden_size=L),
        helper.make_node("Squeeze", ["enc_h", "axis0"], ["encoded"], name="lstm/Squeeze"),
        helper.make_node("Unsqueeze", ["encoded", "axis1"], ["expanded"], name="repeat_vector/ExpandDims"),
        helper.make_node("Tile", ["expanded", "multiples"], ["repeated"], name="repeat_vector/Tile"),
        helper.make_node("Transpose", ["repeated"], ["repeated_tbf"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["repeated_tbf", "W_dec", "R_dec", "B_dec"], ["dec_y"], name="lstm_1/LSTM",
                         hidden_size=H),
        helper.make_node("Squeeze", ["dec_y", "axis1"], ["dec_tbf"]),
        helper.make_node("Transpose", ["dec_tbf"], ["dec_btf"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["dec_btf", "dense_w"], ["dense"], name="time_distributed/dense/MatMul"),
        helper.make_node("Add", ["dense", "dense_b"], ["y"], name="time_distributed/dense/BiasAdd"),
    ]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", T, I])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", T, O])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(OUT, name + ".onnx"))
    expect(name, input=rounded(x), input_shape=list(x.shape), output=rounded(y), output_shape=list(y.shape),
           batch_first=True, unbatched=False, opset=13, lstm_output="sequence", front=[], head=["Linear"],
           repeated=[True, False])


def seq2seq_models():
    """Sequence to sequence: an encoder's final state repeated over time into a decoder (item 3 of
    issue 30), compiled with the decoder's input projection once per call; and the forms refused."""
    torch.manual_seed(57)
    x = torch.randn(2, 6, 3)
    program = dict(lstm_output="sequence", front=[], repeated=[True, False])
    import_torch("seq2seq_repeat_h_n", Autoencoder(), 14, x, ["Linear"], dynamic=True, **program)
    import_torch("seq2seq_expand_h_n", Autoencoder(how="expand"), 16, x, ["Linear"], dynamic=True, **program)
    import_torch("seq2seq_last_step_static", Autoencoder(read="y"), 13, x, ["Linear"], **program)
    import_torch("seq2seq_last_step_opset17", Autoencoder(read="y", how="expand", hidden=4), 17, x, ["Linear"],
                 dynamic=True, **program)
    # Two layers each: h_n[-1] of the encoder's stack (torch concatenates every layer's Y_h first).
    import_torch("seq2seq_stacked_h_n", Autoencoder(layers=2), 15, x, ["Linear"], dynamic=True,
                 **dict(program, repeated=[False, True, False, False]))
    keras_repeat_vector("seq2seq_keras_repeat_vector")
    refused = [
        ("seq2seq_refused_count", Autoencoder(count=4), False,
         ["node '/Tile' (Tile): repeats the state 4 times, the model input has 6 steps"]),
        # A GRU autoencoder compiles (imported below, in this place of the draws).
        ("seq2seq_gru_h_n", Autoencoder(cell=nn.GRU), True, None),
        ("seq2seq_refused_bidirectional_encoder", Autoencoder(read="y", bidirectional=True), True,
         ["node '/enc/LSTM' (LSTM): the final state of a bidirectional layer repeated over time is not supported yet"]),
        ("seq2seq_refused_state_passed", Autoencoder(pass_state=True, hidden=5), True,
         ["node '/dec/LSTM' (LSTM): its initial state being node '/enc/LSTM' (LSTM)'s final state (a decoder that "
          "continues the encoder's state) is not supported yet"]),
        ("seq2seq_refused_softmax_over_time", Autoencoder(after=nn.Softmax(dim=1)), True,
         ["node '/after/Softmax' (Softmax)"]),
    ]
    for name, model, dynamic, errors in refused:
        if errors is None:
            import_torch(name, model, 14, x, ["Linear"], dynamic=True, cell="GRU", **program)
            continue
        model.eval()
        with torch.no_grad():
            torch.onnx.export(model, (x,), os.path.join(OUT, name + ".onnx"), opset_version=14, input_names=["x"],
                              output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "time"}} if dynamic else None)
        expect(name, errors=errors)
    # A bottleneck between the encoder's state and the repetition (Linear, activation, Linear), and a
    # layer after the repetition: each runs once, on the one-step state.
    bottleneck = nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 4))
    import_torch("seq2seq_bottleneck_h_n", Autoencoder(before=bottleneck, decoder_input=4), 14, x, ["Linear"],
                 dynamic=True, **dict(program, between=[["Linear", "Relu", "Linear"], []]))
    import_torch("seq2seq_linear_after_repeat",
                 Autoencoder(read="y", how="expand", after=nn.Sequential(nn.Linear(5, 7), nn.Tanh()), decoder_input=7),
                 17, x, ["Linear"], dynamic=True, **dict(program, between=[["Linear", "Tanh"], []]))
    import_torch("seq2seq_batch_of_one_unbatched", BatchOfOneAutoencoder(6, 4), 13, torch.randn(6, 1), ["Linear"],
                 unbatched=True, **dict(program, repeated=[False, True, False, False]))
    model = Autoencoder(cell=nn.RNN).eval()
    with torch.no_grad():
        torch.onnx.export(model, (x,), os.path.join(OUT, "seq2seq_refused_rnn.onnx"), opset_version=14,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "time"}})
    expect("seq2seq_refused_rnn", errors=["an RNN encoder or decoder of a repeated final state is not supported yet"])


GROUPS = {"lstm": [accepted_torch, refused_torch, accepted_plain, refused_plain, programs_torch, whole_models,
                   refused_whole],
          "gru": [gru_models], "rnn": [rnn_models], "import": [import_models], "seq2seq": [seq2seq_models]}


def main():
    os.makedirs(OUT, exist_ok=True)
    for group in ONLY or GROUPS:
        for make in GROUPS[group]:
            make()
    print("wrote", len([f for f in os.listdir(OUT) if f.endswith(".onnx")]), "models to", OUT)


if __name__ == "__main__":
    main()
