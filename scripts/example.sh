#!/usr/bin/env bash
# The main job on the bundled example (examples/sunspots: an nn.LSTM trained on yearly sunspot
# numbers, exported to ONNX; committed with the script that made it): compile it, run it on the
# held-out windows, and report memory and accuracy. Nothing is trained or downloaded.
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
ex=examples/sunspots
out=build/example
echo "== qlstm compile $ex/sunspots_lstm.onnx"
"$qlstm" compile "$ex/sunspots_lstm.onnx" --calibration "$ex/calibration.npy" -o "$out"
echo
echo "== qlstm run: the bit-exact host simulation of the device on the held-out windows"
"$qlstm" run "$out/sunspots_lstm.qlstm" --input "$ex/test.npy" --output "$out/test_hidden.npy" --float
echo "wrote $out/test_hidden.npy"
echo
echo "== qlstm eval: int8 against the float model"
"$qlstm" eval "$ex/sunspots_lstm.onnx" "$out/sunspots_lstm.qlstm" --data "$ex/test.npy" --plot "$out/sunspots.svg"
echo
if [ ${#targets[@]} -gt 1 ]; then
  echo "== on the device: the same run on the emulated Cortex-M55 (QEMU mps3-an547), compared with the host"
  "$qlstm" run "$out/sunspots_lstm.qlstm" --input "$ex/test.npy" --output "$out/test_hidden_m55.npy" --float \
    --target cortex-m55
  cmp "$out/test_hidden.npy" "$out/test_hidden_m55.npy" && echo "device output == host output, byte for byte"
  "$qlstm" bench "$out/sunspots_lstm.qlstm" --shape B=1,T=32 --target cortex-m55 | tail -4
  echo
fi
echo "== kernel conformance: bundled golden vectors$( [ -d ../shared/conformance ] && echo ' and ../shared/conformance')"
"$qlstm" verify-vectors --variant all tests/golden | tail -1
if [ -d ../shared/conformance ]; then
  "$qlstm" verify-vectors --variant all ../shared/conformance | tail -1
fi
echo
echo "Firmware source: $out/sunspots_lstm_model.h and .cc (build them with runtime/); report: $out/sunspots_lstm_report.json"
