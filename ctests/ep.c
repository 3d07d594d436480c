/*
 * EP calls beyond create/connect/post: dat_ep_modify, dat_ep_dup_connect,
 * dat_ep_common_connect, dat_ep_post_rdma_read_to_rmr, dat_ep_post_send_with_invalidate. For
 * each, a garbage handle, an invalid parameter on an otherwise valid call, and the state rule
 * its man page (or its DAT 1.2 sibling's) gives for an UNCONNECTED EP. No connection.
 */
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#define BUF 4096

#define H(name, call, sub) expect_ret("ep/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))

static unsigned char buf[BUF];

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd;
	DAT_PZ_HANDLE pz, other_pz;
	DAT_EP_HANDLE ep, ep2;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	DAT_REGION_DESCRIPTION region;
	DAT_EP_PARAM p, q;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET lr, rr;
	DAT_DTO_COOKIE c;
	struct sockaddr_in sin;
	char pd[8] = "private";

	watchdog(60);
	c.as_64 = 3;
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "ep: cannot open %s\n", ia_name());
		return 2;
	}
	must(dat_pz_create(ia, &pz), "dat_pz_create");
	must(dat_pz_create(ia, &other_pz), "dat_pz_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), "dat_evd_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), "dat_evd_create");
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep), "dat_ep_create");
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep2), "dat_ep_create");
	region.for_va = buf;
	must(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
			    &lmr_ctx, &rmr_ctx, NULL, NULL), "dat_lmr_create");
	ia_own_address(ia, &sin);

	/* dat_ep_modify: "DAT_INVALID_HANDLE: The ep_handle parameter is invalid." */
	memset(&p, 0, sizeof(p));
	must(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), "dat_ep_query");
	H("ep_modify-garbage", dat_ep_modify(g, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p), DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_PARAMETER: ... one of the requested Endpoint parameters or attributes was
	 * invalid, not supported, or cannot be modified." "Endpoint State: Cannot be modified." */
	expect_type("ep/ep_modify-ep-state", dat_ep_modify(ep, DAT_EP_FIELD_EP_STATE, &p), DAT_INVALID_PARAMETER);
	/* "Interface Adapter: Cannot be modified." */
	expect_type("ep/ep_modify-ia-handle", dat_ep_modify(ep, DAT_EP_FIELD_IA_HANDLE, &p), DAT_INVALID_PARAMETER);
	expect_type("ep/ep_modify-null-param", dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, NULL),
		    DAT_INVALID_PARAMETER);
	/* dat_ep_get_status names no invalid parameter: each output is optional. */
	{
		DAT_BOOLEAN in_idle = 99, out_idle = 99;
		expect_ret("ep/ep_get_status-state-not-asked", dat_ep_get_status(ep, NULL, &in_idle, &out_idle),
			   DAT_SUCCESS);
		expect_true("ep/ep_get_status-idle-flags", in_idle == DAT_TRUE && out_idle == DAT_TRUE,
			    "an EP with nothing posted is idle both ways");
	}
	/* "Maximum Recv DTO: Can be modified when in Unconnected ... states." */
	p.ep_attr.max_recv_dtos = p.ep_attr.max_recv_dtos > 2 ? p.ep_attr.max_recv_dtos - 1 : 2;
	expect_ret("ep/ep_modify-max-recv-dtos", dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p), DAT_SUCCESS);
	memset(&q, 0, sizeof(q));
	dat_ep_query(ep, DAT_EP_FIELD_ALL, &q);
	expect_true("ep/ep_modify-max-recv-dtos-queried", q.ep_attr.max_recv_dtos == p.ep_attr.max_recv_dtos,
		    "dat_ep_query returns the new max_recv_dtos");
	/* "Protection Zone: Can be modified when in Quiescent, Unconnected ... states." */
	p.pz_handle = other_pz;
	expect_ret("ep/ep_modify-pz", dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &p), DAT_SUCCESS);
	memset(&q, 0, sizeof(q));
	dat_ep_query(ep, DAT_EP_FIELD_ALL, &q);
	expect_true("ep/ep_modify-pz-queried", q.pz_handle == other_pz, "dat_ep_query returns the new PZ");
	p.pz_handle = pz;
	expect_ret("ep/ep_modify-pz-back", dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &p), DAT_SUCCESS);

	/* dat_ep_dup_connect: "DAT_INVALID_HANDLE: The ep_handle or dup_ep_handle parameter is
	 * invalid." (dat_error.h has DAT_INVALID_HANDLE_EP for the first; the second is checked
	 * by type.) */
	H("ep_dup_connect-garbage-ep", dat_ep_dup_connect(g, ep2, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
	  DAT_INVALID_HANDLE_EP);
	expect_type("ep/ep_dup_connect-garbage-dup", dat_ep_dup_connect(ep, g, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
		    DAT_INVALID_HANDLE);
	/* "private_data_size: Size of private_data. Must be nonnegative." */
	expect_type("ep/ep_dup_connect-negative-private-data-size",
		    dat_ep_dup_connect(ep, ep2, 1000000, -1, pd, DAT_QOS_BEST_EFFORT), DAT_INVALID_PARAMETER);
	/* "dup_ep_handle: Connected local Endpoint"; "DAT_INVALID_STATE: A parameter is in an
	 * invalid state." (ep2 is UNCONNECTED) */
	expect_type("ep/ep_dup_connect-unconnected-dup", dat_ep_dup_connect(ep, ep2, 1000000, 0, NULL,
									   DAT_QOS_BEST_EFFORT),
		    DAT_INVALID_STATE);
	expect_state("ep/ep_dup_connect-failed-calls-leave-unconnected", ep, DAT_EP_STATE_UNCONNECTED);

	/* dat_ep_common_connect (DAT 2.0, no man page; dat_ep_connect(3DAT) for the rest):
	 * "DAT_INVALID_HANDLE: Invalid Endpoint handle." */
	H("ep_common_connect-garbage", dat_ep_common_connect(g, (DAT_IA_ADDRESS_PTR)&sin, 1000000, 0, NULL),
	  DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_ADDRESS: Invalid address." */
	expect_type("ep/ep_common_connect-null-address", dat_ep_common_connect(ep, NULL, 1000000, 0, NULL),
		    DAT_INVALID_ADDRESS);
	/* "private_data_size: Size of private_data. Must be nonnegative." */
	expect_type("ep/ep_common_connect-negative-private-data-size",
		    dat_ep_common_connect(ep, (DAT_IA_ADDRESS_PTR)&sin, 1000000, -1, pd), DAT_INVALID_PARAMETER);

	/* dat_ep_post_rdma_read_to_rmr (DAT 2.0, no man page; dat_ep_post_rdma_read(3DAT) for the
	 * rest): "DAT_INVALID_HANDLE: The ep_handle parameter is invalid." */
	lr.rmr_context = rmr_ctx;
	lr.virtual_address = (DAT_VADDR)(uintptr_t)buf;
	lr.segment_length = 64;
	rr = lr;
	H("rdma_read_to_rmr-garbage",
	  dat_ep_post_rdma_read_to_rmr(g, &lr, c, &rr, DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_PARAMETER: Invalid parameter.": no local IOV; an unknown completion flag. */
	expect_type("ep/rdma_read_to_rmr-null-local-iov",
		    dat_ep_post_rdma_read_to_rmr(ep, NULL, c, &rr, DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_PARAMETER);
	expect_type("ep/rdma_read_to_rmr-unknown-completion-flag",
		    dat_ep_post_rdma_read_to_rmr(ep, &lr, c, &rr, 0x80), DAT_INVALID_PARAMETER);
	/* "DAT_INVALID_STATE: ... Endpoint was not in the DAT_EP_STATE_CONNECTED or
	 * DAT_EP_STATE_DISCONNECTED state." */
	expect_type("ep/rdma_read_to_rmr-unconnected",
		    dat_ep_post_rdma_read_to_rmr(ep, &lr, c, &rr, DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_STATE);

	/* dat_ep_post_send_with_invalidate (DAT 2.0, no man page; dat_ep_post_send(3DAT) for the
	 * rest), with invalidate_flag FALSE and TRUE: "DAT_INVALID_HANDLE: The ep_handle
	 * parameter is invalid." */
	l.lmr_context = lmr_ctx;
	l.virtual_address = (DAT_VADDR)(uintptr_t)buf;
	l.segment_length = 64;
	H("send_with_invalidate-garbage",
	  dat_ep_post_send_with_invalidate(g, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_FALSE, rmr_ctx),
	  DAT_INVALID_HANDLE_EP);
	H("send_with_invalidate-garbage-true",
	  dat_ep_post_send_with_invalidate(g, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, rmr_ctx),
	  DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_PARAMETER: Invalid parameter. For example, one of the IOV segments pointed
	 * to a memory outside its LMR." */
	l.virtual_address = (DAT_VADDR)(uintptr_t)(buf + BUF - 8);
	expect_type("ep/send_with_invalidate-segment-outside-lmr",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_FALSE, rmr_ctx),
		    DAT_INVALID_PARAMETER);
	expect_type("ep/send_with_invalidate-segment-outside-lmr-true",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, rmr_ctx),
		    DAT_INVALID_PARAMETER);
	l.virtual_address = (DAT_VADDR)(uintptr_t)buf;
	expect_type("ep/send_with_invalidate-unknown-flag",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, 0x80, DAT_FALSE, rmr_ctx), DAT_INVALID_PARAMETER);
	expect_type("ep/send_with_invalidate-unknown-flag-true",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, 0x80, DAT_TRUE, rmr_ctx), DAT_INVALID_PARAMETER);
	/* "DAT_INVALID_STATE: ... Endpoint was not in the DAT_EP_STATE_CONNECTED or
	 * DAT_EP_STATE_DISCONNECTED state." */
	expect_type("ep/send_with_invalidate-unconnected",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_FALSE, rmr_ctx),
		    DAT_INVALID_STATE);
	expect_type("ep/send_with_invalidate-unconnected-true",
		    dat_ep_post_send_with_invalidate(ep, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, rmr_ctx),
		    DAT_INVALID_STATE);

	dat_lmr_free(lmr);
	dat_ep_free(ep2);
	dat_ep_free(ep);
	dat_evd_free(conn_evd);
	dat_evd_free(dto_evd);
	dat_pz_free(other_pz);
	dat_pz_free(pz);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
