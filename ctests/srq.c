/*
 * Shared receive queues and their EPs: dat_srq_create, dat_srq_post_recv, dat_srq_query,
 * dat_srq_resize, dat_srq_set_lw, dat_ep_create_with_srq, dat_ep_recv_query,
 * dat_ep_set_watermark. For each, a garbage handle, an invalid parameter on an otherwise valid
 * call, and a success. No connection: the SRQ EP stays UNCONNECTED.
 */
#include "check.h"

#define BUF 4096

#define H(name, call, sub) expect_ret("srq/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))

static unsigned char buf[BUF], other_buf[256];

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd;
	DAT_PZ_HANDLE pz, other_pz;
	DAT_EP_HANDLE plain_ep, ep = DAT_HANDLE_NULL, tmp_ep;
	DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL, tmp;
	DAT_LMR_HANDLE lmr, other_lmr;
	DAT_LMR_CONTEXT lmr_ctx, other_ctx;
	DAT_REGION_DESCRIPTION region;
	DAT_SRQ_ATTR attr;
	DAT_SRQ_PARAM sp;
	DAT_EP_PARAM ep_param;
	DAT_EP_ATTR ep_attr;
	DAT_LMR_TRIPLET t;
	DAT_DTO_COOKIE c;
	DAT_COUNT nbufs, span;

	watchdog(60);
	c.as_64 = 7;
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "srq: cannot open %s\n", ia_name());
		return 2;
	}
	must(dat_pz_create(ia, &pz), "dat_pz_create");
	must(dat_pz_create(ia, &other_pz), "dat_pz_create");
	must(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), "dat_evd_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), "dat_evd_create");
	region.for_va = buf;
	must(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
			    &lmr_ctx, NULL, NULL, NULL), "dat_lmr_create");
	region.for_va = other_buf;
	must(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(other_buf), other_pz, DAT_MEM_PRIV_ALL_FLAG,
			    DAT_VA_TYPE_VA, &other_lmr, &other_ctx, NULL, NULL, NULL), "dat_lmr_create");
	/* EP attributes for dat_ep_create_with_srq (which takes no NULL): a plain EP's. */
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &plain_ep), "dat_ep_create");
	must(dat_ep_query(plain_ep, DAT_EP_FIELD_ALL, &ep_param), "dat_ep_query");
	ep_attr = ep_param.ep_attr;

	/* dat_srq_create: "DAT_INVALID_HANDLE: Either ia_handle or pz_handle is an invalid DAT
	 * handle." */
	memset(&attr, 0, sizeof(attr));
	attr.max_recv_dtos = 8;
	attr.max_recv_iov = 2;
	attr.low_watermark = DAT_SRQ_LW_DEFAULT;
	H("srq_create-garbage-ia", dat_srq_create(g, pz, &attr, &tmp), DAT_INVALID_HANDLE_IA);
	H("srq_create-garbage-pz", dat_srq_create(ia, g, &attr, &tmp), DAT_INVALID_HANDLE_PZ);
	/* "DAT_INVALID_PARAMETER: ... one of the requested SRQ attributes was invalid". */
	attr.max_recv_dtos = 0;
	expect_type("srq/srq_create-zero-max-recv-dtos", dat_srq_create(ia, pz, &attr, &tmp), DAT_INVALID_PARAMETER);
	attr.max_recv_dtos = -4;
	expect_type("srq/srq_create-negative-max-recv-dtos", dat_srq_create(ia, pz, &attr, &tmp),
		    DAT_INVALID_PARAMETER);
	attr.max_recv_dtos = 8;
	expect_type("srq/srq_create-null-attr", dat_srq_create(ia, pz, NULL, &tmp), DAT_INVALID_PARAMETER);
	expect_type("srq/srq_create-null-out", dat_srq_create(ia, pz, &attr, NULL), DAT_INVALID_PARAMETER);
	{
		DAT_IA_ATTR ia_attr;
		must(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), "dat_ia_query");
		/* An IA whose dat_ia_query reports no SRQ (max_srqs 0) makes none: the rest of
		 * this area needs one. */
		if (ia_attr.max_srqs == 0) {
			expect_type("srq/srq_create-none-reported", dat_srq_create(ia, pz, &attr, &srq),
				    DAT_NOT_IMPLEMENTED);
			return check_failures ? 1 : 0;
		}
	}
	expect_ret("srq/srq_create", dat_srq_create(ia, pz, &attr, &srq), DAT_SUCCESS);
	if (srq == DAT_HANDLE_NULL)
		must(DAT_ERROR(DAT_INTERNAL_ERROR, 0), "dat_srq_create");

	/* dat_srq_post_recv: "DAT_INVALID_HANDLE: The srq_handle argument is an invalid DAT
	 * handle." */
	t = triplet(lmr_ctx, buf, 0, 64);
	H("srq_post_recv-garbage", dat_srq_post_recv(g, 1, &t, c), DAT_INVALID_HANDLE_SRQ);
	/* "DAT_INVALID_PARAMETER: ... one of the IOV segments pointed to a memory outside its
	 * LMR." */
	t = triplet(lmr_ctx, buf, BUF - 8, 64);
	expect_type("srq/srq_post_recv-segment-outside-lmr", dat_srq_post_recv(srq, 1, &t, c), DAT_INVALID_PARAMETER);
	/* "DAT_PROTECTION_VIOLATION: ... Protection Zone mismatch between an LMR of one of the
	 * local_iov segments and the SRQ." */
	t = triplet(other_ctx, other_buf, 0, 64);
	expect_type("srq/srq_post_recv-lmr-of-another-pz", dat_srq_post_recv(srq, 1, &t, c), DAT_PROTECTION_VIOLATION);
	/* "DAT_PRIVILEGES_VIOLATION: ... One of the LMRs used in local_iov was either invalid". */
	t = triplet(lmr_ctx ^ 0x5a5a5a5a, buf, 0, 64);
	expect_type("srq/srq_post_recv-unknown-lmr", dat_srq_post_recv(srq, 1, &t, c), DAT_PRIVILEGES_VIOLATION);
	t = triplet(lmr_ctx, buf, 0, 64);
	expect_ret("srq/srq_post_recv", dat_srq_post_recv(srq, 1, &t, c), DAT_SUCCESS);
	/* "num_segments ... Can be 0 for receiving a zero-size message. local_iov ... Can be NULL
	 * for receiving a zero-size message." */
	expect_ret("srq/srq_post_recv-zero-size", dat_srq_post_recv(srq, 0, NULL, c), DAT_SUCCESS);

	/* dat_srq_query: "DAT_INVALID_HANDLE: The srq_handle argument is an invalid DAT handle." */
	H("srq_query-garbage", dat_srq_query(g, DAT_SRQ_FIELD_ALL, &sp), DAT_INVALID_HANDLE_SRQ);
	/* "DAT_INVALID_PARAMETER: The srq_param_mask argument is invalid." */
	expect_type("srq/srq_query-unknown-mask-bits", dat_srq_query(srq, 0x100000, &sp), DAT_INVALID_PARAMETER);
	memset(&sp, 0, sizeof(sp));
	expect_ret("srq/srq_query", dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp), DAT_SUCCESS);
	/* "the created SRQ will have the queue size at least max_recv_dtos"; two buffers posted
	 * (a count may be DAT_VALUE_UNKNOWN). */
	expect_true("srq/srq_query-values",
		    sp.ia_handle == ia && sp.pz_handle == pz && sp.max_recv_dtos >= 8 &&
			    (sp.available_dto_count == 2 || sp.available_dto_count == DAT_VALUE_UNKNOWN),
		    "the IA, the PZ, max_recv_dtos >= 8, 2 available");

	/* dat_srq_set_lw: "DAT_INVALID_HANDLE: The srq_handle argument is an invalid DAT handle." */
	H("srq_set_lw-garbage", dat_srq_set_lw(g, 1), DAT_INVALID_HANDLE_SRQ);
	/* "DAT_INVALID_PARAMETER: Invalid parameter; the value of low_watermark is exceeds the
	 * value of max_recv_dtos." */
	expect_type("srq/srq_set_lw-above-max-recv-dtos", dat_srq_set_lw(srq, sp.max_recv_dtos + 1),
		    DAT_INVALID_PARAMETER);
	/* dat_srq_set_lw: "DAT_SUCCESS: The operation was successful." (4 is within max_recv_dtos) */
	expect_ret("srq/srq_set_lw", dat_srq_set_lw(srq, 4), DAT_SUCCESS);
	/* "If the new low watermark value is below the current number of free Receive DTOs posted
	 * to the SRQ, an asynchronous event will be generated immediately" (two are posted, below
	 * 4): the async EVD's event names the SRQ with reason DAT_SRQ_LOW_WATERMARK_EVENT. */
	{
		DAT_EVENT e;
		DAT_COUNT more;
		memset(&e, 0, sizeof(e));
		expect_true("srq/srq_set_lw-event-when-below",
			    dat_evd_wait(async_evd, 1000000 * time_scale(), 1, &e, &more) == DAT_SUCCESS &&
				    e.event_data.asynch_error_event_data.dat_handle == srq &&
				    e.event_data.asynch_error_event_data.reason == DAT_SRQ_LOW_WATERMARK_EVENT,
			    "an async event of the SRQ, reason DAT_SRQ_LOW_WATERMARK_EVENT");
	}

	/* dat_srq_resize: "DAT_INVALID_HANDLE: The srq_handle argument is an invalid DAT handle." */
	H("srq_resize-garbage", dat_srq_resize(g, 16), DAT_INVALID_HANDLE_SRQ);
	/* "DAT_INVALID_PARAMETER: The srq_max_recv_dto argument is invalid." */
	expect_type("srq/srq_resize-negative", dat_srq_resize(srq, -1), DAT_INVALID_PARAMETER);
	/* "If the requested srq_max_recv_dto is below the SRQ low watermark, the operation
	 * returns DAT_INVALID_STATE" (the watermark is 4). */
	expect_type("srq/srq_resize-below-low-watermark", dat_srq_resize(srq, 3), DAT_INVALID_STATE);
	dat_srq_set_lw(srq, DAT_SRQ_LW_DEFAULT);
	/* "If the number of outstanding Recv buffers on the SRQ is larger then the requested
	 * srq_max_recv_dto, the operation returns DAT_INVALID_STATE" (two are posted). */
	expect_type("srq/srq_resize-below-outstanding", dat_srq_resize(srq, 1), DAT_INVALID_STATE);
	expect_ret("srq/srq_resize", dat_srq_resize(srq, 16), DAT_SUCCESS);

	/* dat_ep_create_with_srq: "DAT_INVALID_HANDLE: Invalid DAT handle." for each handle. */
	H("ep_create_with_srq-garbage-ia", dat_ep_create_with_srq(g, pz, dto_evd, dto_evd, conn_evd, srq, &ep_attr,
								  &tmp_ep), DAT_INVALID_HANDLE_IA);
	H("ep_create_with_srq-garbage-pz", dat_ep_create_with_srq(ia, g, dto_evd, dto_evd, conn_evd, srq, &ep_attr,
								  &tmp_ep), DAT_INVALID_HANDLE_PZ);
	H("ep_create_with_srq-garbage-recv-evd", dat_ep_create_with_srq(ia, pz, g, dto_evd, conn_evd, srq, &ep_attr,
									&tmp_ep), DAT_INVALID_HANDLE_EVD_RECV);
	H("ep_create_with_srq-garbage-request-evd", dat_ep_create_with_srq(ia, pz, dto_evd, g, conn_evd, srq,
									   &ep_attr, &tmp_ep),
	  DAT_INVALID_HANDLE_EVD_REQUEST);
	H("ep_create_with_srq-garbage-connect-evd", dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, g, srq,
									   &ep_attr, &tmp_ep),
	  DAT_INVALID_HANDLE_EVD_CONN);
	H("ep_create_with_srq-garbage-srq", dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, conn_evd, g, &ep_attr,
								   &tmp_ep), DAT_INVALID_HANDLE_SRQ);
	/* "ep_attributes ... Cannot be NULL." and "Consumer can not specify NULL for
	 * ep_attributes": DAT_INVALID_PARAMETER. */
	tmp_ep = DAT_HANDLE_NULL;
	expect_type("srq/ep_create_with_srq-null-attr",
		    dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, conn_evd, srq, NULL, &tmp_ep),
		    DAT_INVALID_PARAMETER);
	if (tmp_ep != DAT_HANDLE_NULL)
		dat_ep_free(tmp_ep); /* created after all: it would hold the SRQ */
	expect_type("srq/ep_create_with_srq-null-out",
		    dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, conn_evd, srq, &ep_attr, NULL),
		    DAT_INVALID_PARAMETER);
	expect_ret("srq/ep_create_with_srq",
		   dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, conn_evd, srq, &ep_attr, &ep), DAT_SUCCESS);
	if (ep == DAT_HANDLE_NULL)
		must(DAT_ERROR(DAT_INTERNAL_ERROR, 0), "dat_ep_create_with_srq");
	/* "The Endpoint is created in the Unconnected state." */
	expect_state("srq/ep_create_with_srq-unconnected", ep, DAT_EP_STATE_UNCONNECTED);

	/* dat_ep_recv_query: "DAT_INVALID_HANDLE: The DAT handle ep_handle is invalid." Both
	 * out-pointers may be NULL ("If nbufs_allocated is not NULL ..."), so the man page leaves
	 * no parameter to make invalid. */
	H("ep_recv_query-garbage", dat_ep_recv_query(g, &nbufs, &span), DAT_INVALID_HANDLE_EP);
	nbufs = span = -100;
	expect_ret("srq/ep_recv_query", dat_ep_recv_query(ep, &nbufs, &span), DAT_SUCCESS);
	/* "The implementation must never report n buffers in a span that is less than n", or
	 * DAT_VALUE_UNKNOWN for either. */
	expect_true("srq/ep_recv_query-values",
		    (nbufs == DAT_VALUE_UNKNOWN || nbufs >= 0) && (span == DAT_VALUE_UNKNOWN || span >= 0) &&
			    (nbufs == DAT_VALUE_UNKNOWN || span == DAT_VALUE_UNKNOWN || span >= nbufs),
		    "counts >= 0 (or DAT_VALUE_UNKNOWN), span >= nbufs");

	/* "When an EP does not use SRQ, a buffer is allocated as soon as it is posted to the EP":
	 * two receives posted to the plain EP are two buffers allocated, spanning two (or
	 * DAT_VALUE_UNKNOWN; or DAT_MODEL_NOT_SUPPORTED, "When the Provider does not support both
	 * of these counts"). */
	t = triplet(lmr_ctx, buf, 0, 64);
	must(dat_ep_post_recv(plain_ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	t = triplet(lmr_ctx, buf, 64, 64);
	must(dat_ep_post_recv(plain_ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	{
		DAT_RETURN r;
		nbufs = span = -100;
		r = dat_ep_recv_query(plain_ep, &nbufs, &span);
		expect_true("srq/ep_recv_query-plain-ep-posted",
			    (r == DAT_SUCCESS && (nbufs == 2 || nbufs == DAT_VALUE_UNKNOWN) &&
			     (span == 2 || span == DAT_VALUE_UNKNOWN)) ||
				    DAT_GET_TYPE(r) == DAT_MODEL_NOT_SUPPORTED,
			    "2 buffers spanning 2 (or DAT_VALUE_UNKNOWN, or DAT_MODEL_NOT_SUPPORTED)");
	}

	/* dat_ep_set_watermark: "DAT_INVALID_HANDLE: The ep_handle argument is an invalid DAT
	 * handle." */
	H("ep_set_watermark-garbage", dat_ep_set_watermark(g, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE),
	  DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_PARAMETER: One of the parameters is invalid.": a negative count that is not
	 * DAT_WATERMARK_INFINITE. */
	expect_type("srq/ep_set_watermark-negative-soft", dat_ep_set_watermark(ep, -5, DAT_WATERMARK_INFINITE),
		    DAT_INVALID_PARAMETER);
	expect_type("srq/ep_set_watermark-negative-hard", dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, -5),
		    DAT_INVALID_PARAMETER);
	/* "The operation is supported for all states of Endpoint.": the default, no watermark,
	 * always; finite ones where the provider supports them ("DAT_MODEL_NOT_SUPPORTED: ... The
	 * Provider does not support EP Soft or Hard High Watermarks"). */
	expect_ret("srq/ep_set_watermark", dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE),
		   DAT_SUCCESS);
	{
		DAT_RETURN r = dat_ep_set_watermark(ep, 4, 8);
		expect_true("srq/ep_set_watermark-finite", r == DAT_SUCCESS || DAT_GET_TYPE(r) == DAT_MODEL_NOT_SUPPORTED,
			    "DAT_SUCCESS or DAT_MODEL_NOT_SUPPORTED");
	}

	expect_ret("srq/ep_free", dat_ep_free(ep), DAT_SUCCESS);
	expect_ret("srq/srq_free", dat_srq_free(srq), DAT_SUCCESS);
	dat_ep_free(plain_ep);
	dat_lmr_free(other_lmr);
	dat_lmr_free(lmr);
	dat_evd_free(conn_evd);
	dat_evd_free(dto_evd);
	dat_pz_free(other_pz);
	dat_pz_free(pz);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
