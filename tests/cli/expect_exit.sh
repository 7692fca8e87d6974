#!/bin/sh
# expect_exit.sh EXIT_CODE REGEX CMD...: runs CMD and checks that it exits with EXIT_CODE and
# prints (stdout or stderr) a line matching REGEX.
want_rc=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq "$want_rc" ] || { echo "expect_exit: exit status $rc, wanted $want_rc" >&2; exit 1; }
printf '%s\n' "$out" | grep -Eq -- "$regex" || { echo "expect_exit: output does not match: $regex" >&2; exit 1; }
