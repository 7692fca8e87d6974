#!/usr/bin/python3
"""Makes tests/corpus/models/ from corpus.CORPUS with Debian's python3-torch: per entry its model
(Published: this project's one module for the architectures the corpus cites), trained on its
task's synthetic data for a few hundred steps, exported as its repository exports it, and
torch's outputs on the held-out sequences (NAME.torch_out.npy; classify: NAME.labels.npy too).

    /usr/bin/python3 tests/corpus/make_corpus.py [OUT] [--only NAME]
"""
import copy
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

TRAIN_STEPS = 300
TRAIN_BATCH = 32


def layer_modules(spec, width):
    """The modules of a list of layers ("linear:N", "bn", "ln", "relu", "tanh", "dropout:P") on `width`
    features, and the width they end with."""
    out = []
    for layer in spec:
        kind, _, arg = layer.partition(":")
        if kind == "linear":
            out.append(nn.Linear(width, int(arg)))
            width = int(arg)
        elif kind == "bn":
            out.append(nn.BatchNorm1d(width))
        elif kind == "ln":
            out.append(nn.LayerNorm(width))
        elif kind == "relu":
            out.append(nn.ReLU())
        elif kind == "tanh":
            out.append(nn.Tanh())
        else:
            out.append(nn.Dropout(float(arg)))
    return out, width


class Published(nn.Module):
    """An entry's architecture: its recurrent modules in turn, what forward reads of the last, an
    MLP head and its last activation, the state made as the repository makes it."""

    def __init__(self, e):
        super().__init__()
        self.e = e
        cell = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[e["cell"]]
        # nn.RNN's activation: tanh unless the entry says "relu" (the other cells take no such argument)
        extra = {"nonlinearity": e.get("nonlinearity", "tanh")} if e["cell"] == "rnn" else {}
        self.embed = nn.Embedding(e["vocab"], e["I"], padding_idx=0) if "vocab" in e else nn.Identity()
        d = 2 if e["bidirectional"] else 1
        modules, width = [], e["I"]
        for hidden, layers in e["stack"]:
            modules.append(cell(width, hidden, num_layers=layers, bidirectional=e["bidirectional"],
                                batch_first=e["batch_first"], dropout=e["dropout"] if layers > 1 else 0.0, **extra))
            width = d * hidden
        self.rnns = nn.ModuleList(modules)
        hidden, layers = e["stack"][-1]
        width = hidden * (1 if e["read"] in ("h_n", "h_n_squeeze") else d)
        # an autoencoder's latent layers, between the encoder's final state and the repetition
        bottleneck, width = layer_modules(e.get("bottleneck", []), width)
        self.bottleneck = nn.Sequential(*bottleneck)
        decoders = []
        for hidden, layers in e.get("decoder", []):
            decoders.append(cell(width, hidden, num_layers=layers, batch_first=True,
                                 dropout=e["dropout"] if layers > 1 else 0.0))
            width = hidden
        self.decoders = nn.ModuleList(decoders)
        head, width = layer_modules(e["head"], width)
        head.append(nn.Linear(width, e["out"]))
        self.head = nn.Sequential(*head)

    def state(self, x, hidden, layers):
        rows = layers * (2 if self.e["bidirectional"] else 1)
        h0 = torch.zeros(rows, x.size(0) if self.e["batch_first"] else x.size(1), hidden)
        return (h0, torch.zeros_like(h0)) if self.e["cell"] == "lstm" else h0  # GRU, RNN: no cell state

    def forward(self, x):
        e = self.e
        if e.get("unbatched") and x.dim() == 2:
            return self.forward_unbatched(x)
        x = self.embed(x)
        shared = self.state(x, *e["stack"][0]) if e["state"] == "zeros_shared" else None
        y = x
        for rnn, (hidden, layers) in zip(self.rnns, e["stack"]):
            if e["state"] == "zeros":
                y, state = rnn(y, self.state(y, hidden, layers))
            elif shared is not None:
                y, state = rnn(y, shared)
            else:
                y, state = rnn(y)
        h_n = state[0] if e["cell"] == "lstm" else state
        read = e["read"]
        if "decoder" in e:
            # the encoder's final state (through the bottleneck's layers, if any), repeated over the
            # input's steps (or the model's own constant seq_len), is the decoder's input
            if read == "h_n":
                z = self.bottleneck(h_n[-1]).unsqueeze(1)
            else:
                z = self.bottleneck(y[:, -1]).unsqueeze(1) if e.get("bottleneck") else y[:, -1:]
            steps = e["T"] if e.get("repeat_steps") == "fixed" else x.shape[1]
            z = z.repeat(1, steps, 1) if e["repeat"] == "repeat" else z.expand(-1, steps, -1)
            for rnn in self.decoders:
                z, _ = rnn(z)
        elif read == "last":
            z = y[:, -1, :] if e["batch_first"] else y[-1]
        elif read == "h_n":
            z = h_n[-1]
        elif read == "h_n_squeeze":
            z = h_n.squeeze(0)
        elif read == "mean":
            z = y.mean(dim=1 if e["batch_first"] else 0)
        elif read == "last_k":
            z = y[:, -e["k"]:, :] if e["batch_first"] else y[-e["k"]:]
        elif read == "max":
            z = y.max(dim=1 if e["batch_first"] else 0).values
        elif read == "cat_h_n":
            z = torch.cat((h_n[-2], h_n[-1]), dim=1)
        elif read == "view_cat_h_n":
            hidden, layers = e["stack"][-1]
            last = h_n.view(layers, 2, h_n.size(1), hidden)[-1]
            z = torch.cat((last[0], last[1]), dim=1)
        else:
            z = y
        z = self.head(z)
        if e["final"] == "sigmoid":
            z = torch.sigmoid(z)
        elif e["final"] == "softmax":
            z = torch.softmax(z, dim=-1)
        elif e["final"] == "log_softmax":
            z = torch.log_softmax(z, dim=-1)
        return z

    def forward_unbatched(self, x):
        """One [T, I] sequence, as the tutorial autoencoder (corpus.py, "unbatched") runs it: a batch
        of one made by reshapes, the encoder's h_n reshaped and repeated T times, the decoder's
        output reshaped to [T, H] for the head, its one feature squeezed with .squeeze() as the
        repository writes it. The same per sequence as forward() on a
        [B, T, I] batch (h_n[-1] repeated over T), which trains it."""
        e = self.e
        T, I = e["T"], e["I"]
        y = x.reshape((1, T, I))
        for rnn in self.rnns:
            y, (h_n, _) = rnn(y)
        hidden = e["stack"][-1][0]
        z = h_n.reshape((I, hidden)).repeat(T, 1).reshape((1, T, hidden))
        for rnn in self.decoders:
            z, _ = rnn(z)
        return self.head(z.reshape((T, e["decoder"][-1][0]))).squeeze()


def unbatched_outputs(model, x):
    """torch's outputs of an unbatched model on [N, T, I]: each sequence run alone, stacked."""
    return torch.stack([model(torch.from_numpy(s)) for s in x])


def train(model, e):
    """A few hundred Adam steps on the task: cross-entropy on the logits (before the final
    activation) for a classifier, mean squared error for a regressor or an autoencoder."""
    final = e.get("final", "none")
    e_train = dict(e, final="none")
    model.e = e_train
    opt = torch.optim.Adam(model.parameters(), lr=e.get("lr", 0.005))
    rng_seed = corpus.TRAIN_SEED
    for step in range(e.get("train_steps", TRAIN_STEPS)):
        x, y = corpus.sequences(e, TRAIN_BATCH, rng_seed * 100000 + step)
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        out = model(x)
        if e["read"] in ("every", "every_classify") and not e["batch_first"]:
            out = out.transpose(0, 1)
        if e["task"] == "classify":
            loss = nn.functional.cross_entropy(out.reshape(-1, e["out"]), y.reshape(-1))
        elif e["task"] == "binary":
            loss = nn.functional.binary_cross_entropy_with_logits(out.reshape(-1), y.float())
        elif e["read"] == "last_k":
            loss = nn.functional.mse_loss(out.reshape(y.shape), y)  # [B, k, 1] against [B, k], as squeezed
        else:
            loss = nn.functional.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.e = dict(e, final=final)
    return float(loss)


def int8_weights(model):
    """A copy of the model whose weight matrices are rounded to int8 per output row (scale: the row's
    largest magnitude over 127); biases and norms kept."""
    q = copy.deepcopy(model)
    with torch.no_grad():
        for p in q.parameters():
            if p.dim() == 2:
                scale = p.abs().amax(1, keepdim=True) / 127
                scale[scale == 0] = 1
                p.copy_(torch.round(p / scale) * scale)
    return q


def export(model, e, path):
    x, _ = corpus.sequences(e, 2, 99)
    if e.get("unbatched"):
        x = x[0]  # one [T, I] sequence, as the model is called
    axes = {"none": None,
            "batch": {"x": {0 if e["batch_first"] else 1: "batch"}},
            "batch_time": {"x": {0: "batch", 1: "time"} if e["batch_first"] else {0: "time", 1: "batch"}}}[e["dynamic"]]
    torch.onnx.export(model, (torch.from_numpy(x),), path, opset_version=e["opset"], input_names=["x"],
                      output_names=["y"], dynamic_axes=axes)


def make(e, out):
    torch.manual_seed(sum(map(ord, e["name"])))
    model = Published(e)
    loss = train(model, e)
    model.eval()
    export(model, e, os.path.join(out, e["name"] + ".onnx"))
    x, y = corpus.sequences(e, corpus.TEST_SEQUENCES, corpus.TEST_SEED)
    with torch.no_grad():
        if e.get("unbatched"):
            torch_out = unbatched_outputs(model, x).numpy().astype(np.float32)
            # the reshaped form computes what the batched one trained
            batched = model(torch.from_numpy(x)).numpy().reshape(torch_out.shape)
            assert np.allclose(torch_out, batched, atol=1e-5), float(np.abs(torch_out - batched).max())
        else:
            torch_out = model(torch.from_numpy(x)).numpy().astype(np.float32)
    np.save(os.path.join(out, e["name"] + ".torch_out.npy"), torch_out)
    if e.get("weights_bound"):
        # The same model with its weight matrices quantized to int8 (symmetric, per output row) and
        # run in float: how close any int8-weight model can come to torch.
        with torch.no_grad():
            np.save(os.path.join(out, e["name"] + ".int8_weights_out.npy"),
                    int8_weights(model)(torch.from_numpy(x)).numpy().astype(np.float32))
    metric = ""
    if corpus.is_classifier(e):
        np.save(os.path.join(out, e["name"] + ".labels.npy"), y)
        metric = "accuracy %.3f" % float((corpus.predicted(e, torch_out) == y).mean())
    print("%s: trained (final loss %.4f), %s, exported at opset %d" % (e["name"], loss, metric, e["opset"]))


def main():
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        k = args.index("--only")
        only = args[k + 1]
        del args[k:k + 2]
    out = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
    os.makedirs(out, exist_ok=True)
    for e in corpus.CORPUS:
        if only is None or e["name"] == only:
            make(e, out)
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump({"generator": "tests/corpus/make_corpus.py", "entries": corpus.CORPUS}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
