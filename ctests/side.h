/*
 * The two sides of a connection for the connection areas (connect.c, connect_args.c): an IA
 * each, with a PZ, EVDs, an EP and a registered buffer; connected to each other through a PSP.
 */
#ifndef LIBDAT_CTESTS_SIDE_H
#define LIBDAT_CTESTS_SIDE_H

#include "check.h"

#include <netinet/in.h>

#define WAIT_US (10 * 1000 * 1000)
#define BUF 4096

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char buf[BUF];
	DAT_COUNT max_pd;
};

static inline void open_side(struct side *s)
{
	DAT_REGION_DESCRIPTION region;
	DAT_VLEN len;
	DAT_VADDR addr;
	DAT_IA_ATTR ia_attr;
	DAT_PROVIDER_ATTR pr_attr;
	memset(s, 0, sizeof(*s));
	s->async_evd = DAT_HANDLE_NULL;
	must(dat_ia_open(ia_name(), 8, &s->async_evd, &s->ia), "dat_ia_open");
	must(dat_ia_query(s->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr), "dat_ia_query");
	s->max_pd = pr_attr.max_private_data_size;
	must(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	must(dat_evd_create(s->ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd), "dat_evd_create");
	must(dat_evd_create(s->ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req_evd), "dat_evd_create");
	must(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "dat_evd_create");
	must(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "dat_evd_create");
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, NULL, &s->ep), "dat_ep_create");
	region.for_va = s->buf;
	must(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, s->pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
			    &s->lmr, &s->lmr_ctx, &s->rmr_ctx, &len, &addr), "dat_lmr_create");
}

static inline void close_side(struct side *s)
{
	dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG);
}

static inline DAT_LMR_TRIPLET iov(struct side *s, int offset, int len)
{
	return triplet(s->lmr_ctx, s->buf, offset, len);
}

static inline DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c;
	c.as_64 = v;
	return c;
}

/* Whether `e` is a successful DTO completion with cookie `cookie_value`. */
static inline int dto_ok(DAT_EVENT e, uint64_t cookie_value)
{
	return e.event_number == DAT_DTO_COMPLETION_EVENT &&
	       e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
	       e.event_data.dto_completion_event_data.user_cookie.as_64 == cookie_value;
}

static inline DAT_EVENT next(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_COUNT more;
	memset(&e, 0, sizeof(e));
	if (dat_evd_wait(evd, WAIT_US, 1, &e, &more) != DAT_SUCCESS)
		e.event_number = (DAT_EVENT_NUMBER)0;
	return e;
}

static inline DAT_CONN_QUAL listen_any(struct side *s, DAT_PSP_HANDLE *psp)
{
	DAT_CONN_QUAL port = 0;
	must(dat_psp_create_any(s->ia, &port, s->cr_evd, DAT_PSP_CONSUMER_FLAG, psp), "dat_psp_create_any");
	return port;
}

static inline DAT_RETURN connect_to(struct side *s, DAT_CONN_QUAL port, const char *pd, DAT_TIMEOUT timeout)
{
	struct sockaddr_in sin;
	ia_own_address(s->ia, &sin);
	return dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&sin, port, timeout, pd ? (DAT_COUNT)strlen(pd) : 0,
			      (DAT_PVOID)pd, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

/* Connects the open sides a to p (fresh PSP); both ESTABLISHED. */
static inline void connect_opened(struct side *a, struct side *p)
{
	DAT_PSP_HANDLE psp;
	DAT_EVENT e;
	must(connect_to(a, listen_any(p, &psp), "hi", WAIT_US), "dat_ep_connect");
	e = next(p->cr_evd);
	must(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p->ep, 0, NULL), "dat_cr_accept");
	if (next(p->conn_evd).event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
	    next(a->conn_evd).event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "connect: setup: no connection\n");
		exit(2);
	}
	dat_psp_free(psp);
}

/* Opens a and p and connects a to p; both ESTABLISHED. */
static inline void connected_pair(struct side *a, struct side *p)
{
	open_side(a);
	open_side(p);
	connect_opened(a, p);
}

#endif
