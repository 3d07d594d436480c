#!/usr/bin/env bash
# Builds the DAT 1.2 programs the dat12 runs use, from compat-dapl 1.2.19's unmodified tarball
# (OpenFabrics' last DAT 1.2 release), in two ways, with the flags of its own Makefile.am
# (-g -Wall -D_GNU_SOURCE):
#   OUT/compat/  its dtest and dapltest against its own headers (dat/include) and its own
#                libdat.so.1, built from its dat/ sources with its version script
#                (dat/udat/libdat.map) and SONAME libdat.so.1, as its Makefile.am builds it, by
#                cc directly rather than through its autotools; pingpong12 likewise;
#   OUT/ours/    the same sources against INCLUDE_DIR/dat, linked with -L LIBDIR -ldat; and
#                tests/dat12/pingpong.c as 1.2 (pingpong12: INCLUDE_DIR/dat, -ldat) and as 2.0
#                (pingpong20: INCLUDE_DIR/dat2, -ldat2).
# Checked: every dat/ header the ours/ builds read is ours (gcc -H); they give no warning that
# compat-dapl's headers do not give too; every dat_* they import is in version node DAT_1.2
# (pingpong20's in DAT_2.0): a program that does not is removed, never run. The tarball is unpacked under OUT at each build; nothing is kept
# elsewhere. A build whose inputs did not change is kept (OUT/inputs.sha256).
# usage: build.sh LIBDIR INCLUDE_DIR OUT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "${1:?usage: build.sh LIBDIR INCLUDE_DIR OUT}" && pwd)
inc=$(cd "${2:?}" && pwd)
out=${3:?}
tarball=${COMPAT_DAPL_TARBALL:-$here/../../../shared/consumers/compat-dapl-1.2.19.tar.gz}
if [ ! -f "$tarball" ]; then
    echo "dat12: no $tarball here: the DAT 1.2 programs cannot be built"
    exit 77
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
key=$(cat "$tarball" "$inc"/dat/*.h "$inc"/dat2/*.h "$here/pingpong.c" "$0" "$libdir/libdat2.so.2" | sha256sum)
if [ "$(cat "$out/inputs.sha256" 2>/dev/null)" = "$key" ] && [ -x "$out/ours/pingpong20" ]; then
    echo "dat12: built already (same inputs): $out"
    exit 0
fi
rm -rf "$out/src" "$out/compat" "$out/ours" "$out/inputs.sha256"
mkdir -p "$out/src" "$out/compat" "$out/ours" "$out/logs"
tar xzf "$tarball" -C "$out/src" --strip-components=1 || exit 1
src=$out/src
logs=$out/logs
flags="-g -Wall -D_GNU_SOURCE"
fail=0

# --- compat-dapl's libdat.so.1: its Makefile.am's sources and flags. Its header includes
# <linux/stddef.h> for NULL, which today's kernel headers no longer define: <stddef.h> first.
osrel=$(($(uname -r | cut -f1 -d.) * 65536 + $(uname -r | cut -f2 -d.)))
# shellcheck disable=SC2086  # flags: several words
(cd "$src" && gcc $flags -include stddef.h -DDAT_CONF='"/etc/dat.conf"' -DOS_RELEASE=$osrel \
    -I dat/include -I dat/udat -I dat/udat/linux -I dat/common -fPIC -DPIC -shared \
    -Wl,--version-script=dat/udat/libdat.map -Wl,-soname,libdat.so.1 \
    dat/udat/udat.c dat/udat/udat_api.c dat/udat/udat_sr_parser.c dat/udat/linux/dat_osd.c \
    dat/common/dat_api.c dat/common/dat_dictionary.c dat/common/dat_strerror.c \
    dat/common/dat_init.c dat/common/dat_dr.c dat/common/dat_sr.c \
    -o "$out/compat/libdat.so.1" -ldl) > "$logs/libdat.log" 2>&1 ||
    { echo "dat12: compat-dapl's libdat.so.1 does not build:"; tail -5 "$logs/libdat.log"; exit 1; }
ln -s libdat.so.1 "$out/compat/libdat.so"
echo "dat12: compat-dapl's libdat.so.1 built ($(objdump -T "$out/compat/libdat.so.1" | grep -c 'DAT_1.2 *dat_') functions in DAT_1.2)"

# --- The programs, each both ways. dir: under the tree; then extra flags and sources.
dapltest_sources=$(sed -n '/^dapltest1_SOURCES/,/^$/p' "$src/test/dapltest/Makefile.am" | grep -oE '[A-Za-z0-9_/]+\.c' | tr '\n' ' ')
build_one() {  # way (compat|ours), name, directory, extra flags, sources...
    local way=$1 name=$2 dir=$3 extra=$4; shift 4
    local headers link
    if [ "$way" = compat ]; then
        headers="-I $src/dat/include"; link="-L $out/compat -ldat"
    else
        headers="-I $inc"; link="-L $libdir -ldat"
    fi
    # shellcheck disable=SC2086
    (cd "$dir" && gcc -H $flags $extra $headers "$@" -o "$out/$way/$name" $link -lpthread) > "$logs/$way-$name.log" 2>&1
}
build_both() {  # name, directory, extra flags, sources...
    local name=$1
    build_one compat "$@" & local a=$!
    build_one ours "$@"; local rc=$?
    wait $a || { echo "dat12: $name does not build against compat-dapl's headers:"; grep -v '^\.' "$logs/compat-$name.log" | tail -5; fail=1; return; }
    [ $rc = 0 ] || { echo "dat12: $name does not build against our headers:"; grep -v '^\.' "$logs/ours-$name.log" | tail -10; fail=1; return; }
    # Every dat/ header it read is ours.
    local foreign
    foreign=$(sed -n 's/^\.\+ \(.*dat\/[a-z_]*\.h\)$/\1/p' "$logs/ours-$name.log" | while read -r h; do
        case $(cd "$2" && realpath "$h") in "$inc"/dat/*) ;; *) echo "$h" ;; esac
    done | sort -u)
    [ -z "$foreign" ] || { echo "dat12: $name read dat/ headers that are not ours: $foreign"; fail=1; return; }
    # No warning that compat-dapl's headers do not give too (the same flags both ways).
    grep ': warning: ' "$logs/compat-$name.log" | sort -u > "$logs/compat-$name.warn"
    grep ': warning: ' "$logs/ours-$name.log" | sort -u > "$logs/ours-$name.warn"
    local new
    new=$(comm -13 "$logs/compat-$name.warn" "$logs/ours-$name.warn")
    [ -z "$new" ] || { echo "dat12: $name: warnings against our headers only:"; echo "$new" | head -10; fail=1; return; }
    echo "dat12: $name built both ways; against ours: $(grep -c "dat/" "$logs/ours-$name.log") dat/ header reads, all ours, $(wc -l < "$logs/ours-$name.warn") warnings, each also against compat-dapl's"
}
build_both dtest "$src/test/dtest" "" dtest.c
# shellcheck disable=SC2086
build_both dapltest "$src/test/dapltest" "-I include -I mdep/linux" $dapltest_sources
build_one compat pingpong12 "$here" "" pingpong.c || { echo "dat12: pingpong does not build against compat-dapl's headers"; fail=1; }
for v in 12 20; do
    lib=-ldat; def=""
    [ $v = 20 ] && { lib=-ldat2; def=-DPINGPONG_DAT2; }
    # shellcheck disable=SC2086
    if ! gcc -std=c99 $flags -Wextra $def -I "$inc" "$here/pingpong.c" -o "$out/ours/pingpong$v" -L "$libdir" $lib > "$logs/pingpong$v.log" 2>&1 ||
        grep -q warning "$logs/pingpong$v.log"; then
        echo "dat12: pingpong$v does not build cleanly against our headers:"; head -5 "$logs/pingpong$v.log"; fail=1
    fi
done

# --- What each program imports: compat/ and ours/'s 1.2 programs DAT_1.2 alone, pingpong20 DAT_2.0.
imports() {  # binary, version node it must import every dat_* from
    local all wrong
    all=$(objdump -T "$1" | awk '$NF ~ /^dat_/ && /\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}')
    wrong=$(echo "$all" | grep -v "^$2 " | head -3)
    if [ -z "$all" ] || [ -n "$wrong" ]; then
        echo "dat12: $(basename "$(dirname "$1")")/$(basename "$1") does not import its dat_* functions from $2 alone: $(echo "$wrong" | tr '\n' ' ')(removed: not run)"
        rm -f "$1"
        fail=1
    fi
}
for b in compat/dtest compat/dapltest compat/pingpong12 ours/dtest ours/dapltest ours/pingpong12; do
    [ -x "$out/$b" ] && imports "$out/$b" "DAT_1.2"
done
[ -x "$out/ours/pingpong20" ] && imports "$out/ours/pingpong20" "DAT_2.0"
[ $fail = 0 ] && echo "$key" > "$out/inputs.sha256" && echo "dat12: every 1.2 program imports its dat_* functions from DAT_1.2 alone, pingpong20 from DAT_2.0"
exit $fail
