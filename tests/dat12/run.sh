#!/usr/bin/env bash
# The DAT 1.2 C programs of this folder that test the entry points (dto12.c: endpoints, data
# transfers, memory; events12.c: events, CNOs, the IA's attributes, dat_strerror), each built
# as a 1.2 program is (include/dat, -ldat, every reference bound to DAT_1.2) and run against
# the library in LIBDIR over one IA, time-bounded. A few seconds.
# usage: run.sh LIBDIR [IA]   (default the built-in tcp-lo)
set -uo pipefail
libdir=$(cd "${1:?usage: run.sh LIBDIR [IA]}" && pwd)
ia=${2:-tcp-lo}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for name in dto12 events12; do
    if ! gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -I "$here/../../include" "$here/$name.c" \
        -L "$libdir" -ldat -Wl,-rpath,"$libdir" -o "$work/$name"; then
        echo "dat12: $name does not compile"; status=1; continue
    fi
    if objdump -T "$work/$name" | grep ' dat_' | grep -qv 'DAT_1.2'; then
        echo "dat12: $name has references not bound to DAT_1.2:"
        objdump -T "$work/$name" | grep ' dat_' | grep -v DAT_1.2; status=1; continue
    fi
    LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=/dev/null DAT_IA=$ia timeout 60 "$work/$name" "$ia"
    rc=$?
    if [ $rc = 0 ]; then echo "dat12: $name passed"; else echo "dat12: $name FAILED (exit $rc)"; status=1; fi
done
exit $status
