#!/usr/bin/env bash
# Every test of the project, in order; each step prints its own lines, then one closing line
# "N passed, N failed, N skipped". A step that cannot run here (exit 77) says why and is
# skipped, not passed. Run by `make test` after `make`.
set -uo pipefail
cd "$(dirname "$0")/.."
ref=${DAT_REFERENCE_INCLUDE:-/usr/include}
passed=0
failed=0
skipped=0
failures=()
skips=()
step() {  # name, command...
    local name=$1; shift
    echo "=== $name"
    local started=$SECONDS
    "$@"
    local rc=$?
    echo "=== $name: $((SECONDS - started)) s"
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
    elif [ $rc = 77 ]; then
        skipped=$((skipped + 1)); skips+=("$name")
        echo "=== $name: SKIPPED"
    else
        failed=$((failed + 1)); failures+=("$name")
        echo "=== $name: FAILED"
    fi
}
install_check() {
    local dest; dest=$(mktemp -d)
    make -s install PREFIX=/usr DESTDIR="$dest" >/dev/null &&
    PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_LIBDIR="$dest/usr/lib/pkgconfig" pkg-config --cflags --libs dat2 > "$dest/flags" &&
    printf '#include <dat2/udat.h>\nint main(void){const char*a;return (int)dat_strerror(0,&a,0);}\n' > "$dest/p.c" &&
    gcc "$dest/p.c" $(cat "$dest/flags") -o "$dest/p" && LD_LIBRARY_PATH="$dest/usr/lib" "$dest/p" &&
    PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_LIBDIR="$dest/usr/lib/pkgconfig" pkg-config --cflags --libs dat > "$dest/flags12" &&
    printf '#include <dat/udat.h>\nint main(void){DAT_IA_HANDLE ia;DAT_EVD_HANDLE e=DAT_HANDLE_NULL;char n[]="tcp-lo";\nif(dat_ia_open(n,8,&e,&ia))return 1;\nreturn (int)dat_ia_close(ia,DAT_CLOSE_ABRUPT_FLAG);}\n' > "$dest/p12.c" &&
    gcc -Wall -Werror "$dest/p12.c" $(cat "$dest/flags12") -o "$dest/p12" &&
    objdump -T "$dest/p12" | grep -q 'DAT_1\.2.*dat_ia_openv$' &&
    DAT_OVERRIDE=/dev/null LD_LIBRARY_PATH="$dest/usr/lib" "$dest/p12" &&
    test -x "$dest/usr/bin/datinfo" && test -f "$dest/usr/share/doc/libdat/dat.conf.example" &&
    test -L "$dest/usr/lib/libdat.so" && test -L "$dest/usr/lib/libdat2.so" && test -L "$dest/usr/lib/libdat.so.1" &&
    echo "install: library, links, headers (dat2/ and dat/), dat2.pc and dat.pc, datinfo and dat.conf.example installed; a 2.0 and a 1.2 program build with pkg-config and run"
    local rc=$?
    rm -rf "$dest"
    return $rc
}
step "formatted as cargo fmt formats (cargo fmt --check)" cargo fmt --all --check
step "clippy, its warnings denied" cargo clippy --workspace --all-targets --quiet -- -D warnings
step "rust tests" cargo test --workspace --quiet
step "headers are what the Rust source generates" make -s check-headers
step "ABI equal to the reference headers" python3 tests/abi/compare.py "$ref" include
step "the ABI comparison detects changes" tests/abi/selftest.sh "$ref"
step "headers compile pedantic as C99, C11, C++17" tests/abi/pedantic.sh include
step "DAT 1.2 ABI equal to compat-dapl's headers" tests/abi/dat12.sh compare include
step "the DAT 1.2 ABI comparison detects changes" tests/abi/dat12.sh selftest
step "DAT 1.2 headers compile pedantic as C89, C99, C11, C++98, C++17 (no warning compat-dapl's do not give)" tests/abi/dat12.sh pedantic include
step "-ldat binds a DAT 1.2 program to DAT_1.2, a DAT 2.0 one to DAT_2.0" tests/abi/bindings.sh build/lib include
step "exported symbols" tests/exports/check.sh build/lib include "$ref"
step "RDMA transport on a machine without RDMA (no rdma-core symbol at load)" tests/rdma/host.sh build/lib include build/bin/datinfo
step "dapl2-utils start on our library" tests/consumers/start.sh build/lib
step "dapl2-utils run end to end over TCP" tests/consumers/run.sh build/lib
step "DAT 1.2: compat-dapl's dtest and dapltest (built against its headers and ours) and a 1.2/2.0 ping-pong over TCP" tests/dat12/consumers.sh build/lib include
# Each of its runs is time-bounded, and the whole too: a transport that hangs in every run costs 20 minutes.
step "dapl2-utils between two hosts (network namespaces joined by a veth pair)" timeout 1200 tests/twohost/run.sh build/lib
step "DAT 1.2 programs between two hosts" timeout 600 tests/dat12/twohost.sh build/lib include
step "between two hosts, a short outage loses nothing and a vanished peer ends its connection in time" timeout 300 tests/twohost/outage.sh build/lib
step "OpenFabrics' programs built from source against our headers" tests/consumers/source.sh build/lib include
step "every way of waiting, quiet machine" tests/waits/run.sh build/lib quiet 1
step "every way of waiting, a busy loop on every core" tests/waits/run.sh build/lib contention 1
step "every way of waiting, each side interrupted by a signal every 200 us" tests/waits/run.sh build/lib signals 1
step "threads cancelled in dat_evd_wait and dat_cno_wait, and a cancel pending through every other call" tests/cancel/run.sh build/lib
step "C API fuzzer, two connected processes (short)" tests/fuzz/api_fuzz.sh build/lib 500000
step "C API fuzzer under ASan and UBSan (short)" tests/fuzz/api_fuzz.sh build/lib 200000 asan
step "C conformance suite" ctests/run.sh build/lib/libdat2.so.2
step "C conformance suite under ASan and UBSan" ctests/run.sh build/lib/libdat2.so.2 asan
step "C conformance suite, DAT 1.2 half (the seed functions' areas built against include/dat)" env CTEST_API=1.2 ctests/run.sh build/lib/libdat2.so.2
step "DAT 1.2 programs: endpoints, transfers, memory, events, CNOs, IA attributes" tests/dat12/run.sh build/lib
step "install" install_check
step "RDMA in the soft-RoCE guest: devices, rdma-cm, verbs, dtest on our library" tests/rdma/run.sh build/bin/datinfo build/lib
for f in "${skips[@]}"; do echo "skipped: $f"; done
for f in "${failures[@]}"; do echo "failed: $f"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
