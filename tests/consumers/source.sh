#!/usr/bin/env bash
# OpenFabrics' own programs, built from Debian's dapl source package against our headers and
# library, as a user rebuilding them would: dtest, dtestx, dtestcm, dtestsrq and dapltest
# compile unchanged with -I INCLUDE_DIR (gcc -H shows that every dat2/ header they read is
# ours) and the flags of their own Makefile.am, with no -Wall warning that OpenFabrics'
# headers do not give them too, and link with -ldat. Then they run over tcp-lo: dtest,
# dapltest -T T, and every dapltest limit test (-T L) with -w 1, 4 and 8. limit_rpost must stop
# only where the dat_ep_disconnect page decides against OpenFabrics: it disconnects an
# UNCONNECTED EP, which is DAT_INVALID_STATE.
#
# The source comes from `apt-get source dapl` (a deb-src line must be enabled; .ci/run adds
# one), cached under build/dapl-source; DAPL_SOURCE=DIR names an unpacked tree instead. If it
# cannot be fetched, the test says why and exits 77 (skipped), never passing silently.
# usage: source.sh LIBDIR INCLUDE_DIR
set -uo pipefail
libdir=$(cd "${1:?usage: source.sh LIBDIR INCLUDE_DIR}" && pwd)
inc=$(cd "${2:?usage: source.sh LIBDIR INCLUDE_DIR}" && pwd)
cache=$(pwd)/build/dapl-source
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
passed=0
loader() { echo "LD_LIBRARY_PATH=$libdir DAT_OVERRIDE=$work/none.conf"; }
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# --- The source tree: its path on stdout, what happened on stderr.
fetch() {
    mkdir -p "$cache" && cd "$cache" || return 1
    if ! ls -d dapl-*/test/dtest > /dev/null 2>&1; then
        apt-get source --download-only dapl > fetch.log 2>&1
        local dsc orig
        dsc=$(ls dapl_*.dsc 2>/dev/null | head -1)
        orig=$(ls dapl_*.orig.tar.* 2>/dev/null | head -1)
        if [ -n "$dsc" ] && ls dapl_*.debian.tar.* > /dev/null 2>&1 && command -v dpkg-source > /dev/null; then
            dpkg-source --no-check -x "$dsc" > extract.log 2>&1 || { cat extract.log >&2; return 1; }
        elif [ -n "$orig" ]; then
            # The mirror may lack Debian's packaging part; its upstream tarball is the same
            # release, with the same test programs.
            echo "source: Debian's packaging part of $dsc could not be fetched ($(grep -m1 '^E:' fetch.log)); building the upstream sources of that release, $orig" >&2
            tar xf "$orig" || return 1
        else
            echo "source: SKIPPED: apt-get source dapl fetched nothing: $(grep -m1 '^E:' fetch.log || tail -1 fetch.log)" >&2
            return 77
        fi
    fi
    ls -d "$cache"/dapl-*/ | head -1
}
if [ -n "${DAPL_SOURCE:-}" ]; then
    src=$DAPL_SOURCE
else
    src=$(fetch 2>&1 >"$work/src")
    rc=$?
    [ -n "$src" ] && echo "$src"
    [ $rc = 0 ] || exit $rc
    src=$(cat "$work/src")
fi
src=${src%/}
echo "source: $(basename "$src")"

# --- Builds. Each program twice with its own Makefile.am flags: against OpenFabrics' headers
# (the system's), for the warnings they give, and against ours, linked with -ldat.
build() {  # name, directory under test/, extra flags, sources...
    local name=$1 dir=$2 extra=$3; shift 3
    local flags="-g -Wall -D_GNU_SOURCE $extra"
    # shellcheck disable=SC2086
    (cd "$src/test/$dir" && gcc $flags "$@" -o "$work/ref-$name" -ldat2 -lpthread) > "$work/$name.ref.log" 2>&1 ||
        { echo "source: $name does not build against OpenFabrics' headers here:"; tail -5 "$work/$name.ref.log"; fail=1; return; }
    # shellcheck disable=SC2086
    if ! (cd "$src/test/$dir" && gcc -H -I "$inc" $flags "$@" -o "$work/$name" -L "$libdir" -ldat -lpthread) > "$work/$name.log" 2>&1; then
        echo "source: $name does not build against our headers:"; grep -v '^\.' "$work/$name.log" | tail -10; fail=1; return
    fi
    # Every dat2/ header it read is ours.
    local foreign
    foreign=$(sed -n 's/^\.\+ \(.*dat2\/.*\.h\)$/\1/p' "$work/$name.log" | while read -r h; do
        case $(cd "$src/test/$dir" && realpath "$h") in "$inc"/dat2/*) ;; *) echo "$h" ;; esac
    done | sort -u)
    if [ -n "$foreign" ]; then
        echo "source: $name read dat2 headers that are not ours: $foreign"; fail=1; return
    fi
    # No warning that OpenFabrics' headers do not give too.
    grep ': warning: ' "$work/$name.ref.log" | sort -u > "$work/$name.ref.warn"
    grep ': warning: ' "$work/$name.log" | sort -u > "$work/$name.warn"
    local new
    new=$(comm -13 "$work/$name.ref.warn" "$work/$name.warn")
    if [ -n "$new" ]; then
        echo "source: $name: warnings against our headers only:"; echo "$new" | head -10; fail=1; return
    fi
    local ours
    ours=$(LD_LIBRARY_PATH=$libdir ldd "$work/$name" | sed -n 's/.*libdat2.so.2 => \([^ ]*\).*/\1/p')
    if [ "$(dirname "$ours")" != "$libdir" ]; then
        echo "source: $name loads libdat2.so.2 from '$ours'"; fail=1; return
    fi
    echo "source: $name builds against our headers ($(grep -c "dat2/" "$work/$name.log") dat2 header reads, all ours), $(wc -l < "$work/$name.warn") warnings, all of them also against OpenFabrics' headers; linked with -ldat"
    passed=$((passed + 1))
}
build dtest dtest "" dtest.c
build dtestcm dtest "" dtestcm.c
build dtestsrq dtest "" dtestsrq.c
build dtestx dtest -DDAT_EXTENSIONS dtestx.c
# dapltest's sources, as its Makefile.am lists them.
mapfile -t dapltest_sources < <(sed -n '/^dapltest_SOURCES/,/^$/p' "$src/test/dapltest/Makefile.am" | grep -oE '[A-Za-z0-9_/]+\.c')
build dapltest dapltest "-DDAT_EXTENSIONS -I include -I mdep/linux" "${dapltest_sources[@]}"

# --- Runs, over tcp-lo with no dat.conf.
if [ -x "$work/dtest" ]; then
    pair "built dtest" path "waiting for client connection" "$work/dtest -P tcp-lo -s" "$work/dtest -P tcp-lo -h 127.0.0.1" 15828
fi
if [ -x "$work/dapltest" ]; then
    dapltest_against_server "built dapltest" path "$work/dapltest" tcp-lo \
        "-T T -i 500 client SR 4096 2 server SR 4096 2" \
        "-T T -t 2 -w 4 -i 200 -V client RW 4096 1 server RW 2048 4 client SR 1024 4 server SR 4096 2 client RR 4096 2 server RR 1024 2"
    limits=(limit_ia limit_pz limit_cno limit_evd limit_ep limit_rsp limit_psp limit_lmr limit_size_lmr)
    for w in 1 4 8; do
        ok=0
        for t in "${limits[@]}"; do
            # shellcheck disable=SC2046
            env $(loader path) timeout 300 "$work/dapltest" -T L -D tcp-lo -w $w "$t" > "$work/limit.log" 2>&1
            rc=$?
            if [ $rc != 0 ] || grep -q "error occurs" "$work/limit.log"; then
                echo "source: dapltest -T L -w $w $t: exit $rc"; grep "fails\|error" "$work/limit.log" | head -5; fail=1
            else
                ok=$((ok + 1))
            fi
        done
        # limit_rpost posts receives until the EP refuses one, then disconnects the EP, which
        # never connected: the page's DAT_INVALID_STATE stops it there, and nothing else may.
        # shellcheck disable=SC2046
        env $(loader path) timeout 300 "$work/dapltest" -T L -D tcp-lo -w $w limit_rpost > "$work/limit.log" 2>&1
        other=$(grep "fails" "$work/limit.log" | grep -v "dat_ep_post_recv fails: DAT_INSUFFICIENT_RESOURCES\|dat_ep_disconnect (abrupt) fails: DAT_INVALID_STATE DAT_INVALID_STATE_EP_UNCONNECTED")
        if [ -n "$other" ] || ! grep -q "dat_ep_disconnect (abrupt) fails: DAT_INVALID_STATE" "$work/limit.log"; then
            echo "source: dapltest -T L -w $w limit_rpost stopped otherwise:"; grep "fails\|error" "$work/limit.log" | head -5; fail=1
        fi
        if [ $ok = ${#limits[@]} ]; then
            echo "source: dapltest -T L -w $w: all ${#limits[@]} limit tests pass; limit_rpost stops at the disconnect of an UNCONNECTED EP, as the page decides"
            passed=$((passed + 1))
        fi
    done
fi
echo "source: $passed passed"
exit $fail
