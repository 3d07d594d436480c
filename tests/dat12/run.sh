#!/usr/bin/env bash
# Builds tests/dat12/*.c as DAT 1.2 programs (against include/dat, linked with -ldat, the 1.2
# entry points bound by the programs' .symver lines) and runs each against the library in
# build/lib, time-bounded. usage: run.sh [IA]   (default tcp-lo)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib=$root/build/lib
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for src in "$here"/*.c; do
    name=$(basename "$src" .c)
    if ! gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -I "$root/include" "$src" -L "$lib" -ldat \
        -Wl,-rpath,"$lib" -o "$out/$name"; then
        echo "dat12: $name does not compile"; status=1; continue
    fi
    if ! objdump -T "$out/$name" | grep -q 'DAT_1.2'; then
        echo "dat12: $name imports nothing of DAT_1.2"; status=1; continue
    fi
    LD_LIBRARY_PATH="$lib" timeout 60 "$out/$name" "${1:-tcp-lo}"
    rc=$?
    [ $rc -eq 0 ] || { echo "dat12: $name ended with $rc"; status=1; }
done
exit $status
