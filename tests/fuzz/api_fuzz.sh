#!/bin/sh
# Builds and runs the C API fuzz harness against a built libdat.
#
#   tests/fuzz/api_fuzz.sh LIBDIR [CALLS] [asan]
#
# LIBDIR holds libdat2.so.2. CALLS is the total over both worker processes: by default
# 2000000, which takes 15 to 40 s on a loaded two-core machine (10^6 calls take 7 to 20 s).
# With `asan` the harness is built with AddressSanitizer and UBSan and the default is 300000
# calls (about 10 s). Extra harness options (-s SEED, -T THREADS, -S SIGNAL_US, -P 0, -v,
# -t HANG_MS) go in $API_FUZZ_ARGS; the run is bounded by $API_FUZZ_TIMEOUT seconds (600).
# $API_FUZZ_BUILD keeps the built harness in that directory.
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 LIBDIR [CALLS] [asan]" >&2
	exit 2
fi
libdir=$(cd "$1" && pwd)
asan=
calls=
for a in "${2-}" "${3-}"; do
	case "$a" in
	asan) asan=1 ;;
	'') ;;
	*) calls=$a ;;
	esac
done
if [ -z "$calls" ]; then
	if [ -n "$asan" ]; then calls=300000; else calls=2000000; fi
fi

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${API_FUZZ_BUILD:-${TMPDIR:-/tmp}/api_fuzz.$$}
mkdir -p "$out"
bin=$out/api_fuzz
cflags="-O1 -g -Wall -Wextra -Werror -pthread -I $root/include"
if [ -n "$asan" ]; then
	cflags="$cflags -fsanitize=address,undefined -fno-omit-frame-pointer"
	bin=$out/api_fuzz_asan
fi
# shellcheck disable=SC2086
gcc $cflags -o "$bin" "$here/api_fuzz.c" -L "$libdir" -l:libdat2.so.2 -Wl,-rpath,"$libdir"

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DAT_OVERRIDE=${DAT_OVERRIDE:-/dev/null}
if [ -n "$asan" ]; then
	# The library's own threads run uninstrumented Rust: leaks at exit are not the point here.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0:halt_on_error=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
status=0
# The library catches a panic at its edges (a call returns an error, the progress thread goes
# on), so a panic kills nothing: its message on stderr is what shows it, and fails the run.
errors=$out/stderr
# shellcheck disable=SC2086
timeout -k 10 "${API_FUZZ_TIMEOUT:-600}" "$bin" -n "$calls" ${API_FUZZ_ARGS-} 2>"$errors" || status=$?
cat "$errors" >&2
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	echo "api_fuzz: the run did not finish within ${API_FUZZ_TIMEOUT:-600} s (a hang)" >&2
fi
if grep -q "panicked at" "$errors"; then
	echo "api_fuzz: the library panicked (above)" >&2
	[ "$status" -ne 0 ] || status=1
fi
[ -n "${API_FUZZ_BUILD-}" ] || rm -rf "$out"
exit "$status"
