/*
 * waits: a ping-pong between two processes over one DAT connection, for every way a program
 * learns that something arrived, over every message size from 1 B to 4 KiB.
 *
 *   waits [-v] [-i ITERATIONS] [-t STALL_SECONDS] MODE OP
 *
 * MODE is how the waiting side learns of arrivals:
 *   dequeue  dat_evd_dequeue in a loop
 *   wait     dat_evd_wait, threshold 1
 *   wait0    dat_evd_wait with a zero timeout, in a loop (a poll through the wait call, as
 *            programs written for OpenFabrics' library poll: its wait looks at the CQ first)
 *   cno      both DTO EVDs feed a CNO: dat_cno_wait, then dat_evd_dequeue
 *   cnofd    the same CNO made by dat_cno_fd_create: poll() on its fd, then dat_evd_dequeue
 *   memory   the receiver spins on the receive buffer (its last byte is a marker that differs
 *            for every message) and reaps completions later, every REAP_EVERY messages
 *   suppress as a benchmark written for RDMA hardware polls, with messages of 4 to 16 B: the
 *            receiver spins on the marker of its one buffer; a send's receiver then calls
 *            dat_evd_dequeue once, not in a loop (it may find the completion or nothing), and
 *            posts the next receive into the same buffer before it answers. Requests are
 *            posted with DAT_COMPLETION_SUPPRESS_FLAG, every SIGNAL_EVERY-th (and the last)
 *            with a completion, which the poster spins on with dat_evd_dequeue at once. On a
 *            device the completion is in the queue as soon as the data shows, and requests
 *            complete with no help from the target's threads
 * OP is what carries a message:
 *   send     dat_ep_post_send into receives posted ahead
 *   write    dat_ep_post_rdma_write into the peer's registered buffer; in the event modes a
 *            zero-length send follows it, and its receive's completion says the write's data
 *            is in place (a connection delivers in order); in memory and suppress modes the
 *            marker does, and no receive is posted
 *
 * The top process forks a server (dat_psp_create_any; the port goes to the client through a
 * pipe) and a client, and watches them: a pair of which neither side moved for STALL_SECONDS
 * (default 10) is a hang, reported with where each side stood and what it counted. A slow run
 * is not a hang: on a loaded machine a memory-polling pair takes many times longer, since each
 * message waits for a library thread to get a CPU from the spinning consumers.
 *
 * Every byte of every message is checked against a pattern of (iteration, size, direction);
 * every completion's cookie, status and length are checked, in order, so an event lost,
 * duplicated or extra fails the run; a slot that changes before its message was sent is an
 * extra arrival. Memory mode reads a receive buffer before its completion, where the man
 * pages promise nothing: the marker may show before the rest of the message (a copy stores
 * its first bytes last), so the receiver waits for the whole message ("torn" counts those),
 * and checks a send's again at its completion. Suppress mode checks a receive's completion by
 * its cookie, status and length (its buffer holds a later message by then) and the bytes after
 * each message (nothing may land beyond it); "empty dequeues" counts its dequeues that found
 * nothing, "trailing" how many receives' completions such a dequeue was behind at most (on a
 * device, where the completion shows with the data, neither grows).
 * Prints one line: mode, op, sizes, iterations, elapsed, PASS or FAIL; exits 0 on PASS.
 *
 * -v prints what each side counted, also on PASS.
 * WAITS_IA names the IA both sides open (default: the built-in tcp-lo).
 * WAITS_SHARED=1 gives each EP one DTO EVD for its receives and its requests (a common layout;
 * not in suppress mode, whose poster spins on its request EVD alone): each completion is
 * handled by its operation, and a side that awaits a message handles requests meanwhile.
 * WAITS_HOLD=N keeps a hung pair, or a side that failed, alive N seconds (to attach gdb).
 * WAITS_SIGNAL_US=N sends each side a SIGALRM every N microseconds, caught by a handler that
 * does nothing, installed without SA_RESTART (as a profiler's or a runtime's timer is): every
 * system call that blocks, the library's and this program's, is interrupted again and again,
 * and must neither fail nor lose a wake-up for it.
 */
#include <dat2/udat.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 16         /* buffers used in turn: a slot is reused SLOTS messages later */
#define SLOT 4160        /* room for the largest message */
#define NOTE 64          /* room for a write's zero-length notice */
#define MAX_SIZE 4096
#define REAP_EVERY 8     /* memory mode reaps completions every so many messages */
#define QLEN 256
#define MAX_OUT 128      /* requests in flight, at most (memory mode lets them pile up) */
#define SETUP_US (10 * 1000 * 1000)
#define CNO_WAIT_US (2 * 1000 * 1000) /* an event must wake a CNO waiter well before this */
#define SETTLE_S 2.0     /* how long a memory-polled message may take to show whole */
#define SIGNAL_EVERY 16  /* suppress mode: one request in so many is posted with a completion */
#define SUPPRESS_RECV_QLEN 4 /* suppress mode: the receive EVD's length */

enum mode { DEQUEUE, WAIT, CNO, CNOFD, MEMORY, SUPPRESS, WAIT0 };
#define MODES 7
enum op { SEND, WRITE };
enum { SERVER, CLIENT };
enum kind { K_SEND = 1, K_WRITE, K_RECV };

static const char *mode_names[] = { "dequeue", "wait", "cno", "cnofd", "memory", "suppress", "wait0" };
static const char *op_names[] = { "send", "write" };
static const char *side_names[] = { "server", "client" };

/* What a side is doing, in memory the top process reads when the pair hangs. */
enum phase { P_START, P_CONNECT, P_SEND, P_AWAIT, P_REAP, P_DRAIN, P_DISCONNECT, P_DONE, P_FAILED, P_COMPLETE };
static const char *phase_names[] = { "starting", "connecting", "sending", "awaiting", "reaping",
				     "draining", "disconnecting", "done", "failed",
				     "spinning on the completion of" };

struct counts {
	volatile int phase;
	volatile long msg;          /* the message being sent or awaited */
	volatile long sends, sends_done, writes, writes_done;
	volatile long recvs, recvs_done, flushed;
	volatile long arrivals;     /* messages this side saw arrive (event or marker) */
	volatile long torn;         /* markers seen before the rest of the message showed */
	volatile long lost_wakeups; /* a CNO wait timed out with an event already queued */
	volatile long empty;        /* suppress mode: its one dequeue per message found nothing */
	volatile long trailing;     /* suppress mode: the most receives whose completion that dequeue
				     * had not seen yet, the message just seen included */
	volatile double last_at;    /* when the last message arrived (a stall shows as a gap) */
	volatile double max_gap;
	volatile long max_gap_msg;
	volatile long port;         /* the server's, to find the connection in ss or a trace */
	char why[512];
};

struct shared {
	struct counts side[2];
};

/* The run's parameters, the same in both sides. */
static enum mode mode;
/* WAITS_SHARED: one DTO EVD for an EP's receives and requests. */
static int shared_evd;
static enum op op;
static int iters = 32;
static int sizes[64];
static int nsizes;
static long total; /* messages each way */

/* One side of the connection. */
struct side {
	int me;
	struct counts *c;
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
	DAT_CNO_HANDLE cno;
	DAT_FD cno_fd;
	DAT_EP_HANDLE ep;
	DAT_PSP_HANDLE psp;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char *send_area, *recv_area, *note_area;
	DAT_RMR_TRIPLET peer; /* the peer's recv_area */
	/* Requests in flight, oldest first: each must complete next, once. */
	DAT_UINT64 out[MAX_OUT];
	long out_head, out_tail;
	/* Per message received: seen arriving, and its receive completed (both retire it). */
	unsigned char *arrived, *completed;
	long retired;   /* messages whose slot went back to the library */
	long recv_next; /* the next receive completion expected */
	int to_peer, from_peer; /* pipes */
};

struct info {
	DAT_CONN_QUAL port;
	DAT_RMR_CONTEXT rmr_ctx;
	DAT_VADDR addr;
};

/* ---- reporting ---- */

static void fail(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(struct side *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->c->why, sizeof(s->c->why), fmt, ap);
	va_end(ap);
	s->c->phase = P_FAILED;
	fprintf(stderr, "waits: %s: %s\n", side_names[s->me], s->c->why);
	/* Under WAITS_HOLD a failed side stays, connection and all, for a debugger to see. */
	if (getenv("WAITS_HOLD"))
		sleep((unsigned)atoi(getenv("WAITS_HOLD")) + 10);
	_exit(1);
}

static const char *ret_name(DAT_RETURN r, char *buf, size_t len)
{
	const char *major = "?", *minor = "?";
	dat_strerror(r, &major, &minor);
	snprintf(buf, len, "%s %s (0x%08x)", major ? major : "?", minor ? minor : "?", (unsigned)r);
	return buf;
}

static void must(struct side *s, DAT_RETURN r, const char *what)
{
	char b[160];
	if (r != DAT_SUCCESS)
		fail(s, "%s: %s", what, ret_name(r, b, sizeof(b)));
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* ---- messages ---- */

static int size_of(long m) { return sizes[m / iters]; }
static int iter_of(long m) { return (int)(m % iters); }

/* Every byte but the last: a hash of (iteration, size, direction, offset). */
static unsigned char pattern(int iter, int size, int dir, int off)
{
	uint32_t h = (uint32_t)(off + 1) * 2654435761u;
	h ^= (uint32_t)iter * 40503u ^ (uint32_t)size * 2246822519u ^ (uint32_t)dir * 3266489917u;
	h ^= h >> 15;
	h *= 2246822519u;
	return (unsigned char)(h >> 24);
}

/* The last byte: never 0 (a slot's poison), and never the same for two messages that share a
 * slot, so a marker seen is this message's, not a stale one. */
static unsigned char marker(long m, int dir)
{
	return (unsigned char)(1 + (2 * m + dir) % 255);
}

static unsigned char expected(long m, int dir, int off)
{
	int size = size_of(m);
	return off == size - 1 ? marker(m, dir) : pattern(iter_of(m), size, dir, off);
}

static void fill(unsigned char *buf, long m, int dir)
{
	for (int off = 0; off < size_of(m); off++)
		buf[off] = expected(m, dir, off);
}

/* The first wrong byte of message m in buf, or -1. */
static int first_wrong(const volatile unsigned char *buf, long m, int dir)
{
	for (int off = 0; off < size_of(m); off++)
		if (buf[off] != expected(m, dir, off))
			return off;
	return -1;
}

static void check_message(struct side *s, const volatile unsigned char *buf, long m, int dir, const char *when)
{
	int off = first_wrong(buf, m, dir);
	if (off >= 0)
		fail(s, "message %ld (size %d, iteration %d) %s: byte %d is 0x%02x, expected 0x%02x", m,
		     size_of(m), iter_of(m), when, off, buf[off], expected(m, dir, off));
}

/* A slot nobody wrote into since it was poisoned. */
static int poisoned(const volatile unsigned char *buf, int len)
{
	for (int i = 0; i < len; i++)
		if (buf[i])
			return 0;
	return 1;
}

static unsigned char *slot(unsigned char *area, long m) { return area + (m % SLOTS) * SLOT; }

static DAT_UINT64 cookie(enum kind k, long m) { return ((DAT_UINT64)k << 56) | (DAT_UINT64)m; }
static enum kind kind_of(DAT_UINT64 c) { return (enum kind)(c >> 56); }
static long msg_of(DAT_UINT64 c) { return (long)(c & ((1ULL << 56) - 1)); }

static DAT_LMR_TRIPLET triplet(struct side *s, unsigned char *p, int len)
{
	DAT_LMR_TRIPLET t;
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)p;
	t.segment_length = (DAT_SEG_LENGTH)len;
	return t;
}

/* The direction of what this side receives: the server gets pings (0), the client pongs (1). */
static int in_dir(struct side *s) { return s->me == SERVER ? 0 : 1; }

/* ---- posting ---- */

static void track(struct side *s, enum kind k, long m)
{
	if (s->out_tail - s->out_head >= MAX_OUT)
		fail(s, "more than %d requests in flight", MAX_OUT);
	s->out[s->out_tail++ % MAX_OUT] = cookie(k, m);
}

/* The receive of message m: its slot (or, for a write's notice, its notice slot). */
static void post_recv(struct side *s, long m)
{
	DAT_LMR_TRIPLET t = mode == SUPPRESS ? triplet(s, s->recv_area, SLOT)
			    : op == SEND     ? triplet(s, slot(s->recv_area, m), SLOT)
					     : triplet(s, s->note_area + (m % SLOTS) * NOTE, NOTE);
	DAT_DTO_COOKIE ck;
	ck.as_64 = cookie(K_RECV, m);
	must(s, dat_ep_post_recv(s->ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	s->c->recvs++;
}

/* Whether this side's messages come with receives: sends do, and so do the notices that follow
 * writes in the event modes; writes polled in memory need none. */
static int uses_recvs(void) { return op == SEND || (mode != MEMORY && mode != SUPPRESS); }

static void post_send(struct side *s, unsigned char *buf, int len, long m)
{
	DAT_LMR_TRIPLET t = triplet(s, buf, len);
	DAT_DTO_COOKIE ck;
	ck.as_64 = cookie(K_SEND, m);
	track(s, K_SEND, m);
	must(s, dat_ep_post_send(s->ep, len ? 1 : 0, &t, ck, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
	s->c->sends++;
}

static void post_write(struct side *s, unsigned char *buf, int len, long m)
{
	DAT_LMR_TRIPLET t = triplet(s, buf, len);
	DAT_RMR_TRIPLET r = s->peer;
	DAT_DTO_COOKIE ck;
	r.virtual_address += (DAT_VADDR)((m % SLOTS) * SLOT);
	r.segment_length = (DAT_SEG_LENGTH)len;
	ck.as_64 = cookie(K_WRITE, m);
	track(s, K_WRITE, m);
	must(s, dat_ep_post_rdma_write(s->ep, 1, &t, ck, &r, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_rdma_write");
	s->c->writes++;
}

/* ---- completions ---- */

static void check_dto(struct side *s, const DAT_EVENT *e, DAT_EVD_HANDLE evd)
{
	if (e->event_number != DAT_DTO_COMPLETION_EVENT)
		fail(s, "event 0x%x on a DTO EVD (message %ld)", (unsigned)e->event_number, s->c->msg);
	if (e->evd_handle != evd)
		fail(s, "a completion names another EVD");
	if (e->event_data.dto_completion_event_data.ep_handle != s->ep)
		fail(s, "a completion names another EP");
}

/* A receive of message m is done with: arrived and completed. Its slot is poisoned (so no old
 * marker can pass for a new one) and goes back to the library for message m + SLOTS. */
static void retire(struct side *s)
{
	while (s->retired < total + SLOTS && s->arrived[s->retired] && s->completed[s->retired]) {
		long m = s->retired++;
		if (op == SEND)
			memset(slot(s->recv_area, m), 0, SLOT);
		if (uses_recvs())
			post_recv(s, m + SLOTS);
	}
}

static void on_recv(struct side *s, const DAT_EVENT *e)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &e->event_data.dto_completion_event_data;
	DAT_UINT64 ck = d->user_cookie.as_64;
	long m = msg_of(ck);
	DAT_COUNT want = op == SEND ? size_of(s->recv_next) : 0;
	check_dto(s, e, s->recv_evd);
	if (kind_of(ck) != K_RECV || m != s->recv_next)
		fail(s, "receive completion for cookie 0x%llx, expected message %ld (a receive lost, "
		     "duplicated or out of order)", (unsigned long long)ck, s->recv_next);
	if (d->status != DAT_DTO_SUCCESS)
		fail(s, "receive of message %ld completed with status %d", m, (int)d->status);
	if (m >= total)
		fail(s, "an extra arrival: receive %ld completed with %u bytes after the last message", m,
		     (unsigned)d->transfered_length);
	if ((DAT_COUNT)d->transfered_length != want)
		fail(s, "receive of message %ld: transferred_length %u, expected %d", m,
		     (unsigned)d->transfered_length, (int)want);
	/* The completion is the promise that the data is in place: every byte, now. */
	if (op == SEND && mode != SUPPRESS)
		check_message(s, slot(s->recv_area, m), m, in_dir(s), "at its completion");
	s->recv_next++;
	s->c->recvs_done++;
	if (mode == SUPPRESS)
		return; /* its one buffer holds a later message by now: the marker retired it */
	s->completed[m] = 1;
	if (mode != MEMORY) {
		s->arrived[m] = 1; /* an event mode learns of the arrival by this completion */
		s->c->arrivals++;
	}
	retire(s);
}

static void on_request(struct side *s, const DAT_EVENT *e)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &e->event_data.dto_completion_event_data;
	DAT_UINT64 ck = d->user_cookie.as_64;
	long m = msg_of(ck);
	enum kind k = kind_of(ck);
	check_dto(s, e, s->req_evd);
	if (s->out_head == s->out_tail)
		fail(s, "a request completion with none in flight (cookie 0x%llx)", (unsigned long long)ck);
	if (ck != s->out[s->out_head % MAX_OUT])
		fail(s, "request completion for cookie 0x%llx, expected 0x%llx (lost, duplicated or out of order)",
		     (unsigned long long)ck, (unsigned long long)s->out[s->out_head % MAX_OUT]);
	if (d->status != DAT_DTO_SUCCESS)
		fail(s, "request %s of message %ld completed with status %d", k == K_WRITE ? "write" : "send",
		     m, (int)d->status);
	/* A write's notice is a zero-length send. */
	DAT_COUNT want = (op == WRITE && k == K_SEND) ? 0 : size_of(m);
	if ((DAT_COUNT)d->transfered_length != want)
		fail(s, "request of message %ld: transferred_length %u, expected %d", m,
		     (unsigned)d->transfered_length, (int)want);
	s->out_head++;
	if (k == K_WRITE)
		s->c->writes_done++;
	else
		s->c->sends_done++;
}

static void on_event(struct side *s, DAT_EVD_HANDLE evd, const DAT_EVENT *e)
{
	if (shared_evd ? e->event_data.dto_completion_event_data.operation == DAT_DTO_RECEIVE : evd == s->recv_evd)
		on_recv(s, e);
	else
		on_request(s, e);
}

/* ---- waiting, the way the mode says ---- */

/* The next event of evd, by polling. */
static void by_dequeue(struct side *s, DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	DAT_RETURN r;
	char b[160];
	while ((r = dat_evd_dequeue(evd, e)) == DAT_QUEUE_EMPTY)
		;
	if (r != DAT_SUCCESS)
		fail(s, "dat_evd_dequeue: %s", ret_name(r, b, sizeof(b)));
}

static void by_wait(struct side *s, DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	DAT_COUNT more;
	must(s, dat_evd_wait(evd, DAT_TIMEOUT_INFINITE, 1, e, &more), "dat_evd_wait");
}

/* A poll through the wait call: a zero timeout expires at once when nothing came. */
static void by_wait0(struct side *s, DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	DAT_COUNT more;
	DAT_RETURN r;
	char b[160];
	while (DAT_GET_TYPE(r = dat_evd_wait(evd, 0, 1, e, &more)) == DAT_TIMEOUT_EXPIRED)
		;
	if (r != DAT_SUCCESS)
		fail(s, "dat_evd_wait (zero timeout): %s", ret_name(r, b, sizeof(b)));
}

/* A CNO waiter dequeues first (a notification may have come while it was not waiting), and
 * sleeps only on an empty EVD. A wait that times out while an event is queued is a lost
 * notification: counted, and the run fails, but it goes on to show what else follows. */
static void by_cno(struct side *s, DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	for (;;) {
		DAT_EVD_HANDLE which = DAT_HANDLE_NULL;
		DAT_RETURN r;
		char b[160];
		if (dat_evd_dequeue(evd, e) == DAT_SUCCESS)
			return;
		if (mode == CNO) {
			r = dat_cno_wait(s->cno, CNO_WAIT_US, &which);
			if (r != DAT_SUCCESS && DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY && DAT_GET_TYPE(r) != DAT_TIMEOUT_EXPIRED)
				fail(s, "dat_cno_wait: %s", ret_name(r, b, sizeof(b)));
		} else {
			struct pollfd p = { .fd = s->cno_fd, .events = POLLIN };
			int n = poll(&p, 1, CNO_WAIT_US / 1000);
			if (n < 0 && errno != EINTR)
				fail(s, "poll on the CNO's fd: %s", strerror(errno));
			if (n < 0)
				continue; /* a signal (WAITS_SIGNAL_US): it did not sleep its time */
			r = n > 0 ? DAT_SUCCESS : DAT_QUEUE_EMPTY;
			/* Taking the trigger is what makes the fd quiet again. */
			if (n > 0)
				must(s, dat_cno_trigger(s->cno, &which), "dat_cno_trigger");
		}
		if (r != DAT_SUCCESS && dat_evd_dequeue(evd, e) == DAT_SUCCESS) {
			s->c->lost_wakeups++;
			fprintf(stderr, "waits: %s: %s slept %d s with an event queued (message %ld)\n",
				side_names[s->me], mode == CNO ? "dat_cno_wait" : "poll on the CNO fd",
				CNO_WAIT_US / 1000000, s->c->msg);
			return;
		}
	}
}

/* The next event of evd, handled. */
static void await_event(struct side *s, DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	int before = s->c->phase;
	s->c->phase = P_AWAIT;
	switch (mode) {
	case DEQUEUE:
	case MEMORY:
	case SUPPRESS:
		by_dequeue(s, evd, &e);
		break;
	case WAIT:
		by_wait(s, evd, &e);
		break;
	case WAIT0:
		by_wait0(s, evd, &e);
		break;
	case CNO:
	case CNOFD:
		by_cno(s, evd, &e);
		break;
	}
	on_event(s, evd, &e);
	s->c->phase = before;
}

/* Memory mode's batch: every completion already queued, from both EVDs. */
static void reap(struct side *s)
{
	DAT_EVD_HANDLE evds[2] = { s->recv_evd, s->req_evd };
	int before = s->c->phase;
	s->c->phase = P_REAP;
	for (int i = 0; i < 2; i++) {
		DAT_EVENT e;
		DAT_RETURN r;
		char b[160];
		while ((r = dat_evd_dequeue(evds[i], &e)) == DAT_SUCCESS)
			on_event(s, evds[i], &e);
		if (r != DAT_QUEUE_EMPTY)
			fail(s, "dat_evd_dequeue: %s", ret_name(r, b, sizeof(b)));
	}
	s->c->phase = before;
}

/* Until every request up to and including the n-th posted one has completed. */
static void requests_done(struct side *s, long n)
{
	while (s->out_head < n)
		await_event(s, s->req_evd);
}

/* ---- one message each way ---- */

/* Requests posted per message: a send, a write, or a write and its notice. */
static long per_message(void) { return op == WRITE && mode != MEMORY ? 2 : 1; }

/* Sends message m from this side. Its buffer is the send slot of m, which the send of message
 * m - SLOTS (or its write) may still be reading: that one completes first. */
static void send_message(struct side *s, long m)
{
	int dir = 1 - in_dir(s);
	unsigned char *buf = slot(s->send_area, m);
	s->c->phase = P_SEND;
	s->c->msg = m;
	if (m >= SLOTS)
		requests_done(s, (m - SLOTS + 1) * per_message());
	fill(buf, m, dir);
	if (op == SEND) {
		post_send(s, buf, size_of(m), m);
	} else {
		post_write(s, buf, size_of(m), m);
		if (mode != MEMORY)
			post_send(s, buf, 0, m);
	}
	/* Event modes take their request completions at once; memory mode later, in batches. */
	if (mode != MEMORY)
		requests_done(s, s->out_tail);
}

/* Fails on bytes found in the slot of message `next` before it was sent, saying where they are
 * and whose they look like: the slot's previous message's (written again, or late), or the
 * awaited one's. */
static void intruder(struct side *s, long next, long m)
{
	const unsigned char *buf = slot(s->recv_area, next);
	long prev = next - SLOTS;
	int first = -1, last = -1, nonzero = 0, as_prev = 0;
	for (int i = 0; i < SLOT; i++)
		if (buf[i]) {
			if (first < 0)
				first = i;
			last = i;
			nonzero++;
			as_prev += prev >= 0 && i < size_of(prev) && buf[i] == expected(prev, in_dir(s), i);
		}
	fail(s, "an extra arrival: the slot of message %ld changed before message %ld was answered: %d bytes "
	     "nonzero in [%d, %d], %d of them as message %ld (size %d) had them",
	     next, m, nonzero, first, last, as_prev, prev, prev >= 0 ? size_of(prev) : 0);
}

/* Memory mode: spins until the marker of message m is in its slot, then until the whole
 * message shows (a copy need not write its bytes in order: the marker may come first). */
static void poll_memory(struct side *s, long m)
{
	volatile unsigned char *buf = slot(s->recv_area, m);
	unsigned char want = marker(m, in_dir(s));
	int last = size_of(m) - 1;
	double since;
	/* Message m lands in its slot only once the receive of m - SLOTS is reaped and this one
	 * posted: until then, reap. */
	while (uses_recvs() && s->retired + SLOTS <= m)
		reap(s);
	while (__atomic_load_n(&buf[last], __ATOMIC_ACQUIRE) != want)
		cpu_relax();
	if (first_wrong(buf, m, in_dir(s)) >= 0) {
		s->c->torn++;
		since = now();
		while (first_wrong(buf, m, in_dir(s)) >= 0 && now() - since < SETTLE_S)
			cpu_relax();
		check_message(s, buf, m, in_dir(s), "seconds after its marker showed");
	}
	/* The peer sends the next message only after our answer to this one: the next slot, once
	 * poisoned for it, must still be untouched, or something arrived twice. */
	if (s->retired > m + 1 - SLOTS && !poisoned(slot(s->recv_area, m + 1), SLOT))
		intruder(s, m + 1, m);
	s->arrived[m] = 1;
	s->c->arrivals++;
	if (op == WRITE) {
		/* No completion here: the slot is ours again once checked. */
		memset((unsigned char *)buf, 0, SLOT);
		s->completed[m] = 1;
	}
	retire(s);
}

/* The longest wait between two arrivals, and before which message: a stall that ends. */
static void note_gap(struct side *s, long m)
{
	double t = now();
	if (m > 0 && t - s->c->last_at > s->c->max_gap) {
		s->c->max_gap = t - s->c->last_at;
		s->c->max_gap_msg = m;
	}
	s->c->last_at = t;
}

/* Waits for message m to arrive here and checks it. */
static void await_message(struct side *s, long m)
{
	s->c->phase = P_AWAIT;
	s->c->msg = m;
	if (mode == MEMORY) {
		poll_memory(s, m);
		note_gap(s, m);
		return;
	}
	/* With one EVD for both, requests complete on it meanwhile, handled as they come: the
	 * receive of m may have been among them already. */
	if (shared_evd) {
		while (s->recv_next <= m)
			await_event(s, s->recv_evd);
	} else {
		await_event(s, s->recv_evd);
	}
	if (op == WRITE) {
		/* The notice's receive completed: the write before it is in place, every byte. */
		check_message(s, slot(s->recv_area, m), m, in_dir(s), "when its notice arrived");
		memset(slot(s->recv_area, m), 0, SLOT);
	}
	note_gap(s, m);
}

/* ---- suppress mode: one buffer each way, completions suppressed ---- */

/* Whether this side's request of message m asks for a completion: every SIGNAL_EVERY-th, and
 * the last (then every request is known done before the disconnect). */
static int signalled(long m) { return m % SIGNAL_EVERY == SIGNAL_EVERY - 1 || m == total - 1; }

/* Sends message m from the one send buffer, which is free again: the peer answered the message
 * before, so it had all of it. A signalled request's completion is spun on at once. */
static void suppress_send(struct side *s, long m)
{
	int len = size_of(m), sig = signalled(m);
	enum kind k = op == SEND ? K_SEND : K_WRITE;
	DAT_COMPLETION_FLAGS flags = sig ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG;
	DAT_LMR_TRIPLET t = triplet(s, s->send_area, len);
	DAT_DTO_COOKIE ck;
	s->c->phase = P_SEND;
	s->c->msg = m;
	fill(s->send_area, m, 1 - in_dir(s));
	ck.as_64 = cookie(k, m);
	if (sig)
		track(s, k, m);
	if (op == SEND) {
		must(s, dat_ep_post_send(s->ep, 1, &t, ck, flags), "dat_ep_post_send");
		s->c->sends++;
	} else {
		DAT_RMR_TRIPLET r = s->peer;
		r.segment_length = (DAT_SEG_LENGTH)len;
		must(s, dat_ep_post_rdma_write(s->ep, 1, &t, ck, &r, flags), "dat_ep_post_rdma_write");
		s->c->writes++;
	}
	if (sig) {
		DAT_EVENT e;
		s->c->phase = P_COMPLETE;
		by_dequeue(s, s->req_evd, &e);
		on_request(s, &e);
	}
}

/* Waits for message m in the one receive buffer: its marker, then every byte, and nothing
 * after it. A send's receiver then dequeues once (the completion of the oldest receive not
 * yet seen, or nothing), and posts the next receive into the same buffer, poisoned again. */
static void suppress_await(struct side *s, long m)
{
	volatile unsigned char *buf = s->recv_area;
	unsigned char want = marker(m, in_dir(s));
	int len = size_of(m);
	s->c->phase = P_AWAIT;
	s->c->msg = m;
	while (__atomic_load_n(&buf[len - 1], __ATOMIC_ACQUIRE) != want)
		cpu_relax();
	if (first_wrong(buf, m, in_dir(s)) >= 0) {
		double since = now();
		s->c->torn++;
		while (first_wrong(buf, m, in_dir(s)) >= 0 && now() - since < SETTLE_S)
			cpu_relax();
		check_message(s, buf, m, in_dir(s), "seconds after its marker showed");
	}
	if (!poisoned(buf + len, NOTE))
		fail(s, "message %ld (size %d): bytes after it changed (an extra or late arrival)", m, len);
	s->c->arrivals++;
	if (op == SEND) {
		DAT_EVENT e;
		DAT_RETURN r = dat_evd_dequeue(s->recv_evd, &e);
		char b[160];
		if (r == DAT_SUCCESS)
			on_recv(s, &e);
		else if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY)
			s->c->empty++;
		else
			fail(s, "dat_evd_dequeue: %s", ret_name(r, b, sizeof(b)));
		if (m + 1 - s->recv_next > s->c->trailing)
			s->c->trailing = m + 1 - s->recv_next;
	}
	memset((unsigned char *)buf, 0, (size_t)len);
	if (op == SEND)
		post_recv(s, m + 1);
	note_gap(s, m);
}

/* ---- setup and teardown ---- */

/* Pipe transfers, whole, however often a signal interrupts them (WAITS_SIGNAL_US). */
static void xwrite(struct side *s, int fd, const void *p, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = write(fd, (const char *)p + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail(s, "pipe write: %s", strerror(errno));
		done += (size_t)k;
	}
}

static void xread(struct side *s, int fd, void *p, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = read(fd, (char *)p + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail(s, "pipe read: the peer is gone");
		done += (size_t)k;
	}
}

static void open_side(struct side *s)
{
	DAT_REGION_DESCRIPTION region;
	DAT_VLEN len;
	DAT_VADDR addr;
	size_t bytes = (size_t)SLOTS * (2 * SLOT + NOTE);
	s->async_evd = DAT_HANDLE_NULL;
	s->cno = DAT_HANDLE_NULL;
	char *ia = getenv("WAITS_IA") ? getenv("WAITS_IA") : (char *)"tcp-lo";
	must(s, dat_ia_open(ia, 8, &s->async_evd, &s->ia), "dat_ia_open");
	must(s, dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	if (mode == CNO)
		must(s, dat_cno_create(s->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &s->cno), "dat_cno_create");
	if (mode == CNOFD)
		must(s, dat_cno_fd_create(s->ia, &s->cno_fd, &s->cno), "dat_cno_fd_create");
	/* Suppress mode's receive EVD is as small as a device's CQ for its one receive buffer may
	 * be: a receiver that dequeues once per message never finds it fuller than that, as long
	 * as each completion is there as soon as its message is visible. */
	must(s, dat_evd_create(s->ia, mode == SUPPRESS ? SUPPRESS_RECV_QLEN : shared_evd ? 2 * QLEN : QLEN, s->cno, DAT_EVD_DTO_FLAG, &s->recv_evd),
	     "dat_evd_create");
	if (shared_evd)
		s->req_evd = s->recv_evd;
	else
		must(s, dat_evd_create(s->ia, QLEN, s->cno, DAT_EVD_DTO_FLAG, &s->req_evd), "dat_evd_create");
	must(s, dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "dat_evd_create");
	must(s, dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "dat_evd_create");
	must(s, dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, NULL, &s->ep), "dat_ep_create");
	if (mode == SUPPRESS) {
		/* Suppressed completions need nothing of the EP's attributes (request postings always
		 * take DAT_COMPLETION_SUPPRESS_FLAG; only UNSIGNALLED must be allowed there). The
		 * request queue is sized as for a device, whose send queue keeps unsignalled requests
		 * until a later signalled one completes: SIGNAL_EVERY of them, no more. */
		DAT_EP_PARAM p;
		/* The other attributes as they are, whether or not the library reads only the field
		 * the mask names. */
		must(s, dat_ep_query(s->ep, DAT_EP_FIELD_ALL, &p), "dat_ep_query");
		p.ep_attr.max_request_dtos = SIGNAL_EVERY;
		/* The receive queue as a device's for one buffer: the receive in it and the next. */
		p.ep_attr.max_recv_dtos = 2;
		must(s, dat_ep_modify(s->ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS | DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
		     "dat_ep_modify");
	}
	/* Page-aligned and zeroed: every slot starts poisoned. */
	s->send_area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->send_area == MAP_FAILED)
		fail(s, "mmap: %s", strerror(errno));
	s->recv_area = s->send_area + SLOTS * SLOT;
	s->note_area = s->recv_area + SLOTS * SLOT;
	region.for_va = s->send_area;
	must(s, dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, bytes, s->pz, DAT_MEM_PRIV_ALL_FLAG,
			       DAT_VA_TYPE_VA, &s->lmr, &s->lmr_ctx, &s->rmr_ctx, &len, &addr),
	     "dat_lmr_create");
	s->arrived = calloc((size_t)(total + SLOTS), 1);
	s->completed = calloc((size_t)(total + SLOTS), 1);
	if (!s->arrived || !s->completed)
		fail(s, "out of memory");
	/* Receives go ahead of the connection, for the first SLOTS messages (suppress mode: for
	 * the first, in its one buffer). */
	if (uses_recvs())
		for (long m = 0; m < (mode == SUPPRESS ? 1 : SLOTS); m++)
			post_recv(s, m);
}

static void expect_connection_event(struct side *s, DAT_EVENT_NUMBER want, const char *what)
{
	DAT_EVENT e;
	DAT_COUNT more;
	must(s, dat_evd_wait(s->conn_evd, SETUP_US, 1, &e, &more), what);
	if (e.event_number != want)
		fail(s, "%s: event 0x%x, expected 0x%x", what, (unsigned)e.event_number, (unsigned)want);
}

static struct info my_info(struct side *s)
{
	struct info i;
	memset(&i, 0, sizeof(i));
	i.rmr_ctx = s->rmr_ctx;
	i.addr = (DAT_VADDR)(uintptr_t)s->recv_area;
	return i;
}

static void learn_peer(struct side *s, const struct info *i)
{
	s->peer.rmr_context = i->rmr_ctx;
	s->peer.virtual_address = i->addr;
	s->peer.segment_length = SLOTS * SLOT;
}

static void serve(struct side *s)
{
	struct info mine = my_info(s), theirs;
	DAT_EVENT e;
	DAT_COUNT more;
	must(s, dat_psp_create_any(s->ia, &mine.port, s->cr_evd, DAT_PSP_CONSUMER_FLAG, &s->psp), "dat_psp_create_any");
	s->c->port = (long)mine.port;
	xwrite(s, s->to_peer, &mine, sizeof(mine));
	must(s, dat_evd_wait(s->cr_evd, SETUP_US, 1, &e, &more), "waiting for the connection request");
	if (e.event_number != DAT_CONNECTION_REQUEST_EVENT)
		fail(s, "event 0x%x on the CR EVD", (unsigned)e.event_number);
	must(s, dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s->ep, 0, NULL), "dat_cr_accept");
	expect_connection_event(s, DAT_CONNECTION_EVENT_ESTABLISHED, "waiting for ESTABLISHED");
	xread(s, s->from_peer, &theirs, sizeof(theirs));
	learn_peer(s, &theirs);
}

static void connect_to_server(struct side *s)
{
	struct info mine = my_info(s), theirs;
	DAT_IA_ATTR attr;
	struct sockaddr_in sin;
	xread(s, s->from_peer, &theirs, sizeof(theirs));
	xwrite(s, s->to_peer, &mine, sizeof(mine));
	learn_peer(s, &theirs);
	memset(&attr, 0, sizeof(attr));
	must(s, dat_ia_query(s->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), "dat_ia_query");
	memcpy(&sin, attr.ia_address_ptr, sizeof(sin));
	must(s, dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&sin, theirs.port, SETUP_US, 0, NULL,
			       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
	     "dat_ep_connect");
	expect_connection_event(s, DAT_CONNECTION_EVENT_ESTABLISHED, "waiting for ESTABLISHED");
}

/* After the last message: every request completes, every receive of a message completes, and
 * once both sides are there (a byte each way through the pipes) the client disconnects. Then
 * each side's spare receives flush, once each, and nothing else arrives. */
static void finish(struct side *s)
{
	char byte = 0;
	s->c->phase = P_DRAIN;
	if (mode == MEMORY || mode == SUPPRESS)
		while (s->recv_next < total && uses_recvs())
			reap(s);
	requests_done(s, s->out_tail);
	xwrite(s, s->to_peer, &byte, 1);
	xread(s, s->from_peer, &byte, 1);
	s->c->phase = P_DISCONNECT;
	if (s->me == CLIENT)
		must(s, dat_ep_disconnect(s->ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	expect_connection_event(s, DAT_CONNECTION_EVENT_DISCONNECTED, "waiting for DISCONNECTED");
	for (long m = s->recv_next; uses_recvs() && m < s->c->recvs; m++) {
		DAT_EVENT e;
		must(s, dat_evd_dequeue(s->recv_evd, &e), "dequeuing a flushed receive");
		check_dto(s, &e, s->recv_evd);
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &e.event_data.dto_completion_event_data;
		if (d->user_cookie.as_64 != cookie(K_RECV, m) || d->status != DAT_DTO_ERR_FLUSHED)
			fail(s, "after the disconnect: receive cookie 0x%llx status %d, expected receive %ld flushed",
			     (unsigned long long)d->user_cookie.as_64, (int)d->status, m);
		s->c->flushed++;
	}
	DAT_EVENT e;
	if (dat_evd_dequeue(s->recv_evd, &e) == DAT_SUCCESS || dat_evd_dequeue(s->req_evd, &e) == DAT_SUCCESS)
		fail(s, "an extra completion after the disconnect (cookie 0x%llx, status %d)",
		     (unsigned long long)e.event_data.dto_completion_event_data.user_cookie.as_64,
		     (int)e.event_data.dto_completion_event_data.status);
	for (long m = total; mode == MEMORY && m < total + SLOTS - 1; m++)
		if (!poisoned(slot(s->recv_area, m), SLOT))
			fail(s, "an extra arrival: slot of message %ld written after the last message", m);
	if (mode == SUPPRESS && !poisoned(s->recv_area, SLOT))
		fail(s, "an extra arrival: the receive buffer written after the last message");
}

static void close_side(struct side *s)
{
	must(s, dat_ep_free(s->ep), "dat_ep_free");
	if (s->psp)
		must(s, dat_psp_free(s->psp), "dat_psp_free");
	must(s, dat_lmr_free(s->lmr), "dat_lmr_free");
	must(s, dat_evd_free(s->recv_evd), "dat_evd_free");
	if (!shared_evd)
		must(s, dat_evd_free(s->req_evd), "dat_evd_free");
	must(s, dat_evd_free(s->conn_evd), "dat_evd_free");
	must(s, dat_evd_free(s->cr_evd), "dat_evd_free");
	if (s->cno)
		must(s, dat_cno_free(s->cno), "dat_cno_free");
	must(s, dat_pz_free(s->pz), "dat_pz_free");
	must(s, dat_ia_close(s->ia, DAT_CLOSE_GRACEFUL_FLAG), "dat_ia_close");
}

static void run_side(struct side *s)
{
	s->c->phase = P_CONNECT;
	open_side(s);
	if (s->me == SERVER)
		serve(s);
	else
		connect_to_server(s);
	for (long m = 0; m < total && mode == SUPPRESS; m++) {
		if (s->me == CLIENT) {
			suppress_send(s, m);
			suppress_await(s, m);
		} else {
			suppress_await(s, m);
			suppress_send(s, m);
		}
	}
	for (long m = 0; m < total && mode != SUPPRESS; m++) {
		if (s->me == CLIENT) {
			send_message(s, m);
			await_message(s, m);
		} else {
			await_message(s, m);
			send_message(s, m);
		}
		if (mode == MEMORY && m % REAP_EVERY == REAP_EVERY - 1)
			reap(s);
	}
	finish(s);
	close_side(s);
	s->c->phase = P_DONE;
	_exit(0);
}

/* ---- the watching process ---- */

static void describe(const struct counts *c, int me)
{
	long m = c->msg;
	int valid = m >= 0 && m < total;
	fprintf(stderr,
		"  %s: %s message %ld (size %d, iteration %d); sends %ld posted %ld done, writes %ld posted "
		"%ld done, receives %ld posted %ld done %ld flushed, arrivals %ld, torn %ld, lost wakeups %ld, "
		"empty dequeues %ld (trailing by up to %ld), longest gap %.3f s before message %ld%s%s\n",
		side_names[me], phase_names[c->phase], m, valid ? size_of(m) : -1, valid ? iter_of(m) : -1,
		c->sends, c->sends_done, c->writes, c->writes_done, c->recvs, c->recvs_done, c->flushed,
		c->arrivals, c->torn, c->lost_wakeups, c->empty, c->trailing, c->max_gap, c->max_gap_msg, c->why[0] ? "; " : "",
		c->why);
}

/* Everything both sides counted, summed: it changes while they move. */
static long progress(const struct shared *sh)
{
	long n = 0;
	for (int me = 0; me < 2; me++) {
		const struct counts *c = &sh->side[me];
		n += c->phase + c->msg + c->sends_done + c->writes_done + c->recvs_done + c->arrivals;
	}
	return n;
}

/* The side to name in a hang: one still running, the one further behind if both are. */
static int hung_side(const struct shared *sh, const int *status)
{
	if (status[SERVER] != -1)
		return CLIENT;
	if (status[CLIENT] != -1)
		return SERVER;
	return sh->side[CLIENT].msg < sh->side[SERVER].msg ? CLIENT : SERVER;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A SIGALRM every WAITS_SIGNAL_US microseconds, for this process (a timer is not inherited
 * across fork: each side starts its own). */
static void start_signals(void)
{
	const char *us = getenv("WAITS_SIGNAL_US");
	struct sigaction sa;
	struct itimerval it;
	if (!us || atol(us) <= 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	it.it_interval.tv_sec = it.it_value.tv_sec = atol(us) / 1000000;
	it.it_interval.tv_usec = it.it_value.tv_usec = atol(us) % 1000000;
	setitimer(ITIMER_REAL, &it, NULL);
}

static pid_t start_side(struct shared *sh, int me, int to_peer, int from_peer, int close1, int close2)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct side s;
		start_signals();
		memset(&s, 0, sizeof(s));
		s.me = me;
		s.c = &sh->side[me];
		s.to_peer = to_peer;
		s.from_peer = from_peer;
		close(close1);
		close(close2);
		run_side(&s);
	}
	return pid;
}

static void make_sizes(void)
{
	static const int base[] = { 1, 2, 3, 7, 8, 13, 64, 100, 512, 1000, 1024, 4093, 4096 };
	if (mode == SUPPRESS) {
		/* A small-message benchmark's sizes. */
		for (int n = 4; n <= 16; n++)
			sizes[nsizes++] = n;
		return;
	}
	for (int b = 0; b < (int)(sizeof(base) / sizeof(base[0])); b++)
		for (int d = -3; d <= 3; d += 3) {
			int n = base[b] + d, dup = 0;
			if (n < 1 || n > MAX_SIZE)
				continue;
			for (int i = 0; i < nsizes; i++)
				dup |= sizes[i] == n;
			if (!dup)
				sizes[nsizes++] = n;
		}
	/* Ascending, as the runs went. */
	for (int i = 1; i < nsizes; i++)
		for (int j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
			int t = sizes[j];
			sizes[j] = sizes[j - 1];
			sizes[j - 1] = t;
		}
}

static int lookup(const char *name, const char **names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: waits [-v] [-i ITERATIONS] [-t STALL_SECONDS] dequeue|wait|wait0|cno|cnofd|memory|suppress send|write\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt, timeout = 10, status[2] = { -1, -1 }, left = 2, hung = 0, ok, verbose = 0;
	int s2c[2], c2s[2];
	pid_t pid[2];
	double start, deadline, elapsed, failed_at = 0;
	struct shared *sh;
	while ((opt = getopt(argc, argv, "vi:t:")) != -1) {
		if (opt == 'v')
			verbose = 1;
		else if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 't')
			timeout = atoi(optarg);
		else
			usage();
	}
	if (argc - optind != 2 || iters < 1 || timeout < 1)
		usage();
	if (lookup(argv[optind], mode_names, MODES) < 0 || lookup(argv[optind + 1], op_names, 2) < 0)
		usage();
	mode = (enum mode)lookup(argv[optind], mode_names, MODES);
	op = (enum op)lookup(argv[optind + 1], op_names, 2);
	shared_evd = getenv("WAITS_SHARED") && atoi(getenv("WAITS_SHARED"));
	if (shared_evd && mode == SUPPRESS) {
		fprintf(stderr, "waits: WAITS_SHARED is not for suppress mode (its poster spins on its request EVD alone)\n");
		return 2;
	}
	make_sizes();
	total = (long)nsizes * iters;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || pipe(s2c) || pipe(c2s)) {
		perror("waits: setup");
		return 2;
	}
	memset(sh, 0, sizeof(*sh));
	sh->side[0].msg = sh->side[1].msg = -1;
	fflush(NULL);
	start = now();
	pid[SERVER] = start_side(sh, SERVER, s2c[1], c2s[0], s2c[0], c2s[1]);
	pid[CLIENT] = start_side(sh, CLIENT, c2s[1], s2c[0], c2s[0], s2c[1]);
	close(s2c[0]); close(s2c[1]); close(c2s[0]); close(c2s[1]);
	/* Both sides done, or a hang: neither side moved for `timeout` seconds (a loaded machine
	 * makes a run slow, not hung). A side that failed leaves its peer a moment to learn of
	 * it (the connection ends) before the peer counts as hung too. */
	deadline = start + timeout;
	for (long seen = -1; left > 0;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			int me = p == pid[SERVER] ? SERVER : CLIENT;
			status[me] = st;
			left--;
			if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
				failed_at = now();
			continue;
		}
		if (progress(sh) != seen && !failed_at) {
			seen = progress(sh);
			deadline = now() + timeout;
		}
		if (now() > deadline || (failed_at && now() > failed_at + 3)) {
			hung = 1;
			break;
		}
		usleep(10000);
	}
	elapsed = now() - start;
	if (hung) {
		const char *hold = getenv("WAITS_HOLD");
		int stuck = hung_side(sh, status);
		long m = sh->side[stuck].msg;
		fprintf(stderr, "waits: hang in %s/%s at size %d iteration %d, side %s, counts:\n",
			mode_names[mode], op_names[op], m >= 0 && m < total ? size_of(m) : -1,
			m >= 0 && m < total ? iter_of(m) : -1,
			status[SERVER] == -1 && status[CLIENT] == -1 ? "server and client" : side_names[stuck]);
		for (int me = 0; me < 2; me++)
			describe(&sh->side[me], me);
		if (hold) {
			fprintf(stderr, "waits: holding server %d and client %d for %s s\n", (int)pid[SERVER],
				(int)pid[CLIENT], hold);
			sleep((unsigned)atoi(hold));
		}
		for (int me = 0; me < 2; me++)
			if (status[me] == -1) {
				kill(pid[me], SIGKILL);
				waitpid(pid[me], NULL, 0);
			}
	}
	ok = !hung;
	for (int me = 0; me < 2 && !hung; me++)
		if (!(WIFEXITED(status[me]) && WEXITSTATUS(status[me]) == 0)) {
			ok = 0;
			fprintf(stderr, "waits: %s %s:\n", side_names[me],
				WIFSIGNALED(status[me]) ? strsignal(WTERMSIG(status[me])) : "failed");
			describe(&sh->side[me], me);
		}
	for (int me = 0; me < 2; me++)
		if (sh->side[me].lost_wakeups)
			ok = 0;
	fflush(stdout);
	for (int me = 0; me < 2 && verbose && !hung; me++)
		describe(&sh->side[me], me);
	if (verbose)
		printf("waits: server port %ld\n", sh->side[SERVER].port);
	printf("waits: %s/%s%s: %d sizes %d..%d B, %d iterations each, %.2f s: %s\n", mode_names[mode], op_names[op],
	       shared_evd ? " (one EVD for receives and requests)" : "", nsizes, sizes[0], sizes[nsizes - 1], iters, elapsed, ok ? "PASS" : hung ? "FAIL (hang)" : "FAIL");
	return ok ? 0 : 1;
}
