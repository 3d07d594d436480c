# Shared by the consumer tests (run.sh, source.sh): a server started first and awaited by its
# ready line, never slept on, then its client; both time-bounded. The caller sets `work` (a
# scratch directory), `fail` and `passed`, and defines `loader MODE`, which prints the
# environment assignments that load our library.
#
# Optional, for runs between two hosts (tests/twohost): SERVER_NS and CLIENT_NS, a command
# prefix that runs a server / a client (and the programs that need no peer) on its host (e.g.
# `ip netns exec NAME`; empty: here); server_host, the address dapltest's clients name;
# RUN_TIMEOUT, each program's time bound in seconds (120); SUITE, the word that starts each
# line (consumers); DAPLTEST_SERVER_TIMEOUT, the dapltest server's bound in seconds (300).

# The caller's output, for what a run's watcher prints while the run's own output goes to its log.
exec 9>&1

listening() {  # port [, pid]: whether a socket listens on the port (state 0A) in the network
    # namespace of process pid (its /proc/PID/net/tcp: a server on another host, i.e. in another
    # namespace, listens in that one), or in ours
    local hex; hex=$(printf '%04X' "$1")
    awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {found=1} END {exit !found}' "/proc/${2:-self}/net/tcp" 2>/dev/null
}

wait_ready() {  # log file, pattern, pid [, port]: until the server says it is ready and, when
    # a port is given, listens on it (dtest and dtestcm print their ready line before they
    # listen on their side channel, port 15828: a client started on the line alone may find
    # nobody there); or until the server dies. An empty pattern waits for the port alone
    # (dtestx's output reaches its log only as it exits: stdout to a file is block-buffered)
    for _ in $(seq 400); do
        if { [ -z "$2" ] || grep -q "$2" "$1" 2>/dev/null; } && { [ -z "${4:-}" ] || listening "$4" "$3"; }; then
            return 0
        fi
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

stacks_of() {  # process name (as ps shows it): every thread's stack of each such process,
    # by gdb where it is installed
    command -v gdb > /dev/null || { echo "    (gdb not installed: no stacks)"; return; }
    local p
    for p in $(pgrep -x "$1"); do
        echo "    stacks of pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
        timeout 60 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null |
            grep -E "^Thread|^#" | cut -c1-200 | head -400 | sed 's/^/      /'
    done
}

watched() {  # seconds, process name, command...: runs the command (itself bounded by a
    # `timeout` of those seconds); if it still runs 3 s before that, the stacks of every
    # process of that name are printed first (a hang says where it is stuck before it is killed)
    local secs=$1 name=$2 watcher rc; shift 2
    # The sleep holds none of our output open (a pipe reading it would wait for it), and goes
    # with the watcher.
    (
        trap 'kill $sleeper 2>/dev/null; exit 0' TERM
        sleep $((secs - 3)) < /dev/null > /dev/null 2>&1 &
        sleeper=$!
        wait $sleeper || exit 0
        echo "${SUITE:-consumers}: $name still running after $((secs - 3)) s:"
        stacks_of "$name"
    ) >&9 2>&1 &
    watcher=$!
    "$@"
    rc=$?
    kill $watcher 2>/dev/null
    wait $watcher 2>/dev/null
    return $rc
}

pair() {  # name, mode, ready pattern, server command, client command (both quoted strings)
    # [, a port the server listens on once ready]; CLIENT_MODE: the client's mode, when it
    # differs (one library on each side); ERRORS: a grep pattern of failure lines
    local name=$1 mode=$2 ready=$3 server=$4 client=$5 port=${6:-}
    local env; env=$(loader "$mode")
    local cenv; cenv=$(loader "${CLIENT_MODE:-$mode}")
    local spid tries=0
    while :; do
        # shellcheck disable=SC2086
        ${SERVER_NS:-} env $env timeout "${RUN_TIMEOUT:-120}" $server > "$work/server.log" 2>&1 &
        spid=$!
        wait_ready "$work/server.log" "$ready" $spid "$port" && break
        # The previous pair's server let go of the same fixed port a moment ago, and the kernel
        # may still hold it while it tears that server's connections down (rdma-cm in the
        # guest, once in several runs: DAT_CONN_QUAL_IN_USE): started again, a few times.
        if grep -q CONN_QUAL_IN_USE "$work/server.log" && [ $tries -lt 25 ]; then
            wait $spid 2>/dev/null
            tries=$((tries + 1))
            sleep 0.2
            continue
        fi
        echo "${SUITE:-consumers}: $name ($mode): the server did not get ready"; tail -5 "$work/server.log"
        kill $spid 2>/dev/null; wait $spid 2>/dev/null; fail=1; return
    done
    # shellcheck disable=SC2086
    watched "${RUN_TIMEOUT:-120}" "$(basename "${client%% *}" | cut -c1-15)" \
        ${CLIENT_NS:-} env $cenv timeout "${RUN_TIMEOUT:-120}" $client > "$work/client.log" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    # ERRORS: what in the logs is a failure (counters' names hold "ERR": DCNT_IA_CM_ERR). The
    # default is single-quoted on its own: written unquoted inside ${ERRORS:-...}, its
    # backslashes go to quote removal and grep looks for the literal "FAILED|Error|ERR".
    local errors='FAILED\|Error\|ERR'
    errors=${ERRORS:-$errors}
    if [ $crc != 0 ] || [ $src != 0 ] || grep -q "$errors" "$work/client.log" "$work/server.log"; then
        echo "${SUITE:-consumers}: $name ($mode): client exit $crc, server exit $src"
        grep -h "$errors\| returned " "$work/client.log" "$work/server.log" | head -5
        # The last words of each, for a failure no error line names.
        tail -n 4 "$work/client.log" | sed 's/^/    client: /'
        tail -n 4 "$work/server.log" | sed 's/^/    server: /'
        fail=1
    else
        local summary
        summary=$(grep -h "PASSED\|CPS\|raw:\|MB/sec\|Total WQE" "$work/client.log" | tail -1 | tr -s ' ')
        echo "${SUITE:-consumers}: $name ($mode): ok ${summary:+- $summary}"
        passed=$((passed + 1))
    fi
}

alone() {  # name, mode, command (a quoted string), a line its output must hold: one program,
    # no peer, time-bounded
    local name=$1 mode=$2 cmd=$3 want=$4
    local env; env=$(loader "$mode")
    # shellcheck disable=SC2086
    ${CLIENT_NS:-} env $env timeout 60 $cmd > "$work/alone.log" 2>&1
    local rc=$?
    if [ $rc != 0 ] || ! grep -q "$want" "$work/alone.log"; then
        echo "${SUITE:-consumers}: $name ($mode): exit $rc, no \"$want\""; tail -5 "$work/alone.log"
        fail=1
    else
        echo "${SUITE:-consumers}: $name ($mode): ok - $(grep -m1 "$want" "$work/alone.log" | tr -s ' ')"
        passed=$((passed + 1))
    fi
}

dapltest_against_server() {  # label, mode, dapltest binary, IA name, then each client's arguments
    # One server serves every client run, then a quit command stops it. CLIENT_MODE: the
    # clients' mode, when it differs (one library on each side).
    local label=$1 mode=$2 bin=$3 ia=$4 args rc dpid local_t; shift 4
    # shellcheck disable=SC2046
    ${SERVER_NS:-} env $(loader "$mode") timeout "${DAPLTEST_SERVER_TIMEOUT:-300}" "$bin" -T S -D "$ia" > "$work/dapltest-server.log" 2>&1 &
    dpid=$!
    if ! wait_ready "$work/dapltest-server.log" "Service Point Ready" $dpid; then
        echo "${SUITE:-consumers}: $label server ($mode) did not get ready"; fail=1
        kill $dpid 2>/dev/null
        return
    fi
    for args in "$@"; do
        # dapltest reads -T first: the options after it depend on the test.
        # shellcheck disable=SC2086
        set -- $args
        local_t="$1 $2"; shift 2
        # shellcheck disable=SC2046,SC2086
        watched "${RUN_TIMEOUT:-120}" "$(basename "$bin" | cut -c1-15)" \
            ${CLIENT_NS:-} env $(loader "${CLIENT_MODE:-$mode}") timeout "${RUN_TIMEOUT:-120}" "$bin" $local_t -s "${server_host:-127.0.0.1}" -D "$ia" "$@" > "$work/client.log" 2>&1
        rc=$?
        # A function test prints "Error" where a case checks a code the man page or we decide
        # otherwise and still passes it (docs/compatibility.md); its verdict is its "Result:" lines.
        local failed="Error\|FAIL"
        [ "$local_t" = "-T F" ] && failed="Result: FAIL"
        if [ $rc != 0 ] || grep -q "$failed" "$work/client.log"; then
            echo "${SUITE:-consumers}: $label $args ($mode): exit $rc"; grep -h "$failed" "$work/client.log" | head -3; fail=1
        else
            echo "${SUITE:-consumers}: $label $args ($mode): ok - $(grep -h "raw:\|Total WQE" "$work/client.log" | tail -1 | tr -s ' ')"
            passed=$((passed + 1))
        fi
    done
    # shellcheck disable=SC2046
    ${CLIENT_NS:-} env $(loader "$mode") timeout 30 "$bin" -T Q -s "${server_host:-127.0.0.1}" -D "$ia" > /dev/null 2>&1
    wait $dpid || { echo "${SUITE:-consumers}: $label server ($mode) did not exit cleanly"; fail=1; }
}

# dapltest's limit tests (-T L), each alone: they need no server. The function tests (-T F)
# go through dapltest_against_server (connmgt's own listener takes another port: -n).
DAPLTEST_LIMITS="limit_ia limit_pz limit_cno limit_evd limit_ep limit_rsp limit_psp limit_lmr limit_rpost limit_size_lmr"
DAPLTEST_FUNCTIONS=("-T F -n 4000 -f hwconn" "-T F -n 4000 -f endpoint" "-T F -n 4000 -f pz" "-T F -n 4000 -f mem"
    "-T F -n 4000 -f connmgt" "-T F -n 4000 -f queryinfo")
dapltest_limits() {  # label, mode, dapltest binary, IA name
    local label=$1 mode=$2 bin=$3 ia=$4 t rc
    for t in $DAPLTEST_LIMITS; do
        # shellcheck disable=SC2046
        ${CLIENT_NS:-} env $(loader "$mode") timeout "${RUN_TIMEOUT:-120}" "$bin" -T L -D "$ia" -w 1 -m 10 "$t" > "$work/client.log" 2>&1
        rc=$?
        if [ $rc != 0 ] || grep -q "Error\|FAIL" "$work/client.log"; then
            echo "${SUITE:-consumers}: $label -T L $t ($mode): exit $rc"; grep -h "Error\|FAIL" "$work/client.log" | head -3; fail=1
        else
            passed=$((passed + 1))
        fi
    done
    echo "${SUITE:-consumers}: $label -T L ($mode): each of $DAPLTEST_LIMITS ran"
}
