# Two hosts on one machine, for tests and benchmarks that cross a network: two network
# namespaces joined by a veth pair, each end named dat0 (so both hosts have the built-in IA
# tcp-dat0), host A at 10.99.0.1 and host B at 10.99.0.2. Needs root, iproute2, and nft for
# loss. Sourced; every function is prefixed twohost_. Namespaces are named after a prefix of
# the caller's (default: twohost-$$), so concurrent runs never touch each other's.
#
#   twohost_up [MTU]            makes the hosts (MTU 1500 unless given); TWOHOST_A/B: their names
#   twohost_down                removes them (also at exit once twohost_up ran, unless the caller has an EXIT trap of its own: it calls twohost_down)
#   twohost_a CMD... / twohost_b CMD...   runs a command on host A / B
#   twohost_loss PERCENT        drops PERCENT % of the packets each host sends (0: none)
#   twohost_cut / twohost_heal  takes the link down on both ends / brings it up again
#   twohost_conf HOST FILE      writes a dat.conf for host A or B naming the IA "dat-net"

TWOHOST_PREFIX=${TWOHOST_PREFIX:-twohost-$$}
TWOHOST_A=$TWOHOST_PREFIX-a
TWOHOST_B=$TWOHOST_PREFIX-b
TWOHOST_ADDR_A=10.99.0.1
TWOHOST_ADDR_B=10.99.0.2

twohost_usable() {  # whether this machine can make the hosts (root, ip, nft); says why not
    if [ "$(id -u)" != 0 ]; then echo "twohost: needs root (network namespaces)"; return 1; fi
    if ! command -v ip >/dev/null; then echo "twohost: needs iproute2 (ip)"; return 1; fi
    if ! command -v nft >/dev/null; then echo "twohost: needs nftables (nft)"; return 1; fi
    if ! ip netns add "$TWOHOST_PREFIX-probe" 2>/dev/null; then
        echo "twohost: this machine does not let us make network namespaces"
        return 1
    fi
    ip netns del "$TWOHOST_PREFIX-probe"
    return 0
}

twohost_up() {  # [MTU]
    local mtu=${1:-1500} ns
    twohost_down 2>/dev/null
    ip netns add "$TWOHOST_A" && ip netns add "$TWOHOST_B" || return 1
    # Removed at exit, unless the caller has its own EXIT trap (which calls twohost_down).
    [ -n "$(trap -p EXIT)" ] || trap twohost_down EXIT
    ip link add dat0 netns "$TWOHOST_A" mtu "$mtu" type veth peer name dat0 netns "$TWOHOST_B" mtu "$mtu" || return 1
    ip -n "$TWOHOST_A" addr add "$TWOHOST_ADDR_A/24" dev dat0
    ip -n "$TWOHOST_B" addr add "$TWOHOST_ADDR_B/24" dev dat0
    for ns in "$TWOHOST_A" "$TWOHOST_B"; do
        ip -n "$ns" link set lo up
        ip -n "$ns" link set dat0 up
    done
}

twohost_down() {
    ip netns del "$TWOHOST_A" 2>/dev/null
    ip netns del "$TWOHOST_B" 2>/dev/null
    return 0
}

twohost_a() { ip netns exec "$TWOHOST_A" "$@"; }
twohost_b() { ip netns exec "$TWOHOST_B" "$@"; }

twohost_loss() {  # PERCENT: each host drops that share of what it sends, at random
    local pct=$1 ns
    for ns in "$TWOHOST_A" "$TWOHOST_B"; do
        ip netns exec "$ns" nft delete table inet twohost 2>/dev/null
        [ "$pct" = 0 ] && continue
        ip netns exec "$ns" nft -f - <<EOF || return 1
table inet twohost {
    chain out {
        type filter hook output priority 0; policy accept;
        oifname "dat0" numgen random mod 100 < $pct drop
    }
}
EOF
    done
}

twohost_cut() {
    ip -n "$TWOHOST_A" link set dat0 down
    ip -n "$TWOHOST_B" link set dat0 down
}

twohost_heal() {
    ip -n "$TWOHOST_A" link set dat0 up
    ip -n "$TWOHOST_B" link set dat0 up
}

twohost_conf() {  # HOST (a|b), FILE: a dat.conf naming the same IA on either host
    printf 'dat-net u2.0 threadsafe default tcp libdat.0.1 "dat0" ""\n' > "$2"
}
