#!/usr/bin/env bash
# The whole test suite: a release build and an ASan + UBSan build, each built and run by ctest.
# Usage: scripts/test.sh [--no-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/ort.sh  # ONNX Runtime from npm: the foreign corpus's float reference (optional)

sanitize=1
[ "${1:-}" = "--no-sanitize" ] && sanitize=0
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {  # run_suite BUILD_DIR CMAKE_ARGS...
  local dir=$1; shift
  echo "== configure + build: $dir ($*)"
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== test: $dir"
  ctest --test-dir "$dir" -j "$jobs" --output-on-failure
}

if [ ! -d ../shared/conformance ]; then
  echo "note: ../shared/conformance not found: the shared conformance tests will be skipped"
fi
[ $sanitize -eq 1 ] && run_suite build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQLSTM_SANITIZE=ON
run_suite build -DCMAKE_BUILD_TYPE=Release
