/*
 * Every exported function that takes a handle refuses a NULL and a garbage one with
 * DAT_INVALID_HANDLE (the man pages: "The <x>_handle parameter is invalid"); where
 * dat_error.h names a subtype for that parameter, the exact subtype is checked. And for each,
 * one invalid-parameter case on an otherwise valid call.
 */
#include "check.h"

#define H(name, call, sub) \
	expect_ret("handles/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))
#define T(name, call) expect_type("handles/" name, (call), DAT_INVALID_HANDLE)

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_EVENT ev;
	DAT_COUNT n;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET r;
	DAT_DTO_COOKIE c;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd, cr_evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_IA_ATTR ia_attr;
	DAT_EVD_PARAM evd_param;
	DAT_PZ_PARAM pz_param;
	DAT_EP_PARAM ep_param;
	DAT_EP_STATE st;
	DAT_HANDLE_TYPE ht;
	DAT_CONTEXT ctx;
	DAT_PSP_HANDLE psp;

	watchdog(60);
	memset(&l, 0, sizeof(l));
	memset(&r, 0, sizeof(r));
	c.as_64 = 0;
	ctx.as_64 = 0;

	H("ia_query-null", dat_ia_query(NULL, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_INVALID_HANDLE_IA);
	H("ia_query-garbage", dat_ia_query(g, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_INVALID_HANDLE_IA);
	H("ia_close-garbage", dat_ia_close(g, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE_IA);
	H("pz_create-garbage-ia", dat_pz_create(g, &pz), DAT_INVALID_HANDLE_IA);
	H("pz_query-garbage", dat_pz_query(g, DAT_PZ_FIELD_ALL, &pz_param), DAT_INVALID_HANDLE_PZ);
	H("pz_free-garbage", dat_pz_free(g), DAT_INVALID_HANDLE_PZ);
	H("evd_create-garbage-ia", dat_evd_create(g, 8, NULL, DAT_EVD_DTO_FLAG, &evd), DAT_INVALID_HANDLE_IA);
	T("evd_dequeue-garbage", dat_evd_dequeue(g, &ev));
	T("evd_wait-garbage", dat_evd_wait(g, 0, 1, &ev, &n));
	T("evd_query-garbage", dat_evd_query(g, DAT_EVD_FIELD_ALL, &evd_param));
	T("evd_free-garbage", dat_evd_free(g));
	T("evd_enable-garbage", dat_evd_enable(g));
	T("evd_disable-garbage", dat_evd_disable(g));
	T("evd_post_se-garbage", dat_evd_post_se(g, &ev));
	T("evd_resize-garbage", dat_evd_resize(g, 8));
	H("cno_free-garbage", dat_cno_free(g), DAT_INVALID_HANDLE_CNO);
	H("ep_create-garbage-ia", dat_ep_create(g, NULL, NULL, NULL, NULL, NULL, &ep), DAT_INVALID_HANDLE_IA);
	H("ep_query-garbage", dat_ep_query(g, DAT_EP_FIELD_ALL, &ep_param), DAT_INVALID_HANDLE_EP);
	H("ep_free-garbage", dat_ep_free(g), DAT_INVALID_HANDLE_EP);
	H("ep_get_status-garbage", dat_ep_get_status(g, &st, NULL, NULL), DAT_INVALID_HANDLE_EP);
	H("ep_post_recv-garbage", dat_ep_post_recv(g, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_HANDLE_EP);
	H("ep_post_rdma_write-garbage", dat_ep_post_rdma_write(g, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
	  DAT_INVALID_HANDLE_EP);
	H("ep_post_rdma_read-garbage", dat_ep_post_rdma_read(g, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
	  DAT_INVALID_HANDLE_EP);
	H("ep_reset-garbage", dat_ep_reset(g), DAT_INVALID_HANDLE_EP);
	H("lmr_free-garbage", dat_lmr_free(g), DAT_INVALID_HANDLE_LMR);
	H("rmr_free-garbage", dat_rmr_free(g), DAT_INVALID_HANDLE_RMR);
	H("psp_free-garbage", dat_psp_free(g), DAT_INVALID_HANDLE_PSP);
	H("rsp_free-garbage", dat_rsp_free(g), DAT_INVALID_HANDLE_RSP);
	H("cr_reject-garbage", dat_cr_reject(g, 0, NULL), DAT_INVALID_HANDLE_CR);
	H("srq_free-garbage", dat_srq_free(g), DAT_INVALID_HANDLE_SRQ);
	T("set_consumer_context-garbage", dat_set_consumer_context(g, ctx));
	T("get_consumer_context-garbage", dat_get_consumer_context(g, &ctx));
	T("get_handle_type-garbage", dat_get_handle_type(g, &ht));

	/* Invalid parameters on otherwise valid calls. */
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "handles: cannot open %s\n", ia_name());
		return 2;
	}
	expect_type("params/pz_create-null-out", dat_pz_create(ia, NULL), DAT_INVALID_PARAMETER);
	/* dat_evd_create: "DAT_INVALID_PARAMETER: Invalid parameter": evd_flags with a bit no
	 * DAT_EVD_*_FLAG has. */
	expect_type("params/evd_create-unknown-flags", dat_evd_create(ia, 8, NULL, 0x10000, &evd), DAT_INVALID_PARAMETER);
	expect_type("params/evd_create-zero-qlen", dat_evd_create(ia, 0, NULL, DAT_EVD_DTO_FLAG, &evd),
		    DAT_INVALID_PARAMETER);
	expect_ret("params/evd_create", dat_evd_create(ia, 8, NULL, DAT_EVD_DTO_FLAG, &evd), DAT_SUCCESS);
	expect_ret("params/evd_dequeue-empty", dat_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);
	/* "DAT_TIMEOUT_EXPIRED: The timeout expired ...": that value itself, with no error class, as
	 * programs test it (ret == DAT_TIMEOUT_EXPIRED) and OpenFabrics returns it. */
	expect_ret("params/evd_wait-timeout", dat_evd_wait(evd, 1000, 1, &ev, &n), DAT_TIMEOUT_EXPIRED);
	/* dat_evd_wait: "If the value of the threshold is larger than the Event Dispatcher queue
	 * length, the operation fails with the return DAT_INVALID_PARAMETER." (qlen 8, threshold 9) */
	expect_type("params/evd_wait-threshold-above-qlen", dat_evd_wait(evd, 1000, 9, &ev, &n), DAT_INVALID_PARAMETER);
	expect_type("params/ia_query-null-attr-with-mask", dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, NULL, 0, NULL),
		    DAT_INVALID_PARAMETER);
	expect_ret("params/pz_create", dat_pz_create(ia, &pz), DAT_SUCCESS);
	expect_type("params/ep_create-null-out", dat_ep_create(ia, pz, evd, evd, NULL, NULL, NULL),
		    DAT_INVALID_PARAMETER);
	expect_ret("params/evd_create-cr", dat_evd_create(ia, 8, NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
	expect_type("params/psp_create-bad-flags", dat_psp_create(ia, 45300, cr_evd, (DAT_PSP_FLAGS)9, &psp),
		    DAT_INVALID_PARAMETER);
	/* A handle of the wrong kind: an EVD where an EP belongs. */
	H("ep_free-evd-handle", dat_ep_free(evd), DAT_INVALID_HANDLE_EP);
	/* A freed handle. */
	expect_ret("params/pz_free", dat_pz_free(pz), DAT_SUCCESS);
	H("pz_free-freed", dat_pz_free(pz), DAT_INVALID_HANDLE_PZ);
	expect_ret("params/ia_close-graceful-with-objects", dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG),
		   DAT_ERROR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE));
	expect_ret("params/ia_close-abrupt", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	H("ia_query-closed", dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_INVALID_HANDLE_IA);

	/* Registry and IA: an unregistered name; a wrong major version. */
	expect_ret("registry/ia_open-unknown-name", dat_ia_open("no-such-ia", 8, &async_evd, &ia),
		   DAT_ERROR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED));
	expect_type("registry/ia_openv-wrong-major", dat_ia_openv(ia_name(), 8, &async_evd, &ia, 1, 2, DAT_THREADSAFE),
		    DAT_PROVIDER_NOT_FOUND);
	return check_failures ? 1 : 0;
}
