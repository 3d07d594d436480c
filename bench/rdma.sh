#!/usr/bin/env bash
# The RDMA transport side by side with OpenFabrics' library and raw verbs, in one run of the
# soft-RoCE guest (make bench-rdma starts it): the same unmodified programs on each library
# (Debian's dtest and dtestcm through an OpenFabrics dat.conf line; our datperf, which waits as
# perftest does), and perftest over rdma-cm for raw verbs. The guest is emulated: compare
# figures within one run only. Its speed drifts between rounds (single runs swing by half), so
# beside the medians each row gives the median of the rounds' ratios, ours to OpenFabrics and
# ours to perftest, taken between runs made side by side; each round's figures come last.
# usage: rdma.sh LIBDIR [ROUNDS]
set -uo pipefail
libdir=$(cd "${1:?}" && pwd)
datperf=$libdir/../bin/datperf
calltime=$libdir/../bin/calltime.so
rounds=${2:-3}
host=${RXE_VM_IP:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'ofa-v2-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' "${RXE_VM_NETDEV:?}" > "$work/dat.conf"
export DAT_OVERRIDE=$work/dat.conf

env_of() {  # ours | openfabrics: what `env` is given to load that library
    if [ "$1" = ours ]; then echo "LD_LIBRARY_PATH=$libdir"; fi
}

pair() {  # lib, server-ready pattern, program, args...: the client's output
    local lib=$1 ready=$2 prog=$3; shift 3
    local e; e=$(env_of "$lib")
    # shellcheck disable=SC2086
    env $e timeout 120 "$prog" -P ofa-v2-rxe -s "$@" > "$work/s.log" 2>&1 &
    local spid=$! out=""
    for _ in $(seq 200); do
        grep -q "$ready" "$work/s.log" 2>/dev/null && break
        sleep 0.1
    done
    for _ in $(seq 50); do
        # shellcheck disable=SC2086
        out=$(env $e timeout 120 "$prog" -P ofa-v2-rxe -h "$host" "$@" 2>&1)
        grep -q "Could not connect\|Couldn't connect" <<< "$out" || break
        sleep 0.2   # its side channel is not listening yet
    done
    wait $spid 2>/dev/null
    echo "$out"
}

perftest() {  # program, args...: the client's output (server started first, retried until up)
    local prog=$1; shift
    timeout 120 "$prog" -R "$@" > "$work/p.log" 2>&1 &
    local spid=$! out=""
    for _ in $(seq 100); do
        sleep 0.2
        out=$(timeout 120 "$prog" -R "$@" "$host" 2>&1) && break
    done
    wait $spid 2>/dev/null
    echo "$out"
}

# Each key keeps one entry per round ("-" where a run gave no figure), so that the rounds of
# two libraries line up.
declare -A r
add() { r[$1]+="${2:--} "; }
median() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -n | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "-"}'; }
# The median over rounds of one library's figure divided by another's in the same round: the
# guest's speed drifts by half between rounds, and the runs of one round sit side by side.
ratio() {  # key-of-a, key-of-b
    awk -v a="${r[$1]:-}" -v b="${r[$2]:-}" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) if (x[i] ~ /^[0-9.]+$/ && y[i] ~ /^[0-9.]+$/ && y[i] > 0) printf "%.3f\n", x[i] / y[i]
    }' | median
}

for _ in $(seq "$rounds"); do
    for lib in ours openfabrics; do
        add "send_$lib" "$(pair $lib "waiting for client" dtest -p -b 8 -B 2000 | grep -oE 'Message PingPong.*latency [0-9.]+' | grep -oE '[0-9.]+$')"
        add "write_$lib" "$(pair $lib "waiting for client" dtest -W -p -b 8 -B 2000 | grep -oE 'RDMA write PingPong.*latency [0-9.]+' | grep -oE '[0-9.]+$')"
        add "bw64k_$lib" "$(pair $lib "waiting for client" dtest -w -u -b 65536 -B 100 | grep -oE '[0-9.]+ MB/sec' | head -1 | grep -oE '^[0-9.]+')"
        add "bw1m_$lib" "$(pair $lib "waiting for client" dtest -w -u -b 1048576 -B 20 | grep -oE '[0-9.]+ MB/sec' | head -1 | grep -oE '^[0-9.]+')"
        add "cps_$lib" "$(pair $lib "Server ready" dtestcm -c 50 | grep -oE 'CPS +[0-9.]+' | grep -oE '[0-9.]+$' | tail -1)"
        # The same waits as perftest's: a send ping-pong polling the receive EVD, and an RDMA
        # write ping-pong polling the last byte in memory (ib_send_lat, ib_write_lat).
        # Each gives the mean and the typical (median) one-way latency, as perftest does.
        # shellcheck disable=SC2046
        out=$(env $(env_of $lib) timeout 120 "$datperf" -P ofa-v2-rxe -q -t -m pingpong -p -s 8 -n 2000)
        add "dpsend_$lib" "$(awk '{print $1}' <<< "$out")"
        add "dpsendtyp_$lib" "$(awk '{print $2}' <<< "$out")"
        # shellcheck disable=SC2046
        out=$(env $(env_of $lib) timeout 120 "$datperf" -P ofa-v2-rxe -q -t -m mempoll -s 8 -n 2000)
        add "dpwrite_$lib" "$(awk '{print $1}' <<< "$out")"
        add "dpwritetyp_$lib" "$(awk '{print $2}' <<< "$out")"
        # The libraries' own time per call in that send ping-pong, the provider's system calls
        # left out (bench/calltime.c): the mean of its two processes.
        # shellcheck disable=SC2046
        calls=$(env $(env_of $lib) LD_PRELOAD="$calltime" timeout 120 "$datperf" -P ofa-v2-rxe -q -m pingpong -p -s 8 -n 2000 2>&1 >/dev/null | grep '^calltime:')
        for call in post_send post_recv dequeue_found dequeue_empty; do
            add "ct_${call}_$lib" "$(awk -v k="$call" '{for (i = 2; i < NF; i++) if ($i == k && $(i+1) != "-") {s += $(i+1); n++}} END {if (n) printf "%.0f", s / n}' <<< "$calls")"
        done
    done
    # perftest's latency line: ... t_typical (the median, column 5), t_avg (the mean, 6). dtest
    # and datperf time a whole run (a mean): they stand beside t_avg; datperf's median beside
    # t_typical. Every ping-pong runs 2000 rounds, so that what a process does once (the
    # emulator translating its code, first touches of memory) weighs little.
    out=$(perftest ib_send_lat -s 8 -n 2000 | awk '$1 == 8 && NF >= 6 {print $5, $6}' | head -1)
    add send_verbs "$(awk '{print $2}' <<< "$out")"
    add dpsend_verbs "$(awk '{print $2}' <<< "$out")"
    add dpsendtyp_verbs "$(awk '{print $1}' <<< "$out")"
    out=$(perftest ib_write_lat -s 8 -n 2000 | awk '$1 == 8 && NF >= 6 {print $5, $6}' | head -1)
    add write_verbs "$(awk '{print $2}' <<< "$out")"
    add dpwrite_verbs "$(awk '{print $2}' <<< "$out")"
    add dpwritetyp_verbs "$(awk '{print $1}' <<< "$out")"
    add bw64k_verbs "$(perftest ib_write_bw -s 65536 -n 200 | awk '$1 == 65536 && NF >= 4 {print $4}' | head -1)"
    add bw1m_verbs "$(perftest ib_write_bw -s 1048576 -n 20 | awk '$1 == 1048576 && NF >= 4 {print $4}' | head -1)"
done

row() {  # label, key, unit
    printf '%-34s %10s %12s %10s %8s %8s  %s\n' "$1" "$(echo "${r[${2}_ours]:-}" | median)" "$(echo "${r[${2}_openfabrics]:-}" | median)" \
        "$(echo "${r[${2}_verbs]:-}" | median)" "$(ratio "${2}_ours" "${2}_openfabrics")" "$(ratio "${2}_ours" "${2}_verbs")" "$3"
}
echo "bench-rdma: medians of $rounds rounds, soft-RoCE in an emulated guest (compare within this run only);"
echo "ours/OF and ours/pt: the median of the rounds' ratios (latency and time: lower is better; MB/s and /s: higher)"
printf '%-34s %10s %12s %10s %8s %8s\n' "" "libdat" "OpenFabrics" "perftest" "ours/OF" "ours/pt"
row "send/recv ping-pong 8 B" send "us (dtest -p -B 2000: its latency, a mean; ib_send_lat t_avg)"
row "RDMA write ping-pong 8 B" write "us (dtest -W -p -B 2000; ib_write_lat t_avg)"
row "send ping-pong 8 B, polling the EVD" dpsend "us, mean (datperf -m pingpong -p; ib_send_lat t_avg)"
row "  the same, typical" dpsendtyp "us, median (datperf -t; ib_send_lat t_typical)"
row "write ping-pong 8 B, polling memory" dpwrite "us, mean (datperf -m mempoll; ib_write_lat t_avg)"
row "  the same, typical" dpwritetyp "us, median (datperf -t; ib_write_lat t_typical)"
row "RDMA write bandwidth 64 KiB" bw64k "MB/s (dtest -w -u; ib_write_bw)"
row "RDMA write bandwidth 1 MiB" bw1m "MB/s"
row "connections per second" cps "/s (dtestcm -c 50)"
echo "each library's own time per call, in the send ping-pong polling the EVD (datperf under bench/calltime.c;"
echo "the provider's doorbell system call left out; ns)"
row "dat_ep_post_send" ct_post_send "ns"
row "dat_ep_post_recv" ct_post_recv "ns"
row "dat_evd_dequeue finding a completion" ct_dequeue_found "ns"
row "dat_evd_dequeue finding none" ct_dequeue_empty "ns"
echo "each round's figures (ours | OpenFabrics | perftest; '-': the run gave none):"
for key in send write dpsend dpsendtyp dpwrite dpwritetyp bw64k bw1m cps; do
    printf '  %-11s %s| %s| %s\n' "$key" "${r[${key}_ours]:-}" "${r[${key}_openfabrics]:-}" "${r[${key}_verbs]:--}"
done
