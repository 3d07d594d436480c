#!/usr/bin/env bash
# Merges the PGO training's raw profiles into one, each transport's training weighed as much
# as the other's: the RDMA runs (fewer, in a slow guest) count as many times over as it takes
# for their data-path calls (posted sends, writes and receives: fixed by the runs' sizes,
# unlike the polls, whose number follows the timing) to match the TCP runs'. Without RDMA
# runs, the TCP profile alone.
#
#   bench/pgo-merge.sh LLVM-PROFDATA OUT TCP-RAW-DIR RDMA-RAW-DIR
set -euo pipefail
profdata=$1 out=$2 tcp=$3 rdma=$4
# The calls of the data-path functions in a profile: each function's largest block count.
posts() {
    for f in dat_ep_post_send dat_ep_post_rdma_write dat_ep_post_recv; do
        "$profdata" show --counts --function="$f" "$1" |
            sed -n "/^  $f:\$/,/Block counts/s/.*Block counts: \[\(.*\)\]/\1/p" | tr ', ' '\n\n' | sort -n | tail -1
    done | awk '{ s += $1 } END { print s + 0 }'
}
if ! ls "$rdma"/*.profraw >/dev/null 2>&1; then
    "$profdata" merge -o "$out" "$tcp"
    exit
fi
"$profdata" merge -o "$out.tcp" "$tcp"
"$profdata" merge -o "$out.rdma" "$rdma"
tcp_posts=$(posts "$out.tcp") rdma_posts=$(posts "$out.rdma")
weight=$(( rdma_posts > 0 ? (tcp_posts + rdma_posts / 2) / rdma_posts : 1 ))
[ "$weight" -ge 1 ] || weight=1
"$profdata" merge -o "$out" --weighted-input=1,"$out.tcp" --weighted-input="$weight","$out.rdma"
rm -f "$out.tcp" "$out.rdma"
echo "pgo: profile of tcp-lo and RDMA training ($tcp_posts and $rdma_posts posts), the RDMA runs weighed x$weight"
