#!/usr/bin/env bash
# Inside the soft-RoCE guest (run by tests/rdma/consumers.sh): the DAT 1.2 programs that
# tests/dat12/build.sh built on the host, over RDMA. compat/ (compat-dapl's own headers and
# libdat.so.1) by LD_LIBRARY_PATH through a compat-dapl dat.conf line (`u1.2`,
# libdaplcma.so.1 "<netdev> 0"); ours/ (our include/dat, -ldat) by LD_PRELOAD on the built-in
# ofa-v2-<netdev>; fewer runs than on TCP (below); then the 1.2/2.0 ping-pong both ways.
# usage: rdma.sh LIBDIR BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "${1:?usage: rdma.sh LIBDIR BUILD_DIR}" && pwd)
out=$(cd "${2:?}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'ofa12 u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 "%s 0" ""\n' "${RXE_VM_NETDEV:?}" > "$work/dat12.conf"
: > "$work/empty.conf"
host=${RXE_VM_IP:?}
host=${host%/*}
# shellcheck disable=SC2034
server_host=$host  # where dapltest clients find their server (consumers/lib.sh)
fail=0
passed=0
# A dapltest server that hangs after a failed test costs this much of the guest's time, not 300 s.
DAPLTEST_SERVER_TIMEOUT=150

loader() {  # mode -> env assignments for `env`
    case $1 in
        path) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/dat12.conf" ;;
        # An empty dat.conf: compat-dapl's libdat.so.1 (loaded beside, unused) complains of a missing one.
        preload) echo "LD_PRELOAD=$libdir/libdat2.so.2 LD_LIBRARY_PATH=$out/compat DAT_OVERRIDE=$work/empty.conf" ;;
    esac
}

# shellcheck source=../consumers/lib.sh
. "$here/../consumers/lib.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

builtin_ia=ofa-v2-$RXE_VM_NETDEV
# The guest is emulated and its time short: compat/ in three dtest modes (bursts of 20), the
# function tests, two transaction tests and a performance test (the limit tests ask the same
# of the library on every transport: tests/dat12/consumers.sh runs them); ours/ (the same
# sources, other headers) in one dtest and one transaction test.
transactions=("-T T -i 100 client SR 4096 2 server SR 4096 2"
    "-T T -t 2 -w 2 -i 50 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2 client SR 1024 3 -f server SR 2048 1 -f")
started=$SECONDS
SUITE="dat12 rdma [compat, ofa12]"
DTEST12_MODES=("" "-p" "-p -b 65536")
dtest12_runs dtest path "$out/compat/dtest" ofa12 "$host" "-B 20"
dapltest12_functions dapltest path "$out/compat/dapltest" ofa12
dapltest_against_server dapltest path "$out/compat/dapltest" ofa12 "${transactions[@]}" "-T P -i 500 RW 4096 2"
echo "$SUITE: $((SECONDS - started)) s"
started=$SECONDS
SUITE="dat12 rdma [ours, $builtin_ia]"
DTEST12_MODES=("")
dtest12_runs dtest preload "$out/ours/dtest" "$builtin_ia" "$host" "-B 20"
built "$out/ours/dapltest" && dapltest_against_server dapltest preload "$out/ours/dapltest" "$builtin_ia" "${transactions[1]}"
echo "$SUITE: $((SECONDS - started)) s"
SUITE="dat12 rdma [pingpong, $builtin_ia]"
pingpong_mixed path path "$out/ours/pingpong12" "$out/ours/pingpong20" "$builtin_ia" "$host"
pingpong_mixed preload path "$out/compat/pingpong12" "$out/ours/pingpong20" "$builtin_ia" "$host"
echo "dat12 over RDMA: $passed runs passed"
exit $fail
