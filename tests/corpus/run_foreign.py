#!/usr/bin/python3
"""Compiles every file of the foreign corpus (tests/corpus/foreign, foreign.FOREIGN) with qlstm on
calibration inputs and compares its int8 outputs on held-out inputs with ONNX Runtime's float
outputs (onnxruntime-node, installed by scripts/ort.sh): the reference is independent of qlstm's
own importer and float model. An entry passes when its SQNR against ONNX Runtime is at least 30 dB,
or (a classifier) when int8 and ONNX Runtime agree on the class of at least 99 sequences in 100,
or (a detector) on whether each step is a detection, at the repository's threshold, for at least
99 steps in 100.
qlstm eval's SQNR against qlstm's own float model is printed beside it: the two agree when the
importer reads the file as ONNX Runtime does.

    run_foreign.py QLSTM WORK ORT_NODE_MODULES [--markdown FILE | --only NAME]
    run_foreign.py QLSTM WORK --smoke   (the sanitized build: each compiled and run, no figures)

Prints one line per file and last "N passed, M failed"; exit 1 when one failed, 77 (skipped, saying
why) without node or onnxruntime-node. --markdown writes the table docs/accuracy.md carries.
"""
import hashlib
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import foreign  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "foreign")
ORT_RUN = os.path.join(FILES, "ort_run.js")
MIN_SQNR_DB = 30.0
MIN_AGREEMENT = 0.99
# A "report" entry's check: qlstm's own float model scores the int8 output within this of ONNX
# Runtime's (the importer reads the file as ONNX Runtime does).
MAX_FLOAT_GAP_DB = 0.05
SMOKE_SEQUENCES = 8


def onnx_runtime(entry, model, x, work, modules):
    """ONNX Runtime's first output on x, joined over the calls along the output's batch axis (the
    input's when the output keeps its layout, else 0)."""
    raw, out = os.path.join(work, entry["name"] + ".test.f32"), os.path.join(work, entry["name"] + ".ort.f32")
    x.tofile(raw)
    axis = foreign.batch_axis(entry)
    per_call = entry["call_batch"] or x.shape[axis]
    rc, text = common.run(["node", ORT_RUN, model, raw, ",".join(map(str, x.shape)), str(axis), str(per_call), out],
                   env=dict(os.environ, QLSTM_ORT_NODE_MODULES=modules))
    if rc != 0:
        raise RuntimeError("onnxruntime-node exit %d: %s" % (rc, common.last_line(text)))
    shapes = json.loads(text.strip().splitlines()[-1])
    flat, parts, k = np.fromfile(out, dtype=np.float32), [], 0
    for s in shapes:
        n = int(np.prod(s))
        parts.append(flat[k:k + n].reshape(s))
        k += n
    out_axis = axis if len(shapes[0]) == 3 else 0
    return np.concatenate(parts, axis=out_axis)


def int8_weights_copy(model, out):
    """The file with each recurrent node's W and R, and each MatMul's or Gemm's weight stored as an initializer,
    rounded to int8 per output row (symmetric, round to nearest): what int8 weights alone allow,
    run in float by ONNX Runtime."""
    import onnx
    from onnx import numpy_helper

    def per_row(a, rows_axis):
        moved = np.moveaxis(a.astype(np.float64), rows_axis, -2)  # [..., rows, inputs]
        amax = np.abs(moved).max(axis=-1, keepdims=True)
        scale = np.where(amax > 0, amax / 127.0, 1.0)
        q = np.clip(np.round(moved / scale), -127, 127) * scale
        return np.moveaxis(q, -2, rows_axis).astype(np.float32)

    m = onnx.load(model)
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type in ("LSTM", "GRU", "RNN"):
            targets = [(n.input[1], 1), (n.input[2], 1)]  # W, R: [directions, gates x H, inputs]
        elif n.op_type in ("MatMul", "Gemm") and len(n.input) > 1:
            trans_b = any(a.name == "transB" and a.i == 1 for a in n.attribute)
            targets = [(n.input[1], 0 if trans_b else 1)]  # output rows: Gemm's transposed B, else columns
        else:
            continue
        for name, rows_axis in targets:
            t = inits.get(name)
            if t is None or len(t.dims) < 2:
                continue
            a = numpy_helper.to_array(t)
            q = per_row(a, rows_axis) if rows_axis < a.ndim - 1 else per_row(a.T, 0).T
            t.CopyFrom(numpy_helper.from_array(q.astype(np.float32), name))
    onnx.save(m, out)


def evaluate(qlstm, work, modules, e):
    name = e["name"]
    model = os.path.join(FILES, name + ".onnx")
    with open(model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != e["sha256"]:
        return {"ok": False, "why": "%s is not the committed file (sha256 %s, expected %s)" % (model, digest,
                                                                                              e["sha256"])}
    cal = foreign.inputs(e, foreign.CALIBRATION_SEQUENCES, foreign.CALIBRATION_SEED)
    test = foreign.inputs(e, foreign.TEST_SEQUENCES, foreign.TEST_SEED)
    cal_path, test_path = os.path.join(work, name + ".cal.npy"), os.path.join(work, name + ".test.npy")
    np.save(cal_path, cal)
    np.save(test_path, test)
    rc, out = common.run([qlstm, "compile", model, "--calibration", cal_path, "-o", work, "--name", name] +
                         e["compile_args"])
    if rc != 0:
        return {"ok": False, "why": "compile exit %d: %s" % (rc, common.last_line(out))}
    compiled, out_path = os.path.join(work, name + ".qlstm"), os.path.join(work, name + ".out.npy")
    rc, out = common.run([qlstm, "run", compiled, "--input", test_path, "--output", out_path, "--float"])
    if rc != 0:
        return {"ok": False, "why": "run exit %d: %s" % (rc, common.last_line(out))}
    eval_json = os.path.join(work, name + ".eval.json")
    rc, out = common.run([qlstm, "eval", model, compiled, "--data", test_path, "--json", eval_json])
    if rc != 0:
        return {"ok": False, "why": "eval exit %d: %s" % (rc, common.last_line(out))}
    try:
        ref = onnx_runtime(e, model, test, work, modules)
    except RuntimeError as err:
        return {"ok": False, "why": str(err)}
    bound_model = os.path.join(work, name + ".int8_weights.onnx")
    int8_weights_copy(model, bound_model)
    try:
        bound = onnx_runtime(e, bound_model, test, work, modules)
    except RuntimeError as err:
        return {"ok": False, "why": "int8 weights alone: " + str(err)}
    got = np.load(out_path)
    if got.size != ref.size:
        return {"ok": False, "why": "qlstm run wrote %s, ONNX Runtime %s" % (got.shape, ref.shape)}
    got = got.reshape(ref.shape)
    with open(eval_json) as f:
        ev = json.load(f)
    r = {"ok": True, "sqnr": common.sqnr_db(ref, got), "sqnr_own_float": ev["outputs"][0]["sqnr_db"],
         "weights_bound": common.sqnr_db(ref, bound.reshape(ref.shape))}
    bound = bound.reshape(ref.shape)
    if e["task"] == "classify":
        r["agree"] = float((ref.argmax(-1) == got.argmax(-1)).mean())
        r["weights_agree"] = float((ref.argmax(-1) == bound.argmax(-1)).mean())
        # How ONNX Runtime spreads the inputs over the classes: agreement means little on one class.
        r["classes"] = np.bincount(ref.argmax(-1).ravel(), minlength=ref.shape[-1]).tolist()
    elif e["task"] == "detect":
        found_ref, found_got = ref >= e["threshold"], got >= e["threshold"]
        r["agree"] = float((found_ref == found_got).mean())
        r["weights_agree"] = float((found_ref == (bound >= e["threshold"])).mean())
        r["classes"] = [int((~found_ref).sum()), int(found_ref.sum())]  # steps without and with a detection
    if e["rule"] == "report":
        r["ok"] = abs(r["sqnr"] - r["sqnr_own_float"]) <= MAX_FLOAT_GAP_DB
        if not r["ok"]:
            r["why"] = "qlstm's float differs from ONNX Runtime's (SQNR %.2f vs %.2f dB)" % (r["sqnr_own_float"], r["sqnr"])
    else:
        r["ok"] = r["sqnr"] >= MIN_SQNR_DB or r.get("agree", 0.0) >= MIN_AGREEMENT
    return r


def smoke(qlstm, work, e):
    """The sanitized build's pass (accuracy is the optimized build's): each file compiled without
    the search on a few sequences and run, its output finite and one row per sequence."""
    name = e["name"]
    model = os.path.join(FILES, name + ".onnx")
    cal_path, test_path = os.path.join(work, name + ".cal.npy"), os.path.join(work, name + ".test.npy")
    np.save(cal_path, foreign.inputs(e, SMOKE_SEQUENCES, foreign.CALIBRATION_SEED))
    np.save(test_path, foreign.inputs(e, SMOKE_SEQUENCES, foreign.TEST_SEED))
    rc, out = common.run([qlstm, "compile", model, "--calibration", cal_path, "-o", work, "--name", name,
                          "--no-search"] + e["compile_args"])
    if rc != 0:
        return {"ok": False, "why": "compile exit %d: %s" % (rc, common.last_line(out))}
    out_path = os.path.join(work, name + ".out.npy")
    rc, out = common.run([qlstm, "run", os.path.join(work, name + ".qlstm"), "--input", test_path, "--output",
                          out_path, "--float"])
    if rc != 0:
        return {"ok": False, "why": "run exit %d: %s" % (rc, common.last_line(out))}
    got = np.load(out_path)
    if not np.all(np.isfinite(got)) or got.size % SMOKE_SEQUENCES != 0:
        return {"ok": False, "why": "run wrote %s, not finite rows of %d sequences" % (got.shape, SMOKE_SEQUENCES)}
    return {"ok": True}


def markdown(results):
    lines = ["| file | from (repository, file @ commit) | written by | model | SQNR vs ONNX Runtime "
             "(vs qlstm's float) | int8 weights alone | agreement on the class, or on each step's detection (int8 "
             "weights alone; ONNX Runtime's count of each) |", "|---|---|---|---|---|---|---|"]
    for e, r in results:
        how = " ".join(e["compile_args"])
        note = (" (%s%s)" % ("compiled %s; " % how if how else "", e["note"])) if e.get("note") else ""
        lines.append("| `%s` | %s, `%s` @ `%s` | %s | %s | %.1f dB (%.1f dB) | %.1f dB | %s |" % (
            e["name"], e["repo"], e["path"], e["commit"][:8], e["producer"], e["model"] + note, r["sqnr"],
            r["sqnr_own_float"], r["weights_bound"],
            "%.2f%% (%.2f%%; %s)" % (100 * r["agree"], 100 * r["weights_agree"], "/".join(map(str, r["classes"])))
            if "agree" in r else ""))
    return "\n".join(lines) + "\n"


def main():
    args = sys.argv[1:]
    md, only = None, None
    if "--markdown" in args:
        k = args.index("--markdown")
        md = args[k + 1]
        del args[k:k + 2]
    if "--only" in args:  # one file, by name (a markdown table needs them all)
        k = args.index("--only")
        only = args[k + 1]
        del args[k:k + 2]
        md = None
    if "--smoke" in args:
        args.remove("--smoke")
        qlstm, work = args
        os.makedirs(work, exist_ok=True)
        failed = 0
        for e in foreign.FOREIGN:
            r = smoke(qlstm, work, e)
            print("%s %s: %s" % ("ok  " if r["ok"] else "FAIL", e["name"], "compiled and ran" if r["ok"] else r["why"]))
            failed += 0 if r["ok"] else 1
        print("%d passed, %d failed" % (len(foreign.FOREIGN) - failed, failed))
        return 1 if failed else 0
    qlstm, work, modules = args
    if shutil.which("node") is None:
        print("skipped: no node on PATH: ONNX Runtime (onnxruntime-node) is the reference (scripts/ort.sh installs it)")
        return 77
    if not os.path.isfile(os.path.join(modules, "onnxruntime-node", "package.json")):
        print("skipped: %s has no onnxruntime-node: run scripts/ort.sh (npm install --ignore-scripts "
              "onnxruntime-node)" % modules)
        return 77
    os.makedirs(work, exist_ok=True)
    results, failed = [], 0
    for e in foreign.FOREIGN:
        if only is not None and e["name"] != only:
            continue
        r = evaluate(qlstm, work, modules, e)
        if "sqnr" in r:
            what = "detection agreement per step" if e["task"] == "detect" else "class agreement"
            agree = (", %s %.4f (%.4f with int8 weights alone; ONNX Runtime's counts %s)" % (
                what, r["agree"], r["weights_agree"], "/".join(map(str, r["classes"]))) if "agree" in r else "")
            status = "FAIL" if not r["ok"] else "ok  " if e["rule"] == "pass" else "rep "
            print("%s %s (%s, %s): SQNR %.2f dB vs ONNX Runtime, %.2f dB vs qlstm's float, %.2f dB with int8 "
                  "weights alone%s%s" % (status, e["name"], e["repo"], e["producer"], r["sqnr"], r["sqnr_own_float"],
                                         r["weights_bound"], agree,
                                         "; reported, " + e["note"] if e["rule"] == "report" and r["ok"] else ""))
        if not r["ok"]:
            print("FAIL %s (%s): %s" % (e["name"], e["repo"], r["why"]))
        failed += 0 if r["ok"] else 1
        results.append((e, r))
    reported = [e["name"] for e, r in results if e["rule"] == "report" and r["ok"]]
    return common.finish(results, failed, md, markdown, reported)


if __name__ == "__main__":
    sys.exit(main())
