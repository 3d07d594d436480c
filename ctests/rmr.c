/*
 * RMRs over a connection: dat_rmr_bind on a connected EP (its completion, a new context on each
 * bind), remote access through the bound RMR to a region whose LMR grants none, a send with
 * invalidate that unbinds it, dat_ep_post_rdma_read_to_rmr, and a context that is no longer
 * bound failing on the initiator. Two IAs of one process play the two sides.
 */
#include "side.h"

static unsigned char window_buf[BUF];

/* Binds rmr to len bytes at offset of the target region for the EP; the context, or 0 when the
 * bind or its completion failed (each checked as case `name`). */
static DAT_RMR_CONTEXT bind_rmr(const char *name, struct side *s, DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr,
			    DAT_LMR_CONTEXT lctx, unsigned char *base, int offset, int len, DAT_MEM_PRIV_FLAGS privs,
			    DAT_UINT64 cookie)
{
	DAT_LMR_TRIPLET t = triplet(lctx, base, offset, len);
	DAT_RMR_CONTEXT ctx = 0;
	DAT_RMR_COOKIE c;
	DAT_EVENT e;
	DAT_RETURN r;
	char case_name[96];
	c.as_64 = cookie;
	r = dat_rmr_bind(rmr, lmr, &t, privs, DAT_VA_TYPE_VA, s->ep, c, DAT_COMPLETION_DEFAULT_FLAG, &ctx);
	snprintf(case_name, sizeof(case_name), "rmr/%s", name);
	expect_ret(case_name, r, DAT_SUCCESS);
	if (r != DAT_SUCCESS)
		return 0;
	/* "The Consumer is notified of the completion of this operation through a rmr_bind
	 * Completion event on the request_evd_handle of the specified Endpoint". */
	e = next(s->req_evd);
	snprintf(case_name, sizeof(case_name), "rmr/%s-completion", name);
	expect_true(case_name,
		    e.event_number == DAT_RMR_BIND_COMPLETION_EVENT &&
			    e.event_data.rmr_completion_event_data.rmr_handle == rmr &&
			    e.event_data.rmr_completion_event_data.user_cookie.as_64 == cookie &&
			    e.event_data.rmr_completion_event_data.status == DAT_RMR_BIND_SUCCESS,
		    "DAT_RMR_BIND_COMPLETION_EVENT: the RMR, the cookie, DAT_RMR_BIND_SUCCESS");
	return e.event_number == DAT_RMR_BIND_COMPLETION_EVENT ? ctx : 0;
}

/* Posts an RDMA write of a's first len bytes to context ctx at offset of the target region, and
 * returns its completion status. */
static DAT_DTO_COMPLETION_STATUS write_through(struct side *a, DAT_RMR_CONTEXT ctx, int offset, int len)
{
	DAT_LMR_TRIPLET l = iov(a, 0, len);
	DAT_RMR_TRIPLET r;
	DAT_DTO_COOKIE c;
	DAT_EVENT e;
	r.rmr_context = ctx;
	r.virtual_address = (DAT_VADDR)(uintptr_t)(window_buf + offset);
	r.segment_length = (DAT_VLEN)len;
	c.as_64 = 99;
	if (dat_ep_post_rdma_write(a->ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS)
		return (DAT_DTO_COMPLETION_STATUS)-1;
	e = next(a->req_evd);
	if (e.event_number != DAT_DTO_COMPLETION_EVENT)
		return (DAT_DTO_COMPLETION_STATUS)-1;
	return e.event_data.dto_completion_event_data.status;
}

int main(void)
{
	struct side a, p;
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_HANDLE wlmr;
	DAT_LMR_CONTEXT wctx;
	DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL, own = DAT_HANDLE_NULL;
	DAT_RMR_CONTEXT first, second, target;
	DAT_RMR_PARAM rp;
	DAT_EVENT e;
	DAT_DTO_COOKIE c;

	watchdog(120);
	connected_pair(&a, &p);
	/* The target region: registered for local access only, so only an RMR exposes it. */
	region.for_va = window_buf;
	must(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, p.pz,
			    DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &wlmr, &wctx, NULL,
			    NULL, NULL),
	     "dat_lmr_create");
	must(dat_rmr_create(p.pz, &rmr), "dat_rmr_create");

	/* "binds the RMR to the specified memory region within an LMR and provides the new
	 * rmr_context value". */
	first = bind_rmr("bind-connected", &p, rmr, wlmr, wctx, window_buf, 1024, 256,
		     DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 1);
	memset(&rp, 0, sizeof(rp));
	expect_true("rmr/query-bound",
		    dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp) == DAT_SUCCESS && rp.rmr_context == first &&
			    rp.lmr_triplet.segment_length == 256 &&
			    rp.lmr_triplet.virtual_address == (DAT_VADDR)(uintptr_t)(window_buf + 1024),
		    "the new rmr_context and the bound triplet");
	/* The peer's RDMA through the RMR reaches the region its LMR does not expose. */
	memcpy(a.buf, "window", 6);
	expect_true("rmr/write-through-bound-rmr",
		    write_through(&a, first, 1100, 6) == DAT_DTO_SUCCESS && !memcmp(window_buf + 1100, "window", 6),
		    "DAT_DTO_SUCCESS, the bytes in the region");

	/* dat_ep_post_rdma_read_to_rmr: the data read lands in an RMR of the reader's. */
	must(dat_rmr_create(a.pz, &own), "dat_rmr_create");
	target = bind_rmr("bind-read-target", &a, own, a.lmr, a.lmr_ctx, a.buf, 2048, 256, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 2);
	memcpy(window_buf + 1200, "fetched", 7);
	{
		DAT_RMR_TRIPLET into, from;
		into.rmr_context = target;
		into.virtual_address = (DAT_VADDR)(uintptr_t)(a.buf + 2100);
		into.segment_length = 7;
		from.rmr_context = first;
		from.virtual_address = (DAT_VADDR)(uintptr_t)(window_buf + 1200);
		from.segment_length = 7;
		c.as_64 = 3;
		expect_ret("rmr/ep_post_rdma_read_to_rmr", dat_ep_post_rdma_read_to_rmr(a.ep, &into, c, &from,
											DAT_COMPLETION_DEFAULT_FLAG),
			   DAT_SUCCESS);
		e = next(a.req_evd);
		expect_true("rmr/ep_post_rdma_read_to_rmr-lands",
			    e.event_number == DAT_DTO_COMPLETION_EVENT &&
				    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
				    !memcmp(a.buf + 2100, "fetched", 7),
			    "DAT_DTO_SUCCESS, the bytes in the reader's RMR");
	}

	/* "generates a new rmr_context" on each bind. */
	second = bind_rmr("rebind", &p, rmr, wlmr, wctx, window_buf, 2048, 64, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 4);
	expect_true("rmr/rebind-new-context", second != 0 && second != first, "a context other than the first");
	/* A send with invalidate of the RMR's context: the message lands, and the RMR is unbound,
	 * so a write through its context fails. */
	{
		DAT_LMR_TRIPLET rv = iov(&p, 0, 64), l = iov(&a, 0, 8);
		c.as_64 = 5;
		must(dat_ep_post_recv(p.ep, 1, &rv, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
		c.as_64 = 6;
		expect_ret("rmr/ep_post_send_with_invalidate",
			   dat_ep_post_send_with_invalidate(a.ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, second),
			   DAT_SUCCESS);
		e = next(p.recv_evd);
		expect_true("rmr/ep_post_send_with_invalidate-lands",
			    e.event_number == DAT_DTO_COMPLETION_EVENT &&
				    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
				    e.event_data.dto_completion_event_data.transfered_length == 8,
			    "the receive completes with the 8 bytes");
		e = next(a.req_evd);
	}
	/* The invalidated context reaches nothing: the initiator's write through it fails (as
	 * "Any RDMA DTO that uses the previous value of rmr_context after the dat_rmr_bind() is
	 * completed fail and report a protection violation"). */
	memset(window_buf + 2048, 0, 8);
	expect_true("rmr/invalidated-context-fails",
		    write_through(&a, second, 2048, 6) == DAT_DTO_ERR_REMOTE_ACCESS && window_buf[2048] == 0,
		    "DAT_DTO_ERR_REMOTE_ACCESS, nothing written");
	dat_rmr_free(own);
	dat_rmr_free(rmr);
	close_side(&a);
	close_side(&p);
	return check_failures ? 1 : 0;
}
