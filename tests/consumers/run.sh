#!/usr/bin/env bash
# Debian's unmodified dapl2-utils binaries run end to end on our library over TCP on loopback:
# dtest in its modes, dtestcm with hundreds of connections, dtestx's IB extensions, dtestsrq's shared receive queue, dapltest
# transaction and performance tests. Half the runs load us by LD_LIBRARY_PATH with no dat.conf at all (the
# built-in tcp-lo), half by LD_PRELOAD with a dat.conf naming the TCP transport.
# Servers are started first and awaited (their ready line, or their port listening), never
# slept on; every run is time-bounded.
# usage: run.sh LIBDIR
set -uo pipefail
libdir=$(cd "${1:?}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'tcp-conf u2.0 threadsafe default tcp libdat.0.1 "lo" ""\n' > "$work/dat.conf"
fail=0
passed=0

loader() {  # mode -> env assignments for `env`
    if [ "$1" = path ]; then
        echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf"
    else
        echo "LD_PRELOAD=$libdir/libdat2.so.2 DAT_OVERRIDE=$work/dat.conf"
    fi
}

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

dtest_modes=("" "-p" "-c" "-W" "-w" "-u" "-D" "-b 1" "-b 4194304" "-B 100" "-p -u -b 65536")
for mode in path preload; do
    ia=tcp-lo
    [ "$mode" = preload ] && ia=tcp-conf
    for m in "${dtest_modes[@]}"; do
        pair "dtest ${m:-default}" $mode "waiting for client connection" \
            "/usr/bin/dtest -P $ia -s $m" "/usr/bin/dtest -P $ia -h 127.0.0.1 $m" 15828
    done
    pair "dtestcm 500 connections" $mode "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 500" "/usr/bin/dtestcm -P $ia -h 127.0.0.1 -c 500" 15828
    pair "dtestcm 200 connections, wait" $mode "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 200 -w" "/usr/bin/dtestcm -P $ia -h 127.0.0.1 -c 200 -w" 15828
    pair "dtestx (write with immediate data, compare-and-swap, fetch-and-add)" $mode "" \
        "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h 127.0.0.1" 15828
    ERRORS="FAILED\|Error\| returned " pair "dtestx -p (the same, then the IA's, EPs' and EVDs' counters)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -p" "/usr/bin/dtestx -P $ia -c -h 127.0.0.1 -p" 15828
    pair "dtestx -u (UD: 4 exchanges each way, datagrams through their address handles)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -u" "/usr/bin/dtestx -P $ia -c -h 127.0.0.1 -u" 15828
    pair "dtestx -U 3 -m (UD: an EP for each of the peer's)" $mode "" \
        "/usr/bin/dtestx -P $ia -s -U 3 -m" "/usr/bin/dtestx -P $ia -c -h 127.0.0.1 -U 3 -m" 15828
    alone "dtestx -q (dat_ib_open_query)" $mode "/usr/bin/dtestx -P $ia -q" "Open_Query: $ia num_attrs"
    pair "dtestsrq (4 EPs on one SRQ, bursts of 8)" $mode "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s -c 4 -B 8 -t 10" "/usr/bin/dtestsrq -P $ia -h 127.0.0.1 -c 4 -B 8 -t 10" 45248
    pair "dtestsrq default" $mode "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s" "/usr/bin/dtestsrq -P $ia -h 127.0.0.1" 45248
    dapltest_against_server dapltest $mode /usr/bin/dapltest $ia \
        "-T T -i 500 client SR 4096 2 server SR 4096 2" \
        "-T T -t 2 -w 4 -i 300 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2 client SR 1024 3 -f server SR 2048 1 -f" \
        "-T P -i 2000 RW 4096 2" \
        "-T P -i 2000 RR 4096 2" \
        "-T P -i 2000 -m b RW 65536 1" \
        "${DAPLTEST_FUNCTIONS[@]}"
    dapltest_limits dapltest $mode /usr/bin/dapltest $ia
done
echo "consumers: $passed runs passed"
exit $fail
