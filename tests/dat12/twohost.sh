#!/usr/bin/env bash
# DAT 1.2 programs on our library between two hosts (tests/twohost/netns.sh: two network
# namespaces joined by a veth pair dat0), over the socket path (LIBDAT_DIRECT=0): compat-dapl
# 1.2.19's dtest and dapltest as tests/dat12/consumers.sh runs them on tcp-lo, servers on host A,
# clients on host B; compat/ (its own headers and libdat.so.1) by LD_LIBRARY_PATH on the
# built-in tcp-dat0, ours/ (our include/dat, -ldat) by LD_PRELOAD with a `u1.2` dat.conf line;
# then the 1.2/2.0 ping-pong both ways. About 2 minutes on a quiet 2-core machine.
# Needs root, iproute2 and nft: otherwise says why and exits 77 (skipped).
# usage: twohost.sh LIBDIR INCLUDE_DIR [BUILD_DIR (build/dat12)]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "${1:?usage: twohost.sh LIBDIR INCLUDE_DIR [BUILD_DIR]}" && pwd)
inc=${2:?}
out=${3:-build/dat12}
TWOHOST_PREFIX=${TWOHOST_PREFIX:-dat12-$$}
# shellcheck source=../twohost/netns.sh
. "$here/../twohost/netns.sh"
twohost_usable || exit 77
# A build that failed in part leaves the programs that built right: those run, the step fails.
"$here/build.sh" "$libdir" "$inc" "$out"
rc=$?
[ $rc = 77 ] && exit 77
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'twohost_down; rm -rf "$work"' EXIT
printf 'net12 u1.2 threadsafe default libdat-tcp.so.1 dapl.1.2 "dat0 0" ""\n' > "$work/dat12.conf"
fail=$((rc != 0))
passed=0
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
server_host=$TWOHOST_ADDR_A

loader() {  # mode -> env assignments for `env`
    case $1 in
        path) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf LIBDAT_DIRECT=0" ;;
        preload) echo "LD_PRELOAD=$libdir/libdat2.so.2 LD_LIBRARY_PATH=$out/compat DAT_OVERRIDE=$work/dat12.conf LIBDAT_DIRECT=0" ;;
    esac
}

# shellcheck source=../consumers/lib.sh
. "$here/../consumers/lib.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

twohost_up 1500 || { echo "dat12 twohost: could not make the hosts"; exit 1; }
SERVER_NS="ip netns exec $TWOHOST_A"
CLIENT_NS="ip netns exec $TWOHOST_B"
a=$TWOHOST_ADDR_A
for way in compat ours; do
    mode=path ia=tcp-dat0
    [ $way = ours ] && mode=preload ia=net12
    started=$SECONDS
    SUITE="dat12 twohost [$way, $ia]"
    dtest12_runs dtest $mode "$out/$way/dtest" $ia "$a"
    dapltest12_runs "dapltest (limits and functions on host B)" $mode "$out/$way/dapltest" $ia 500 2000
    echo "$SUITE: $((SECONDS - started)) s"
done
SUITE="dat12 twohost [pingpong, tcp-dat0]"
pingpong_mixed path path "$out/ours/pingpong12" "$out/ours/pingpong20" tcp-dat0 "$a"
pingpong_mixed preload path "$out/compat/pingpong12" "$out/ours/pingpong20" tcp-dat0 "$a"
echo "dat12 twohost: $passed runs passed"
exit $fail
