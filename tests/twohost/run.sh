#!/usr/bin/env bash
# Debian's unmodified dapl2-utils between two hosts over TCP: the servers on host A, the clients
# on host B (netns.sh: two network namespaces joined by a veth pair named dat0 on both ends), so
# every byte crosses a network device and the peer is never on this host. Half the runs load us
# by LD_LIBRARY_PATH with no dat.conf (the built-in tcp-dat0), half by LD_PRELOAD with each
# host's own dat.conf naming the IA dat-net. The parts, each timed:
#
#   1. every consumer run tests/consumers/run.sh makes on tcp-lo, over the socket path
#      (LIBDAT_DIRECT=0), MTU 1500, quiet machine (built-in IA; dtest -D with 200 round trips),
#      and a 64 KiB memory-polling ping-pong (datperf) that must keep its pace;
#   2. the same with the direct path allowed (dat.conf), each dtest mode with bursts of 100:
#      between hosts the library must still take the socket (checked: no request carried out
#      directly, against a control run within host A where requests are);
#   3. a subset (dtest default and -b 4194304, dtestcm, dapltest -T T) with a busy loop per
#      core, with four per core (built-in IA), and at MTU 9000;
#   4. dtest (default, and -D: every write's data checked) and dapltest -T T (-V: every buffer
#      checked) with 2% of the packets each host sends dropped;
#   5. the C conformance suite inside host A over tcp-dat0 (its connections, within one
#      process, cross the veth address), with LIBDAT_DIRECT=0 and by default.
#
# Servers are awaited (their ready line, their port listening in host A), never slept on; every
# program is time-bounded (RUN_TIMEOUT seconds each, default 90; more under load and loss), so a
# hang fails its run. About 8 minutes on a quiet 2-core machine; each part prints its time.
# Needs root, iproute2 and nft: otherwise says why and exits 77 (skipped).
# usage: run.sh LIBDIR
set -uo pipefail
libdir=$(cd "${1:?usage: run.sh LIBDIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TWOHOST_PREFIX=${TWOHOST_PREFIX:-twohost-$$}
# shellcheck source=netns.sh
. "$here/netns.sh"
twohost_usable || exit 77
work=$(mktemp -d)
fail=0
passed=0
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
server_host=$TWOHOST_ADDR_A
direct=0   # LIBDAT_DIRECT for the part under way: 0 (off) or "" (the library's default)
debug=""   # 1: LIBDAT_DEBUG for the run under way
busy=()

loader() {  # mode -> env assignments for `env`. The conf mode's DAT_OVERRIDE is its host's own,
    # set by SERVER_NS / CLIENT_NS (hosts_up); the builtin mode overrides it with no file at all.
    local extra="${direct:+LIBDAT_DIRECT=$direct} ${debug:+LIBDAT_DEBUG=1}"
    if [ "$1" = builtin ]; then
        echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf $extra"
    else
        echo "LD_PRELOAD=$libdir/libdat2.so.2 $extra"
    fi
}

# shellcheck source=../consumers/lib.sh
. "$root/tests/consumers/lib.sh"

stop_load() {
    [ ${#busy[@]} = 0 ] && return
    kill "${busy[@]}" 2>/dev/null
    wait "${busy[@]}" 2>/dev/null
    busy=()
}
start_load() {  # busy loops per core
    for _ in $(seq $(($1 * $(nproc)))); do
        sh -c 'while :; do :; done' &
        busy+=($!)
    done
}
cleanup() {
    stop_load
    twohost_down
    rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "twohost: stopped by a signal (an overall time bound?)"; exit 1' INT TERM

hosts_up() {  # MTU: (re)makes the hosts, each with its own dat.conf
    twohost_up "$1" || { echo "twohost: could not make the hosts (MTU $1)"; exit 1; }
    twohost_conf a "$work/a.conf"
    twohost_conf b "$work/b.conf"
    SERVER_NS="ip netns exec $TWOHOST_A env DAT_OVERRIDE=$work/a.conf"
    CLIENT_NS="ip netns exec $TWOHOST_B env DAT_OVERRIDE=$work/b.conf"
}

part_started=0
part() {  # title: starts a part (and closes the one before with its time)
    part_end
    part_title=$1
    part_started=$SECONDS
    echo "twohost: == $part_title"
}
part_end() {
    [ -n "${part_title:-}" ] && echo "twohost: == $part_title: $((SECONDS - part_started)) s"
    part_title=""
}

ia_of() { if [ "$1" = builtin ]; then echo tcp-dat0; else echo dat-net; fi; }

# dtest's modes as tests/consumers runs them, but -D with 200 round trips of 4 MiB, not 1000
# (75 s here: dtest makes, copies back and compares each 4 MiB pattern; 50-65 s on one host too).
dtest_modes=("" "-p" "-c" "-W" "-w" "-u" "-D -B 200" "-b 1" "-b 4194304" "-B 100" "-p -u -b 65536")
every_consumer_run() {  # mode [, burst]: what tests/consumers/run.sh runs on tcp-lo, server A,
    # client B; with a burst, every dtest mode moves that many buffers a phase (-B) instead
    local mode=$1 burst=${2:-} ia m a=$TWOHOST_ADDR_A
    ia=$(ia_of "$mode")
    for m in "${dtest_modes[@]}"; do
        if [ -n "$burst" ]; then
            [ "$m" = "-B 100" ] && continue  # a short burst: what every run is then
            m="${m%-B *}"; m="${m% } -B $burst"; m=${m# }
        fi
        pair "dtest ${m:-default}" "$mode" "waiting for client connection" \
            "/usr/bin/dtest -P $ia -s $m" "/usr/bin/dtest -P $ia -h $a $m" 15828
    done
    pair "dtestcm 500 connections" "$mode" "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 500" "/usr/bin/dtestcm -P $ia -h $a -c 500" 15828
    pair "dtestcm 200 connections, wait" "$mode" "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 200 -w" "/usr/bin/dtestcm -P $ia -h $a -c 200 -w" 15828
    pair "dtestx (write with immediate data, compare-and-swap, fetch-and-add)" "$mode" "" \
        "/usr/bin/dtestx -P $ia -s" "/usr/bin/dtestx -P $ia -c -h $a" 15828
    ERRORS="FAILED\|Error\| returned " pair "dtestx -p (the same, then the counters)" "$mode" "" \
        "/usr/bin/dtestx -P $ia -s -p" "/usr/bin/dtestx -P $ia -c -h $a -p" 15828
    pair "dtestx -u (UD: 4 exchanges each way)" "$mode" "" \
        "/usr/bin/dtestx -P $ia -s -u" "/usr/bin/dtestx -P $ia -c -h $a -u" 15828
    pair "dtestx -U 3 -m (UD: an EP for each of the peer's)" "$mode" "" \
        "/usr/bin/dtestx -P $ia -s -U 3 -m" "/usr/bin/dtestx -P $ia -c -h $a -U 3 -m" 15828
    alone "dtestx -q (dat_ib_open_query, host B)" "$mode" "/usr/bin/dtestx -P $ia -q" "Open_Query: $ia num_attrs"
    pair "dtestsrq (4 EPs on one SRQ, bursts of 8)" "$mode" "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s -c 4 -B 8 -t 10" "/usr/bin/dtestsrq -P $ia -h $a -c 4 -B 8 -t 10" 45248
    pair "dtestsrq default" "$mode" "server ready on port" \
        "/usr/bin/dtestsrq -P $ia -s" "/usr/bin/dtestsrq -P $ia -h $a" 45248
    dapltest_against_server dapltest "$mode" /usr/bin/dapltest "$ia" \
        "-T T -i 500 client SR 4096 2 server SR 4096 2" \
        "-T T -t 2 -w 4 -i 300 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2 client SR 1024 3 -f server SR 2048 1 -f" \
        "-T P -i 2000 RW 4096 2" \
        "-T P -i 2000 RR 4096 2" \
        "-T P -i 2000 -m b RW 65536 1" \
        "${DAPLTEST_FUNCTIONS[@]}"
    dapltest_limits "dapltest (host B)" "$mode" /usr/bin/dapltest "$ia"
}

subset() {  # mode: the runs that move the most data and make the most connections. dtest's
    # buffer is 4 MiB by default: -b 4194304 is the default run again, a second chance at a hang.
    local mode=$1 ia a=$TWOHOST_ADDR_A
    ia=$(ia_of "$mode")
    pair "dtest default" "$mode" "waiting for client connection" \
        "/usr/bin/dtest -P $ia -s" "/usr/bin/dtest -P $ia -h $a" 15828
    pair "dtest -b 4194304" "$mode" "waiting for client connection" \
        "/usr/bin/dtest -P $ia -s -b 4194304" "/usr/bin/dtest -P $ia -h $a -b 4194304" 15828
    pair "dtestcm 500 connections" "$mode" "Server ready" \
        "/usr/bin/dtestcm -P $ia -s -c 500" "/usr/bin/dtestcm -P $ia -h $a -c 500" 15828
    dapltest_against_server dapltest "$mode" /usr/bin/dapltest "$ia" \
        "-T T -i 500 client SR 4096 2 server SR 4096 2" \
        "-T T -t 2 -w 4 -i 300 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2"
}

# Between hosts the library must not take the direct path even when allowed: every connection
# that ends says, under LIBDAT_DEBUG, how many of its requests were carried out directly. The
# count is first seen to be non-zero within host A (so a count that could never move cannot pass).
direct_count_check() {  # what: the logs' connection lines; "some" or "none" carried directly
    local what=$1 want=$2 lines directly
    lines=$(grep -h "libdat: connection of EP .* requests carried out directly" "$work/server.log" "$work/client.log")
    directly=$(echo "$lines" | sed -n 's/.*; \([0-9]*\) requests carried out directly.*/\1/p' | awk '{s += $1} END {print s + 0}')
    if [ -z "$lines" ]; then
        echo "twohost: $what: no connection reported how it was moved (LIBDAT_DEBUG)"; fail=1
    elif { [ "$want" = none ] && [ "$directly" != 0 ]; } || { [ "$want" = some ] && [ "$directly" = 0 ]; }; then
        echo "twohost: $what: $directly requests carried out directly over $(echo "$lines" | wc -l) connection ends, expected $want"
        echo "$lines" | head -4 | sed 's/^/    /'
        fail=1
    else
        echo "twohost: $what: $directly requests carried out directly over $(echo "$lines" | wc -l) connection ends"
        passed=$((passed + 1))
    fi
}

# A memory-polling ping-pong of 64 KiB RDMA writes (datperf -m mempoll): each side spins on its
# buffer's last byte outside the library while its progress thread lands the peer's write. It
# keeps its pace: the best of three runs under MEMPOLL_BOUND_US one way (40-60 us on a quiet
# 2-core machine). An engine that, after each large frame, polled on and yielded its CPU gave a
# spinner sharing that CPU the whole of its time slice, and the write it waited for waited
# with it: 2 ms a message.
MEMPOLL_BOUND_US=1000
mempoll_pace() {
    local best="" run figure
    for run in 1 2 3; do
        pair "datperf -m mempoll -s 65536, run $run" builtin "listening on port" \
            "$root/build/bin/datperf -P tcp-dat0 -m mempoll -s 65536 -n 500 -l 15900" \
            "$root/build/bin/datperf -P tcp-dat0 -m mempoll -s 65536 -n 500 -q -c $TWOHOST_ADDR_A:15900" 15900
        figure=$(tail -n 1 "$work/client.log")
        case $figure in
            ''|*[!0-9.]*) continue ;;
        esac
        if [ -z "$best" ] || awk -v a="$figure" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$figure
        fi
    done
    if [ -n "$best" ] && awk -v a="$best" -v b="$MEMPOLL_BOUND_US" 'BEGIN { exit !(a < b) }'; then
        echo "$SUITE: 64 KiB memory-polling ping-pong: $best us one way at best, under $MEMPOLL_BOUND_US"
        passed=$((passed + 1))
    else
        echo "$SUITE: 64 KiB memory-polling ping-pong: ${best:-no figure} us one way at best, not under $MEMPOLL_BOUND_US"
        fail=1
    fi
}

retransmitted() {  # host command (twohost_a|twohost_b): its TCP's count of retransmitted segments
    "$1" awk '$1 == "Tcp:" && !names {for (i = 2; i <= NF; i++) col[$i] = i; names = 1; next}
        $1 == "Tcp:" {print $col["RetransSegs"]}' /proc/net/snmp
}

ctests_in_a() {  # label, LIBDAT_DIRECT value ("" for the default), DAT API (ctests/run.sh's CTEST_API)
    local label=$1 d=$2 api=$3 rc
    # shellcheck disable=SC2086
    twohost_a env DAT_IA=tcp-dat0 ${d:+LIBDAT_DIRECT=$d} CTEST_API=$api timeout 240 "$root/ctests/run.sh" "$libdir/libdat2.so.2" > "$work/ctest.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        echo "twohost: C conformance suite (DAT $api) in host A, tcp-dat0, $label: ok - $(tail -1 "$work/ctest.log")"
        passed=$((passed + 1))
    else
        echo "twohost: C conformance suite (DAT $api) in host A, tcp-dat0, $label: exit $rc - $(tail -1 "$work/ctest.log")"
        grep -E "^ctest: | FAIL " "$work/ctest.log" | grep -v "passed, .* failed" | head -10 | sed 's/^/    /'
        fail=1
    fi
}

# --- 1. Every consumer run, socket path.
hosts_up 1500
part "1. every consumer run, socket path (LIBDAT_DIRECT=0), MTU 1500, quiet, built-in tcp-dat0"
SUITE="twohost [socket]"
every_consumer_run builtin
mempoll_pace

# --- 2. The same with the direct path allowed; the library must still take the socket. Past the
# connection's handshake, where the choice is made, the path is part 1's: dtest moves a tenth of
# the data (-B 100).
part "2. every consumer run, direct path allowed (default env), MTU 1500, quiet, dat.conf; dtest -B 100"
direct=""
SUITE="twohost [direct allowed]"
CLIENT_NS=$SERVER_NS debug=1 pair "control: dtest -p -B 100, both on host A" conf "waiting for client connection" \
    "/usr/bin/dtest -P dat-net -s -p -B 100" "/usr/bin/dtest -P dat-net -h $TWOHOST_ADDR_A -p -B 100" 15828
direct_count_check "direct path control, both on host A (dtest -p)" some
debug=1 pair "dtest -p -B 100, LIBDAT_DEBUG" conf "waiting for client connection" \
    "/usr/bin/dtest -P dat-net -s -p -B 100" "/usr/bin/dtest -P dat-net -h $TWOHOST_ADDR_A -p -B 100" 15828
direct_count_check "direct path between hosts (dtest -p)" none
every_consumer_run conf 100
direct=0

# --- 3. The subset under load and at MTU 9000.
part "3a. subset, a busy loop per core, MTU 1500, dat.conf"
SUITE="twohost [1 busy loop per core]"
start_load 1
RUN_TIMEOUT=150 subset conf
stop_load
part "3b. subset, 4 busy loops per core, MTU 1500, built-in tcp-dat0"
SUITE="twohost [4 busy loops per core]"
start_load 4
RUN_TIMEOUT=180 subset builtin
stop_load

# --- 4. Loss.
part "4. dtest and dapltest -T T, 2% loss each way, MTU 1500"
SUITE="twohost [2% loss]"
twohost_loss 2 || { echo "twohost: nft could not set the loss"; exit 1; }
retrans_a=$(retransmitted twohost_a) retrans_b=$(retransmitted twohost_b)
pair_lossy() { RUN_TIMEOUT=150 pair "$@"; }
pair_lossy "dtest default" builtin "waiting for client connection" \
    "/usr/bin/dtest -P tcp-dat0 -s" "/usr/bin/dtest -P tcp-dat0 -h $TWOHOST_ADDR_A" 15828
# -D: the client compares every 64 KiB the server writes to what it should be, 1000 times.
pair_lossy "dtest -D -b 65536 (each write's data checked)" builtin "waiting for client connection" \
    "/usr/bin/dtest -P tcp-dat0 -s -D -b 65536" "/usr/bin/dtest -P tcp-dat0 -h $TWOHOST_ADDR_A -D -b 65536" 15828
# -V: each side checks every buffer it received.
RUN_TIMEOUT=150 dapltest_against_server dapltest conf /usr/bin/dapltest dat-net \
    "-T T -V -i 200 client SR 4096 2 server SR 4096 2" \
    "-T T -t 2 -w 4 -i 100 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2"
# The loss took effect: TCP retransmitted on both hosts (else these runs proved nothing).
retrans_a=$(($(retransmitted twohost_a) - retrans_a)) retrans_b=$(($(retransmitted twohost_b) - retrans_b))
if [ "$retrans_a" -gt 0 ] && [ "$retrans_b" -gt 0 ]; then
    echo "twohost [2% loss]: TCP segments retransmitted: $retrans_a by host A, $retrans_b by host B"
else
    echo "twohost [2% loss]: the loss did not take effect: $retrans_a segments retransmitted by host A, $retrans_b by host B"; fail=1
fi
twohost_loss 0

# --- 5. The C conformance suite inside host A.
part "5. C conformance suite inside host A over tcp-dat0"
ctests_in_a "LIBDAT_DIRECT=0" 0 2.0
ctests_in_a "direct path allowed" "" 2.0
# Its DAT 1.2 half: the seed functions' areas built against include/dat.
ctests_in_a "LIBDAT_DIRECT=0" 0 1.2
ctests_in_a "direct path allowed" "" 1.2

# --- 3c. MTU 9000 (new hosts).
part "3c. subset, MTU 9000, quiet, dat.conf"
hosts_up 9000
SUITE="twohost [MTU 9000]"
subset conf
part_end

echo "twohost: $passed runs passed"
exit $fail
