#!/bin/sh
# if_exists.sh PATH CMD...: runs CMD when PATH exists, else says so and exits 77 (skipped).
[ -e "$1" ] || { echo "skipped: $1 not found"; exit 77; }
shift
exec "$@"
