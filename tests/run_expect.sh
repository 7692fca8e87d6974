#!/bin/sh
# run_expect.sh [OPTION]... -- CMD [ARG]...: the one runner of the CLI and device ctests
# (qlstm_cli_test in tests/CMakeLists.txt). Runs CMD, prints its output (stdout and stderr), and
# passes (exit 0) only if CMD exited with the expected status AND every --match regex matches a
# line of the output AND no --not-match regex does. Regexes are grep -E, one line each.
#   --exit CODE          the exit status CMD must return (required)
#   --match REGEX        a line of the output must match (at least one --match; repeatable)
#   --not-match REGEX    no line of the output may match (repeatable)
#   --skip-unless PATH   PATH missing: say which and why, run nothing, exit 77 (ctest: skipped)
#   --skip-exit CODE     CMD exiting CODE is a skip if it printed a "skipped: " line saying why;
#                        exit 77 (ctest: skipped)
# Any other outcome exits 1 with the reason on stderr.
set -u
want_rc= skip_rc= matches=0
patterns=$(mktemp) || exit 1
out=$(mktemp) || { rm -f "$patterns"; exit 1; }
trap 'rm -f "$patterns" "$out"' EXIT
die() { echo "run_expect: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --exit) [ $# -ge 2 ] || die "--exit needs a value"; want_rc=$2; shift 2 ;;
    --match) [ $# -ge 2 ] || die "--match needs a value"
             printf '+%s\n' "$2" >>"$patterns"; matches=$((matches + 1)); shift 2 ;;
    --not-match) [ $# -ge 2 ] || die "--not-match needs a value"; printf -- '-%s\n' "$2" >>"$patterns"; shift 2 ;;
    --skip-unless) [ $# -ge 2 ] || die "--skip-unless needs a value"
                   [ -e "$2" ] || { echo "skipped: $2 not found, so this test has nothing to run"; exit 77; }
                   shift 2 ;;
    --skip-exit) [ $# -ge 2 ] || die "--skip-exit needs a value"; skip_rc=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (usage: run_expect.sh --exit CODE --match REGEX ... -- CMD ...)" ;;
  esac
done
[ -n "$want_rc" ] || die "no --exit CODE given"
[ "$matches" -gt 0 ] || die "no --match REGEX given: a test checks the text as well as the status"
[ $# -gt 0 ] || die "no command given after --"

"$@" >"$out" 2>&1
rc=$?
cat "$out"
echo "run_expect: exit status $rc (wanted $want_rc)"
if [ -n "$skip_rc" ] && [ "$rc" -eq "$skip_rc" ] && [ "$rc" -ne "$want_rc" ]; then
  grep -q '^skipped: ' "$out" || die "exit status $rc (skip) without a 'skipped: ' line saying why"
  exit 77
fi
failed=0
[ "$rc" -eq "$want_rc" ] || { echo "run_expect: FAIL: exit status $rc, wanted $want_rc" >&2; failed=1; }
while IFS= read -r p; do
  regex=${p#?}
  grep -Eq -- "$regex" "$out"
  found=$?
  [ "$found" -le 1 ] || die "grep -E refused the regex: $regex"
  case $p in
    +*) [ "$found" -eq 0 ] ||
          { echo "run_expect: FAIL: no line of the output matches: $regex" >&2; failed=1; } ;;
    -*) [ "$found" -eq 1 ] ||
          { echo "run_expect: FAIL: a line of the output matches: $regex" >&2; failed=1; } ;;
  esac
done <"$patterns"
exit "$failed"
