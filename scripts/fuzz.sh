#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time (default 20 s) on a seed
# corpus from the tests. Exit status non-zero on any finding.
# Usage: [QLSTM_FUZZ_SEED=N] scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
# A fixed seed by default, so that a CI run's finding can be reproduced (the same seed replays the
# same inputs); QLSTM_FUZZ_SEED=0 takes one from the clock, for longer exploratory runs.
seed=${QLSTM_FUZZ_SEED:-1}
bash scripts/deps.sh
dir=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQLSTM_FUZZ=ON >/dev/null
cmake --build "$dir" -j "$(nproc)" --target fuzz_onnx fuzz_npy fuzz_model qlstm >/dev/null

corpus=$dir/corpus
rm -rf "$corpus" && mkdir -p "$corpus/onnx" "$corpus/npy" "$corpus/model"
cp tests/onnx/models/*.onnx tests/onnx/fuzz_regressions/*.onnx examples/sunspots/*.onnx examples/digits/*.onnx \
  "$corpus/onnx/"
cp examples/sunspots/*.npy "$corpus/npy/"
cp examples/digits/test_labels.npy "$corpus/npy/digits_test_labels.npy"  # int32; the others are float32
cp tests/compiler/npz/*.npz tests/compiler/npz/*.npy "$corpus/npy/"  # .npz archives (stored, deflated, damaged), float64
# The first 20 small fixture arrays, in a stable order (a list, not a pipe into head: with
# pipefail, find would die of SIGPIPE once there are more than 20).
mapfile -t small < <(find tests/accuracy/fixtures -name '*.npy' -size -20k | LC_ALL=C sort)
for f in "${small[@]:0:20}"; do cp "$f" "$corpus/npy/$(echo "$f" | tr / _)"; done
for ex in sunspots digits; do  # whole models: an FC on every step; last step, FC and softmax
  "$dir/tools/qlstm/qlstm" compile "examples/$ex/${ex}_lstm.onnx" \
    --calibration "examples/$ex/calibration.npy" -o "$corpus/model" --no-search >/dev/null
done
/usr/bin/python3 - "$corpus/model/state_cal.npy" <<'PY'  # a program: two bidirectional layers with a state
import sys, numpy as np
np.save(sys.argv[1], np.random.default_rng(0).standard_normal((6, 3, 3)).astype(np.float32))
PY
"$dir/tools/qlstm/qlstm" compile tests/onnx/models/torch_bi2_state.onnx --calibration "$corpus/model/state_cal.npy" \
  -o "$corpus/model" --name bi2_state --no-search >/dev/null
# GRU ops: the digits classifier with a GRU; a bidirectional GRU stack with a state input.
"$dir/tools/qlstm/qlstm" compile examples/digits/digits_gru.onnx --calibration examples/digits/calibration.npy \
  -o "$corpus/model" --no-search >/dev/null
"$dir/tools/qlstm/qlstm" compile tests/onnx/models/gru_torch_bi2_state.onnx --calibration "$corpus/model/state_cal.npy" \
  -o "$corpus/model" --name gru_bi2_state --no-search >/dev/null
# RNN ops (version 17): two bidirectional ReLU layers; a tanh stack with a state input.
"$dir/tools/qlstm/qlstm" compile tests/onnx/models/rnn_torch_relu_bi2_seq_first.onnx \
  --calibration "$corpus/model/state_cal.npy" -o "$corpus/model" --name rnn_relu_bi2 --no-search >/dev/null
"$dir/tools/qlstm/qlstm" compile tests/onnx/models/rnn_torch_tanh_stack2_state.onnx \
  --calibration "$corpus/model/state_cal.npy" -o "$corpus/model" --name rnn_state --no-search >/dev/null
# An LSTM autoencoder (version 18): the encoder's final state, the decoder reading it repeated.
"$dir/tools/qlstm/qlstm" compile tests/onnx/models/seq2seq_repeat_h_n.onnx \
  --calibration "$corpus/model/state_cal.npy" -o "$corpus/model" --name seq2seq --max-time-steps 8 --no-search >/dev/null
# A 16x8 program (version 7: typed buffers, the 16x8 kinds, a requantization before the softmax).
"$dir/tools/qlstm/qlstm" compile examples/digits/digits_lstm.onnx --calibration examples/digits/calibration.npy \
  -o "$corpus/model" --name digits_s16 --activations int16 --no-search >/dev/null
rm -f "$corpus/model/"*.h "$corpus/model/"*.cc "$corpus/model/"*.json "$corpus/model/"*.npy
# fuzz_model mutates the model bytes inside the file (it seals them with a fresh checksum itself):
# its seeds are those bytes, the ModelFile's `model` vector, read here with the FlatBuffers layout.
/usr/bin/python3 - "$corpus/model/"*.qlstm <<'PY'
import struct, sys
for path in sys.argv[1:]:
    d = open(path, "rb").read()
    root = struct.unpack_from("<I", d, 0)[0]
    vtable = root - struct.unpack_from("<i", d, root)[0]
    assert struct.unpack_from("<H", d, vtable)[0] >= 10, path  # ModelFile.model is field 2
    field = struct.unpack_from("<H", d, vtable + 8)[0]
    vec = root + field + struct.unpack_from("<I", d, root + field)[0]
    n = struct.unpack_from("<I", d, vec)[0]
    open(path[: -len(".qlstm")] + ".model", "wb").write(d[vec + 4 : vec + 4 + n])
PY
rm -f "$corpus/model/"*.qlstm

for t in onnx npy model; do
  echo "== fuzz_$t for ${seconds}s"
  rm -f "$dir/crash_$t-"*
  if ! "$dir/fuzz/fuzz_$t" -seed="$seed" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$dir/crash_$t-" "$corpus/$t" > "$dir/fuzz_$t.log" 2>&1; then
    # A finding: the whole report (the CI log may be all there is of it) and the input itself,
    # so that it can be reproduced with `base64 -d > x && $dir/fuzz/fuzz_$t x`.
    grep -v '^#[0-9]' "$dir/fuzz_$t.log" | tail -80
    for f in "$dir/crash_$t-"*; do
      [ -f "$f" ] || continue
      echo "== $f ($(stat -c %s "$f") bytes), base64:"
      head -c 65536 "$f" | base64 -w 120
    done
    exit 1
  fi
  tail -1 "$dir/fuzz_$t.log"
done
echo "fuzzing: no finding"
