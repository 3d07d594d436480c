/*
 * dat_ep_post_send(3DAT), sentence by sentence, on whichever IA the suite runs (DAT_IA).
 *
 * Sentences covered elsewhere (not repeated here):
 *   ep_handle invalid -> DAT_INVALID_HANDLE ............ connect.c ep_post_send/null-ep
 *   INVALID_STATE (UNCONNECTED) ........................ connect.c ep_post_send/unconnected
 *   success, send and receive completions .............. connect.c ep_post_send/success, send-completion,
 *                                                         receive-completion
 *   "num_segments ... Can be 0", "local_iov ... Can be NULL" connect.c ep_post_send/zero-length(-arrives)
 *   "returns successfully ... DISCONNECTED ... immediately flushed"
 *                                                        connect.c ep_post_send/disconnected(-flushed)
 *   INVALID_PARAMETER "segments pointed to a memory outside its LMR"
 *                                                        connect.c ep_post_send/segment-outside-lmr
 *   PRIVILEGES_VIOLATION "One of the LMRs ... was invalid"
 *                                                        connect.c ep_post_send/unknown-lmr-context
 *   PROTECTION_VIOLATION "Protection Zone mismatch" .... connect.c ep_post_send/lmr-of-another-pz
 *   UNSIGNALLED "only valid if the Endpoint Request Completion Flags ... Otherwise INVALID_PARAMETER"
 *                                                        connect.c ep_post_send/unsignalled-not-allowed,
 *                                                         ep_post_send/unsignalled(-is-received)
 *   a completion flag no flag has (0x80) ............... connect.c ep_post_send/unknown-completion-flag
 *   a user_cookie returned in the completion ........... connect.c ep_post_send/send-completion (43)
 *   DISCONNECT_PENDING's posting rules ................. the graceful-disconnect cases (dat_ep_disconnect)
 * Not a case: PRIVILEGES_VIOLATION for an LMR "that did not have the local read privileges": every
 * region may be read locally here, as with verbs and OpenFabrics (objects/lmr.rs, check_access).
 * Here: the rest of the page, and the points it leaves open (decided as OpenFabrics' library does).
 */
#include "side.h"

#include <sys/mman.h>

/* An EP of `attr` on side s, in place of its own. */
static void replace_ep(struct side *s, DAT_EP_ATTR *attr)
{
	dat_ep_free(s->ep);
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, attr, &s->ep), "dat_ep_create");
}

static DAT_EP_ATTR ep_attr_of(DAT_EP_HANDLE ep)
{
	DAT_EP_PARAM param;
	must(dat_ep_query(ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	return param.ep_attr;
}

static DAT_IA_ATTR ia_attr_of(DAT_IA_HANDLE ia)
{
	DAT_IA_ATTR a;
	must(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL), "dat_ia_query");
	return a;
}

/* "The num_segments parameter specifies the number of segments in the local_iov. The local_iov
 * segments are traversed in the I/O Vector order": a send of as many segments as the IA reports
 * (max_iov_segments_per_dto, on an EP that asks for them all) arrives in segment order; one
 * segment more is "DAT_INVALID_PARAMETER: Invalid parameter" (OpenFabrics: the device's EINVAL). */
static void segments(void)
{
	struct side a, p;
	DAT_IA_ATTR ia;
	DAT_EP_ATTR attr;
	DAT_LMR_TRIPLET l[65], r;
	int n, i, in_order = 1;

	open_side(&a);
	open_side(&p);
	ia = ia_attr_of(a.ia);
	n = ia.max_iov_segments_per_dto;
	expect_true("ep_post_send/max-iov-reported", n >= 1 && n <= 64, "1..64 segments per DTO reported");
	if (n < 1 || n > 64) {
		close_side(&a);
		close_side(&p);
		return;
	}
	attr = ep_attr_of(a.ep);
	attr.max_request_iov = n;
	attr.max_recv_iov = n;
	replace_ep(&a, &attr);
	expect_true("ep_post_send/max-iov-ep-attribute", ep_attr_of(a.ep).max_request_iov == n,
		    "the EP keeps max_request_iov = the IA's max_iov_segments_per_dto");
	/* An EP asking for more than the IA carries is refused (dat_ep_create: INVALID_PARAMETER). */
	{
		DAT_EP_HANDLE more;
		attr.max_request_iov = n + 1;
		expect_type("ep_post_send/max-iov-ep-beyond-ia",
			    dat_ep_create(a.ia, a.pz, a.recv_evd, a.req_evd, a.conn_evd, &attr, &more),
			    DAT_INVALID_PARAMETER);
	}
	connect_opened(&a, &p);
	/* Segment i is the byte at n-1-i: in order, the message is the bytes reversed. */
	for (i = 0; i < n; i++) {
		a.buf[i] = (unsigned char)(i + 1);
		l[i] = iov(&a, n - 1 - i, 1);
	}
	r = iov(&p, 0, 128);
	memset(p.buf, 0, 128);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(1), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	expect_ret("ep_post_send/max-iov-segments", dat_ep_post_send(a.ep, n, l, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
		   DAT_SUCCESS);
	expect_true("ep_post_send/max-iov-segments-complete", dto_ok(next(a.req_evd), 2), "DAT_DTO_SUCCESS, cookie 2");
	for (i = 0; i < n; i++)
		in_order &= p.buf[i] == (unsigned char)(n - i);
	expect_true("ep_post_send/iov-order", dto_ok(next(p.recv_evd), 1) && in_order,
		    "the bytes in segment order");
	l[n] = iov(&a, 0, 1);
	expect_type("ep_post_send/max-iov-plus-one",
		    dat_ep_post_send(a.ep, n + 1, l, cookie(3), DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_PARAMETER);
	close_side(&a);
	close_side(&p);
}

/* The EP's max_message_size (page silent on a larger send; OpenFabrics leaves it to the device,
 * which fails it at completion): the EP reports the transport's largest message whatever the
 * consumer asked (OpenFabrics' own tests ask 0 and send more), and a send above it is refused
 * at the post, "DAT_INVALID_PARAMETER: Invalid parameter". Made of the IA's most segments over
 * one region, each repeating it (a read of the same bytes again). */
static void message_size(void)
{
	struct side a, p;
	DAT_IA_ATTR ia;
	DAT_EP_ATTR attr;
	DAT_LMR_TRIPLET l[64];
	DAT_LMR_HANDLE big_lmr;
	DAT_LMR_CONTEXT big_ctx;
	DAT_REGION_DESCRIPTION region;
	DAT_COUNT n;
	size_t each;
	void *big;
	int i;

	open_side(&a);
	open_side(&p);
	ia = ia_attr_of(a.ia);
	attr = ep_attr_of(a.ep);
	attr.max_message_size = 0;
	attr.max_request_iov = ia.max_iov_segments_per_dto;
	replace_ep(&a, &attr);
	expect_true("ep_post_send/max-message-size-reported",
		    ep_attr_of(a.ep).max_message_size == ia.max_message_size && ia.max_message_size > 0,
		    "the EP's max_message_size is the IA's (asked 0)");
	connect_opened(&a, &p);
	n = ia.max_iov_segments_per_dto;
	if (n < 1 || n > 64) {
		close_side(&a);
		close_side(&p);
		return;
	}
	each = ((size_t)ia.max_message_size / (size_t)n + 4096) & ~(size_t)4095;
	big = mmap(NULL, each, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big == MAP_FAILED) {
		report_true("ep_post_send/max-message-size-exceeded", 0, "no memory for the case");
		close_side(&a);
		close_side(&p);
		return;
	}
	region.for_va = big;
	must(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, each, a.pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
			    &big_lmr, &big_ctx, NULL, NULL, NULL),
	     "dat_lmr_create");
	for (i = 0; i < n; i++)
		l[i] = triplet(big_ctx, big, 0, (int)each);
	expect_type("ep_post_send/max-message-size-exceeded",
		    dat_ep_post_send(a.ep, n, l, cookie(4), DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_PARAMETER);
	dat_lmr_free(big_lmr);
	munmap(big, each);
	close_side(&a);
	close_side(&p);
}

/* Page silent on a segment of no bytes whose triplet is zeroed (lmr_context 0): OpenFabrics
 * hands it to the device, which moves nothing for it; skipped, the send carries the others. */
static void empty_segment(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l[3], r;

	connected_pair(&a, &p);
	memcpy(a.buf, "skipme", 6);
	memset(&l[0], 0, sizeof(l[0]));
	l[1] = iov(&a, 0, 6);
	memset(&l[2], 0, sizeof(l[2]));
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(5), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	expect_ret("ep_post_send/zeroed-empty-segment-skipped",
		   dat_ep_post_send(a.ep, 3, l, cookie(6), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
	{
		DAT_EVENT e = next(p.recv_evd);
		expect_true("ep_post_send/zeroed-empty-segment-arrives",
			    dto_ok(e, 5) && e.event_data.dto_completion_event_data.transfered_length == 6 &&
				    !memcmp(p.buf, "skipme", 6),
			    "6 bytes, the empty segments carry nothing");
	}
	expect_true("ep_post_send/zeroed-empty-segment-completes", dto_ok(next(a.req_evd), 6), "DAT_DTO_SUCCESS");
	close_side(&a);
	close_side(&p);
}

/* Completion flags 0x10 (DAT_COMPLETION_EVD_THRESHOLD_FLAG) and 0x20
 * (DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG): DAT 2.0's dat.h defines them in
 * DAT_COMPLETION_FLAGS (the first for an EP's receive attributes, the second for kDAPL); the page
 * does not list them for a send. OpenFabrics' post ignores every bit it does not act on: accepted
 * and ignored, the send completes as a default one (notified). DAT 1.2 has only the first. */
static void other_flags(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l, r;
	int messages = 1; /* sent; DAT 1.2 has not the second's flag */

	connected_pair(&a, &p);
	l = iov(&a, 0, 8);
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(7), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(8), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	expect_ret("ep_post_send/evd-threshold-flag-ignored",
		   dat_ep_post_send(a.ep, 1, &l, cookie(9), DAT_COMPLETION_EVD_THRESHOLD_FLAG), DAT_SUCCESS);
	expect_true("ep_post_send/evd-threshold-flag-completes", dto_ok(next(a.req_evd), 9), "DAT_DTO_SUCCESS, cookie 9");
	DAT20_ONLY("ep_post_send/lmr-invalidate-fence-flag-ignored", "DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG",
		   expect_ret("ep_post_send/lmr-invalidate-fence-flag-ignored",
			      dat_ep_post_send(a.ep, 1, &l, cookie(10), DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG),
			      DAT_SUCCESS);
		   messages++);
	DAT20_ONLY("ep_post_send/lmr-invalidate-fence-flag-completes", "DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG",
		   expect_true("ep_post_send/lmr-invalidate-fence-flag-completes", dto_ok(next(a.req_evd), 10),
			       "DAT_DTO_SUCCESS, cookie 10"));
	expect_true("ep_post_send/other-flags-received",
		    dto_ok(next(p.recv_evd), 7) && (messages == 1 || dto_ok(next(p.recv_evd), 8)),
		    "every message received");
	close_side(&a);
	close_side(&p);
}

/* "DAT_INSUFFICIENT_RESOURCES: The operation failed due to resource limitations": a send queue
 * full of sends that cannot complete (the peer has posted no receive) takes no more. */
static void full_queue(void)
{
	struct side a, p;
	DAT_EP_ATTR attr;
	DAT_LMR_TRIPLET l;
	int i, max, ok = 1;

	open_side(&a);
	open_side(&p);
	attr = ep_attr_of(a.ep);
	attr.max_request_dtos = 4;
	replace_ep(&a, &attr);
	connect_opened(&a, &p);
	max = ep_attr_of(a.ep).max_request_dtos;
	l = iov(&a, 0, 8);
	for (i = 0; i < max; i++)
		ok &= dat_ep_post_send(a.ep, 1, &l, cookie(20 + i), DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS;
	expect_true("ep_post_send/queue-fills", ok && max >= 1, "max_request_dtos sends accepted");
	expect_type("ep_post_send/queue-full", dat_ep_post_send(a.ep, 1, &l, cookie(99), DAT_COMPLETION_DEFAULT_FLAG),
		    DAT_INSUFFICIENT_RESOURCES);
	close_side(&a);
	close_side(&p);
}

/* "Barrier Fence ... Request for Barrier Fence" (dat.h: "Do not start processing until all
 * previous RDMA reads complete"): a send fenced after an RDMA read carries the bytes the read
 * brought into its buffer, and completes after it. */
static void fence(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l, r;
	DAT_RMR_TRIPLET remote;
	DAT_EVENT e1, e2;

	connected_pair(&a, &p);
	memcpy(p.buf + 200, "fenced!!", 8);
	memset(a.buf, 0, 8);
	r = iov(&p, 300, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(30), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	l = iov(&a, 0, 8);
	remote = rmr_triplet(p.rmr_ctx, p.buf + 200, 8);
	must(dat_ep_post_rdma_read(a.ep, 1, &l, cookie(31), &remote, DAT_COMPLETION_DEFAULT_FLAG),
	     "dat_ep_post_rdma_read");
	expect_ret("ep_post_send/barrier-fence",
		   dat_ep_post_send(a.ep, 1, &l, cookie(32), DAT_COMPLETION_BARRIER_FENCE_FLAG), DAT_SUCCESS);
	e1 = next(a.req_evd);
	e2 = next(a.req_evd);
	expect_true("ep_post_send/barrier-fence-order", dto_ok(e1, 31) && dto_ok(e2, 32),
		    "the read completes, then the send");
	expect_true("ep_post_send/barrier-fence-carries-read",
		    dto_ok(next(p.recv_evd), 30) && !memcmp(p.buf + 300, "fenced!!", 8),
		    "the send carries the bytes the read brought");
	close_side(&a);
	close_side(&p);
}

/* "DAT_INVALID_STATE: Endpoint was not in the DAT_EP_STATE_CONNECTED or DAT_EP_STATE_DISCONNECTED
 * state": an EP whose connect is pending. */
static void pending_state(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_LMR_TRIPLET l;
	DAT_EVENT e;

	open_side(&a);
	open_side(&p);
	must(connect_to(&a, listen_any(&p, &psp), NULL, WAIT_US), "dat_ep_connect");
	e = next(p.cr_evd); /* the request is there, not yet accepted: a's connect pends */
	l = iov(&a, 0, 8);
	expect_type("ep_post_send/active-connection-pending",
		    dat_ep_post_send(a.ep, 1, &l, cookie(40), DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_STATE);
	if (e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		dat_cr_reject(e.event_data.cr_arrival_event_data.cr_handle, 0, NULL);
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

/* "There is no requirement on the Consumer that the value user_cookie should be unique for each
 * DTO. The user_cookie is returned to the Consumer in the Completion event for the posted Send."
 * And the local_iov is the Consumer's again once the post returns: the provider reports
 * DAT_IOV_CONSUMER (iov_ownership_on_return), so the array may change before the send
 * completes. */
static void cookie_and_iov(void)
{
	struct side a, p;
	DAT_PROVIDER_ATTR pa;
	DAT_LMR_TRIPLET l, r;

	connected_pair(&a, &p);
	must(dat_ia_query(a.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa), "dat_ia_query");
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(60), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	r = iov(&p, 64, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(61), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	memcpy(a.buf, "cookie", 6);
	l = iov(&a, 0, 6);
	must(dat_ep_post_send(a.ep, 1, &l, cookie(7777), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	if (pa.iov_ownership_on_return == DAT_IOV_CONSUMER)
		memset(&l, 0xff, sizeof(l)); /* the array is ours again */
	l = iov(&a, 0, 6);
	must(dat_ep_post_send(a.ep, 1, &l, cookie(7777), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	expect_true("ep_post_send/cookie-not-unique", dto_ok(next(a.req_evd), 7777) && dto_ok(next(a.req_evd), 7777),
		    "both sends complete with cookie 7777");
	expect_true("ep_post_send/iov-ownership-consumer",
		    pa.iov_ownership_on_return == DAT_IOV_CONSUMER && dto_ok(next(p.recv_evd), 60) &&
			    !memcmp(p.buf, "cookie", 6),
		    "DAT_IOV_CONSUMER, the message intact after the array changed");
	next(p.recv_evd);
	/* "user_cookie: ... Can be NULL.": a zero cookie completes as zero. */
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(62), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	l = iov(&a, 0, 6);
	must(dat_ep_post_send(a.ep, 1, &l, cookie(0), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	expect_true("ep_post_send/null-cookie", dto_ok(next(a.req_evd), 0), "the send completes with cookie 0");
	next(p.recv_evd);
	close_side(&a);
	close_side(&p);
}

/* "Solicited Wait ... Request for notification completion for matching receive on the other side
 * of the connection": the flag is accepted and the message received. (What the receiver does with
 * it, for an EP whose recv_completion_flags ask for Solicited Wait: ctests/solicited.c.) */
static void solicited(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l, r;

	connected_pair(&a, &p);
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(71), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	l = iov(&a, 0, 8);
	expect_ret("ep_post_send/solicited-wait",
		   dat_ep_post_send(a.ep, 1, &l, cookie(73), DAT_COMPLETION_SOLICITED_WAIT_FLAG), DAT_SUCCESS);
	expect_true("ep_post_send/solicited-wait-completes", dto_ok(next(a.req_evd), 73), "DAT_DTO_SUCCESS, cookie 73");
	expect_true("ep_post_send/solicited-wait-received", dto_ok(next(p.recv_evd), 71), "the receive, cookie 71");
	close_side(&a);
	close_side(&p);
}

/* "Completion Suppression DAT_COMPLETION_SUPPRESS_FLAG 0x01 Suppress successful Completion.":
 * a suppressed send is received, and leaves no completion; the next, unsuppressed, does. */
static void suppression(void)
{
	struct side a, p;
	DAT_LMR_TRIPLET l, r;
	DAT_EVENT e;
	connected_pair(&a, &p);
	r = iov(&p, 0, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(80), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	r = iov(&p, 64, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(81), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	l = iov(&a, 0, 8);
	expect_ret("ep_post_send/suppress", dat_ep_post_send(a.ep, 1, &l, cookie(70), DAT_COMPLETION_SUPPRESS_FLAG),
		   DAT_SUCCESS);
	l = iov(&a, 8, 8);
	must(dat_ep_post_send(a.ep, 1, &l, cookie(71), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	expect_true("ep_post_send/suppress-received", dto_ok(next(p.recv_evd), 80) && dto_ok(next(p.recv_evd), 81),
		    "both sends received, in order");
	expect_true("ep_post_send/suppress-no-completion",
		    dto_ok(next(a.req_evd), 71) && dat_evd_dequeue(a.req_evd, &e) != DAT_SUCCESS,
		    "only the unsuppressed send's completion (cookie 71)");
	close_side(&a);
	close_side(&p);
}

int main(void)
{
	watchdog(170);
	segments();
	message_size();
	empty_segment();
	other_flags();
	full_queue();
	fence();
	pending_state();
	cookie_and_iov();
	solicited();
	suppression();
	return check_failures ? 1 : 0;
}
