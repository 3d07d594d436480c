/*
 * The conformance suite's checks. Every case prints one line:
 *
 *   CASE <tab> area/name <tab> expected <tab> got <tab> PASS|FAIL
 *
 * and ctests/run.sh gathers the lines into a table with a closing count. A case names the
 * man page line it checks; where implementations differ, the comment beside the case says
 * what the man page decides.
 *
 * The suite is DAT 2.0 source (include/dat2). The four seed functions' files also build as DAT
 * 1.2 source (include/dat, the man pages' own generation) with -DCTEST_DAT12, as
 * `CTEST_API=1.2 ctests/run.sh` does: the same cases, through the library's DAT 1.2 entry points.
 * Codes are compared by name (DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP)), so each
 * build expects its own API's numbering.
 */
#ifndef LIBDAT_CTESTS_CHECK_H
#define LIBDAT_CTESTS_CHECK_H

#ifdef CTEST_DAT12
#include <dat/udat.h>
#else
#include <dat2/udat.h>
#endif

#include <ctype.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* DAT_ERROR(type, subtype) as dat_error.h documents it (the headers do not define it). */
#define DAT_ERROR(type, subtype) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (subtype)))

static int check_failures;

#ifdef CTEST_DAT12
/* DAT 1.2's signatures for the two calls whose 2.0 form has more: the cases pass those extra
 * arguments only as 2.0's defaults (va_type DAT_VA_TYPE_VA, a reject without private data), which
 * is what the 1.2 call means, so they are dropped. */
#define dat_lmr_create(ia, type, region, len, pz, privileges, va_type, lmr, lmr_context, rmr_context, \
		       registered_length, registered_address)                                         \
	dat_lmr_create(ia, type, region, len, pz, privileges, lmr, lmr_context, rmr_context,          \
		       registered_length, registered_address)
#define dat_cr_reject(cr, private_data_size, private_data) dat_cr_reject(cr)
/* A case of something DAT 1.2 does not have (a 2.0-only flag or field): reported SKIP with the
 * reason, its statement not compiled. */
#define DAT20_ONLY(name, what_12_lacks, ...) report_skip(name, "DAT 1.2 has no " what_12_lacks)
#else
#define DAT20_ONLY(name, what_12_lacks, ...) __VA_ARGS__
#endif

/* DAT 2.0 functions that the headers declare but not every library exports (OpenFabrics' libdat2
 * lacks these ten, and defines the last two inline in its dat_ib_extensions.h): weak, so the suite links against any library; a case calling one that is
 * absent fails as "not exported" instead of the program failing to link. */
#pragma weak dat_cno_fd_create
#pragma weak dat_cno_trigger
#pragma weak dat_csp_create
#pragma weak dat_csp_free
#pragma weak dat_csp_query
#pragma weak dat_ep_common_connect
#pragma weak dat_ep_post_rdma_read_to_rmr
#pragma weak dat_ep_post_send_with_invalidate
#pragma weak dat_registry_providers_related
#pragma weak dat_rmr_create_for_ep
#pragma weak dat_strerror_extension
#pragma weak dat_strerror_ext_status

/* "TYPE SUBTYPE" as the library renders them, with the code in hex. */
static inline const char *render(DAT_RETURN r, char *buf, size_t len)
{
	const char *major = "?", *minor = "?";
	if (r == DAT_SUCCESS) {
		snprintf(buf, len, "DAT_SUCCESS");
		return buf;
	}
	dat_strerror(r, &major, &minor);
	snprintf(buf, len, "%s %s (0x%08x)", major ? major : "?", minor ? minor : "?", (unsigned)r);
	return buf;
}

static inline void report(const char *name, const char *expected, const char *got, int pass)
{
	printf("CASE\t%s\t%s\t%s\t%s\n", name, expected, got, pass ? "PASS" : "FAIL");
	fflush(stdout);
	if (!pass)
		check_failures++;
}

/* A case this build cannot run, and why (neither passed nor failed). */
static inline void report_skip(const char *name, const char *why)
{
	printf("CASE\t%s\t-\t%s\tSKIP\n", name, why);
	fflush(stdout);
}

/* The exact code: type and subtype. */
static inline void report_ret(const char *name, DAT_RETURN got, DAT_RETURN expected)
{
	char e[160], g[160];
	report(name, render(expected, e, sizeof(e)), render(got, g, sizeof(g)), got == expected);
}

/* The type only (DAT_GET_TYPE), where the man page names no subtype. */
static inline void report_type(const char *name, DAT_RETURN got, DAT_RETURN type)
{
	char e[160], g[160];
	const char *major = "?", *minor = "?";
	dat_strerror(DAT_ERROR(type, 0), &major, &minor);
	snprintf(e, sizeof(e), "%s (any subtype)", major ? major : "?");
	report(name, e, render(got, g, sizeof(g)), DAT_GET_TYPE(got) == type);
}

/* A setup step a case depends on: if it fails, the program stops (run.sh names it). */
static inline void must(DAT_RETURN r, const char *what)
{
	if (r != DAT_SUCCESS) {
		char b[160];
		fprintf(stderr, "setup %s failed: %s\n", what, render(r, b, sizeof(b)));
		exit(2);
	}
}

/* A local IOV segment: `len` bytes at `base + offset` in the LMR of context `ctx`. */
static inline DAT_LMR_TRIPLET triplet(DAT_LMR_CONTEXT ctx, unsigned char *base, int offset, int len)
{
	DAT_LMR_TRIPLET t;
	memset(&t, 0, sizeof(t)); /* DAT 1.2's pad */
	t.lmr_context = ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(base + offset);
	t.segment_length = (__typeof__(t.segment_length))len; /* 2.0: 32 bits; 1.2: 64 */
	return t;
}

/* A remote segment: `len` bytes at `at` in the RMR (or LMR) of context `ctx`. */
static inline DAT_RMR_TRIPLET rmr_triplet(DAT_RMR_CONTEXT ctx, const void *at, DAT_UINT32 len)
{
	DAT_RMR_TRIPLET t;
	memset(&t, 0, sizeof(t));
	t.rmr_context = ctx;
#ifdef CTEST_DAT12
	t.target_address = (DAT_VADDR)(uintptr_t)at;
#else
	t.virtual_address = (DAT_VADDR)(uintptr_t)at;
#endif
	t.segment_length = len;
	return t;
}

static inline void report_true(const char *name, int condition, const char *what)
{
	report(name, what, condition ? what : "not so", condition);
}

static inline const char *event_name(DAT_EVENT_NUMBER n)
{
	switch (n) {
	case DAT_DTO_COMPLETION_EVENT: return "DAT_DTO_COMPLETION_EVENT";
	case DAT_CONNECTION_REQUEST_EVENT: return "DAT_CONNECTION_REQUEST_EVENT";
	case DAT_CONNECTION_EVENT_ESTABLISHED: return "DAT_CONNECTION_EVENT_ESTABLISHED";
	case DAT_CONNECTION_EVENT_PEER_REJECTED: return "DAT_CONNECTION_EVENT_PEER_REJECTED";
	case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "DAT_CONNECTION_EVENT_NON_PEER_REJECTED";
	case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR";
	case DAT_CONNECTION_EVENT_DISCONNECTED: return "DAT_CONNECTION_EVENT_DISCONNECTED";
	case DAT_CONNECTION_EVENT_BROKEN: return "DAT_CONNECTION_EVENT_BROKEN";
	case DAT_CONNECTION_EVENT_TIMED_OUT: return "DAT_CONNECTION_EVENT_TIMED_OUT";
	case DAT_CONNECTION_EVENT_UNREACHABLE: return "DAT_CONNECTION_EVENT_UNREACHABLE";
	case DAT_SOFTWARE_EVENT: return "DAT_SOFTWARE_EVENT";
	default: return "another event";
	}
}

static inline void report_event(const char *name, DAT_EVENT_NUMBER got, DAT_EVENT_NUMBER expected)
{
	report(name, event_name(expected), event_name(got), got == expected);
}

static inline const char *state_name(DAT_EP_STATE s)
{
	switch (s) {
	case DAT_EP_STATE_UNCONNECTED: return "DAT_EP_STATE_UNCONNECTED";
	case DAT_EP_STATE_RESERVED: return "DAT_EP_STATE_RESERVED";
	case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING: return "DAT_EP_STATE_PASSIVE_CONNECTION_PENDING";
	case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING: return "DAT_EP_STATE_ACTIVE_CONNECTION_PENDING";
	case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING: return "DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING";
	case DAT_EP_STATE_CONNECTED: return "DAT_EP_STATE_CONNECTED";
	case DAT_EP_STATE_DISCONNECT_PENDING: return "DAT_EP_STATE_DISCONNECT_PENDING";
	case DAT_EP_STATE_DISCONNECTED: return "DAT_EP_STATE_DISCONNECTED";
	case DAT_EP_STATE_COMPLETION_PENDING: return "DAT_EP_STATE_COMPLETION_PENDING";
	default: return "another state";
	}
}

static inline void expect_state(const char *name, DAT_EP_HANDLE ep, DAT_EP_STATE expected)
{
	DAT_EP_STATE s = (DAT_EP_STATE)-1;
	dat_ep_get_status(ep, &s, NULL, NULL);
	report(name, state_name(expected), state_name(s), s == expected);
}

static inline const char *dto_status_name(DAT_DTO_COMPLETION_STATUS s)
{
	switch (s) {
	case DAT_DTO_SUCCESS: return "DAT_DTO_SUCCESS";
	case DAT_DTO_ERR_FLUSHED: return "DAT_DTO_ERR_FLUSHED";
	case DAT_DTO_ERR_LOCAL_LENGTH: return "DAT_DTO_ERR_LOCAL_LENGTH";
	case DAT_DTO_ERR_LOCAL_PROTECTION: return "DAT_DTO_ERR_LOCAL_PROTECTION";
	case DAT_DTO_ERR_REMOTE_ACCESS: return "DAT_DTO_ERR_REMOTE_ACCESS";
	case DAT_DTO_ERR_REMOTE_RESPONDER: return "DAT_DTO_ERR_REMOTE_RESPONDER";
	default: return "another status";
	}
}

/* The IA every case uses: $DAT_IA, or the built-in tcp-lo. */
static inline DAT_NAME_PTR ia_name(void)
{
	char *n = getenv("DAT_IA");
	return n && *n ? n : (DAT_NAME_PTR) "tcp-lo";
}

/* $CTEST_TIME_SCALE: how many times longer than here everything takes (an emulated guest). */
static inline unsigned time_scale(void)
{
	const char *scale = getenv("CTEST_TIME_SCALE");
	return scale && atoi(scale) > 0 ? (unsigned)atoi(scale) : 1;
}

/* Bounds a program's run whatever the library does. */
static inline void watchdog(unsigned seconds)
{
	alarm(seconds * time_scale());
}

/* Where a connect reaches this IA: its own address (dat_ia_query), so the suite runs over any
 * transport (the loopback netdev, or an RDMA device's address), not only 127.0.0.1. */
static inline void ia_own_address(DAT_IA_HANDLE ia, struct sockaddr_in *sin)
{
	DAT_IA_ATTR attr;
	memset(&attr, 0, sizeof(attr));
	memset(sin, 0, sizeof(*sin));
	if (dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL) == DAT_SUCCESS &&
	    attr.ia_address_ptr && attr.ia_address_ptr->sa_family == AF_INET) {
		memcpy(sin, attr.ia_address_ptr, sizeof(*sin));
		sin->sin_port = 0;
		return;
	}
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/*
 * A library under test may crash where its man page asks for an error code (a garbage handle
 * dereferenced, say). Each case's call runs under a guard: a fault in it fails that case, named
 * by its signal, and the suite goes on with the next. A call that faulted may have left a lock
 * of the library held, so after the first fault every call is also time-bounded: one that
 * blocks longer fails as a hang instead of stopping the program. Between the guard's
 * sigsetjmp and the jump back only the call itself runs, and what it writes goes through
 * pointers to memory, so no local is left stale by the jump (hence -Wclobbered, which cannot
 * see that, is off).
 */
#pragma GCC diagnostic ignored "-Wclobbered"
static sigjmp_buf guard_point;
static volatile sig_atomic_t guard_armed, guard_timing, guard_signal;
static int guard_faults;
static unsigned guard_watchdog_left;
static time_t guard_began;

/* After a fault, how long one call may block, in seconds (times $CTEST_TIME_SCALE). */
#define GUARD_CALL_SECONDS 3

static void guard_caught(int sig)
{
	if (guard_armed && (sig != SIGALRM || guard_timing)) {
		guard_armed = 0;
		guard_signal = sig;
		siglongjmp(guard_point, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static inline void guard_install(void)
{
	static const int signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM };
	static int installed;
	struct sigaction sa;
	if (installed)
		return;
	installed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = guard_caught;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		sigaction(signals[i], &sa, NULL);
}

/* Before a call: bound it, if a fault came before (the program's watchdog waits meanwhile). */
static inline void guard_begin(void)
{
	guard_install();
	guard_timing = guard_faults > 0;
	if (guard_timing) {
		guard_began = time(NULL);
		guard_watchdog_left = alarm(GUARD_CALL_SECONDS * time_scale());
	}
}

/* After it, returned or jumped out of: the watchdog again, less the time the call took. */
static inline void guard_end(void)
{
	if (guard_timing) {
		unsigned spent = (unsigned)(time(NULL) - guard_began);
		guard_timing = 0;
		alarm(guard_watchdog_left > spent ? guard_watchdog_left - spent : 1);
	}
}

/* What became of a call that did not return. */
static inline void guard_report(const char *name)
{
	char why[96];
	if (guard_signal == SIGALRM) {
		snprintf(why, sizeof(why), "no return within %u s (after a crash)", GUARD_CALL_SECONDS * time_scale());
	} else {
		guard_faults++;
		snprintf(why, sizeof(why), "crash (%s)", strsignal(guard_signal));
	}
	report(name, "a result", why, 0);
}

/* Whether the library under test exports the function `name`. */
static inline int exported(const char *name)
{
	return dlsym(RTLD_DEFAULT, name) != NULL;
}

/* The DAT function a case's call text starts with, if the library does not export it. */
static inline const char *missing_function(const char *call_text)
{
	static char fn[64];
	size_t n = 0;
	while (*call_text == '(' || isspace((unsigned char)*call_text))
		call_text++;
	while (n + 1 < sizeof(fn) && (isalnum((unsigned char)call_text[n]) || call_text[n] == '_')) {
		fn[n] = call_text[n];
		n++;
	}
	fn[n] = 0;
	if (strncmp(fn, "dat_", 4) != 0 || exported(fn))
		return NULL;
	return fn;
}

/* Runs one case: `call` under the guard, then `report_it` with its value in got_. */
#define GUARDED_CASE(name, call, report_it)                                           \
	do {                                                                          \
		const char *case_name_ = (name);                                     \
		const char *missing_ = missing_function(#call);                       \
		if (missing_) {                                                       \
			char why_[96];                                                \
			snprintf(why_, sizeof(why_), "%s is not exported", missing_); \
			report(case_name_, "the call to run", why_, 0);               \
			break;                                                        \
		}                                                                     \
		guard_begin();                                                        \
		if (sigsetjmp(guard_point, 1) == 0) {                                 \
			guard_armed = 1;                                              \
			__auto_type got_ = (call);                                    \
			guard_armed = 0;                                              \
			guard_end();                                                  \
			report_it;                                                    \
		} else {                                                              \
			guard_end();                                                  \
			guard_report(case_name_);                                     \
		}                                                                     \
	} while (0)

/* The exact code: type and subtype. */
#define expect_ret(name, call, expected) GUARDED_CASE(name, call, report_ret(case_name_, got_, (expected)))
/* The type only (DAT_GET_TYPE), where the man page names no subtype. */
#define expect_type(name, call, type) GUARDED_CASE(name, call, report_type(case_name_, got_, (type)))
#define expect_true(name, condition, what) GUARDED_CASE(name, condition, report_true(case_name_, got_, (what)))
#define expect_event(name, got, expected) GUARDED_CASE(name, got, report_event(case_name_, got_, (expected)))

/* A handle value no library hands out. */
#define GARBAGE_HANDLE ((void *)(uintptr_t)0x5a5a5a5a5a5a5a50ULL)

#endif
