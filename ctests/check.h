/*
 * The conformance suite's checks. Every case prints one line:
 *
 *   CASE <tab> area/name <tab> expected <tab> got <tab> PASS|FAIL
 *
 * and ctests/run.sh gathers the lines into a table with a closing count. A case names the
 * man page line it checks; where implementations differ, the comment beside the case says
 * what the man page decides.
 */
#ifndef LIBDAT_CTESTS_CHECK_H
#define LIBDAT_CTESTS_CHECK_H

#include <dat2/udat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* DAT_ERROR(type, subtype) as dat_error.h documents it (the headers do not define it). */
#define DAT_ERROR(type, subtype) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (subtype)))

static int check_failures;

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

/* The exact code: type and subtype. */
static inline void expect_ret(const char *name, DAT_RETURN got, DAT_RETURN expected)
{
	char e[160], g[160];
	report(name, render(expected, e, sizeof(e)), render(got, g, sizeof(g)), got == expected);
}

/* The type only (DAT_GET_TYPE), where the man page names no subtype. */
static inline void expect_type(const char *name, DAT_RETURN got, DAT_RETURN type)
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

static inline void expect_true(const char *name, int condition, const char *what)
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

static inline void expect_event(const char *name, DAT_EVENT_NUMBER got, DAT_EVENT_NUMBER expected)
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

/* A handle value no library hands out. */
#define GARBAGE_HANDLE ((void *)(uintptr_t)0x5a5a5a5a5a5a5a50ULL)

#endif
