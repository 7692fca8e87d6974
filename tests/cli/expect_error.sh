#!/bin/sh
# expect_error.sh QLSTM FILE EXIT_CODE REGEX: runs 'qlstm verify-vectors FILE' and checks that it
# exits with EXIT_CODE, prints a message matching REGEX, and does not crash.
qlstm=$1 file=$2 want_rc=$3 regex=$4
out=$("$qlstm" verify-vectors "$file" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want_rc" ]; then
  echo "expect_error: exit status $rc, wanted $want_rc" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
  echo "expect_error: output does not match: $regex" >&2
  exit 1
fi
exit 0
