#!/usr/bin/env bash
# The benchmark: our TCP transport beside a raw TCP socket and libfabric's tcp provider
# (fi_pingpong, Debian libfabric-bin), measured in the same run, interleaved round by round so
# every contender sees the same machine (`LATENCY_PAIRS` latency pairs a round, 3 unless set).
# Prints the median and the spread (min..max) of the runs. Figures only: nothing here passes
# or fails on speed.
# The raw stream is shown twice: from and into 16 buffers in turn, the memory datperf's 16
# transfers in flight use (the comparison the targets are about), and from one buffer that
# stays in the cache.
# Between two processes of one host, messages, RDMA writes and reads go straight into the
# peer's memory (cross-memory attach, src/transport/tcp/direct/); every row of ours is shown
# again with LIBDAT_DIRECT=0, over the socket, the path a peer on another host takes.
# Then the two-host section (bench/twohost.sh): the socket path between two network
# namespaces beside a raw TCP socket between them, with its own rounds (skipped without root).
# usage: run.sh BUILDDIR [ROUNDS]
set -uo pipefail
build=$(cd "${1:?}" && pwd)
rounds=${2:-5}
export LD_LIBRARY_PATH=$build/lib
datperf=$build/bin/datperf
rawtcp=$build/bin/rawtcp

fabric() {  # one fi_pingpong round: microseconds per transfer (one way)
    command -v fi_pingpong >/dev/null || { echo "-"; return; }
    local port=$((20000 + RANDOM % 20000))
    timeout 60 fi_pingpong -p tcp -e msg -B $port -I 10000 -S 8 >/dev/null 2>&1 &
    local spid=$!
    local out=""
    for _ in $(seq 50); do
        out=$(timeout 60 fi_pingpong -p tcp -e msg -P $port -I 10000 -S 8 127.0.0.1 2>/dev/null) && break
        sleep 0.1   # the server is not listening yet: try again
    done
    wait $spid 2>/dev/null
    echo "$out" | awk 'NR==2 {print $7}'
}

stats() {  # numbers on stdin -> "median (min..max)"
    sort -g | awk '{v[NR]=$1} END {if (NR==0) {print "-"; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f (%.2f..%.2f)\n", m, v[1], v[NR]}'
}

dtest_latency() {  # direct (1|0), then dtest's flags: its RDMA-write ping-pong at 64 KiB, microseconds one way
    command -v dtest >/dev/null || { echo "-"; return; }
    local direct=$1 conf
    shift
    conf=$(mktemp)   # an empty dat.conf: the built-in tcp-lo (dtest listens on its fixed 45248)
    LIBDAT_DIRECT=$direct DAT_OVERRIDE=$conf timeout 60 dtest -P tcp-lo -s -b 65536 "$@" >/dev/null 2>&1 &
    local spid=$! out=""
    for _ in $(seq 50); do
        out=$(LIBDAT_DIRECT=$direct DAT_OVERRIDE=$conf timeout 60 dtest -P tcp-lo -h 127.0.0.1 -b 65536 "$@" 2>/dev/null) && break
        sleep 0.1   # the server is not listening yet: try again
    done
    wait $spid 2>/dev/null
    rm -f "$conf"
    echo "$out" | grep -oE 'RDMA write PingPong.*latency [0-9.]+' | grep -oE '[0-9.]+$' | head -1
}

declare -A results
add() { results[$1]+="$2"$'\n'; }

# One latency pair: ours and the raw socket's, in the order given (it alternates from pair to
# pair, so neither always runs first, right after the previous round's bandwidth runs).
latency() {  # key suffix, first (dat|raw), datperf/rawtcp flags...
    local key=$1 first=$2
    shift 2
    local order=(dat raw)
    [ "$first" = raw ] && order=(raw dat)
    for who in "${order[@]}"; do
        if [ "$who" = dat ]; then
            local t
            t=$(timeout 120 $datperf -q -m pingpong -s 8 -n 20000 "$@")
            add "lat_dat_$key" "$t"
            [ "$key" = poll ] && last_dat_poll=$t
            add "lat_sock_$key" "$(LIBDAT_DIRECT=0 timeout 120 $datperf -q -m pingpong -s 8 -n 20000 "$@")"
        else
            add "lat_raw_$key" "$(timeout 120 $rawtcp -q -m pingpong -s 8 -n 20000 "$@")"
        fi
    done
}

# Latency pairs per round: a pair takes half a second, and one pair's ratio swings with the
# machine's speed modes, so each round measures several.
pairs=${LATENCY_PAIRS:-3}
pair=0
last_dat_poll=""
for r in $(seq "$rounds"); do
    for _ in $(seq "$pairs"); do
        first=dat
        [ $((pair % 2)) -eq 1 ] && first=raw
        pair=$((pair + 1))
        latency poll "$first" -p
        latency wait "$first"
    done
    # libfabric runs once a round, beside the round's last polling run of ours.
    add lat_dat_poll_last "$last_dat_poll"
    add lat_fabric    "$(fabric)"
    for s in 65536 1048576; do
        n=$((2000000000 / s / 2))
        add "bw_write_$s" "$(timeout 120 $datperf -q -m write -s $s -n $n)"
        add "bw_write_sock_$s" "$(LIBDAT_DIRECT=0 timeout 120 $datperf -q -m write -s $s -n $n)"
        add "bw_send_$s"  "$(timeout 120 $datperf -q -m send -s $s -n $n)"
        add "bw_send_sock_$s" "$(LIBDAT_DIRECT=0 timeout 120 $datperf -q -m send -s $s -n $n)"
        add "bw_raw_$s"   "$(timeout 120 $rawtcp -q -m stream -s $s -n $n -w 16)"
        add "bw_raw1_$s"  "$(timeout 120 $rawtcp -q -m stream -s $s -n $n)"
    done
    # One-sided progress: both sides poll memory for the other's RDMA write, beside a raw
    # ping-pong whose one side polls and the other blocks in recv (the kernel wakes it, as
    # our engine is woken), then dtest's memory-polling write ping-pongs at 64 KiB and our
    # EVD-polling ping-pong of the same size.
    # Also the same design without any library (`rawtcp -m mempoll`: a thread blocked in recv
    # puts each message where the spinning thread looks): what one wake-up per message costs.
    for s in 8 65536; do
        add "mem_dat_$s" "$(timeout 120 $datperf -q -m mempoll -s $s -n $((s > 8 ? 2000 : 5000)))"
        add "mem_sock_$s" "$(LIBDAT_DIRECT=0 timeout 120 $datperf -q -m mempoll -s $s -n $((s > 8 ? 2000 : 5000)))"
        add "mem_raw_$s" "$(timeout 120 $rawtcp -q -m pingpong -1 -s $s -n $((s > 8 ? 5000 : 20000)))"
        add "mem_design_$s" "$(timeout 120 $rawtcp -q -m mempoll -s $s -n $((s > 8 ? 5000 : 20000)))"
    done
    add poll_dat_65536 "$(timeout 120 $datperf -q -m pingpong -p -s 65536 -n 5000)"
    d=$(dtest_latency 1 -D)
    add dtest_D "$d"
    # dtest -D computes on its critical path (one message in five filled with rand() byte by
    # byte, a compare and a copy of each): that share of its figure, measured alone, is what
    # no library can take away; the rest is the transfers'.
    w=$(timeout 120 "$build/bin/dtestwork" -q -s 65536 -n 1000)
    add dtest_D_work "$w"
    add dtest_D_transfer "$(awk -v d="$d" -v w="$w" 'BEGIN { if (d ~ /^[0-9.]+$/ && w ~ /^[0-9.]+$/) printf "%.2f", d - w; else print "-" }')"
    add dtest_Wp "$(dtest_latency 1 -W -p)"
    add dtest_D_sock "$(dtest_latency 0 -D)"
    add dtest_Wp_sock "$(dtest_latency 0 -W -p)"
    echo "bench: round $r of $rounds done" >&2
done

row() {  # label, key
    printf '  %-44s %s\n' "$1" "$(printf '%s' "${results[$2]}" | grep -E '^[0-9.]+$' | stats)"
}
echo "8-byte ping-pong, one-way latency in microseconds, median (min..max) of $((rounds * pairs)) runs ($pairs a round; libfabric: $rounds):"
row "libdat tcp-lo, polling (dat_evd_dequeue)" lat_dat_poll
row "  over the socket (LIBDAT_DIRECT=0)" lat_sock_poll
row "raw TCP socket, polling (MSG_DONTWAIT)" lat_raw_poll
row "libdat tcp-lo, blocking (dat_evd_wait)" lat_dat_wait
row "  over the socket (LIBDAT_DIRECT=0)" lat_sock_wait
row "raw TCP socket, blocking (recv)" lat_raw_wait
row "libfabric tcp (fi_pingpong -e msg)" lat_fabric
echo "Bandwidth in MB/s, median (min..max):"
for s in 65536 1048576; do
    row "libdat RDMA write, $((s / 1024)) KiB" "bw_write_$s"
    row "  over the socket (LIBDAT_DIRECT=0)" "bw_write_sock_$s"
    row "libdat send, $((s / 1024)) KiB" "bw_send_$s"
    row "  over the socket (LIBDAT_DIRECT=0)" "bw_send_sock_$s"
    row "raw TCP stream, $((s / 1024)) KiB writes, 16 buffers" "bw_raw_$s"
    row "raw TCP stream, $((s / 1024)) KiB writes, one buffer" "bw_raw1_$s"
done

echo "One-sided progress: one-way latency in microseconds, median (min..max):"
for s in 8 65536; do
    row "libdat RDMA write ping-pong polling memory, $s B" "mem_dat_$s"
    row "  over the socket (LIBDAT_DIRECT=0)" "mem_sock_$s"
    row "raw TCP, one side polling, one blocked in recv, $s B" "mem_raw_$s"
    row "raw TCP, both spinning on memory a thread fills, $s B" "mem_design_$s"
done
row "libdat tcp-lo, polling, 64 KiB" poll_dat_65536
row "dtest -D -b 65536 (memory polling, data check)" dtest_D
row "  dtest -D's own work alone (dtestwork)" dtest_D_work
row "  dtest -D less its own work" dtest_D_transfer
row "dtest -W -p -b 65536 (memory polling)" dtest_Wp
row "dtest -D over the socket (LIBDAT_DIRECT=0)" dtest_D_sock
row "dtest -W -p over the socket (LIBDAT_DIRECT=0)" dtest_Wp_sock

ratio() {  # label, key of ours, key of the peer, target: per-round ratio, median (min..max)
    local r
    r=$(paste <(printf '%s' "${results[$2]}") <(printf '%s' "${results[$3]}") |
        awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 {print $1 / $2}' | stats)
    printf '  %-46s %-28s target %s\n' "$1" "$r" "$4"
}
echo "Against the targets: libdat / peer, the ratio of each pair (the peer ran beside it), median (min..max):"
ratio "latency, polling: libdat / raw" lat_dat_poll lat_raw_poll "<= 1.10"
ratio "  over the socket / raw" lat_sock_poll lat_raw_poll "(none: context)"
ratio "latency, blocking: libdat / raw" lat_dat_wait lat_raw_wait "<= 1.10"
ratio "  over the socket / raw" lat_sock_wait lat_raw_wait "(none: context)"
ratio "latency, polling: libdat / libfabric tcp" lat_dat_poll_last lat_fabric "<= 1.00"
for s in 65536 1048576; do
    ratio "RDMA write $((s / 1024)) KiB: libdat / raw 16 buffers" "bw_write_$s" "bw_raw_$s" ">= 0.90"
    ratio "send $((s / 1024)) KiB: libdat / raw 16 buffers" "bw_send_$s" "bw_raw_$s" ">= 0.90"
    ratio "  send over the socket / raw 16 buffers" "bw_send_sock_$s" "bw_raw_$s" "(none: context)"
    ratio "  RDMA write over the socket / raw 16 buffers" "bw_write_sock_$s" "bw_raw_$s" "(none: context)"
done
ratio "write ping-pong polling memory 8 B / raw one blocked" mem_dat_8 mem_raw_8 "<= 1.00"
ratio "write ping-pong polling memory 64 KiB / raw one blocked" mem_dat_65536 mem_raw_65536 "<= 1.00"
ratio "  over the socket, 8 B / raw one blocked" mem_sock_8 mem_raw_8 "(none: context)"
ratio "  over the socket, 64 KiB / raw one blocked" mem_sock_65536 mem_raw_65536 "(none: context)"
ratio "  over the socket, 8 B / same design raw" mem_sock_8 mem_design_8 "(none: context)"
ratio "  over the socket, 64 KiB / same design raw" mem_sock_65536 mem_design_65536 "(none: context)"
ratio "dtest -D 64 KiB / libdat polling 64 KiB" dtest_D poll_dat_65536 "<= 1.50"
ratio "dtest -D less its own work / libdat polling 64 KiB" dtest_D_transfer poll_dat_65536 "(none: context)"
ratio "dtest -W -p 64 KiB / libdat polling 64 KiB" dtest_Wp poll_dat_65536 "<= 1.50"
ratio "  dtest -D over the socket / libdat polling 64 KiB" dtest_D_sock poll_dat_65536 "(none: context)"
ratio "  dtest -W -p over the socket / libdat polling 64 KiB" dtest_Wp_sock poll_dat_65536 "(none: context)"

"$(dirname "$0")/twohost.sh" "$build" "$rounds"
