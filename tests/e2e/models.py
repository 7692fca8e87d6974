"""Whole torch models around an nn.LSTM, as users write them, and their ONNX export: the patterns
qlstm imports (issue 14). Used by tests/onnx/make_onnx_fixtures.py for the committed fixtures and
by end-to-end tests that build models at run time:

    import models
    m = models.classifier(input_size=8, hidden=16, classes=10)
    models.export(m, models.example_input(m, batch=2, steps=8), "clf.onnx", opset=17)

Every model is an `LstmModel`: per-step `front` layers, the LSTM, what the head reads (`pick`:
the whole sequence, one step of it, or h_n[-1]) and the `head` layers. Needs python3-torch and
python3-onnx (Debian); nothing else.
"""
import torch
import torch.nn as nn


class LstmModel(nn.Module):
    """front (per step) -> LSTM -> pick -> head.

    pick: "seq" (every step: a per-step head), "last" (y[:, -1] / y[-1]), "last_slice" (y[:, -1:]),
    an int k (y[:, k] / y[k]) or "h_n" (h_n[-1]: Y unused). learned_state: a learned initial (h0, c0) of shape
    [layers x directions, state_batch, H] whose rows differ (the batch is then fixed by the model).
    """

    def __init__(self, input_size, hidden, front=(), head=(), pick="seq", num_layers=1,
                 bidirectional=False, batch_first=True, unbatched=False, learned_state_batch=0,
                 lstm_class=nn.LSTM):
        super().__init__()
        self.front = nn.Sequential(*front)
        lstm_in = input_size
        for m in front:
            if isinstance(m, nn.Linear):
                lstm_in = m.out_features
        self.lstm = lstm_class(lstm_in, hidden, num_layers=num_layers, bidirectional=bidirectional,
                               batch_first=batch_first)
        self.head = nn.Sequential(*head)
        self.pick, self.batch_first, self.unbatched = pick, batch_first, unbatched
        self.input_size = input_size
        self.learned = learned_state_batch > 0
        if self.learned:
            rows = num_layers * (2 if bidirectional else 1)
            self.h0 = nn.Parameter(0.5 * torch.randn(rows, learned_state_batch, hidden))
            self.c0 = nn.Parameter(0.5 * torch.randn(rows, learned_state_batch, hidden))
        self.state_batch = learned_state_batch

    def forward(self, x):
        x = self.front(x)
        gru = isinstance(self.lstm, nn.GRU)  # lstm_class=nn.GRU: no cell state
        state = (self.h0 if gru else (self.h0, self.c0)) if self.learned else None
        y, hc = self.lstm(x, state) if self.learned else self.lstm(x)
        h = hc if gru else hc[0]
        if self.pick == "h_n":
            z = h[-1]
        elif self.pick == "seq":
            z = y
        elif self.pick == "last_slice":  # y[:, -1:]: a size-1 time axis
            z = y[-1:] if (self.unbatched or not self.batch_first) else y[:, -1:]
        else:
            k = -1 if self.pick == "last" else int(self.pick)
            z = y[k] if (self.unbatched or not self.batch_first) else y[:, k]
        return self.head(z)


def classifier(input_size=4, hidden=6, classes=3, **kw):
    """LSTM -> y[:, -1] -> Linear -> Softmax."""
    return LstmModel(input_size, hidden, head=[nn.Linear(_width(hidden, kw), classes), nn.Softmax(dim=-1)],
                     pick="last", **kw)


def h_n_mlp(input_size=4, hidden=6, inner=5, outputs=2, **kw):
    """h_n[-1] -> Linear -> ReLU -> Linear."""
    return LstmModel(input_size, hidden, head=[nn.Linear(hidden, inner), nn.ReLU(), nn.Linear(inner, outputs)],
                     pick="h_n", **kw)


def forecaster(input_size=2, hidden=5, outputs=1, **kw):
    """A Linear on every step of the sequence."""
    return LstmModel(input_size, hidden, head=[nn.Linear(_width(hidden, kw), outputs)], pick="seq", **kw)


def front_end(input_size=6, projected=3, hidden=4, **kw):
    """A Linear input projection (and a ReLU) on every step, then the LSTM."""
    return LstmModel(input_size, hidden, front=[nn.Linear(input_size, projected), nn.ReLU()], pick="seq", **kw)


def mlp_head(activation, input_size=3, hidden=5, inner=4, outputs=2, pick="last", **kw):
    """y[:, -1] (or `pick`) -> Linear -> activation -> Linear."""
    return LstmModel(input_size, hidden, head=[nn.Linear(_width(hidden, kw), inner), activation,
                                               nn.Linear(inner, outputs)], pick=pick, **kw)


def _width(hidden, kw):
    return hidden * (2 if kw.get("bidirectional") else 1)


def example_input(model, batch=2, steps=5, seed=0):
    """A fixed input of the model's layout ([B, T, F], [T, B, F] or unbatched [T, F])."""
    g = torch.Generator().manual_seed(seed)
    if model.state_batch:
        batch = model.state_batch
    if model.unbatched:
        shape = (steps, model.input_size)
    elif model.batch_first:
        shape = (batch, steps, model.input_size)
    else:
        shape = (steps, batch, model.input_size)
    return torch.randn(*shape, generator=g)


def export(model, x, path, opset=17):
    """torch.onnx.export in eval mode, input "x", output "y"; returns torch's float output on x."""
    model.eval()
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["x"], output_names=["y"])
    return y
