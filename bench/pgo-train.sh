#!/usr/bin/env bash
# Trains a profile-instrumented build of the library (the Makefile's PGO step) on its data
# path: datperf's ping-pong, polling and blocking, and its RDMA-write and send streams. Each run
# checks every byte it moves; a failed run fails the training.
#
#   bench/pgo-train.sh LIBDIR DATPERF         over the built-in tcp-lo IA
#   bench/pgo-train.sh LIBDIR DATPERF IA      over IA, an RDMA IA of this machine
#
# IA `guest` names the soft-RoCE guest's built-in RDMA IA, ofa-v2-$RXE_VM_NETDEV (the Makefile
# runs the training there with PGO_GUEST=1, unless PGO_RDMA_IA names an IA of this machine).
# Without that training the verbs data path, which tcp-lo never runs, is compiled as cold code:
# placed apart and optimized for size.
set -eEuo pipefail
lib=$1
datperf=$2
ia=${3:-}
if [ -z "$ia" ]; then
    ia=tcp-lo limit=120 without="PGO=0 builds without profile guidance"
else
    [ "$ia" != guest ] || ia=ofa-v2-${RXE_VM_NETDEV:?}
    limit=300 without="PGO_RDMA=0 leaves the RDMA training out"   # an emulated guest is slow
fi
trap 'echo "pgo: a training run failed; make $without" >&2' ERR
run() {
    # Built-in IAs only (a dat.conf could name the IA otherwise).
    LD_LIBRARY_PATH=$lib DAT_OVERRIDE=/dev/null timeout "$limit" "$datperf" -P "$ia" -q "$@" >/dev/null
}
if [ "$ia" = tcp-lo ]; then
    run -m pingpong -s 8 -n 20000 -p
    run -m pingpong -s 8 -n 5000
    run -m pingpong -s 4096 -n 2000 -p
    run -m write -s 65536 -n 2000
    run -m send -s 65536 -n 2000
    run -m write -s 1048576 -n 200
    run -m send -s 1048576 -n 200
    # The socket path, which a peer on another host takes (tcp-lo's peers on this host take
    # the direct path): untrained, its code would be laid out and optimized as cold.
    LIBDAT_DIRECT=0 run -m pingpong -s 8 -n 20000 -p
    LIBDAT_DIRECT=0 run -m pingpong -s 8 -n 5000
    LIBDAT_DIRECT=0 run -m sendwait -s 8 -n 5000 -p
    LIBDAT_DIRECT=0 run -m write -s 65536 -n 2000
    LIBDAT_DIRECT=0 run -m send -s 65536 -n 2000
    LIBDAT_DIRECT=0 run -m send -s 1048576 -n 200
else
    # Fewer rounds in the slow guest; the merge weighs the two trainings equally.
    run -m pingpong -s 8 -n 3000 -p
    run -m pingpong -s 8 -n 1000
    run -m mempoll -s 8 -n 3000
    run -m write -s 65536 -n 300
    run -m send -s 65536 -n 300
fi
echo "pgo: trained on datperf over $ia"
