/*
 * A DAT 1.2 program (built against include/dat, linked with -ldat) that moves data between two
 * EPs of its own over an IA (default tcp-lo): send/recv with several segments, RDMA write and
 * read through a bound RMR, every byte compared and every completion event read in 1.2's
 * layout (48-byte DAT_EVENT, 64-bit transfered_length); then the error paths: a bad handle, a
 * bad lmr_context, a segment too long for 32 bits, an RMR bind with a context no region has.
 * One thread: the library progresses the connection while the program waits.
 *
 * Prints one line per check ("ok" / "FAIL"), exits 0 when all passed, 1 otherwise, 2 when
 * the setup failed.
 */
#include <dat/udat.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The 1.2 entry points, as the generated headers will bind them (version node DAT_1.2). */
__asm__(".symver dat_ia_openv, dat_ia_openv@DAT_1.2");
__asm__(".symver dat_ia_close, dat_ia_close@DAT_1.2");
__asm__(".symver dat_pz_create, dat_pz_create@DAT_1.2");
__asm__(".symver dat_evd_create, dat_evd_create@DAT_1.2");
__asm__(".symver dat_evd_wait, dat_evd_wait@DAT_1.2");
__asm__(".symver dat_evd_dequeue, dat_evd_dequeue@DAT_1.2");
__asm__(".symver dat_ep_create, dat_ep_create@DAT_1.2");
__asm__(".symver dat_ep_query, dat_ep_query@DAT_1.2");
__asm__(".symver dat_ep_connect, dat_ep_connect@DAT_1.2");
__asm__(".symver dat_cr_accept, dat_cr_accept@DAT_1.2");
__asm__(".symver dat_psp_create_any, dat_psp_create_any@DAT_1.2");
__asm__(".symver dat_psp_free, dat_psp_free@DAT_1.2");
__asm__(".symver dat_lmr_create, dat_lmr_create@DAT_1.2");
__asm__(".symver dat_lmr_query, dat_lmr_query@DAT_1.2");
__asm__(".symver dat_rmr_create, dat_rmr_create@DAT_1.2");
__asm__(".symver dat_rmr_bind, dat_rmr_bind@DAT_1.2");
__asm__(".symver dat_rmr_query, dat_rmr_query@DAT_1.2");
__asm__(".symver dat_ep_post_send, dat_ep_post_send@DAT_1.2");
__asm__(".symver dat_ep_post_recv, dat_ep_post_recv@DAT_1.2");
__asm__(".symver dat_ep_post_rdma_write, dat_ep_post_rdma_write@DAT_1.2");
__asm__(".symver dat_ep_post_rdma_read, dat_ep_post_rdma_read@DAT_1.2");

#define WAIT_US (10 * 1000 * 1000)
#define BUF 8192
#define CODE(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))

static int failures;

static void check(int ok, const char *what)
{
	printf("%s\t%s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failures++;
}

static void check_code(DAT_RETURN got, DAT_RETURN want, const char *what)
{
	char line[256];
	snprintf(line, sizeof(line), "%s (got 0x%08x, want 0x%08x)", what, (unsigned)got, (unsigned)want);
	check(got == want, line);
}

static void must(DAT_RETURN r, const char *what)
{
	if (r != DAT_SUCCESS) {
		fprintf(stderr, "setup: %s: 0x%08x\n", what, (unsigned)r);
		exit(2);
	}
}

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char *buf;
};

static void open_side(struct side *s, char *ia_name)
{
	DAT_REGION_DESCRIPTION region;
	DAT_VLEN len;
	DAT_VADDR addr;
	memset(s, 0, sizeof(*s));
	s->buf = calloc(1, BUF);
	s->async_evd = DAT_HANDLE_NULL;
	must(dat_ia_open(ia_name, 8, &s->async_evd, &s->ia), "dat_ia_open");
	must(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	must(dat_evd_create(s->ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd), "recv evd");
	must(dat_evd_create(s->ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &s->req_evd),
	     "request evd");
	must(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "conn evd");
	must(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "cr evd");
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, NULL, &s->ep), "dat_ep_create");
	region.for_va = s->buf;
	/* 1.2: no va_type. */
	must(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, BUF, s->pz, DAT_MEM_PRIV_ALL_FLAG, &s->lmr,
			    &s->lmr_ctx, &s->rmr_ctx, &len, &addr),
	     "dat_lmr_create");
	check(len == BUF && addr == (DAT_VADDR)(uintptr_t)s->buf, "dat_lmr_create: registered length and address");
}

static DAT_LMR_TRIPLET seg(struct side *s, int offset, DAT_VLEN len)
{
	DAT_LMR_TRIPLET t;
	memset(&t, 0xee, sizeof(t)); /* the pad is the caller's garbage */
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + offset);
	t.segment_length = len;
	return t;
}

static DAT_EVENT next(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_COUNT more;
	memset(&e, 0, sizeof(e));
	if (dat_evd_wait(evd, WAIT_US, 1, &e, &more) != DAT_SUCCESS)
		e.event_number = (DAT_EVENT_NUMBER)0;
	return e;
}

static DAT_DTO_COOKIE cookie(uint64_t v)
{
	DAT_DTO_COOKIE c;
	c.as_64 = v;
	return c;
}

/* The next event on `evd` is a successful DTO completion of `ep` with `c` and `len` bytes. */
static void dto_done(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, uint64_t c, DAT_VLEN len, const char *what)
{
	DAT_EVENT e = next(evd);
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &e.event_data.dto_completion_event_data;
	char line[256];
	snprintf(line, sizeof(line), "%s: completion (event 0x%x, status %d, cookie %llu, length %llu)", what,
		 (unsigned)e.event_number, (int)d->status, (unsigned long long)d->user_cookie.as_64,
		 (unsigned long long)d->transfered_length);
	check(e.event_number == DAT_DTO_COMPLETION_EVENT && e.evd_handle == evd && d->ep_handle == ep &&
		      d->status == DAT_DTO_SUCCESS && d->user_cookie.as_64 == c && d->transfered_length == len,
	      line);
}

static void fill(unsigned char *b, int seed)
{
	for (int i = 0; i < BUF; i++)
		b[i] = (unsigned char)(seed + i * 7);
}

static void connect_sides(struct side *a, struct side *p)
{
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port = 0;
	struct sockaddr_in sin;
	DAT_EVENT e;
	const char *addr = getenv("DAT12_ADDR") ? getenv("DAT12_ADDR") : "127.0.0.1";
	must(dat_psp_create_any(p->ia, &port, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin.sin_addr);
	must(dat_ep_connect(a->ep, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
			    DAT_CONNECT_DEFAULT_FLAG),
	     "dat_ep_connect");
	e = next(p->cr_evd);
	check(e.event_number == DAT_CONNECTION_REQUEST_EVENT && e.event_data.cr_arrival_event_data.conn_qual == port,
	      "connection request event, 1.2 layout");
	must(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p->ep, 0, NULL), "dat_cr_accept");
	e = next(p->conn_evd);
	check(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
		      e.event_data.connect_event_data.ep_handle == p->ep,
	      "passive side established");
	e = next(a->conn_evd);
	check(e.event_number == DAT_CONNECTION_EVENT_ESTABLISHED &&
		      e.event_data.connect_event_data.ep_handle == a->ep,
	      "active side established");
	dat_psp_free(psp);
}

int main(int argc, char **argv)
{
	char *ia_name = argc > 1 ? argv[1] : (char *)"tcp-lo";
	struct side a, p;
	DAT_EP_PARAM ep_param;
	DAT_LMR_TRIPLET send_iov[3], recv_iov[3], local[2], bad[1], bind_t;
	DAT_RMR_TRIPLET remote;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT rmr_ctx = 0;
	DAT_RMR_PARAM rmr_param;
	DAT_LMR_PARAM lmr_param;
	DAT_EVENT e;

	check(sizeof(DAT_EVENT) == 48 && sizeof(DAT_LMR_TRIPLET) == 24, "built with the 1.2 layouts");
	open_side(&a, ia_name);
	open_side(&p, ia_name);
	connect_sides(&a, &p);

	check(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &ep_param) == DAT_SUCCESS &&
		      ep_param.ep_state == DAT_EP_STATE_CONNECTED && ep_param.recv_evd_handle == a.recv_evd &&
		      ep_param.connect_evd_handle == a.conn_evd && ep_param.ep_attr.max_message_size >= BUF,
	      "dat_ep_query: 1.2 param");
	check(dat_lmr_query(a.lmr, DAT_LMR_FIELD_ALL, &lmr_param) == DAT_SUCCESS &&
		      lmr_param.lmr_context == a.lmr_ctx && lmr_param.registered_size == BUF &&
		      lmr_param.region_desc.for_va == a.buf,
	      "dat_lmr_query: 1.2 param");

	/* Send three segments into three receive segments of other lengths. */
	fill(a.buf, 1);
	recv_iov[0] = seg(&p, 100, 10);
	recv_iov[1] = seg(&p, 300, 20);
	recv_iov[2] = seg(&p, 500, 100);
	check(dat_ep_post_recv(p.ep, 3, recv_iov, cookie(11), DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS,
	      "dat_ep_post_recv: 3 segments");
	send_iov[0] = seg(&a, 0, 25);
	send_iov[1] = seg(&a, 1000, 15);
	send_iov[2] = seg(&a, 4000, 7);
	check(dat_ep_post_send(a.ep, 3, send_iov, cookie(22), DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS,
	      "dat_ep_post_send: 3 segments");
	dto_done(a.req_evd, a.ep, 22, 47, "send");
	dto_done(p.recv_evd, p.ep, 11, 47, "recv");
	{
		unsigned char sent[47], got[47];
		memcpy(sent, a.buf, 25);
		memcpy(sent + 25, a.buf + 1000, 15);
		memcpy(sent + 40, a.buf + 4000, 7);
		memcpy(got, p.buf + 100, 10);
		memcpy(got + 10, p.buf + 300, 20);
		memcpy(got + 30, p.buf + 500, 17);
		check(memcmp(sent, got, sizeof(sent)) == 0, "send/recv: every byte");
		check(p.buf[517] == 0 && p.buf[99] == 0 && p.buf[110] == 0, "send/recv: nothing beyond");
	}

	/* Bind an RMR on the peer's buffer (1.2: no LMR handle, found by the triplet's context). */
	must(dat_rmr_create(p.pz, &rmr), "dat_rmr_create");
	bind_t = seg(&p, 2048, 4096);
	check(dat_rmr_bind(rmr, &bind_t, DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, p.ep,
			   cookie(5), DAT_COMPLETION_DEFAULT_FLAG, &rmr_ctx) == DAT_SUCCESS,
	      "dat_rmr_bind");
	e = next(p.req_evd);
	check(e.event_number == DAT_RMR_BIND_COMPLETION_EVENT && e.event_data.rmr_completion_event_data.rmr_handle == rmr &&
		      e.event_data.rmr_completion_event_data.user_cookie.as_64 == 5 &&
		      e.event_data.rmr_completion_event_data.status == DAT_DTO_SUCCESS,
	      "dat_rmr_bind: completion");
	check(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rmr_param) == DAT_SUCCESS && rmr_param.rmr_context == rmr_ctx &&
		      rmr_param.lmr_triplet.segment_length == 4096 && rmr_param.lmr_triplet.lmr_context == p.lmr_ctx &&
		      rmr_param.lmr_triplet.virtual_address == (DAT_VADDR)(uintptr_t)(p.buf + 2048),
	      "dat_rmr_query: 1.2 param");

	/* RDMA write two segments into the window. */
	memset(p.buf, 0, BUF);
	fill(a.buf, 50);
	local[0] = seg(&a, 10, 30);
	local[1] = seg(&a, 2000, 50);
	memset(&remote, 0xee, sizeof(remote));
	remote.rmr_context = rmr_ctx;
	remote.target_address = (DAT_VADDR)(uintptr_t)(p.buf + 2048 + 16);
	remote.segment_length = 80;
	check(dat_ep_post_rdma_write(a.ep, 2, local, cookie(33), &remote, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS,
	      "dat_ep_post_rdma_write: 2 segments");
	dto_done(a.req_evd, a.ep, 33, 80, "rdma write");
	check(memcmp(p.buf + 2064, a.buf + 10, 30) == 0 && memcmp(p.buf + 2094, a.buf + 2000, 50) == 0 &&
		      p.buf[2063] == 0 && p.buf[2144] == 0,
	      "rdma write: every byte, nothing beyond");

	/* RDMA read 60 bytes of the window into two segments. */
	fill(p.buf, 99);
	memset(a.buf, 0, BUF);
	local[0] = seg(&a, 64, 24);
	local[1] = seg(&a, 512, 36);
	remote.target_address = (DAT_VADDR)(uintptr_t)(p.buf + 3000);
	remote.segment_length = 60;
	check(dat_ep_post_rdma_read(a.ep, 2, local, cookie(44), &remote, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS,
	      "dat_ep_post_rdma_read: 2 segments");
	dto_done(a.req_evd, a.ep, 44, 60, "rdma read");
	check(memcmp(a.buf + 64, p.buf + 3000, 24) == 0 && memcmp(a.buf + 512, p.buf + 3024, 36) == 0 &&
		      a.buf[63] == 0 && a.buf[88] == 0 && a.buf[548] == 0,
	      "rdma read: every byte, nothing beyond");

	/* The error paths, in 1.2's numbering. */
	bad[0] = seg(&a, 0, 8);
	check_code(dat_ep_post_send((DAT_EP_HANDLE)(uintptr_t)0x1234, 1, bad, cookie(1), DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP), "post_send: a bad EP handle");
	bad[0].lmr_context ^= 0x5a5a0000;
	check_code(dat_ep_post_send(a.ep, 1, bad, cookie(2), DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_PRIVILEGES_VIOLATION, DAT_PRIVILEGES_READ), "post_send: a bad lmr_context");
	bad[0] = seg(&a, 0, (DAT_VLEN)1 << 32);
	check_code(dat_ep_post_send(a.ep, 1, bad, cookie(3), DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3), "post_send: a segment beyond 32 bits");
	check_code(dat_ep_post_recv(p.ep, 1, bad, cookie(3), DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3), "post_recv: a segment beyond 32 bits");
	bad[0] = seg(&a, 0, 8);
	remote.segment_length = (DAT_VLEN)1 << 33;
	check_code(dat_ep_post_rdma_read(a.ep, 1, bad, cookie(4), &remote, DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE), "rdma read: a remote length beyond 32 bits");
	check_code(dat_ep_post_rdma_write(a.ep, 1, bad, cookie(4), &remote, DAT_COMPLETION_DEFAULT_FLAG),
		   CODE(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5), "rdma write: a remote length beyond 32 bits");
	bind_t.lmr_context ^= 0x77770000;
	check_code(dat_rmr_bind(rmr, &bind_t, DAT_MEM_PRIV_REMOTE_READ_FLAG, p.ep, cookie(6),
				DAT_COMPLETION_DEFAULT_FLAG, &rmr_ctx),
		   CODE(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2), "rmr_bind: no region has the context");
	check(dat_evd_dequeue(a.req_evd, &e) == DAT_QUEUE_EMPTY && dat_evd_dequeue(p.recv_evd, &e) == DAT_QUEUE_EMPTY,
	      "no completion for a refused post");

	dat_ia_close(a.ia, DAT_CLOSE_ABRUPT_FLAG);
	dat_ia_close(p.ia, DAT_CLOSE_ABRUPT_FLAG);
	printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
