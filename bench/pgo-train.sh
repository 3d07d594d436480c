#!/usr/bin/env bash
# Trains a profile-instrumented build of the library (the Makefile's PGO step) on its data
# path: datperf's ping-pong, polling and blocking, and its RDMA-write and send streams, over
# the built-in tcp-lo IA. Each run checks every byte it moves; a failed run fails the build.
#
#   bench/pgo-train.sh LIBDIR DATPERF
set -eEuo pipefail
lib=$1
datperf=$2
trap 'echo "pgo: a training run failed; make PGO=0 builds without profile guidance" >&2' ERR
run() {
    LD_LIBRARY_PATH=$lib DAT_OVERRIDE=/dev/null timeout 120 "$datperf" -q "$@" >/dev/null
}
run -m pingpong -s 8 -n 20000 -p
run -m pingpong -s 8 -n 5000
run -m pingpong -s 4096 -n 2000 -p
run -m write -s 65536 -n 2000
run -m send -s 65536 -n 2000
run -m write -s 1048576 -n 200
run -m send -s 1048576 -n 200
echo "pgo: trained on datperf over tcp-lo"
