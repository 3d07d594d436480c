#!/usr/bin/env bash
# Inside the soft-RoCE guest (run by tests/rdma/consumers.sh): the DAT 1.2 programs that
# tests/dat12/build.sh built on the host, over RDMA. compat/ (compat-dapl's own headers and
# libdat.so.1) by LD_LIBRARY_PATH through a compat-dapl dat.conf line (`u1.2`,
# libdaplcma.so.1 "<netdev> 0"); ours/ (our include/dat, -ldat) by LD_PRELOAD on the built-in
# ofa-v2-<netdev>; then the 1.2/2.0 ping-pong both ways. Sizes are the guest's small ones.
# usage: rdma.sh LIBDIR BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "${1:?usage: rdma.sh LIBDIR BUILD_DIR}" && pwd)
out=$(cd "${2:?}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'ofa12 u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 "%s 0" ""\n' "${RXE_VM_NETDEV:?}" > "$work/dat12.conf"
host=${RXE_VM_IP:?}
host=${host%/*}
server_host=$host
fail=0
passed=0

loader() {  # mode -> env assignments for `env`
    case $1 in
        path) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/dat12.conf" ;;
        preload) echo "LD_PRELOAD=$libdir/libdat2.so.2 LD_LIBRARY_PATH=$out/compat DAT_OVERRIDE=$work/none.conf" ;;
    esac
}

# shellcheck source=../consumers/lib.sh
. "$here/../consumers/lib.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

builtin_ia=ofa-v2-$RXE_VM_NETDEV
for way in compat ours; do
    mode=path ia=ofa12
    [ $way = ours ] && mode=preload ia=$builtin_ia
    started=$SECONDS
    SUITE="dat12 rdma [$way, $ia]"
    dtest12_runs dtest $mode "$out/$way/dtest" "$ia" "$host" "-B 20"
    dapltest12_runs dapltest $mode "$out/$way/dapltest" "$ia" 100 500
    echo "$SUITE: $((SECONDS - started)) s"
done
SUITE="dat12 rdma [pingpong, $builtin_ia]"
pingpong_mixed path path "$out/ours" "$builtin_ia" "$host"
echo "dat12 over RDMA: $passed runs passed"
exit $fail
