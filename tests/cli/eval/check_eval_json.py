#!/usr/bin/python3
"""check_eval_json.py QLSTM ONNX MODEL DATA JSON: runs `QLSTM eval ONNX MODEL --data DATA --json JSON`
and checks that the JSON holds every figure eval printed, and the same values: each output's SQNR
and max abs error, and each saturation range's count, total and fraction (a fraction in [0, 1],
equal to count / total and to the printed percentage); "any" is true exactly when eval printed
its hint. Prints one line "eval json: ..." and exits 0 when all hold, else says what differs and
exits 1. (The CLI test tests/CMakeLists.txt cli_eval_json_matches_the_text.)
"""
import json
import re
import subprocess
import sys


def fail(message):
    print("eval json: FAIL: " + message)
    sys.exit(1)


def main():
    qlstm, onnx, model, data, out = sys.argv[1:6]
    run = subprocess.run([qlstm, "eval", onnx, model, "--data", data, "--json", out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    print(run.stdout, end="")
    if run.returncode != 0:
        fail("qlstm eval exited %d" % run.returncode)
    lines = run.stdout.splitlines()
    with open(out, encoding="utf-8") as f:
        j = json.load(f)

    for o in j["outputs"]:
        want = "  %s: SQNR %.2f dB, max abs error %.5f " % (o["label"], o["sqnr_db"], o["max_abs_error"])
        if not any(line.startswith(want) for line in lines):
            fail("no printed line starts with %r" % want)

    s = j["saturation"]
    ranges = [("input", s["input"])]
    if s["output"] is not None:  # null: a softmax's fixed range, not counted
        ranges.append(("output", s["output"]))
    for op in s["ops"]:
        ranges += [("cell (%s)" % op["label"], op["cell"]), ("hidden (%s)" % op["label"], op["hidden"])]
    for name, r in ranges:
        if not 0 <= r["fraction"] <= 1 or not 0 <= r["outside"] <= r["total"] or r["total"] == 0:
            fail("%s: fraction %r, %r of %r" % (name, r["fraction"], r["outside"], r["total"]))
        if abs(r["fraction"] - r["outside"] / r["total"]) > 1e-12:
            fail("%s: fraction %r is not %r / %r" % (name, r["fraction"], r["outside"], r["total"]))
        pattern = r"^    %s +%.2f %% \(%d of %d\) " % (re.escape(name), 100 * r["fraction"], r["outside"], r["total"])
        if not any(re.match(pattern, line) for line in lines):
            fail("%s: no printed line matches %r" % (name, pattern))
    hint = any(line.startswith("  hint: ") for line in lines)
    if s["any"] != hint or s["any"] != any(r["outside"] > 0 for _, r in ranges):
        fail("saturation 'any' %r, hint printed %r" % (s["any"], hint))
    print("eval json: %d outputs and %d ranges equal to the printed figures, saturation %s"
          % (len(j["outputs"]), len(ranges), "found" if s["any"] else "none"))


if __name__ == "__main__":
    main()
