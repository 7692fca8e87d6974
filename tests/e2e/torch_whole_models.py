#!/usr/bin/python3
"""Whole models end to end with torch at test time: the layers around the LSTM (issue 14).

Each case is a torch model of one pattern — a classifier on the last step, a head on h_n[-1], a
per-step forecaster, a Linear front end, MLP heads with each activation, a step y[:, k], stacked
and bidirectional stacks — exported with torch.onnx.export (both layouts, opsets 13 to 17),
compiled with `qlstm compile`, run with `qlstm run --float` on held-out data the compiler never
saw, and compared with torch's own fp32 output: SQNR >= 30 dB; a classifier's argmax agrees with
torch's on >= 97% of the held-out sequences; a per-step head streamed in random chunks gives the
same bytes as one call. The gru_* cases are the same patterns with an nn.GRU (issue 16). Also:
models outside the scope are refused naming the node.

Usage: torch_whole_models.py QLSTM_BINARY WORKDIR   (exit 77 = skipped: torch, onnx or numpy missing)
"""
import functools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_common import models, nn, np, run, sqnr, torch, work  # noqa: E402  (exits 77 without torch)

rng = np.random.default_rng(3)

SQNR_MIN_DB = 30.0
ARGMAX_AGREEMENT_MIN = 0.97


def trained_forget_bias(lstm):
    """A trained-looking LSTM: a memory-keeping forget bias in every layer and direction (a GRU's
    update gate, the same rows [H:2H] of its biases)."""
    H = lstm.hidden_size
    with torch.no_grad():
        for name, p in lstm.named_parameters():
            if name.startswith("bias_hh"):
                p[H:2 * H] += 1.0


def classifier(I, H, classes, batch_first, layers=1, bidirectional=False, hidden=0, act=None, step="last",
               cell=nn.LSTM):
    """LSTM (or GRU) -> y[:, step] -> [Linear -> act] -> Linear -> Softmax (models.LstmModel)."""
    width = H * (2 if bidirectional else 1)
    mlp = [nn.Linear(width, hidden), act] if hidden else []
    model = models.LstmModel(I, H, head=mlp + [nn.Linear(hidden or width, classes), nn.Softmax(dim=-1)],
                             pick=step, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                             lstm_class=cell)
    trained_forget_bias(model.lstm)
    return model


def forget_biased(model):
    trained_forget_bias(model.lstm)
    return model


def train_classifier(model, I, T, classes, batch_first, steps=150):
    """A few seconds of Adam on a synthetic task (which of `classes` frequencies a noisy sinusoid
    has), so that the logits are those of a trained model, not of random weights."""
    def batch(n, g):
        labels = g.integers(0, classes, n)
        t = np.arange(T)[None, :, None]
        freq = (1 + labels)[:, None, None] * 0.35
        phase = g.uniform(0, 2 * np.pi, (n, 1, I))
        x = np.sin(freq * t + phase) + 0.3 * g.standard_normal((n, T, I))
        x = x.astype(np.float32)
        return (x if batch_first else x.transpose(1, 0, 2)), labels
    g = np.random.default_rng(11)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    softmax = model.head[-1]
    model.head[-1] = nn.Identity()  # train on the logits
    for _ in range(steps):
        x, labels = batch(64, g)
        loss = nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.head[-1] = softmax
    model.eval()
    return batch


def export(model, example, path, opset):
    torch.onnx.export(model, example, path, opset_version=opset, input_names=["x"], output_names=["y"])


failures = 0
passes = 0


def tally(ok):
    global failures, passes
    failures += 0 if ok else 1
    passes += 1 if ok else 0


def check(name, model, I, T, batch_first, opset, classifier=False, data=None, stream=False):
    """Compile on calibration data, run on held-out data, compare with torch."""
    model.eval()
    shape = (lambda b: (b, T, I)) if batch_first else (lambda b: (T, b, I))
    if data is not None:
        calib, _ = data(96, np.random.default_rng(1))
        test, _ = data(200, np.random.default_rng(2))
        calib, test = torch.from_numpy(calib), torch.from_numpy(test)
    else:
        calib, test = torch.randn(*shape(64)) * 0.8, torch.randn(*shape(32)) * 0.8
    base = os.path.join(work, name)
    export(model, torch.randn(*shape(2)), base + ".onnx", opset)
    np.save(base + "_calib.npy", calib.numpy())
    np.save(base + "_test.npy", test.numpy())
    rc, out = run("compile", base + ".onnx", "--calibration", base + "_calib.npy", "-o", base, "--name", name)
    if rc != 0:
        print("FAIL %s: compile exited %d\n%s" % (name, rc, out))
        tally(False)
        return
    qm = os.path.join(base, name + ".qlstm")
    rc, out = run("run", qm, "--input", base + "_test.npy", "--output", base + "_y.npy", "--float")
    if rc != 0:
        print("FAIL %s: run exited %d\n%s" % (name, rc, out))
        tally(False)
        return
    with torch.no_grad():
        ref = model(test).numpy()
    got = np.load(base + "_y.npy")
    ok = got.shape == ref.shape
    s = sqnr(ref, got) if ok else float("nan")
    ok = ok and s >= SQNR_MIN_DB
    detail = "SQNR %.2f dB vs torch fp32, output %s" % (s, "x".join(map(str, got.shape)))
    # The compile report's held-out estimate of the model output (k-fold over the calibration set).
    with open(os.path.join(base, name + "_report.json")) as f:
        held = json.load(f)["held_out"]
    if held.get("method") != "k-fold":
        ok = False
        detail += "; the report has no held-out estimate (%s)" % held.get("note")
    else:
        detail += "; report held out %.2f +- %.2f dB" % (held["sqnr_db"], held["standard_error_db"])
    if classifier and got.shape == ref.shape:
        agree = float(np.mean(np.argmax(ref, -1) == np.argmax(got, -1)))
        ok = ok and agree >= ARGMAX_AGREEMENT_MIN
        detail += ", argmax agreement %.1f%% over %d held-out sequences" % (100 * agree, ref.shape[0])
    if stream:
        x8 = base + "_x8.npy"
        np.save(x8, np.clip(np.round(test.numpy() / 0.05), -128, 127).astype(np.int8))
        rc, out = run("run", qm, "--input", x8, "--output", base + "_y8.npy")
        one = np.load(base + "_y8.npy") if rc == 0 else None
        for _ in range(3):
            chunk = int(rng.integers(1, T + 1))
            rc2, out2 = run("run", qm, "--input", x8, "--output", base + "_ys8.npy", "--chunk", chunk)
            if one is None or rc2 != 0 or not np.array_equal(np.load(base + "_ys8.npy"), one):
                ok = False
                detail += "; chunks of %d differ from one call (%s)" % (chunk, out + out2)
        detail += "; streamed in random chunks == one call"
    tally(ok)
    print("%s %s: %s opset %d: %s" % ("PASS" if ok else "FAIL", name, "batch_first" if batch_first else "seq_first",
                                      opset, detail))


# Classifiers, trained for a few seconds each (argmax agreement needs a model with real margins).
for name, I, H, T, C, bf, opset, kw in [
    ("cls_last", 4, 16, 20, 4, True, 13, {}),
    ("cls_last_seqfirst", 4, 16, 20, 4, False, 14, {}),
    ("cls_relu_mlp", 3, 12, 16, 3, True, 15, {"hidden": 16, "act": nn.ReLU()}),
    ("cls_relu6_mlp", 3, 12, 16, 3, False, 16, {"hidden": 16, "act": nn.ReLU6()}),
    ("cls_tanh_mlp", 3, 12, 16, 3, True, 17, {"hidden": 12, "act": nn.Tanh()}),
    ("cls_sigmoid_mlp", 3, 12, 16, 3, True, 13, {"hidden": 12, "act": nn.Sigmoid()}),
    ("cls_hardsigmoid_mlp", 3, 12, 16, 3, False, 14, {"hidden": 12, "act": nn.Hardsigmoid()}),
    ("cls_leakyrelu_mlp", 3, 12, 16, 3, True, 15, {"hidden": 12, "act": nn.LeakyReLU(0.1)}),
    ("cls_stacked", 4, 12, 16, 4, True, 16, {"layers": 2}),
    ("cls_bidirectional", 4, 10, 16, 4, True, 17, {"bidirectional": True}),
    ("cls_step_k", 4, 12, 16, 4, True, 15, {"step": 11}),
    # The same patterns with an nn.GRU (issue 16).
    ("gru_cls_last", 4, 16, 20, 4, True, 13, {"cell": nn.GRU}),
    ("gru_cls_last_seqfirst", 4, 16, 20, 4, False, 14, {"cell": nn.GRU}),
    ("gru_cls_relu_mlp", 3, 12, 16, 3, True, 15, {"hidden": 16, "act": nn.ReLU(), "cell": nn.GRU}),
    ("gru_cls_stacked", 4, 12, 16, 4, True, 16, {"layers": 2, "cell": nn.GRU}),
    ("gru_cls_bidirectional", 4, 10, 16, 4, True, 17, {"bidirectional": True, "cell": nn.GRU}),
    # And with an nn.RNN, tanh and ReLU (issue 30, item 5).
    ("rnn_cls_last", 4, 16, 20, 4, True, 14, {"cell": nn.RNN}),
    ("rnn_relu_cls_stacked_bidirectional", 4, 12, 16, 4, False, 17,
     {"layers": 2, "bidirectional": True, "cell": functools.partial(nn.RNN, nonlinearity="relu")}),
]:
    torch.manual_seed(len(name))
    model = classifier(I, H, C, bf, **kw)
    data = train_classifier(model, I, T, C, bf)
    check(name, model, I, T, bf, opset, classifier=True, data=data)

# Heads on h_n[-1], per-step heads, a Linear front end.
torch.manual_seed(5)
check("hn_mlp", forget_biased(models.h_n_mlp(5, 16, inner=12, outputs=3, batch_first=True)), 5, 24, True, 14)
check("hn_mlp_seqfirst", forget_biased(models.h_n_mlp(5, 16, inner=12, outputs=3, batch_first=False, num_layers=2)),
      5, 24, False, 17)
check("per_step", forget_biased(models.forecaster(3, 16, outputs=2, batch_first=True)), 3, 30, True, 13, stream=True)
check("per_step_seqfirst", forget_biased(models.forecaster(3, 16, outputs=1, batch_first=False)), 3, 30, False, 16,
      stream=True)
check("front_linear", forget_biased(models.LstmModel(6, 12, front=[nn.Linear(6, 8)], head=[nn.Linear(12, 2)])),
      6, 20, True, 15, stream=True)
check("front_linear_relu", forget_biased(models.LstmModel(6, 12, front=[nn.Linear(6, 8), nn.ReLU()],
                                                          head=[nn.Linear(12, 2)], batch_first=False)),
      6, 20, False, 17)
# GRU heads after the LSTM cases (they draw from the same torch generator).
check("gru_hn_mlp", forget_biased(models.h_n_mlp(5, 16, inner=12, outputs=3, batch_first=True, lstm_class=nn.GRU)),
      5, 24, True, 14)
check("gru_hn_mlp_seqfirst", forget_biased(models.h_n_mlp(5, 16, inner=12, outputs=3, batch_first=False, num_layers=2,
                                                          lstm_class=nn.GRU)), 5, 24, False, 17)
check("gru_per_step", forget_biased(models.forecaster(3, 16, outputs=2, batch_first=True, lstm_class=nn.GRU)), 3, 30,
      True, 13, stream=True)
check("gru_front_linear", forget_biased(models.LstmModel(6, 12, front=[nn.Linear(6, 8)], head=[nn.Linear(12, 2)],
                                                         lstm_class=nn.GRU)), 6, 20, True, 15, stream=True)




# Attention pooling over time, a LayerNorm on the pooled row, a Linear (issue 30, items 1 and 6).
class LayerNormAttention(nn.Module):
    def __init__(self, I, H, C, batch_first):
        super().__init__()
        self.lstm = nn.LSTM(I, H, batch_first=batch_first)
        self.norm, self.score, self.out = nn.LayerNorm(H), nn.Linear(H, 1), nn.Linear(H, C)
        self.time = 1 if batch_first else 0

    def forward(self, x):
        y = self.lstm(x)[0]
        w = torch.softmax(self.score(y), dim=self.time)
        return self.out(self.norm(torch.sum(w * y, dim=self.time)))


check("layer_norm_attention", forget_biased(LayerNormAttention(4, 12, 3, True)), 4, 20, True, 14)
check("layer_norm_attention_seqfirst", forget_biased(LayerNormAttention(4, 12, 3, False)), 4, 20, False, 17)


# LSTM autoencoders (issue 30, item 3): the encoder's final state repeated over the input's steps
# as the decoder's input, a Linear per step; trained for a few seconds to reconstruct noisy
# sinusoids, then compared with torch on held-out ones.
class Autoencoder(nn.Module):
    def __init__(self, I, latent, H, batch_first, read="h_n", how="repeat", bottleneck=None, cell=nn.LSTM):
        super().__init__()
        self.enc = cell(I, latent, batch_first=batch_first)
        # A Linear and Tanh on the encoder's state before the repetition (a latent bottleneck).
        self.mid = nn.Sequential(nn.Linear(latent, bottleneck), nn.Tanh()) if bottleneck else nn.Identity()
        self.dec = cell(bottleneck or latent, H, batch_first=batch_first)
        self.out = nn.Linear(H, I)
        self.read, self.how, self.time = read, how, 1 if batch_first else 0

    def forward(self, x):
        y, state = self.enc(x)
        h = state[0] if isinstance(state, tuple) else state
        T = x.shape[self.time]
        if self.read == "h_n":
            z = self.mid(h[-1]).unsqueeze(self.time)
        else:
            z = self.mid(y[:, -1:] if self.time == 1 else y[-1:])
        reps = [1, 1, 1]
        reps[self.time] = T
        z = z.repeat(*reps) if self.how == "repeat" else z.expand(*[r if r > 1 else -1 for r in reps])
        return self.out(self.dec(z)[0])


def train_autoencoder(model, I, T, batch_first, steps=200):
    def batch(n, g):
        t = np.arange(T, dtype=np.float32)[None, :, None]
        freq = g.uniform(0.1, 0.5, (n, 1, I)).astype(np.float32)
        phase = g.uniform(0, 6.28, (n, 1, I)).astype(np.float32)
        x = (np.sin(freq * t + phase) + 0.1 * g.standard_normal((n, T, I))).astype(np.float32)
        return (x if batch_first else np.ascontiguousarray(x.transpose(1, 0, 2))), None
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = np.random.default_rng(7)
    for _ in range(steps):
        x = torch.from_numpy(batch(32, g)[0])
        loss = torch.mean((model(x) - x) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return batch


torch.manual_seed(9)
for name, I, latent, H, T, bf, opset, kw in [
    ("seq2seq_repeat_h_n", 3, 8, 12, 24, True, 14, {}),
    ("seq2seq_expand_last_step_seqfirst", 2, 6, 10, 20, False, 17, {"read": "y", "how": "expand"}),
    ("seq2seq_bottleneck_h_n", 4, 12, 12, 20, True, 15, {"bottleneck": 5}),
    ("seq2seq_gru_h_n", 3, 10, 12, 20, True, 14, {"cell": nn.GRU}),
]:
    model = Autoencoder(I, latent, H, bf, **kw)
    check(name, model, I, T, bf, opset, data=train_autoencoder(model, I, T, bf))


# Outside the scope: refused, naming the node and what to do, with no model written.
class LayerNormHead(nn.Module):
    """A LayerNorm over the steps and the features together: not per position."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.norm = nn.LayerNorm((10, 8))
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(self.norm(self.lstm(x)[0])[:, -1])


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)

    def forward(self, x):
        y = self.lstm(x)[0]
        w = torch.softmax(torch.matmul(y, y.transpose(1, 2)), dim=-1)
        return torch.matmul(w, y)


for name, model, expect in [("refuse_layernorm", LayerNormHead(), "LayerNormalization"),
                            ("refuse_attention", Attention(), "MatMul")]:
    base = os.path.join(work, name)
    export(model.eval(), torch.randn(2, 10, 4), base + ".onnx", 17)  # 17: LayerNorm as one node
    np.save(base + "_calib.npy", np.random.default_rng(0).standard_normal((8, 10, 4)).astype(np.float32))
    rc, out = run("compile", base + ".onnx", "--calibration", base + "_calib.npy", "-o", base, "--name", name)
    written = os.path.exists(os.path.join(base, name + ".qlstm"))
    ok = rc == 1 and expect in out and not written
    tally(ok)
    print("%s %s: exit %d, %s%s" % ("PASS" if ok else "FAIL", name, rc, out.strip().splitlines()[0] if out.strip()
                                     else "(no message)", "; a model file was written" if written else ""))

print("%d passed, %d failed" % (passes, failures))
sys.exit(1 if failures else 0)
