#!/usr/bin/env bash
# DAT 1.2 programs on our library over tcp-lo: compat-dapl 1.2.19's dtest and dapltest, built
# from its tarball (build.sh) against its own headers and libdat.so.1 (compat/) and against our
# include/dat with -ldat (ours/), in every mode tests/consumers runs Debian's 2.0 ones that 1.2
# has; then the ping-pong between a 1.2 and a 2.0 program, both ways.
#   path:    LD_LIBRARY_PATH=LIBDIR (our libdat.so.1), no dat.conf: the built-in tcp-lo;
#   preload: LD_PRELOAD=our libdat2.so.2, compat-dapl's own libdat.so.1 on LD_LIBRARY_PATH
#            (what the binary would load), a dat.conf `u1.2` line (tcp12).
# compat/ runs path with the library's default (direct path allowed) and preload with
# LIBDAT_DIRECT=0, ours/ the other way round. Each mode is first checked to bind every dat_*
# the binary imports to our library (LD_DEBUG=bindings). About 3 minutes on a quiet 2-core machine.
# usage: consumers.sh LIBDIR INCLUDE_DIR [BUILD_DIR (build/dat12)]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "${1:?usage: consumers.sh LIBDIR INCLUDE_DIR [BUILD_DIR]}" && pwd)
inc=${2:?}
out=${3:-build/dat12}
# A build that failed in part leaves the programs that built right: those run, the step fails.
"$here/build.sh" "$libdir" "$inc" "$out"
rc=$?
[ $rc = 77 ] && exit 77
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'tcp12 u1.2 threadsafe default libdat-tcp.so.1 dapl.1.2 "lo 0" ""\n' > "$work/dat12.conf"
fail=$((rc != 0))
passed=0
direct=""
SUITE=dat12

loader() {  # mode -> env assignments for `env`
    local d=${direct:+LIBDAT_DIRECT=$direct}
    case $1 in
        path) echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf $d" ;;
        preload) echo "LD_PRELOAD=$libdir/libdat2.so.2 LD_LIBRARY_PATH=$out/compat DAT_OVERRIDE=$work/dat12.conf $d" ;;
    esac
}
ia_of() { if [ "$1" = path ]; then echo tcp-lo; else echo tcp12; fi; }

# shellcheck source=../consumers/lib.sh
. "$here/../consumers/lib.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

for way in compat ours; do
    for mode in path preload; do
        direct=""
        if { [ $way = compat ] && [ $mode = preload ]; } || { [ $way = ours ] && [ $mode = path ]; }; then
            direct=0
        fi
        ia=$(ia_of $mode)
        started=$SECONDS
        SUITE="dat12 [$way, ${direct:+LIBDAT_DIRECT=0, }$ia]"
        bound_to_ours "dtest" $mode "$out/$way/dtest" "$libdir/libdat2.so.2" -P nonexistent-ia
        bound_to_ours "dapltest" $mode "$out/$way/dapltest" "$libdir/libdat2.so.2" -T L -D nonexistent-ia limit_ia
        dtest12_runs dtest $mode "$out/$way/dtest" "$ia" 127.0.0.1
        # 1.2's dapltest shares one receive EVD among a thread's EPs (4 here): their receives
        # must complete in the order they were filled, on either path.
        dapltest12_runs dapltest $mode "$out/$way/dapltest" "$ia" 500 2000
        echo "$SUITE: $((SECONDS - started)) s"
    done
done
# The mixed run, on each path: the 1.2 half built against our headers, and against compat-dapl's
# (by LD_PRELOAD, its own libdat.so.1 beside).
for direct in 0 ""; do
    SUITE="dat12 [pingpong, ${direct:+LIBDAT_DIRECT=0, }tcp-lo]"
    pingpong_mixed path path "$out/ours/pingpong12" "$out/ours/pingpong20" tcp-lo 127.0.0.1
    pingpong_mixed preload path "$out/compat/pingpong12" "$out/ours/pingpong20" tcp-lo 127.0.0.1
done
echo "dat12: $passed runs passed"
exit $fail
