#!/usr/bin/env bash
# The DAT 2.0 conformance suite: builds every ctests/*.c against include/dat2 with
# -Wall -Wextra -Werror, runs it against a libdat (ours by default, or LIBDAT=/path/to/
# libdat2.so.2), time-bounded, and prints a table: case, expected, got, result, and a closing
# count line.
# usage: run.sh [LIBDAT] [asan]
# env: DAT_IA (the IA to open; default the built-in tcp-lo), CTEST_TIME_SCALE (multiplies every
# time bound, for slow machines), CTEST_RAW (a file that receives the raw CASE lines), CTEST_ONLY
# (one area's name, e.g. connect: only ctests/connect.c), CTEST_MAN_DIR (the man pages the
# seed functions' sentences are checked against; default ../shared/spec/man3dat), CTEST_API
# (2.0, the default; or 1.2: the areas that check the four seed functions' man pages, built as
# DAT 1.2 source against include/dat with -DCTEST_DAT12, so that they call the library's
# DAT_1.2 entry points; cases of what 1.2 lacks are SKIP, with the reason).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
lib=${1:-$root/build/lib/libdat2.so.2}
lib=$(readlink -f "$lib")
mode=${2:-plain}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cflags=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -I "$root/include")
api=${CTEST_API:-2.0}
srcs=("$here"/${CTEST_ONLY:-*}.c)
case "$api" in
2.0) api_cflags=() ;;
1.2)
    # The areas whose cases ctests/pages/*.txt name (the four seed functions), as 1.2 source.
    dat12=()
    for area in connect connect_args page_cr_accept page_ep_connect page_ep_disconnect page_ep_post_send solicited; do
        for src in "${srcs[@]}"; do [ "$src" = "$here/$area.c" ] && dat12+=("$src"); done
    done
    srcs=("${dat12[@]}")
    [ ${#srcs[@]} -gt 0 ] || { echo "ctest: no area of the DAT 1.2 half matches CTEST_ONLY=${CTEST_ONLY:-}"; exit 2; }
    api_cflags=(-DCTEST_DAT12)
    # A 1.2 program's references name version DAT_1.2: the headers' own .symver lines, or ours.
    grep -q '\.symver' "$root/include/dat/udat.h" || api_cflags+=(-include "$here/dat12_symver.h")
    ;;
*) echo "ctest: CTEST_API is 2.0 or 1.2, not $api"; exit 2 ;;
esac
env_run=()
if [ "$mode" = asan ]; then
    cflags+=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    # The suite is instrumented (the library under test need not be): memory errors in every
    # access the suite makes, undefined behaviour, and leaks at exit are reported.
    env_run=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1)
fi
libdir=$(dirname "$lib")
echo "ctest: library $lib ($mode), DAT $api API"
printf 'API\t%s\n' "$api" > "$out/all"
status=0
# The guard that keeps a crashing library from stopping the suite checks itself first.
if gcc "${cflags[@]}" "$here/self/guard.c" "$lib" -Wl,-rpath,"$libdir" -o "$out/guard" 2> "$out/guard.cc" &&
    CTEST_TIME_SCALE=1 LD_LIBRARY_PATH="$libdir" timeout 30 "$out/guard" > "$out/guard.out" 2>&1 &&
    grep -q "self/fault.*crash (" "$out/guard.out" && grep -q "self/block.*no return" "$out/guard.out" &&
    grep -q "self/missing.*dat_no_such_function is not exported" "$out/guard.out" &&
    grep -q "self/returns.*PASS" "$out/guard.out" && awk -F'\t' '$1=="WATCHDOG" && $2>=50 {ok=1} END {exit !ok}' "$out/guard.out"; then
    :
else
    echo "ctest: the suite's guard does not work:"; cat "$out/guard.cc" "$out/guard.out"; status=1
fi
for src in "${srcs[@]}"; do
    name=$(basename "$src" .c)
    # Link by path so the suite runs against exactly this library (for 1.2, what -ldat is).
    if ! gcc "${cflags[@]}" "${api_cflags[@]}" "$src" "$lib" -Wl,-rpath,"$libdir" -o "$out/$name" 2> "$out/$name.cc"; then
        if grep -q "undefined reference to" "$out/$name.cc"; then
            # The library lacks functions (a 1.2 entry point, say): name each once.
            echo "ctest: $name does not link: the library lacks" \
                $(grep -o "undefined reference to \`[^']*'" "$out/$name.cc" | cut -d'`' -f2 | tr -d "'" | sort -u)
        else
            echo "ctest: $name does not compile:"; cat "$out/$name.cc"
        fi
        status=1; continue
    fi
    env "${env_run[@]}" LD_LIBRARY_PATH="$libdir" timeout $((180 * ${CTEST_TIME_SCALE:-1})) "$out/$name" > "$out/$name.out" 2> "$out/$name.err"
    rc=$?
    # 0: every case passed; 1: some failed (listed below); anything else: the program broke.
    if [ $rc -gt 1 ]; then
        echo "ctest: $name ended with exit code $rc"; tail -5 "$out/$name.err"; status=1
        # For reports: the area, its exit code, the last case it finished, its last words.
        printf 'BROKE\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$(grep "^CASE" "$out/$name.out" | tail -1 | cut -f2)" \
            "$(tail -1 "$out/$name.err")" >> "$out/all"
    fi
    if [ "$mode" = asan ] && grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error" "$out/$name.err"; then
        echo "ctest: $name: sanitizer report"; grep -m5 "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error" "$out/$name.err"; status=1
    fi
    cat "$out/$name.out" >> "$out/all"
done
[ -n "${CTEST_RAW:-}" ] && cp "$out/all" "$CTEST_RAW"
printf '%-52s %-8s %s\n' "case" "result" "expected / got"
awk -F'\t' '$1=="CASE" { printf "%-52s %-8s %s\n", $2, $5, ($5=="PASS" ? $3 : $5=="SKIP" ? $4 : "expected " $3 " / got " $4) }' "$out/all"
# Every sentence of the four seed functions' pages is listed with the cases that check it, and
# each of those cases ran (ctests/pages.py; their results are in the count below).
man=${CTEST_MAN_DIR:-$root/../shared/spec/man3dat}
if [ -n "${CTEST_ONLY:-}" ]; then
    :
elif [ -d "$man" ]; then
    python3 "$here/pages.py" "$man" "$out/all" || status=1
else
    echo "pages: skipped: no man pages at $man (CTEST_MAN_DIR)"
fi
passed=$(awk -F'\t' '$1=="CASE" && $5=="PASS"' "$out/all" | wc -l)
failed=$(awk -F'\t' '$1=="CASE" && $5=="FAIL"' "$out/all" | wc -l)
skipped=$(awk -F'\t' '$1=="CASE" && $5=="SKIP"' "$out/all" | wc -l)
echo "ctest: $passed passed, $failed failed, $skipped skipped (DAT $api API)"
[ "$failed" = 0 ] && [ $status = 0 ]
