#!/usr/bin/env bash
# Inside the soft-RoCE guest: Debian's unmodified dapl2-utils over the RDMA IA, selected by an
# OpenFabrics dat.conf line (libdaplofa.so.2 "<netdev> 0"): on our library by
# LD_LIBRARY_PATH (a few by LD_PRELOAD), with no dat.conf on the built-in IA, and against
# OpenFabrics' own library (ours on one side, theirs on the other, both ways). Sizes are kept
# small: the guest is emulated.
# usage: consumers.sh LIBDIR
set -uo pipefail
libdir=$(cd "${1:?}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ia=ofa-v2-rxe
printf '%s u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' $ia "${RXE_VM_NETDEV:?}" > "$work/dat.conf"
host=${RXE_VM_IP:?}
server_host=$host  # where dapltest clients find their server (lib.sh)
fail=0
passed=0

loader() {  # mode -> env assignments for `env`: ours (path, preload) or OpenFabrics'
    case $1 in
        path) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/dat.conf" ;;
        openfabrics) echo "DAT_OVERRIDE=$work/dat.conf" ;;
        builtin) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf" ;;
        preload) echo "LD_PRELOAD=$libdir/libdat2.so.2 DAT_OVERRIDE=$work/dat.conf" ;;
    esac
}

# shellcheck source=../consumers/lib.sh
. "$(dirname "$0")/../consumers/lib.sh"

dtest_modes=("" "-p" "-c" "-W" "-w" "-u" "-D" "-b 1" "-p -u")
every_run() {  # mode
    local mode=$1 m started=$SECONDS
    for m in "${dtest_modes[@]}"; do
        pair "dtest ${m:-default}" $mode "waiting for client connection" \
            "/usr/bin/dtest -P $ia -s -B 20 -b 65536 $m" "/usr/bin/dtest -P $ia -h $host -B 20 -b 65536 $m" 15828
    done
    pair "dtestcm 50 connections" $mode "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 50" "/usr/bin/dtestcm -P $ia -h $host -c 50" 15828
    pair "dtestx (write with immediate data, compare-and-swap, fetch-and-add)" $mode "" \
        "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h $host" 15828
    ERRORS="FAILED\|Error\| returned " pair "dtestx -p (the same, then the IA's, EPs' and EVDs' counters)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -p" "/usr/bin/dtestx -P $ia -c -h $host -p" 15828
    pair "dtestx -u (UD: 4 exchanges each way, datagrams through their address handles)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -u" "/usr/bin/dtestx -P $ia -c -h $host -u" 15828
    pair "dtestx -U 3 -m (UD: an EP for each of the peer's)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -U 3 -m" "/usr/bin/dtestx -P $ia -c -h $host -U 3 -m" 15828
    alone "dtestx -q (dat_ib_open_query)" $mode "/usr/bin/dtestx -P $ia -q" "Open_Query: $ia num_attrs"
    # dtestsrq has no side channel, and an rdma-cm listener is no TCP socket: its ready line
    # (it flushes its output) says it listens.
    pair "dtestsrq (4 EPs on one SRQ, bursts of 8)" $mode "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s -c 4 -B 8 -t 10" "/usr/bin/dtestsrq -P $ia -h $host -c 4 -B 8 -t 10"
    pair "dtestsrq default" $mode "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s" "/usr/bin/dtestsrq -P $ia -h $host"
    dapltest_against_server dapltest $mode /usr/bin/dapltest $ia \
        "-T T -i 100 client SR 4096 2 server SR 4096 2" \
        "-T T -t 2 -w 2 -i 50 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2" \
        "-T P -i 500 RW 4096 2" \
        "-T P -i 500 RR 4096 2" \
        "${DAPLTEST_FUNCTIONS[@]}"
    dapltest_limits dapltest $mode /usr/bin/dapltest $ia
    echo "consumers over RDMA ($mode): $((SECONDS - started)) s"
}
# Every run on our library as found by LD_LIBRARY_PATH; by LD_PRELOAD, the same library bound
# another way (the host's runs check each import binds to it), a few: the guest is emulated.
every_run path
started=$SECONDS
pair "dtest default" preload "waiting for client connection" \
    "/usr/bin/dtest -P $ia -s -B 20 -b 65536" "/usr/bin/dtest -P $ia -h $host -B 20 -b 65536" 15828
pair "dtestx (write with immediate data, compare-and-swap, fetch-and-add)" preload "" \
    "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h $host" 15828
dapltest_against_server dapltest preload /usr/bin/dapltest $ia \
    "-T T -t 2 -w 2 -i 50 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2"
echo "consumers over RDMA (preload): $((SECONDS - started)) s"
started=$SECONDS
# One library on each side: ours serves OpenFabrics' client, and the other way round (dtest,
# dtestx's immediate data and atomics, and dapltest's transaction test with data checked).
CLIENT_MODE=openfabrics pair "dtest, OpenFabrics client" path "waiting for client connection" \
    "/usr/bin/dtest -P $ia -s -B 20 -b 65536" "/usr/bin/dtest -P $ia -h $host -B 20 -b 65536" 15828
CLIENT_MODE=path pair "dtest, OpenFabrics server" openfabrics "waiting for client connection" \
    "/usr/bin/dtest -P $ia -s -B 20 -b 65536" "/usr/bin/dtest -P $ia -h $host -B 20 -b 65536" 15828
CLIENT_MODE=openfabrics pair "dtestx, OpenFabrics client" path "" \
    "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h $host" 15828
CLIENT_MODE=path pair "dtestx, OpenFabrics server" openfabrics "" \
    "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h $host" 15828
interop_dapltest=("-T T -i 100 -V client SR 4096 2 server SR 4096 2"
    "-T T -t 2 -w 2 -i 50 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2")
CLIENT_MODE=openfabrics dapltest_against_server "dapltest, OpenFabrics client" path /usr/bin/dapltest $ia "${interop_dapltest[@]}"
CLIENT_MODE=path dapltest_against_server "dapltest, OpenFabrics server" openfabrics /usr/bin/dapltest $ia "${interop_dapltest[@]}"
# No dat.conf: the built-in IA of the device's port (its address from the port's interface).
builtin_ia=ofa-v2-${RXE_VM_IBDEV:?}-1
pair "dtest on the built-in $builtin_ia" builtin "waiting for client connection" \
    "/usr/bin/dtest -P $builtin_ia -s -B 20 -b 65536" "/usr/bin/dtest -P $builtin_ia -h $host -B 20 -b 65536" 15828
echo "consumers over RDMA (interop, built-in): $((SECONDS - started)) s"
echo "consumers over RDMA: $passed runs passed"
# The DAT 1.2 programs and the 1.2/2.0 ping-pong (tests/dat12/rdma.sh), built on the host.
case ${DAT12_BUILD:-} in
    skipped*) echo "dat12 over RDMA: ${DAT12_BUILD}" ;;
    "" | failed) echo "dat12 over RDMA: the DAT 1.2 programs were not built on the host"; fail=1 ;;
    *) "$(dirname "$0")/../dat12/rdma.sh" "$libdir" "$DAT12_BUILD" || fail=1 ;;
esac
exit $fail
