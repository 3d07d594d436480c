/*
 * dat_cr_accept(3DAT), sentence by sentence, with the Reserved Service Point path of
 * dat_rsp_create(3DAT) that it serves. Sentences covered elsewhere (not repeated here):
 *
 *   "DAT_SUCCESS"; "Consumers can specify private data that is provided to the remote side
 *   upon Connection establishment"; "The successful completion of the operation is reported
 *   through a Connection Event of type DAT_CONNECTION_EVENT_ESTABLISHED on the connect_evd of
 *   the local Endpoint"; "This operation, if successful, also destroys the Connection Request
 *   instance" (a second accept):
 *       connect.c: cr_accept/success, cr_accept/private-data-arrives,
 *       cr_accept/passive-established, cr_accept/connected, cr_accept/consumed-cr.
 *   "DAT_INVALID_HANDLE: The cr_handle or ep_handle parameter is invalid" (NULL CR, garbage
 *   EP); "private_data_size: Size of the private_data, which must be nonnegative";
 *   "DAT_INVALID_PARAMETER: The private_data_size or private_data parameter is invalid, out of
 *   range" (longer than dat_ia_query advertises):
 *       connect_args.c: cr_accept/null-cr, cr_accept/garbage-ep,
 *       cr_accept/negative-private-data-size, cr_accept/private-data-too-long.
 *
 * Here: the EP the request names (an RSP's) and ep_handle NULL; an EP that does not satisfy the
 * request (no PZ, no connect EVD, another IA, another provider, not idle) refused with no
 * effect, the CR accepted properly after; private data NULL with and without a size; every
 * later use of a destroyed CR; the asynchronous accept (COMPLETION_PENDING) and the accept
 * that cannot complete (ACCEPT_COMPLETION_ERROR, DISCONNECTED, receives flushed), against a
 * requester process that stops, then dies; the USAGE section's two zero RDMA read attributes.
 * Not here: the USAGE section's read-depth negotiation (an accept that "might fail" when the
 * depths disagree): the provider may clamp or refuse, so no outcome can be required.
 */
#include "side.h"

#include <signal.h>
#include <sys/wait.h>

#define HANDLE_EP DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP)

/* A free qualifier of the side's IA: a PSP's, freed (an RSP takes it next). */
static DAT_CONN_QUAL free_qual(struct side *s)
{
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q = listen_any(s, &psp);
	must(dat_psp_free(psp), "dat_psp_free");
	return q;
}

/* The CR of the next request event on `evd` (NULL if none came). */
static DAT_CR_HANDLE next_cr(DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *sp)
{
	DAT_EVENT e = next(evd);
	if (e.event_number != DAT_CONNECTION_REQUEST_EVENT)
		return DAT_HANDLE_NULL;
	if (sp)
		*sp = e.event_data.cr_arrival_event_data.sp_handle.rsp_handle;
	return e.event_data.cr_arrival_event_data.cr_handle;
}

/* An EP of side s with its own connect EVD (its events apart from the side's EP's). */
static DAT_EP_HANDLE ep_with_own_evd(struct side *s, DAT_EVD_HANDLE *conn_evd)
{
	DAT_EP_HANDLE ep;
	must(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, conn_evd), "dat_evd_create");
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, *conn_evd, NULL, &ep), "dat_ep_create");
	return ep;
}

static DAT_RETURN connect_ep(DAT_EP_HANDLE ep, struct side *to, DAT_CONN_QUAL q, const char *pd)
{
	struct sockaddr_in sin;
	ia_own_address(to->ia, &sin);
	return dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, q, WAIT_US, pd ? (DAT_COUNT)strlen(pd) : 0, (DAT_PVOID)pd,
			      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

static int is_rejection(DAT_EVENT_NUMBER n)
{
	return n == DAT_CONNECTION_EVENT_PEER_REJECTED || n == DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
}

/* The Reserved Service Point's request, accepted on the EP it names. */
static void rsp_accept_cases(void)
{
	struct side a, p;
	DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL, from = DAT_HANDLE_NULL;
	DAT_CONN_QUAL q;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM crp;
	DAT_EP_HANDLE other, second;
	DAT_EVD_HANDLE second_evd;
	DAT_EVENT e;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;

	open_side(&a);
	open_side(&p);
	q = free_qual(&p);
	must(dat_rsp_create(p.ia, q, p.ep, p.cr_evd, &rsp), "dat_rsp_create");
	must(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &other), "dat_ep_create");
	must(connect_to(&a, q, "reserved", WAIT_US), "dat_ep_connect");
	cr = next_cr(p.cr_evd, &from);
	expect_true("cr_accept/rsp-request-arrives", cr != DAT_HANDLE_NULL && from == rsp,
		    "a connection request event naming the RSP");
	if (cr == DAT_HANDLE_NULL) {
		close_side(&a);
		close_side(&p);
		return;
	}
	/* dat_rsp_create: "Delivers the Connection Request Notice ... The Local Endpoint is
	 * transitioned from Reserved to Passive Connection Pending state." */
	expect_state("cr_accept/rsp-ep-passive-connection-pending", p.ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
	memset(&crp, 0, sizeof(crp));
	dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp);
	expect_true("cr_accept/rsp-cr-names-its-ep", crp.local_ep_handle == p.ep, "dat_cr_query's local_ep_handle is the RSP's EP");

	/* "If the local Endpoint is specified by the Connection Request, the ep_handle shall be
	 * DAT_HANDLE_NULL." Another EP, or even the one the request names, is an invalid
	 * ep_handle ("DAT_INVALID_HANDLE: The cr_handle or ep_handle parameter is invalid";
	 * OpenFabrics: DAT_INVALID_HANDLE_EP), and nothing changes. */
	expect_ret("cr_accept/rsp-another-ep", dat_cr_accept(cr, other, 0, NULL), HANDLE_EP);
	expect_ret("cr_accept/rsp-its-own-ep-not-null", dat_cr_accept(cr, p.ep, 0, NULL), HANDLE_EP);
	expect_state("cr_accept/rsp-refused-leaves-the-other-ep", other, DAT_EP_STATE_UNCONNECTED);
	expect_state("cr_accept/rsp-refused-leaves-its-ep", p.ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);

	/* dat_rsp_create: "creates a Reserved Service Point with the specified Endpoint that
	 * generates, at most, one Connection Request": a second requester is refused, and no
	 * second request event comes (its refusal comes after the request would have). */
	second = ep_with_own_evd(&a, &second_evd);
	must(connect_ep(second, &p, q, NULL), "dat_ep_connect");
	e = next(second_evd);
	{
		DAT_EVENT extra;
		DAT_RETURN r = dat_evd_dequeue(p.cr_evd, &extra);
		expect_true("cr_accept/rsp-at-most-one-request", is_rejection(e.event_number) && r != DAT_SUCCESS,
			    "the second requester rejected, no second request event");
	}

	/* "The local Endpoint is either specified explicitly by ep_handle or implicitly by a
	 * Connection Request. In the second case, ep_handle is DAT_HANDLE_NULL." */
	expect_ret("cr_accept/rsp-null-ep", dat_cr_accept(cr, DAT_HANDLE_NULL, 8, "accepted"), DAT_SUCCESS);
	expect_event("cr_accept/rsp-established", next(p.conn_evd).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	e = next(a.conn_evd);
	expect_true("cr_accept/rsp-requester-established",
		    e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
			    e.event_data.connect_event_data.private_data_size >= 8 &&
			    !memcmp(e.event_data.connect_event_data.private_data, "accepted", 8),
		    "ESTABLISHED with \"accepted\"");
	/* dat_rsp_create: "If accepted, the original Local Endpoint is now in a Connected state and
	 * fully usable for this connection". */
	expect_state("cr_accept/rsp-ep-connected", p.ep, DAT_EP_STATE_CONNECTED);
	l = iov(&p, 0, 64);
	c.as_64 = 31;
	dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
	memcpy(a.buf, "through the rsp", 15);
	l = iov(&a, 0, 15);
	c.as_64 = 32;
	dat_ep_post_send(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG);
	e = next(p.recv_evd);
	expect_true("cr_accept/rsp-connection-carries-data",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
			    e.event_data.dto_completion_event_data.transfered_length == 15 && !memcmp(p.buf, "through the rsp", 15),
		    "the requester's 15 bytes in the RSP's EP's receive");
	dat_rsp_free(rsp);
	close_side(&a);
	close_side(&p);

	/* dat_rsp_create: "If rejected, the Local Endpoint point transitions into Unconnected
	 * state." */
	open_side(&a);
	open_side(&p);
	q = free_qual(&p);
	must(dat_rsp_create(p.ia, q, p.ep, p.cr_evd, &rsp), "dat_rsp_create");
	must(connect_to(&a, q, NULL, WAIT_US), "dat_ep_connect");
	cr = next_cr(p.cr_evd, NULL);
	expect_ret("cr_accept/rsp-reject", dat_cr_reject(cr, 0, NULL), DAT_SUCCESS);
	expect_state("cr_accept/rsp-rejected-ep-unconnected", p.ep, DAT_EP_STATE_UNCONNECTED);
	dat_rsp_free(rsp);
	close_side(&a);
	close_side(&p);
}

/* "If the provided local Endpoint does not satisfy the requested Connection Request, the
 * operation fails without any effect on the local Endpoint, Pending Connection Request, private
 * data, or remote Endpoint." Each refusal leaves its EP UNCONNECTED; the CR is accepted
 * properly after them all, with what its requester sent, and the requester sees that accept. */
static void unsatisfying_ep_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM crp;
	DAT_EP_HANDLE no_pz, no_conn_evd, reserved, foreign = DAT_HANDLE_NULL;
	DAT_RSP_HANDLE rsp;
	DAT_IA_HANDLE other_ia = DAT_HANDLE_NULL, tcp_ia = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE other_async = DAT_HANDLE_NULL, tcp_async = DAT_HANDLE_NULL;
	int unchanged = 1;
	DAT_EP_STATE st;

	open_side(&a);
	open_side(&p);
	q = listen_any(&p, &psp);
	must(connect_to(&a, q, "satisfy me", WAIT_US), "dat_ep_connect");
	cr = next_cr(p.cr_evd, NULL);
	if (cr == DAT_HANDLE_NULL) {
		fprintf(stderr, "page_cr_accept: no request\n");
		exit(2);
	}

	/* An EP with no PZ: OpenFabrics refuses it at once (DAT_INVALID_HANDLE_EP): a connection
	 * needs the zone its memory is checked against. */
	must(dat_ep_create(p.ia, DAT_HANDLE_NULL, p.recv_evd, p.req_evd, p.conn_evd, NULL, &no_pz), "dat_ep_create");
	expect_ret("cr_accept/ep-without-pz", dat_cr_accept(cr, no_pz, 0, NULL), HANDLE_EP);
	/* An EP with no connect EVD has nowhere to report the connection. */
	must(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, DAT_HANDLE_NULL, NULL, &no_conn_evd), "dat_ep_create");
	expect_ret("cr_accept/ep-without-connect-evd", dat_cr_accept(cr, no_conn_evd, 0, NULL), HANDLE_EP);
	/* An EP of another IA (of the same provider) cannot carry the CR's IA's connection. */
	if (dat_ia_open(ia_name(), 8, &other_async, &other_ia) == DAT_SUCCESS) {
		DAT_PZ_HANDLE pz;
		DAT_EVD_HANDLE evd;
		must(dat_pz_create(other_ia, &pz), "dat_pz_create");
		must(dat_evd_create(other_ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &evd), "dat_evd_create");
		must(dat_ep_create(other_ia, pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, evd, NULL, &foreign), "dat_ep_create");
		expect_ret("cr_accept/ep-of-another-ia", dat_cr_accept(cr, foreign, 0, NULL), HANDLE_EP);
		st = (DAT_EP_STATE)-1;
		dat_ep_get_status(foreign, &st, NULL, NULL);
		unchanged &= st == DAT_EP_STATE_UNCONNECTED;
	}
	/* An EP of another provider's IA: the built-in TCP IA, where the suite runs on another. */
	if (strcmp(ia_name(), "tcp-lo") != 0 && dat_ia_open("tcp-lo", 8, &tcp_async, &tcp_ia) == DAT_SUCCESS) {
		DAT_PZ_HANDLE pz;
		DAT_EVD_HANDLE evd;
		DAT_EP_HANDLE ep;
		must(dat_pz_create(tcp_ia, &pz), "dat_pz_create");
		must(dat_evd_create(tcp_ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &evd), "dat_evd_create");
		must(dat_ep_create(tcp_ia, pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, evd, NULL, &ep), "dat_ep_create");
		expect_ret("cr_accept/ep-of-another-provider", dat_cr_accept(cr, ep, 0, NULL), HANDLE_EP);
		st = (DAT_EP_STATE)-1;
		dat_ep_get_status(ep, &st, NULL, NULL);
		unchanged &= st == DAT_EP_STATE_UNCONNECTED;
	}
	/* An EP reserved for an RSP is the only one for that RSP's request, and not idle for
	 * another's (OpenFabrics: DAT_INVALID_STATE for an EP not UNCONNECTED). */
	must(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &reserved), "dat_ep_create");
	must(dat_rsp_create(p.ia, free_qual(&p), reserved, p.cr_evd, &rsp), "dat_rsp_create");
	expect_type("cr_accept/ep-reserved-for-an-rsp", dat_cr_accept(cr, reserved, 0, NULL), DAT_INVALID_STATE);
	expect_state("cr_accept/ep-reserved-stays-reserved", reserved, DAT_EP_STATE_RESERVED);
	/* "If private_data_size is zero, then private_data can be NULL": not otherwise
	 * ("DAT_INVALID_PARAMETER: The private_data_size or private_data parameter is invalid"). */
	expect_type("cr_accept/private-data-null-with-size", dat_cr_accept(cr, p.ep, 4, NULL), DAT_INVALID_PARAMETER);

	st = (DAT_EP_STATE)-1;
	dat_ep_get_status(no_pz, &st, NULL, NULL);
	unchanged &= st == DAT_EP_STATE_UNCONNECTED;
	st = (DAT_EP_STATE)-1;
	dat_ep_get_status(no_conn_evd, &st, NULL, NULL);
	unchanged &= st == DAT_EP_STATE_UNCONNECTED;
	st = (DAT_EP_STATE)-1;
	dat_ep_get_status(p.ep, &st, NULL, NULL);
	unchanged &= st == DAT_EP_STATE_UNCONNECTED;
	expect_true("cr_accept/refusals-leave-the-eps", unchanged, "every EP still DAT_EP_STATE_UNCONNECTED");
	memset(&crp, 0, sizeof(crp));
	expect_true("cr_accept/refusals-leave-the-cr",
		    dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp) == DAT_SUCCESS && crp.private_data_size >= 10 &&
			    crp.private_data && !memcmp(crp.private_data, "satisfy me", 10),
		    "the CR answers dat_cr_query with the requester's private data");
	expect_state("cr_accept/refusals-leave-the-requester", a.ep, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	/* "If private_data_size is zero, then private_data can be NULL." */
	expect_ret("cr_accept/after-refusals-zero-size-null-data", dat_cr_accept(cr, p.ep, 0, NULL), DAT_SUCCESS);
	expect_event("cr_accept/after-refusals-established", next(p.conn_evd).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_event("cr_accept/after-refusals-requester-established", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_ESTABLISHED);
	/* "Use of the handle of the destroyed cr_handle in any consequent operation fails." */
	expect_ret("cr_accept/destroyed-cr-query", dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR));
	expect_ret("cr_accept/destroyed-cr-reject", dat_cr_reject(cr, 0, NULL),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR));
	expect_ret("cr_accept/destroyed-cr-handoff", dat_cr_handoff(cr, q),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR));
	expect_state("cr_accept/destroyed-cr-leaves-the-connection", p.ep, DAT_EP_STATE_CONNECTED);
	dat_rsp_free(rsp);
	dat_psp_free(psp);
	if (tcp_ia)
		dat_ia_close(tcp_ia, DAT_CLOSE_ABRUPT_FLAG);
	if (other_ia)
		dat_ia_close(other_ia, DAT_CLOSE_ABRUPT_FLAG);
	close_side(&a);
	close_side(&p);
}

/* USAGE: "If the Consumer does not care about posting RDMA Read operations or remote RDMA Read
 * operations on the connection, it can set the two outstanding RDMA Read attribute values to
 * 0." Both sides' EPs so set connect. */
static void no_rdma_reads_case(void)
{
	struct side a, p;
	DAT_EP_PARAM param;
	struct side *s[2] = { &a, &p };

	open_side(&a);
	open_side(&p);
	for (int i = 0; i < 2; i++) {
		must(dat_ep_query(s[i]->ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
		param.ep_attr.max_rdma_read_in = 0;
		param.ep_attr.max_rdma_read_out = 0;
		must(dat_ep_free(s[i]->ep), "dat_ep_free");
		must(dat_ep_create(s[i]->ia, s[i]->pz, s[i]->recv_evd, s[i]->req_evd, s[i]->conn_evd, &param.ep_attr,
				   &s[i]->ep), "dat_ep_create");
	}
	{
		DAT_PSP_HANDLE psp;
		DAT_CR_HANDLE cr;
		must(connect_to(&a, listen_any(&p, &psp), NULL, WAIT_US), "dat_ep_connect");
		cr = next_cr(p.cr_evd, NULL);
		expect_ret("cr_accept/no-rdma-reads", dat_cr_accept(cr, p.ep, 0, NULL), DAT_SUCCESS);
		expect_event("cr_accept/no-rdma-reads-established", next(p.conn_evd).event_number,
			     DAT_CONNECTION_EVENT_ESTABLISHED);
		dat_psp_free(psp);
	}
	close_side(&a);
	close_side(&p);
}

/* "The operation is asynchronous": the accept returns with the EP COMPLETION_PENDING while the
 * requester has not confirmed. "If the Provider cannot complete the Connection establishment,
 * the connection is not established and the Consumer is notified through a Connection Event
 * of type DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR on the connect_evd of the local
 * Endpoint. ... If Connection is not established, Endpoint transitions into Disconnected state
 * and all posted Recv DTOs are flushed to its recv_evd_handle." The requester is a process
 * that connects, is stopped once its request has arrived (so it cannot confirm the accept), and
 * is killed after the accept. It is forked before this process makes any DAT call (verbs state
 * copied by fork is unusable in a child) and learns the qualifier through a pipe. */
static void accept_completion_error_case(void)
{
	struct side p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL q;
	DAT_CR_HANDLE cr;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;
	int to_child[2], status;
	pid_t child;

	if (pipe(to_child))
		exit(2);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		struct side a;
		close(to_child[1]);
		if (read(to_child[0], &q, sizeof(q)) != (ssize_t)sizeof(q))
			_exit(1);
		open_side(&a);
		connect_to(&a, q, NULL, WAIT_US);
		pause();
		_exit(0);
	}
	close(to_child[0]);
	open_side(&p);
	q = listen_any(&p, &psp);
	if (write(to_child[1], &q, sizeof(q)) != (ssize_t)sizeof(q))
		exit(2);
	cr = next_cr(p.cr_evd, NULL);
	/* The requester stops: it can no longer answer the accept. */
	kill(child, SIGSTOP);
	waitpid(child, &status, WUNTRACED);
	l = iov(&p, 0, 64);
	c.as_64 = 21;
	must(dat_ep_post_recv(p.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	expect_ret("cr_accept/asynchronous", dat_cr_accept(cr, p.ep, 0, NULL), DAT_SUCCESS);
	expect_state("cr_accept/completion-pending", p.ep, DAT_EP_STATE_COMPLETION_PENDING);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	e = next(p.conn_evd);
	expect_true("cr_accept/accept-completion-error",
		    e.event_number == DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR &&
			    e.event_data.connect_event_data.ep_handle == p.ep,
		    "DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR for the accepting EP");
	expect_state("cr_accept/accept-completion-error-disconnected", p.ep, DAT_EP_STATE_DISCONNECTED);
	e = next(p.recv_evd);
	expect_true("cr_accept/accept-completion-error-flushes-receives",
		    e.event_number == DAT_DTO_COMPLETION_EVENT &&
			    e.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
			    e.event_data.dto_completion_event_data.user_cookie.as_64 == 21,
		    "the posted receive completes DAT_DTO_ERR_FLUSHED (cookie 21)");
	dat_psp_free(psp);
	close_side(&p);
}

int main(void)
{
	watchdog(150);
	/* First: its requester is forked before this process makes any DAT call. */
	accept_completion_error_case();
	rsp_accept_cases();
	unsatisfying_ep_cases();
	no_rdma_reads_case();
	return check_failures ? 1 : 0;
}
