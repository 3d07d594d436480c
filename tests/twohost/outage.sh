#!/usr/bin/env bash
# Connections between two hosts whose network fails under them (tests/twohost/peer.c): a short
# outage (the link down 2 s, then up) loses nothing and the transfer goes on; a peer that
# vanishes for good (the link down) ends the connection within the peer timeout, the send in
# flight completing with an error status: with LIBDAT_PEER_TIMEOUT, with a dat.conf line's
# peer_timeout, and with the default (20 s). Over the socket path, the one a peer on another
# host gets. Needs root (network namespaces); exits 77 where it cannot run.
# usage: outage.sh LIBDIR
set -uo pipefail
libdir=$(cd "${1:?usage: outage.sh LIBDIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns.sh
. "$here/netns.sh"
twohost_usable || exit 77
work=$(mktemp -d)
spid=
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    twohost_down
    rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -Wall -Wextra -Werror -I "$here/../../include" -o "$work/peer" "$here/peer.c" -L "$libdir" -ldat2 || exit 1
twohost_up 1500 || { echo "outage: could not make the hosts"; exit 1; }
passed=0
failed=0
port=21877

# One server on host A (its dat.conf and environment as given), awaited until it listens.
start_server() {  # conf, size, count, env...
    local conf=$1 size=$2 count=$3
    shift 3
    twohost_a env LD_LIBRARY_PATH="$libdir" DAT_OVERRIDE="$conf" LIBDAT_DIRECT=0 "$@" \
        timeout 150 "$work/peer" server dat-net $port "$size" "$count" > "$work/server.log" 2>&1 &
    spid=$!
    for _ in $(seq 200); do
        grep -q "listening" "$work/server.log" 2>/dev/null && return 0
        kill -0 $spid 2>/dev/null || break
        sleep 0.05
    done
    echo "outage: the server did not start"; cat "$work/server.log"
    return 1
}

result() {  # name, status
    if [ "$2" = 0 ]; then
        passed=$((passed + 1))
        echo "outage: $1: ok - $(tail -n 1 "$work/client.log")"
    else
        failed=$((failed + 1))
        echo "outage: $1: FAILED"
        sed 's/^/    client: /' "$work/client.log"
        sed 's/^/    server: /' "$work/server.log"
    fi
}

twohost_conf a "$work/a.conf"
twohost_conf b "$work/b.conf"

# A short outage in the middle of a stream of 64 KiB messages.
outage() {  # name, extra env for both sides...
    local name=$1
    shift
    start_server "$work/a.conf" 65536 2000 "$@" || { failed=$((failed + 1)); return; }
    coproc CLIENT { twohost_b env LD_LIBRARY_PATH="$libdir" DAT_OVERRIDE="$work/b.conf" LIBDAT_DIRECT=0 "$@" \
        timeout 120 "$work/peer" client dat-net $TWOHOST_ADDR_A $port 65536 2000 outage 2> "$work/client.err"; }
    # The coprocess's descriptors copied at once: bash unsets CLIENT when the client ends, so
    # one that ends early would otherwise abort the script instead of showing its log.
    local cpid=$CLIENT_PID from_client line status
    exec {from_client}<&"${CLIENT[0]}"
    : > "$work/client.log"
    while read -r line <&"$from_client"; do
        echo "$line" >> "$work/client.log"
        if [ "$line" = cut ]; then
            twohost_cut
            sleep 2   # the outage itself
            twohost_heal
        fi
    done
    exec {from_client}<&-
    wait $cpid; status=$?
    cat "$work/client.err" >> "$work/client.log"
    wait $spid || status=1
    spid=
    grep -q "every byte right" "$work/server.log" || status=1
    result "$name" $status
}

# The peer's host goes away for good after the first message.
gone() {  # name, limit in seconds, server conf, client conf, extra env for both sides...
    local name=$1 limit=$2 sconf=$3 cconf=$4
    shift 4
    start_server "$sconf" 4096 2 "$@" || { failed=$((failed + 1)); return; }
    coproc CLIENT { twohost_b env LD_LIBRARY_PATH="$libdir" DAT_OVERRIDE="$cconf" LIBDAT_DIRECT=0 "$@" \
        timeout $((limit + 60)) "$work/peer" client dat-net $TWOHOST_ADDR_A $port 4096 2 gone "$limit" 2> "$work/client.err"; }
    local cpid=$CLIENT_PID from_client to_client line status
    exec {from_client}<&"${CLIENT[0]}" {to_client}>&"${CLIENT[1]}"
    : > "$work/client.log"
    while read -r line <&"$from_client"; do
        echo "$line" >> "$work/client.log"
        if [ "$line" = cut ]; then
            twohost_cut
            echo go >&"$to_client"
        fi
    done
    exec {from_client}<&- {to_client}>&-
    wait $cpid; status=$?
    cat "$work/client.err" >> "$work/client.log"
    kill $spid 2>/dev/null; wait $spid 2>/dev/null
    spid=
    twohost_heal
    result "$name" $status
}

outage "a 2 s outage in a stream of 2000 messages of 64 KiB: nothing lost"
gone "a vanished peer, LIBDAT_PEER_TIMEOUT=3: error and DISCONNECTED within 6 s" 6 "$work/a.conf" "$work/b.conf" LIBDAT_PEER_TIMEOUT=3
printf 'dat-net u2.0 threadsafe default tcp libdat.0.1 "dat0" "peer_timeout=2"\n' > "$work/short.conf"
gone "a vanished peer, dat.conf peer_timeout=2: error and DISCONNECTED within 5 s" 5 "$work/short.conf" "$work/short.conf"
gone "a vanished peer, the default peer timeout (20 s): error and DISCONNECTED within 25 s" 25 "$work/a.conf" "$work/b.conf"
echo "outage: $passed passed, $failed failed"
[ "$failed" = 0 ]
