/*
 * Solicited Wait at the receiver, on whichever IA the suite runs (DAT_IA).
 *
 * dat_ep_post_send(3DAT): "Solicited Wait DAT_COMPLETION_SOLICITED_WAIT_FLAG 0x02 Request for
 * notification completion for matching receive on the other side of the connection". The receiver
 * asks for it with its EP's Recv Completion Flags (dat_ep_create(3DAT), dat_ep_modify(3DAT):
 * "DAT_COMPLETION_SOLICITED_WAIT_FLAG"); dat_ep_post_recv(3DAT): a receive "is reported to the
 * Consumer asynchronously through a DTO Completion event based on the configuration of the
 * connection for Solicited Wait and the specified completion_flags value for the matching Send";
 * dat_evd_wait(3DAT): "If the Consumer uses Notification Suppression or Solicited Wait to control
 * the Notification events for unblocking a waiter ... By default, all completions are Notification
 * events." So on such an EP only a receive matched by a solicited send unblocks the EVD's waiter
 * or triggers its CNO; an unsolicited one is queued, and a dequeue (or a waiter woken by another
 * event) finds it.
 *
 * Each "must not wake" check is a bounded wait that must expire, begun before the message is sent
 * (a thread waits while the main thread sends) and outlasting its arrival (the sender's completion
 * comes while the wait still runs).
 */
#include "side.h"

#include <pthread.h>
#include <time.h>

/* How long a wait that must expire lasts: long enough for the message to land within it. */
#define QUIET_US (1000 * 1000)

/* The receiving side p, its EP's Recv Completion Flags `recv_flags`, its receive EVD with a CNO
 * when `cno` is given, connected from a. */
static void pair(struct side *a, struct side *p, DAT_COMPLETION_FLAGS recv_flags, DAT_CNO_HANDLE *cno)
{
	DAT_EP_PARAM param;

	open_side(a);
	open_side(p);
	must(dat_ep_query(p->ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	param.ep_attr.recv_completion_flags = recv_flags;
	must(dat_ep_free(p->ep), "dat_ep_free");
	if (cno) {
		DAT_OS_WAIT_PROXY_AGENT agent = { NULL, NULL };
		must(dat_cno_create(p->ia, agent, cno), "dat_cno_create");
		must(dat_evd_free(p->recv_evd), "dat_evd_free");
		must(dat_evd_create(p->ia, 32, *cno, DAT_EVD_DTO_FLAG, &p->recv_evd), "dat_evd_create");
	}
	must(dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, &param.ep_attr, &p->ep),
	     "dat_ep_create");
	connect_opened(a, p);
}

/* a sends 8 bytes to p, `flags` its completion flags; returns once the send completed. */
static void send_one(struct side *a, uint64_t c, DAT_COMPLETION_FLAGS flags)
{
	DAT_LMR_TRIPLET l = iov(a, 0, 8);
	DAT_EVENT e;
	must(dat_ep_post_send(a->ep, 1, &l, cookie(c), flags), "dat_ep_post_send");
	e = next(a->req_evd);
	if (e.event_number != DAT_DTO_COMPLETION_EVENT ||
	    e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		fprintf(stderr, "solicited: setup: the send did not complete\n");
		exit(2);
	}
}

static void post_recv(struct side *p, uint64_t c)
{
	DAT_LMR_TRIPLET r = iov(p, 64, 64);
	must(dat_ep_post_recv(p->ep, 1, &r, cookie(c), DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
}

/* A thread in dat_evd_wait on an EVD. */
struct waiter {
	pthread_t thread;
	DAT_EVD_HANDLE evd;
	DAT_TIMEOUT timeout;
	DAT_RETURN rc;
	DAT_EVENT event;
	DAT_COUNT nmore;
};

static void *waiting(void *arg)
{
	struct waiter *w = arg;
	memset(&w->event, 0, sizeof(w->event));
	w->rc = dat_evd_wait(w->evd, w->timeout, 1, &w->event, &w->nmore);
	return NULL;
}

/* Whether a waiter blocks on `evd` now: a dequeue is refused while one does (dat_evd_wait(3DAT):
 * "Any other dequeue operation ... is rejected with a DAT_INVALID_STATE error code"). An event a
 * dequeue takes instead is a setup failure. */
static int blocked_on(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_RETURN rc = dat_evd_dequeue(evd, &e);
	if (rc == DAT_SUCCESS) {
		fprintf(stderr, "solicited: setup: an event before the wait\n");
		exit(2);
	}
	return DAT_GET_TYPE(rc) == DAT_INVALID_STATE;
}

/* Starts a thread waiting on p's receive EVD for `timeout`, and returns once it waits (and has
 * gone to sleep: a wait of the main thread's that must expire lets it). */
static void start_waiter(struct waiter *w, struct side *p, DAT_TIMEOUT timeout)
{
	struct timespec until;
	DAT_EVENT e;
	DAT_COUNT more;
	int waits = 0;

	w->evd = p->recv_evd;
	w->timeout = timeout;
	if (pthread_create(&w->thread, NULL, waiting, w) != 0) {
		fprintf(stderr, "solicited: setup: no thread\n");
		exit(2);
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += WAIT_US / 1000000;
	for (;;) {
		struct timespec now;
		if ((waits = blocked_on(p->recv_evd)))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until.tv_sec)
			break;
	}
	if (!waits) {
		fprintf(stderr, "solicited: setup: the waiter never waited\n");
		exit(2);
	}
	/* Nothing comes on p's connect EVD: this wait expires, and the waiter is asleep by then. */
	if (dat_evd_wait(p->conn_evd, 20 * 1000, 1, &e, &more) != DAT_TIMEOUT_EXPIRED) {
		fprintf(stderr, "solicited: setup: an event on the connect EVD\n");
		exit(2);
	}
}

/* A dequeue finds the receive of cookie `c` within a bound. */
static int dequeued(DAT_EVD_HANDLE evd, uint64_t c)
{
	time_t deadline = time(NULL) + WAIT_US / 1000000;
	DAT_EVENT e;
	DAT_RETURN rc;
	do {
		memset(&e, 0, sizeof(e));
		rc = dat_evd_dequeue(evd, &e);
	} while (rc == DAT_QUEUE_EMPTY && time(NULL) < deadline);
	return rc == DAT_SUCCESS && dto_ok(e, c);
}

/* An unsolicited send's receive does not unblock the waiter (its bounded wait expires although
 * the message landed during it: the send completed while the wait still ran); a dequeue then
 * finds it. A solicited send's receive unblocks it. */
static void waiter_cases(void)
{
	struct side a, p;
	struct waiter w;
	int landed_during_wait;

	pair(&a, &p, DAT_COMPLETION_SOLICITED_WAIT_FLAG, NULL);
	post_recv(&p, 1);
	post_recv(&p, 2);
	post_recv(&p, 3);
	post_recv(&p, 4);

	start_waiter(&w, &p, QUIET_US * time_scale());
	send_one(&a, 11, DAT_COMPLETION_DEFAULT_FLAG);
	landed_during_wait = blocked_on(p.recv_evd);
	pthread_join(w.thread, NULL);
	expect_true("solicited/unsolicited-receive-lands-during-the-wait", landed_during_wait,
		    "the send completed while the receiver's wait ran");
	expect_ret("solicited/unsolicited-receive-wakes-no-waiter", w.rc, DAT_TIMEOUT_EXPIRED);
	expect_true("solicited/unsolicited-receive-is-queued", dequeued(p.recv_evd, 1),
		    "a dequeue finds the receive (cookie 1)");

	start_waiter(&w, &p, WAIT_US);
	send_one(&a, 12, DAT_COMPLETION_SOLICITED_WAIT_FLAG);
	pthread_join(w.thread, NULL);
	expect_true("solicited/solicited-receive-wakes-the-waiter", w.rc == DAT_SUCCESS && dto_ok(w.event, 2),
		    "dat_evd_wait returns the receive (cookie 2)");

	/* "a waiter woken for another event still finds them": the unsolicited receive came first,
	 * so the waiter that the solicited one wakes returns it, and the solicited one follows. */
	start_waiter(&w, &p, WAIT_US);
	send_one(&a, 13, DAT_COMPLETION_DEFAULT_FLAG);
	send_one(&a, 14, DAT_COMPLETION_SOLICITED_WAIT_FLAG);
	pthread_join(w.thread, NULL);
	expect_true("solicited/woken-waiter-finds-the-unsolicited-first", w.rc == DAT_SUCCESS && dto_ok(w.event, 3),
		    "dat_evd_wait returns the earlier receive (cookie 3)");
	expect_true("solicited/then-the-solicited-one", dequeued(p.recv_evd, 4), "a dequeue finds cookie 4");
	close_side(&a);
	close_side(&p);
}

/* The same with a CNO on the receive EVD: an unsolicited receive does not trigger it; a
 * solicited one does. */
static void cno_cases(void)
{
	struct side a, p;
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

	pair(&a, &p, DAT_COMPLETION_SOLICITED_WAIT_FLAG, &cno);
	post_recv(&p, 21);
	post_recv(&p, 22);
	send_one(&a, 31, DAT_COMPLETION_DEFAULT_FLAG);
	/* dat_cno_wait(3DAT): "DAT_QUEUE_EMPTY The operation timed out without a notification." */
	expect_ret("solicited/unsolicited-receive-triggers-no-cno", dat_cno_wait(cno, QUIET_US * time_scale(), &evd),
		   DAT_QUEUE_EMPTY);
	expect_true("solicited/unsolicited-receive-is-queued-cno", dequeued(p.recv_evd, 21),
		    "a dequeue finds the receive (cookie 21)");
	send_one(&a, 32, DAT_COMPLETION_SOLICITED_WAIT_FLAG);
	evd = DAT_HANDLE_NULL;
	expect_ret("solicited/solicited-receive-triggers-the-cno", dat_cno_wait(cno, WAIT_US, &evd), DAT_SUCCESS);
	expect_true("solicited/cno-names-the-receive-evd", evd == p.recv_evd, "the receive EVD");
	expect_true("solicited/solicited-receive-is-queued-cno", dequeued(p.recv_evd, 22),
		    "a dequeue finds the receive (cookie 22)");
	close_side(&a);
	close_side(&p);
	dat_cno_free(cno);
}

/* An EP whose Recv Completion Flags are the default: "By default, all completions are
 * Notification events": an unsolicited send's receive unblocks the waiter and triggers the CNO. */
static void default_cases(void)
{
	struct side a, p;
	struct waiter w;
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

	pair(&a, &p, DAT_COMPLETION_DEFAULT_FLAG, NULL);
	post_recv(&p, 41);
	start_waiter(&w, &p, WAIT_US);
	send_one(&a, 51, DAT_COMPLETION_DEFAULT_FLAG);
	pthread_join(w.thread, NULL);
	expect_true("solicited/default-ep-every-receive-wakes", w.rc == DAT_SUCCESS && dto_ok(w.event, 41),
		    "dat_evd_wait returns the receive (cookie 41)");
	close_side(&a);
	close_side(&p);

	pair(&a, &p, DAT_COMPLETION_DEFAULT_FLAG, &cno);
	post_recv(&p, 42);
	send_one(&a, 52, DAT_COMPLETION_DEFAULT_FLAG);
	expect_ret("solicited/default-ep-every-receive-triggers-the-cno", dat_cno_wait(cno, WAIT_US, &evd),
		   DAT_SUCCESS);
	expect_true("solicited/default-ep-receive-is-queued", dequeued(p.recv_evd, 42),
		    "a dequeue finds the receive (cookie 42)");
	close_side(&a);
	close_side(&p);
	dat_cno_free(cno);
}

/* dat_ep_post_recv(3DAT): a receive posted with "DAT_COMPLETION_UNSIGNALLED_FLAG 0x04
 * Non-notification completion" (its EP's Recv Completion Flags allowing it) is queued without
 * unblocking the waiter; a dequeue finds it. */
static void unsignalled_receive(void)
{
	struct side a, p;
	struct waiter w;
	DAT_LMR_TRIPLET r;

	pair(&a, &p, DAT_COMPLETION_UNSIGNALLED_FLAG, NULL);
	r = iov(&p, 64, 64);
	must(dat_ep_post_recv(p.ep, 1, &r, cookie(61), DAT_COMPLETION_UNSIGNALLED_FLAG), "dat_ep_post_recv");
	start_waiter(&w, &p, QUIET_US * time_scale());
	send_one(&a, 71, DAT_COMPLETION_SOLICITED_WAIT_FLAG);
	pthread_join(w.thread, NULL);
	expect_ret("dat_ep_post_recv/unsignalled-receive-wakes-no-waiter", w.rc, DAT_TIMEOUT_EXPIRED);
	expect_true("dat_ep_post_recv/unsignalled-receive-is-queued", dequeued(p.recv_evd, 61),
		    "a dequeue finds the receive (cookie 61)");
	close_side(&a);
	close_side(&p);
}

int main(void)
{
	watchdog(170);
	waiter_cases();
	cno_cases();
	default_cases();
	unsignalled_receive();
	return check_failures ? 1 : 0;
}
