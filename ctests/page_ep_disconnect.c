/*
 * dat_ep_disconnect(3DAT), sentence by sentence. Where each sentence of the page is checked:
 *
 * - "requests a termination of a connection or connection establishment ... used by the
 *   active/client or a passive/server side": connect.c ep_disconnect/graceful, /abrupt (active
 *   side); here completion-pending-aborts (passive side).
 * - "Abrupt close. This is the default value.": connect.c ep_disconnect/abrupt.
 * - "Upon disconnect, all outstanding and in-progress DTOs and RMR Binds must be completed.":
 *   here graceful-send-completes, abrupt-flushes-sends, abrupt-flushes-receives.
 * - "For abrupt disconnect, all outstanding DTOs ... are completed unsuccessfully ... all follow
 *   on in-progress DTOs in the same direction also must be completed unsuccessfully":
 *   here abrupt-flushes-sends (two sends in flight, in order), abrupt-flushes-receives.
 * - "For graceful disconnect, all outstanding and in-progress request DTOs ... must try to be
 *   completed successfully first ... the local Endpoint is in a DAT_EP_DISCONNECT_PENDING
 *   state": here graceful-is-pending, graceful-send-completes.
 * - "The Consumer can call abrupt dat_ep_disconnect() when the local Endpoint is in the
 *   DAT_EP_DISCONNECT_PENDING state ... DAT_EP_STATE_DISCONNECTED without waiting": here
 *   abrupt-while-pending, abrupt-while-pending-flushes, abrupt-while-pending-then-reset.
 * - "The graceful dat_ep_disconnect() call when the local Endpoint is in the
 *   DAT_EP_DISCONNECT_PENDING state has no effect.": here graceful-while-pending.
 * - "If the Endpoint is not in DAT_EP_STATE_CONNECTED, the semantic of the operation is the same
 *   for graceful or abrupt": here active-pending-aborts (graceful flag) and
 *   completion-pending-aborts (abrupt flag), already-disconnected-abrupt (connect.c:
 *   already-disconnected, graceful).
 * - "No new Send, RDMA Read, and RDMA Write DTOs, or RMR Binds can be posted ... in the
 *   DAT_EP_DISCONNECT_PENDING state" (dat_ep_post_send(3DAT): DAT_INVALID_STATE): here
 *   no-send-while-pending, no-rdma-write-while-pending, no-rdma-read-while-pending; receives
 *   may (dat_ep_post_recv(3DAT) names no state): here recv-while-pending.
 * - "The successful completion of the disconnect is reported ... DAT_CONNECTION_EVENT_DISCONNECTED
 *   event on connect_evd_handle": connect.c graceful-local-event, abrupt-local-event; the
 *   peer's side: connect.c graceful-peer-event, abrupt-peer-event, here graceful-peer-disconnected.
 * - "automatically transitioned into a DAT_EP_STATE_DISCONNECTED state": connect.c
 *   disconnected; here graceful-ends-disconnected.
 * - "If the same EVD is used for connect_evd_handle and any recv_evd_handle and
 *   request_evd_handle, all successful Completion events of in-progress DTOs precede the
 *   Disconnect Completion event.": here shared-evd-order.
 * - "Disconnecting an unconnected Disconnected Endpoint is no-op.": connect.c
 *   already-disconnected (the code); here already-disconnected-abrupt (no second event).
 * - "Disconnecting an Endpoint in DAT_EP_STATE_UNCONNECTED, DAT_EP_STATE_RESERVED,
 *   DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, and DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING is
 *   disallowed.": connect.c unconnected; here reserved, rsp-request-pending. TENTATIVE needs a
 *   provider-made EP (DAT_PSP_PROVIDER_FLAG), which this library does not make
 *   (DAT_MODEL_NOT_SUPPORTED): the rule is a unit test of src/objects/ep_state.rs
 *   (disconnect_paths).
 * - "Both abrupt and graceful disconnect ... during ... ACTIVE_CONNECTION_PENDING and
 *   DAT_EP_STATE_COMPLETION_PENDING, "aborts" the connection establishment and transitions the
 *   local Endpoint into DAT_EP_STATE_DISCONNECTED. That causes preposted Recv DTOs to be flushed
 *   to recv_evd_handle.": here active-pending-aborts, active-pending-flushes-receives,
 *   completion-pending-aborts, completion-pending-flushes-receives.
 * - RETURN VALUES: DAT_INVALID_HANDLE: connect.c null-ep, garbage-ep; DAT_INVALID_PARAMETER:
 *   connect.c unknown-flags, here invalid-flags-connected; DAT_INVALID_STATE: see above.
 *   DAT_INSUFFICIENT_RESOURCES: no disconnect of ours needs resources it could lack.
 *
 * A dead peer (no page ties it to BROKEN; OpenFabrics reports DISCONNECTED and dapltest takes
 * BROKEN after a disconnect for a failure): here dead-peer-is-disconnected.
 */
#include "side.h"

#include <signal.h>
#include <sys/wait.h>

/* Waits up to `us` for an event on `evd`; event number 0 when none came. */
static DAT_EVENT next_within(DAT_EVD_HANDLE evd, DAT_TIMEOUT us)
{
	DAT_EVENT e;
	DAT_COUNT more;
	memset(&e, 0, sizeof(e));
	if (dat_evd_wait(evd, us * time_scale(), 1, &e, &more) != DAT_SUCCESS)
		e.event_number = (DAT_EVENT_NUMBER)0;
	return e;
}

static int dto_is(DAT_EVENT e, DAT_DTO_COMPLETION_STATUS status, DAT_UINT64 cookie)
{
	return e.event_number == DAT_DTO_COMPLETION_EVENT && e.event_data.dto_completion_event_data.status == status &&
	       e.event_data.dto_completion_event_data.user_cookie.as_64 == cookie;
}

static DAT_RETURN post_send(struct side *s, int offset, DAT_UINT64 cookie)
{
	DAT_LMR_TRIPLET l = iov(s, offset, 8);
	DAT_DTO_COOKIE c;
	c.as_64 = cookie;
	return dat_ep_post_send(s->ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN post_recv(struct side *s, int offset, DAT_UINT64 cookie)
{
	DAT_LMR_TRIPLET l = iov(s, offset, 64);
	DAT_DTO_COOKIE c;
	c.as_64 = cookie;
	return dat_ep_post_recv(s->ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
}

#define PENDING_STATE DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCPENDING)

/* A graceful disconnect with a send in flight whose message waits at the peer for a receive:
 * DISCONNECT_PENDING until the peer posts it; what may be posted meanwhile; a second graceful
 * call; the order of events on one EVD that serves as connect, receive and request EVD. */
static void graceful_cases(void)
{
	struct side a, p;
	DAT_EVD_HANDLE shared;
	DAT_EVENT e;
	int send_at = -1, recv_at = -1, disc_at = -1, n;

	open_side(&a);
	open_side(&p);
	must(dat_evd_create(a.ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG, &shared),
	     "dat_evd_create");
	must(dat_ep_free(a.ep), "dat_ep_free");
	must(dat_ep_create(a.ia, a.pz, shared, shared, shared, NULL, &a.ep), "dat_ep_create");
	a.conn_evd = a.recv_evd = a.req_evd = shared;
	connect_opened(&a, &p);

	/* The peer has no receive posted: the message waits there. */
	must(post_send(&a, 0, 1), "dat_ep_post_send");
	expect_ret("ep_disconnect/graceful-with-send-in-flight", dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_SUCCESS);
	expect_state("ep_disconnect/graceful-is-pending", a.ep, DAT_EP_STATE_DISCONNECT_PENDING);
	/* "No new Send, RDMA Read, and RDMA Write DTOs ... can be posted ... in the
	 * DAT_EP_DISCONNECT_PENDING state" (dat_ep_post_send(3DAT): DAT_INVALID_STATE). */
	expect_ret("ep_disconnect/no-send-while-pending", post_send(&a, 8, 2), PENDING_STATE);
	{
		DAT_LMR_TRIPLET l = iov(&a, 16, 8);
		DAT_RMR_TRIPLET r = rmr_triplet(p.rmr_ctx, p.buf, 8);
		DAT_DTO_COOKIE c;
		c.as_64 = 3;
		expect_ret("ep_disconnect/no-rdma-write-while-pending",
			   dat_ep_post_rdma_write(a.ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG), PENDING_STATE);
		expect_ret("ep_disconnect/no-rdma-read-while-pending",
			   dat_ep_post_rdma_read(a.ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG), PENDING_STATE);
	}
	/* dat_ep_post_recv(3DAT) names no state in which a receive is refused. */
	expect_ret("ep_disconnect/recv-while-pending", post_recv(&a, 64, 4), DAT_SUCCESS);
	/* "The graceful dat_ep_disconnect() call when the local Endpoint is in the
	 * DAT_EP_DISCONNECT_PENDING state has no effect." */
	expect_ret("ep_disconnect/graceful-while-pending", dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_SUCCESS);
	expect_state("ep_disconnect/graceful-while-pending-stays-pending", a.ep, DAT_EP_STATE_DISCONNECT_PENDING);

	/* The peer posts its receive: the send completes, then the disconnect proceeds. */
	must(post_recv(&p, 128, 5), "dat_ep_post_recv");
	e = next(p.recv_evd);
	expect_true("ep_disconnect/graceful-message-arrives", dto_is(e, DAT_DTO_SUCCESS, 5),
		    "the peer's receive completes DAT_DTO_SUCCESS");
	for (n = 0; n < 4 && disc_at < 0; n++) {
		e = next(shared);
		if (dto_is(e, DAT_DTO_SUCCESS, 1))
			send_at = n;
		else if (dto_is(e, DAT_DTO_ERR_FLUSHED, 4))
			recv_at = n;
		else if (e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
			disc_at = n;
		else
			break;
	}
	expect_true("ep_disconnect/graceful-send-completes", send_at >= 0,
		    "the send in flight completes DAT_DTO_SUCCESS");
	/* "If the same EVD is used for connect_evd_handle and any recv_evd_handle and
	 * request_evd_handle, all successful Completion events of in-progress DTOs precede the
	 * Disconnect Completion event." */
	expect_true("ep_disconnect/shared-evd-order", send_at >= 0 && disc_at > send_at,
		    "the send's DAT_DTO_SUCCESS, then DISCONNECTED, on the one EVD");
	expect_true("ep_disconnect/graceful-flushes-pending-receive", recv_at >= 0 && recv_at < disc_at,
		    "the receive posted while pending completes DAT_DTO_ERR_FLUSHED");
	expect_state("ep_disconnect/graceful-ends-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	expect_event("ep_disconnect/graceful-peer-disconnected", next(p.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	close_side(&a);
	close_side(&p);
}

/* Abrupt disconnects: of a CONNECTED EP with sends and receives in flight, and of one that
 * waits in DISCONNECT_PENDING. */
static void abrupt_cases(void)
{
	struct side a, p;
	DAT_EVENT e1, e2;

	/* Two sends in flight (no receive at the peer) and a receive posted. */
	connected_pair(&a, &p);
	must(post_send(&a, 0, 1), "dat_ep_post_send");
	must(post_send(&a, 8, 2), "dat_ep_post_send");
	must(post_recv(&a, 64, 3), "dat_ep_post_recv");
	/* "DAT_INVALID_PARAMETER: The disconnect_flags parameter is invalid": checked before the
	 * state, and nothing changes. */
	expect_type("ep_disconnect/invalid-flags-connected", dat_ep_disconnect(a.ep, (DAT_CLOSE_FLAGS)2),
		    DAT_INVALID_PARAMETER);
	expect_state("ep_disconnect/invalid-flags-leave-connected", a.ep, DAT_EP_STATE_CONNECTED);
	expect_ret("ep_disconnect/abrupt-with-sends-in-flight", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_SUCCESS);
	e1 = next(a.req_evd);
	e2 = next(a.req_evd);
	/* "For abrupt disconnect, all outstanding DTOs ... are completed unsuccessfully ... all
	 * follow on in-progress DTOs in the same direction also must be completed
	 * unsuccessfully." */
	expect_true("ep_disconnect/abrupt-flushes-sends",
		    dto_is(e1, DAT_DTO_ERR_FLUSHED, 1) && dto_is(e2, DAT_DTO_ERR_FLUSHED, 2),
		    "both sends DAT_DTO_ERR_FLUSHED, in posting order");
	expect_true("ep_disconnect/abrupt-flushes-receives", dto_is(next(a.recv_evd), DAT_DTO_ERR_FLUSHED, 3),
		    "the posted receive DAT_DTO_ERR_FLUSHED");
	expect_event("ep_disconnect/abrupt-event", next(a.conn_evd).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_event("ep_disconnect/abrupt-peer-disconnected", next(p.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	/* "Disconnecting an unconnected Disconnected Endpoint is no-op": no second event. */
	expect_ret("ep_disconnect/already-disconnected-abrupt", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_SUCCESS);
	expect_true("ep_disconnect/already-disconnected-no-event", next_within(a.conn_evd, 300 * 1000).event_number == 0,
		    "no second event within 0.3 s");
	close_side(&a);
	close_side(&p);

	/* Graceful, then abrupt while DISCONNECT_PENDING. */
	connected_pair(&a, &p);
	must(post_send(&a, 0, 1), "dat_ep_post_send");
	must(dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	expect_state("ep_disconnect/graceful-waits", a.ep, DAT_EP_STATE_DISCONNECT_PENDING);
	/* "The Consumer can call abrupt dat_ep_disconnect() when the local Endpoint is in the
	 * DAT_EP_DISCONNECT_PENDING state. This causes the Endpoint to transition into
	 * DAT_EP_STATE_DISCONNECTED without waiting". */
	expect_ret("ep_disconnect/abrupt-while-pending", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	expect_state("ep_disconnect/abrupt-while-pending-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	expect_true("ep_disconnect/abrupt-while-pending-flushes", dto_is(next(a.req_evd), DAT_DTO_ERR_FLUSHED, 1),
		    "the send in flight DAT_DTO_ERR_FLUSHED");
	expect_event("ep_disconnect/abrupt-while-pending-event", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_event("ep_disconnect/abrupt-while-pending-peer", next(p.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	/* The connection is over: a reset EP hears nothing more of it. */
	expect_ret("ep_disconnect/abrupt-while-pending-reset", dat_ep_reset(a.ep), DAT_SUCCESS);
	expect_true("ep_disconnect/abrupt-while-pending-then-quiet", next_within(a.conn_evd, 1000 * 1000).event_number == 0,
		    "no event within 1 s");
	close_side(&a);
	close_side(&p);
}

/* States in which a disconnect is refused, and an aborted active connect. */
static void state_cases(void)
{
	struct side a, p;
	DAT_RSP_HANDLE rsp;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_EVENT e;
	DAT_RETURN r = DAT_CONN_QUAL_IN_USE;

	open_side(&a);
	open_side(&p);
	/* An RSP reserves its EP: "Disconnecting an Endpoint in ... DAT_EP_STATE_RESERVED ... is
	 * disallowed." */
	for (int i = 0; i < 16 && DAT_GET_TYPE(r) == DAT_CONN_QUAL_IN_USE; i++) {
		port = (DAT_CONN_QUAL)(20000 + (getpid() + i * 7919) % 20000);
		r = dat_rsp_create(p.ia, port, p.ep, p.cr_evd, &rsp);
	}
	must(r, "dat_rsp_create");
	expect_type("ep_disconnect/reserved", dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
	/* Its request arrived: "... DAT_EP_STATE_PASSIVE_CONNECTION_PENDING ... is disallowed."
	 * (the abrupt flag: the same). */
	must(connect_to(&a, port, NULL, WAIT_US), "dat_ep_connect");
	e = next(p.cr_evd);
	expect_type("ep_disconnect/rsp-request-pending", dat_ep_disconnect(p.ep, DAT_CLOSE_ABRUPT_FLAG),
		    DAT_INVALID_STATE);
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle, 0, NULL);
	close_side(&a);
	close_side(&p);

	/* ACTIVE_CONNECTION_PENDING (nobody accepts): a graceful disconnect aborts the connect,
	 * and the receive posted before is flushed. */
	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);
	must(post_recv(&a, 0, 7), "dat_ep_post_recv");
	must(connect_to(&a, port, NULL, WAIT_US), "dat_ep_connect");
	e = next(p.cr_evd); /* the request is there; nobody answers it yet */
	expect_state("ep_disconnect/active-pending-setup", a.ep, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	expect_ret("ep_disconnect/active-pending-aborts", dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_SUCCESS);
	expect_state("ep_disconnect/active-pending-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	expect_event("ep_disconnect/active-pending-event", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_true("ep_disconnect/active-pending-flushes-receives", dto_is(next(a.recv_evd), DAT_DTO_ERR_FLUSHED, 7),
		    "the preposted receive DAT_DTO_ERR_FLUSHED on recv_evd");
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle, 0, NULL);
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

/*
 * Cases with a peer process, forked before this process makes any DAT call (verbs state
 * copied by fork is unusable in the child). The peer learns the port through a pipe, connects
 * and says so; it is then stopped (SIGSTOP), so it cannot confirm our accept: the accepting EP
 * stays COMPLETION_PENDING. A second peer connects, is accepted and killed while idle.
 */
static pid_t fork_peer(int *to_peer_w)
{
	int to_peer[2];
	pid_t child;
	DAT_CONN_QUAL port;
	if (pipe(to_peer))
		exit(2);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		struct side a;
		close(to_peer[1]);
		if (read(to_peer[0], &port, sizeof(port)) != (ssize_t)sizeof(port))
			_exit(1);
		open_side(&a);
		connect_to(&a, port, NULL, WAIT_US);
		for (;;)
			pause();
	}
	close(to_peer[0]);
	*to_peer_w = to_peer[1];
	return child;
}

static void peer_process_cases(pid_t stopped, int to_stopped, pid_t dying, int to_dying)
{
	struct side p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_EVENT e;

	open_side(&p);
	port = listen_any(&p, &psp);
	/* COMPLETION_PENDING: the peer is stopped once its request is here. */
	if (write(to_stopped, &port, sizeof(port)) != (ssize_t)sizeof(port))
		exit(2);
	e = next(p.cr_evd);
	/* Stopped before the accept: kill() only queues the signal, the peer's threads may still
	 * run (and confirm the accept) until it has taken effect. */
	kill(stopped, SIGSTOP);
	waitpid(stopped, NULL, WUNTRACED);
	must(post_recv(&p, 0, 8), "dat_ep_post_recv");
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		must(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL), "dat_cr_accept");
	expect_state("ep_disconnect/completion-pending-setup", p.ep, DAT_EP_STATE_COMPLETION_PENDING);
	expect_ret("ep_disconnect/completion-pending-aborts", dat_ep_disconnect(p.ep, DAT_CLOSE_ABRUPT_FLAG),
		   DAT_SUCCESS);
	expect_state("ep_disconnect/completion-pending-is-disconnected", p.ep, DAT_EP_STATE_DISCONNECTED);
	expect_event("ep_disconnect/completion-pending-event", next(p.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_true("ep_disconnect/completion-pending-flushes-receives", dto_is(next(p.recv_evd), DAT_DTO_ERR_FLUSHED, 8),
		    "the preposted receive DAT_DTO_ERR_FLUSHED on recv_evd");
	kill(stopped, SIGKILL);
	waitpid(stopped, NULL, 0);

	/* A peer process that dies while the connection is idle. */
	must(dat_ep_reset(p.ep), "dat_ep_reset");
	if (write(to_dying, &port, sizeof(port)) != (ssize_t)sizeof(port))
		exit(2);
	e = next(p.cr_evd);
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		must(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL), "dat_cr_accept");
	e = next(p.conn_evd);
	if (e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
		must(post_recv(&p, 0, 9), "dat_ep_post_recv");
		kill(dying, SIGKILL);
		waitpid(dying, NULL, 0);
		/* No page ties a dead peer to BROKEN; OpenFabrics reports DISCONNECTED. */
		expect_event("ep_disconnect/dead-peer-is-disconnected", next(p.conn_evd).event_number,
			     DAT_CONNECTION_EVENT_DISCONNECTED);
		expect_true("ep_disconnect/dead-peer-flushes-receives", dto_is(next(p.recv_evd), DAT_DTO_ERR_FLUSHED, 9),
			    "the posted receive DAT_DTO_ERR_FLUSHED");
	} else {
		report("ep_disconnect/dead-peer-is-disconnected", "ESTABLISHED first", event_name(e.event_number), 0);
		kill(dying, SIGKILL);
		waitpid(dying, NULL, 0);
	}
	dat_psp_free(psp);
	close_side(&p);
}

int main(void)
{
	int to_stopped, to_dying;
	pid_t stopped, dying;

	watchdog(150);
	/* First: the peers are forked before this process makes any DAT call. */
	stopped = fork_peer(&to_stopped);
	dying = fork_peer(&to_dying);
	peer_process_cases(stopped, to_stopped, dying, to_dying);
	graceful_cases();
	abrupt_cases();
	state_cases();
	return check_failures ? 1 : 0;
}
