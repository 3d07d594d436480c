#!/usr/bin/env bash
# Runs the conformance suite against two libraries on this machine and writes the cases where
# they differ, with what the man page says beside each, to a Markdown report.
# usage: compare.sh REPORT OTHER_LIB OTHER_IA OTHER_DAT_CONF [OURS_IA]
#   REPORT          the report to write
#   OTHER_LIB       the other library (OpenFabrics: /usr/lib/x86_64-linux-gnu/libdat2.so.2)
#   OTHER_IA        the IA the other library opens (its dat.conf names it)
#   OTHER_DAT_CONF  the dat.conf the other library reads (DAT_OVERRIDE)
#   OURS_IA         the IA ours opens, through the same dat.conf (default: the built-in tcp-lo)
# `make ctest-openfabrics` runs it inside ../shared/rxe-vm, where OpenFabrics' library has an
# RDMA device (soft-RoCE) to run on.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
report=$1 other_lib=$2 other_ia=$3 other_conf=$4 ours_ia=${5:-tcp-lo}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "compare: libdat on $ours_ia"
CTEST_RAW=$work/ours DAT_IA=$ours_ia DAT_OVERRIDE=$other_conf "$here/run.sh" "$root/build/lib/libdat2.so.2" > "$work/ours.table" 2>&1
tail -1 "$work/ours.table"
echo "compare: $other_lib on $other_ia"
CTEST_RAW=$work/other DAT_IA=$other_ia DAT_OVERRIDE=$other_conf "$here/run.sh" "$other_lib" \
    > "$work/other.table" 2>&1
tail -1 "$work/other.table"

other_version=$(dpkg-query -W -f '${Package} ${Version}' libdapl2 2>/dev/null || echo "version unknown")
ours_version=$(git -C "$root" describe --always --dirty 2>/dev/null || echo "version unknown")
python3 "$here/report.py" "$work/ours" "$work/other" \
    --ours "libdat $ours_version on $ours_ia" \
    --other "OpenFabrics $other_version ($(basename "$(readlink -f "$other_lib")")) on $other_ia" \
    --machine "$(uname -sr), $(hostname)" --sources "$here" > "$report"
echo "compare: wrote $report"
