#!/usr/bin/env bash
# Our headers compile warning-free with -Wall -Wextra -Werror -pedantic as C99, C11 and C++17,
# each header included twice (the include guards cover everything in them).
# With --set 1.2, the DAT 1.2 headers (include/dat); given the reference headers too
# (compat-dapl's: tests/abi/dat12.sh pedantic), also as C89 and C++98, and a warning is allowed
# where the reference gives the same one (C89 has no `long long`, which the ABI needs).
# usage: pedantic.sh [--set 1.2] INCLUDE_DIR [REF_INCLUDE_DIR]
set -euo pipefail
dir=dat2
if [ "${1:-}" = --set ]; then
    dir=dat
    shift 2
fi
inc=${1:?usage: pedantic.sh [--set 1.2] INCLUDE_DIR [REF_INCLUDE_DIR]}
ref=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pass in 1 2; do
    for h in "$inc/$dir"/*.h; do echo "#include <$dir/$(basename "$h")>"; done
done > "$tmp/probe.c"
if [ $dir = dat ]; then
cat >> "$tmp/probe.c" <<'C'

/* Uses the macros and types a DAT 1.2 program uses; compiled, not linked. */
DAT_RETURN probe(DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd, DAT_RMR_HANDLE rmr, DAT_EP_HANDLE ep);
DAT_RETURN probe(DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd, DAT_RMR_HANDLE rmr, DAT_EP_HANDLE ep)
{
    DAT_EVENT event;
    DAT_COUNT more = 0;
    DAT_LMR_TRIPLET iov = { 0, 0, 0, 0 };
    DAT_RMR_CONTEXT context;
    DAT_RMR_COOKIE cookie;
    const char *major = 0;
    char name[] = "tcp-lo";
    DAT_RETURN rc = dat_ia_open(name, 8, evd, ia);
    if (DAT_GET_TYPE(rc) != DAT_SUCCESS) {
        (void)dat_strerror(rc, &major, 0);
        return rc;
    }
    cookie.as_64 = 1;
    (void)dat_rmr_bind(rmr, &iov, DAT_MEM_PRIV_ALL_FLAG, ep, cookie, DAT_COMPLETION_DEFAULT_FLAG, &context);
    (void)dat_evd_wait(*evd, DAT_TIMEOUT_INFINITE, 1, &event, &more);
    return dat_ia_close(*ia, DAT_CLOSE_DEFAULT);
}
C
else
cat >> "$tmp/probe.c" <<'C'

/* Uses the macros and types a program uses; compiled, not linked. */
DAT_RETURN probe(DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd);
DAT_RETURN probe(DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd)
{
    DAT_EVENT event;
    DAT_COUNT more = 0;
    const char *major = 0;
    char name[] = "tcp-lo";
    DAT_RETURN rc = dat_ia_open(name, 8, evd, ia);
    if (DAT_GET_TYPE(rc) != DAT_SUCCESS) {
        (void)dat_strerror(rc, &major, 0);
        return rc;
    }
    (void)dat_evd_wait(*evd, DAT_TIMEOUT_INFINITE, 1, &event, &more);
    (void)dat_strerror_ext_status(DAT_IB_OP_ERR, &major);
    return dat_ia_close(*ia, DAT_CLOSE_DEFAULT);
}
C
fi
cp "$tmp/probe.c" "$tmp/probe.cpp"
fail=0
if [ -n "$ref" ]; then
    # The reference's headers compile only in udat.h's order: the probe's body after the two a
    # program includes.
    { printf '#include <dat/udat.h>\n#include <dat/dat_registry.h>\n'; sed '/^#include/d' "$tmp/probe.c"; } > "$tmp/ref.c"
    cp "$tmp/ref.c" "$tmp/ref.cpp"
    # Each warning by its text alone (no file, line or column: the headers differ in layout).
    warnings() {  # compiler, standard, include dir, source
        "$1" -std="$2" -Wall -Wextra -pedantic -I "$3" -c "$4" -o "$tmp/probe.o" 2> "$tmp/err" ||
            { echo "pedantic: $2 FAILED to compile with $3:" >&2; cat "$tmp/err" >&2; return 1; }
        sed -n 's/^[^ ]*:[0-9]*:[0-9]*: warning: //p' "$tmp/err" | sort -u
    }
    for std in c89 c99 c11 c++98 c++17; do
        case $std in c++*) cc=g++ x=cpp ;; *) cc=gcc x=c ;; esac
        if ! warnings "$cc" $std "$inc" "$tmp/probe.$x" > "$tmp/ours" ||
           ! warnings "$cc" $std "$ref" "$tmp/ref.$x" > "$tmp/theirs"; then
            fail=1; continue
        fi
        extra=$(comm -23 "$tmp/ours" "$tmp/theirs")
        if [ -n "$extra" ]; then
            echo "pedantic: $std FAILED: warnings the reference headers do not give:"; echo "$extra"; fail=1
        elif [ -s "$tmp/ours" ]; then
            echo "pedantic: $std ok (the reference headers give these too: $(paste -sd';' "$tmp/ours"))"
        else
            echo "pedantic: $std ok"
        fi
    done
    exit $fail
fi
for std in c99 c11; do
    if gcc -std=$std -Wall -Wextra -Werror -pedantic -I "$inc" -c "$tmp/probe.c" -o "$tmp/probe.o"; then
        echo "pedantic: $std ok"
    else
        echo "pedantic: $std FAILED"; fail=1
    fi
done
if g++ -std=c++17 -Wall -Wextra -Werror -pedantic -I "$inc" -c "$tmp/probe.cpp" -o "$tmp/probe.o"; then
    echo "pedantic: c++17 ok"
else
    echo "pedantic: c++17 FAILED"; fail=1
fi
exit $fail
