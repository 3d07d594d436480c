/*
 * peer: one side of a connection between two hosts whose network fails under it (run by
 * tests/twohost/outage.sh, which cuts and heals the link between the namespaces).
 *
 *   peer server IA PORT SIZE COUNT         receive COUNT messages of SIZE bytes, every byte checked
 *   peer client IA HOST PORT SIZE COUNT outage
 *       send COUNT messages (WINDOW in flight); after a quarter of them print "cut" and go on:
 *       the link goes down for a moment and comes back; every send must complete successfully
 *       and the server must get every byte right
 *   peer client IA HOST PORT SIZE COUNT gone LIMIT_S
 *       send one message, print "cut", read a line from stdin (the link is down for good
 *       then), post a send: it must fail with the transport's error, as an RC QP's send does
 *       once its retries run out (not merely be flushed), and the connection end DISCONNECTED
 *       (a peer that went away, as OpenFabrics reports it), each within LIMIT_S seconds;
 *       prints how long each took
 *
 * The server gives up after 120 s without a message. Exit status 0 when every check held.
 */
#include <dat2/udat.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 8
#define WAIT_US (120 * 1000 * 1000)

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char *buf;
	long size;
};

static void die(const char *what, DAT_RETURN rc)
{
	const char *major = "", *minor = "";
	dat_strerror(rc, &major, &minor);
	fprintf(stderr, "peer: %s: %s %s\n", what, major, minor);
	exit(1);
}

static void check(DAT_RETURN rc, const char *what)
{
	if (rc != DAT_SUCCESS)
		die(what, rc);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned char pattern(long message, long i)
{
	return (unsigned char)(message * 131 + i * 7 + 1);
}

static void open_side(struct side *s, char *ia, long size)
{
	DAT_REGION_DESCRIPTION region;
	DAT_VLEN registered;
	DAT_VADDR address;
	size_t bytes = (size_t)size * WINDOW;
	memset(s, 0, sizeof(*s));
	s->size = size;
	s->async_evd = DAT_HANDLE_NULL;
	check(dat_ia_open(ia, 8, &s->async_evd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 4 * WINDOW, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 4 * WINDOW, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "dat_evd_create");
	check(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, NULL, &s->ep), "dat_ep_create");
	s->buf = calloc(1, bytes);
	if (!s->buf) {
		perror("peer: calloc");
		exit(1);
	}
	region.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, bytes, s->pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
			     &s->lmr, &s->lmr_ctx, &s->rmr_ctx, &registered, &address),
	      "dat_lmr_create");
}

static DAT_EVENT next_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT us, const char *what)
{
	DAT_EVENT e;
	DAT_COUNT more;
	check(dat_evd_wait(evd, us, 1, &e, &more), what);
	return e;
}

static DAT_LMR_TRIPLET slot_iov(struct side *s, long n)
{
	DAT_LMR_TRIPLET t;
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + (n % WINDOW) * s->size);
	t.segment_length = (DAT_VLEN)s->size;
	return t;
}

static void post_recv(struct side *s, long n)
{
	DAT_LMR_TRIPLET t = slot_iov(s, n);
	DAT_DTO_COOKIE c;
	c.as_64 = (DAT_UINT64)n;
	check(dat_ep_post_recv(s->ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
}

static void post_send(struct side *s, long n)
{
	DAT_LMR_TRIPLET t = slot_iov(s, n);
	unsigned char *p = s->buf + (n % WINDOW) * s->size;
	DAT_DTO_COOKIE c;
	for (long i = 0; i < s->size; i++)
		p[i] = pattern(n, i);
	c.as_64 = (DAT_UINT64)n;
	check(dat_ep_post_send(s->ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
}

static int server(char *ia, long port, long size, long count)
{
	struct side s;
	DAT_PSP_HANDLE psp;
	DAT_EVENT e;
	open_side(&s, ia, size);
	for (long n = 0; n < WINDOW; n++)
		post_recv(&s, n);
	check(dat_psp_create(s.ia, (DAT_CONN_QUAL)port, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
	printf("server: listening\n");
	fflush(stdout);
	e = next_event(s.cr_evd, WAIT_US, "wait for a connection request");
	check(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, NULL), "dat_cr_accept");
	e = next_event(s.conn_evd, WAIT_US, "wait for the connection");
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "peer: server: connection event 0x%x\n", e.event_number);
		return 1;
	}
	for (long n = 0; n < count; n++) {
		e = next_event(s.recv_evd, WAIT_US, "wait for a message");
		DAT_DTO_COMPLETION_EVENT_DATA *d = &e.event_data.dto_completion_event_data;
		if (d->status != DAT_DTO_SUCCESS || d->user_cookie.as_64 != (DAT_UINT64)n || d->transfered_length != (DAT_VLEN)size) {
			fprintf(stderr, "peer: server: message %ld: status %d cookie %llu length %llu\n", n, d->status,
				(unsigned long long)d->user_cookie.as_64, (unsigned long long)d->transfered_length);
			return 1;
		}
		unsigned char *p = s.buf + (n % WINDOW) * size;
		for (long i = 0; i < size; i++)
			if (p[i] != pattern(n, i)) {
				fprintf(stderr, "peer: server: message %ld byte %ld wrong\n", n, i);
				return 1;
			}
		post_recv(&s, n + WINDOW);
	}
	printf("server: %ld messages of %ld bytes, every byte right\n", count, size);
	return 0;
}

static void connect_to(struct side *s, const char *host, long port)
{
	struct sockaddr_in sin;
	DAT_EVENT e;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		fprintf(stderr, "peer: bad address %s\n", host);
		exit(2);
	}
	check(dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&sin, (DAT_CONN_QUAL)port, 30 * 1000 * 1000, 0, NULL,
			     DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
	      "dat_ep_connect");
	e = next_event(s->conn_evd, WAIT_US, "wait for the connection");
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "peer: client: connection event 0x%x\n", e.event_number);
		exit(1);
	}
}

static int client_outage(struct side *s, long count)
{
	long posted = 0, done = 0;
	while (done < count) {
		while (posted < count && posted - done < WINDOW) {
			post_send(s, posted++);
			if (posted == count / 4) {
				printf("cut\n");
				fflush(stdout);
			}
		}
		DAT_EVENT e = next_event(s->req_evd, WAIT_US, "wait for a send's completion");
		DAT_DTO_COMPLETION_EVENT_DATA *d = &e.event_data.dto_completion_event_data;
		if (d->status != DAT_DTO_SUCCESS || d->user_cookie.as_64 != (DAT_UINT64)done) {
			fprintf(stderr, "peer: client: send %ld: status %d cookie %llu\n", done, d->status,
				(unsigned long long)d->user_cookie.as_64);
			return 1;
		}
		done++;
	}
	printf("client: %ld messages of %ld bytes sent, every send completed\n", count, s->size);
	return 0;
}

static int client_gone(struct side *s, double limit)
{
	char line[16];
	post_send(s, 0);
	DAT_EVENT e = next_event(s->req_evd, WAIT_US, "wait for the first send");
	if (e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "peer: client: the first send failed\n");
		return 1;
	}
	printf("cut\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	double start = now();
	post_send(s, 1);
	e = next_event(s->req_evd, (DAT_TIMEOUT)((limit + 10) * 1e6), "wait for the send to the vanished peer");
	double dto = now() - start;
	int status = e.event_data.dto_completion_event_data.status;
	e = next_event(s->conn_evd, (DAT_TIMEOUT)((limit + 10) * 1e6), "wait for the connection's end");
	double end = now() - start;
	printf("client: the send completed with status %d after %.1f s, the connection ended (event 0x%x) after %.1f s\n",
	       status, dto, e.event_number, end);
	if (status == DAT_DTO_SUCCESS || status == DAT_DTO_ERR_FLUSHED || e.event_number != DAT_CONNECTION_EVENT_DISCONNECTED || dto > limit ||
	    end > limit) {
		fprintf(stderr, "peer: client: expected the send to fail (DAT_DTO_ERR_TRANSPORT, not flushed) and DISCONNECTED within %.1f s\n", limit);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "server"))
		return server(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]));
	if (argc >= 8 && !strcmp(argv[1], "client")) {
		struct side s;
		open_side(&s, argv[2], atol(argv[5]));
		connect_to(&s, argv[3], atol(argv[4]));
		if (!strcmp(argv[7], "outage"))
			return client_outage(&s, atol(argv[6]));
		if (!strcmp(argv[7], "gone") && argc >= 9)
			return client_gone(&s, atof(argv[8]));
	}
	fprintf(stderr, "usage: peer server IA PORT SIZE COUNT | peer client IA HOST PORT SIZE COUNT outage|gone LIMIT_S\n");
	return 2;
}
