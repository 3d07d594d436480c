#!/usr/bin/env bash
# The benchmark's two-host section: our TCP transport between two hosts (network namespaces
# joined by a veth pair, tests/twohost/netns.sh) beside a raw TCP socket between the same two,
# each pair run back to back and the order alternated round by round, so both see the same
# machine. The server runs on host A, the client on host B (datperf and rawtcp with -l / -c).
# Ours runs over the socket path (LIBDAT_DIRECT=0), the one a peer on another host takes;
# between the namespaces the library takes it anyway, which the section checks first.
#
#   ping-pong latency, 8 B, polling (dat_evd_dequeue / a non-blocking recv spun on) and
#     blocking (dat_evd_wait / a blocking recv); target <= 1.10x raw. Ours and raw run in one
#     pair of processes (datperf -r): the ping-pong alternates between our connection and a
#     raw TCP socket beside it in batches of a few milliseconds, so each pair of figures sees
#     the same machine (this one's speed drifts by half from one second to the next: separate
#     runs gave round ratios from 0.6 to 2.1)
#   send and wait: one 8-byte send at a time, its completion awaited before the next; raw: a
#     send and the receiver's one-byte answer (a DAT send completes once the peer has the
#     message: only an answer from the peer tells a socket's sender that); messages per second,
#     target >= 0.91x raw (no more than 1.10x raw's time a message)
#   bandwidth, 64 KiB and 1 MiB: sends and RDMA writes, 16 in flight, beside a raw stream of
#     the same writes from and into 16 buffers; target >= 0.90x raw
#   empty dat_evd_dequeue: ns a call on a connected EP's connection EVD and its receive EVD,
#     quiet and with a busy loop on every core, beside a non-blocking recv of an empty socket
#     (what a poll that asks the kernel costs); no target (OpenFabrics' figure needs RDMA
#     hardware)
#
# Prints medians and spreads (min..max), and each pair's ratio with its verdict; figures only:
# nothing here fails on speed. Needs root (network namespaces): says why and skips otherwise.
# The load average is printed at the start and the end: the figures are the machine's too.
# usage: twohost.sh BUILDDIR [ROUNDS]
set -uo pipefail
build=$(cd "${1:?usage: twohost.sh BUILDDIR [ROUNDS]}" && pwd)
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
export TWOHOST_PREFIX=${TWOHOST_PREFIX:-bench-$$}
# shellcheck source=../tests/twohost/netns.sh
. "$here/../tests/twohost/netns.sh"

echo "Two hosts: our socket path between two network namespaces beside a raw TCP socket between them"
if ! why=$(twohost_usable); then
    echo "  skipped: $why"
    exit 0
fi
work=$(mktemp -d)
busy=()
spid=
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null
    twohost_down
    rm -rf "$work"
}
trap cleanup EXIT
twohost_up 1500 || { echo "  skipped: the hosts could not be made"; exit 0; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "  load average at the start: $(load) ($(nproc) cores)"

# Each run on a port of its own: none waits for an earlier one's to be free.
port=$((30000 + RANDOM % 20000))
failures=0
# One run: the server (-l) on host A, awaited until it listens, then the client (-c) on host
# B; its figures in `out`, empty if either side failed (the failure goes to stderr). Not run
# in a subshell: the port and the failures are counted here.
pair() {  # env assignments..., program (datperf|rawtcp), flags...
    local envs=()
    while [[ $1 == *=* ]]; do envs+=("$1"); shift; done
    local prog=$1 ia=()
    shift
    [ "$prog" = datperf ] && ia=(-P tcp-dat0)
    port=$((port + 1))
    local run=(env LD_LIBRARY_PATH="$build/lib" DAT_OVERRIDE=/dev/null LIBDAT_DIRECT=0 "${envs[@]}")
    twohost_a "${run[@]}" timeout 120 "$build/bin/$prog" "${ia[@]}" -q -l $port "$@" > "$work/server.log" 2>&1 &
    spid=$!
    local ready=0
    for _ in $(seq 500); do
        grep -q "listening" "$work/server.log" 2>/dev/null && { ready=1; break; }
        kill -0 $spid 2>/dev/null || break
        sleep 0.02
    done
    local status=1
    out=""
    if [ $ready = 1 ]; then
        out=$(twohost_b "${run[@]}" timeout 120 "$build/bin/$prog" "${ia[@]}" -q -c "$TWOHOST_ADDR_A:$port" "$@" 2> "$work/client.err")
        status=$?
    else
        kill $spid 2>/dev/null   # it never listened: no client will come
    fi
    wait $spid || status=1
    spid=
    if [ $status != 0 ]; then
        failures=$((failures + 1))
        { echo "bench: two hosts: $prog $* failed"; sed 's/^/    server: /' "$work/server.log"
          sed 's/^/    client: /' "$work/client.err"; } >&2
        out=""
    fi
}

declare -A results
add() { results[$1]+="$2"$'\n'; }
# One run's figure (always a line, empty for a failed run, so rounds stay paired).
measure() {  # key, pair's arguments...
    local key=$1
    shift
    pair "$@"
    add "$key" "$out"
}

# Between the namespaces the library offers no direct path (the peer's address is neither
# loopback nor its own): with the path allowed, LIBDAT_DEBUG's count of requests carried out
# directly stays 0 on both sides, for messages and RDMA writes.
direct_check() {
    local lines=0 direct=0 n
    for flags in "-m pingpong -s 8 -n 1000" "-m write -s 65536 -n 200"; do
        # shellcheck disable=SC2086
        pair LIBDAT_DIRECT=1 LIBDAT_DEBUG=1 datperf $flags 2>/dev/null
        for f in "$work/server.log" "$work/client.err"; do
            n=$(grep -oE '[0-9]+ requests carried out directly' "$f" | grep -oE '^[0-9]+')
            [ -n "$n" ] || continue
            lines=$((lines + 1))
            direct=$((direct + n))
        done
    done
    if [ $lines = 4 ] && [ $direct = 0 ]; then
        echo "  direct path between the hosts: not taken (LIBDAT_DEBUG: 0 requests carried out directly on either side)"
    else
        echo "  direct path between the hosts: $direct requests carried out directly ($lines of 4 connections reported): LIBDAT_DIRECT=0 keeps the rows below on the socket"
    fi
}
direct_check

# Round trips a latency run, messages a send-and-wait run, bytes a bandwidth run, calls a
# dequeue run: a second or less each on a quiet machine. Under load, runs in which both sides
# spin stretch the most (raw polling took 45 s for 5000 round trips at load 19 on 2 cores).
latency_n=10000
sendwait_n=5000
stream_bytes=500000000
dequeue_n=500000
# Ours and raw back to back, in the round's order.
versus() {  # key of ours, key of raw, datperf's flags, rawtcp's flags
    local who
    for who in "${order[@]}"; do
        # shellcheck disable=SC2086
        if [ "$who" = dat ]; then measure "$1" datperf $3; else measure "$2" rawtcp $4; fi
    done
}

for r in $(seq "$rounds"); do
    order=(dat raw)
    [ $((r % 2)) = 0 ] && order=(raw dat)
    for how in poll wait; do
        flags=(-m pingpong -s 8 -n $latency_n -r)
        [ $how = poll ] && flags+=(-p)
        pair datperf "${flags[@]}"
        read -r ours raw <<< "$out"
        add "lat_dat_$how" "${ours:-}"
        add "lat_raw_$how" "${raw:-}"
    done
    versus sw_dat_wait sw_raw_wait "-m sendwait -s 8 -n $sendwait_n" "-m sendwait -s 8 -n $sendwait_n"
    versus sw_dat_poll sw_raw_poll "-m sendwait -p -s 8 -n $sendwait_n" "-m sendwait -p -s 8 -n $sendwait_n"
    for s in 65536 1048576; do
        n=$((stream_bytes / s))
        for who in "${order[@]}"; do
            if [ "$who" = dat ]; then
                measure "bw_send_$s" datperf -m send -s $s -n $n
                measure "bw_write_$s" datperf -m write -s $s -n $n
            else
                measure "bw_raw_$s" rawtcp -m stream -s $s -n $n -w 16
            fi
        done
    done
    for load in quiet busy; do
        if [ $load = busy ]; then
            for _ in $(seq "$(nproc)"); do
                sh -c 'while :; do :; done' &
                busy+=($!)
            done
        fi
        pair datperf -m dequeue -n $dequeue_n
        read -r conn dto <<< "$out"
        add "dq_conn_$load" "${conn:-}"
        add "dq_dto_$load" "${dto:-}"
        measure "dq_raw_$load" rawtcp -m emptyrecv -n $dequeue_n
        if [ $load = busy ]; then
            kill "${busy[@]}" 2>/dev/null
            wait "${busy[@]}" 2>/dev/null
            busy=()
        fi
    done
    echo "bench: two hosts: round $r of $rounds done" >&2
done

stats() {  # numbers on stdin -> "median (min..max)"
    sort -g | awk '{v[NR]=$1} END {if (NR==0) {print "-"; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f (%.2f..%.2f)\n", m, v[1], v[NR]}'
}
row() {  # label, key
    printf '  %-52s %s\n' "$1" "$(printf '%s' "${results[$2]}" | grep -E '^[0-9.]+$' | stats)"
}
# A pair's ratio, round by round (ours / raw), its median and spread, and whether the median
# meets the target (op: <= or >=, then the bound; none: context only).
ratio() {  # label, key of ours, key of raw, op, bound
    local r verdict="" median
    r=$(paste <(printf '%s' "${results[$2]}") <(printf '%s' "${results[$3]}") |
        awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 {print $1 / $2}' | stats)
    median=${r%% *}
    if [ "$4" = none ]; then
        verdict="(context)"
    elif [ "$median" = - ]; then
        verdict="target $4 $5: no figures"
    elif awk -v m="$median" -v op="$4" -v b="$5" 'BEGIN { exit !(op == "<=" ? m <= b : m >= b) }'; then
        verdict="target $4 $5: meets"
    else
        verdict="target $4 $5: MISSES ($(awk -v m="$median" -v b="$5" 'BEGIN { printf "%+.0f%%", (m / b - 1) * 100 }') from the bound)"
    fi
    printf '  %-52s %-24s %s\n' "$1" "$r" "$verdict"
}

echo "  load average at the end: $(load)"
echo "  8-byte ping-pong, one-way latency in microseconds, median (min..max) of $rounds runs:"
row "libdat tcp-dat0, polling (dat_evd_dequeue)" lat_dat_poll
row "raw TCP beside it, polling (MSG_DONTWAIT)" lat_raw_poll
row "libdat tcp-dat0, blocking (dat_evd_wait)" lat_dat_wait
row "raw TCP beside it, blocking (recv)" lat_raw_wait
echo "  Send and wait for its completion, 8 B, messages per second:"
row "libdat, blocking (dat_evd_wait)" sw_dat_wait
row "raw TCP, send and a 1-byte answer, blocking" sw_raw_wait
row "libdat, polling (dat_evd_dequeue)" sw_dat_poll
row "raw TCP, send and a 1-byte answer, polling" sw_raw_poll
echo "  Bandwidth in MB/s, 16 in flight:"
for s in 65536 1048576; do
    row "libdat send, $((s / 1024)) KiB" "bw_send_$s"
    row "libdat RDMA write, $((s / 1024)) KiB" "bw_write_$s"
    row "raw TCP stream, $((s / 1024)) KiB writes, 16 buffers" "bw_raw_$s"
done
echo "  An empty poll, ns a call, median batch of 1000 calls ($dequeue_n calls a run), quiet and"
echo "  busy (a busy loop on each of the $(nproc) cores):"
for load in quiet busy; do
    row "dat_evd_dequeue, connection EVD, $load" "dq_conn_$load"
    row "dat_evd_dequeue, receive EVD, $load" "dq_dto_$load"
    row "raw recv(MSG_DONTWAIT) of an empty socket, $load" "dq_raw_$load"
done
echo "  Against the targets: libdat / raw, the ratio of each round's pair, median (min..max):"
ratio "latency, polling" lat_dat_poll lat_raw_poll "<=" 1.10
ratio "latency, blocking" lat_dat_wait lat_raw_wait "<=" 1.10
ratio "send and wait, blocking (rate)" sw_dat_wait sw_raw_wait ">=" 0.91
ratio "send and wait, polling (rate)" sw_dat_poll sw_raw_poll ">=" 0.91
for s in 65536 1048576; do
    ratio "send $((s / 1024)) KiB" "bw_send_$s" "bw_raw_$s" ">=" 0.90
    ratio "RDMA write $((s / 1024)) KiB" "bw_write_$s" "bw_raw_$s" ">=" 0.90
done
for load in quiet busy; do
    ratio "empty receive EVD / empty recv, $load" "dq_dto_$load" "dq_raw_$load" none
done
[ $failures = 0 ] || echo "  $failures runs failed (their figures are left out; stderr says why)"
