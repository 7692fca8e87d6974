#!/usr/bin/env bash
# Installs ONNX Runtime for Node.js (the npm package onnxruntime-node, whose CPU binaries ship in the
# package) into .deps/ort: the float reference, independent of qlstm, that tests/corpus/run_foreign.py
# compares the foreign corpus with. Optional: without Node.js, npm or the registry it says so and
# exits 0, and that test skips, saying why.
# Usage: scripts/ort.sh   (called by scripts/test.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
dest=.deps/ort
manifest=tests/corpus/foreign/package.json
version=$(sed -n 's/.*"onnxruntime-node": "\([^"]*\)".*/\1/p' "$manifest")
installed=$dest/node_modules/onnxruntime-node/package.json
if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
  exit 0
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "qlstm: installing Node.js and npm (Debian packages) for ONNX Runtime" >&2
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1
  fi
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "qlstm: note: no node/npm: ONNX Runtime not installed; the foreign-corpus test will skip" >&2
    exit 0
  fi
fi
echo "qlstm: installing onnxruntime-node $version into $dest (npm, --ignore-scripts: CPU only)" >&2
mkdir -p "$dest"
cp "$manifest" "$dest/package.json"
if ! (cd "$dest" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null); then
  echo "qlstm: note: npm install onnxruntime-node failed; the foreign-corpus test will skip" >&2
fi
exit 0
