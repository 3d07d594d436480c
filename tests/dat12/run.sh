#!/usr/bin/env bash
# The DAT 1.2 entry points for events, CNOs, the IA's attributes and dat_strerror
# (tests/dat12/events12.c), built as a 1.2 program is (include/dat, -ldat) and run against one
# library, time-bounded. About a second.
# usage: run.sh LIBDIR   (env: DAT_IA, the IA to open; default the built-in tcp-lo)
set -uo pipefail
libdir=$(cd "${1:?usage: run.sh LIBDIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -I "$here/../../include" -o "$work/events12" \
    "$here/events12.c" -L "$libdir" -ldat -Wl,-rpath,"$libdir" || exit 2
# The program's references are to DAT_1.2 (dat_ep_create aside: see events12.c).
if objdump -T "$work/events12" | grep ' dat_' | grep -v 'dat_ep_create$' | grep -qv 'DAT_1.2'; then
    echo "dat12: a reference not bound to DAT_1.2:"; objdump -T "$work/events12" | grep ' dat_' | grep -v DAT_1.2
    exit 1
fi
LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=/dev/null timeout 60 "$work/events12"
rc=$?
[ $rc = 0 ] && echo "dat12: events12 passed" || echo "dat12: events12 FAILED (exit $rc)"
exit $rc
