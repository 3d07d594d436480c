#!/usr/bin/env bash
# dat_evd_wait and dat_cno_wait as cancellation points (tests/cancel/cancel.c) against one
# library: each object (evd, cno, connected) and cancel type (deferred, async) in a process of
# its own, time-bounded, so a run that aborts or hangs is reported and the others still run;
# all of it twice, as DAT 2.0 source and as DAT 1.2 source (the library's DAT_1.2 waits).
# usage: run.sh LIBDIR [rounds]   (rounds per run, default 200; CANCEL_TIME_SCALE stretches bounds)
set -uo pipefail
libdir=$(cd "${1:?usage: run.sh LIBDIR [rounds]}" && pwd)
rounds=${2:-200}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -O2 -g -Wall -Wextra -Werror -pthread -I "$here/../../include" -o "$work/cancel-2.0" "$here/cancel.c" \
    -L "$libdir" -ldat2 || exit 2
# 1.2 source: the headers' .symver lines bind its calls to version DAT_1.2.
gcc -O2 -g -Wall -Wextra -Werror -pthread -DCANCEL_DAT12 -I "$here/../../include" -o "$work/cancel-1.2" \
    "$here/cancel.c" -L "$libdir" -ldat || exit 2

passed=0
failed=0
for api in 2.0 1.2; do
    for object in evd cno connected pending; do
        for type in deferred async; do
            [ "$object" = pending ] && [ "$type" = async ] && continue
            LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=/dev/null timeout $((120 * ${CANCEL_TIME_SCALE:-1})) \
                "$work/cancel-$api" -r "$rounds" "$object" "$type" > "$work/out" 2> "$work/err" &
            wait $! 2>/dev/null  # in the background: the shell says nothing of a run that a signal ends
            rc=$?
            sed "s/^cancel:/cancel, DAT $api:/" "$work/out"
            if [ $rc = 0 ]; then
                passed=$((passed + 1))
            else
                failed=$((failed + 1))
                case $rc in
                124) why="hung past the time bound" ;;
                12[5-9]|1[3-9][0-9]) why="killed by signal $((rc - 128))" ;;
                *) why="exit code $rc" ;;
                esac
                echo "cancel, DAT $api: $object $type: FAILED ($why)"
                sed 's/^/    /' "$work/err"
            fi
        done
    done
done
echo "cancel: $passed passed, $failed failed"
[ $failed = 0 ]
