#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (../shared/rxe-vm, started by tests/rdma/run.sh): the RDMA
# device is found and listed, the verbs transport's pieces work (the Rust tests that need a
# device, which the host run ignores), the connection and memory access tests, every way of waiting and the
# conformance suite pass on the RDMA IA, and Debian's dapl2-utils run on our library over it.
# usage: guest.sh DATINFO LIBDIR TEST_BINARY...
set -uo pipefail
datinfo=${1:?}; libdir=${2:?}; shift 2
fail=0
out=$("$datinfo")
if grep -Eq "^  ${RXE_VM_IBDEV:?} +port 1 ACTIVE +gid " <<< "$out"; then
    echo "rdma-guest: datinfo lists $RXE_VM_IBDEV port 1 ACTIVE: $(grep "^  $RXE_VM_IBDEV " <<< "$out" | head -1 | tr -s ' ')"
else
    echo "rdma-guest: datinfo does not list $RXE_VM_IBDEV port 1 as ACTIVE:"; echo "$out" | tail -5; fail=1
fi
builtins=$(DAT_OVERRIDE=/nonexistent "$datinfo")
for name in "ofa-v2-$RXE_VM_NETDEV" "ofa-v2-$RXE_VM_IBDEV-1"; do
    if grep -q "^  $name .*rdma .*built-in" <<< "$builtins"; then
        echo "rdma-guest: without a dat.conf, datinfo lists the built-in $name"
    else
        echo "rdma-guest: without a dat.conf, no built-in $name:"; echo "$builtins"; fail=1
    fi
done
# The tests' IA: the built-in one of the device's interface (common::test_ia).
export LIBDAT_TEST_IA=ofa-v2-$RXE_VM_NETDEV LIBDAT_TEST_ADDR=$RXE_VM_IP
# Connection tests that are TCP's alone: a raw TCP socket as the peer (malformed frames, another
# frame version, a guessed key, a requester that vanishes), and an RDMA write that overtakes a
# send waiting for its receive, to an EP or to an SRQ (over RC the write waits behind the send's
# RNR retries, as the QP keeps order).
tcp_only=(a_malformed_frame_breaks_only_that_connection peers_of_another_frame_version_do_not_connect
    a_peer_writing_with_a_guessed_key_moves_no_byte a_requester_that_vanishes_after_the_accept_is_an_accept_completion_error
    a_message_that_arrives_before_any_shared_receive_waits_for_one
    a_message_sent_before_its_receive_is_posted_waits_for_it_and_so_does_its_sender)
log=$(mktemp)
t0=$SECONDS
took() { echo "rdma-guest: $1: $((SECONDS - t0)) s"; t0=$SECONDS; }
for t in "$@"; do
    echo "rdma-guest: $(basename "$t")"
    case $(basename "$t") in
        connections-*) args=(--test-threads=1); for s in "${tcp_only[@]}"; do args+=(--skip "$s"); done ;;
        memory_access-*) args=(--test-threads=1) ;;
        *) args=(--ignored --test-threads=1) ;;
    esac
    if timeout 600 "$t" "${args[@]}" > "$log" 2>&1; then
        grep -E "^test |^test result" "$log"
    else
        cat "$log"; fail=1
    fi
done
took "the Rust tests"
# Every way of waiting (tests/waits), quiet, with a busy loop on each core, and interrupted by
# a signal every 200 us.
for load in quiet contention signals; do
    WAITS_IA=$LIBDAT_TEST_IA WAITS_ITERS=16 tests/waits/run.sh "$libdir" $load 1 > "$log" 2>&1 || { cat "$log"; fail=1; }
    echo "rdma-guest: waits ($load): $(tail -1 "$log")"
done
# Threads cancelled in the waits, a connection's receive EVD fed by its CQ among them.
CANCEL_IA=$LIBDAT_TEST_IA CANCEL_TIME_SCALE=4 tests/cancel/run.sh "$libdir" 50 > "$log" 2>&1 || { cat "$log"; fail=1; }
echo "rdma-guest: $(tail -1 "$log")"
took "waits and cancellation"
# The conformance suite on the RDMA IA, through an OpenFabrics dat.conf line.
conf=$(mktemp)
printf 'ofa-v2-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' "$RXE_VM_NETDEV" > "$conf"
if DAT_OVERRIDE=$conf DAT_IA=ofa-v2-rxe CTEST_TIME_SCALE=4 timeout 900 ctests/run.sh "$libdir/libdat2.so.2" > "$log" 2>&1; then
    echo "rdma-guest: conformance suite on ofa-v2-rxe: $(tail -1 "$log")"
else
    grep -v " PASS " "$log"; fail=1
fi
# Its DAT 1.2 half (the seed functions' areas built against include/dat), through a 1.2 line.
printf 'ofa-v1-rxe u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 "%s 0" ""\n' "$RXE_VM_NETDEV" > "$conf"
if DAT_OVERRIDE=$conf DAT_IA=ofa-v1-rxe CTEST_API=1.2 CTEST_TIME_SCALE=4 timeout 600 ctests/run.sh "$libdir/libdat2.so.2" > "$log" 2>&1; then
    echo "rdma-guest: conformance suite's DAT 1.2 half on ofa-v1-rxe: $(tail -1 "$log")"
else
    grep -v " PASS " "$log"; fail=1
fi
rm -f "$log" "$conf"
took "the conformance suite, both halves"
"$(dirname "$0")/consumers.sh" "$libdir" || fail=1
exit $fail
