#!/usr/bin/env bash
# Instructions per call of the data path's calls, counted by callgrind (timings swing in the
# emulated guest and on a busy machine; instruction counts do not): dat_ep_post_send,
# dat_ep_post_recv, a dat_evd_dequeue that finds a receive's completion and one of the receive
# EVD that finds nothing, each measured alone (bench/callcount.c), the library's and its
# transport's work together. Under valgrind the TCP transport takes the socket path between
# processes of one host (valgrind does not know pidfd_open, which the direct path needs); the
# found dequeue finds a completion the progress engine queued (the receiver did not poll
# meanwhile), the empty one asks the socket (one recv(2), its instructions in the kernel not
# counted).
#   callcount.sh BUILDDIR [IA] [ITERATIONS]     (IA default tcp-lo; environment passed along,
#                                                 e.g. LIBDAT_DIRECT=0 for the socket path)
# Prints one line: "post_send N  post_recv N  found_dequeue N  empty_dequeue N" (instructions
# per call).
set -euo pipefail
build=$(cd "${1:?usage: callcount.sh BUILDDIR [IA] [ITERATIONS]}" && pwd)
ia=${2:-tcp-lo}
n=${3:-2000}
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "callcount: needs valgrind"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Wextra -Werror -I"$here/../include" "$here/callcount.c" -L"$build/lib" -ldat2 -o "$work/callcount"
# valgrind's own complaints (system calls it does not know: the library falls back from them)
# go to a log, shown only if the run fails.
if ! LD_LIBRARY_PATH="$build/lib" timeout 600 valgrind -q --tool=callgrind --callgrind-out-file="$work/cg.%p" \
    --toggle-collect=measured_post_send --toggle-collect=measured_post_recv \
    --toggle-collect=measured_found_dequeue --toggle-collect=measured_empty_dequeue "$work/callcount" -P "$ia" -n "$n" > "$work/out" 2> "$work/valgrind.log"; then
    cat "$work/out" "$work/valgrind.log" >&2
    exit 1
fi
per_call() {  # wrapper, calls: inclusive instructions of the wrapper over every output file / calls
    local total=0 f ir
    for f in "$work"/cg.*; do
        ir=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null | grep -E "[^_a-z]$1 " | head -1 | awk '{gsub(",", "", $1); print $1}')
        total=$((total + ${ir:-0}))
    done
    echo $((total / $2))
}
echo "post_send $(per_call measured_post_send "$n")  post_recv $(per_call measured_post_recv $((n + 1)))  found_dequeue $(per_call measured_found_dequeue "$n")  empty_dequeue $(per_call measured_empty_dequeue "$n")"
