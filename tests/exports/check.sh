#!/usr/bin/env bash
# The shared library exports exactly the DAT API: every function the reference headers
# declare (enumerated from them by clang) plus the two registry functions, each in version
# node DAT_2.0; every function compat-dapl's libdat.so.1 exports (its version script), each in
# version node DAT_1.2 (skipped where compat-dapl's tarball is not); and nothing else. Its
# SONAME is libdat2.so.2; -ldat and -ldat2 both link, and libdat.so.1 is the same file.
# usage: check.sh LIBDIR INCLUDE_DIR REF_INCLUDE_DIR
set -euo pipefail
libdir=${1:?}; inc=${2:?}; ref=${3:?}
lib="$libdir/libdat2.so.2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

printf '#include <netinet/in.h>\n#include <dat2/udat.h>\n#include <dat2/dat_registry.h>\n#include <dat2/dat_ib_extensions.h>\n' > "$tmp/tu.c"
clang -I "$ref" -Xclang -ast-dump=json -fsyntax-only "$tmp/tu.c" | python3 -c '
import json, sys
cur = None
for d in json.load(sys.stdin)["inner"]:
    loc = d.get("loc", {})
    f = loc.get("file") or loc.get("spellingLoc", {}).get("file")
    if f:
        cur = f
    if d["kind"] == "FunctionDecl" and cur and "/dat2/" in cur:
        print(d["name"])
' | sort -u > "$tmp/expected"

objdump -T "$lib" | awk '($0 ~ /DF|DO/) && ($0 !~ /\*UND\*|\*ABS\*/) {print $(NF-1), $NF}' > "$tmp/table"
awk '$1 == "DAT_2.0" {print $2}' "$tmp/table" | sort -u > "$tmp/exported"
if ! diff -u "$tmp/expected" "$tmp/exported" > "$tmp/diff"; then
    echo "exports: the names in DAT_2.0 differ from the headers' functions:"; cat "$tmp/diff"; fail=1
fi
tarball=${COMPAT_DAPL_TARBALL:-$(dirname "$0")/../../../shared/consumers/compat-dapl-1.2.19.tar.gz}
v12=""
if [ -f "$tarball" ]; then
    tar -xzf "$tarball" -C "$tmp" --wildcards '*/dat/udat/libdat.map'
    tr -d ' \t;' < "$tmp"/*/dat/udat/libdat.map | grep '^dat_' | sort -u > "$tmp/expected12"
    awk '$1 == "(DAT_1.2)" {print $2}' "$tmp/table" | sort -u > "$tmp/exported12"
    if ! diff -u "$tmp/expected12" "$tmp/exported12" > "$tmp/diff12"; then
        echo "exports: the names in DAT_1.2 differ from compat-dapl's libdat.so.1:"; cat "$tmp/diff12"; fail=1
    fi
    v12=", $(wc -l < "$tmp/expected12") in DAT_1.2"
else
    echo "exports: no $tarball (COMPAT_DAPL_TARBALL): the DAT 1.2 list is not checked"
fi
if awk '$1 != "DAT_2.0" && $1 != "(DAT_1.2)" {bad=1} END {exit !bad}' "$tmp/table"; then
    echo "exports: symbols outside DAT_2.0 and DAT_1.2:"; awk '$1 != "DAT_2.0" && $1 != "(DAT_1.2)"' "$tmp/table"; fail=1
fi
[ "$(readlink "$libdir/libdat.so.1")" = libdat2.so.2 ] || { echo "exports: libdat.so.1 is not a link to libdat2.so.2"; fail=1; }
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libdat2.so.2 ] || { echo "exports: SONAME is '$soname'"; fail=1; }

cat > "$tmp/prog.c" <<'C'
#include <stdio.h>
#include <dat2/udat.h>
int main(void)
{
    const char *major = 0, *minor = 0;
    DAT_RETURN rc = dat_strerror(DAT_ERROR_PROBE, &major, &minor);
    printf("%s %s\n", major, minor);
    return rc != DAT_SUCCESS;
}
C
sed -i 's/DAT_ERROR_PROBE/(DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP)/' "$tmp/prog.c"
for name in dat dat2; do
    if gcc -Wall -Werror -I "$inc" "$tmp/prog.c" -L "$libdir" -l$name -o "$tmp/prog-$name" &&
       out=$(LD_LIBRARY_PATH="$libdir" "$tmp/prog-$name") && [ "$out" = "DAT_INVALID_HANDLE DAT_INVALID_HANDLE_EP" ]; then
        :
    else
        echo "exports: a program linked with -l$name failed (${out:-no output})"; fail=1
    fi
done
[ $fail = 0 ] && echo "exports: $(wc -l < "$tmp/expected") functions in DAT_2.0$v12, nothing else; SONAME libdat2.so.2; -ldat and -ldat2 link"
exit $fail
