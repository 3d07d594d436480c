/*
 * cancel: dat_evd_wait and dat_cno_wait are cancellation points. A thread blocked in one is
 * cancelled by pthread_cancel, deferred or asynchronous, the process goes on, and the wait
 * leaves nothing behind: the EVD (or CNO) then serves another thread's wait (an event posted
 * wakes it, none times it out) and frees.
 *
 *   cancel [-r ROUNDS] [evd|cno|connected|pending] [deferred|async]
 *
 * Each round starts a thread that loops in the wait and cancels it at one of four moments, in
 * turn: once it is asleep in the wait; as soon as it began waiting (while it spins, before it
 * sleeps); right after an event was posted to it (a wait that takes the event and the cancel
 * meet); right before one is. The thread must end cancelled (pthread_join gives
 * PTHREAD_CANCELED) within a bound. Then the round checks the object:
 *   - nothing of the cancelled wait is left: a dequeue is not refused for a waiter (a CNO wait
 *     with no time is not refused as in use);
 *   - a new thread that sleeps in the wait is woken by an event posted and gets it (a
 *     connection's messages sent before, whose receives may complete a moment after their
 *     sends, come to it first);
 *   - every event posted to the EVD was taken by the cancelled thread's waits, is still queued,
 *     or came to the new thread; with asynchronous cancellation the last wait of the cancelled
 *     thread may have taken one as the cancel took effect (it ends the thread at any point);
 *   - a wait with a timeout and nothing coming times out;
 *   - the EVD (and CNO) free (evd, cno; the connected EVD is reused by every round, freed at
 *     the end with its connection).
 * evd: a software EVD, events posted with dat_evd_post_se. cno: the same EVD feeding a CNO, the
 * thread waiting in dat_cno_wait. connected: the receive EVD of a connection over the IA
 * (CANCEL_IA, default the built-in tcp-lo) between two EPs of this process, events being
 * messages sent from the other EP: the cancelled thread's wait polled the connection before it
 * slept.
 *
 * pending (deferred only): a thread is cancelled while it spins outside any cancellation point,
 * then, its cancel pending, makes a whole session of the library's calls that are not waits:
 * the registry's list, an IA opened, its objects, memory registered, two EPs connected to each
 * other (events taken by dat_evd_dequeue), a message each way, a disconnect, everything freed,
 * the IA closed. None of them is a cancellation point: every one must return its result (a
 * library call that reached one of the C library's cancellation points, a file read or
 * getifaddrs, acted on the cancel there, and its unwinding through the library aborted the
 * process), and the cancel takes effect at the thread's own pthread_testcancel afterwards.
 *
 * With no arguments every object and both cancel types run. Every step is time-bounded:
 * CANCEL_TIME_SCALE multiplies the bounds. Prints a line per run; exits 0 when all pass.
 *
 * Built with -DCANCEL_DAT12 the same program is DAT 1.2 source (<dat/udat.h>, linked with
 * -ldat): its waits are the library's DAT_1.2 entry points, which wait in the same steps but
 * hand over 1.2's event and wait on past an event 1.2 cannot represent.
 */
#define _GNU_SOURCE
#ifdef CANCEL_DAT12
#include <dat/udat.h>
#else
#include <dat2/udat.h>
#endif

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QLEN 64
#define MSG 64
#define RECVS 32 /* receives the connected receiver keeps posted */

enum object { EVD, CNO, CONNECTED, PENDING };
static const char *const object_names[] = { "evd", "cno", "connected", "pending" };

static unsigned scale = 1;
static int rounds = 200;

static void fail(const char *what, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *what, ...)
{
	va_list ap;
	va_start(ap, what);
	fprintf(stderr, "cancel: FAIL: ");
	vfprintf(stderr, what, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	/* Threads may be left blocked in the library: end here. */
	_exit(1);
}

static void must(DAT_RETURN rc, const char *what)
{
	if (rc != DAT_SUCCESS)
		fail("%s returned %#x", what, rc);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A short pause between looks at a condition that another thread changes. */
static void pause_briefly(void)
{
	struct timespec t = { 0, 20 * 1000 };
	nanosleep(&t, NULL);
}

/* Whether thread `tid` of this process sleeps (state S in its /proc stat). */
static int sleeping(pid_t tid)
{
	char path[64], line[512];
	FILE *f;
	char *end;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	end = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return end && end[1] == ' ' && end[2] == 'S';
}

/* The thread in the wait under test. */
struct waiter {
	pthread_t thread;
	enum object object;
	DAT_EVD_HANDLE evd;
	DAT_CNO_HANDLE cno;
	DAT_TIMEOUT timeout;
	int asynchronous;
	int once;                 /* wait for the event `want`, then return (the new waiter) */
	DAT_UINT64 want;          /* its software event's pointer, or its receive's cookie */
	_Atomic long earlier;     /* events that came to it before that one */
	_Atomic pid_t tid;
	_Atomic int waits;        /* waits begun */
	_Atomic long taken;       /* waits that returned an event (or a trigger) */
	_Atomic DAT_RETURN last;  /* what the last wait returned */
	_Atomic int failed;       /* a wait returned what it must not */
	DAT_EVENT event;          /* the event of a `once` wait */
	DAT_EVD_HANDLE which;     /* the EVD of a `once` CNO wait */
};

static int timed_out(const struct waiter *w, DAT_RETURN rc)
{
	return DAT_GET_TYPE(rc) == (w->object == CNO ? DAT_QUEUE_EMPTY : DAT_TIMEOUT_EXPIRED);
}

/* Whether a new waiter's event is the one it waits for (a CNO's trigger always is). */
static int wanted(const struct waiter *w, const DAT_EVENT *e)
{
	switch (w->object) {
	case EVD:
		return (DAT_UINT64)(uintptr_t)e->event_data.software_event_data.pointer == w->want;
	case CONNECTED:
		return e->event_data.dto_completion_event_data.user_cookie.as_64 == w->want;
	default:
		return 1;
	}
}

static void *wait_loop(void *arg)
{
	struct waiter *w = arg;
	atomic_store(&w->tid, gettid());
	if (w->asynchronous)
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	for (;;) {
		DAT_RETURN rc;
		DAT_EVENT e;
		DAT_COUNT more;
		DAT_EVD_HANDLE which = DAT_HANDLE_NULL;
		atomic_fetch_add(&w->waits, 1);
		if (w->object == CNO)
			rc = dat_cno_wait(w->cno, w->timeout, &which);
		else
			rc = dat_evd_wait(w->evd, w->timeout, 1, &e, &more);
		atomic_store(&w->last, rc);
		if (rc == DAT_SUCCESS && w->once && !wanted(w, &e)) {
			atomic_fetch_add(&w->earlier, 1);
		} else if (rc == DAT_SUCCESS) {
			atomic_fetch_add(&w->taken, 1);
			if (w->once) {
				w->event = e;
				w->which = which;
				return NULL;
			}
		} else if (!timed_out(w, rc) || w->once) {
			atomic_store(&w->failed, 1);
			return NULL;
		}
	}
}

static void start(struct waiter *w)
{
	double deadline = now() + 5.0 * scale;
	if (pthread_create(&w->thread, NULL, wait_loop, w) != 0)
		fail("pthread_create");
	while (atomic_load(&w->waits) == 0 || atomic_load(&w->tid) == 0) {
		if (now() > deadline)
			fail("the waiting thread did not start (%s, thread %d, %d waits begun)",
			     w->once ? "the new waiter" : "the waiter to cancel", (int)atomic_load(&w->tid),
			     atomic_load(&w->waits));
		pause_briefly();
	}
}

/* Until the thread is asleep in its wait (it spins first). */
static void until_asleep(struct waiter *w)
{
	double deadline = now() + 5.0 * scale;
	while (!sleeping(atomic_load(&w->tid))) {
		if (now() > deadline)
			fail("%s: the waiting thread never slept", object_names[w->object]);
		pause_briefly();
	}
}

/* Joins the thread within the bound; what it returned. */
static void *join(struct waiter *w, const char *what)
{
	void *ret = NULL;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5 * scale;
	int rc = pthread_timedjoin_np(w->thread, &ret, &until);
	if (rc == ETIMEDOUT)
		fail("%s: the thread did not end within %u s (%d waits begun, last returned %#x)", what,
		     5 * scale, atomic_load(&w->waits), atomic_load(&w->last));
	if (rc != 0)
		fail("%s: pthread_join: %s", what, strerror(rc));
	return ret;
}

/* What the rounds act on: the objects, and a peer EP that sends to the connected one. */
struct bench {
	enum object object;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE evd;
	DAT_CNO_HANDLE cno;
	/* connected: */
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep, peer_ep;
	DAT_EVD_HANDLE req_evd, conn_evd, peer_recv_evd, peer_req_evd, peer_conn_evd, cr_evd;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	unsigned char buf[(RECVS + 1) * MSG];
	long posted_recvs, sends;
	long posted; /* events posted to evd (all objects) */
};

static DAT_NAME_PTR ia_name(void)
{
	char *n = getenv("CANCEL_IA");
	return n && *n ? n : (DAT_NAME_PTR) "tcp-lo";
}

static DAT_EVENT next_event(DAT_EVD_HANDLE evd, const char *what)
{
	DAT_EVENT e;
	DAT_COUNT more;
	must(dat_evd_wait(evd, 10 * 1000 * 1000 * scale, 1, &e, &more), what);
	return e;
}

static void post_recv(struct bench *b)
{
	long slot = b->posted_recvs % RECVS;
	DAT_LMR_TRIPLET iov = { .lmr_context = b->lmr_ctx, .virtual_address = (DAT_VADDR)(uintptr_t)(b->buf + slot * MSG),
				.segment_length = MSG };
	DAT_DTO_COOKIE cookie = { .as_64 = (DAT_UINT64)b->posted_recvs };
	must(dat_ep_post_recv(b->ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
	b->posted_recvs++;
}

/* Two EPs of this process connected over the IA; ep's receive EVD is the one waited on. */
static void connect_pair(struct bench *b)
{
	DAT_REGION_DESCRIPTION region;
	DAT_RMR_CONTEXT rmr_ctx;
	DAT_VLEN len;
	DAT_VADDR addr;
	DAT_IA_ATTR attr;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port = 0;
	struct sockaddr_in sin;
	DAT_EVENT e;
	must(dat_pz_create(b->ia, &b->pz), "dat_pz_create");
	must(dat_evd_create(b->ia, QLEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b->evd), "dat_evd_create");
	must(dat_evd_create(b->ia, QLEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b->req_evd), "dat_evd_create");
	must(dat_evd_create(b->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &b->conn_evd), "dat_evd_create");
	must(dat_evd_create(b->ia, QLEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b->peer_recv_evd), "dat_evd_create");
	must(dat_evd_create(b->ia, QLEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b->peer_req_evd), "dat_evd_create");
	must(dat_evd_create(b->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &b->peer_conn_evd), "dat_evd_create");
	must(dat_evd_create(b->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &b->cr_evd), "dat_evd_create");
	must(dat_ep_create(b->ia, b->pz, b->evd, b->req_evd, b->conn_evd, NULL, &b->ep), "dat_ep_create");
	must(dat_ep_create(b->ia, b->pz, b->peer_recv_evd, b->peer_req_evd, b->peer_conn_evd, NULL, &b->peer_ep),
	     "dat_ep_create");
	region.for_va = b->buf;
#ifdef CANCEL_DAT12 /* 1.2 has no virtual address type */
	must(dat_lmr_create(b->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(b->buf), b->pz, DAT_MEM_PRIV_ALL_FLAG,
			    &b->lmr, &b->lmr_ctx, &rmr_ctx, &len, &addr),
	     "dat_lmr_create");
#else
	must(dat_lmr_create(b->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(b->buf), b->pz, DAT_MEM_PRIV_ALL_FLAG,
			    DAT_VA_TYPE_VA, &b->lmr, &b->lmr_ctx, &rmr_ctx, &len, &addr),
	     "dat_lmr_create");
#endif
	must(dat_psp_create_any(b->ia, &port, b->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
	memset(&attr, 0, sizeof(attr));
	memset(&sin, 0, sizeof(sin));
	must(dat_ia_query(b->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), "dat_ia_query");
	memcpy(&sin, attr.ia_address_ptr, sizeof(sin));
	must(dat_ep_connect(b->peer_ep, (DAT_IA_ADDRESS_PTR)&sin, port, 10 * 1000 * 1000 * scale, 0, NULL,
			    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
	     "dat_ep_connect");
	e = next_event(b->cr_evd, "the connection request");
	must(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, b->ep, 0, NULL), "dat_cr_accept");
	if (next_event(b->conn_evd, "ESTABLISHED").event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
	    next_event(b->peer_conn_evd, "ESTABLISHED").event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
		fail("connected: no connection");
	must(dat_psp_free(psp), "dat_psp_free");
	for (int i = 0; i < RECVS; i++)
		post_recv(b);
}

static void make(struct bench *b)
{
	if (b->object == CONNECTED) {
		if (!b->ep)
			connect_pair(b);
		return;
	}
	if (b->object == CNO)
		must(dat_cno_create(b->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &b->cno), "dat_cno_create");
	must(dat_evd_create(b->ia, QLEN, b->cno, DAT_EVD_SOFTWARE_FLAG, &b->evd), "dat_evd_create");
	b->posted = 0;
}

/* One event into the EVD: a software event, or a message from the peer EP. */
static void post(struct bench *b)
{
	if (b->object == CONNECTED) {
		DAT_LMR_TRIPLET iov = { .lmr_context = b->lmr_ctx,
					.virtual_address = (DAT_VADDR)(uintptr_t)(b->buf + RECVS * MSG),
					.segment_length = 8 };
		DAT_DTO_COOKIE cookie = { .as_64 = (DAT_UINT64)b->sends };
		DAT_EVENT e;
		DAT_COUNT more;
		must(dat_ep_post_send(b->peer_ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
		must(dat_evd_wait(b->peer_req_evd, 10 * 1000 * 1000 * scale, 1, &e, &more), "the send's completion");
		if (e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS)
			fail("connected: a send failed (status %d)", e.event_data.dto_completion_event_data.status);
		b->sends++;
	} else {
		DAT_EVENT e;
		memset(&e, 0, sizeof(e));
		e.event_number = DAT_SOFTWARE_EVENT;
		e.event_data.software_event_data.pointer = (DAT_PVOID)(uintptr_t)(b->posted + 1);
		must(dat_evd_post_se(b->evd, &e), "dat_evd_post_se");
	}
	b->posted++;
}

/* Takes what the EVD holds, without waiting; refused for a waiter left behind. */
static long drain(struct bench *b, const char *what)
{
	long n = 0;
	for (;;) {
		DAT_EVENT e;
		DAT_RETURN rc = dat_evd_dequeue(b->evd, &e);
		if (DAT_GET_TYPE(rc) == DAT_QUEUE_EMPTY)
			break;
		if (rc != DAT_SUCCESS)
			fail("%s: dat_evd_dequeue returned %#x: the cancelled wait left a waiter", what, rc);
		n++;
	}
	if (b->object == CNO) {
		DAT_EVD_HANDLE which;
		DAT_RETURN rc;
		while ((rc = dat_cno_wait(b->cno, 0, &which)) == DAT_SUCCESS)
			;
		if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY)
			fail("%s: dat_cno_wait returned %#x: the cancelled wait left a waiter", what, rc);
	}
	return n;
}

/* A new thread sleeps in the wait; an event posted wakes it with that event. Returns how many
 * events came to it before that one. */
static long new_waiter_gets_an_event(struct bench *b, const char *what)
{
	struct waiter w;
	memset(&w, 0, sizeof(w));
	w.object = b->object;
	w.evd = b->evd;
	w.cno = b->cno;
	w.timeout = 10 * 1000 * 1000 * scale;
	w.once = 1;
	/* The next software event's pointer; the next message's receive (they fill in order). */
	w.want = (DAT_UINT64)(b->object == CONNECTED ? b->sends : b->posted + 1);
	start(&w);
	until_asleep(&w);
	post(b);
	join(&w, what);
	if (atomic_load(&w.failed) || atomic_load(&w.taken) != 1)
		fail("%s: the new waiter's wait returned %#x", what, atomic_load(&w.last));
	if (b->object == CNO && w.which != b->evd)
		fail("%s: the CNO's wait named EVD %p, not %p", what, (void *)w.which, (void *)b->evd);
	if (b->object == CONNECTED && w.event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS)
		fail("%s: the new waiter's receive failed", what);
	if (b->object == CNO)
		drain(b, what);
	return atomic_load(&w.earlier);
}

/* A wait with a timeout and nothing coming times out. */
static void times_out(struct bench *b, const char *what)
{
	DAT_RETURN rc;
	if (b->object == CNO) {
		DAT_EVD_HANDLE which;
		rc = dat_cno_wait(b->cno, 2000, &which);
		if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY)
			fail("%s: dat_cno_wait with nothing coming returned %#x", what, rc);
	} else {
		DAT_EVENT e;
		DAT_COUNT more;
		rc = dat_evd_wait(b->evd, 2000, 1, &e, &more);
		if (DAT_GET_TYPE(rc) != DAT_TIMEOUT_EXPIRED)
			fail("%s: dat_evd_wait with nothing coming returned %#x", what, rc);
	}
}

static void round_once(struct bench *b, int asynchronous, int round)
{
	struct waiter w;
	char what[96];
	int moment = round % 4;
	long before, posted, left, accounted;
	void *ret;
	snprintf(what, sizeof(what), "%s %s round %d", object_names[b->object],
		 asynchronous ? "async" : "deferred", round);
	make(b);
	before = b->posted;
	memset(&w, 0, sizeof(w));
	w.object = b->object;
	w.evd = b->evd;
	w.cno = b->cno;
	/* Forever, or long: the timeout never ends these waits. */
	w.timeout = round % 2 ? DAT_TIMEOUT_INFINITE : 60u * 1000 * 1000;
	w.asynchronous = asynchronous;
	start(&w);
	switch (moment) {
	case 0: /* asleep in the wait */
		until_asleep(&w);
		break;
	case 1: /* just begun: spinning */
		break;
	case 2: /* an event and the cancel meet */
		post(b);
		break;
	case 3:
		break;
	}
	if (pthread_cancel(w.thread) != 0)
		fail("%s: pthread_cancel", what);
	if (moment == 3)
		post(b);
	ret = join(&w, what);
	if (ret != PTHREAD_CANCELED)
		fail("%s: the thread was not cancelled (it returned %p, failed %d): its wait returned %#x", what, ret,
		     atomic_load(&w.failed), atomic_load(&w.last));
	left = drain(b, what);
	posted = b->posted - before;
	left += new_waiter_gets_an_event(b, what);
	if (b->object == CONNECTED)
		for (long i = 0; i < posted + 1; i++)
			post_recv(b);
	/* A CNO's waits took triggers, not events. */
	accounted = atomic_load(&w.taken) + left;
	if (b->object != CNO && accounted != posted && (!asynchronous || accounted != posted - 1))
		fail("%s: %ld events posted, the thread took %ld and %ld were left", what, posted,
		     atomic_load(&w.taken), left);
	times_out(b, what);
	if (b->object != CONNECTED) {
		must(dat_evd_free(b->evd), "dat_evd_free after the cancel");
		b->evd = DAT_HANDLE_NULL;
		if (b->object == CNO) {
			must(dat_cno_free(b->cno), "dat_cno_free after the cancel");
			b->cno = DAT_HANDLE_NULL;
		}
	}
}

static void run(enum object object, int asynchronous)
{
	struct bench *b = calloc(1, sizeof(*b));
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
	double began = now();
	b->object = object;
	must(dat_ia_open(ia_name(), 8, &async_evd, &b->ia), "dat_ia_open");
	for (int r = 0; r < rounds; r++)
		round_once(b, asynchronous, r);
	if (object == CONNECTED) {
		DAT_EVENT e;
		must(dat_ep_disconnect(b->peer_ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
		e = next_event(b->conn_evd, "the disconnect");
		if (e.event_number != DAT_CONNECTION_EVENT_DISCONNECTED)
			fail("connected: the disconnect gave event %#x", e.event_number);
		next_event(b->peer_conn_evd, "the disconnect");
		must(dat_ep_free(b->ep), "dat_ep_free");
		must(dat_evd_free(b->evd), "dat_evd_free of the connected EVD after the cancels");
	}
	must(dat_ia_close(b->ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
	printf("cancel: %s %s: %d threads cancelled in the wait, each leaving it usable: PASS (%.1f s)\n",
	       object_names[object], asynchronous ? "async" : "deferred", rounds, now() - began);
	free(b);
}

/* pending: the session of a thread whose cancel is pending. It writes nothing (output
 * functions are cancellation points): the first failure is kept for the main thread. */
struct session {
	atomic_int cancel_sent, ended;
	const char *step;
	char failure[256];
};

static int step_ok(struct session *ss, DAT_RETURN rc, const char *what)
{
	ss->step = what;
	if (rc != DAT_SUCCESS && !ss->failure[0])
		snprintf(ss->failure, sizeof(ss->failure), "%s returned %#x", what, rc);
	return rc == DAT_SUCCESS;
}

/* The next event of `evd`, polled for with dat_evd_dequeue (no wait: a cancellation point). */
static int dequeued(struct session *ss, DAT_EVD_HANDLE evd, DAT_EVENT *e, const char *what)
{
	double end = now() + 10.0 * scale;
	ss->step = what;
	while (now() < end)
		if (dat_evd_dequeue(evd, e) == DAT_SUCCESS)
			return 1;
	if (!ss->failure[0])
		snprintf(ss->failure, sizeof(ss->failure), "%s: no event within %u s", what, 10 * scale);
	return 0;
}

static int connected_event(struct session *ss, DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, const char *what)
{
	DAT_EVENT e;
	if (!dequeued(ss, evd, &e, what))
		return 0;
	if (e.event_number != want && !ss->failure[0])
		snprintf(ss->failure, sizeof(ss->failure), "%s: event %#x", what, e.event_number);
	return e.event_number == want;
}

static int dto_done(struct session *ss, DAT_EVD_HANDLE evd, const char *what)
{
	DAT_EVENT e;
	if (!dequeued(ss, evd, &e, what))
		return 0;
	if ((e.event_number != DAT_DTO_COMPLETION_EVENT ||
	     e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) &&
	    !ss->failure[0])
		snprintf(ss->failure, sizeof(ss->failure), "%s: event %#x status %d", what, e.event_number,
			 e.event_data.dto_completion_event_data.status);
	return !ss->failure[0];
}

static void *pending_session(void *arg)
{
	struct session *ss = arg;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd[8];
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep, peer;
	DAT_PSP_HANDLE psp;
	DAT_CNO_HANDLE cno;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	DAT_VLEN len;
	DAT_VADDR addr;
	DAT_REGION_DESCRIPTION region;
	DAT_CONN_QUAL port = 0;
	DAT_IA_ATTR attr;
	DAT_PROVIDER_INFO info[4], *infos[4] = { &info[0], &info[1], &info[2], &info[3] };
	DAT_COUNT listed;
	DAT_EVENT e;
	struct sockaddr_in sin;
	static unsigned char buf[4 * MSG];
	int flags[8] = { DAT_EVD_DTO_FLAG, DAT_EVD_DTO_FLAG, DAT_EVD_CONNECTION_FLAG, DAT_EVD_DTO_FLAG,
			 DAT_EVD_DTO_FLAG, DAT_EVD_CONNECTION_FLAG, DAT_EVD_CR_FLAG, DAT_EVD_SOFTWARE_FLAG };
	/* Spins, outside any cancellation point, until the cancel was sent. */
	while (!atomic_load(&ss->cancel_sent))
		;
	step_ok(ss, dat_registry_list_providers(4, &listed, infos), "dat_registry_list_providers");
	if (!step_ok(ss, dat_ia_open(ia_name(), 8, &async_evd, &ia), "dat_ia_open"))
		return NULL;
	step_ok(ss, dat_pz_create(ia, &pz), "dat_pz_create");
	step_ok(ss, dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), "dat_cno_create");
	for (int i = 0; i < 8; i++)
		step_ok(ss, dat_evd_create(ia, QLEN, i == 7 ? cno : DAT_HANDLE_NULL, flags[i], &evd[i]),
			"dat_evd_create");
	step_ok(ss, dat_ep_create(ia, pz, evd[0], evd[1], evd[2], NULL, &ep), "dat_ep_create");
	step_ok(ss, dat_ep_create(ia, pz, evd[3], evd[4], evd[5], NULL, &peer), "dat_ep_create");
	region.for_va = buf;
#ifdef CANCEL_DAT12
	step_ok(ss, dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz, DAT_MEM_PRIV_ALL_FLAG, &lmr,
				   &lmr_ctx, &rmr_ctx, &len, &addr),
		"dat_lmr_create");
#else
	step_ok(ss, dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz, DAT_MEM_PRIV_ALL_FLAG,
				   DAT_VA_TYPE_VA, &lmr, &lmr_ctx, &rmr_ctx, &len, &addr),
		"dat_lmr_create");
#endif
	step_ok(ss, dat_psp_create_any(ia, &port, evd[6], DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
	memset(&attr, 0, sizeof(attr));
	memset(&sin, 0, sizeof(sin));
	step_ok(ss, dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), "dat_ia_query");
	if (ss->failure[0])
		return NULL;
	memcpy(&sin, attr.ia_address_ptr, sizeof(sin));
	for (int i = 0; i < 2; i++) {
		DAT_LMR_TRIPLET iov = { .lmr_context = lmr_ctx, .virtual_address = (DAT_VADDR)(uintptr_t)(buf + i * MSG),
					.segment_length = MSG };
		DAT_DTO_COOKIE cookie = { .as_64 = (DAT_UINT64)i };
		step_ok(ss, dat_ep_post_recv(i ? peer : ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
			"dat_ep_post_recv");
	}
	step_ok(ss, dat_ep_connect(peer, (DAT_IA_ADDRESS_PTR)&sin, port, 10 * 1000 * 1000 * scale, 0, NULL,
				   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		"dat_ep_connect");
	if (!dequeued(ss, evd[6], &e, "the connection request") ||
	    !step_ok(ss, dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL), "dat_cr_accept") ||
	    !connected_event(ss, evd[2], DAT_CONNECTION_EVENT_ESTABLISHED, "ESTABLISHED") ||
	    !connected_event(ss, evd[5], DAT_CONNECTION_EVENT_ESTABLISHED, "the peer's ESTABLISHED"))
		return NULL;
	step_ok(ss, dat_psp_free(psp), "dat_psp_free");
	for (int i = 0; i < 2; i++) {
		DAT_LMR_TRIPLET iov = { .lmr_context = lmr_ctx,
					.virtual_address = (DAT_VADDR)(uintptr_t)(buf + (2 + i) * MSG),
					.segment_length = MSG };
		DAT_DTO_COOKIE cookie = { .as_64 = (DAT_UINT64)i };
		step_ok(ss, dat_ep_post_send(i ? peer : ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
			"dat_ep_post_send");
	}
	if (!dto_done(ss, evd[1], "the send's completion") || !dto_done(ss, evd[4], "the peer's send's completion") ||
	    !dto_done(ss, evd[0], "the receive") || !dto_done(ss, evd[3], "the peer's receive"))
		return NULL;
	step_ok(ss, dat_ep_disconnect(peer, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	if (!connected_event(ss, evd[5], DAT_CONNECTION_EVENT_DISCONNECTED, "the peer's DISCONNECTED") ||
	    !connected_event(ss, evd[2], DAT_CONNECTION_EVENT_DISCONNECTED, "DISCONNECTED"))
		return NULL;
	step_ok(ss, dat_ep_free(ep), "dat_ep_free");
	step_ok(ss, dat_ep_free(peer), "dat_ep_free");
	step_ok(ss, dat_lmr_free(lmr), "dat_lmr_free");
	for (int i = 0; i < 8; i++)
		step_ok(ss, dat_evd_free(evd[i]), "dat_evd_free");
	step_ok(ss, dat_cno_free(cno), "dat_cno_free");
	step_ok(ss, dat_pz_free(pz), "dat_pz_free");
	step_ok(ss, dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), "dat_ia_close");
	atomic_store(&ss->ended, 1);
	pthread_testcancel();
	return NULL;
}

static void run_pending(void)
{
	struct session *ss = calloc(1, sizeof(*ss));
	double began = now();
	pthread_t t;
	void *ret;
	for (int r = 0; r < rounds; r++) {
		memset(ss, 0, sizeof(*ss));
		ss->step = "start";
		if (pthread_create(&t, NULL, pending_session, ss) != 0 || pthread_cancel(t) != 0)
			fail("pending: a thread to cancel");
		atomic_store(&ss->cancel_sent, 1);
		if (pthread_join(t, &ret) != 0)
			fail("pending: pthread_join");
		if (ss->failure[0])
			fail("pending round %d: %s", r, ss->failure);
		if (!atomic_load(&ss->ended))
			fail("pending round %d: the thread ended at %s, its cancel acted on inside the library", r,
			     ss->step);
		if (ret != PTHREAD_CANCELED)
			fail("pending round %d: the cancel never took effect", r);
	}
	printf("cancel: pending deferred: %d threads made every call but the waits with a cancel pending, and "
	       "were cancelled after: PASS (%.1f s)\n",
	       rounds, now() - began);
	free(ss);
}

int main(int argc, char **argv)
{
	const char *only_object = NULL, *only_type = NULL;
	const char *s = getenv("CANCEL_TIME_SCALE");
	int opt;
	if (s && atoi(s) > 0)
		scale = (unsigned)atoi(s);
	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt == 'r' && atoi(optarg) > 0) {
			rounds = atoi(optarg);
		} else {
			fprintf(stderr, "usage: cancel [-r ROUNDS] [evd|cno|connected|pending] [deferred|async]\n");
			return 2;
		}
	}
	if (optind < argc)
		only_object = argv[optind++];
	if (optind < argc)
		only_type = argv[optind++];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int o = EVD; o <= PENDING; o++) {
		if (only_object && strcmp(only_object, object_names[o]) != 0)
			continue;
		for (int asynchronous = 0; asynchronous <= 1; asynchronous++) {
			if (only_type && strcmp(only_type, asynchronous ? "async" : "deferred") != 0)
				continue;
			/* A thread may call the library with asynchronous cancellation in its waits only. */
			if (o == PENDING && !asynchronous)
				run_pending();
			else if (o != PENDING)
				run((enum object)o, asynchronous);
		}
	}
	return 0;
}
