#!/usr/bin/env bash
# Runs inside the soft-RoCE guest (../shared/rxe-vm, started by tests/rdma/run.sh): the RDMA
# device is found and listed, the verbs transport's pieces work (the Rust tests that need a
# device, which the host run ignores), and Debian's dapl2-utils run on our library over it.
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
log=$(mktemp)
for t in "$@"; do
    echo "rdma-guest: $(basename "$t")"
    if "$t" --ignored --test-threads=1 > "$log" 2>&1; then
        grep -E "^test " "$log"
    else
        cat "$log"; fail=1
    fi
done
rm -f "$log"
"$(dirname "$0")/consumers.sh" "$libdir" || fail=1
exit $fail
