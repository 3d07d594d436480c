/*
 * The four functions of the original brief, in depth: dat_ep_connect, dat_cr_accept,
 * dat_ep_disconnect, dat_ep_post_send. Every return value and event their man pages name,
 * the states they lead to, the private-data, flush and flag-validity rules (the argument
 * checks of dat_ep_connect and dat_cr_accept: connect_args.c). Two IAs of one process play
 * the two sides; the peer-death case forks a peer process and kills it.
 */
#include "side.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void ep_connect_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_EVENT e;

	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);

	/* Success: ACTIVE_CONNECTION_PENDING, then the peer's request carries our private data. */
	expect_ret("ep_connect/success", connect_to(&a, port, "hello", WAIT_US), DAT_SUCCESS);
	expect_state("ep_connect/active-connection-pending", a.ep, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	/* "DAT_INVALID_STATE: Endpoint was not in DAT_EP_STATE_UNCONNECTED state." */
	expect_type("ep_connect/while-pending", connect_to(&a, port, NULL, WAIT_US), DAT_INVALID_STATE);
	e = next(p.cr_evd);
	expect_event("ep_connect/request-event", e.event_number, DAT_CONNECTION_REQUEST_EVENT);
	{
		DAT_CR_PARAM crp;
		DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
		memset(&crp, 0, sizeof(crp));
		expect_ret("cr_query/success", dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
		expect_true("ep_connect/private-data-arrives",
			    crp.private_data_size >= 5 && crp.private_data && !memcmp(crp.private_data, "hello", 5),
			    "the request carries \"hello\"");
		expect_true("cr_query/remote-address", crp.remote_ia_address_ptr &&
			    ((struct sockaddr_in *)crp.remote_ia_address_ptr)->sin_family == AF_INET, "an AF_INET address");

		/* The accept (its invalid arguments: connect_args.c). */
		expect_ret("cr_accept/success", dat_cr_accept(cr, p.ep, 7, "welcome"), DAT_SUCCESS);
		/* The CR is consumed by the accept. */
		expect_type("cr_accept/consumed-cr", dat_cr_accept(cr, p.ep, 0, NULL), DAT_INVALID_HANDLE);
	}
	e = next(p.conn_evd);
	expect_event("cr_accept/passive-established", e.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	e = next(a.conn_evd);
	expect_event("ep_connect/active-established", e.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_true("cr_accept/private-data-arrives",
		    e.event_data.connect_event_data.private_data_size >= 7 &&
			    !memcmp(e.event_data.connect_event_data.private_data, "welcome", 7),
		    "ESTABLISHED carries \"welcome\"");
	expect_state("ep_connect/connected", a.ep, DAT_EP_STATE_CONNECTED);
	expect_state("cr_accept/connected", p.ep, DAT_EP_STATE_CONNECTED);
	expect_ret("ep_connect/connected-ep", connect_to(&a, port, NULL, WAIT_US),
		   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED));
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);

	/* A rejected request: PEER_REJECTED with the rejecter's private data, DISCONNECTED. */
	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);
	connect_to(&a, port, NULL, WAIT_US);
	e = next(p.cr_evd);
	expect_ret("cr_reject/success", dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle, 2, "no"), DAT_SUCCESS);
	e = next(a.conn_evd);
	expect_event("ep_connect/peer-rejected", e.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
	expect_state("ep_connect/rejected-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	dat_psp_free(psp);

	/* Nobody listening: NON_PEER_REJECTED. */
	{
		DAT_EP_HANDLE ep2;
		DAT_EP_HANDLE keep = a.ep;
		must(dat_ep_create(a.ia, a.pz, a.recv_evd, a.req_evd, a.conn_evd, NULL, &ep2), "dat_ep_create");
		a.ep = ep2;
		connect_to(&a, port, NULL, WAIT_US); /* the PSP on `port` is gone */
		e = next(a.conn_evd);
		expect_event("ep_connect/nobody-listening", e.event_number, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
		a.ep = keep;
	}
	/* A request nobody answers within the timeout: TIMED_OUT. */
	{
		DAT_EP_HANDLE ep3;
		must(dat_ep_create(a.ia, a.pz, a.recv_evd, a.req_evd, a.conn_evd, NULL, &ep3), "dat_ep_create");
		a.ep = ep3;
		port = listen_any(&p, &psp);
		connect_to(&a, port, NULL, 200 * 1000);
		e = next(a.conn_evd);
		expect_event("ep_connect/timed-out", e.event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
		expect_state("ep_connect/timed-out-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	}
	close_side(&a);
	close_side(&p);
}

static void disconnect_cases(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;

	open_side(&a);
	expect_ret("ep_disconnect/null-ep", dat_ep_disconnect(NULL, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	expect_ret("ep_disconnect/garbage-ep", dat_ep_disconnect(GARBAGE_HANDLE, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	/* "DAT_INVALID_PARAMETER: The disconnect_flags parameter is invalid." */
	expect_type("ep_disconnect/unknown-flags", dat_ep_disconnect(a.ep, (DAT_CLOSE_FLAGS)7), DAT_INVALID_PARAMETER);
	/* "DAT_INVALID_STATE: Endpoint is not in the valid state for disconnect": never
	 * connected. (OpenFabrics returns DAT_SUCCESS here; the man page decides.) */
	expect_type("ep_disconnect/unconnected", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_STATE);
	close_side(&a);

	/* Graceful: DISCONNECTED on both sides, posted receives flushed. */
	connected_pair(&a, &p);
	l = iov(&p, 0, 64);
	c.as_64 = 7;
	dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
	expect_ret("ep_disconnect/graceful", dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	expect_event("ep_disconnect/graceful-local-event", next(a.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_event("ep_disconnect/graceful-peer-event", next(p.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	e = next(p.recv_evd);
	/* "preposted Recv DTOs [are] flushed to recv_evd_handle" once the EP is DISCONNECTED. */
	expect_true("ep_disconnect/receives-flushed",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 7,
		    "the posted receive completes DAT_DTO_ERR_FLUSHED");
	expect_state("ep_disconnect/disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	/* Disconnecting a DISCONNECTED EP succeeds and changes nothing. */
	expect_ret("ep_disconnect/already-disconnected", dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	close_side(&a);
	close_side(&p);

	/* Abrupt. */
	connected_pair(&a, &p);
	expect_ret("ep_disconnect/abrupt", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	expect_state("ep_disconnect/abrupt-is-disconnected-at-once", a.ep, DAT_EP_STATE_DISCONNECTED);
	expect_event("ep_disconnect/abrupt-local-event", next(a.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_event("ep_disconnect/abrupt-peer-event", next(p.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	close_side(&a);
	close_side(&p);
}

static void post_send_cases(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l, r;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;
	DAT_PZ_HANDLE other_pz;
	DAT_LMR_HANDLE other_lmr;
	DAT_LMR_CONTEXT other_ctx;
	static unsigned char other_buf[256];
	DAT_REGION_DESCRIPTION region;

	c.as_64 = 1;
	open_side(&a);
	l = iov(&a, 0, 8);
	expect_ret("ep_post_send/null-ep", dat_ep_post_send(NULL, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	/* "DAT_INVALID_STATE: Endpoint was not in the CONNECTED or DISCONNECTED state." */
	expect_type("ep_post_send/unconnected", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_INVALID_STATE);
	close_side(&a);

	connected_pair(&a, &p);
	/* Success: the send completes, the receive gets the bytes and the length. */
	r = iov(&p, 100, 64);
	c.as_64 = 42;
	dat_ep_post_recv(p.ep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG);
	memcpy(a.buf, "conformance", 11);
	l = iov(&a, 0, 11);
	c.as_64 = 43;
	expect_ret("ep_post_send/success", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
	e = next(a.req_evd);
	expect_true("ep_post_send/send-completion",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 43,
		    "DAT_DTO_SUCCESS, cookie 43");
	DAT20_ONLY("ep_post_send/send-completion-operation", "operation in a DTO completion",
		   expect_true("ep_post_send/send-completion-operation",
			       e.event_number == DAT_DTO_COMPLETION_EVENT &&
				       e.event_data.dto_completion_event_data.operation == DAT_DTO_SEND,
			       "DAT_DTO_SEND"));
	e = next(p.recv_evd);
	expect_true("ep_post_send/receive-completion",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
			    e.event_data.dto_completion_event_data.transfered_length == 11 &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 42 &&
			    !memcmp(p.buf + 100, "conformance", 11),
		    "11 bytes intact, cookie 42");
	/* A zero-length message. */
	c.as_64 = 44;
	dat_ep_post_recv(p.ep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG);
	expect_ret("ep_post_send/zero-length", dat_ep_post_send(a.ep, 0, NULL, c, DAT_COMPLETION_DEFAULT_FLAG),
		   DAT_SUCCESS);
	e = next(p.recv_evd);
	expect_true("ep_post_send/zero-length-arrives",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.transfered_length == 0,
		    "a receive completes with length 0");
	next(a.req_evd);

	/* On a DISCONNECTED EP the post succeeds and the DTO is flushed at once. */
	dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG);
	next(a.conn_evd);
	c.as_64 = 45;
	expect_ret("ep_post_send/disconnected", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		   DAT_SUCCESS);
	e = next(a.req_evd);
	expect_true("ep_post_send/disconnected-flushed",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 45,
		    "DAT_DTO_ERR_FLUSHED, cookie 45");
	close_side(&a);
	close_side(&p);

	/* Invalid posts on a connected EP, on a connection of their own and after the cases
	 * above: a library that lets one through (or crashes in it) then disturbs none of them. */
	connected_pair(&a, &p);
	/* "DAT_INVALID_PARAMETER: one of the IOV segments pointed to a memory outside its LMR." */
	l = iov(&a, BUF - 4, 8);
	expect_type("ep_post_send/segment-outside-lmr", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_INVALID_PARAMETER);
	/* "num_segments: Number of lmr_triplets in local_iov": a count below zero is none, an
	 * invalid parameter. */
	expect_type("ep_post_send/negative-segment-count", dat_ep_post_send(a.ep, -1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_INVALID_PARAMETER);
	/* "DAT_PRIVILEGES_VIOLATION: one of the LMRs used in local_iov was invalid". */
	l = iov(&a, 0, 8);
	l.lmr_context ^= 0x5a5a5a5a;
	expect_type("ep_post_send/unknown-lmr-context", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_PRIVILEGES_VIOLATION);
	/* "DAT_PROTECTION_VIOLATION: Protection Zone mismatch between an LMR of one of the
	 * local_iov segments and the local Endpoint." */
	must(dat_pz_create(a.ia, &other_pz), "dat_pz_create");
	region.for_va = other_buf;
	must(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(other_buf), other_pz, DAT_MEM_PRIV_ALL_FLAG,
			    DAT_VA_TYPE_VA, &other_lmr, &other_ctx, NULL, NULL, NULL), "dat_lmr_create");
	l.lmr_context = other_ctx;
	l.virtual_address = (DAT_VADDR)(uintptr_t)other_buf;
	expect_type("ep_post_send/lmr-of-another-pz", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_PROTECTION_VIOLATION);
	/* Completion flags: UNSIGNALLED only where the EP's attributes allow it. */
	l = iov(&a, 0, 8);
	expect_type("ep_post_send/unsignalled-not-allowed",
		    dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_UNSIGNALLED_FLAG), DAT_INVALID_PARAMETER);
	/* "completion_flags: Flags for posted DTO": a value no flag has is an invalid parameter. */
	expect_type("ep_post_send/unknown-completion-flag", dat_ep_post_send(a.ep, 1, &l, c, 0x80),
		    DAT_INVALID_PARAMETER);

	close_side(&a);
	close_side(&p);
}

/* A peer process that dies mid-transfer (a message of ours in flight that it never posted a
 * receive for): DISCONNECTED, as OpenFabrics reports a peer that went away (no page ties it to
 * BROKEN; dapltest takes BROKEN after a disconnect for a failure), and the posted DTOs
 * flushed. The peer is
 * forked before this process makes any DAT call, so that it starts with a library of its own
 * (verbs state copied by fork is unusable in the child) and learns the port through a pipe. */
static void broken_case(void)
{
	struct side p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_EVENT e;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;
	int to_peer[2], ready[2];
	pid_t child;
	char byte;

	if (pipe(to_peer) || pipe(ready))
		exit(2);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		struct side a;
		close(to_peer[1]);
		close(ready[0]);
		if (read(to_peer[0], &port, sizeof(port)) != (ssize_t)sizeof(port))
			_exit(1);
		open_side(&a);
		connect_to(&a, port, NULL, WAIT_US);
		if (next(a.conn_evd).event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
			if (write(ready[1], "!", 1) != 1)
				_exit(1);
		}
		pause();
		_exit(0);
	}
	close(to_peer[0]);
	close(ready[1]); /* a peer that fails before it is ready ends the read below */
	open_side(&p);
	port = listen_any(&p, &psp);
	if (write(to_peer[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
		exit(2);
	e = next(p.cr_evd);
	dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL);
	next(p.conn_evd);
	l = iov(&p, 0, 64);
	c.as_64 = 9;
	dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
	l = iov(&p, 64, 8);
	c.as_64 = 10;
	if (read(ready[0], &byte, 1) == 1) {
		dat_ep_post_send(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
		kill(child, SIGKILL);
	}
	waitpid(child, NULL, 0);
	expect_event("ep_connect/peer-process-dies", next(p.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	e = next(p.recv_evd);
	expect_true("ep_connect/peer-dies-flushes",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED,
		    "the posted receive completes DAT_DTO_ERR_FLUSHED");
	e = next(p.req_evd);
	expect_true("ep_connect/peer-dies-flushes-send",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED,
		    "the send in flight completes DAT_DTO_ERR_FLUSHED");
	close_side(&p);
}

/* Programs we did not write: a qualifier above 0xffff (dapltest's 0xAffab1e; others use
 * getpid() or rank << 35), and EVDs of another IA. dat_ep_create's and dat_psp_create's pages
 * make a foreign EVD invalid only as "the ... handle is invalid" and leave the rest to the
 * provider; OpenFabrics accepts an EVD of another IA of its provider (dapltest -T L -w 4 passes
 * one), so compatibility decides: the EP and PSP take them and their events arrive there. */
static void large_qual_and_shared_evd_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	DAT_EP_HANDLE ep_x = DAT_HANDLE_NULL;
	DAT_CONN_QUAL q = 0;
	DAT_RETURN r = DAT_CONN_QUAL_IN_USE;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;
	DAT_EVENT e, e2;

	open_side(&a);
	open_side(&p);
	/* p's PSP delivers its requests to a's CR EVD. Several qualifiers are tried, in case
	 * another program holds the port one folds into. */
	for (int i = 0; i < 16 && DAT_GET_TYPE(r) == DAT_CONN_QUAL_IN_USE; i++) {
		q = ((DAT_CONN_QUAL)(getpid() + i) << 35) | 0xAffab1e;
		r = dat_psp_create(p.ia, q, a.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
	}
	expect_ret("psp_create/cr-evd-of-another-ia", r, DAT_SUCCESS);
	/* An EP of a's IA whose three EVDs are p's. */
	expect_ret("ep_create/evds-of-another-ia",
		   dat_ep_create(a.ia, a.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep_x), DAT_SUCCESS);
	if (r != DAT_SUCCESS || ep_x == DAT_HANDLE_NULL) {
		close_side(&a);
		close_side(&p);
		return;
	}
	{
		struct sockaddr_in sin;
		ia_own_address(p.ia, &sin);
		expect_ret("ep_connect/large-qual", dat_ep_connect(ep_x, (DAT_IA_ADDRESS_PTR)&sin, q, WAIT_US, 0, NULL,
								  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
			   DAT_SUCCESS);
	}
	e = next(a.cr_evd);
	expect_true("ep_connect/large-qual-request",
		    e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.event_data.cr_arrival_event_data.conn_qual == q &&
			    e.event_data.cr_arrival_event_data.sp_handle.psp_handle == psp,
		    "a request for the whole qualifier, on the other IA's CR EVD");
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL);
	e = next(p.conn_evd);
	e2 = next(p.conn_evd);
	expect_true("ep_connect/large-qual-established",
		    e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED && e2.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
			    ((e.event_data.connect_event_data.ep_handle == ep_x && e2.event_data.connect_event_data.ep_handle == p.ep) ||
			     (e.event_data.connect_event_data.ep_handle == p.ep && e2.event_data.connect_event_data.ep_handle == ep_x)),
		    "ESTABLISHED for both EPs on the one connection EVD");
	/* A send from the EP of a's IA completes on p's request EVD and lands in p's receive. */
	l = iov(&p, 0, 64);
	c.as_64 = 12;
	dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
	memcpy(a.buf, "shared", 6);
	l = iov(&a, 0, 6);
	c.as_64 = 11;
	expect_ret("ep_post_send/evds-of-another-ia", dat_ep_post_send(ep_x, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG),
		   DAT_SUCCESS);
	e = next(p.req_evd);
	expect_true("ep_post_send/evds-of-another-ia-completes",
		    e.event_number == DAT_DTO_COMPLETION_EVENT && e.event_data.dto_completion_event_data.ep_handle == ep_x &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 11 &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS,
		    "the send's completion on the other IA's request EVD");
	e = next(p.recv_evd);
	expect_true("ep_post_send/evds-of-another-ia-received",
		    e.event_number == DAT_DTO_COMPLETION_EVENT && e.event_data.dto_completion_event_data.user_cookie.as_64 == 12 &&
			    e.event_data.dto_completion_event_data.transfered_length == 6 && !memcmp(p.buf, "shared", 6),
		    "the message in p's receive");
	dat_ep_disconnect(ep_x, DAT_CLOSE_ABRUPT_FLAG);
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

/* DAT_COMPLETION_BARRIER_FENCE_FLAG ("Request for Barrier Fence", dat_ep_post_rdma_write(3DAT)):
 * the DAT 2.0 specification starts a fenced request only once the RDMA reads posted before it
 * on the EP have completed, so it may carry what they brought. Two reads of 16 MiB (or the
 * EP's largest RDMA) are in flight as a fenced write of the last one's last bytes is posted (smaller ones may land before
 * the post, in the time the scheduler gives the thread that answers them). */
/* DAT_COMPLETION_UNSIGNALLED_FLAG is a "non-notification completion" (dat_evd_wait(3)): the
 * completion is queued, and only the waking of a waiter is left out, unlike
 * DAT_COMPLETION_SUPPRESS_FLAG. So a dequeue finds it. */
static void unsignalled_case(void)
{
	struct side a, p;
	DAT_EP_PARAM param;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;
	DAT_RETURN rc = DAT_QUEUE_EMPTY;
	time_t deadline;

	open_side(&a);
	open_side(&p);
	must(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	param.ep_attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	must(dat_ep_free(a.ep), "dat_ep_free");
	must(dat_ep_create(a.ia, a.pz, a.recv_evd, a.req_evd, a.conn_evd, &param.ep_attr, &a.ep), "dat_ep_create");
	connect_opened(&a, &p);
	l = iov(&p, 0, 64);
	c.as_64 = 1;
	must(dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	l = iov(&a, 0, 8);
	c.as_64 = 7;
	expect_ret("ep_post_send/unsignalled", dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_UNSIGNALLED_FLAG),
		   DAT_SUCCESS);
	e = next(p.recv_evd);
	expect_event("ep_post_send/unsignalled-is-received", e.event_number, DAT_DTO_COMPLETION_EVENT);
	deadline = time(NULL) + WAIT_US / 1000000;
	while (rc == DAT_QUEUE_EMPTY && time(NULL) < deadline) {
		memset(&e, 0, sizeof(e));
		rc = dat_evd_dequeue(a.req_evd, &e);
	}
	expect_true("ep_post_send/unsignalled-completion-is-queued",
		    rc == DAT_SUCCESS && e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 7 &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS,
		    "a dequeue finds the send's DAT_DTO_SUCCESS (cookie 7)");
	close_side(&a);
	close_side(&p);
}

static void fence_case(void)
{
	enum { READS = 2, TAIL = 4096 };
	struct side a, p;
	DAT_EP_PARAM param;
	DAT_COUNT BIG = 1 << 24;
	unsigned char *abuf, *pbuf;
	DAT_LMR_HANDLE alm, plm;
	DAT_LMR_CONTEXT actx, pctx;
	DAT_RMR_CONTEXT prmr;
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET r;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;
	int i, in_order = 1;

	connected_pair(&a, &p);
	/* As large as the EP carries in one RDMA (soft-RoCE: 8 MiB), at most 16 MiB. */
	must(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	if ((DAT_VLEN)BIG > param.ep_attr.max_rdma_size)
		BIG = (DAT_COUNT)param.ep_attr.max_rdma_size;
	abuf = calloc(READS, BIG);
	pbuf = calloc(1, READS * BIG + TAIL);
	if (!abuf || !pbuf) {
		fprintf(stderr, "connect: no memory\n");
		exit(2);
	}
	for (i = 0; i < READS * BIG; i++)
		pbuf[i] = (unsigned char)(i % 251 + 1);
	region.for_va = abuf;
	must(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, READS * BIG, a.pz, DAT_MEM_PRIV_ALL_FLAG,
			    DAT_VA_TYPE_VA, &alm, &actx, NULL, NULL, NULL), "dat_lmr_create");
	region.for_va = pbuf;
	must(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, region, READS * BIG + TAIL, p.pz, DAT_MEM_PRIV_ALL_FLAG,
			    DAT_VA_TYPE_VA, &plm, &pctx, &prmr, NULL, NULL), "dat_lmr_create");
	for (i = 0; i < READS; i++) {
		l = triplet(actx, abuf, i * BIG, BIG);
		r = rmr_triplet(prmr, pbuf + i * BIG, (DAT_UINT32)BIG);
		c.as_64 = (DAT_UINT64)i;
		must(dat_ep_post_rdma_read(a.ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_rdma_read");
	}
	l = triplet(actx, abuf, READS * BIG - TAIL, TAIL);
	r = rmr_triplet(prmr, pbuf + READS * BIG, TAIL);
	c.as_64 = READS;
	expect_ret("ep_post_rdma_write/fenced-behind-reads",
		   dat_ep_post_rdma_write(a.ep, 1, &l, c, &r, DAT_COMPLETION_BARRIER_FENCE_FLAG), DAT_SUCCESS);
	for (i = 0; i <= READS; i++) {
		e = next(a.req_evd);
		in_order &= e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == (DAT_UINT64)i;
	}
	expect_true("ep_post_rdma_write/fenced-completes-after-the-reads", in_order,
		    "the reads (cookies 0, 1), then the write (cookie 2), each DAT_DTO_SUCCESS");
	expect_true("ep_post_rdma_write/fenced-carries-what-the-reads-brought",
		    !memcmp(pbuf + READS * BIG, pbuf + READS * BIG - TAIL, TAIL), "the last 4096 bytes the last read brought");
	close_side(&a);
	close_side(&p);
	free(abuf);
	free(pbuf);
}

int main(void)
{
	watchdog(120);
	/* First: its peer is forked before this process makes any DAT call. */
	broken_case();
	ep_connect_cases();
	disconnect_cases();
	post_send_cases();
	unsignalled_case();
	fence_case();
	large_qual_and_shared_evd_cases();
	return check_failures ? 1 : 0;
}
