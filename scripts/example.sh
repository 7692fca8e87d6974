#!/usr/bin/env bash
# The main job on the two bundled examples, each a whole model (the LSTM and the layers after it
# compiled into one int8 program), exported to ONNX and committed with the script that trained it:
#   examples/digits    a classifier: LSTM -> last step -> Linear -> Softmax, reading an 8x8
#                      handwritten digit row by row
#   examples/sunspots  a forecaster: LSTM -> Linear on every step, next year's sunspot number
# Compile each, run it on held-out data it never saw, and report memory and accuracy float vs
# int8; run the classifier on the emulated Cortex-M55 against the host. Nothing is trained or
# downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(qlstm)
# The device steps need the Arm toolchain and QEMU (installed by scripts/deps.sh).
command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null && targets+=(firmware qlstm_icount)
cmake --build build -j "$jobs" --target "${targets[@]}" >/dev/null

qlstm=build/tools/qlstm/qlstm
out=build/example

digits=examples/digits
echo "== qlstm compile $digits/digits_lstm.onnx: LSTM -> last step -> Linear -> Softmax"
"$qlstm" compile "$digits/digits_lstm.onnx" --calibration "$digits/calibration.npy" -o "$out"
echo
echo "== qlstm run: the bit-exact host simulation of the device on the held-out digits (class probabilities)"
"$qlstm" run "$out/digits_lstm.qlstm" --input "$digits/test.npy" --output "$out/digits_probabilities.npy" --float
echo
echo "== qlstm eval: int8 against the float model on the held-out digits, and against their labels"
"$qlstm" eval "$digits/digits_lstm.onnx" "$out/digits_lstm.qlstm" --data "$digits/test.npy" \
  --labels "$digits/test_labels.npy"
echo
if [ ${#targets[@]} -gt 1 ]; then
  echo "== on the device: the digits classifier on the emulated Cortex-M55 (QEMU mps3-an547), compared with the host"
  "$qlstm" run "$out/digits_lstm.qlstm" --input "$digits/test.npy" --output "$out/digits_probabilities_m55.npy" \
    --float --target cortex-m55
  cmp "$out/digits_probabilities.npy" "$out/digits_probabilities_m55.npy" &&
    echo "device output == host output, byte for byte"
  "$qlstm" bench "$out/digits_lstm.qlstm" --target cortex-m55 | tail -4
  echo
fi

sunspots=examples/sunspots
echo "== qlstm compile $sunspots/sunspots_lstm.onnx: LSTM -> Linear on every step"
"$qlstm" compile "$sunspots/sunspots_lstm.onnx" --calibration "$sunspots/calibration.npy" -o "$out"
echo
echo "== qlstm run: the forecasts of the held-out years (1890-1953), computed as on the device"
"$qlstm" run "$out/sunspots_lstm.qlstm" --input "$sunspots/test.npy" --output "$out/sunspots_forecast.npy" --float
echo
echo "== qlstm eval: int8 against the float model, and the forecast error in sunspots (model.json's units)"
"$qlstm" eval "$sunspots/sunspots_lstm.onnx" "$out/sunspots_lstm.qlstm" --data "$sunspots/test.npy" \
  --targets "$sunspots/test_targets.npy" --units "$sunspots/model.json" --plot "$out/sunspots.svg"
echo

echo "== kernel conformance: bundled golden vectors$( [ -d ../shared/conformance ] && echo ' and ../shared/conformance')"
"$qlstm" verify-vectors --variant all tests/golden | tail -1
if [ -d ../shared/conformance ]; then
  "$qlstm" verify-vectors --variant all ../shared/conformance | tail -1
fi
echo
echo "Firmware source: $out/NAME_model.h and .cc (NAME digits_lstm, sunspots_lstm; build them with runtime/);" \
  "reports: $out/NAME_report.json"
