#!/usr/bin/python3
"""Compiles every model of the corpus (tests/corpus/models, corpus.CORPUS) with qlstm on its
calibration sequences and compares its int8 outputs on the held-out sequences with torch's:
SQNR against torch, and for a classifier the top-1 accuracy of both and their argmax agreement.
An entry passes when its SQNR is at least 30 dB, or (a classifier) when int8 keeps torch's
accuracy to within one sequence in a hundred, or (a regressor whose weights alone, quantized to
int8 per output row in float, cap the SQNR below 30 dB: NAME.int8_weights_out.npy, made by
make_corpus.py) when int8 keeps torch's RMSE against the held-out targets to within 1%.

    run_corpus.py QLSTM WORK [--markdown FILE]

Prints one line per model and last "N passed, M failed"; exit 1 when one failed. --markdown writes
the table docs/accuracy.md carries.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import corpus  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "models")
MIN_SQNR_DB = 30.0
ACCURACY_SLACK = 0.01
RMSE_SLACK = 0.01


def rmse(out, targets):
    return float(np.sqrt(np.mean((out.reshape(targets.shape).astype(np.float64) - targets) ** 2)))


def evaluate(qlstm, work, e):
    name = e["name"]
    cal, _ = corpus.sequences(e, corpus.CALIBRATION_SEQUENCES, corpus.CALIBRATION_SEED)
    test, targets = corpus.sequences(e, corpus.TEST_SEQUENCES, corpus.TEST_SEED)
    cal_path, test_path = os.path.join(work, name + ".cal.npy"), os.path.join(work, name + ".test.npy")
    np.save(cal_path, cal)
    np.save(test_path, test)
    rc, out = common.run([qlstm, "compile", os.path.join(MODELS, name + ".onnx"), "--calibration", cal_path, "-o",
                          work, "--name", name] + e.get("compile_args", []))
    if rc != 0:
        return {"name": name, "ok": False, "why": "compile exit %d: %s" % (rc, common.last_line(out))}
    out_path = os.path.join(work, name + ".out.npy")
    rc, out = common.run([qlstm, "run", os.path.join(work, name + ".qlstm"), "--input", test_path, "--output",
                          out_path, "--float"])
    if rc != 0:
        return {"name": name, "ok": False, "why": "run exit %d: %s" % (rc, common.last_line(out))}
    ref = np.load(os.path.join(MODELS, name + ".torch_out.npy"))
    got = np.load(out_path).reshape(ref.shape)
    r = {"name": name, "sqnr": common.sqnr_db(ref, got)}
    if corpus.is_classifier(e):
        labels = np.load(os.path.join(MODELS, name + ".labels.npy"))
        r["acc_torch"] = float((corpus.predicted(e, ref) == labels).mean())
        r["acc_int8"] = float((corpus.predicted(e, got) == labels).mean())
        r["agree"] = float((corpus.predicted(e, ref) == corpus.predicted(e, got)).mean())
    bound_path = os.path.join(MODELS, name + ".int8_weights_out.npy")
    kept_task = corpus.is_classifier(e) and r["acc_int8"] >= r["acc_torch"] - ACCURACY_SLACK
    if e["task"] == "regress" and os.path.exists(bound_path):
        # What int8 weights alone allow (in float), and the task's own error of both.
        r["weights_bound"] = common.sqnr_db(ref, np.load(bound_path).reshape(ref.shape))
        r["rmse_torch"], r["rmse_int8"] = rmse(ref, targets), rmse(got, targets)
        kept_task = r["weights_bound"] < MIN_SQNR_DB and r["rmse_int8"] <= r["rmse_torch"] * (1 + RMSE_SLACK)
    r["ok"] = r["sqnr"] >= MIN_SQNR_DB or kept_task
    return r


READS = {"mean": "y.mean(1)", "max": "y.max(1).values", "last": "y[:, -1]", "h_n": "h_n[-1]", "h_n_squeeze": "h_n.squeeze(0)", "cat_h_n": "cat(h_n[-2], h_n[-1])",
         "view_cat_h_n": "h_n.view(L, 2, B, H)[-1], cat", "every": "every step", "every_classify": "every step", "last_k": "y[:, -k:]"}


def stack_text(stack):
    return " + ".join("%d x %d" % (layers, hidden) for hidden, layers in stack)


def bottleneck_text(e, width):
    """An autoencoder's layers between the encoder's state and the repetition: " -> Linear 64->16 -> ReLU"."""
    text = ""
    for layer in e.get("bottleneck", []):
        kind, _, arg = layer.partition(":")
        if kind == "linear":
            text += " -> Linear %d->%s" % (width, arg)
            width = int(arg)
        else:
            text += " -> " + {"relu": "ReLU", "tanh": "Tanh"}[kind]
    return text


def describe(e):
    read = ("y[-1]" if e["read"] == "last" and not e["batch_first"] else
            READS[e["read"]].replace("k", str(e.get("k"))) if e["read"] == "last_k" else READS[e["read"]] + (", LayerNorm" if "ln" in e["head"] else ""))
    if "decoder" in e:
        # sequence to sequence: what is repeated over the input's steps (through the bottleneck's
        # layers, if any), then the decoder the head reads every step of
        hidden = e["stack"][-1][0]
        width = hidden * (2 if e["bidirectional"] and e["read"] != "h_n" else 1)
        if e.get("unbatched"):
            # the tutorial's reshapes: h_n to [1, H], .repeat(T, 1), to [1, T, H]
            state = "h_n reshaped to [1, %d], .repeat(T, 1) to [1, T, %d]" % (hidden, hidden)
        else:
            state = "%s%s %s over T" % ("h_n[-1]" if e["read"] == "h_n" else
                                        "y[:, -1]" if e.get("bottleneck") else "y[:, -1:]",
                                        bottleneck_text(e, width) + ("," if e.get("bottleneck") else ""),
                                        "repeated" if e["repeat"] == "repeat" else "expanded")
        read = "%s -> %s %s, every step" % (state, e["cell"].upper(), stack_text(e["decoder"]))
    return "%s%s%s %s (I %d)%s, T %d, %s -> %d%s" % (
        "Embedding %d -> " % e["vocab"] if "vocab" in e else "",
        "bi" if e["bidirectional"] else "", e["cell"].upper(), stack_text(e["stack"]), e["I"],
        ", unbatched [T, I] reshaped to [1, T, I]" if e.get("unbatched") else "" if e["batch_first"] else ", seq-first",
        e["T"], read, e["out"], "" if e["final"] == "none" else ", " + e["final"])


def markdown(results):
    lines = ["| model | from (repository, file, class) | architecture | SQNR vs torch | top-1 torch / int8 (agreement), or RMSE torch / int8 |",
             "|---|---|---|---|---|"]
    for e, r in results:
        acc = ("%.0f%% / %.0f%% (%.0f%%)" % (100 * r["acc_torch"], 100 * r["acc_int8"], 100 * r["agree"])
               if "acc_torch" in r else "")
        if "weights_bound" in r:
            acc = "RMSE %.4f / %.4f; int8 weights alone: %.1f dB" % (r["rmse_torch"], r["rmse_int8"], r["weights_bound"])
        lines.append("| `%s` | %s, `%s`, `%s` | %s | %.1f dB | %s |" % (
            e["name"], e["repo"], e["file"], e["cls"], describe(e), r["sqnr"], acc))
    return "\n".join(lines) + "\n"


def main():
    args = sys.argv[1:]
    md = None
    if "--markdown" in args:
        k = args.index("--markdown")
        md = args[k + 1]
        del args[k:k + 2]
    qlstm, work = args
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(MODELS, "corpus.json")) as f:
        if json.load(f)["entries"] != corpus.CORPUS:
            print("FAIL tests/corpus/models/corpus.json differs from corpus.CORPUS: run make_corpus.py")
            return 1
    results, failed = [], 0
    for e in corpus.CORPUS:
        r = evaluate(qlstm, work, e)
        if "sqnr" in r:
            acc = (", top-1 torch %.3f int8 %.3f, argmax agreement %.3f" % (r["acc_torch"], r["acc_int8"], r["agree"])
                   if "acc_torch" in r else "")
            if "weights_bound" in r:
                acc = (", int8 weights alone %.2f dB; RMSE against the targets torch %.4f int8 %.4f" %
                       (r["weights_bound"], r["rmse_torch"], r["rmse_int8"]))
            print("%s %s (%s): SQNR %.2f dB vs torch%s" % ("ok  " if r["ok"] else "FAIL", e["name"], e["repo"],
                                                         r["sqnr"], acc))
        else:
            print("FAIL %s (%s): %s" % (e["name"], e["repo"], r["why"]))
        failed += 0 if r["ok"] else 1
        results.append((e, r))
    return common.finish(results, failed, md, markdown)


if __name__ == "__main__":
    sys.exit(main())
