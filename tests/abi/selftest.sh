#!/usr/bin/env bash
# Shows that compare.py can fail: each deliberate change to a copy of the reference headers
# must be reported as a difference.
# usage: selftest.sh REF_INCLUDE_DIR
set -euo pipefail
ref=${1:?usage: selftest.sh REF_INCLUDE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
mutate() {  # name, file, sed expression
    rm -rf "$tmp/inc" && mkdir -p "$tmp/inc" && cp -r "$ref/dat2" "$tmp/inc/dat2"
    sed -i "$3" "$tmp/inc/dat2/$2"
    if cmp -s "$ref/dat2/$2" "$tmp/inc/dat2/$2"; then
        echo "selftest: $1: the mutation did not apply"; fail=1; return
    fi
    if python3 "$here/compare.py" "$ref" "$tmp/inc" > "$tmp/out" 2>&1; then
        echo "selftest: $1: NOT detected"; fail=1
    else
        echo "selftest: $1: detected ($(tail -1 "$tmp/out"))"
    fi
}
mutate "member type" dat.h 's/^    DAT_COUNT                   max_recv_dtos;/    DAT_UINT64 max_recv_dtos;/'
mutate "enum value" dat.h 's/DAT_EP_STATE_UNCONNECTED,/DAT_EP_STATE_UNCONNECTED = 5,/'
mutate "macro value" dat.h 's/#define DAT_TIMEOUT_INFINITE    ((DAT_TIMEOUT) ~0)/#define DAT_TIMEOUT_INFINITE 7/'
mutate "prototype" dat.h 's/IN      DAT_CLOSE_FLAGS );	\/\* close_flags          \*\//IN DAT_COUNT);/'
mutate "typedef changed" dat.h "s/^typedef DAT_UINT64      DAT_PORT_QUAL;/typedef DAT_UINT32 DAT_PORT_QUAL;/"
mutate "tag removed" dat.h 's/^typedef struct dat_event$/typedef struct/'
mutate "C++ name only (same size and sign)" dat_platform_specific.h 's/^typedef u_int64_t               DAT_UINT64;/typedef unsigned long long DAT_UINT64;/'
mutate "macro body" dat_redirection.h 's/^#define DAT_HANDLE_TO_PROVIDER(handle) (\*(DAT_PROVIDER \*\*)(handle))/#define DAT_HANDLE_TO_PROVIDER(handle) ((DAT_PROVIDER *)(handle))/'
mutate "const member" udat.h 's/^    const DAT_BOOLEAN           evd_stream_merging_supported/    DAT_BOOLEAN evd_stream_merging_supported/'
mutate "typedef added (even a libdat_ one)" udat.h 's/^} DAT_CNO_PARAM;/} DAT_CNO_PARAM;\ntypedef int libdat_helper;/'
exit $fail
