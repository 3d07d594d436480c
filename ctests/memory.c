/*
 * Memory: dat_lmr_query, dat_lmr_sync_rdma_read, dat_lmr_sync_rdma_write, dat_rmr_create,
 * dat_rmr_create_for_ep, dat_rmr_query, dat_rmr_bind. For each, a garbage handle, an invalid
 * parameter on an otherwise valid call, and a success where it is cheap. And dat_lmr_create
 * of memory the process cannot access as its privileges ask. One IA, one UNCONNECTED EP; no
 * connection.
 */
#include "check.h"

#include <sys/mman.h>

#define BUF 4096

#define H(name, call, sub) expect_ret("memory/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))

static unsigned char buf[BUF];

/* dat_lmr_create of `len` bytes at `at` with `priv`; an LMR the library makes is freed at once. */
static DAT_RETURN register_at(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, void *at, DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv)
{
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
	DAT_RETURN r;
	region.for_va = at;
	r = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, len, pz, priv, DAT_VA_TYPE_VA, &lmr, NULL, NULL, NULL, NULL);
	if (r == DAT_SUCCESS)
		dat_lmr_free(lmr);
	return r;
}

/*
 * dat_lmr_create(3DAT): "The specified buffer must have been previously allocated and pinned
 * by the uDAPL Consumer" and the privileges are the accesses the Consumer asks for: memory the
 * process cannot access as asked is an invalid parameter ("DAT_INVALID_PARAMETER: Invalid
 * parameter."), as pinning such pages fails on a verbs device (OpenFabrics returns
 * DAT_INSUFFICIENT_RESOURCES for every failed ibv_reg_mr; the man page's code for a bad
 * region is DAT_INVALID_PARAMETER).
 */
static void memory_access_cases(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *ro, *m;
	ro = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || m == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(ro, 0x5a, 2 * page);
	mprotect(ro, 2 * page, PROT_READ);
	/* A read-only mapping: refused with a privilege that writes, accepted with read ones. */
	expect_type("memory/lmr_create-read-only-local-write", register_at(ia, pz, ro, 2 * page, DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
		    DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_create-read-only-remote-write",
		    register_at(ia, pz, ro, 2 * page, DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_MEM_PRIV_LOCAL_READ_FLAG),
		    DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_create-read-only-all", register_at(ia, pz, ro, 2 * page, DAT_MEM_PRIV_ALL_FLAG),
		    DAT_INVALID_PARAMETER);
	expect_ret("memory/lmr_create-read-only-read-privileges",
		   register_at(ia, pz, ro, 2 * page, DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG),
		   DAT_SUCCESS);
	/* m: three pages, the last two unmapped. */
	munmap(m + page, 2 * page);
	expect_type("memory/lmr_create-unmapped", register_at(ia, pz, m + page, page, DAT_MEM_PRIV_ALL_FLAG),
		    DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_create-unmapped-read-privileges",
		    register_at(ia, pz, m + page, page, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_create-runs-off-the-mapping", register_at(ia, pz, m, 2 * page, DAT_MEM_PRIV_ALL_FLAG),
		    DAT_INVALID_PARAMETER);
	expect_ret("memory/lmr_create-mapped-part", register_at(ia, pz, m, page, DAT_MEM_PRIV_ALL_FLAG), DAT_SUCCESS);
	munmap(m, page);
	munmap(ro, 2 * page);
}

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT lmr_rmr_ctx, rctx;
	DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL, rmr_ep = DAT_HANDLE_NULL, tmp;
	DAT_REGION_DESCRIPTION region;
	DAT_VLEN len;
	DAT_VADDR addr;
	DAT_LMR_PARAM lp;
	DAT_RMR_PARAM rp;
	DAT_LMR_TRIPLET t;
	DAT_RMR_COOKIE cookie;

	watchdog(60);
	cookie.as_64 = 1;
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "memory: cannot open %s\n", ia_name());
		return 2;
	}
	must(dat_pz_create(ia, &pz), "dat_pz_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), "dat_evd_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), "dat_evd_create");
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep), "dat_ep_create");
	region.for_va = buf;
	must(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
			    &lmr_ctx, &lmr_rmr_ctx, &len, &addr), "dat_lmr_create");

	/* dat_lmr_query: "DAT_INVALID_HANDLE: The lmr_handle function is invalid." */
	H("lmr_query-garbage", dat_lmr_query(g, DAT_LMR_FIELD_ALL, &lp), DAT_INVALID_HANDLE_LMR);
	/* "DAT_INVALID_PARAMETER: The lmr_param_mask function is invalid": bits no field has. */
	expect_type("memory/lmr_query-unknown-mask-bits", dat_lmr_query(lmr, 0x100000, &lp), DAT_INVALID_PARAMETER);
	memset(&lp, 0, sizeof(lp));
	expect_ret("memory/lmr_query", dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &lp), DAT_SUCCESS);
	expect_true("memory/lmr_query-values", lp.lmr_context == lmr_ctx && lp.pz_handle == pz && lp.ia_handle == ia &&
		    lp.length == BUF, "the LMR's context, PZ, IA and length");

	/* dat_lmr_sync_rdma_read / _write: "DAT_INVALID_HANDLE: The DAT handle is invalid." */
	t = triplet(lmr_ctx, buf, 0, 64);
	H("lmr_sync_rdma_read-garbage-ia", dat_lmr_sync_rdma_read(g, &t, 1), DAT_INVALID_HANDLE_IA);
	H("lmr_sync_rdma_write-garbage-ia", dat_lmr_sync_rdma_write(g, &t, 1), DAT_INVALID_HANDLE_IA);
	/* "DAT_INVALID_PARAMETER: ... the address range for a local segment fell outside the
	 * boundaries of the corresponding Local Memory Region or the LMR handle was invalid." */
	t = triplet(lmr_ctx, buf, BUF - 8, 64);
	expect_type("memory/lmr_sync_rdma_read-segment-outside-lmr", dat_lmr_sync_rdma_read(ia, &t, 1),
		    DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_sync_rdma_write-segment-outside-lmr", dat_lmr_sync_rdma_write(ia, &t, 1),
		    DAT_INVALID_PARAMETER);
	t = triplet(lmr_ctx ^ 0x5a5a5a5a, buf, 0, 64);
	expect_type("memory/lmr_sync_rdma_read-unknown-lmr", dat_lmr_sync_rdma_read(ia, &t, 1), DAT_INVALID_PARAMETER);
	expect_type("memory/lmr_sync_rdma_write-unknown-lmr", dat_lmr_sync_rdma_write(ia, &t, 1), DAT_INVALID_PARAMETER);
	t = triplet(lmr_ctx, buf, 128, 256);
	expect_ret("memory/lmr_sync_rdma_read", dat_lmr_sync_rdma_read(ia, &t, 1), DAT_SUCCESS);
	expect_ret("memory/lmr_sync_rdma_write", dat_lmr_sync_rdma_write(ia, &t, 1), DAT_SUCCESS);

	/* dat_rmr_create: "DAT_INVALID_HANDLE: The pz_handle parameter is invalid." The man page
	 * lists no DAT_INVALID_PARAMETER; a NULL out-pointer is one by the DAT convention that
	 * handles.c's params/pz_create-null-out checks. dat_rmr_create_for_ep (DAT 2.0, no man
	 * page) takes the same parameters. */
	H("rmr_create-garbage-pz", dat_rmr_create(g, &tmp), DAT_INVALID_HANDLE_PZ);
	expect_type("memory/rmr_create-null-out", dat_rmr_create(pz, NULL), DAT_INVALID_PARAMETER);
	/* dat_rmr_create: "DAT_SUCCESS: The operation was successful." Every RMR case below uses
	 * this RMR; a library that cannot make one (a device without memory windows) fails them. */
	expect_ret("memory/rmr_create", dat_rmr_create(pz, &rmr), DAT_SUCCESS);
	H("rmr_create_for_ep-garbage-pz", dat_rmr_create_for_ep(g, &tmp), DAT_INVALID_HANDLE_PZ);
	H("rmr_create_for_ep-ep-as-pz", dat_rmr_create_for_ep(ep, &tmp), DAT_INVALID_HANDLE_PZ);
	expect_type("memory/rmr_create_for_ep-null-out", dat_rmr_create_for_ep(pz, NULL), DAT_INVALID_PARAMETER);
	expect_ret("memory/rmr_create_for_ep", dat_rmr_create_for_ep(pz, &rmr_ep), DAT_SUCCESS);

	/* dat_rmr_query: "DAT_INVALID_HANDLE: The mr_handle parameter is invalid." */
	H("rmr_query-garbage", dat_rmr_query(g, DAT_RMR_FIELD_ALL, &rp), DAT_INVALID_HANDLE_RMR);
	/* "DAT_INVALID_PARAMETER: The rmr_param_mask parameter is invalid." */
	expect_type("memory/rmr_query-unknown-mask-bits", dat_rmr_query(rmr, 0x100000, &rp), DAT_INVALID_PARAMETER);
	memset(&rp, 0, sizeof(rp));
	/* dat_rmr_query: "DAT_SUCCESS", with the RMR's IA and PZ. */
	expect_ret("memory/rmr_query", dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp), DAT_SUCCESS);
	expect_true("memory/rmr_query-values", rp.ia_handle == ia && rp.pz_handle == pz, "the RMR's IA and PZ");

	/* dat_rmr_bind: "DAT_INVALID_HANDLE: Invalid DAT handle." for each of its handles. */
	t = triplet(lmr_ctx, buf, 0, 256);
	H("rmr_bind-garbage-rmr", dat_rmr_bind(g, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, ep, cookie,
					       DAT_COMPLETION_DEFAULT_FLAG, &rctx), DAT_INVALID_HANDLE_RMR);
	H("rmr_bind-garbage-lmr", dat_rmr_bind(rmr, g, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, ep, cookie,
					       DAT_COMPLETION_DEFAULT_FLAG, &rctx), DAT_INVALID_HANDLE_LMR);
	H("rmr_bind-garbage-ep", dat_rmr_bind(rmr, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, g, cookie,
					      DAT_COMPLETION_DEFAULT_FLAG, &rctx), DAT_INVALID_HANDLE_EP);
	/* "DAT_INVALID_PARAMETER: ... the target_address or segment_length exceeded the limits of
	 * the existing LMR." */
	t = triplet(lmr_ctx, buf, BUF - 8, 64);
	expect_type("memory/rmr_bind-segment-outside-lmr",
		    dat_rmr_bind(rmr, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, ep, cookie,
				 DAT_COMPLETION_DEFAULT_FLAG, &rctx), DAT_INVALID_PARAMETER);
	/* "The value of DAT_COMPLETION_UNSIGNALLED_FLAG is only valid if the Endpoint Request
	 * Completion Flags DAT_COMPLETION_UNSIGNALLED_FLAG. Otherwise, DAT_INVALID_PARAMETER is
	 * returned." (the EP has the default request flags) */
	t = triplet(lmr_ctx, buf, 0, 256);
	expect_type("memory/rmr_bind-unsignalled-not-allowed",
		    dat_rmr_bind(rmr, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, ep, cookie,
				 DAT_COMPLETION_UNSIGNALLED_FLAG, &rctx), DAT_INVALID_PARAMETER);
	/* "DAT_INVALID_STATE: Endpoint was not in the a DAT_EP_STATE_CONNECTED or
	 * DAT_EP_STATE_DISCONNECTED state." */
	expect_type("memory/rmr_bind-unconnected-ep",
		    dat_rmr_bind(rmr, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, ep, cookie,
				 DAT_COMPLETION_DEFAULT_FLAG, &rctx), DAT_INVALID_STATE);

	memory_access_cases(ia, pz);

	/* Free in dependency order; then the IA closes gracefully if nothing is left. */
	expect_ret("memory/rmr_free", dat_rmr_free(rmr), DAT_SUCCESS);
	expect_ret("memory/rmr_free-for-ep", dat_rmr_free(rmr_ep), DAT_SUCCESS);
	dat_lmr_free(lmr);
	dat_ep_free(ep);
	dat_evd_free(conn_evd);
	dat_evd_free(dto_evd);
	dat_pz_free(pz);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
