#!/usr/bin/env bash
# The tests that need an RDMA device, run inside the soft-RoCE guest (../shared/rxe-vm) with
# the binaries built here. Skipped (77) where the guest's launcher is not beside the project.
# usage: run.sh DATINFO LIBDIR
set -euo pipefail
cd "$(dirname "$0")/../.."
datinfo=${1:?}; libdir=${2:?}
vm=${RXE_VM:-../shared/rxe-vm/rxe-vm.sh}
if [ ! -x "$vm" ]; then
    echo "rdma: no $vm here: the soft-RoCE guest cannot be started"
    exit 77
fi
# The Rust tests that need a device, and the connection and memory access tests both transports
# pass: built here, run there.
bins=$(cargo test --quiet --test verbs --test verbs_events --test connections --test memory_access --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["executable"])')
[ -n "$bins" ] || { echo "rdma: the device tests did not build"; exit 1; }
# The DAT 1.2 programs (tests/dat12), built here for consumers.sh to run there; DAT12_BUILD says
# where, or why not ("skipped: ...", "failed").
if tests/dat12/build.sh "$libdir" include build/dat12 > build/dat12.log 2>&1; then
    export DAT12_BUILD=build/dat12
elif [ $? = 77 ]; then
    export DAT12_BUILD="skipped: $(tail -1 build/dat12.log)"
else
    cat build/dat12.log
    export DAT12_BUILD=failed
fi
"$vm" --prepare > /dev/null
exec "$vm" -t 1200 -- tests/rdma/guest.sh "$datinfo" "$libdir" $bins
