#!/usr/bin/env bash
# The main job on the two bundled examples, each a whole model (the LSTM and the layers after it
# compiled into one int8 program), exported to ONNX and committed with the script that trained it:
#   examples/digits    a classifier: LSTM -> last step -> Linear -> Softmax, reading an 8x8
#                      handwritten digit row by row; and the same classifier with a GRU
#   examples/sunspots  a forecaster: LSTM -> Linear on every step, next year's sunspot number
# Compile each, run it on held-out data it never saw, and report memory and accuracy float vs
# int8; run the classifier on the emulated Cortex-M55 against the host. Then the Python
# quickstart: a small torch classifier trained (seconds) and compiled in-process. Nothing is
# downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(qlstm qlstm_python)  # the CLI, and the Python module (build/python: README.md)
# The device steps need the Arm toolchain and QEMU (installed by scripts/deps.sh).
command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null && targets+=(firmware qlstm_icount)
cmake --build build -j "$jobs" --target "${targets[@]}" >/dev/null

qlstm=build/tools/qlstm/qlstm
out=build/example

# example DIR NAME WHAT OUTPUT CAPTION EVAL_ARGS...: compile DIR/NAME.onnx (WHAT: its layers), run it
# on DIR/test.npy into $out/OUTPUT.npy (float in and out), and eval it there with EVAL_ARGS.
example() {
  local dir=$1 name=$2 what=$3 output=$4 caption=$5
  shift 5
  echo "== qlstm compile $dir/$name.onnx: $what"
  "$qlstm" compile "$dir/$name.onnx" --calibration "$dir/calibration.npy" -o "$out"
  echo
  echo "== qlstm run: the bit-exact host simulation of the device on $caption"
  "$qlstm" run "$out/$name.qlstm" --input "$dir/test.npy" --output "$out/$output.npy" --float
  echo
  echo "== qlstm eval: int8 against the float model on $caption, and against the truth"
  "$qlstm" eval "$dir/$name.onnx" "$out/$name.qlstm" --data "$dir/test.npy" "$@"
  echo
}

# on_device NAME OUTPUT CPU CAPTION: run $out/NAME.qlstm on the emulated CPU (when the build has the
# device tools), compare with the host's $out/OUTPUT.npy byte for byte, and count its instructions.
on_device() {
  local name=$1 output=$2 cpu=$3 caption=$4
  [ ${#targets[@]} -gt 1 ] || return 0
  echo "== on the device: $caption on the emulated $cpu, compared with the host"
  "$qlstm" run "$out/$name.qlstm" --input "$digits/test.npy" --output "$out/${output}_$cpu.npy" --float --target "$cpu"
  cmp "$out/$output.npy" "$out/${output}_$cpu.npy" && echo "device output == host output, byte for byte"
  "$qlstm" bench "$out/$name.qlstm" --target "$cpu" | grep -E "^(output:|op [0-9]|instructions)"
  echo
}

digits=examples/digits
example "$digits" digits_lstm "LSTM -> last step -> Linear -> Softmax" digits_probabilities \
  "the held-out digits (class probabilities)" --labels "$digits/test_labels.npy"
on_device digits_lstm digits_probabilities cortex-m55 "the digits classifier (QEMU mps3-an547, Helium)"
example "$digits" digits_gru "GRU -> last step -> Linear -> Softmax" digits_gru_probabilities \
  "the held-out digits (class probabilities)" --labels "$digits/test_labels.npy"
on_device digits_gru digits_gru_probabilities cortex-m4 "the GRU digits classifier (DSP)"

sunspots=examples/sunspots
example "$sunspots" sunspots_lstm "LSTM -> Linear on every step" sunspots_forecast \
  "the held-out years 1890-1953 (next year's forecasts)" --targets "$sunspots/test_targets.npy" \
  --units "$sunspots/model.json" --plot "$out/sunspots.svg"

echo "== kernel conformance: bundled golden vectors$( [ -d ../shared/conformance ] && echo ' and ../shared/conformance')"
"$qlstm" verify-vectors --variant all tests/golden | tail -1
if [ -d ../shared/conformance ]; then
  "$qlstm" verify-vectors --variant all ../shared/conformance | tail -1
fi
echo
echo "== Python: a torch module trained and compiled in-process (examples/python_quickstart.py, docs/python.md)"
PYTHONPATH=build/python /usr/bin/python3 examples/python_quickstart.py "$out/python_quickstart"
echo
echo "Firmware source: $out/NAME_model.h and .cc (NAME digits_lstm, digits_gru, sunspots_lstm; build them with runtime/);" \
  "reports: $out/NAME_report.json"
