#!/usr/bin/env bash
# The RDMA transport on a machine without RDMA: the library names no rdma-core symbol it would
# need at load (rdma-core is loaded with dlopen), and it loads and runs TCP with rdma-core
# hidden; opening an RDMA IA there gives DAT_PROVIDER_NOT_FOUND with the reason under
# LIBDAT_DEBUG, and datinfo says why no device is listed.
# usage: host.sh LIBDIR INCLUDE_DIR DATINFO
set -euo pipefail
libdir=${1:?}; inc=${2:?}; datinfo=${3:?}
lib="$libdir/libdat2.so.2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'echo "rdma-host: line $LINENO failed (exit $?)"' ERR
fail=0

undefined=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | grep -E '^(ibv_|rdma_|mlx5|umad_)' || true)
if [ -n "$undefined" ]; then
    echo "rdma-host: the library needs rdma-core symbols at load:"; echo "$undefined"; fail=1
fi

cat > "$tmp/open.c" <<'C'
#include <stdio.h>
#include <dat2/udat.h>
int main(int argc, char **argv)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    const char *major = "", *minor = "";
    DAT_RETURN rc = dat_ia_open(argv[1], 8, &evd, &ia);
    dat_strerror(rc, &major, &minor);
    printf("%s %s\n", major, minor);
    return 0;
}
C
gcc -Wall -Werror -I "$inc" "$tmp/open.c" -L "$libdir" -ldat2 -o "$tmp/open"
printf '%s\n' 'ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""' \
    'ofa-v2-mlx4_0-1 u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 "mlx4_0 1" ""' > "$tmp/dat.conf"
export DAT_OVERRIDE="$tmp/dat.conf" LD_LIBRARY_PATH="$libdir"

# Opens $1 and expects "$2"; with $3, expects it in the LIBDAT_DEBUG lines too.
expect_open() {
    local out
    out=$(LIBDAT_DEBUG=1 "$tmp/open" "$1" 2> "$tmp/err") || { echo "rdma-host: opening $1 crashed"; fail=1; return; }
    if [ "$out" != "$2" ]; then
        echo "rdma-host: opening $1 gave '$out', not '$2'"; fail=1
    elif [ -n "${3:-}" ] && ! grep -q "$3" "$tmp/err"; then
        echo "rdma-host: opening $1 said no '$3' under LIBDAT_DEBUG:"; cat "$tmp/err"; fail=1
    fi
}

if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
    echo "rdma-host: this machine has RDMA devices; the checks below are for one without"
    exit 77
fi
expect_open tcp-lo "DAT_SUCCESS DAT_NO_SUBTYPE"
expect_open ofa-v2-ib0 "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED" "no RDMA device is present"
expect_open ofa-v2-mlx4_0-1 "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED" "no RDMA device is present"
info=$("$datinfo")
grep -q '^RDMA devices: none (no RDMA device is present)$' <<< "$info" ||
    { echo "rdma-host: datinfo does not say no RDMA device is present"; fail=1; }

# rdma-core hidden: every library of it this machine has reads as an empty file.
hide=""
for l in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libibumad.so.3; do
    # (awk reads to the end: an early exit would make ldconfig's write fail under pipefail)
    p=$(ldconfig -p | awk -v l="$l" '$1 == l && !p {p = $NF} END {print p}')
    [ -n "$p" ] && hide="$hide $p"
done
if ! unshare -m true 2>/dev/null; then
    echo "rdma-host: cannot make a mount namespace here (needs root): rdma-core absent not checked"
    [ $fail = 0 ] && exit 77
    exit 1
fi
export -f expect_open
export tmp
hidden=$(unshare -m bash -c '
    fail=0
    for p in '"$hide"'; do mount --bind /dev/null "$p"; done
    expect_open tcp-lo "DAT_SUCCESS DAT_NO_SUBTYPE"
    expect_open ofa-v2-ib0 "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED" "rdma-core (libibverbs.so.1) is not installed"
    "'"$datinfo"'" | grep -q "^RDMA devices: none (rdma-core (libibverbs.so.1) is not installed)$" ||
        { echo "rdma-host: datinfo without rdma-core does not say so"; fail=1; }
    exit $fail') || fail=1
[ -n "$hidden" ] && echo "$hidden"
[ $fail = 0 ] && echo "rdma-host: no rdma-core symbol needed at load; without a device and without rdma-core ($hide hidden) TCP runs, an RDMA IA is DAT_PROVIDER_NOT_FOUND with its reason, datinfo says why"
exit $fail
