#!/usr/bin/env bash
# Debian's unmodified dapl2-utils binaries start on our library (by LD_LIBRARY_PATH and by
# LD_PRELOAD): no missing symbol or version, our library is the one loaded, and asked for an
# unregistered IA they report DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED.
# usage: start.sh LIBDIR
set -uo pipefail
libdir=$(cd "${1:?}" && pwd)
fail=0
run() {  # mode, binary, args...
    local mode=$1; shift
    local out
    if [ "$mode" = path ]; then
        out=$(LD_LIBRARY_PATH="$libdir" LD_DEBUG=libs timeout 20 "$@" 2>&1)
    else
        out=$(LD_PRELOAD="$libdir/libdat2.so.2" LD_DEBUG=libs timeout 20 "$@" 2>&1)
    fi
    if echo "$out" | grep -q 'symbol lookup error\|version .* not found\|undefined symbol'; then
        echo "consumers: $* ($mode): the loader failed"; echo "$out" | grep -i 'error\|not found' | head -3; fail=1
    elif ! echo "$out" | grep -q "calling init: $libdir/libdat2.so.2"; then
        echo "consumers: $* ($mode): our library was not loaded"; fail=1
    elif ! echo "$out" | grep -q 'DAT_PROVIDER_NOT_FOUND.*DAT_NAME_NOT_REGISTERED'; then
        echo "consumers: $* ($mode): no provider-not-found report"; echo "$out" | grep -v '^ *[0-9]*:' | tail -3; fail=1
    else
        echo "consumers: $1 ($mode): started, reported provider not found"
    fi
}
for mode in path preload; do
    run $mode /usr/bin/dtest -P no-such-ia
    run $mode /usr/bin/dtestcm -P no-such-ia
    run $mode /usr/bin/dtestx -P no-such-ia
    run $mode /usr/bin/dtestsrq -P no-such-ia
    run $mode /usr/bin/dapltest -T S -D no-such-ia
done
exit $fail
