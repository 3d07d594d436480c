#!/usr/bin/env bash
# The DAT 1.2 headers (include/dat) against their reference, compat-dapl 1.2.19's own headers
# (dat/include/dat in its release tarball): the mechanical comparison (compare), or its
# self-test (selftest), or our headers' warnings under -pedantic beside theirs (pedantic).
# Skipped (77) where the tarball is not.
# usage: dat12.sh compare|selftest|pedantic [OUR_INCLUDE_DIR]
set -euo pipefail
mode=${1:?usage: dat12.sh compare|selftest|pedantic [OUR_INCLUDE_DIR]}
ours=${2:-include}
here=$(cd "$(dirname "$0")" && pwd)
tarball=${COMPAT_DAPL_TARBALL:-$here/../../../shared/consumers/compat-dapl-1.2.19.tar.gz}
if [ ! -f "$tarball" ]; then
    echo "dat12: no $tarball (COMPAT_DAPL_TARBALL): the DAT 1.2 reference headers are not here"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$tarball" -C "$tmp" --wildcards '*/dat/include/dat/*.h'
ref=$(echo "$tmp"/*/dat/include)
case $mode in
    compare) python3 "$here/compare.py" --set 1.2 "$ref" "$ours" ;;
    selftest) "$here/selftest.sh" --set 1.2 "$ref" ;;
    pedantic) "$here/pedantic.sh" --set 1.2 "$ours" "$ref" ;;
    *) echo "usage: dat12.sh compare|selftest|pedantic [OUR_INCLUDE_DIR]" >&2; exit 2 ;;
esac
