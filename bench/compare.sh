#!/usr/bin/env bash
# Before and after: two builds of the library side by side, to see what a change costs.
#   1. builds BEFORE (a git revision) in a worktree of its own, build/compare-<commit> (kept,
#      and reused while that commit is asked for again), and AFTER likewise, or by default
#      this tree as it is, in build/; both in the same build mode (PGO, 0 unless given);
#   2. counts instructions per call of dat_ep_post_send, dat_ep_post_recv and a dequeue that
#      finds a completion (bench/callcount.sh, tcp-lo) for both, flagging changes beyond 2 %;
#   3. times both with datperf over tcp-lo, the direct path and the socket path
#      (LIBDAT_DIRECT=0), interleaved round by round (each row's two runs back to back, the
#      side that runs first alternating per round); prints per row the median of each and the
#      median (min..max) of the per-round ratios after / before;
#   TWOHOST=1 adds the socket path between two network namespaces (root; tests/twohost);
#   RDMA=1 adds the instruction counts on the RDMA transport in the soft-RoCE guest (RXE_VM;
#      about 5 minutes a build; loads both cores: run it on a quiet machine).
# The same programs measure both sides: datperf, callcount.c and these scripts come from this
# tree, so only the library differs. Figures only: nothing here fails on speed.
# usage: compare.sh BEFORE [AFTER]     (environment: ROUNDS (5), PGO (0), TWOHOST, RDMA, RXE_VM)
set -uo pipefail
before_rev=${1:?usage: compare.sh BEFORE [AFTER]}
after_rev=${2:-}
rounds=${ROUNDS:-5}
pgo=${PGO:-0}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
unset MAKEFLAGS MFLAGS MAKELEVEL   # the builds below are make runs of their own, not sub-makes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

describe() {  # commit -> "abc1234 subject" (the subject cut short)
    git -C "$root" log -1 --format='%h %s' "$1" | awk '{print (length($0) > 76 ? substr($0, 1, 73) "..." : $0)}'
}

# One side built: its build directory on stdout; the build's output in a log, shown if it fails.
build_side() {  # revision ('' for this tree)
    local dir=$root
    if [ -n "$1" ]; then
        local commit
        commit=$(git -C "$root" rev-parse --verify -q "$1^{commit}") || { echo "compare: no such revision: $1" >&2; return 1; }
        dir=$root/build/compare-${commit:0:12}
        if [ ! -f "$dir/.git" ] || [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
            rm -rf "$dir"   # -f: also where `make clean` removed it and git still lists it
            git -C "$root" worktree add -f -q --detach "$dir" "$commit" || return 1
        fi
    fi
    echo "compare: building ${1:-this tree} (make PGO=$pgo lib${1:+ in ${dir#"$root"/}})" >&2
    if ! (cd "$dir" && nice make PGO="$pgo" -j"$(nproc)" lib) > "$work/build.log" 2>&1; then
        tail -30 "$work/build.log" >&2
        echo "compare: the build of ${1:-this tree} failed" >&2
        return 1
    fi
    echo "$dir/build"
}
before=$(build_side "$before_rev") || exit 1
after=$(build_side "$after_rev") || exit 1
kind() { cat "$1/release-kind" 2>/dev/null || echo "?"; }

# The one datperf both sides run (this tree's), linked by soname: LD_LIBRARY_PATH picks the side.
datperf=$work/datperf
cc -O2 -I"$root/include" "$here/datperf.c" -L"$after/lib" -ldat2 -o "$datperf" || exit 1

echo "before: $(describe "$before_rev") (${before#"$root"/})"
if [ -n "$after_rev" ]; then
    echo "after:  $(describe "$after_rev") (${after#"$root"/})"
else
    dirty=""
    [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ] && dirty=", with uncommitted changes"
    echo "after:  this tree: $(describe HEAD)$dirty (build)"
fi
if [ "$(kind "$before")" = "$(kind "$after")" ]; then
    echo "build:  make PGO=$pgo for both (both linked from $(kind "$after"))"
else
    echo "build:  make PGO=$pgo for both, BUT linked from different builds: $(kind "$before") and $(kind "$after")"
fi
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"

# Instruction counts, each side's "post_send N  post_recv N  found_dequeue N  empty_dequeue N"
# (one after the other: callcount listens on a fixed conn_qual).
callcount_table() {  # title, before's line, after's line
    echo "$1"
    printf '  %-22s %10s %10s %9s\n' "" before after change
    local name b a
    for name in post_send post_recv found_dequeue empty_dequeue; do
        b=$(awk -v k="$name" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<< "$2")
        a=$(awk -v k="$name" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<< "$3")
        awk -v n="$name" -v b="${b:--}" -v a="${a:--}" 'BEGIN {
            if (b !~ /^[0-9]+$/ || a !~ /^[0-9]+$/ || b == 0) { printf "  %-22s %10s %10s %9s\n", n, b, a, "-"; exit }
            c = (a / b - 1) * 100
            printf "  %-22s %10d %10d %+8.2f%%%s\n", n, b, a, c, (c > 2 || c < -2) ? "  BEYOND 2 %" : ""
        }'
    done
}
"$here/callcount.sh" "$before" tcp-lo > "$work/cc.before" 2>&1
"$here/callcount.sh" "$after" tcp-lo > "$work/cc.after" 2>&1
callcount_table "Instructions per call (callgrind, tcp-lo: the socket path under valgrind; bench/callcount.sh):" \
    "$(tail -1 "$work/cc.before")" "$(tail -1 "$work/cc.after")"
for side in before after; do
    grep -q found_dequeue "$work/cc.$side" || sed "s/^/  callcount, $side: /" "$work/cc.$side" | tail -20
done

if [ "${RDMA:-0}" = 1 ]; then
    rxe_vm=${RXE_VM:-../shared/rxe-vm/rxe-vm.sh}
    echo "Instructions per call on the RDMA transport (soft-RoCE guest, ofa-v2-rxenet0):"
    if [ "$(id -u)" != 0 ] || ! (cd "$root" && [ -x "$rxe_vm" ]); then
        echo "  skipped: needs root and the guest's runner ($rxe_vm)"
    else
        # One boot for both builds (the guest sees this tree at the same path).
        # shellcheck disable=SC2016
        (cd "$root" && "$rxe_vm" -t 3600 -- bash -c 'for b; do bench/callcount.sh "$b" ofa-v2-rxenet0 300 2>&1 | tail -1; done' \
            _ "$before" "$after") > "$work/cc.rdma" 2> "$work/cc.rdma.err"
        callcount_table "" "$(sed -n 1p "$work/cc.rdma")" "$(sed -n 2p "$work/cc.rdma")" | tail -n +2
        [ "$(grep -c found_dequeue "$work/cc.rdma")" = 2 ] || sed 's/^/  guest: /' "$work/cc.rdma" "$work/cc.rdma.err" | tail -20
    fi
fi

# The rows: key, label, which way is better, datperf's flags. Each runs as two processes of
# this host over the direct path and over the socket, and with TWOHOST=1 between two hosts.
rows=(
    "lat_poll|ping-pong 8 B, polling, us|lower|-m pingpong -p -s 8 -n 20000"
    "lat_wait|ping-pong 8 B, blocking, us|lower|-m pingpong -s 8 -n 20000"
    "bw_send|send 64 KiB, MB/s|higher|-m send -s 65536 -n 15258"
    "bw_write|RDMA write 64 KiB, MB/s|higher|-m write -s 65536 -n 15258"
)
paths=(direct socket)

if [ "${TWOHOST:-0}" = 1 ]; then
    export TWOHOST_PREFIX=cmp-$$
    # shellcheck source=../tests/twohost/netns.sh
    . "$here/../tests/twohost/netns.sh"
    if ! why=$(twohost_usable); then
        echo "two hosts: skipped: $why"
    elif twohost_up 1500; then
        paths+=(twohost)
        port=$((30000 + RANDOM % 20000))
    else
        echo "two hosts: skipped: the hosts could not be made"
    fi
    trap 'twohost_down; rm -rf "$work"' EXIT   # twohost_up set a trap of its own
fi

# One run of one side: its figure on stdout (empty if it failed; the failure goes to stderr).
run_once() {  # build dir, path, datperf flags...
    local lib=$1/lib path=$2
    shift 2
    local run=(env LD_LIBRARY_PATH="$lib" DAT_OVERRIDE=/dev/null)
    case $path in
    direct) "${run[@]}" timeout 120 "$datperf" -q "$@" ;;
    socket) "${run[@]}" LIBDAT_DIRECT=0 timeout 120 "$datperf" -q "$@" ;;
    twohost)  # the server on host A, awaited until it listens, the client on host B
        port=$((port + 1))
        twohost_a "${run[@]}" LIBDAT_DIRECT=0 timeout 120 "$datperf" -P tcp-dat0 -q -l $port "$@" > "$work/server.log" 2>&1 &
        local spid=$!
        for _ in $(seq 500); do
            grep -q listening "$work/server.log" 2>/dev/null && break
            kill -0 $spid 2>/dev/null || break
            sleep 0.02
        done
        twohost_b "${run[@]}" LIBDAT_DIRECT=0 timeout 120 "$datperf" -P tcp-dat0 -q -c "$TWOHOST_ADDR_A:$port" "$@"
        wait $spid || cat "$work/server.log" >&2
        ;;
    esac
}

declare -A results
failures=0
for r in $(seq "$rounds"); do
    order=(before after)
    [ $((r % 2)) = 0 ] && order=(after before)
    for path in "${paths[@]}"; do
        for row in "${rows[@]}"; do
            IFS='|' read -r key _ _ flags <<< "$row"
            for side in "${order[@]}"; do
                dir=$before
                [ "$side" = after ] && dir=$after
                # shellcheck disable=SC2086
                out=$(run_once "$dir" "$path" $flags) || out=""
                [[ $out =~ ^[0-9.]+$ ]] || { failures=$((failures + 1)); echo "compare: $side, $path: datperf $flags failed" >&2; out=""; }
                # A line for every run, empty if it failed: the rounds stay paired.
                results[$path.$key.$side]+="$out"$'\n'
            done
        done
    done
    echo "compare: round $r of $rounds done" >&2
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { grep -E '^[0-9.]+$' | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "datperf, rounds: $rounds; medians of before and after, and after / before per round: median (min..max)"
printf '  %-32s %10s %10s   %s\n' "" before after "after / before"
for path in "${paths[@]}"; do
    case $path in
    direct) echo " tcp-lo, direct path (two processes of this host):" ;;
    socket) echo " tcp-lo, socket path (LIBDAT_DIRECT=0):" ;;
    twohost) echo " two hosts (network namespaces), socket path:" ;;
    esac
    for row in "${rows[@]}"; do
        IFS='|' read -r key label better _ <<< "$row"
        b=${results[$path.$key.before]}
        a=${results[$path.$key.after]}
        # The ratio of each round's pair; with 6 rounds or more, a note when every round leans
        # the same way (noise alone does that to a row with a chance of 2 / 2^rounds).
        ratios=$(paste <(printf '%s' "$a") <(printf '%s' "$b") |
            awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 {print $1 / $2}' | sort -g)
        summary=$(awk -v better="$better" 'NF {v[++n] = $1} END {
            if (n == 0) { print "-"; exit }
            m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            note = ""
            if (n >= 6 && v[n] < 1) note = (better == "lower") ? "after better every round" : "after worse every round"
            if (n >= 6 && v[1] > 1) note = (better == "higher") ? "after better every round" : "after worse every round"
            printf "%-22s  %s\n", sprintf("%.3f (%.3f..%.3f)", m, v[1], v[n]), note
        }' <<< "$ratios")
        printf '  %-32s %10s %10s   %s\n' "$label" "$(median <<< "$b")" "$(median <<< "$a")" "$summary" | sed 's/ *$//'
    done
done
echo "(latency: lower is better; bandwidth: higher is better. A ratio spread that straddles 1 is"
echo " within this machine's noise; more ROUNDS narrow it.)"
[ $failures = 0 ] || echo "$failures runs failed (left out; stderr says why)"
