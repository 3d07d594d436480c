#!/usr/bin/env bash
# Debian's unmodified dapl2-utils binaries run end to end on our library over TCP on loopback:
# dtest in its modes, dtestcm with hundreds of connections, dapltest transaction and
# performance tests. Half the runs load us by LD_LIBRARY_PATH with no dat.conf at all (the
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

wait_ready() {  # log file, pattern, pid: until the server says it is ready (or dies)
    for _ in $(seq 400); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

pair() {  # name, mode, ready pattern, server command, client command (both quoted strings)
    local name=$1 mode=$2 ready=$3 server=$4 client=$5
    local env; env=$(loader "$mode")
    # shellcheck disable=SC2086
    env $env timeout 120 $server > "$work/server.log" 2>&1 &
    local spid=$!
    if ! wait_ready "$work/server.log" "$ready" $spid; then
        echo "consumers: $name ($mode): the server did not get ready"; tail -5 "$work/server.log"
        kill $spid 2>/dev/null; wait $spid 2>/dev/null; fail=1; return
    fi
    # shellcheck disable=SC2086
    env $env timeout 120 $client > "$work/client.log" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    if [ $crc != 0 ] || [ $src != 0 ] || grep -q "FAILED\|Error\|ERR" "$work/client.log" "$work/server.log"; then
        echo "consumers: $name ($mode): client exit $crc, server exit $src"
        grep -h "FAILED\|Error\|ERR" "$work/client.log" "$work/server.log" | head -5
        fail=1
    else
        local summary
        summary=$(grep -h "PASSED\|CPS\|raw:\|MB/sec\|Total WQE" "$work/client.log" | tail -1 | tr -s ' ')
        echo "consumers: $name ($mode): ok ${summary:+- $summary}"
        passed=$((passed + 1))
    fi
}

dtest_modes=("" "-p" "-c" "-W" "-w" "-u" "-D" "-b 1" "-b 4194304" "-B 100" "-p -u -b 65536")
for mode in path preload; do
    ia=tcp-lo
    [ "$mode" = preload ] && ia=tcp-conf
    for m in "${dtest_modes[@]}"; do
        pair "dtest ${m:-default}" $mode "waiting for client connection" \
            "/usr/bin/dtest -P $ia -s $m" "/usr/bin/dtest -P $ia -h 127.0.0.1 $m"
    done
    pair "dtestcm 500 connections" $mode "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 500" "/usr/bin/dtestcm -P $ia -h 127.0.0.1 -c 500"
    pair "dtestcm 200 connections, wait" $mode "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 200 -w" "/usr/bin/dtestcm -P $ia -h 127.0.0.1 -c 200 -w"
    # dapltest: one server serves every client run, then a quit command stops it.
    env $(loader $mode) timeout 300 /usr/bin/dapltest -T S -D $ia > "$work/dapltest-server.log" 2>&1 &
    dpid=$!
    if ! wait_ready "$work/dapltest-server.log" "Service Point Ready" $dpid; then
        echo "consumers: dapltest server ($mode) did not get ready"; fail=1
        kill $dpid 2>/dev/null
    else
        for args in \
            "-T T -i 500 client SR 4096 2 server SR 4096 2" \
            "-T T -t 2 -w 4 -i 300 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2 client SR 1024 3 -f server SR 2048 1 -f" \
            "-T P -i 2000 RW 4096 2" \
            "-T P -i 2000 RR 4096 2" \
            "-T P -i 2000 -m b RW 65536 1"; do
            # dapltest reads -T first: the options after it depend on the test.
            set -- $args
            local_t="$1 $2"; shift 2
            env $(loader $mode) timeout 120 /usr/bin/dapltest $local_t -s 127.0.0.1 -D $ia "$@" > "$work/client.log" 2>&1
            rc=$?
            if [ $rc != 0 ] || grep -q "Error\|FAIL" "$work/client.log"; then
                echo "consumers: dapltest $args ($mode): exit $rc"; grep -h "Error\|FAIL" "$work/client.log" | head -3; fail=1
            else
                echo "consumers: dapltest $args ($mode): ok - $(grep -h "raw:\|Total WQE" "$work/client.log" | tail -1 | tr -s ' ')"
                passed=$((passed + 1))
            fi
        done
        env $(loader $mode) timeout 30 /usr/bin/dapltest -T Q -s 127.0.0.1 -D $ia > /dev/null 2>&1
        wait $dpid || { echo "consumers: dapltest server ($mode) did not exit cleanly"; fail=1; }
    fi
done
echo "consumers: $passed runs passed"
exit $fail
