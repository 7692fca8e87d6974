#!/usr/bin/env bash
# The main job on the bundled example. For now: build the kernel and the qlstm tool, then verify
# the kernel bit for bit on the bundled golden cases (and on ../shared/conformance when present),
# printing every case it checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target qlstm >/dev/null

qlstm=build/tools/qlstm/qlstm
echo "== kernel variants in this build"
"$qlstm" variants
echo "== bundled golden cases (tests/golden), every supported variant"
"$qlstm" verify-vectors --variant all --verbose tests/golden
if [ -d ../shared/conformance ]; then
  echo "== upstream conformance vectors (../shared/conformance)"
  "$qlstm" verify-vectors --variant all ../shared/conformance
else
  echo "== ../shared/conformance not found: upstream vectors skipped"
fi
