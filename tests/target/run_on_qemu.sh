#!/bin/sh
# run_on_qemu.sh QLSTM FIRMWARE.elf EXPECTED_EXIT VECTORS...: bundles the vectors on the host and
# runs them on the emulated Cortex-M4 (QEMU mps2-an386, semihosting); passes when the firmware
# exits with EXPECTED_EXIT. A vector path that does not exist skips (exit 77).
qlstm=$1 fw=$2 want=$3
shift 3
for p in "$@"; do
  [ -e "$p" ] || { echo "skipped: $p not found"; exit 77; }
done
bundle=$(mktemp /tmp/qlstm_bundle.XXXXXX) || exit 1
trap 'rm -f "$bundle"' EXIT
"$qlstm" export-vectors "$@" -o "$bundle" || exit 1
timeout 600 qemu-system-arm -M mps2-an386 -cpu cortex-m4 -nographic -monitor none -serial none \
  -semihosting-config enable=on,target=native,arg=vector_runner,arg="$bundle" -kernel "$fw"
rc=$?
echo "firmware exit status: $rc"
[ "$rc" -eq "$want" ]
