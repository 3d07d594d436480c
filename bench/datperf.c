/*
 * datperf: a transfer between two processes over a DAT IA (default: the built-in tcp-lo),
 * with figures. The program forks: the parent listens, the child connects. With -l or -c it
 * runs one side only, so the two may run on different hosts (both given the same -m, -s, -n
 * and -p).
 *
 *   datperf [-P ia] [-m pingpong|mempoll|write|send|sendwait|dequeue] [-s bytes] [-n iterations]
 *           [-p] [-t] [-r] [-q] [-l port | -c address:port]
 *
 *   -m pingpong  send/recv ping-pong of -s bytes; prints the one-way latency (RTT / 2): the
 *                mean, and with -t the median round trip's half as well (perftest's t_typical)
 *   -m mempoll   RDMA-write ping-pong of -s bytes in which each side polls its memory for the
 *                peer's write (its last byte changes every message) and calls the library
 *                only to post, and to reap completions now and then; prints the one-way
 *                latency (RTT / 2), as pingpong does. This is how MPI libraries' eager RDMA
 *                waits.
 *   -m write     RDMA writes of -s bytes, 16 in flight; prints bandwidth
 *   -m send      sends of -s bytes, 16 in flight; prints bandwidth
 *   -m sendwait  one send of -s bytes at a time, each waited for until it completes (the
 *                peer has it) before the next is posted; prints messages per second
 *   -m dequeue   the cost of dat_evd_dequeue on an empty EVD of a connected EP, -n calls each
 *                on its connection EVD and on its receive DTO EVD (16 receives posted that
 *                the peer leaves empty); prints nanoseconds per call for each, the median of
 *                batches of 1000 calls (a batch in which the scheduler ran another thread
 *                does not count; the verbose line gives the mean over all calls too)
 *   -p           poll with dat_evd_dequeue (default: block in dat_evd_wait)
 *   -t           latency modes: also the typical one-way latency, the median round trip / 2
 *   -r           with -m pingpong: a raw TCP socket between the same two processes as well,
 *                and the ping-pong alternates between the two in batches (RAW_BATCHES, each
 *                begun with untimed rounds), polling or blocking alike; prints both one-way
 *                latencies, ours first. On a machine whose speed drifts from one second to
 *                the next, two figures taken milliseconds apart compare better than two runs.
 *   -q           one line of figures only (for scripts)
 *   -l port      the listening side only: waits for one connection on conn_qual `port` of
 *                the IA and prints "datperf: listening on port N" once it can come
 *   -c addr:port the connecting side only: connects to `port` at IPv4 address `addr` and
 *                prints the figures
 *
 * Every transfer is checked: the receiver verifies the bytes it got against the pattern the
 * sender wrote, and the program fails if one differs.
 */
#include <dat2/udat.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define WINDOW 16
#define WAIT_US (10 * 1000 * 1000)

static char *ia_name = "tcp-lo";
static const char *mode = "pingpong";
static long size = 8;
static long iterations = 10000;
static int polling;
static int quiet;
static double *stamps; /* with -t: when each timed round of a ping-pong began, and the end */
static long slot; /* bytes per buffer slot: the size, at least room for an RMR triplet */
static int beside_raw;                   /* -r: a raw TCP ping-pong alternating with ours */
static int raw_fd = -1;                  /* -r: the raw socket, connected */
static double raw_latency;               /* -r: its one-way latency, us */
static long listen_port = -1;            /* -l: the listening side alone, on this conn_qual */
static struct sockaddr_in connect_to;    /* -c: the connecting side alone, to this address */
static int connect_given;

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char *buf; /* [0, slot * WINDOW): send side; [slot * WINDOW, 2x): receive side;
			     * then one slot where the peer's region arrives */
	DAT_RMR_TRIPLET peer; /* the peer's receive area, for RDMA writes */
};

static void check(DAT_RETURN rc, const char *what)
{
	if (rc != DAT_SUCCESS) {
		const char *major = "", *minor = "";
		dat_strerror(rc, &major, &minor);
		fprintf(stderr, "datperf: %s: %s %s\n", what, major, minor);
		exit(1);
	}
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* With -t, a ping-pong notes when its timed round `i` (counted from the first, 100 warm-up
 * rounds before it) begins; round `iterations` is the end. */
static void stamp(long i)
{
	if (stamps)
		stamps[i] = now();
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median round trip / 2, in us: perftest's t_typical, which leaves out the stalls a mean
 * carries (a page fault, the scheduler, an emulator translating code). */
static double typical_latency(void)
{
	for (long i = 0; i < iterations; i++)
		stamps[i] = stamps[i + 1] - stamps[i];
	qsort(stamps, (size_t)iterations, sizeof *stamps, by_value);
	double median = iterations % 2 ? stamps[iterations / 2]
				       : (stamps[iterations / 2 - 1] + stamps[iterations / 2]) / 2;
	return median / 2 * 1e6;
}

/* The next event of an EVD, polling or blocking as asked. */
static DAT_EVENT next_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_COUNT more;
	if (polling) {
		DAT_RETURN rc;
		/* OpenFabrics' library marks an empty queue with the error class bit. */
		while (DAT_GET_TYPE(rc = dat_evd_dequeue(evd, &e)) == DAT_QUEUE_EMPTY)
			;
		check(rc, "dat_evd_dequeue");
	} else {
		check(dat_evd_wait(evd, WAIT_US, 1, &e, &more), "dat_evd_wait");
	}
	return e;
}

static DAT_DTO_COMPLETION_EVENT_DATA next_dto(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e = next_event(evd);
	if (e.event_number != DAT_DTO_COMPLETION_EVENT) {
		fprintf(stderr, "datperf: unexpected event 0x%x\n", e.event_number);
		exit(1);
	}
	if (e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "datperf: DTO failed with status %d\n",
			e.event_data.dto_completion_event_data.status);
		exit(1);
	}
	return e.event_data.dto_completion_event_data;
}

static void open_side(struct side *s)
{
	DAT_REGION_DESCRIPTION region;
	DAT_EP_ATTR attr;
	DAT_VLEN registered;
	DAT_VADDR address;
	size_t bytes = (size_t)slot * (WINDOW * 2 + 1);

	memset(s, 0, sizeof(*s));
	s->async_evd = DAT_HANDLE_NULL;
	check(dat_ia_open(ia_name, 8, &s->async_evd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 4 * WINDOW, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 4 * WINDOW, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "dat_evd_create");
	memset(&attr, 0, sizeof(attr));
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.max_message_size = (DAT_VLEN)size;
	attr.max_rdma_size = (DAT_VLEN)size;
	attr.qos = DAT_QOS_BEST_EFFORT;
	attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.max_recv_dtos = 2 * WINDOW;
	attr.max_request_dtos = 2 * WINDOW;
	attr.max_recv_iov = 1;
	attr.max_request_iov = 1;
	attr.max_rdma_read_in = 1;
	attr.max_rdma_read_out = 1;
	attr.max_rdma_read_iov = 1;
	attr.max_rdma_write_iov = 1;
	check(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, &attr, &s->ep), "dat_ep_create");
	s->buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	if (!s->buf) {
		perror("datperf: aligned_alloc");
		exit(1);
	}
	memset(s->buf, 0, bytes);
	region.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, bytes, s->pz, DAT_MEM_PRIV_ALL_FLAG,
			     DAT_VA_TYPE_VA, &s->lmr, &s->lmr_ctx, &s->rmr_ctx, &registered, &address),
	      "dat_lmr_create");
}

static void close_side(struct side *s)
{
	DAT_EVENT e;
	check(dat_ep_disconnect(s->ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	do {
		e = next_event(s->conn_evd);
	} while (e.event_number != DAT_CONNECTION_EVENT_DISCONNECTED &&
		 e.event_number != DAT_CONNECTION_EVENT_BROKEN);
	check(dat_ep_free(s->ep), "dat_ep_free");
	check(dat_lmr_free(s->lmr), "dat_lmr_free");
	check(dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	free(s->buf);
}

/* Memory polling: the marker byte that ends message n, different from the one the same slot
 * held WINDOW messages earlier, and from the zeroed start. */
static unsigned char marker(long n)
{
	return (unsigned char)((n / WINDOW) + 1);
}

static DAT_LMR_TRIPLET send_iov(struct side *s, long n, long len)
{
	DAT_LMR_TRIPLET t;
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + (n % WINDOW) * slot);
	t.segment_length = (DAT_SEG_LENGTH)len;
	return t;
}

static DAT_LMR_TRIPLET recv_iov(struct side *s, long n)
{
	DAT_LMR_TRIPLET t;
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + (WINDOW + n % WINDOW) * slot);
	t.segment_length = (DAT_SEG_LENGTH)slot;
	return t;
}

static void post_recv(struct side *s, long n)
{
	DAT_LMR_TRIPLET iov = recv_iov(s, n);
	DAT_DTO_COOKIE c;
	c.as_64 = (DAT_UINT64)n;
	check(dat_ep_post_recv(s->ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
}

static void post_send(struct side *s, long n, long len, DAT_COMPLETION_FLAGS flags)
{
	DAT_LMR_TRIPLET iov = send_iov(s, n, len);
	DAT_DTO_COOKIE c;
	c.as_64 = (DAT_UINT64)n;
	check(dat_ep_post_send(s->ep, 1, &iov, c, flags), "dat_ep_post_send");
}

/* The byte a sender writes at `offset` of message `n` (sent from slot n % WINDOW, so the
 * slots are filled once, outside the timed loop); the receiver checks it. */
static unsigned char pattern(long n, long offset)
{
	return (unsigned char)((n % WINDOW) * 131 + offset * 7 + 1);
}

static void fill(unsigned char *p, long n, long len)
{
	for (long i = 0; i < len; i++)
		p[i] = pattern(n, i);
}

/* Every message's bytes as they should arrive, made once: checking them is then a memcmp, as
 * cheap as the application's own use of the data would be (a byte loop computing the pattern
 * took 33 us for 64 KiB, longer than the transfer it checked). */
static unsigned char *expected;

static void expect_patterns(void)
{
	expected = malloc((size_t)(WINDOW * slot));
	if (!expected) {
		perror("datperf: malloc");
		exit(1);
	}
	for (long n = 0; n < WINDOW; n++)
		fill(expected + n * slot, n, slot);
}

/* How many of the `len` bytes at `p` differ from message n's. */
static long verify(const unsigned char *p, long n, long len)
{
	const unsigned char *want = expected + (n % WINDOW) * slot;
	long bad = 0;
	if (memcmp(p, want, (size_t)len) == 0)
		return 0;
	for (long i = 0; i < len; i++)
		bad += p[i] != want[i];
	return bad;
}

/* Connection setup; both sides then tell each other their receive area. The listening side
 * tells the port it listens on through `port_pipe` (forked), or prints it (-l). */
static void serve(struct side *s, int port_pipe)
{
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_EVENT e;
	/* -r: the raw socket's port goes to the client in the accept's private data */
	int raw_listener = -1;
	uint16_t raw_port = 0;
	if (beside_raw) {
		struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
		socklen_t len = sizeof(any);
		raw_listener = socket(AF_INET, SOCK_STREAM, 0);
		if (raw_listener < 0 || bind(raw_listener, (struct sockaddr *)&any, sizeof(any)) ||
		    listen(raw_listener, 1) || getsockname(raw_listener, (struct sockaddr *)&any, &len)) {
			perror("datperf: the raw socket");
			exit(1);
		}
		raw_port = any.sin_port; /* network order, as it travels */
	}
	if (listen_port >= 0) {
		port = (DAT_CONN_QUAL)listen_port;
		check(dat_psp_create(s->ia, port, s->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
		printf("datperf: listening on port %ld\n", listen_port);
		fflush(stdout);
	} else {
		check(dat_psp_create_any(s->ia, &port, s->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
		if (write(port_pipe, &port, sizeof(port)) != sizeof(port))
			exit(1);
	}
	e = next_event(s->cr_evd);
	if (e.event_number != DAT_CONNECTION_REQUEST_EVENT)
		exit(1);
	check(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s->ep, beside_raw ? (DAT_COUNT)sizeof(raw_port) : 0,
			    beside_raw ? &raw_port : NULL),
	      "dat_cr_accept");
	e = next_event(s->conn_evd);
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "datperf: server: connection event 0x%x\n", e.event_number);
		exit(1);
	}
	check(dat_psp_free(psp), "dat_psp_free");
	if (beside_raw) {
		raw_fd = accept(raw_listener, NULL, NULL);
		if (raw_fd < 0) {
			perror("datperf: accepting the raw socket");
			exit(1);
		}
		close(raw_listener);
		int one = 1;
		setsockopt(raw_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
}

static void dial(struct side *s, int port_pipe)
{
	DAT_CONN_QUAL port;
	struct sockaddr_in sin;
	DAT_EVENT e;
	if (connect_given) {
		sin = connect_to;
		port = ntohs(connect_to.sin_port);
	} else {
		if (read(port_pipe, &port, sizeof(port)) != sizeof(port))
			exit(1);
		/* The server listens on the IA's own address (loopback for tcp-lo, the device's for
		 * an RDMA IA): ask the IA. */
		DAT_IA_ATTR ia_attr;
		DAT_PROVIDER_ATTR prov_attr;
		check(dat_ia_query(s->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &ia_attr, 0, &prov_attr), "dat_ia_query");
		memcpy(&sin, ia_attr.ia_address_ptr, sizeof(sin));
	}
	check(dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	e = next_event(s->conn_evd);
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "datperf: client: connection event 0x%x\n", e.event_number);
		exit(1);
	}
	if (beside_raw) {
		/* the server's raw port, from its accept's private data, at the same address */
		DAT_CONNECTION_EVENT_DATA *c = &e.event_data.connect_event_data;
		if (c->private_data_size < (DAT_COUNT)sizeof(sin.sin_port) || !c->private_data) {
			fprintf(stderr, "datperf: the server's raw port did not come with its accept\n");
			exit(1);
		}
		memcpy(&sin.sin_port, c->private_data, sizeof(sin.sin_port));
		raw_fd = socket(AF_INET, SOCK_STREAM, 0);
		if (raw_fd < 0 || connect(raw_fd, (struct sockaddr *)&sin, sizeof(sin))) {
			perror("datperf: connecting the raw socket");
			exit(1);
		}
		int one = 1;
		setsockopt(raw_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
}

/* Each side sends its receive area's RMR triplet; the receives for it are posted first. The
 * peer's arrives in a slot of its own: the peer may already be writing into the receive area
 * when it is read. */
static void exchange(struct side *s)
{
	DAT_RMR_TRIPLET *mine = (DAT_RMR_TRIPLET *)s->buf;
	DAT_DTO_COMPLETION_EVENT_DATA d;
	DAT_LMR_TRIPLET iov;
	DAT_DTO_COOKIE c;
	iov.lmr_context = s->lmr_ctx;
	iov.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + 2 * WINDOW * slot);
	iov.segment_length = (DAT_SEG_LENGTH)slot;
	c.as_64 = 0;
	check(dat_ep_post_recv(s->ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	mine->rmr_context = s->rmr_ctx;
	mine->virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + WINDOW * slot);
	mine->segment_length = (DAT_SEG_LENGTH)(WINDOW * slot);
	post_send(s, 0, sizeof(*mine), DAT_COMPLETION_DEFAULT_FLAG);
	next_dto(s->req_evd);
	d = next_dto(s->recv_evd);
	if (d.transfered_length != sizeof(DAT_RMR_TRIPLET)) {
		fprintf(stderr, "datperf: the peer's region did not arrive\n");
		exit(1);
	}
	memcpy(&s->peer, s->buf + 2 * WINDOW * slot, sizeof(s->peer));
}

static long bad_bytes;

/* Takes every completion that is there (memory polling reaps now and then, not waiting). */
static long reap(struct side *s)
{
	DAT_EVENT e;
	long n = 0;
	while (dat_evd_dequeue(s->req_evd, &e) == DAT_SUCCESS) {
		if (e.event_number != DAT_DTO_COMPLETION_EVENT ||
		    e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
			fprintf(stderr, "datperf: a request failed\n");
			exit(1);
		}
		n++;
	}
	return n;
}

/* Sends ping-pong message n: suppressed, as a latency-bound program posts it, but one in
 * WINDOW / 2 signalled and its completion reaped later, as a portable program must (a
 * provider may free a suppressed send's slot only with a later signalled completion). */
static void ping_send(struct side *s, long n)
{
	int signalled = n % (WINDOW / 2) == 0;
	if (signalled)
		reap(s);
	post_send(s, n, size, signalled ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG);
}

/* Round trip i of the send/recv ping-pong (the client sends first). */
static void ping_round(struct side *s, int client, long i)
{
	if (client)
		ping_send(s, i);
	DAT_DTO_COMPLETION_EVENT_DATA d = next_dto(s->recv_evd);
	long n = (long)d.user_cookie.as_64;
	bad_bytes += verify(s->buf + (WINDOW + n % WINDOW) * slot, i, d.transfered_length);
	post_recv(s, n + 1);
	if (!client)
		ping_send(s, i);
}

static void raw_io(int fd, char *p, long n, int receive)
{
	while (n > 0) {
		ssize_t k = receive ? recv(fd, p, (size_t)n, polling ? MSG_DONTWAIT : 0) : send(fd, p, (size_t)n, MSG_NOSIGNAL);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			fprintf(stderr, "datperf: the raw socket failed or closed\n");
			exit(1);
		}
		p += k;
		n -= k;
	}
}

/* A round trip on the raw socket, as rawtcp's ping-pong makes it. */
static void raw_round(int client, char *buf)
{
	if (client)
		raw_io(raw_fd, buf, size, 0);
	raw_io(raw_fd, buf, size, 1);
	if (!client)
		raw_io(raw_fd, buf, size, 0);
}

/* -r: batches of each in turn, so both see the machine at the same moments. */
#define RAW_BATCHES 10
/* Untimed rounds that begin each batch: the connection the other batch left idle wakes up
 * (ours: a lease to take again, acknowledgements held for a ride gone alone). */
#define BATCH_WARMUP 100

static double pingpong(struct side *s, int client)
{
	double start = 0;
	for (long i = 0; i < WINDOW; i++)
		fill(s->buf + i * slot, i, size);
	post_recv(s, 1);
	if (beside_raw) {
		char *raw_buf = calloc(1, (size_t)size);
		long per_batch = iterations / RAW_BATCHES > 0 ? iterations / RAW_BATCHES : 1, i = 0;
		double ours = 0, raw = 0;
		if (!raw_buf)
			exit(1);
		for (int b = 0; b < RAW_BATCHES; b++) {
			for (long k = 0; k < BATCH_WARMUP + per_batch; k++, i++) {
				if (k == BATCH_WARMUP)
					start = now();
				ping_round(s, client, i);
			}
			ours += now() - start;
			for (long k = 0; k < BATCH_WARMUP + per_batch; k++) {
				if (k == BATCH_WARMUP)
					start = now();
				raw_round(client, raw_buf);
			}
			raw += now() - start;
		}
		free(raw_buf);
		raw_latency = raw / ((double)per_batch * RAW_BATCHES) / 2 * 1e6;
		return ours / ((double)per_batch * RAW_BATCHES) / 2 * 1e6;
	}
	for (long i = 0; i < iterations + 100; i++) {
		if (i == 100)
			start = now(); /* the first rounds warm up */
		if (i >= 100)
			stamp(i - 100);
		ping_round(s, client, i);
	}
	double end = now();
	stamp(iterations);
	return (end - start) / iterations / 2 * 1e6;
}

/* The RDMA-write ping-pong polled in memory: the client writes message i into the server's
 * receive slot i % WINDOW, the server spins on that slot's last byte, checks the message and
 * writes its answer the same way. */
static double mempoll(struct side *s, int client)
{
	double start = 0;
	long done = 0;
	/* Spinning on memory never times out by itself: a peer that died would leave this side
	 * spinning for good. */
	alarm(120);
	for (long i = 0; i < WINDOW; i++)
		fill(s->buf + i * slot, i, size - 1);
	for (long i = 0; i < iterations + 100; i++) {
		if (i == 100)
			start = now(); /* the first rounds warm up */
		if (i >= 100)
			stamp(i - 100);
		for (int turn = 0; turn < 2; turn++) {
			if ((turn == 0) == !!client) {
				/* Its slot is free once the write that used it WINDOW messages ago is done:
				 * reaped now and then, waited for only when too many are out. */
				if (i - done >= WINDOW / 2)
					done += reap(s);
				while (i - done >= WINDOW)
					done += reap(s);
				unsigned char *out = s->buf + (i % WINDOW) * slot;
				out[size - 1] = marker(i);
				DAT_LMR_TRIPLET iov = send_iov(s, i, size);
				DAT_RMR_TRIPLET r = s->peer;
				DAT_DTO_COOKIE c;
				c.as_64 = (DAT_UINT64)i;
				r.virtual_address += (DAT_VADDR)((i % WINDOW) * slot);
				r.segment_length = (DAT_SEG_LENGTH)size;
				check(dat_ep_post_rdma_write(s->ep, 1, &iov, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
				      "dat_ep_post_rdma_write");
			} else {
				volatile unsigned char *in = s->buf + (WINDOW + i % WINDOW) * slot;
				while (in[size - 1] != marker(i))
					;
				__atomic_thread_fence(__ATOMIC_ACQUIRE);
				bad_bytes += verify((const unsigned char *)in, i, size - 1);
			}
		}
	}
	double elapsed = now() - start;
	stamp(iterations);
	while (done < iterations + 100)
		done += reap(s);
	alarm(0);
	return elapsed / iterations / 2 * 1e6;
}

/* Streams -s bytes `iterations` times (RDMA writes or sends, WINDOW in flight); the
 * receiver learns the end from a final message and checks the last transfer's bytes. */
static double stream(struct side *s, int client, int rdma)
{
	double start;
	long done = 0, posted = 0;
	if (!client) {
		if (!rdma) {
			for (long i = 0; i < WINDOW; i++)
				post_recv(s, i);
		} else {
			/* the final message lands in our (idle) send area, not among the writes */
			DAT_LMR_TRIPLET iov = send_iov(s, 0, slot);
			DAT_DTO_COOKIE c;
			c.as_64 = 0;
			check(dat_ep_post_recv(s->ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
		}
		for (long expected = 0;; expected++) {
			DAT_DTO_COMPLETION_EVENT_DATA d = next_dto(s->recv_evd);
			long n = (long)d.user_cookie.as_64;
			if (!rdma && n != expected) {
				fprintf(stderr, "datperf: receive %ld completed where %ld was due\n", n, expected);
				exit(1);
			}
			if (rdma || n == iterations - 1) {
				/* the last message (a send after the writes) */
				long last = iterations - 1;
				long area = rdma ? (last % WINDOW) : (n % WINDOW);
				bad_bytes += verify(s->buf + (WINDOW + area) * slot, last, size);
				return 0;
			}
			post_recv(s, n + WINDOW);
		}
	}
	for (long i = 0; i < WINDOW; i++)
		fill(s->buf + i * slot, i, size);
	start = now();
	while (done < iterations) {
		while (posted < iterations && posted - done < WINDOW) {
			DAT_LMR_TRIPLET iov = send_iov(s, posted, size);
			DAT_DTO_COOKIE c;
			c.as_64 = (DAT_UINT64)posted;
			if (rdma) {
				DAT_RMR_TRIPLET r = s->peer;
				r.virtual_address += (DAT_VADDR)((posted % WINDOW) * slot);
				r.segment_length = (DAT_SEG_LENGTH)size;
				check(dat_ep_post_rdma_write(s->ep, 1, &iov, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
				      "dat_ep_post_rdma_write");
			} else {
				check(dat_ep_post_send(s->ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
			}
			posted++;
		}
		next_dto(s->req_evd);
		done++;
	}
	double elapsed = now() - start;
	if (rdma) {
		/* tell the receiver the writes are done (they are complete, so already placed) */
		post_send(s, 0, 1, DAT_COMPLETION_DEFAULT_FLAG);
		next_dto(s->req_evd);
	}
	return (double)size * iterations / elapsed / 1e6;
}

/* One send at a time, each waited for until it completes before the next is posted: how a
 * program that must know its message arrived sends (a send completes once the peer has it,
 * on a verbs RC QP as on the TCP transport). The receiver keeps WINDOW receives posted and
 * checks each message. 100 messages warm up. */
static double sendwait(struct side *s, int client)
{
	long total = iterations + 100;
	double start = 0;
	if (!client) {
		for (long i = 0; i < WINDOW; i++)
			post_recv(s, i);
		for (long expected = 0; expected < total; expected++) {
			DAT_DTO_COMPLETION_EVENT_DATA d = next_dto(s->recv_evd);
			long n = (long)d.user_cookie.as_64;
			if (n != expected || d.transfered_length != (DAT_VLEN)size) {
				fprintf(stderr, "datperf: receive %ld (%lu bytes) completed where %ld was due\n", n,
					(unsigned long)d.transfered_length, expected);
				exit(1);
			}
			bad_bytes += verify(s->buf + (WINDOW + n % WINDOW) * slot, n, size);
			if (n + WINDOW < total)
				post_recv(s, n + WINDOW);
		}
		return 0;
	}
	for (long i = 0; i < WINDOW; i++)
		fill(s->buf + i * slot, i, size);
	for (long i = 0; i < total; i++) {
		if (i == 100)
			start = now();
		post_send(s, i, size, DAT_COMPLETION_DEFAULT_FLAG);
		DAT_DTO_COMPLETION_EVENT_DATA d = next_dto(s->req_evd);
		if ((long)d.user_cookie.as_64 != i) {
			fprintf(stderr, "datperf: send %ld completed where %ld was due\n", (long)d.user_cookie.as_64, i);
			exit(1);
		}
	}
	return iterations / (now() - start);
}

/* -m dequeue's figures: ns per call on the connection EVD and on the receive EVD, each the
 * median of batches and the mean of all calls. */
static double dequeue_ns[2][2];

#define DEQUEUE_BATCH 1000

/* ns per dat_evd_dequeue of `evd`, which must stay empty: the median batch's, and the mean. */
static void time_empty_dequeue(DAT_EVD_HANDLE evd, double *median, double *mean)
{
	long batches = (iterations + DEQUEUE_BATCH - 1) / DEQUEUE_BATCH;
	double *per_call = malloc((size_t)batches * sizeof *per_call);
	double all = now();
	DAT_EVENT e;
	if (!per_call) {
		perror("datperf: malloc");
		exit(1);
	}
	for (long b = 0; b < batches; b++) {
		double t = now();
		for (int i = 0; i < DEQUEUE_BATCH; i++) {
			DAT_RETURN rc = dat_evd_dequeue(evd, &e);
			if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) {
				fprintf(stderr, "datperf: an EVD that should stay empty answered 0x%x\n", rc);
				exit(1);
			}
		}
		per_call[b] = (now() - t) / DEQUEUE_BATCH * 1e9;
	}
	*mean = (now() - all) / ((double)batches * DEQUEUE_BATCH) * 1e9;
	qsort(per_call, (size_t)batches, sizeof *per_call, by_value);
	*median = batches % 2 ? per_call[batches / 2] : (per_call[batches / 2 - 1] + per_call[batches / 2]) / 2;
	free(per_call);
}

/* The client times empty dequeues while the server waits, quiet, for the message that ends
 * the run (it sends nothing before, so the client's EVDs stay empty). */
static void dequeue_cost(struct side *s, int client)
{
	if (!client) {
		DAT_EVENT e;
		DAT_COUNT more;
		DAT_RETURN rc;
		post_recv(s, 0);
		/* however long the client takes on a busy machine (a timeout here is its 10 s) */
		for (int tries = 0; DAT_GET_TYPE(rc = dat_evd_wait(s->recv_evd, WAIT_US, 1, &e, &more)) == DAT_TIMEOUT_EXPIRED &&
				    tries < 12;
		     tries++)
			;
		check(rc, "dat_evd_wait");
		return;
	}
	for (long i = 0; i < WINDOW; i++)
		post_recv(s, i);
	/* a first pass warms the path up */
	long asked = iterations;
	iterations = DEQUEUE_BATCH * 10L;
	time_empty_dequeue(s->conn_evd, &dequeue_ns[0][0], &dequeue_ns[0][1]);
	iterations = asked;
	time_empty_dequeue(s->conn_evd, &dequeue_ns[0][0], &dequeue_ns[0][1]);
	time_empty_dequeue(s->recv_evd, &dequeue_ns[1][0], &dequeue_ns[1][1]);
	post_send(s, 0, 1, DAT_COMPLETION_DEFAULT_FLAG);
	next_dto(s->req_evd);
}

/* -c's address:port, into connect_to; 0 if it is not one. */
static int parse_address(const char *arg)
{
	char host[64];
	const char *colon = strrchr(arg, ':');
	long port = colon ? atol(colon + 1) : 0;
	if (!colon || colon - arg >= (long)sizeof(host) || port < 1 || port > 65535)
		return 0;
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = 0;
	memset(&connect_to, 0, sizeof(connect_to));
	connect_to.sin_family = AF_INET;
	connect_to.sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &connect_to.sin_addr) == 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: datperf [-P ia] [-m pingpong|mempoll|write|send|sendwait|dequeue] [-s bytes] [-n iterations]\n"
			"               [-p] [-t] [-r] [-q] [-l port | -c address:port]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c, pipefd[2] = {-1, -1}, status, typical = 0, client;
	struct side s;
	pid_t child;
	double figure;

	while ((c = getopt(argc, argv, "P:m:s:n:ptrql:c:")) != -1) {
		switch (c) {
		case 'P': ia_name = optarg; break;
		case 'm': mode = optarg; break;
		case 's': size = atol(optarg); break;
		case 'n': iterations = atol(optarg); break;
		case 'p': polling = 1; break;
		case 't': typical = 1; break;
		case 'r': beside_raw = 1; break;
		case 'q': quiet = 1; break;
		case 'l': listen_port = atol(optarg); break;
		case 'c': if (!(connect_given = parse_address(optarg))) usage(); break;
		default: usage();
		}
	}
	if (size < 1 || iterations < 1 || listen_port == 0 || listen_port > 65535 || (listen_port > 0 && connect_given) ||
	    (strcmp(mode, "pingpong") && strcmp(mode, "mempoll") && strcmp(mode, "write") && strcmp(mode, "send") &&
	     strcmp(mode, "sendwait") && strcmp(mode, "dequeue")) ||
	    (beside_raw && (strcmp(mode, "pingpong") || typical)))
		usage();
	slot = size < 64 ? 64 : size;
	if (typical && (stamps = malloc((size_t)(iterations + 1) * sizeof *stamps)) == NULL)
		return 1;
	expect_patterns();
	/* Both sides forked from here (the parent listens), or the one side -l or -c names. */
	if (listen_port > 0 || connect_given) {
		child = listen_port > 0 ? 1 : 0;
	} else {
		if (pipe(pipefd))
			return 1;
		child = fork();
		if (child < 0)
			return 1;
	}
	client = !child;
	open_side(&s);
	if (client)
		dial(&s, pipefd[0]);
	else
		serve(&s, pipefd[1]);
	exchange(&s);
	if (!strcmp(mode, "pingpong"))
		figure = pingpong(&s, client);
	else if (!strcmp(mode, "mempoll"))
		figure = mempoll(&s, client);
	else if (!strcmp(mode, "sendwait"))
		figure = sendwait(&s, client);
	else if (!strcmp(mode, "dequeue")) {
		dequeue_cost(&s, client);
		figure = 0;
	} else
		figure = stream(&s, client, !strcmp(mode, "write"));
	close_side(&s);
	if (raw_fd >= 0)
		close(raw_fd);
	if (client) {
		if (!quiet)
			printf("datperf: %s, %ld bytes x %ld, %s on %s: ", mode, size, iterations,
			       polling ? "polling" : "blocking", ia_name);
		if (beside_raw)
			printf(quiet ? "%.2f %.2f\n" : "%.2f us one-way latency; raw TCP between the same two, batch for batch: %.2f us\n",
			       figure, raw_latency);
		else if ((!strcmp(mode, "pingpong") || !strcmp(mode, "mempoll")) && stamps)
			printf(quiet ? "%.2f %.2f\n" : "%.2f us one-way latency, typical %.2f us\n", figure,
			       typical_latency());
		else if (!strcmp(mode, "pingpong") || !strcmp(mode, "mempoll"))
			printf(quiet ? "%.2f\n" : "%.2f us one-way latency\n", figure);
		else if (!strcmp(mode, "sendwait"))
			printf(quiet ? "%.0f\n" : "%.0f messages/s\n", figure);
		else if (!strcmp(mode, "dequeue") && quiet)
			printf("%.1f %.1f\n", dequeue_ns[0][0], dequeue_ns[1][0]);
		else if (!strcmp(mode, "dequeue"))
			printf("empty dat_evd_dequeue: connection EVD %.1f ns, receive EVD %.1f ns a call "
			       "(median batch; mean of all calls %.1f and %.1f ns)\n",
			       dequeue_ns[0][0], dequeue_ns[1][0], dequeue_ns[0][1], dequeue_ns[1][1]);
		else
			printf(quiet ? "%.1f\n" : "%.1f MB/s\n", figure);
		return bad_bytes ? 3 : 0;
	}
	if (listen_port > 0) {
		/* the listening side alone: its own checks are its verdict */
		if (bad_bytes) {
			fprintf(stderr, "datperf: %ld bytes arrived wrong\n", bad_bytes);
			return 3;
		}
		if (!quiet)
			printf("datperf: every byte checked here arrived intact\n");
		return 0;
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "datperf: the client failed\n");
		return 1;
	}
	if (bad_bytes) {
		fprintf(stderr, "datperf: %ld bytes arrived wrong\n", bad_bytes);
		return 3;
	}
	if (!quiet)
		printf("datperf: every byte checked arrived intact\n");
	return 0;
}
