#!/usr/bin/env bash
# How `-ldat` serves both generations: a program built against our DAT 1.2 headers
# (include/dat) imports every function it calls from version DAT_1.2 of the library, one built
# against the DAT 2.0 headers (include/dat2) from DAT_2.0, and a function a program does not
# call adds no import. Every function each header set declares (enumerated by clang) is
# referenced from C and from C++ (GCC and Clang); a 1.2 program and a 2.0 one, built from one source, open
# tcp-lo (dat_ia_open) and name an error (dat_strerror) on the library in LIBDIR.
# usage: bindings.sh LIBDIR INCLUDE_DIR
set -euo pipefail
libdir=$(cd "${1:?usage: bindings.sh LIBDIR INCLUDE_DIR}" && pwd)
inc=$(cd "${2:?usage: bindings.sh LIBDIR INCLUDE_DIR}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# The functions a header set declares, in the files of its directory.
declared() {  # dir, headers...
    local dir=$1; shift
    { echo '#include <netinet/in.h>'; for h in "$@"; do echo "#include <$dir/$h>"; done; } > "$tmp/tu.c"
    clang -I "$inc" -Xclang -ast-dump=json -fsyntax-only "$tmp/tu.c" | DIR=$dir python3 -c '
import json, os, sys
cur = None
for d in json.load(sys.stdin)["inner"]:
    loc = d.get("loc", {})
    f = loc.get("file") or loc.get("spellingLoc", {}).get("file")
    if f:
        cur = f
    if d["kind"] == "FunctionDecl" and cur and "/" + os.environ["DIR"] + "/" in cur:
        print(d["name"])
' | sort -u
}

# A source that takes the address of every function listed in a file.
references() {  # dir, list, headers...
    local dir=$1 list=$2; shift 2
    echo '#include <netinet/in.h>'
    for h in "$@"; do echo "#include <$dir/$h>"; done
    echo 'typedef void (*fn)(void);'
    echo 'extern const fn every[];'
    echo 'const fn every[] = {'
    sed 's/.*/    (fn)\&&,/' "$list"
    echo '};'
    echo 'int main(void) { return every[0] == 0; }'
}

# The dat_ symbols a file imports, "name version", sorted.
imports() {
    objdump -T "$1" | awk 'NF > 2 && /\*UND\*/ && $NF ~ /^dat_/ {v = $(NF-1); gsub(/[()]/, "", v); print $NF, v}' | sort
}

# A header set's functions: referenced from C and C++, each reference bound to `version` in the
# object (`nm`: name@version, or the plain name for the default), then linked with -ldat:
# imported from that version, all of them and nothing else.
check_set() {  # label, dir, version (or "" for the default), expected import version, headers...
    local label=$1 dir=$2 bound=$3 version=$4; shift 4
    declared "$dir" "$@" > "$tmp/$dir.fns"
    local n; n=$(wc -l < "$tmp/$dir.fns")
    [ "$n" -gt 0 ] || { echo "bindings: $label: no function found in the headers"; fail=1; return; }
    references "$dir" "$tmp/$dir.fns" "$@" > "$tmp/$dir.c"
    cp "$tmp/$dir.c" "$tmp/$dir.cc"
    sed "s/\$/${bound:+@$bound}/" "$tmp/$dir.fns" | sort > "$tmp/$dir.want-obj"
    local compilers=(gcc g++ clang)
    command -v clang++ > /dev/null && compilers+=(clang++)
    for cc in "${compilers[@]}"; do
        local src=$tmp/$dir.c; [[ $cc = *++ ]] && src=$tmp/$dir.cc
        if ! $cc -w -I "$inc" -c "$src" -o "$tmp/$dir.o"; then
            echo "bindings: $label: $cc could not compile the references"; fail=1; continue
        fi
        nm --undefined-only "$tmp/$dir.o" | awk '{print $2}' | grep '^dat_' | sort > "$tmp/$dir.obj"
        if ! diff -u "$tmp/$dir.want-obj" "$tmp/$dir.obj" > "$tmp/diff"; then
            echo "bindings: $label: the $cc object's references are not every function ${bound:+@$bound}:"; cat "$tmp/diff"; fail=1
        fi
    done
    sed "s/\$/ $version/" "$tmp/$dir.fns" > "$tmp/$dir.want"
    if ! gcc -w -I "$inc" "$tmp/$dir.c" -L "$libdir" -ldat -o "$tmp/$dir.exe" 2> "$tmp/err"; then
        echo "bindings: $label: the program does not link with -ldat:"; head -5 "$tmp/err"
        objdump -T "$libdir/libdat.so" |
            awk -v want="$version" 'NF > 2 && !/\*UND\*/ && $NF ~ /^dat_/ {v = $(NF-1); gsub(/[()]/, "", v); if (v == want) print $NF}' | sort > "$tmp/have"
        echo "bindings: $label: not defined in $version by the library: $(comm -23 "$tmp/$dir.fns" "$tmp/have" | tr "\n" " ")"
        fail=1; return
    fi
    imports "$tmp/$dir.exe" > "$tmp/$dir.got"
    if diff -u "$tmp/$dir.want" "$tmp/$dir.got" > "$tmp/diff"; then
        echo "bindings: $label: a program calling all $n functions imports each from $version; the references of ${compilers[*]} objects are bound alike"
    else
        echo "bindings: $label: the imports differ from every function in $version:"; cat "$tmp/diff"; fail=1
    fi
}

check_set "DAT 1.2 headers" dat DAT_1.2 DAT_1.2 udat.h dat_registry.h
check_set "DAT 2.0 headers" dat2 "" DAT_2.0 udat.h dat_registry.h dat_ib_extensions.h

# One source, both generations: opens tcp-lo (a 1.2 program's dat_ia_open is dat_ia_openv with
# major 1, which only the 1.2 entry point accepts) and names an error code of its own
# generation's numbering (DAT_NAME_NOT_REGISTERED is 98 in 1.2 and 100 in 2.0).
cat > "$tmp/open.c" <<'C'
#include <stdio.h>
#include <string.h>
#ifdef DAT12
#include <dat/udat.h>
#else
#include <dat2/udat.h>
#endif
int main(void)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    const char *major = 0, *minor = 0;
    char name[] = "tcp-lo";
    DAT_RETURN rc = dat_ia_open(name, 8, &evd, &ia);
    if (rc != DAT_SUCCESS) {
        printf("dat_ia_open(tcp-lo): %#x\n", (unsigned)rc);
        return 1;
    }
    rc = dat_strerror(DAT_PROVIDER_NOT_FOUND | DAT_NAME_NOT_REGISTERED, &major, &minor);
    if (rc != DAT_SUCCESS || strcmp(major, "DAT_PROVIDER_NOT_FOUND") || strcmp(minor, "DAT_NAME_NOT_REGISTERED")) {
        printf("dat_strerror: %#x %s %s\n", (unsigned)rc, major ? major : "-", minor ? minor : "-");
        return 1;
    }
    rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    printf("DAT %d.%d: tcp-lo opened and closed, %s %s\n", DAT_VERSION_MAJOR, DAT_VERSION_MINOR, major, minor);
    return rc != DAT_SUCCESS;
}
C
for version in 1.2 2.0; do
    flags=(); [ $version = 1.2 ] && flags=(-DDAT12)
    exe=$tmp/open-$version
    if ! gcc -std=c99 -Wall -Wextra -Werror -pedantic "${flags[@]}" -I "$inc" "$tmp/open.c" -L "$libdir" -ldat -o "$exe" 2> "$tmp/err"; then
        echo "bindings: the DAT $version program does not build with -ldat:"; head -5 "$tmp/err"; fail=1; continue
    fi
    printf 'dat_ia_close DAT_%s\ndat_ia_openv DAT_%s\ndat_strerror DAT_%s\n' $version $version $version > "$tmp/want"
    if ! imports "$exe" | diff -u "$tmp/want" - > "$tmp/diff"; then
        echo "bindings: the DAT $version program's imports are not exactly the three it calls, in DAT_$version:"; cat "$tmp/diff"; fail=1
    fi
    if out=$(DAT_OVERRIDE=/dev/null LD_LIBRARY_PATH="$libdir" timeout 30 "$exe" 2>&1); then
        echo "bindings: $out (imports exactly its three functions, from DAT_$version)"
    else
        echo "bindings: the DAT $version program failed: $out"; fail=1
    fi
done
exit $fail
