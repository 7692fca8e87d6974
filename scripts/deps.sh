#!/usr/bin/env bash
# Installs the Debian packages the host build needs, if any are missing (Debian 12).
# Usage: scripts/deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  cmake ninja-build g++ make           # build
  libgtest-dev libgmock-dev            # tests (GoogleTest)
  libbenchmark-dev                     # host benchmarks (Google Benchmark)
  nlohmann-json3-dev libcli11-dev      # CLI: JSON vectors, argument parsing
  libonnx-dev libprotobuf-dev          # ONNX import (the protobuf classes)
  libflatbuffers-dev flatbuffers-compiler zlib1g-dev   # the .qlstm model file (FlatBuffers, CRC-32)
  libzip-dev                           # .npz calibration archives (zip, stored or deflated)
  python3                              # generators of the shipped table and golden vectors
  python3-torch python3-onnx python3-numpy   # end-to-end tests against torch (tests/e2e)
  python3-sklearn                      # examples/digits/train.py: the 8x8 digits (load_digits)
  pybind11-dev python3-pybind11 python3-pytest   # the Python module (python/) and its tests
  binutils                             # nm, for the freestanding-runtime check
  clang libclang-rt-14-dev             # the libFuzzer targets (scripts/fuzz.sh)
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm   # Cortex-M builds, run under QEMU
  libopenblas0                         # bench/host_vs_torch.py: torch fp32 with a fast BLAS
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "qlstm: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "qlstm: not root and no sudo; please run: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
