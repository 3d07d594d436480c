#!/usr/bin/env bash
# Every way of waiting (tests/waits/waits.c) against one library: each mode x op pair, `runs`
# times, optionally with a busy loop per core for the whole run (a loaded machine delays the
# library's threads: hand-offs and timeouts that never matter on a quiet one then do).
# usage: run.sh LIBDIR [contention|quiet|signals] [runs]
# WAITS_ITERS (iterations per size, default 32) and WAITS_TIMEOUT (seconds a pair may go without
# moving, default 10) are passed on; WAITS_SUPPRESS_ITERS is suppress mode's (13 sizes of 4 to
# 16 B: default 770 iterations, 10010 messages each way; under contention 75, about as many as
# the other modes send, since each memory-polled message then waits for a CPU the busy loops
# hold); WAITS_IA names the IA (default the built-in tcp-lo); WAITS_HOLD keeps a hung pair for
# gdb (see waits.c). Every mode but suppress runs twice: with a receive EVD and a request EVD
# per EP, then with one EVD for both (WAITS_SHARED=1).
set -uo pipefail
libdir=$(cd "${1:?usage: run.sh LIBDIR [contention|quiet|signals] [runs]}" && pwd)
load=${2:-quiet}
runs=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
busy=()

cleanup() {
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -Wall -Wextra -Werror -I "$here/../../include" -o "$work/waits" "$here/waits.c" \
    -L "$libdir" -ldat2 || exit 2

case $load in
contention)
    for _ in $(seq "$(nproc)"); do
        sh -c 'while :; do :; done' &
        busy+=($!)
    done
    echo "waits: $(nproc) busy loops running" ;;
quiet) ;;
signals)
    # Each side interrupted by a signal every 200 us (its handler installed without
    # SA_RESTART): the library's blocking calls see EINTR again and again.
    export WAITS_SIGNAL_US=${WAITS_SIGNAL_US:-200}
    echo "waits: a SIGALRM every $WAITS_SIGNAL_US us in each side" ;;
*) echo "usage: run.sh LIBDIR [contention|quiet|signals] [runs]" >&2; exit 2 ;;
esac

passed=0
failed=0
# Each twice: between two processes of one host messages and RDMA writes land directly in the
# target's memory (cross-memory attach); LIBDAT_DIRECT=0 sends them over the socket instead,
# the path a peer on another host takes, which the target's engine lands.
for mode in dequeue wait wait0 cno cnofd memory suppress; do
    iters=${WAITS_ITERS:-32}
    if [ "$mode" = suppress ]; then
        iters=${WAITS_SUPPRESS_ITERS:-$([ "$load" = contention ] && echo 75 || echo 770)}
    fi
    # Then again with one DTO EVD for each EP's receives and requests (a common layout), but
    # in suppress mode, whose poster spins on its request EVD alone.
    for shared in 0 1; do
        [ "$shared" = 1 ] && [ "$mode" = suppress ] && continue
        for op in send write send-socket write-socket; do
            direct=1
            [ "${op%-socket}" != "$op" ] && direct=0
            for _ in $(seq "$runs"); do
                if LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=/dev/null LIBDAT_DIRECT=$direct WAITS_SHARED=$shared \
                    timeout 300 "$work/waits" -i "$iters" -t "${WAITS_TIMEOUT:-10}" "$mode" "${op%-socket}" \
                    2> "$work/err"; then
                    passed=$((passed + 1))
                else
                    failed=$((failed + 1))
                    echo "  $mode $op$([ "$shared" = 1 ] && echo ", one EVD for receives and requests"):"
                    sed 's/^/    /' "$work/err"
                fi
            done
        done
    done
done
echo "waits: $passed passed, $failed failed"
[ "$failed" = 0 ]
