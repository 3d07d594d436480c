# libdat: build the DAT 2.0 shared library, its headers and tools; install; test.
#
#   make                 release library build/lib/libdat2.so.2 (+ libdat2.so, libdat.so) and datinfo,
#                        profile-guided when the toolchain can (PGO below)
#   make headers         regenerate include/dat2 from the Rust ABI types (cbindgen)
#   make headers-1.2     regenerate include/dat (DAT 1.2) from the Rust 1.2 ABI types (src/abi12)
#   make check-headers   fail if include/dat2 or include/dat differs from what the Rust source generates
#   make install         PREFIX=/usr/local DESTDIR= (the library and its links, include/dat2 and
#                        include/dat, dat2.pc and dat.pc, datinfo)
#   make test            every test; the last line is "N passed, N failed"
#   make test-rdma       the RDMA tests alone, in the soft-RoCE guest (../shared/rxe-vm; make test runs them too)
#   make bench-rdma      ours, OpenFabrics' and perftest side by side in the soft-RoCE guest (15 rounds,
#                        10-14 minutes: single runs there vary 2-5x; medians and paired ratios)
#   make demo            a checked transfer over the built-in tcp-lo IA, with latency and bandwidth
#   make compare BEFORE=rev [AFTER=rev] [ROUNDS=5]  instruction counts and datperf figures of two
#                        builds side by side (default AFTER: this tree), interleaved round by round
#   make bench           our TCP transport beside a raw TCP socket and libfabric tcp, same run
#                        on loopback, then between two hosts (network namespaces; root)
#   make fuzz            long runs of the three fuzzers: the TCP wire fuzzer (WIRE_FUZZ_CASES,
#                        WIRE_FUZZ_SEED), the C API fuzzer (API_FUZZ_CALLS), the threads test
#   make fuzz-header     libFuzzer on the frame header parser (fuzz/, FUZZ_SECONDS=60)
#   make ctest           the C conformance suite (LIBDAT=/path/libdat2.so.2 to check another library)
#   make ctest-asan      the same under AddressSanitizer and UndefinedBehaviorSanitizer
#   make ctest-openfabrics  the suite against us and OpenFabrics' libdat2 on the same RDMA IA
#                        in ../shared/rxe-vm (soft-RoCE), differences written to
#                        ctests/REPORT-openfabrics.md

PREFIX  ?= /usr/local
DESTDIR ?=
CARGO   ?= cargo
CC      ?= gcc
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
BUILD   := build
LIBDIR  := $(BUILD)/lib
SONAME  := libdat2.so.2
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
RUST_SRC := $(shell find src -name '*.rs' -o -name '*.c') Cargo.toml build.rs

# Profile-guided optimisation (PGO=0 leaves it out): when the toolchain has llvm-profdata
# (`rustup component add llvm-tools`), the library is first built instrumented and trained on
# datperf's transfers over tcp-lo (bench/pgo-train.sh), then built again with that profile.
# Without llvm-profdata the release build is a plain one.
#
# The RDMA data path is trained too where it can run (PGO_RDMA=auto): over this machine's RDMA
# IA that PGO_RDMA_IA names (e.g. ofa-v2-ib0), else, with PGO_GUEST=1, in the soft-RoCE guest
# when it is ready here (root, its runner and QEMU installed: make test-rdma or
# `$(RXE_VM) --prepare` set it up). PGO_GUEST=0, the default, never boots the guest for the
# training: a plain `make` starts no VM. `.ci/run` and `make bench-rdma` opt in.
# PGO_RDMA=1 requires that training: over PGO_RDMA_IA, else in the guest (asked for by name, so
# booted, and prepared if needed, whatever PGO_GUEST says). PGO_RDMA=0 leaves it out. Without it
# the verbs data path, which tcp-lo never runs, is compiled as cold code.
PGO ?= 1
PGO_RDMA ?= auto
PGO_RDMA_IA ?=
PGO_GUEST ?= 0
RXE_VM   ?= ../shared/rxe-vm/rxe-vm.sh
RUST_HOST := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
PROFDATA := $(wildcard $(shell rustc --print sysroot 2>/dev/null)/lib/rustlib/$(RUST_HOST)/bin/llvm-profdata)
PGO_DIR := $(BUILD)/pgo
ifeq ($(PGO)$(if $(PROFDATA),yes),1yes)
RELEASE_DIR := $(TARGET_DIR)/pgo-use/release
else
RELEASE_DIR := $(TARGET_DIR)/release
endif

.PHONY: callcount callcount-rdma compare FORCE all lib datinfo tools headers headers-1.2 check-headers install test test-rdma demo bench bench-rdma fuzz fuzz-header ctest ctest-asan ctest-openfabrics clean

all: lib datinfo tools

lib: $(LIBDIR)/$(SONAME)

# The shared library from a static archive of the crate: exactly the DAT functions exported.
define link_library
	@mkdir -p $(dir $(2))
	$(CC) -shared -o $(2) -Wl,-soname,$(SONAME) -Wl,--version-script=$(BUILD)/dat.map \
	  -Wl,--whole-archive $(1) -Wl,--no-whole-archive \
	  -Wl,--gc-sections -Wl,-z,defs $(NATIVE_LIBS)
	ln -sf $(SONAME) $(dir $(2))libdat2.so
	ln -sf $(SONAME) $(dir $(2))libdat.so
	ln -sf $(SONAME) $(dir $(2))libdat.so.1
endef

ifeq ($(RELEASE_DIR),$(TARGET_DIR)/release)
$(RELEASE_DIR)/libdat.a $(RELEASE_DIR)/datinfo &: $(RUST_SRC)
	$(CARGO) build --release
else
# Instrumented (its own target directory: the flags differ), linked, trained, merged.
$(TARGET_DIR)/pgo-generate/release/libdat.a: $(RUST_SRC)
	CARGO_TARGET_DIR=$(TARGET_DIR)/pgo-generate RUSTFLAGS="$(RUSTFLAGS) -Cprofile-generate=$(abspath $(PGO_DIR))/raw" \
	  $(CARGO) build --release --lib

$(PGO_DIR)/lib/$(SONAME): $(TARGET_DIR)/pgo-generate/release/libdat.a $(BUILD)/dat.map
	$(call link_library,$<,$@)

$(PGO_DIR)/libdat.profdata: $(PGO_DIR)/lib/$(SONAME) bench/datperf.c bench/pgo-train.sh bench/pgo-merge.sh $(PGO_DIR)/rdma-where
	$(CC) -O2 -Iinclude bench/datperf.c -L$(PGO_DIR)/lib -ldat2 -o $(PGO_DIR)/datperf
	rm -rf $(PGO_DIR)/raw $(PGO_DIR)/raw-rdma
	bench/pgo-train.sh $(PGO_DIR)/lib $(PGO_DIR)/datperf
	@rdma_raw='LLVM_PROFILE_FILE=$(abspath $(PGO_DIR))/raw-rdma/%p.profraw'; \
	case "$$(cat $(PGO_DIR)/rdma-where)" in \
	  guest) $(RXE_VM) -t 600 -- env "$$rdma_raw" bench/pgo-train.sh $(PGO_DIR)/lib $(PGO_DIR)/datperf guest ;; \
	  ia\ *) env "$$rdma_raw" bench/pgo-train.sh $(PGO_DIR)/lib $(PGO_DIR)/datperf "$(PGO_RDMA_IA)" ;; \
	  *) echo "pgo: no RDMA training (no PGO_RDMA_IA; the soft-RoCE guest only with PGO_GUEST=1 and ready): the verbs data path is compiled cold" ;; \
	esac || { rm -rf $(PGO_DIR)/raw-rdma; \
	  if [ "$(PGO_RDMA)" = auto ] && [ -z "$(PGO_RDMA_IA)" ]; then echo "pgo: the RDMA training failed: the profile is tcp-lo's alone"; \
	  else echo "pgo: the RDMA training failed" >&2; exit 1; fi; }
	bench/pgo-merge.sh $(PROFDATA) $@ $(PGO_DIR)/raw $(PGO_DIR)/raw-rdma

# Where the RDMA training runs (an IA of this machine, the guest, or nowhere): rewritten only
# when that changes, which trains again.
$(PGO_DIR)/rdma-where: FORCE
	@mkdir -p $(PGO_DIR)
	@where=none; \
	if [ -n "$(PGO_RDMA_IA)" ] && [ "$(PGO_RDMA)" != 0 ]; then where="ia $(PGO_RDMA_IA)"; \
	elif [ "$(PGO_RDMA)" = 1 ]; then where=guest; \
	elif [ "$(PGO_RDMA)" = auto ] && [ "$(PGO_GUEST)" = 1 ] && [ "$$(id -u)" = 0 ] && [ -x $(RXE_VM) ] && command -v qemu-system-x86_64 >/dev/null; then where=guest; fi; \
	echo "$$where" | cmp -s - $@ || echo "$$where" > $@

$(RELEASE_DIR)/libdat.a $(RELEASE_DIR)/datinfo &: $(RUST_SRC) $(PGO_DIR)/libdat.profdata
	CARGO_TARGET_DIR=$(TARGET_DIR)/pgo-use RUSTFLAGS="$(RUSTFLAGS) -Cprofile-use=$(abspath $(PGO_DIR))/libdat.profdata" \
	  $(CARGO) build --release
endif

# Exactly the DAT functions, in version node DAT_2.0; everything else stays local. Those the
# Rust source defines, and those the C source does (src/ext: a definition begins a line
# `DAT_RETURN dat_...(`). The DAT 1.2 functions name their version node themselves
# (`dat_x@DAT_1.2`, src/api12): the script only declares the node.
$(BUILD)/dat.map: $(RUST_SRC)
	@mkdir -p $(BUILD)
	{ echo 'DAT_1.2 { };'; echo 'DAT_2.0 {'; echo '  global:'; \
	  { grep -rhoE 'extern "C" fn dat_[a-z0-9_]+' src/api | sed 's/.*fn //'; \
	    grep -hoE '^DAT_RETURN dat_[a-z0-9_]+\(' src/ext/*.c | sed 's/^DAT_RETURN //; s/($$//'; } | \
	    sed 's/^/    /; s/$$/;/' | sort -u; \
	  echo '  local: *;'; echo '};'; } > $@

$(LIBDIR)/$(SONAME): $(RELEASE_DIR)/libdat.a $(BUILD)/dat.map $(BUILD)/release-kind
	$(call link_library,$<,$@)

# Which release build the library and datinfo come from: rewritten only when it changes (PGO
# on or off), which relinks them.
$(BUILD)/release-kind: FORCE
	@mkdir -p $(BUILD)
	@echo '$(RELEASE_DIR)' | cmp -s - $@ || echo '$(RELEASE_DIR)' > $@

FORCE:

datinfo: $(BUILD)/bin/datinfo

$(BUILD)/bin/datinfo: $(RELEASE_DIR)/datinfo $(BUILD)/release-kind
	@mkdir -p $(BUILD)/bin
	cp $< $@

# C programs built against our own headers and library, as a consumer builds them.
tools: $(BUILD)/bin/datperf $(BUILD)/bin/rawtcp $(BUILD)/bin/dtestwork $(BUILD)/bin/calltime.so

$(BUILD)/bin/datperf: bench/datperf.c $(LIBDIR)/$(SONAME) $(wildcard include/dat2/*.h)
	@mkdir -p $(BUILD)/bin
	$(CC) -O2 -Wall -Wextra -Werror -Iinclude $< -L$(LIBDIR) -ldat2 -o $@

# Preloaded under a DAT program to time its data-path calls on whichever library it runs.
$(BUILD)/bin/calltime.so: bench/calltime.c $(wildcard include/dat2/*.h)
	@mkdir -p $(BUILD)/bin
	$(CC) -O2 -Wall -Wextra -Werror -Iinclude -shared -fPIC $< -o $@ -ldl

$(BUILD)/bin/rawtcp: bench/rawtcp.c
	@mkdir -p $(BUILD)/bin
	$(CC) -O2 -Wall -Wextra -Werror -pthread $< -o $@

$(BUILD)/bin/dtestwork: bench/dtestwork.c
	@mkdir -p $(BUILD)/bin
	$(CC) -O2 -Wall -Wextra -Werror $< -o $@

demo: all
	@echo "A transfer between two processes over the built-in tcp-lo IA (no dat.conf needed):"
	@LD_LIBRARY_PATH=$(LIBDIR) DAT_OVERRIDE=/dev/null $(BUILD)/bin/datperf -m pingpong -s 8 -n 20000
	@LD_LIBRARY_PATH=$(LIBDIR) DAT_OVERRIDE=/dev/null $(BUILD)/bin/datperf -m write -s 1048576 -n 1000
	@LD_LIBRARY_PATH=$(LIBDIR) DAT_OVERRIDE=/dev/null $(BUILD)/bin/datperf -m send -s 65536 -n 10000

bench: all
	@bench/run.sh $(BUILD) $(or $(ROUNDS),5)

# Instructions per call of dat_ep_post_send, dat_ep_post_recv, a dequeue that finds a
# completion and one that finds nothing, counted by callgrind over tcp-lo (bench/callcount.sh):
# what a change to the data path costs, free of the machine's timing noise.
callcount: all
	@bench/callcount.sh $(BUILD) $(or $(DAT_IA),tcp-lo)

# The same on the RDMA transport, in the soft-RoCE guest (about 5 minutes under emulation).
callcount-rdma: all
	@$(RXE_VM) -t 1800 -- bench/callcount.sh $(BUILD) ofa-v2-rxenet0 300

# Before and after a change (bench/compare.sh): BEFORE (a git revision) built in a worktree of
# its own beside AFTER (a revision, or by default this tree), both with PGO=0 unless PGO is
# given; their instruction counts side by side, then datperf's figures interleaved round by
# round. TWOHOST=1 adds two hosts (root), RDMA=1 the counts in the soft-RoCE guest.
compare:
	@PGO=$(if $(filter command line environment,$(origin PGO)),$(PGO),0) ROUNDS=$(or $(ROUNDS),5) \
	  RXE_VM=$(RXE_VM) bench/compare.sh "$(or $(BEFORE),$(error compare: give BEFORE=<git revision>))" $(AFTER)

LIBDAT ?= $(LIBDIR)/$(SONAME)

ctest: all
	@ctests/run.sh $(LIBDAT)

test-rdma: all
	@tests/rdma/run.sh $(BUILD)/bin/datinfo $(LIBDIR)

# Ours, OpenFabrics' and raw verbs side by side, in one run of the soft-RoCE guest.
# The guest is made ready first, so the build trains the RDMA data path there (PGO_GUEST above).
bench-rdma:
	@$(RXE_VM) --prepare
	@$(MAKE) --no-print-directory all PGO_GUEST=1
	@$(RXE_VM) -t 1800 -- bench/rdma.sh $(LIBDIR) $(or $(ROUNDS),15)

ctest-asan: all
	@ctests/run.sh $(LIBDAT) asan

# OpenFabrics' library needs an RDMA device: the guest's soft-RoCE one, named by the dat.conf line
# its README gives. The guest is emulated and slow, so every time bound is stretched.
OFA_LIB  ?= /usr/lib/x86_64-linux-gnu/libdat2.so.2
ctest-openfabrics: all
	@mkdir -p $(BUILD)/vm
	@echo 'ofa-v2-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "rxenet0 0" ""' > $(BUILD)/vm/ofa.conf
	@$(RXE_VM) -t 3600 -- env CTEST_TIME_SCALE=3 ctests/compare.sh $(CURDIR)/ctests/REPORT-openfabrics.md \
		$(OFA_LIB) ofa-v2-rxe $(CURDIR)/$(BUILD)/vm/ofa.conf ofa-v2-rxe

headers:
	$(CARGO) run -q -p headergen -- include/dat2

# The DAT 1.2 headers (compat-dapl's names and ABI). Their `.symver` lines bind a program's
# calls to the library's DAT 1.2 entry points (dat_x@DAT_1.2), so `-ldat` links a 1.2 program
# and a 2.0 one (include/dat2: the default dat_x@@DAT_2.0) alike.
headers-1.2:
	$(CARGO) run -q -p headergen -- --set 1.2 include/dat

check-headers:
	rm -rf $(BUILD)/headers-check && mkdir -p $(BUILD)/headers-check/dat2 $(BUILD)/headers-check/dat
	$(CARGO) run -q -p headergen -- $(BUILD)/headers-check/dat2
	diff -ru include/dat2 $(BUILD)/headers-check/dat2
	$(CARGO) run -q -p headergen -- --set 1.2 $(BUILD)/headers-check/dat
	diff -ru include/dat $(BUILD)/headers-check/dat

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/dat2 $(DESTDIR)$(PREFIX)/include/dat \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/libdat
	install -m 755 $(LIBDIR)/$(SONAME) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libdat2.so
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libdat.so
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libdat.so.1
	install -m 644 include/dat2/*.h $(DESTDIR)$(PREFIX)/include/dat2/
	install -m 644 include/dat/*.h $(DESTDIR)$(PREFIX)/include/dat/
	sed 's|@PREFIX@|$(PREFIX)|g' dat2.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/dat2.pc
	sed 's|@PREFIX@|$(PREFIX)|g' dat.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/dat.pc
	install -m 755 $(BUILD)/bin/datinfo $(DESTDIR)$(PREFIX)/bin/
	install -m 644 dat.conf.example $(DESTDIR)$(PREFIX)/share/doc/libdat/

test: all
	@tests/run-all.sh

# The fuzzers' short runs are part of `make test`; these are the long ones: the wire fuzzer
# (a seed of its own each time unless WIRE_FUZZ_SEED is given; about 20 cases a second here, so
# some 45 minutes for the 50000 cases; WIRE_FUZZ_CASES sets fewer), the C API fuzzer
# (API_FUZZ_CALLS calls over two connected processes, then a shorter run under ASan), the
# threads test with ten times its messages, and last the wire tests beside the fuzzer with the
# wire fuzzer's seed (its kept-message cases under a 1 MiB process bound: one in 200 of
# WIRE_FUZZ_CASES).
WIRE_FUZZ_RUN = WIRE_FUZZ_CASES=$${WIRE_FUZZ_CASES:-50000} WIRE_FUZZ_SEED=$(FUZZ_SEED)
fuzz: FUZZ_SEED := $(or $(WIRE_FUZZ_SEED),$(shell od -An -N4 -tu4 /dev/urandom | tr -d ' '))
fuzz: all
	$(WIRE_FUZZ_RUN) $(CARGO) test --release --test wire_fuzz hostile_frames -- --nocapture
	tests/fuzz/api_fuzz.sh $(LIBDIR) $${API_FUZZ_CALLS:-2000000}
	tests/fuzz/api_fuzz.sh $(LIBDIR) $${API_FUZZ_ASAN_CALLS:-300000} asan
	THREADS_MESSAGES=$${THREADS_MESSAGES:-1000000} THREADS_DEADLINE_S=600 \
	  $(CARGO) test --release --test threads -- --nocapture
	$(WIRE_FUZZ_RUN) $(CARGO) test --release --test wire_fuzz -- --skip hostile_frames --nocapture

# The cargo-fuzz target fuzz/fuzz_targets/wire_header.rs, built with cargo-fuzz's flags by a
# stable toolchain (RUSTC_BOOTSTRAP lets it take them; no cargo-fuzz needed), then run.
FUZZ_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks
fuzz-header:
	cd fuzz && RUSTC_BOOTSTRAP=1 RUSTFLAGS="$(FUZZ_RUSTFLAGS)" \
	  $(CARGO) build --release --target $(RUST_HOST) --target-dir target --bin wire_header
	mkdir -p fuzz/corpus/wire_header
	fuzz/target/$(RUST_HOST)/release/wire_header -max_total_time=$${FUZZ_SECONDS:-60} fuzz/corpus/wire_header

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
