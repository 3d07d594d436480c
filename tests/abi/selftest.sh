#!/usr/bin/env bash
# Shows that compare.py can fail: each deliberate change to a copy of the reference headers
# must be reported as a difference. With --set 1.2, the DAT 1.2 reference (compat-dapl's
# dat/*.h) and changes of its own.
# usage: selftest.sh [--set 1.2] REF_INCLUDE_DIR
set -euo pipefail
set_args=() dir=dat2
if [ "${1:-}" = --set ]; then
    set_args=(--set "$2") dir=dat
    shift 2
fi
ref=${1:?usage: selftest.sh [--set 1.2] REF_INCLUDE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# The mutations are independent: each in a directory of its own, as many at once as there are
# processors (the comparison is one process each); their lines are printed in order at the end.
n=0
slots=$(nproc)
mutate() {  # name, file, sed expression
    n=$((n + 1))
    local d="$tmp/$n"
    mkdir -p "$d/inc" && cp -r "$ref/$dir" "$d/inc/$dir"
    sed -i "$3" "$d/inc/$dir/$2"
    if cmp -s "$ref/$dir/$2" "$d/inc/$dir/$2"; then
        echo "selftest: $1: the mutation did not apply" > "$d/line"; echo 1 > "$d/failed"; return
    fi
    (
        if python3 "$here/compare.py" "${set_args[@]}" "$ref" "$d/inc" > "$d/out" 2>&1; then
            echo "selftest: $1: NOT detected" > "$d/line"; echo 1 > "$d/failed"
        else
            echo "selftest: $1: detected ($(tail -1 "$d/out"))" > "$d/line"
        fi
    ) &
    while [ "$(jobs -rp | wc -l)" -ge "$slots" ]; do wait -n || true; done
}
if [ $dir = dat2 ]; then
    mutate "member type" dat.h 's/^    DAT_COUNT                   max_recv_dtos;/    DAT_UINT64 max_recv_dtos;/'
    mutate "enum value" dat.h 's/DAT_EP_STATE_UNCONNECTED,/DAT_EP_STATE_UNCONNECTED = 5,/'
    mutate "macro value" dat.h 's/#define DAT_TIMEOUT_INFINITE    ((DAT_TIMEOUT) ~0)/#define DAT_TIMEOUT_INFINITE 7/'
    mutate "macro type (same value)" dat.h 's/#define DAT_TIMEOUT_INFINITE    ((DAT_TIMEOUT) ~0)/#define DAT_TIMEOUT_INFINITE 4294967295/'
    mutate "field-mask macro type (same value, an int)" dat.h 's/^#define DAT_IA_FIELD_IA_MAX_EPS                          UINT64_C(0x000000080)/#define DAT_IA_FIELD_IA_MAX_EPS 0x80/'
    mutate "macro type (DAT_CLASS_ERROR a long)" dat_error.h 's/^#define DAT_CLASS_ERROR           0x80000000/#define DAT_CLASS_ERROR 2147483648/'
    mutate "prototype" dat.h 's/IN      DAT_CLOSE_FLAGS );	\/\* close_flags          \*\//IN DAT_COUNT);/'
    mutate "typedef changed" dat.h "s/^typedef DAT_UINT64      DAT_PORT_QUAL;/typedef DAT_UINT32 DAT_PORT_QUAL;/"
    mutate "tag removed" dat.h 's/^typedef struct dat_event$/typedef struct/'
    mutate "C++ name only (same size and sign)" dat_platform_specific.h 's/^typedef u_int64_t               DAT_UINT64;/typedef unsigned long long DAT_UINT64;/'
    mutate "macro body" dat_redirection.h 's/^#define DAT_HANDLE_TO_PROVIDER(handle) (\*(DAT_PROVIDER \*\*)(handle))/#define DAT_HANDLE_TO_PROVIDER(handle) ((DAT_PROVIDER *)(handle))/'
    mutate "const member" udat.h 's/^    const DAT_BOOLEAN           evd_stream_merging_supported/    DAT_BOOLEAN evd_stream_merging_supported/'
    mutate "typedef added (even a libdat_ one)" udat.h 's/^} DAT_CNO_PARAM;/} DAT_CNO_PARAM;\ntypedef int libdat_helper;/'
else
    # The 1.2 facts that set it apart from 2.0, each changed back towards 2.0.
    mutate "triplet member type (64-bit length)" dat.h '245s/^    DAT_VLEN                    segment_length;/    DAT_COUNT segment_length;/'
    mutate "event member type (64-bit transfered_length)" dat.h 's/^    DAT_VLEN                    transfered_length;/    DAT_COUNT transfered_length;/'
    mutate "enum values (SRQ states swapped)" dat.h 's/^    DAT_SRQ_STATE_OPERATIONAL,/    DAT_SRQ_STATE_OPERATIONAL = 1,/; s/^    DAT_SRQ_STATE_ERROR$/    DAT_SRQ_STATE_ERROR = 0/'
    mutate "return code (DAT_NOT_IMPLEMENTED)" dat_error.h 's/^    DAT_NOT_IMPLEMENTED                         = 0xFFFF0000/    DAT_NOT_IMPLEMENTED = 0x0FFF0000/'
    mutate "field-mask macro value" dat.h 's/^#define DAT_IA_FIELD_IA_MAX_EPS                          UINT64_C(0x000000080)/#define DAT_IA_FIELD_IA_MAX_EPS UINT64_C(0x000000100)/'
    mutate "macro value" dat.h 's/#define DAT_TIMEOUT_INFINITE    ((DAT_TIMEOUT) ~0)/#define DAT_TIMEOUT_INFINITE 7/'
    mutate "macro type (same value)" dat.h 's/#define DAT_TIMEOUT_INFINITE    ((DAT_TIMEOUT) ~0)/#define DAT_TIMEOUT_INFINITE 4294967295/'
    mutate "field-mask macro type (same value, an int)" dat.h 's/^#define DAT_IA_FIELD_IA_MAX_EPS                          UINT64_C(0x000000080)/#define DAT_IA_FIELD_IA_MAX_EPS 0x80/'
    mutate "macro type (DAT_CLASS_ERROR a long)" dat_error.h 's/^#define DAT_CLASS_ERROR           0x80000000/#define DAT_CLASS_ERROR 2147483648/'
    mutate "prototype (dat_cr_reject with private data)" dat.h 's/^	IN      DAT_CR_HANDLE )		\/\* cr_handle            \*\/;/	IN DAT_CR_HANDLE, IN DAT_COUNT, IN const DAT_PVOID);/'
    mutate "typedef changed" dat.h "s/^typedef DAT_UINT64      DAT_PORT_QUAL;/typedef DAT_UINT32 DAT_PORT_QUAL;/"
    mutate "tag removed" dat.h 's/^typedef struct dat_event$/typedef struct/'
    mutate "C++ name only (same size and sign)" dat_platform_specific.h 's/^typedef u_int64_t               DAT_UINT64;/typedef unsigned long long DAT_UINT64;/'
    mutate "macro body" dat_redirection.h 's/^#define DAT_HANDLE_TO_PROVIDER(handle) (\*(DAT_PROVIDER \*\*)(handle))/#define DAT_HANDLE_TO_PROVIDER(handle) ((DAT_PROVIDER *)(handle))/'
    mutate "const member" udat.h 's/^    const DAT_BOOLEAN           evd_stream_merging_supported/    DAT_BOOLEAN evd_stream_merging_supported/'
    mutate "typedef added (even a libdat_ one)" udat.h 's/^} DAT_CNO_PARAM;/} DAT_CNO_PARAM;\ntypedef int libdat_helper;/'
    mutate "a call bound to another version" udat.h 's/^} DAT_CNO_PARAM;/} DAT_CNO_PARAM;\n__asm__(".symver dat_cno_free, dat_cno_free@DAT_2.0");/'
fi
wait
for i in $(seq 1 $n); do
    cat "$tmp/$i/line"
    [ -f "$tmp/$i/failed" ] && fail=1
done
exit $fail
