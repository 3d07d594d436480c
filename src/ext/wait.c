/*
 * dat_evd_wait and dat_cno_wait are cancellation points, as a blocking wait of the C library is:
 * a thread blocked in one is cancelled by pthread_cancel. The unwinding a cancellation starts
 * must cross no Rust frame (the library's Rust functions abort the process on it), so these
 * two are C. The wait itself is taken in steps by the library (src/api/wait.rs): a step never
 * blocks and runs with cancellation disabled, so no cancel is acted on in Rust; between steps
 * the thread sleeps here, in ppoll, the one place where a cancel takes effect, and where
 * cleanup abandons the wait (the object waited on is released and may be waited on again).
 *
 * Asynchronous cancellation is made deferred for the call (and restored as it returns, where a
 * cancel that came meanwhile takes effect), so inside the call it too takes effect only in the
 * sleep.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

typedef void *DAT_HANDLE;
typedef uint32_t DAT_RETURN;
typedef uint32_t DAT_TIMEOUT;
typedef int32_t DAT_COUNT;
typedef struct dat_event DAT_EVENT; /* written by the library only */

/* Mirrored by src/api/wait.rs (WaitState). */
struct libdat_wait {
    const void *object; /* held while the wait sleeps; NULL once it has ended */
    int fd;             /* sleep until this is readable (-1: none) */
    int64_t sleep_ns;   /* or this long has passed (-1: no bound) */
};

DAT_RETURN libdat_evd_wait_step(DAT_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event,
                                DAT_COUNT *nmore, struct libdat_wait *w);
void libdat_evd_wait_abandon(void *w);
DAT_RETURN libdat_cno_wait_step(DAT_HANDLE cno, DAT_TIMEOUT timeout, DAT_HANDLE *evd, struct libdat_wait *w);
void libdat_cno_wait_abandon(void *w);

/* The caller's cancellation state and type, restored as the wait returns. */
struct cancel_mode {
    int state, type;
};

/*
 * A cancel already pending takes effect as the wait is called, as at any cancellation point;
 * from then on the steps run with cancellation disabled, and deferred.
 */
static void steps_begin(struct cancel_mode *m)
{
    pthread_testcancel();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &m->state);
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &m->type);
}

/*
 * The caller's state and type back. For an asynchronous caller, a cancel that came during the
 * call takes effect here, as it would have at once: through pthread_testcancel, not as the
 * type is restored (glibc 2.36's pthread_setcanceltype then ends the thread without setting
 * its result to PTHREAD_CANCELED).
 */
static DAT_RETURN steps_end(const struct cancel_mode *m, DAT_RETURN rc)
{
    pthread_setcancelstate(m->state, NULL);
    if (m->type == PTHREAD_CANCEL_ASYNCHRONOUS) {
        pthread_testcancel();
        pthread_setcanceltype(m->type, NULL);
    }
    return rc;
}

/* Until w's descriptor is readable or its time has passed, or a signal comes. */
static void sleep_once(const struct libdat_wait *w)
{
    struct pollfd p = { .fd = w->fd, .events = POLLIN };
    struct timespec bound = { (time_t)(w->sleep_ns / 1000000000), (long)(w->sleep_ns % 1000000000) };
    ppoll(&p, 1, w->sleep_ns >= 0 ? &bound : NULL, NULL);
}

/*
 * Sleeps as the last step asked: the wait's cancellation point, with the caller's cancellation
 * state (disabled stays disabled). A cancel acted on here runs `abandon` as the thread unwinds.
 * A signal that interrupts the sleep only ends it early: the next step looks again.
 */
static void sleep_between_steps(struct libdat_wait *w, const struct cancel_mode *m, void (*abandon)(void *))
{
    pthread_cleanup_push(abandon, w);
    pthread_setcancelstate(m->state, NULL);
    sleep_once(w);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cleanup_pop(0);
}

/* The steps of an EVD's wait and the sleeps between them, until its result. */
static DAT_RETURN evd_wait_steps(DAT_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event,
                                 DAT_COUNT *nmore, const struct cancel_mode *m)
{
    struct libdat_wait w = { NULL, -1, -1 };
    DAT_RETURN rc = libdat_evd_wait_step(evd, timeout, threshold, event, nmore, &w);
    while (rc == 0 && w.object) {
        sleep_between_steps(&w, m, libdat_evd_wait_abandon);
        rc = libdat_evd_wait_step(evd, timeout, threshold, event, nmore, &w);
    }
    if (w.object) /* a step failed inside (a panic) with the wait still on */
        libdat_evd_wait_abandon(&w);
    return rc;
}

/* The steps of a CNO's wait and the sleeps between them, until its result. */
static DAT_RETURN cno_wait_steps(DAT_HANDLE cno, DAT_TIMEOUT timeout, DAT_HANDLE *evd, const struct cancel_mode *m)
{
    struct libdat_wait w = { NULL, -1, -1 };
    DAT_RETURN rc = libdat_cno_wait_step(cno, timeout, evd, &w);
    while (rc == 0 && w.object) {
        sleep_between_steps(&w, m, libdat_cno_wait_abandon);
        rc = libdat_cno_wait_step(cno, timeout, evd, &w);
    }
    if (w.object)
        libdat_cno_wait_abandon(&w);
    return rc;
}

DAT_RETURN dat_evd_wait(DAT_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event, DAT_COUNT *nmore)
{
    struct cancel_mode m;
    steps_begin(&m);
    return steps_end(&m, evd_wait_steps(evd, timeout, threshold, event, nmore, &m));
}

DAT_RETURN dat_cno_wait(DAT_HANDLE cno, DAT_TIMEOUT timeout, DAT_HANDLE *evd)
{
    struct cancel_mode m;
    steps_begin(&m);
    return steps_end(&m, cno_wait_steps(cno, timeout, evd, &m));
}

/*
 * The DAT 1.2 waits (src/api12): the same waits, their result in 1.2's numbering, bound to the
 * 1.2 names in version node DAT_1.2 (the definitions are named so that the 2.0 version
 * script, which takes every `DAT_RETURN dat_...(` definition here, leaves them out).
 *
 * 1.2's event is another layout: the wait takes a 2.0 event onto this stack and hands over its
 * 1.2 form. An event 1.2 cannot represent (an HA or extension event) is dropped, and the wait
 * goes on for the time left.
 */
struct dat_event12; /* 48 bytes, written by the library only */

/* A 2.0 DAT_EVENT's room: 120 bytes, 8-aligned (checked in src/api12/evd.rs). */
struct event20_room {
    uint64_t words[15];
};

int libdat12_event_from20(const DAT_EVENT *taken, struct dat_event12 *out);
DAT_RETURN libdat12_return(DAT_RETURN code);

#define DAT_TIMEOUT_INFINITE ((DAT_TIMEOUT)0xffffffff)
#define DAT_SUCCESS 0

static int64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* What is left of `timeout` (microseconds) begun at `start`: none once it has passed. */
static DAT_TIMEOUT timeout_left(DAT_TIMEOUT timeout, int64_t start)
{
    int64_t left;
    if (timeout == DAT_TIMEOUT_INFINITE)
        return timeout;
    left = (int64_t)timeout - (now_us() - start);
    return left > 0 ? (DAT_TIMEOUT)left : 0;
}

__asm__(".symver libdat12_evd_wait, dat_evd_wait@DAT_1.2");
DAT_RETURN libdat12_evd_wait(DAT_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, struct dat_event12 *event,
                             DAT_COUNT *nmore)
{
    struct cancel_mode m;
    struct event20_room taken;
    /* A NULL event goes to the core as NULL: its checks, in its order. */
    DAT_EVENT *into = event ? (DAT_EVENT *)&taken : NULL;
    int64_t start = timeout == DAT_TIMEOUT_INFINITE ? 0 : now_us();
    DAT_TIMEOUT left = timeout;
    DAT_RETURN rc;
    steps_begin(&m);
    for (;;) {
        rc = evd_wait_steps(evd, left, threshold, into, nmore, &m);
        if (rc != DAT_SUCCESS || libdat12_event_from20(into, event))
            break;
        left = timeout_left(timeout, start);
    }
    return steps_end(&m, libdat12_return(rc));
}

__asm__(".symver libdat12_cno_wait, dat_cno_wait@DAT_1.2");
DAT_RETURN libdat12_cno_wait(DAT_HANDLE cno, DAT_TIMEOUT timeout, DAT_HANDLE *evd)
{
    struct cancel_mode m;
    steps_begin(&m);
    return steps_end(&m, libdat12_return(cno_wait_steps(cno, timeout, evd, &m)));
}
