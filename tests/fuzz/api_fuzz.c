/*
 * api_fuzz: a fuzz harness for libdat's C API.
 *
 * A supervisor forks two workers. Each worker opens the tcp-lo IA, builds a pool of objects
 * (PZs, EVDs of each stream kind, CNOs made by dat_cno_create and dat_cno_fd_create, LMRs over
 * memory the harness owns, RMRs, SRQs, EPs, PSPs), and the two connect to each other (each
 * listens with dat_psp_create_any and tells the other its qualifier through a pipe), so sends,
 * receives, RDMA writes and RDMA reads really flow. Then both make random calls concurrently:
 * any of the 85 exported functions, with handles drawn from live objects, freed objects,
 * freed-and-reused slots, objects of the wrong type, NULL, bit-flipped handles and garbage,
 * and random counts, lengths, flags, masks, IOVs, private data and (short) timeouts. Now and
 * then they free and recreate objects, disconnect and reconnect, and close an IA abruptly. A
 * core of objects that keeps connections and DTOs going is spared by destructive calls but
 * now and then; the pool is topped up and dead connections remade every 64 steps.
 *
 * Checked, each a failure (exit 1, the seed and the last calls of each thread printed):
 *  - a worker dies (a signal, an ASan report) or its watchdog finds it stuck;
 *  - a return is not DAT_SUCCESS, the bare DAT_QUEUE_EMPTY, DAT_TIMEOUT_EXPIRED or
 *    DAT_CONN_QUAL_IN_USE, or an error/warning class with a DAT_RETURN_TYPE and a
 *    DAT_RETURN_SUBTYPE (or 0);
 *  - a call takes longer than 2 s (-t);
 *  - an event is not well-formed (unknown number, evd_handle not the EVD it came from, DTO
 *    status or operation out of range, a request without a CR handle);
 *  - a call succeeds on a handle that is certainly invalid for it (freed by us, of another
 *    kind, NULL, garbage);
 *  - the library writes into the unregistered canary after the registered arena, or accepts a
 *    registration outside harness memory;
 *  - the library registers memory the process cannot access as the privileges ask: read-only
 *    pages with a privilege that writes, unmapped pages, a range running off the end of a
 *    mapping, a PROT_NONE page;
 *  - a pointer the library returned (addresses, private data, names, strings) cannot be read.
 *
 * Memory: the harness passes a pointer the library may write through only when it points to
 * harness memory large enough for the type, registers only its own arena, and never frees
 * registered memory, so a crash is the library's fault. It also asks the library to register
 * memory it may not write or does not have (read-only pages, an unmapped hole beyond them, a
 * PROT_NONE page before them): the library must refuse all but read-only registrations of the
 * read-only pages, which join the pool, so DTOs name them as local segments and the peer as
 * the target of its RDMA writes, reads and atomics (which it also aims at the read-only pages
 * and the hole under live contexts): refused, never a fault. Arguments and out-parameters live in
 * slots that end at a PROT_NONE page (an overrun faults at once) and are made PROT_NONE once
 * the call has returned (a library that keeps the caller's pointer faults when it uses it).
 *
 * Deterministic from a seed: the random choices of step k of thread t of worker w come from
 * (seed, w, t, k) alone, so a replay with the same seed makes the same choices (the outcomes
 * of calls that depend on timing between the two processes, or threads, may differ).
 *
 * usage: api_fuzz [-s SEED] [-n CALLS] [-i IA] [-t HANG_MS] [-P 0|1] [-S SIGNAL_US] [-T THREADS] [-v]
 *   -n total calls over both workers (1000000);
 *   -T runs that many harness threads in each worker (1 by default), making calls on the same
 *      objects concurrently; the interleaving then varies from run to run;
 *   -P 0 turns off the poisoning of argument memory after each call (on by default);
 *   -S sets the period of the SIGALRM that drives the watchdog (1 s; smaller periods make a
 *      signal storm that every blocking call of the library must survive).
 */
#define _GNU_SOURCE
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_redirection.h>
#include <dat2/dat_ib_extensions.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* The functions                                                                              */

#define FUNCS(X)                                                                              \
	X(ia_openv, 3) X(ia_query, 30) X(ia_close, 3)                                             \
	X(pz_create, 20) X(pz_query, 20) X(pz_free, 15)                                           \
	X(evd_create, 40) X(evd_query, 30) X(evd_free, 25) X(evd_resize, 25) X(evd_post_se, 40)   \
	X(evd_dequeue, 400) X(evd_wait, 60) X(evd_enable, 20) X(evd_disable, 15)                  \
	X(evd_set_unwaitable, 15) X(evd_clear_unwaitable, 20) X(evd_modify_cno, 25)               \
	X(cno_create, 15) X(cno_fd_create, 15) X(cno_modify_agent, 15) X(cno_query, 20)           \
	X(cno_free, 15) X(cno_wait, 20) X(cno_trigger, 15)                                        \
	X(lmr_create, 40) X(lmr_query, 30) X(lmr_free, 25) X(lmr_sync_rdma_read, 15)              \
	X(lmr_sync_rdma_write, 15)                                                                \
	X(rmr_create, 15) X(rmr_create_for_ep, 15) X(rmr_query, 20) X(rmr_bind, 30)               \
	X(rmr_free, 15)                                                                           \
	X(srq_create, 15) X(srq_free, 12) X(srq_post_recv, 60) X(srq_query, 20) X(srq_resize, 15) \
	X(srq_set_lw, 15)                                                                         \
	X(ep_create, 40) X(ep_create_with_srq, 20) X(ep_query, 40) X(ep_modify, 30)               \
	X(ep_get_status, 40) X(ep_free, 25) X(ep_reset, 25) X(ep_recv_query, 15)                  \
	X(ep_set_watermark, 15) X(ep_connect, 40) X(ep_dup_connect, 20)                           \
	X(ep_common_connect, 10) X(ep_disconnect, 25)                                             \
	X(ep_post_send, 300) X(ep_post_send_with_invalidate, 40) X(ep_post_rdma_write, 200)       \
	X(ep_post_rdma_read, 200) X(ep_post_rdma_read_to_rmr, 20) X(ep_post_recv, 300)            \
	X(psp_create, 15) X(psp_create_any, 15) X(psp_query, 20) X(psp_free, 12)                  \
	X(rsp_create, 15) X(rsp_query, 15) X(rsp_free, 12)                                        \
	X(csp_create, 10) X(csp_query, 10) X(csp_free, 10)                                        \
	X(cr_query, 30) X(cr_accept, 30) X(cr_reject, 20) X(cr_handoff, 10)                       \
	X(set_consumer_context, 25) X(get_consumer_context, 25) X(get_handle_type, 40)            \
	X(registry_list_providers, 10) X(registry_add_provider, 6)                                \
	X(registry_remove_provider, 6) X(registry_providers_related, 10)                          \
	X(strerror, 25) X(strerror_extension, 10) X(strerror_ext_status, 10)                      \
	X(extension_op, 20)

#define ENUM_F(n, w) F_##n,
enum { FUNCS(ENUM_F) NFUNC };
#define NAME_F(n, w) "dat_" #n,
static const char *fname[NFUNC] = { FUNCS(NAME_F) };
#define WEIGHT_F(n, w) w,
static const unsigned fweight[NFUNC] = { FUNCS(WEIGHT_F) };

/* Outcomes: 0 success, then DAT_RETURN_TYPE >> 16 (1..23), extension base, not implemented,
 * and an invalid return. */
enum { O_EXT = 24, O_NOTIMPL = 25, O_INVALID = 26, NOUT = 27 };
static const char *oname[NOUT] = {
	"OK",         "ABORT",       "QUAL_IN_USE", "NO_RESOURCES", "INTERNAL",  "HANDLE",
	"PARAM",      "STATE",       "LENGTH",      "MODEL",        "NOT_FOUND", "PRIVILEGES",
	"PROTECTION", "QUEUE_EMPTY", "QUEUE_FULL",  "TIMEOUT",      "ALREADY_REG", "PROV_IN_USE",
	"ADDRESS",    "INTERRUPTED", "QUAL_UNAVAIL", "RESERVED_LMR", "PORT_IN_USE", "COMM_NOT_SUP",
	"EXTENSION",  "NOT_IMPL",    "INVALID",
};

/* ------------------------------------------------------------------------------------------ */
/* Shared state between the supervisor and the two workers                                   */

#define RING 64
#define MAXT 4 /* harness threads per worker */
#define NPUBQ 8
#define NPUBL 8

struct rec {
	uint64_t step;
	uint64_t a[8];
	uint32_t ret;
	uint32_t usec;
	uint16_t fid;
	uint8_t nargs;
	uint8_t done;
	char tags[8];
};

struct publmr {
	uint64_t addr; /* what a remote RMR triplet names: the address, or 0 when zero-based */
	uint64_t len;
	uint32_t rmr_ctx;
	uint32_t valid;
	uint32_t core;
};

enum { DTO_OPS = 9, DTO_ST = 14 };

struct wshared {
	volatile uint64_t calls, steps;
	volatile uint64_t psp_qual[NPUBQ];
	struct publmr lmr[NPUBL];
	uint64_t counts[NFUNC][NOUT];
	uint64_t max_us[NFUNC];        /* the slowest call of each function */
	uint64_t dto[DTO_OPS][DTO_ST]; /* completions by operation and status */
	uint64_t events[32];           /* by event_names[] */
	uint64_t invalid, hangs, bad_events, bad_success, wild, canary, agent, oddities;
	uint64_t inaccessible;           /* registrations of memory the process cannot access as asked */
	uint64_t foreign_tried, foreign_read_only; /* registrations of foreign memory, and those made */
	uint64_t ro_base, hole_base;     /* where this worker's read-only pages and hole are */
	uint64_t connects_established;
	double seconds;
	volatile int finished;
	volatile int ready;
	volatile uint64_t in_call[MAXT];  /* when each thread's current library call began, or 0 */
	volatile uint64_t progress[MAXT]; /* when each thread last finished a call */
	uint32_t ring_pos[MAXT];
	struct rec ring[MAXT][RING];
	char note[512];
};

static struct wshared *shm;      /* both workers' blocks */
static struct wshared *me, *peer;
static int wid;                  /* worker 0 or 1 */
static uint64_t g_seed;
static uint64_t g_calls = 1000000;
static uint64_t hang_ns = 2000000000ull;
static const char *ia_name = "tcp-lo";
static int verbose;
static int nthreads = 1;
static __thread int tid; /* harness thread within the worker */
/* The harness's own state is shared by its threads under this lock, which a thread lets go
 * of only while it is inside a library call: library calls run concurrently, the
 * harness's bookkeeping does not. */
static pthread_mutex_t hmx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t signal_us = 1000000; /* SIGALRM period: the watchdog, and signals the library must survive */

/* ------------------------------------------------------------------------------------------ */
/* Random numbers: step k of worker w draws from splitmix64(seed, w, k)                       */

static __thread uint64_t rs;

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t r64(void)
{
	rs += 0x9e3779b97f4a7c15ull;
	return mix64(rs);
}

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(r64() % n) : 0;
}

static int chance(unsigned percent)
{
	return rnd(100) < percent;
}

static void seed_step(uint64_t step, uint64_t salt)
{
	rs = mix64(g_seed ^ mix64(((uint64_t)wid << 56) ^ ((uint64_t)tid << 52) ^ (salt << 48) ^ step));
}

/* How often an argument of this call is bad, in percent; chosen per call. */
static __thread unsigned badp;

static int bad(void)
{
	return badp && chance(badp);
}

/* ------------------------------------------------------------------------------------------ */
/* Time, the ring of last calls, the watchdog                                                 */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __thread int expect_fail;    /* the primary handle is certainly not a valid one of its kind */
static __thread struct rec *cur;    /* the record of the call being made */
static __thread uint64_t cur_step;

static void rec_begin(int fid)
{
	uint32_t pos = me->ring_pos[tid]++ % RING;
	cur = &me->ring[tid][pos];
	memset(cur, 0, sizeof(*cur));
	cur->step = cur_step;
	cur->fid = (uint16_t)fid;
	expect_fail = 0;
}

/* An argument, with a tag saying what kind of value it is (L live, F freed, W wrong type,
 * N null, G garbage, B bit-flipped live handle, v value, p pointer to harness memory). */
static uint64_t arg_tag(uint64_t v, char tag)
{
	if (cur && cur->nargs < 8) {
		cur->a[cur->nargs] = v;
		cur->tags[cur->nargs] = tag;
		cur->nargs++;
	}
	return v;
}
#define AV(x) arg_tag((uint64_t)(x), 'v')
#define AP(x) ((void *)(uintptr_t)arg_tag((uint64_t)(uintptr_t)(x), (x) ? 'p' : 'N'))

static void wr(const char *s)
{
	ssize_t n = write(2, s, strlen(s));
	(void)n;
}

/* Async-signal-safe number formatting for the ring dump. */
static char *fmt_hex(char *p, uint64_t v)
{
	char tmp[17];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *fmt_dec(char *p, uint64_t v)
{
	char tmp[21];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *fmt_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static void dump_ring_t(struct wshared *w, int who, int t, int n)
{
	char line[512];
	uint32_t end = w->ring_pos[t], i;
	char *p = line;
	if (!end)
		return;
	p = fmt_str(p, "  last calls of worker ");
	p = fmt_dec(p, (uint64_t)who);
	if (nthreads > 1) {
		p = fmt_str(p, " thread ");
		p = fmt_dec(p, (uint64_t)t);
	}
	p = fmt_str(p, " (step: function(args, tag L live F freed W wrong-type N null G garbage B bit-flip v value p pointer) = return):\n");
	*p = 0;
	wr(line);
	for (i = (end > (uint32_t)n ? end - (uint32_t)n : 0); i < end; i++) {
		struct rec *r = &w->ring[t][i % RING];
		int k;
		if (r->fid >= NFUNC)
			continue;
		p = line;
		p = fmt_str(p, "    ");
		p = fmt_dec(p, r->step);
		p = fmt_str(p, ": ");
		p = fmt_str(p, fname[r->fid]);
		*p++ = '(';
		for (k = 0; k < r->nargs && k < 8; k++) {
			if (k)
				*p++ = ',';
			*p++ = r->tags[k] ? r->tags[k] : '?';
			*p++ = ':';
			p = fmt_hex(p, r->a[k]);
		}
		*p++ = ')';
		if (r->done) {
			p = fmt_str(p, " = ");
			p = fmt_hex(p, r->ret);
			p = fmt_str(p, " in ");
			p = fmt_dec(p, r->usec);
			p = fmt_str(p, " us");
		} else {
			p = fmt_str(p, " (in progress)");
		}
		*p++ = '\n';
		*p = 0;
		wr(line);
	}
}

static void dump_ring(struct wshared *w, int who, int n)
{
	int t;
	for (t = 0; t < nthreads; t++)
		dump_ring_t(w, who, t, n);
}

static void on_alarm(int sig)
{
	/* The handler may run on any thread, the library's too: read the stamps first, so a
	 * stamp later than t means progress, not an age. */
	uint64_t since = 0, progress = 0, t;
	char line[256], *p = line;
	int k;
	(void)sig;
	for (k = 0; k < nthreads; k++) {
		uint64_t c = me->in_call[k], g = me->progress[k];
		if (c && (!since || c < since))
			since = c;
		if (g > progress)
			progress = g;
	}
	t = now_ns();
	if (since && since < t && t - since > 5 * hang_ns / 2 + 3000000000ull) {
		p = fmt_str(p, "api_fuzz: WATCHDOG: worker ");
		p = fmt_dec(p, (uint64_t)wid);
		p = fmt_str(p, " stuck in a call for ");
		p = fmt_dec(p, (t - since) / 1000000);
		p = fmt_str(p, " ms; seed ");
		p = fmt_dec(p, g_seed);
		p = fmt_str(p, "\n");
		*p = 0;
		wr(line);
		dump_ring(me, wid, 24);
		_exit(4);
	}
	if (progress && progress < t && t - progress > 20000000000ull) {
		wr("api_fuzz: WATCHDOG: harness made no progress for 20 s\n");
		dump_ring(me, wid, 24);
		_exit(5);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Return checking                                                                            */

static int valid_return(DAT_RETURN r)
{
	uint32_t cls = r & (DAT_CLASS_ERROR | DAT_CLASS_WARNING), type = DAT_GET_TYPE(r),
		 sub = DAT_GET_SUBTYPE(r);
	/* The bare values OpenFabrics returns, as we do: an empty EVD, a wait that timed out, a
	 * qualifier whose port another listener holds. */
	if (r == DAT_SUCCESS || r == DAT_QUEUE_EMPTY || r == DAT_TIMEOUT_EXPIRED || r == DAT_CONN_QUAL_IN_USE)
		return 1;
	if (cls != DAT_CLASS_ERROR && cls != DAT_CLASS_WARNING)
		return 0;
	if (!((type >= DAT_ABORT && type <= DAT_COMM_NOT_SUPPORTED) || type == DAT_EXTENSION_BASE ||
	      type == DAT_NOT_IMPLEMENTED))
		return 0;
	if (sub > DAT_THREAD_SAFETY_NOT_FOUND)
		return 0;
	return 1;
}

static int outcome(DAT_RETURN r)
{
	uint32_t type = DAT_GET_TYPE(r);
	if (!valid_return(r))
		return O_INVALID;
	if (type == DAT_EXTENSION_BASE)
		return O_EXT;
	if (type == DAT_NOT_IMPLEMENTED)
		return O_NOTIMPL;
	return (int)(type >> 16);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	char buf[600];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "api_fuzz[w%d step %" PRIu64 " seed %" PRIu64 "]: %s\n", wid, cur_step, g_seed, buf);
	if (!me->note[0])
		memcpy(me->note, buf, sizeof(me->note) - 1);
}

static void bank_next(void);

static DAT_RETURN after(int fid, DAT_RETURN r, uint64_t t0)
{
	uint64_t t1 = now_ns(), d = t1 - t0;
	int o = outcome(r);
	me->in_call[tid] = 0;
	me->progress[tid] = t1;
	bank_next();
	me->calls++;
	me->counts[fid][o]++;
	cur->ret = r;
	cur->usec = (uint32_t)(d / 1000 > UINT32_MAX ? UINT32_MAX : d / 1000);
	if (d / 1000 > me->max_us[fid])
		me->max_us[fid] = d / 1000;
	cur->done = 1;
	if (o == O_INVALID) {
		me->invalid++;
		if (me->invalid <= 5) {
			note("INVALID RETURN 0x%08x from %s", r, fname[fid]);
			dump_ring(me, wid, 12);
		}
	}
	if (d > hang_ns) {
		me->hangs++;
		if (me->hangs <= 5) {
			note("HANG: %s took %" PRIu64 " ms", fname[fid], d / 1000000);
			dump_ring(me, wid, 12);
		}
	}
	if (expect_fail && r == DAT_SUCCESS) {
		me->bad_success++;
		if (me->bad_success <= 5) {
			note("SUCCESS with an invalid handle: %s", fname[fid]);
			dump_ring(me, wid, 6);
		}
	}
	expect_fail = 0;
	return r;
}

/* Wraps one library call: the record is begun (arguments recorded) by the caller. */
#define CALL(fid, expr)                                                                          \
	({                                                                                       \
		uint64_t t0_;                                                                    \
		DAT_RETURN r_;                                                                   \
		bank_poison();                                                                   \
		t0_ = now_ns();                                                                  \
		me->in_call[tid] = t0_;                                                          \
		pthread_mutex_unlock(&hmx);                                                      \
		r_ = (expr);                                                                     \
		pthread_mutex_lock(&hmx);                                                        \
		after((fid), r_, t0_);                                                           \
	})

/* ------------------------------------------------------------------------------------------ */
/* Harness memory                                                                             */

#define PAGE 4096
#define ARENA (1u << 20)     /* registrable */
#define CANARY (64u * 1024)  /* never registered: the library must never write here */
static unsigned char *arena; /* ARENA + CANARY bytes, then a guard page */

/* Memory the library must not write: FOREIGN_RO read-only pages (a pattern the peer may read)
 * between a PROT_NONE page and FOREIGN_HOLE unmapped pages, placed far from where the kernel
 * puts other mappings, so the hole stays a hole. */
#define FOREIGN_RO 4
#define FOREIGN_HOLE 2
static unsigned char *noaccess, *ro_mem, *hole;

/* Guarded slots: SLOT_DATA bytes, then a PROT_NONE page. slot_end(i) is the guard's start.
 * There are NBANKS banks of them, used in turn by successive calls: once a call has
 * returned, the slots it was given (its arguments and out-parameters) are made PROT_NONE
 * from the start of the next call until their bank comes round again, so a library that
 * keeps a caller's pointer and uses it after returning faults at once. */
#define NSLOTS 24
#define SLOT_DATA (32 * 1024)
#define NBANKS 4
static int poison = 1;
static __thread unsigned char *slots;
static __thread int bank, poison_bank = -1;
static __thread uint32_t bank_used[NBANKS], bank_prot[NBANKS];

static unsigned char *slot_base(int b, int i)
{
	return slots + ((size_t)b * NSLOTS + (size_t)i) * (SLOT_DATA + PAGE);
}

static unsigned char *slot_end(int i)
{
	return slot_base(bank, i) + SLOT_DATA;
}

/* A pointer to `size` bytes of slot i ending at its guard (8-aligned), filled with junk. */
static void *slot_ptr(int i, size_t size)
{
	size_t rounded = (size + 7) & ~(size_t)7;
	unsigned char *p = slot_end(i) - rounded;
	if (bank_prot[bank] & (1u << i)) {
		if (mprotect(slot_base(bank, i), SLOT_DATA, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			exit(2);
		}
		bank_prot[bank] &= ~(1u << i);
	}
	bank_used[bank] |= 1u << i;
	memset(p, 0xa5, rounded);
	return p;
}

/* After a call: the next one takes the next bank; the previous call's slots are poisoned as
 * the next call begins (the harness reads its results in between). */
static void bank_next(void)
{
	poison_bank = poison ? bank : -1;
	bank = (bank + 1) % NBANKS;
}

static void bank_poison(void)
{
	int i, b = poison_bank;
	if (b < 0)
		return;
	poison_bank = -1;
	for (i = 0; i < NSLOTS; i++)
		if ((bank_used[b] & (1u << i)) && !(bank_prot[b] & (1u << i))) {
			if (mprotect(slot_base(b, i), SLOT_DATA, PROT_NONE)) {
				perror("mprotect");
				exit(2);
			}
			bank_prot[b] |= 1u << i;
		}
	bank_used[b] = 0;
}

/* Slots used for out-parameters (0..7) and in-parameters (8..23). */
enum { S_OUT0 = 0, S_IN0 = 8, S_IOV = 16, S_RIOV = 17, S_RIOV2 = 18, S_PD = 19, S_ADDR = 20,
       S_NAME = 21, S_NAME2 = 22, S_ATTR = 23 };

/* An out-parameter: harness memory of the type's size ending at a guard page, or NULL. */
static void *out_n(int idx, size_t size, int may_null)
{
	void *p;
	if (may_null && bad() && chance(50))
		p = NULL;
	else
		p = slot_ptr(S_OUT0 + idx, size);
	return AP(p);
}
#define OUTP(idx, T) ((T *)out_n((idx), sizeof(T), 1))

static void setup_memory(void)
{
	size_t alen = ARENA + CANARY + PAGE;
	int i;
	arena = mmap(NULL, alen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	mprotect(arena + ARENA + CANARY, PAGE, PROT_NONE);
	for (i = 0; i < (int)ARENA; i++)
		arena[i] = (unsigned char)(i * 7 + wid);
	memset(arena + ARENA, 0xc3, CANARY);
}

static void setup_foreign(void)
{
	size_t len = (size_t)(1 + FOREIGN_RO + FOREIGN_HOLE) * PAGE, i;
	/* 48 TiB: far below where the kernel maps (top down from 128 TiB), above AddressSanitizer's
	 * shadow. */
	void *far = (void *)(uintptr_t)(0x300000000000ull + (uint64_t)wid * 0x40000000ull);
	unsigned char *m = mmap(far, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED)
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	noaccess = m;
	ro_mem = m + PAGE;
	hole = ro_mem + FOREIGN_RO * PAGE;
	for (i = 0; i < FOREIGN_RO * PAGE; i++)
		ro_mem[i] = (unsigned char)(i * 13 + wid);
	if (mprotect(noaccess, PAGE, PROT_NONE) || mprotect(ro_mem, FOREIGN_RO * PAGE, PROT_READ) ||
	    munmap(hole, FOREIGN_HOLE * PAGE)) {
		perror("foreign memory");
		exit(2);
	}
	me->ro_base = (uint64_t)(uintptr_t)ro_mem;
	me->hole_base = (uint64_t)(uintptr_t)hole;
}

/* Whether something mapped a page of the hole after all (then a registration there may stand). */
static int hole_filled(void)
{
	unsigned char v[FOREIGN_HOLE];
	int i;
	for (i = 0; i < FOREIGN_HOLE; i++)
		if (mincore(hole + i * PAGE, PAGE, v) == 0)
			return 1;
	return 0;
}

static int in_ro(uint64_t base, uint64_t len)
{
	uint64_t r0 = (uint64_t)(uintptr_t)ro_mem;
	return base >= r0 && len <= FOREIGN_RO * PAGE && base + len <= r0 + FOREIGN_RO * PAGE;
}

/* Each harness thread has its own banks of slots. */
static void setup_slots(void)
{
	size_t slen = (size_t)NBANKS * NSLOTS * (SLOT_DATA + PAGE);
	int i, b;
	slots = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	for (b = 0; b < NBANKS; b++)
		for (i = 0; i < NSLOTS; i++)
			mprotect(slot_base(b, i) + SLOT_DATA, PAGE, PROT_NONE);
}

static void check_canary(void)
{
	unsigned i;
	for (i = 0; i < CANARY; i++)
		if (arena[ARENA + i] != 0xc3) {
			me->canary++;
			note("CANARY: the library wrote at arena+%u, outside every registered region", ARENA + i);
			memset(arena + ARENA, 0xc3, CANARY);
			return;
		}
}

/* ------------------------------------------------------------------------------------------ */
/* The object pools                                                                           */

enum kind { K_IA, K_EVD, K_CNO, K_PZ, K_LMR, K_RMR, K_EP, K_SRQ, K_PSP, K_RSP, K_CR, K_CSP, NKIND };
static const char *kname[NKIND] = { "IA", "EVD", "CNO", "PZ", "LMR", "RMR", "EP", "SRQ", "PSP", "RSP", "CR", "CSP" };
static const DAT_HANDLE_TYPE ktype[NKIND] = {
	DAT_HANDLE_TYPE_IA,  DAT_HANDLE_TYPE_EVD, DAT_HANDLE_TYPE_CNO, DAT_HANDLE_TYPE_PZ,
	DAT_HANDLE_TYPE_LMR, DAT_HANDLE_TYPE_RMR, DAT_HANDLE_TYPE_EP,  DAT_HANDLE_TYPE_SRQ,
	DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_RSP, DAT_HANDLE_TYPE_CR,  DAT_HANDLE_TYPE_CSP,
};

#define SLOTS 16
#define FREED 32

struct obj {
	DAT_HANDLE h;
	int live;
	int sure;             /* we made it ourselves: its death is known to us */
	int core;             /* part of the pool that keeps connections and DTOs going */
	DAT_IA_HANDLE ia;     /* the IA it was made on */
	/* EVD */
	DAT_EVD_FLAGS flags;
	/* CNO */
	int fd;
	/* LMR */
	DAT_VADDR base;       /* address of the region in harness memory */
	DAT_VLEN len;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	int zb;
	int ro;               /* over the read-only pages (its privileges write nothing) */
	DAT_PZ_HANDLE pz;     /* LMR, EP, RMR, SRQ */
	/* EP: 0 unconnected, 1 pending, 2 connected, 3 disconnected */
	int conn;
	DAT_SRQ_HANDLE srq;
	/* PSP / RSP */
	DAT_CONN_QUAL qual;
};

struct pool {
	struct obj o[SLOTS];
	DAT_HANDLE freed[FREED];
	int nfreed;
};
static struct pool pools[NKIND];

static int nlive(int k)
{
	int i, n = 0;
	for (i = 0; i < SLOTS; i++)
		n += pools[k].o[i].live;
	return n;
}

static struct obj *pick_live(int k)
{
	int i, start = (int)rnd(SLOTS);
	for (i = 0; i < SLOTS; i++) {
		struct obj *o = &pools[k].o[(start + i) % SLOTS];
		if (o->live)
			return o;
	}
	return NULL;
}

/* A live object of kind k satisfying pred, or any live one, or NULL. */
static struct obj *pick_live_if(int k, int (*pred)(struct obj *))
{
	int i, start = (int)rnd(SLOTS);
	for (i = 0; i < SLOTS; i++) {
		struct obj *o = &pools[k].o[(start + i) % SLOTS];
		if (o->live && pred(o))
			return o;
	}
	return NULL;
}

static struct obj *find_obj(int k, DAT_HANDLE h)
{
	int i;
	if (!h)
		return NULL;
	for (i = 0; i < SLOTS; i++)
		if (pools[k].o[i].live && pools[k].o[i].h == h)
			return &pools[k].o[i];
	return NULL;
}

static void publish_lmr(struct obj *o, int on);

static void forget(int k, struct obj *o, int freed)
{
	if (!o || !o->live)
		return;
	if (k == K_LMR)
		publish_lmr(o, 0);
	if (k == K_PSP) {
		int i;
		for (i = 0; i < NPUBQ; i++)
			if (me->psp_qual[i] == o->qual)
				me->psp_qual[i] = 0;
	}
	o->live = 0;
	if (freed && o->sure) {
		struct pool *p = &pools[k];
		p->freed[p->nfreed++ % FREED] = o->h;
	}
}

/* Calls that destroy or disturb an object spare the core but now and then. */
static __thread int making_core; /* what is being made is part of the core */
static __thread int sparing;

static struct obj *add_obj(int k, DAT_HANDLE h, DAT_IA_HANDLE ia, int sure)
{
	struct pool *p = &pools[k];
	struct obj *o;
	int i;
	if (!h)
		return NULL;
	if ((o = find_obj(k, h)))
		return o;
	for (i = 0; i < SLOTS; i++)
		if (!p->o[i].live)
			break;
	if (i == SLOTS) {
		/* lose track of one, not of the core if we can (it lives on until its IA closes) */
		int j;
		i = (int)rnd(SLOTS);
		for (j = 0; j < SLOTS && p->o[i].core; j++)
			i = (i + 1) % SLOTS;
		forget(k, &p->o[i], 0);
	}
	o = &p->o[i];
	memset(o, 0, sizeof(*o));
	o->h = h;
	o->live = 1;
	o->sure = sure;
	o->core = making_core;
	o->ia = ia;
	o->fd = -1;
	return o;
}

/* Everything made on an IA dies with it. */
static void forget_ia(DAT_IA_HANDLE ia)
{
	int k, i;
	for (k = 0; k < NKIND; k++)
		for (i = 0; i < SLOTS; i++)
			if (pools[k].o[i].live && (k == K_IA ? pools[k].o[i].h == ia : pools[k].o[i].ia == ia))
				forget(k, &pools[k].o[i], 1);
}

/* Publishing our LMRs and PSP qualifiers for the peer (racy by design: a stale value only
 * makes the peer's access fail). */
static void publish_lmr(struct obj *o, int on)
{
	int i = (int)(o - pools[K_LMR].o) % NPUBL;
	struct publmr *p = &me->lmr[i];
	if (on) {
		__atomic_store_n(&p->valid, 0, __ATOMIC_RELEASE);
		p->addr = o->zb ? 0 : o->base;
		p->len = o->len;
		p->rmr_ctx = o->rctx;
		p->core = (uint32_t)o->core;
		__atomic_store_n(&p->valid, 1, __ATOMIC_RELEASE);
	} else if (p->rmr_ctx == o->rctx) {
		__atomic_store_n(&p->valid, 0, __ATOMIC_RELEASE);
	}
}

static void publish_qual(DAT_CONN_QUAL q)
{
	int i;
	for (i = 0; i < NPUBQ; i++)
		if (!me->psp_qual[i]) {
			me->psp_qual[i] = q;
			return;
		}
	me->psp_qual[rnd(NPUBQ)] = q;
}

/* ------------------------------------------------------------------------------------------ */
/* Argument generators                                                                        */

static DAT_HANDLE ph_primary(int k);

/* The primary handle of a call that destroys or disturbs its object. */
static DAT_HANDLE ph_destroy(int k)
{
	DAT_HANDLE h;
	sparing = 1;
	h = ph_primary(k);
	sparing = 0;
	return h;
}

static DAT_HANDLE garbage_handle(char *tag)
{
	struct obj *o;
	*tag = 'G';
	switch (rnd(9)) {
	case 0:
		return (DAT_HANDLE)(uintptr_t)(1 + rnd(16));
	case 1:
		return (DAT_HANDLE)(uintptr_t)0xdeadbeefull;
	case 2:
		return (DAT_HANDLE)(uintptr_t)~0ull;
	case 3:
		return (DAT_HANDLE)(arena + rnd(ARENA));
	case 4:
		return (DAT_HANDLE)&pools[rnd(NKIND)];
	case 5:
		return (DAT_HANDLE)(uintptr_t)r64();
	case 6:
		return (DAT_HANDLE)(uintptr_t)(0x100000000ull * rnd(4) + rnd(1u << 16));
	default:
		o = pick_live((int)rnd(NKIND));
		if (!o)
			return (DAT_HANDLE)(uintptr_t)0x2;
		*tag = 'B';
		return (DAT_HANDLE)((uintptr_t)o->h ^ (1ull << rnd(64)));
	}
}

static int not_core(struct obj *o)
{
	return !o->core;
}

/* A handle for a parameter of kind k: live when the argument is to be good, else freed,
 * of another kind, NULL or garbage. */
static DAT_HANDLE pick_handle_t(int k, char *tag)
{
	struct obj *o;
	if (!bad()) {
		o = sparing && !chance(3) ? pick_live_if(k, not_core) : pick_live(k);
		*tag = o ? 'L' : 'N';
		return o ? o->h : NULL;
	}
	switch (rnd(6)) {
	case 0:
		if (pools[k].nfreed) {
			int n = pools[k].nfreed < FREED ? pools[k].nfreed : FREED;
			*tag = 'F';
			return pools[k].freed[rnd((uint32_t)n)];
		}
		break;
	case 1:
	case 2: {
		int j, k2 = (int)rnd(NKIND);
		for (j = 0; j < NKIND; j++, k2 = (k2 + 1) % NKIND)
			if (k2 != k && (o = pick_live(k2))) {
				*tag = 'W';
				return o->h;
			}
		break;
	}
	case 3:
		*tag = 'N';
		return NULL;
	case 4:
		return garbage_handle(tag);
	default:
		break;
	}
	o = pick_live(k);
	*tag = o ? 'L' : 'N';
	return o ? o->h : NULL;
}

static DAT_HANDLE ph(int k)
{
	char tag;
	DAT_HANDLE h = pick_handle_t(k, &tag);
	arg_tag((uint64_t)(uintptr_t)h, tag);
	return h;
}

/* Like ph, but for the call's primary handle: a freed one we freed ourselves, another kind,
 * NULL or garbage other than a bit flip must fail. */
static DAT_HANDLE ph_primary(int k)
{
	char tag;
	DAT_HANDLE h = pick_handle_t(k, &tag);
	arg_tag((uint64_t)(uintptr_t)h, tag);
	if (tag == 'F' || tag == 'W' || tag == 'G' || (tag == 'N' && !h))
		expect_fail = 1;
	return h;
}

static DAT_COUNT rcount(int lo, int hi)
{
	if (bad()) {
		static const DAT_COUNT v[] = { -1, -2, INT_MIN, INT_MAX, 0, 1 << 20, 1 << 30, 65536 };
		return v[rnd(8)];
	}
	return lo + (DAT_COUNT)rnd((uint32_t)(hi - lo + 1));
}

static uint64_t rmask(uint64_t all)
{
	switch (rnd(6)) {
	case 0:
		return all;
	case 1:
		return 0;
	case 2:
		return r64();
	case 3:
		return ~0ull;
	default:
		return r64() & all;
	}
}

static uint32_t rflags(uint32_t valid_bits)
{
	if (bad())
		return chance(50) ? (uint32_t)r64() : valid_bits | (1u << rnd(32));
	return (uint32_t)r64() & valid_bits;
}

static DAT_TIMEOUT rtimeout_short(void)
{
	/* microseconds; never long */
	switch (rnd(4)) {
	case 0:
		return 0;
	case 1:
		return 1 + rnd(100);
	default:
		return rnd(3000);
	}
}

static DAT_CONTEXT rcontext(void)
{
	DAT_CONTEXT c;
	c.as_64 = chance(50) ? r64() : rnd(1000);
	return c;
}

/* Private data: a pointer to max_pd harness bytes ending at a guard page, and a size. */
static DAT_COUNT max_pd = 56;

static DAT_PVOID rpd(DAT_COUNT *size)
{
	unsigned char *p = slot_ptr(S_PD, (size_t)max_pd);
	int i;
	for (i = 0; i < max_pd; i++)
		p[i] = (unsigned char)r64();
	if (bad()) {
		static const DAT_COUNT v[] = { -1, INT_MIN, INT_MAX, 57, 64, 4096, 1 << 20 };
		*size = chance(60) ? v[rnd(7)] : max_pd + 1 + (DAT_COUNT)rnd(8);
		if (chance(30))
			p = NULL;
	} else {
		*size = (DAT_COUNT)rnd((uint32_t)max_pd + 1);
		if (!*size && chance(50))
			p = NULL;
	}
	AV(*size);
	return AP(p);
}

/* IA addresses. */
static struct sockaddr_in lo_addr; /* 127.0.0.1, port 0 */
static uint16_t dead_port;         /* bound, never listening: connections to it are refused */

static DAT_IA_ADDRESS_PTR raddr(void)
{
	struct sockaddr_storage *ss = slot_ptr(S_ADDR, sizeof(struct sockaddr_storage));
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof(*ss));
	if (!bad()) {
		*sin = lo_addr;
		return AP(ss);
	}
	switch (rnd(6)) {
	case 0:
		return AP(NULL);
	case 1:
		sin->sin_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
		break;
	case 2:
		sin->sin_family = (sa_family_t)rnd(64);
		break;
	case 3:
		memset(ss, (int)rnd(256), sizeof(*ss));
		break;
	case 4:
		*sin = lo_addr;
		sin->sin_addr.s_addr = htonl(0x7f000000u | rnd(1u << 24)); /* another loopback */
		break;
	default:
		*sin = lo_addr;
		sin->sin_port = htons(dead_port);
		break;
	}
	return AP(ss);
}

/* A connection qualifier to connect to or listen on: the peer's listeners, our own, a port
 * nobody listens on, another qualifier folding onto a listener's port, or 0. Never a random
 * port: other programs on this machine may be listening. */
static DAT_CONN_QUAL rqual(int for_listen)
{
	DAT_CONN_QUAL q = 0;
	int i, j;
	struct wshared *w = (for_listen ? chance(30) : chance(80)) ? peer : me;
	for (i = 0, j = (int)rnd(NPUBQ); i < NPUBQ && !q; i++)
		q = w->psp_qual[(j + i) % NPUBQ];
	if (!bad())
		return AV(for_listen && chance(60) ? 0 : (q ? q : dead_port));
	switch (rnd(5)) {
	case 0:
		return AV(0);
	case 1:
		return AV(dead_port);
	case 2: /* folds onto q's port, so q's listener refuses it */
		if (q >= 33534 && q <= 65534)
			return AV((q - 33534) + 32001ull * (3 + rnd(1000)));
		return AV(q);
	case 3: /* folds onto the dead port when it can */
		if (dead_port >= 33534)
			return AV((dead_port - 33534) + 32001ull * (3 + rnd(1000)));
		return AV(dead_port);
	default:
		return AV(q | (1ull << 63));
	}
}

/* Local IOVs: up to 1024 triplets ending at a guard page. Good segments lie in a live LMR
 * (in the EP's PZ when given, read-only ones too); bad ones cross its end, name another
 * region's context, point at garbage, into the canary, the read-only pages or the hole. */
#define IOV_CAP 1024
/* The shape of good segments: any length up to 8 KiB, small (sends: at most 256 bytes, so a
 * good receive holds them), or large (receives: at least 4 KiB when the region has room). */
enum { SHAPE_ANY, SHAPE_SMALL, SHAPE_LARGE };
static __thread int iov_shape;

static DAT_LMR_TRIPLET *riov(DAT_COUNT *nseg, DAT_PZ_HANDLE pz, int max_good)
{
	DAT_COUNT n;
	DAT_LMR_TRIPLET *t;
	int i, fill;
	if (bad()) {
		static const DAT_COUNT v[] = { -1, INT_MIN, 0, 65, 1024, 1025, INT_MAX, 1 << 20 };
		n = v[rnd(8)];
	} else {
		n = (DAT_COUNT)rnd((uint32_t)max_good + 1);
		if (n == 0 && chance(50))
			n = 1;
	}
	fill = n < 0 ? 4 : (n > IOV_CAP ? IOV_CAP : n);
	t = slot_ptr(S_IOV, (size_t)fill * sizeof(*t));
	for (i = 0; i < fill; i++) {
		struct obj *o = NULL;
		int j, start = (int)rnd(SLOTS);
		for (j = 0; j < SLOTS && pz; j++) {
			struct obj *c = &pools[K_LMR].o[(start + j) % SLOTS];
			if (c->live && c->pz == pz) {
				o = c;
				break;
			}
		}
		if (!o)
			o = pick_live(K_LMR);
		if (o && !bad()) {
			DAT_VLEN off, room, len;
			if (iov_shape == SHAPE_LARGE && o->len > 8192)
				off = rnd((uint32_t)(o->len - 8192) + 1);
			else
				off = rnd((uint32_t)o->len + 1);
			room = o->len - off;
			if (iov_shape == SHAPE_SMALL)
				len = rnd((uint32_t)(room < 256 ? room : 256) + 1);
			else if (iov_shape == SHAPE_LARGE)
				len = room < 4096 ? room : 4096 + rnd((uint32_t)(room < 8192 ? room : 8192) - 4096 + 1);
			else
				len = chance(20) ? room : rnd((uint32_t)(room < 8192 ? room : 8192) + 1);
			t[i].virtual_address = (o->zb ? 0 : o->base) + off;
			t[i].segment_length = (DAT_SEG_LENGTH)len;
			t[i].lmr_context = o->lctx;
			continue;
		}
		switch (rnd(8)) {
		case 7: /* the read-only pages or the hole, under a live context */
			t[i].virtual_address = (DAT_VADDR)(uintptr_t)(chance(50) ? ro_mem + rnd(FOREIGN_RO * PAGE)
									      : hole + rnd(FOREIGN_HOLE * PAGE));
			t[i].segment_length = 1 + rnd(256);
			t[i].lmr_context = o ? o->lctx : (DAT_LMR_CONTEXT)r64();
			break;
		case 0: /* crosses the end */
			if (o) {
				t[i].virtual_address = (o->zb ? 0 : o->base) + o->len - rnd(64);
				t[i].segment_length = 1 + rnd(4096) + 64;
				t[i].lmr_context = o->lctx;
				break;
			}
			/* fall through */
		case 1: /* into the canary */
			t[i].virtual_address = (DAT_VADDR)(uintptr_t)(arena + ARENA + rnd(CANARY / 2));
			t[i].segment_length = 1 + rnd(CANARY / 2);
			t[i].lmr_context = o ? o->lctx : (DAT_LMR_CONTEXT)r64();
			break;
		case 2: /* garbage address */
			t[i].virtual_address = chance(50) ? 0xdeadbeef000ull : ~0ull - rnd(4096);
			t[i].segment_length = 1 + rnd(4096);
			t[i].lmr_context = o ? o->lctx : 0;
			break;
		case 3: /* huge length */
			t[i].virtual_address = o ? o->base : 0;
			t[i].segment_length = UINT32_MAX - rnd(16);
			t[i].lmr_context = o ? o->lctx : 0;
			break;
		case 4: /* a random context */
			t[i].virtual_address = o ? o->base : (DAT_VADDR)(uintptr_t)arena;
			t[i].segment_length = rnd(256);
			t[i].lmr_context = (DAT_LMR_CONTEXT)r64();
			break;
		case 5: /* zero length */
			t[i].virtual_address = o ? o->base : 0;
			t[i].segment_length = 0;
			t[i].lmr_context = o ? o->lctx : 0;
			break;
		default: /* an address in the arena outside this LMR */
			t[i].virtual_address = (DAT_VADDR)(uintptr_t)(arena + rnd(ARENA));
			t[i].segment_length = 1 + rnd(8192);
			t[i].lmr_context = o ? o->lctx : 0;
			break;
		}
	}
	if (n == 0 && chance(30))
		t = NULL;
	else if (bad() && chance(10))
		t = NULL;
	*nseg = n;
	AV(n);
	return (DAT_LMR_TRIPLET *)AP(t);
}

static uint64_t iov_total(const DAT_LMR_TRIPLET *t, DAT_COUNT n)
{
	uint64_t sum = 0;
	DAT_COUNT i;
	if (!t || n <= 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		sum += t[i].segment_length;
	return sum;
}

/* A remote triplet: in one of the peer's published LMRs (or ours: the EP may be connected to
 * ourselves), or bad. */
static DAT_RMR_TRIPLET *rriov(int slot, uint64_t want)
{
	DAT_RMR_TRIPLET *t = slot_ptr(slot, sizeof(*t));
	struct wshared *w = chance(85) ? peer : me;
	struct publmr *p = &w->lmr[rnd(NPUBL)];
	uint64_t addr, len;
	if (chance(90)) {
		/* mostly the peer's stable regions */
		int i, j = (int)rnd(NPUBL);
		for (i = 0; i < NPUBL; i++) {
			struct publmr *c = &w->lmr[(i + j) % NPUBL];
			if (__atomic_load_n(&c->valid, __ATOMIC_ACQUIRE) && c->core) {
				p = c;
				break;
			}
		}
	}
	addr = p->addr;
	len = p->len;
	uint32_t ctx = p->rmr_ctx;
	if (!__atomic_load_n(&p->valid, __ATOMIC_ACQUIRE))
		len = 0;
	if (!bad() && len && want && want <= len && chance(80)) {
		/* exactly what the local IOV holds */
		t->virtual_address = addr + rnd((uint32_t)(len - want) + 1);
		t->segment_length = (DAT_SEG_LENGTH)want;
		t->rmr_context = ctx;
	} else if (!bad() && len) {
		uint64_t off = rnd((uint32_t)len + 1), room = len - off;
		t->virtual_address = addr + off;
		t->segment_length = (DAT_SEG_LENGTH)(chance(10) ? room : rnd((uint32_t)(room < 8192 ? room : 8192) + 1));
		t->rmr_context = ctx;
	} else {
		switch (rnd(7)) {
		case 5: /* the worker's read-only pages or its hole, under a live context */
			t->virtual_address = chance(50) ? w->ro_base + rnd(FOREIGN_RO * PAGE) : w->hole_base + rnd(FOREIGN_HOLE * PAGE);
			t->segment_length = 1 + rnd(64);
			t->rmr_context = ctx;
			break;
		case 0:
			t->virtual_address = addr + len - rnd(64);
			t->segment_length = 64 + rnd(4096);
			t->rmr_context = ctx;
			break;
		case 1:
			t->virtual_address = (DAT_VADDR)(uintptr_t)(arena + ARENA + rnd(CANARY / 2)); /* peer's canary */
			t->segment_length = 1 + rnd(CANARY / 2);
			t->rmr_context = ctx;
			break;
		case 2:
			t->virtual_address = addr;
			t->segment_length = UINT32_MAX - rnd(4);
			t->rmr_context = ctx;
			break;
		case 3:
			t->virtual_address = r64();
			t->segment_length = rnd(1 << 16);
			t->rmr_context = (DAT_RMR_CONTEXT)r64();
			break;
		default:
			t->virtual_address = addr;
			t->segment_length = (DAT_SEG_LENGTH)rnd(64);
			t->rmr_context = (DAT_RMR_CONTEXT)r64();
			break;
		}
	}
	if (bad() && chance(20))
		t = NULL;
	return (DAT_RMR_TRIPLET *)AP(t);
}

/* A name string ending right before a guard page. */
static char *rname(int slot, int for_ia)
{
	static const char *names[] = { "tcp-lo", "", "no-such-ia", "tcp-lo ", "TCP-LO", "ofa-v2-ib0", "tcp-",
				       "fuzz-0", "fuzz-1", "fuzz-2" };
	char buf[600];
	size_t len;
	char *p;
	if (!bad())
		snprintf(buf, sizeof(buf), "%s", for_ia ? ia_name : names[7 + rnd(3)]);
	else if (chance(20)) {
		return AP(NULL);
	} else if (chance(20)) {
		len = 200 + rnd(400);
		memset(buf, 'a' + (int)rnd(26), len);
		buf[len] = 0;
	} else if (chance(20)) {
		len = 1 + rnd(40);
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(1 + rnd(255));
		buf[len] = 0;
	} else {
		snprintf(buf, sizeof(buf), "%s", names[rnd(10)]);
	}
	len = strlen(buf) + 1;
	p = slot_ptr(slot, len);
	memcpy(p + ((len + 7) & ~(size_t)7) - len, buf, len); /* NUL is the byte before the guard */
	return AP(p + ((len + 7) & ~(size_t)7) - len);
}

/* EP attributes: NULL (defaults), sensible ones, or random. */
static DAT_NAMED_ATTR *rnamed(DAT_COUNT *count)
{
	DAT_NAMED_ATTR *na = slot_ptr(S_NAME2, 4 * sizeof(*na));
	static const char *keys[] = { "foo", "bar", "", "LIBDAT_SPIN_US" };
	int i;
	for (i = 0; i < 4; i++) {
		na[i].name = keys[i];
		na[i].value = keys[3 - i];
	}
	switch (rnd(5)) {
	case 0:
		*count = 0;
		return NULL;
	case 1:
		*count = -1 - (DAT_COUNT)rnd(2);
		return chance(50) ? NULL : na + 4 - 0; /* negative: must not be read */
	default:
		*count = (DAT_COUNT)rnd(5);
		return na + 4 - *count;
	}
}

static void good_ep_attr(DAT_EP_ATTR *a)
{
	memset(a, 0, sizeof(*a));
	a->service_type = DAT_SERVICE_TYPE_RC;
	a->max_message_size = 1u << 20;
	a->max_rdma_size = 1u << 20;
	a->max_recv_dtos = 32;
	a->max_request_dtos = 32;
	a->max_recv_iov = 4;
	a->max_request_iov = 4;
	a->max_rdma_read_in = 4;
	a->max_rdma_read_out = 4;
	a->max_rdma_read_iov = 4;
	a->max_rdma_write_iov = 4;
}

static DAT_EP_ATTR *rep_attr(int slot, int need)
{
	DAT_EP_ATTR *a;
	if (!bad() && chance(60)) {
		if (!need)
			return AP(NULL);
		a = slot_ptr(slot, sizeof(*a));
		good_ep_attr(a);
		return AP(a);
	}
	a = slot_ptr(slot, sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->service_type = bad() ? (DAT_SERVICE_TYPE)rnd(4) : DAT_SERVICE_TYPE_RC;
	a->max_message_size = bad() ? (DAT_SEG_LENGTH)r64() : 1u << (10 + rnd(20));
	a->max_rdma_size = bad() ? (DAT_SEG_LENGTH)r64() : 1u << (10 + rnd(20));
	a->qos = (DAT_QOS)rflags(15);
	a->recv_completion_flags = (DAT_COMPLETION_FLAGS)rflags(0x3f);
	a->request_completion_flags = (DAT_COMPLETION_FLAGS)rflags(0x3f);
	a->max_recv_dtos = rcount(1, 64);
	a->max_request_dtos = rcount(1, 64);
	a->max_recv_iov = rcount(1, 64);
	a->max_request_iov = rcount(1, 64);
	a->max_rdma_read_in = rcount(0, 8);
	a->max_rdma_read_out = rcount(0, 8);
	a->srq_soft_hw = rcount(0, 8);
	a->max_rdma_read_iov = rcount(1, 8);
	a->max_rdma_write_iov = rcount(1, 8);
	if (chance(20)) {
		a->ep_transport_specific = rnamed(&a->ep_transport_specific_count);
	}
	if (chance(20)) {
		a->ep_provider_specific = rnamed(&a->ep_provider_specific_count);
	}
	return AP(a);
}

/* The agent a CNO may call: counts, never dereferences its instance data. */
static void agent_fn(DAT_PVOID instance, DAT_EVD_HANDLE evd)
{
	(void)instance;
	(void)evd;
	__atomic_add_fetch(&me->agent, 1, __ATOMIC_RELAXED);
}

static DAT_OS_WAIT_PROXY_AGENT ragent(void)
{
	DAT_OS_WAIT_PROXY_AGENT a;
	a.instance_data = (DAT_PVOID)(uintptr_t)(chance(50) ? r64() : 0);
	a.proxy_agent_func = chance(50) ? agent_fn : NULL;
	AV(a.instance_data);
	AV(a.proxy_agent_func ? 1 : 0);
	return a;
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static const struct {
	int number;
	const char *name;
} event_names[] = {
	{ DAT_DTO_COMPLETION_EVENT, "dto" },
	{ DAT_RMR_BIND_COMPLETION_EVENT, "rmr_bind" },
	{ DAT_CONNECTION_REQUEST_EVENT, "conn_request" },
	{ DAT_CONNECTION_EVENT_ESTABLISHED, "established" },
	{ DAT_CONNECTION_EVENT_PEER_REJECTED, "peer_rejected" },
	{ DAT_CONNECTION_EVENT_NON_PEER_REJECTED, "non_peer_rejected" },
	{ DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, "accept_completion_error" },
	{ DAT_CONNECTION_EVENT_DISCONNECTED, "disconnected" },
	{ DAT_CONNECTION_EVENT_BROKEN, "broken" },
	{ DAT_CONNECTION_EVENT_TIMED_OUT, "timed_out" },
	{ DAT_CONNECTION_EVENT_UNREACHABLE, "unreachable" },
	{ DAT_ASYNC_ERROR_EVD_OVERFLOW, "evd_overflow" },
	{ DAT_ASYNC_ERROR_IA_CATASTROPHIC, "ia_catastrophic" },
	{ DAT_ASYNC_ERROR_EP_BROKEN, "ep_broken" },
	{ DAT_ASYNC_ERROR_TIMED_OUT, "async_timed_out" },
	{ DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, "provider_internal_error" },
	{ DAT_HA_DOWN_TO_1, "ha_down_to_1" },
	{ DAT_HA_UP_TO_MULTI_PATH, "ha_up_to_multi_path" },
	{ DAT_SOFTWARE_EVENT, "software" },
	{ DAT_IB_DTO_EVENT, "ib_dto" },
	{ DAT_IB_UD_CONNECTION_REQUEST_EVENT, "ib_ud_connection_request" },
	{ DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, "ib_ud_established" },
	{ DAT_IB_UD_CONNECTION_REJECT_EVENT, "ib_ud_rejected" },
	{ DAT_IB_UD_CONNECTION_ERROR_EVENT, "ib_ud_error" },
};
#define NEVENTS (sizeof(event_names) / sizeof(event_names[0]))

/* One of the events the specification and its IB extension define (a UD EP's among them: an
 * EP made with a random service type may be one), counted. */
static int known_event(DAT_EVENT_NUMBER n)
{
	unsigned i;
	for (i = 0; i < NEVENTS; i++)
		if (event_names[i].number == (int)n) {
			me->events[i]++;
			return 1;
		}
	return 0;
}

static void bad_event(const DAT_EVENT *e, DAT_EVD_HANDLE evd, const char *why)
{
	me->bad_events++;
	if (me->bad_events <= 5) {
		note("BAD EVENT on EVD %p: %s (event_number 0x%x, evd_handle %p)", evd, why,
		     (unsigned)e->event_number, e->evd_handle);
		dump_ring(me, wid, 6);
	}
}

static void accept_or_reject(DAT_CR_HANDLE cr, DAT_IA_HANDLE ia);
static int setup_phase = 1;

static int ep_idle(struct obj *o)
{
	return o->conn == 0;
}

static int ep_idle_core(struct obj *o)
{
	return o->core && o->conn == 0;
}

/* Checks an event dequeued from evd and acts on it. */
static void on_event(const DAT_EVENT *e, DAT_EVD_HANDLE evd)
{
	struct obj *eo = find_obj(K_EVD, evd), *ep;
	DAT_IA_HANDLE ia = eo ? eo->ia : NULL;
	if (!known_event(e->event_number)) {
		bad_event(e, evd, "unknown event number");
		return;
	}
	if (e->evd_handle != evd) {
		bad_event(e, evd, "evd_handle is not the EVD it came from");
		return;
	}
	switch ((int)e->event_number) {
	case DAT_DTO_COMPLETION_EVENT: {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &e->event_data.dto_completion_event_data;
		if ((unsigned)d->status > DAT_DTO_ERR_LOCAL_MM_ERROR || (unsigned)d->operation > DAT_DTO_EXTENSION_BASE) {
			bad_event(e, evd, "DTO completion with an unknown status or operation");
			return;
		}
		me->dto[d->operation][d->status]++;
		break;
	}
	case DAT_IB_DTO_EVENT: { /* an atomic's completion (do_atomic) */
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &e->event_data.dto_completion_event_data;
		if ((unsigned)d->status > DAT_DTO_ERR_LOCAL_MM_ERROR) {
			bad_event(e, evd, "extended DTO completion with an unknown status");
			return;
		}
		me->dto[DTO_OPS - 1][d->status]++;
		break;
	}
	case DAT_RMR_BIND_COMPLETION_EVENT:
		break;
	case DAT_CONNECTION_REQUEST_EVENT:
		if (!e->event_data.cr_arrival_event_data.cr_handle) {
			bad_event(e, evd, "connection request without a CR handle");
			return;
		}
		add_obj(K_CR, e->event_data.cr_arrival_event_data.cr_handle, ia, 0);
		accept_or_reject(e->event_data.cr_arrival_event_data.cr_handle, ia);
		break;
	case DAT_CONNECTION_EVENT_ESTABLISHED:
		me->connects_established++;
		if ((ep = find_obj(K_EP, e->event_data.connect_event_data.ep_handle)))
			ep->conn = 2;
		break;
	case DAT_CONNECTION_EVENT_PEER_REJECTED:
	case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
	case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
	case DAT_CONNECTION_EVENT_DISCONNECTED:
	case DAT_CONNECTION_EVENT_BROKEN:
	case DAT_CONNECTION_EVENT_TIMED_OUT:
	case DAT_CONNECTION_EVENT_UNREACHABLE:
		if ((ep = find_obj(K_EP, e->event_data.connect_event_data.ep_handle)))
			ep->conn = 3;
		break;
	case DAT_SOFTWARE_EVENT:
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------------------------ */
/* The calls. Each do_X makes one call of dat_X with arguments drawn as described above.      */

static DAT_RETURN do_dequeue(DAT_EVD_HANDLE evd, int checked)
{
	DAT_EVENT *e;
	DAT_RETURN r;
	rec_begin(F_evd_dequeue);
	if (!checked)
		evd = ph_primary(K_EVD);
	else
		AV(evd);
	e = checked ? slot_ptr(S_OUT0, sizeof(*e)) : OUTP(0, DAT_EVENT);
	if (checked)
		AP(e);
	r = CALL(F_evd_dequeue, dat_evd_dequeue(evd, e));
	if (r == DAT_SUCCESS && e) {
		DAT_EVENT copy = *e;
		on_event(&copy, evd);
	}
	return r;
}

static void drain(struct obj *o, int max)
{
	int i;
	for (i = 0; i < max && o->live; i++)
		if (do_dequeue(o->h, 1) != DAT_SUCCESS)
			break;
}

static void drain_all(int max)
{
	int i;
	for (i = 0; i < SLOTS; i++)
		if (pools[K_EVD].o[i].live)
			drain(&pools[K_EVD].o[i], max);
}

static DAT_RETURN do_cr_accept_with(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep)
{
	DAT_COUNT size;
	DAT_PVOID pd;
	DAT_RETURN r;
	rec_begin(F_cr_accept);
	AV(cr);
	AV(ep);
	pd = rpd(&size);
	r = CALL(F_cr_accept, dat_cr_accept(cr, ep, size, pd));
	if (r == DAT_SUCCESS) {
		struct obj *o = find_obj(K_EP, ep);
		forget(K_CR, find_obj(K_CR, cr), 1);
		if (o)
			o->conn = 1;
	}
	return r;
}

static void accept_or_reject(DAT_CR_HANDLE cr, DAT_IA_HANDLE ia)
{
	struct obj *ep;
	DAT_RETURN r;
	(void)ia;
	if (!setup_phase && chance(10)) {
		DAT_COUNT size;
		DAT_PVOID pd;
		rec_begin(F_cr_reject);
		AV(cr);
		pd = rpd(&size);
		r = CALL(F_cr_reject, dat_cr_reject(cr, size, pd));
		if (r == DAT_SUCCESS)
			forget(K_CR, find_obj(K_CR, cr), 1);
		return;
	}
	if (!setup_phase && chance(25))
		return; /* left for the random calls */
	ep = pick_live_if(K_EP, ep_idle_core);
	if (!ep)
		ep = pick_live_if(K_EP, ep_idle);
	if (!ep) {
		/* the PSP may have made an EP (provider flag): ask the CR */
		DAT_CR_PARAM *p = slot_ptr(S_OUT0 + 1, sizeof(*p));
		rec_begin(F_cr_query);
		AV(cr);
		AV(DAT_CR_FIELD_ALL);
		r = CALL(F_cr_query, dat_cr_query(cr, DAT_CR_FIELD_ALL, p));
		if (r == DAT_SUCCESS && p->local_ep_handle)
			ep = add_obj(K_EP, p->local_ep_handle, ia, 0);
	}
	do_cr_accept_with(cr, ep ? ep->h : NULL);
}

/* ---- IA ---- */

static DAT_IA_ATTR ia_attr;

static DAT_RETURN open_ia(const char *name, DAT_COUNT qlen, int track)
{
	DAT_EVD_HANDLE *aevd = slot_ptr(S_OUT0, sizeof(*aevd));
	DAT_IA_HANDLE *ia = slot_ptr(S_OUT0 + 1, sizeof(*ia));
	DAT_RETURN r;
	*aevd = DAT_HANDLE_NULL;
	rec_begin(F_ia_openv);
	AP(name);
	AV(qlen);
	r = CALL(F_ia_openv, dat_ia_open((char *)name, qlen, aevd, ia));
	if (r == DAT_SUCCESS && track) {
		struct obj *o = add_obj(K_IA, *ia, *ia, 1);
		struct obj *e = add_obj(K_EVD, *aevd, *ia, 1);
		if (e)
			e->flags = DAT_EVD_ASYNC_FLAG;
		(void)o;
	}
	return r;
}

static void do_ia_openv(void)
{
	DAT_EVD_HANDLE *aevd;
	DAT_IA_HANDLE *ia;
	char *name;
	DAT_COUNT qlen;
	DAT_UINT32 major, minor;
	DAT_BOOLEAN ts;
	DAT_RETURN r;
	int full = nlive(K_IA) >= 4;
	name = rname(S_NAME, 1);
	if (full && name && !strcmp(name, ia_name)) {
		cur->a[cur->nargs - 1] = 0;
		name = NULL; /* at most 4 IAs: this one must fail */
	}
	qlen = rcount(1, 32);
	aevd = slot_ptr(S_OUT0, sizeof(*aevd));
	switch (bad() ? rnd(4) : 0) {
	case 0:
		*aevd = DAT_HANDLE_NULL;
		break;
	case 1:
		*aevd = DAT_EVD_ASYNC_EXISTS;
		break;
	case 2:
		*aevd = ph(K_EVD);
		break;
	default:
		aevd = NULL;
		break;
	}
	AP(aevd);
	ia = OUTP(1, DAT_IA_HANDLE);
	major = bad() ? (DAT_UINT32)r64() : DAT_VERSION_MAJOR;
	minor = bad() ? (DAT_UINT32)r64() : DAT_VERSION_MINOR;
	ts = bad() ? (DAT_BOOLEAN)r64() : (DAT_BOOLEAN)rnd(2);
	AV(major);
	AV(minor);
	AV(ts);
	r = CALL(F_ia_openv, dat_ia_openv(name, qlen, aevd, ia, major, minor, ts));
	if (r == DAT_SUCCESS) {
		if (!ia || !*ia) {
			me->oddities++;
			note("dat_ia_openv succeeded without an IA handle");
			return;
		}
		add_obj(K_IA, *ia, *ia, 1);
		if (aevd && *aevd && !find_obj(K_EVD, *aevd)) {
			struct obj *e = add_obj(K_EVD, *aevd, *ia, 1);
			if (e)
				e->flags = DAT_EVD_ASYNC_FLAG;
		}
		if (full) {
			me->oddities++;
			note("dat_ia_openv succeeded with a name we made invalid");
		}
	}
}

/* Reads what a returned pointer points to: it must be valid memory. */
static __thread volatile unsigned char sink;
static void touch(const void *p, size_t n)
{
	const volatile unsigned char *c = p;
	size_t i;
	for (i = 0; i < n; i++)
		sink ^= c[i];
}

static void touch_named(const DAT_NAMED_ATTR *a, DAT_COUNT n)
{
	DAT_COUNT i;
	if (!a || n <= 0 || n > 256)
		return;
	for (i = 0; i < n; i++) {
		if (a[i].name)
			touch(a[i].name, strlen(a[i].name));
		if (a[i].value)
			touch(a[i].value, strlen(a[i].value));
	}
}

static void do_ia_query(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_EVD_HANDLE *aevd = OUTP(0, DAT_EVD_HANDLE);
	DAT_IA_ATTR_MASK m1 = AV(rmask(DAT_IA_FIELD_ALL));
	DAT_IA_ATTR *a = OUTP(1, DAT_IA_ATTR);
	DAT_PROVIDER_ATTR_MASK m2 = AV(rmask(DAT_PROVIDER_FIELD_ALL));
	DAT_PROVIDER_ATTR *p = OUTP(2, DAT_PROVIDER_ATTR);
	DAT_RETURN r = CALL(F_ia_query, dat_ia_query(ia, aevd, m1, a, m2, p));
	if (r == DAT_SUCCESS) {
		if (a && (m1 & DAT_IA_FIELD_IA_ADDRESS_PTR) && a->ia_address_ptr)
			touch(a->ia_address_ptr, sizeof(struct sockaddr_in));
		if (a && (m1 & DAT_IA_FIELD_IA_TRANSPORT_ATTR) && (m1 & DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR))
			touch_named(a->transport_attr, a->num_transport_attr);
		if (a && (m1 & DAT_IA_FIELD_IA_VENDOR_ATTR) && (m1 & DAT_IA_FIELD_IA_NUM_VENDOR_ATTR))
			touch_named(a->vendor_attr, a->num_vendor_attr);
		if (p && (m2 & DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR) && (m2 & DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR))
			touch_named(p->provider_specific_attr, p->num_provider_specific_attr);
	}
}

static void do_ia_close(void)
{
	DAT_IA_HANDLE ia = ph_destroy(K_IA);
	DAT_CLOSE_FLAGS f = (DAT_CLOSE_FLAGS)AV(bad() ? (uint32_t)r64() : rnd(2));
	DAT_RETURN r = CALL(F_ia_close, dat_ia_close(ia, f));
	if (r == DAT_SUCCESS)
		forget_ia(ia);
}

/* ---- PZ ---- */

static void do_pz_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_PZ_HANDLE *pz = OUTP(0, DAT_PZ_HANDLE);
	DAT_RETURN r = CALL(F_pz_create, dat_pz_create(ia, pz));
	if (r == DAT_SUCCESS && pz)
		add_obj(K_PZ, *pz, ia, 1);
}

static void do_pz_query(void)
{
	DAT_PZ_HANDLE pz = ph_primary(K_PZ);
	DAT_PZ_PARAM_MASK m = (DAT_PZ_PARAM_MASK)AV(rmask(DAT_PZ_FIELD_ALL));
	DAT_PZ_PARAM *p = OUTP(0, DAT_PZ_PARAM);
	CALL(F_pz_query, dat_pz_query(pz, m, p));
}

static void do_pz_free(void)
{
	DAT_PZ_HANDLE pz = ph_destroy(K_PZ);
	if (CALL(F_pz_free, dat_pz_free(pz)) == DAT_SUCCESS)
		forget(K_PZ, find_obj(K_PZ, pz), 1);
}

/* ---- EVD ---- */

static DAT_EVD_FLAGS revd_flags(void)
{
	static const DAT_EVD_FLAGS good[] = {
		DAT_EVD_DTO_FLAG,      DAT_EVD_CONNECTION_FLAG, DAT_EVD_CR_FLAG,
		DAT_EVD_RMR_BIND_FLAG, DAT_EVD_SOFTWARE_FLAG,   DAT_EVD_DEFAULT_FLAG,
		DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, DAT_EVD_ASYNC_FLAG,
		DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG, DAT_EVD_CR_FLAG | DAT_EVD_CONNECTION_FLAG,
	};
	if (bad())
		return (DAT_EVD_FLAGS)(chance(50) ? (uint32_t)r64() : (uint32_t)good[rnd(10)] | (1u << rnd(32)));
	return good[rnd(10)];
}

static void do_evd_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_COUNT qlen = AV(rcount(1, 64));
	DAT_CNO_HANDLE cno = chance(70) ? AP(NULL) : ph(K_CNO);
	DAT_EVD_FLAGS f = (DAT_EVD_FLAGS)AV(revd_flags());
	DAT_EVD_HANDLE *evd = OUTP(0, DAT_EVD_HANDLE);
	DAT_RETURN r = CALL(F_evd_create, dat_evd_create(ia, qlen, cno, f, evd));
	if (r == DAT_SUCCESS && evd) {
		struct obj *o = add_obj(K_EVD, *evd, ia, 1);
		if (o)
			o->flags = f;
	}
}

static void do_evd_query(void)
{
	DAT_EVD_HANDLE evd = ph_primary(K_EVD);
	DAT_EVD_PARAM_MASK m = (DAT_EVD_PARAM_MASK)AV(rmask(DAT_EVD_FIELD_ALL));
	DAT_EVD_PARAM *p = OUTP(0, DAT_EVD_PARAM);
	CALL(F_evd_query, dat_evd_query(evd, m, p));
}

static void do_evd_free(void)
{
	DAT_EVD_HANDLE evd = ph_destroy(K_EVD);
	if (CALL(F_evd_free, dat_evd_free(evd)) == DAT_SUCCESS)
		forget(K_EVD, find_obj(K_EVD, evd), 1);
}

static void do_evd_resize(void)
{
	DAT_EVD_HANDLE evd = ph_destroy(K_EVD);
	DAT_COUNT q = AV(rcount(1, 128));
	CALL(F_evd_resize, dat_evd_resize(evd, q));
}

static void do_evd_post_se(void)
{
	DAT_EVD_HANDLE evd = ph_primary(K_EVD);
	DAT_EVENT *e = slot_ptr(S_IN0, sizeof(*e));
	memset(e, 0, sizeof(*e));
	e->event_number = bad() ? (DAT_EVENT_NUMBER)(chance(50) ? r64() : DAT_DTO_COMPLETION_EVENT) : DAT_SOFTWARE_EVENT;
	e->evd_handle = chance(50) ? evd : (DAT_EVD_HANDLE)(uintptr_t)r64();
	e->event_data.software_event_data.pointer = (DAT_PVOID)(uintptr_t)r64();
	if (bad() && chance(20))
		e = NULL;
	AP(e);
	CALL(F_evd_post_se, dat_evd_post_se(evd, e));
}

static void do_evd_wait(void)
{
	DAT_EVD_HANDLE evd = ph_primary(K_EVD);
	DAT_TIMEOUT t = (DAT_TIMEOUT)AV(rtimeout_short());
	DAT_COUNT th = AV(rcount(1, 4));
	DAT_EVENT *e = OUTP(0, DAT_EVENT);
	DAT_COUNT *nmore = OUTP(1, DAT_COUNT);
	DAT_RETURN r = CALL(F_evd_wait, dat_evd_wait(evd, t, th, e, nmore));
	if (r == DAT_SUCCESS && e) {
		DAT_EVENT copy = *e;
		on_event(&copy, evd);
	}
}

#define SIMPLE_EVD(fn, pick)                                            \
	static void do_##fn(void)                                       \
	{                                                               \
		DAT_EVD_HANDLE evd = pick(K_EVD);                       \
		CALL(F_##fn, dat_##fn(evd));                            \
	}
SIMPLE_EVD(evd_enable, ph_primary)
SIMPLE_EVD(evd_disable, ph_destroy)
SIMPLE_EVD(evd_set_unwaitable, ph_destroy)
SIMPLE_EVD(evd_clear_unwaitable, ph_primary)

static void do_evd_modify_cno(void)
{
	DAT_EVD_HANDLE evd = ph_destroy(K_EVD);
	DAT_CNO_HANDLE cno = chance(30) ? AP(NULL) : ph(K_CNO);
	CALL(F_evd_modify_cno, dat_evd_modify_cno(evd, cno));
}

/* ---- CNO ---- */

static void do_cno_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_OS_WAIT_PROXY_AGENT a = ragent();
	DAT_CNO_HANDLE *cno = OUTP(0, DAT_CNO_HANDLE);
	DAT_RETURN r = CALL(F_cno_create, dat_cno_create(ia, a, cno));
	if (r == DAT_SUCCESS && cno)
		add_obj(K_CNO, *cno, ia, 1);
}

static void do_cno_fd_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_FD *fd = OUTP(0, DAT_FD);
	DAT_CNO_HANDLE *cno = OUTP(1, DAT_CNO_HANDLE);
	DAT_RETURN r = CALL(F_cno_fd_create, dat_cno_fd_create(ia, fd, cno));
	if (r == DAT_SUCCESS && cno) {
		struct obj *o = add_obj(K_CNO, *cno, ia, 1);
		if (o && fd)
			o->fd = *fd;
	}
}

static void do_cno_modify_agent(void)
{
	DAT_CNO_HANDLE cno = ph_primary(K_CNO);
	DAT_OS_WAIT_PROXY_AGENT a = ragent();
	CALL(F_cno_modify_agent, dat_cno_modify_agent(cno, a));
}

static void do_cno_query(void)
{
	DAT_CNO_HANDLE cno = ph_primary(K_CNO);
	DAT_CNO_PARAM_MASK m = (DAT_CNO_PARAM_MASK)AV(rmask(7));
	DAT_CNO_PARAM *p = OUTP(0, DAT_CNO_PARAM);
	CALL(F_cno_query, dat_cno_query(cno, m, p));
}

static void do_cno_free(void)
{
	DAT_CNO_HANDLE cno = ph_destroy(K_CNO);
	if (CALL(F_cno_free, dat_cno_free(cno)) == DAT_SUCCESS)
		forget(K_CNO, find_obj(K_CNO, cno), 1);
}

static void do_cno_wait(void)
{
	DAT_CNO_HANDLE cno = ph_primary(K_CNO);
	DAT_TIMEOUT t = (DAT_TIMEOUT)AV(rtimeout_short());
	DAT_EVD_HANDLE *evd = OUTP(0, DAT_EVD_HANDLE);
	CALL(F_cno_wait, dat_cno_wait(cno, t, evd));
}

static void do_cno_trigger(void)
{
	DAT_CNO_HANDLE cno = ph_primary(K_CNO);
	DAT_EVD_HANDLE *evd = OUTP(0, DAT_EVD_HANDLE);
	CALL(F_cno_trigger, dat_cno_trigger(cno, evd));
}

/* ---- LMR ---- */

static DAT_MEM_PRIV_FLAGS rpriv(void)
{
	static const DAT_MEM_PRIV_FLAGS good[] = { DAT_MEM_PRIV_ALL_FLAG, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
						   DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
						   DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
						   DAT_MEM_PRIV_NONE_FLAG, DAT_MEM_PRIV_READ_FLAG, DAT_MEM_PRIV_WRITE_FLAG };
	if (bad())
		return (DAT_MEM_PRIV_FLAGS)(chance(50) ? (uint32_t)r64() : DAT_MEM_PRIV_ALL_FLAG | (1u << rnd(32)));
	return chance(60) ? DAT_MEM_PRIV_ALL_FLAG : good[rnd(7)];
}

/* The privileges that let a region's memory be written. */
#define PRIV_WRITES (DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC)

/* Privileges for read-only memory: none of them writes. */
static DAT_MEM_PRIV_FLAGS rpriv_read_only(void)
{
	static const DAT_MEM_PRIV_FLAGS good[] = { DAT_MEM_PRIV_NONE_FLAG, DAT_MEM_PRIV_LOCAL_READ_FLAG,
						   DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_MEM_PRIV_READ_FLAG };
	return good[rnd(4)];
}

/* The library registered memory the process cannot access as `priv` asks. */
static void inaccessible(DAT_LMR_HANDLE h, const char *what, uint64_t base, uint64_t len, DAT_MEM_PRIV_FLAGS priv)
{
	me->inaccessible++;
	if (me->inaccessible <= 5)
		note("INACCESSIBLE: the library registered %s: 0x%" PRIx64 "+0x%" PRIx64 " with privileges 0x%x; freed at once",
		     what, base, len, (unsigned)priv);
	rec_begin(F_lmr_free);
	AV(h);
	CALL(F_lmr_free, dat_lmr_free(h));
}

/* Learns where a new LMR lies; one outside the arena is freed at once (it would let the peer
 * write into memory the harness does not own) and reported. */
static void track_lmr(DAT_LMR_HANDLE h, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_LMR_CONTEXT lctx,
		      DAT_RMR_CONTEXT rctx, int lctx_known)
{
	DAT_LMR_PARAM *p = slot_ptr(S_OUT0 + 7, sizeof(*p));
	DAT_RETURN r;
	uint64_t base, len, a0 = (uint64_t)(uintptr_t)arena;
	struct obj *o;
	rec_begin(F_lmr_query);
	AV(h);
	AV(DAT_LMR_FIELD_ALL);
	AP(p);
	r = CALL(F_lmr_query, dat_lmr_query(h, DAT_LMR_FIELD_ALL, p));
	if (r != DAT_SUCCESS) {
		note("dat_lmr_query of a new LMR failed: 0x%x", r);
		me->oddities++;
		return;
	}
	base = (uint64_t)(uintptr_t)p->region_desc.for_va;
	len = p->length;
	if (p->mem_type != DAT_MEM_TYPE_VIRTUAL && p->mem_type != DAT_MEM_TYPE_LMR) {
		me->oddities++;
		note("LMR of mem_type %d", (int)p->mem_type);
	}
	if (p->mem_type == DAT_MEM_TYPE_LMR) {
		struct obj *from = find_obj(K_LMR, p->region_desc.for_lmr_handle);
		if (!from) {
			base = 0;
			len = ~0ull; /* unknown: treat as wild */
		} else {
			base = from->base;
		}
	}
	if (in_ro(base, len)) {
		/* The read-only pages: only privileges that write nothing may stand. */
		if (p->mem_priv & PRIV_WRITES) {
			inaccessible(h, "read-only pages for writing", base, len, p->mem_priv);
			return;
		}
	} else if (base < a0 || len > ARENA || base + len > a0 + ARENA) {
		me->wild++;
		if (me->wild <= 5)
			note("LMR accepted outside the harness arena: base 0x%" PRIx64 " length 0x%" PRIx64
			     " (arena 0x%" PRIx64 "+0x%x); freed at once",
			     base, len, a0, ARENA);
		rec_begin(F_lmr_free);
		AV(h);
		CALL(F_lmr_free, dat_lmr_free(h));
		return;
	}
	o = add_obj(K_LMR, h, ia, 1);
	if (!o)
		return;
	o->base = base;
	o->len = len;
	o->lctx = lctx_known ? lctx : p->lmr_context;
	o->rctx = lctx_known ? rctx : p->rmr_context;
	o->zb = p->va_type == DAT_VA_TYPE_ZB;
	o->ro = in_ro(base, len);
	o->pz = pz ? pz : p->pz_handle;
	if (o->lctx != p->lmr_context || o->rctx != p->rmr_context) {
		me->oddities++;
		note("dat_lmr_create's contexts differ from dat_lmr_query's");
	}
	publish_lmr(o, 1);
}

static __thread DAT_IA_HANDLE want_ia;
static int pz_of_ia(struct obj *o)
{
	return o->ia == want_ia;
}

static void do_lmr_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	struct obj *po;
	DAT_MEM_TYPE mt;
	DAT_REGION_DESCRIPTION reg;
	DAT_VLEN len;
	DAT_PZ_HANDLE pz;
	DAT_MEM_PRIV_FLAGS priv;
	DAT_VA_TYPE va;
	DAT_LMR_HANDLE *lmr;
	DAT_LMR_CONTEXT *lctx;
	DAT_RMR_CONTEXT *rctx;
	DAT_VLEN *rlen;
	DAT_VADDR *raddr_;
	DAT_RETURN r;
	uint32_t off = rnd(ARENA);
	/* Memory the harness may not write or does not have: 1 the read-only pages, 2 the hole,
	 * 3 from the read-only pages into the hole, 4 the PROT_NONE page (and on). */
	int foreign = chance(10) ? 1 + (int)rnd(4) : 0;
	memset(&reg, 0, sizeof(reg));
	mt = DAT_MEM_TYPE_VIRTUAL;
	reg.for_va = arena + off;
	len = chance(20) ? ARENA - off : rnd((ARENA - off) < 65536 ? ARENA - off : 65536) + 1;
	if (foreign) {
		uint32_t ro_len = FOREIGN_RO * PAGE, hole_len = FOREIGN_HOLE * PAGE;
		switch (foreign) {
		case 1:
			off = rnd(ro_len);
			reg.for_va = ro_mem + off;
			len = 1 + rnd(ro_len - off);
			break;
		case 2:
			off = rnd(hole_len);
			reg.for_va = hole + off;
			len = 1 + rnd(hole_len - off);
			break;
		case 3:
			off = 1 + rnd(PAGE);
			reg.for_va = hole - off;
			len = off + 1 + rnd(hole_len);
			break;
		default:
			reg.for_va = noaccess + rnd(PAGE);
			len = 1 + rnd(2 * PAGE);
			break;
		}
		me->foreign_tried++;
	} else if (bad()) {
		switch (rnd(8)) {
		case 0:
			mt = DAT_MEM_TYPE_LMR;
			reg.for_lmr_handle = ph(K_LMR);
			break;
		case 1: {
			static char cookie[DAT_LMR_COOKIE_SIZE];
			mt = DAT_MEM_TYPE_SHARED_VIRTUAL;
			reg.for_shared_memory.virtual_address = arena + off;
			reg.for_shared_memory.shared_memory_id = chance(50) ? &cookie : NULL;
			break;
		}
		case 2:
			mt = (DAT_MEM_TYPE)(3 + rnd(1000));
			break;
		case 3:
			len = 0;
			break;
		case 4: /* lengths the library must refuse: beyond max_lmr_block_size */
			len = chance(50) ? ~0ull : (1ull << 32) + rnd(1 << 20);
			break;
		case 5:
			reg.for_va = NULL;
			break;
		case 6:
			reg.for_va = (DAT_PVOID)(uintptr_t)(~0ull - rnd(4096));
			len = 8192;
			break;
		default:
			break;
		}
	}
	AV(mt);
	AV(reg.for_va);
	AV(len);
	want_ia = ia;
	if (foreign == 1 && !bad() && (po = pick_live_if(K_PZ, pz_of_ia))) /* mostly made: they join the pool */
		pz = (DAT_PZ_HANDLE)arg_tag((uint64_t)(uintptr_t)po->h, 'L');
	else
		pz = ph(K_PZ);
	priv = (DAT_MEM_PRIV_FLAGS)AV(foreign == 1 && chance(60) ? rpriv_read_only() : rpriv());
	va = (DAT_VA_TYPE)AV(bad() ? (uint32_t)r64() : (foreign || chance(80) ? DAT_VA_TYPE_VA : DAT_VA_TYPE_ZB));
	lmr = OUTP(0, DAT_LMR_HANDLE);
	lctx = OUTP(1, DAT_LMR_CONTEXT);
	rctx = OUTP(2, DAT_RMR_CONTEXT);
	rlen = OUTP(3, DAT_VLEN);
	raddr_ = OUTP(4, DAT_VADDR);
	r = CALL(F_lmr_create, dat_lmr_create(ia, mt, reg, len, pz, priv, va, lmr, lctx, rctx, rlen, raddr_));
	if (r == DAT_SUCCESS) {
		if (!lmr) {
			me->oddities++;
			note("dat_lmr_create succeeded without somewhere to put the handle");
			return;
		}
		if (foreign == 4) {
			inaccessible(*lmr, "a PROT_NONE page", (uint64_t)(uintptr_t)reg.for_va, len, priv);
			return;
		}
		if ((foreign == 2 || foreign == 3) && !hole_filled()) {
			inaccessible(*lmr, foreign == 2 ? "unmapped pages" : "a range running into unmapped pages",
				     (uint64_t)(uintptr_t)reg.for_va, len, priv);
			return;
		}
		if (foreign == 2 || foreign == 3) { /* the hole was mapped by someone else: not ours to lend */
			DAT_LMR_HANDLE h = *lmr; /* (the out-parameter is poisoned as the next call begins) */
			rec_begin(F_lmr_free);
			AV(h);
			CALL(F_lmr_free, dat_lmr_free(h));
			return;
		}
		if (foreign == 1 && !(priv & PRIV_WRITES))
			me->foreign_read_only++;
		track_lmr(*lmr, ia, pz, lctx ? *lctx : 0, rctx ? *rctx : 0, lctx && rctx);
	}
}

static void do_lmr_query(void)
{
	DAT_LMR_HANDLE lmr = ph_primary(K_LMR);
	DAT_LMR_PARAM_MASK m = (DAT_LMR_PARAM_MASK)AV(rmask(DAT_LMR_FIELD_ALL));
	DAT_LMR_PARAM *p = OUTP(0, DAT_LMR_PARAM);
	CALL(F_lmr_query, dat_lmr_query(lmr, m, p));
}

static void do_lmr_free(void)
{
	DAT_LMR_HANDLE lmr = ph_destroy(K_LMR);
	if (CALL(F_lmr_free, dat_lmr_free(lmr)) == DAT_SUCCESS)
		forget(K_LMR, find_obj(K_LMR, lmr), 1);
}

static void do_lmr_sync(int fid)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_COUNT n;
	const DAT_LMR_TRIPLET *t;
	DAT_VLEN vn;
	unsigned saved = badp;
	badp = badp > 30 ? 30 : badp; /* counts beyond the array are not read: keep them <= 1024 */
	t = riov(&n, NULL, 8);
	badp = saved;
	/* riov put min(n, 1024) triplets before the guard page, or 4 for a negative n */
	vn = n < 0 ? 4 : (n > IOV_CAP ? IOV_CAP : (DAT_VLEN)n);
	if (fid == F_lmr_sync_rdma_read)
		CALL(fid, dat_lmr_sync_rdma_read(ia, t, vn));
	else
		CALL(fid, dat_lmr_sync_rdma_write(ia, t, vn));
}

/* ---- RMR ---- */

static void do_rmr_create(int fid)
{
	DAT_PZ_HANDLE pz = ph_primary(K_PZ);
	DAT_RMR_HANDLE *rmr = OUTP(0, DAT_RMR_HANDLE);
	DAT_RETURN r = fid == F_rmr_create ? CALL(fid, dat_rmr_create(pz, rmr)) : CALL(fid, dat_rmr_create_for_ep(pz, rmr));
	if (r == DAT_SUCCESS && rmr) {
		struct obj *po = find_obj(K_PZ, pz), *o;
		o = add_obj(K_RMR, *rmr, po ? po->ia : NULL, 1);
		if (o)
			o->pz = pz;
	}
}

static void do_rmr_query(void)
{
	DAT_RMR_HANDLE rmr = ph_primary(K_RMR);
	DAT_RMR_PARAM_MASK m = (DAT_RMR_PARAM_MASK)AV(rmask(DAT_RMR_FIELD_ALL));
	DAT_RMR_PARAM *p = OUTP(0, DAT_RMR_PARAM);
	CALL(F_rmr_query, dat_rmr_query(rmr, m, p));
}

static DAT_COMPLETION_FLAGS rcompl(void);

static __thread DAT_PZ_HANDLE want_pz;
static int lmr_in_pz(struct obj *o)
{
	return o->pz == want_pz;
}

static int ep_unconnected_in_pz(struct obj *o)
{
	return o->conn != 2 && o->pz == want_pz;
}

/* A good bind names an RMR, an LMR and an EP of one PZ (the EP not connected: binding over
 * the wire is not implemented, on a disconnected EP the bind is flushed). */
static void do_rmr_bind(void)
{
	DAT_RMR_HANDLE rmr = ph_primary(K_RMR);
	struct obj *ro = find_obj(K_RMR, rmr), *lo = NULL, *eo = NULL;
	DAT_LMR_HANDLE lmr;
	DAT_COUNT n = 1;
	DAT_LMR_TRIPLET *t;
	DAT_MEM_PRIV_FLAGS priv;
	DAT_VA_TYPE va;
	DAT_EP_HANDLE ep;
	DAT_RMR_COOKIE ck;
	DAT_COMPLETION_FLAGS f;
	DAT_RMR_CONTEXT *ctx;
	want_pz = ro ? ro->pz : NULL;
	if (!bad())
		lo = pick_live_if(K_LMR, lmr_in_pz);
	lmr = lo ? (arg_tag((uint64_t)(uintptr_t)lo->h, 'L'), lo->h) : ph(K_LMR);
	if (lo && !bad()) {
		DAT_VLEN off = rnd((uint32_t)lo->len + 1);
		t = slot_ptr(S_IOV, sizeof(*t));
		t->virtual_address = (lo->zb ? 0 : lo->base) + off;
		t->segment_length = (DAT_SEG_LENGTH)rnd((uint32_t)(lo->len - off) + 1);
		t->lmr_context = lo->lctx;
		AP(t);
	} else {
		t = riov(&n, NULL, 1);
		if (t && n == 0)
			t = slot_ptr(S_IOV, sizeof(*t)); /* one triplet, of junk */
	}
	priv = (DAT_MEM_PRIV_FLAGS)AV(rpriv());
	va = (DAT_VA_TYPE)AV(bad() ? (uint32_t)r64() : (chance(90) ? DAT_VA_TYPE_VA : DAT_VA_TYPE_ZB));
	if (!bad())
		eo = pick_live_if(K_EP, ep_unconnected_in_pz);
	ep = eo ? (arg_tag((uint64_t)(uintptr_t)eo->h, 'L'), eo->h) : ph(K_EP);
	ck = rcontext();
	f = (DAT_COMPLETION_FLAGS)AV(rcompl());
	ctx = OUTP(0, DAT_RMR_CONTEXT);
	CALL(F_rmr_bind, dat_rmr_bind(rmr, lmr, t, priv, va, ep, ck, f, ctx));
}

static void do_rmr_free(void)
{
	DAT_RMR_HANDLE rmr = ph_primary(K_RMR);
	if (CALL(F_rmr_free, dat_rmr_free(rmr)) == DAT_SUCCESS)
		forget(K_RMR, find_obj(K_RMR, rmr), 1);
}

/* ---- SRQ ---- */

static void do_srq_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_PZ_HANDLE pz = ph(K_PZ);
	DAT_SRQ_ATTR *a = slot_ptr(S_IN0, sizeof(*a));
	DAT_SRQ_HANDLE *srq;
	DAT_RETURN r;
	a->max_recv_dtos = rcount(1, 64);
	a->max_recv_iov = rcount(1, 8);
	a->low_watermark = rcount(0, 8);
	if (bad() && chance(30))
		a = NULL;
	AP(a);
	srq = OUTP(0, DAT_SRQ_HANDLE);
	r = CALL(F_srq_create, dat_srq_create(ia, pz, a, srq));
	if (r == DAT_SUCCESS && srq) {
		struct obj *o = add_obj(K_SRQ, *srq, ia, 1);
		if (o)
			o->pz = pz;
	}
}

static void do_srq_free(void)
{
	DAT_SRQ_HANDLE srq = ph_destroy(K_SRQ);
	if (CALL(F_srq_free, dat_srq_free(srq)) == DAT_SUCCESS)
		forget(K_SRQ, find_obj(K_SRQ, srq), 1);
}

static void do_srq_post_recv(void)
{
	DAT_SRQ_HANDLE srq = ph_primary(K_SRQ);
	struct obj *o = find_obj(K_SRQ, srq);
	DAT_COUNT n;
	DAT_LMR_TRIPLET *t;
	iov_shape = SHAPE_LARGE;
	t = riov(&n, o ? o->pz : NULL, 2);
	iov_shape = SHAPE_ANY;
	DAT_DTO_COOKIE ck = rcontext();
	CALL(F_srq_post_recv, dat_srq_post_recv(srq, n, t, ck));
}

static void do_srq_query(void)
{
	DAT_SRQ_HANDLE srq = ph_primary(K_SRQ);
	DAT_SRQ_PARAM_MASK m = (DAT_SRQ_PARAM_MASK)AV(rmask(DAT_SRQ_FIELD_ALL));
	DAT_SRQ_PARAM *p = OUTP(0, DAT_SRQ_PARAM);
	CALL(F_srq_query, dat_srq_query(srq, m, p));
}

static void do_srq_resize(void)
{
	DAT_SRQ_HANDLE srq = ph_primary(K_SRQ);
	DAT_COUNT n = AV(rcount(1, 128));
	CALL(F_srq_resize, dat_srq_resize(srq, n));
}

static void do_srq_set_lw(void)
{
	DAT_SRQ_HANDLE srq = ph_primary(K_SRQ);
	DAT_COUNT n = AV(rcount(0, 64));
	CALL(F_srq_set_lw, dat_srq_set_lw(srq, n));
}

/* ---- EP ---- */

static DAT_EVD_HANDLE pick_evd_with(DAT_EVD_FLAGS want)
{
	int i, start = (int)rnd(SLOTS);
	if (bad())
		return ph(K_EVD);
	for (i = 0; i < SLOTS; i++) {
		struct obj *o = &pools[K_EVD].o[(start + i) % SLOTS];
		if (o->live && (o->flags & want)) {
			arg_tag((uint64_t)(uintptr_t)o->h, 'L');
			return o->h;
		}
	}
	return AP(NULL);
}

static void do_ep_create(int with_srq)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_PZ_HANDLE pz = ph(K_PZ);
	DAT_EVD_HANDLE recv = pick_evd_with(DAT_EVD_DTO_FLAG);
	DAT_EVD_HANDLE req = pick_evd_with(DAT_EVD_DTO_FLAG);
	DAT_EVD_HANDLE conn = pick_evd_with(DAT_EVD_CONNECTION_FLAG);
	DAT_SRQ_HANDLE srq = with_srq ? ph(K_SRQ) : NULL;
	DAT_EP_ATTR *a = rep_attr(S_ATTR, with_srq);
	DAT_EP_HANDLE *ep = OUTP(0, DAT_EP_HANDLE);
	DAT_RETURN r;
	if (nlive(K_EP) >= SLOTS - 2 && !bad()) {
		/* keep room: free one first */
		struct obj *o = pick_live(K_EP);
		if (o) {
			rec_begin(F_ep_free);
			AV(o->h);
			if (CALL(F_ep_free, dat_ep_free(o->h)) == DAT_SUCCESS)
				forget(K_EP, o, 1);
		}
		return;
	}
	if (with_srq)
		r = CALL(F_ep_create_with_srq, dat_ep_create_with_srq(ia, pz, recv, req, conn, srq, a, ep));
	else
		r = CALL(F_ep_create, dat_ep_create(ia, pz, recv, req, conn, a, ep));
	if (r == DAT_SUCCESS && ep) {
		struct obj *o = add_obj(K_EP, *ep, ia, 1);
		if (o) {
			o->pz = pz;
			o->srq = srq;
		}
	}
}

static void do_ep_query(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_EP_PARAM_MASK m = AV(rmask(DAT_EP_FIELD_ALL));
	DAT_EP_PARAM *p = OUTP(0, DAT_EP_PARAM);
	DAT_RETURN r = CALL(F_ep_query, dat_ep_query(ep, m, p));
	if (r == DAT_SUCCESS && p) {
		if ((m & DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR) && p->local_ia_address_ptr)
			touch(p->local_ia_address_ptr, sizeof(struct sockaddr_in));
		if ((m & DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR) && p->remote_ia_address_ptr)
			touch(p->remote_ia_address_ptr, sizeof(struct sockaddr_in));
	}
}

static void do_ep_modify(void)
{
	DAT_EP_HANDLE ep = ph_destroy(K_EP);
	DAT_EP_PARAM_MASK m = AV(rmask(DAT_EP_FIELD_ALL));
	DAT_EP_PARAM *p = slot_ptr(S_IN0 + 1, sizeof(*p));
	DAT_EP_ATTR *a;
	memset(p, 0, sizeof(*p));
	p->ia_handle = ph(K_IA);
	p->ep_state = (DAT_EP_STATE)rnd(16);
	p->comm.domain = (int)r64();
	p->local_ia_address_ptr = raddr();
	p->local_port_qual = r64();
	p->remote_ia_address_ptr = raddr();
	p->remote_port_qual = r64();
	p->pz_handle = ph(K_PZ);
	p->recv_evd_handle = ph(K_EVD);
	p->request_evd_handle = ph(K_EVD);
	p->connect_evd_handle = ph(K_EVD);
	p->srq_handle = ph(K_SRQ);
	a = rep_attr(S_ATTR, 0);
	if (a)
		p->ep_attr = *a;
	else {
		p->ep_attr.max_recv_dtos = rcount(1, 64);
		p->ep_attr.max_request_dtos = rcount(1, 64);
		p->ep_attr.max_recv_iov = rcount(1, 8);
		p->ep_attr.max_request_iov = rcount(1, 8);
		p->ep_attr.max_message_size = 1u << 20;
		p->ep_attr.max_rdma_size = 1u << 20;
	}
	if (bad() && chance(20))
		p = NULL;
	AP(p);
	CALL(F_ep_modify, dat_ep_modify(ep, m, p));
}

static void do_ep_get_status(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_EP_STATE *st = OUTP(0, DAT_EP_STATE);
	DAT_BOOLEAN *ri = OUTP(1, DAT_BOOLEAN), *qi = OUTP(2, DAT_BOOLEAN);
	DAT_RETURN r = CALL(F_ep_get_status, dat_ep_get_status(ep, st, ri, qi));
	if (r == DAT_SUCCESS && st && (unsigned)*st > DAT_EP_STATE_CONNECTED_MULTI_PATH) {
		me->oddities++;
		note("dat_ep_get_status: unknown state %d", (int)*st);
	}
}

static void do_ep_free(void)
{
	DAT_EP_HANDLE ep = ph_destroy(K_EP);
	if (CALL(F_ep_free, dat_ep_free(ep)) == DAT_SUCCESS)
		forget(K_EP, find_obj(K_EP, ep), 1);
}

static void do_ep_reset(void)
{
	DAT_EP_HANDLE ep = ph_destroy(K_EP);
	if (CALL(F_ep_reset, dat_ep_reset(ep)) == DAT_SUCCESS) {
		struct obj *o = find_obj(K_EP, ep);
		if (o)
			o->conn = 0;
	}
}

static void do_ep_recv_query(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_COUNT *a = OUTP(0, DAT_COUNT), *b = OUTP(1, DAT_COUNT);
	CALL(F_ep_recv_query, dat_ep_recv_query(ep, a, b));
}

static void do_ep_set_watermark(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_COUNT s = AV(rcount(0, 64)), h = AV(rcount(0, 64));
	CALL(F_ep_set_watermark, dat_ep_set_watermark(ep, s, h));
}

static DAT_QOS rqos(void)
{
	if (bad())
		return (DAT_QOS)(chance(50) ? (uint32_t)r64() : 1u << rnd(32));
	return chance(80) ? DAT_QOS_BEST_EFFORT : (DAT_QOS)(1u << rnd(4));
}

static DAT_TIMEOUT rconn_timeout(void)
{
	if (bad())
		return (DAT_TIMEOUT)(chance(50) ? 0 : r64());
	return chance(30) ? DAT_TIMEOUT_INFINITE : 100000 + rnd(2000000);
}

static DAT_RETURN connect_ep(struct obj *o, int plausible)
{
	DAT_EP_HANDLE ep;
	DAT_IA_ADDRESS_PTR addr;
	DAT_CONN_QUAL q;
	DAT_TIMEOUT t;
	DAT_COUNT size;
	DAT_PVOID pd;
	DAT_QOS qos;
	DAT_CONNECT_FLAGS f;
	DAT_RETURN r;
	unsigned saved = badp;
	rec_begin(F_ep_connect);
	if (plausible)
		badp = 0;
	ep = o ? (arg_tag((uint64_t)(uintptr_t)o->h, 'L'), o->h) : ph_primary(K_EP);
	addr = raddr();
	q = rqual(0);
	t = (DAT_TIMEOUT)AV(rconn_timeout());
	pd = rpd(&size);
	qos = (DAT_QOS)AV(rqos());
	f = (DAT_CONNECT_FLAGS)AV(bad() ? (uint32_t)r64() : (chance(90) ? DAT_CONNECT_DEFAULT_FLAG : rnd(3)));
	badp = saved;
	r = CALL(F_ep_connect, dat_ep_connect(ep, addr, q, t, size, pd, qos, f));
	if (r == DAT_SUCCESS) {
		struct obj *eo = find_obj(K_EP, ep);
		if (eo)
			eo->conn = 1;
	}
	return r;
}

static void do_ep_connect(void)
{
	connect_ep(NULL, 0);
}

static void do_ep_dup_connect(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_EP_HANDLE dup = ph(K_EP);
	DAT_TIMEOUT t = (DAT_TIMEOUT)AV(rconn_timeout());
	DAT_COUNT size;
	DAT_PVOID pd = rpd(&size);
	DAT_QOS qos = (DAT_QOS)AV(rqos());
	if (CALL(F_ep_dup_connect, dat_ep_dup_connect(ep, dup, t, size, pd, qos)) == DAT_SUCCESS) {
		struct obj *eo = find_obj(K_EP, ep);
		if (eo)
			eo->conn = 1;
	}
}

static void do_ep_common_connect(void)
{
	DAT_EP_HANDLE ep = ph_primary(K_EP);
	DAT_IA_ADDRESS_PTR addr = raddr();
	DAT_TIMEOUT t = (DAT_TIMEOUT)AV(rconn_timeout());
	DAT_COUNT size;
	DAT_PVOID pd = rpd(&size);
	CALL(F_ep_common_connect, dat_ep_common_connect(ep, addr, t, size, pd));
}

static void do_ep_disconnect(void)
{
	DAT_EP_HANDLE ep = ph_destroy(K_EP);
	DAT_CLOSE_FLAGS f = (DAT_CLOSE_FLAGS)AV(bad() ? (uint32_t)r64() : rnd(2));
	CALL(F_ep_disconnect, dat_ep_disconnect(ep, f));
}

static int ep_connected(struct obj *o)
{
	return o->conn == 2;
}

/* The EP for a DTO: mostly a connected one. */
static DAT_EP_HANDLE pick_dto_ep(struct obj **out)
{
	struct obj *o = NULL;
	if (!bad())
		o = chance(90) ? pick_live_if(K_EP, ep_connected) : pick_live(K_EP);
	if (o) {
		arg_tag((uint64_t)(uintptr_t)o->h, 'L');
		*out = o;
		return o->h;
	}
	*out = NULL;
	{
		DAT_EP_HANDLE h = ph_primary(K_EP);
		*out = find_obj(K_EP, h);
		return h;
	}
}

static DAT_COMPLETION_FLAGS rcompl(void)
{
	static const DAT_COMPLETION_FLAGS good[] = { DAT_COMPLETION_DEFAULT_FLAG, DAT_COMPLETION_SUPPRESS_FLAG,
						     DAT_COMPLETION_SOLICITED_WAIT_FLAG, DAT_COMPLETION_UNSIGNALLED_FLAG,
						     DAT_COMPLETION_BARRIER_FENCE_FLAG, DAT_COMPLETION_EVD_THRESHOLD_FLAG };
	if (bad())
		return (DAT_COMPLETION_FLAGS)(chance(50) ? (uint32_t)r64() : 1u << rnd(32));
	return chance(70) ? DAT_COMPLETION_DEFAULT_FLAG : good[rnd(6)];
}

static void do_dto(int fid)
{
	struct obj *o;
	DAT_EP_HANDLE ep = pick_dto_ep(&o);
	DAT_COUNT n;
	DAT_LMR_TRIPLET *t;
	iov_shape = fid == F_ep_post_recv ? SHAPE_LARGE
		    : (fid == F_ep_post_send || fid == F_ep_post_send_with_invalidate) ? SHAPE_SMALL : SHAPE_ANY;
	t = riov(&n, o ? o->pz : NULL, 4);
	iov_shape = SHAPE_ANY;
	DAT_DTO_COOKIE ck = rcontext();
	const DAT_RMR_TRIPLET *rt;
	DAT_COMPLETION_FLAGS f;
	switch (fid) {
	case F_ep_post_send:
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		CALL(fid, dat_ep_post_send(ep, n, t, ck, f));
		break;
	case F_ep_post_recv:
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		CALL(fid, dat_ep_post_recv(ep, n, t, ck, f));
		break;
	case F_ep_post_send_with_invalidate: {
		DAT_BOOLEAN inv;
		DAT_RMR_CONTEXT rc;
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		inv = (DAT_BOOLEAN)AV(bad() ? (uint32_t)r64() : rnd(2));
		rc = (DAT_RMR_CONTEXT)AV(r64());
		CALL(fid, dat_ep_post_send_with_invalidate(ep, n, t, ck, f, inv, rc));
		break;
	}
	case F_ep_post_rdma_write:
		rt = rriov(S_RIOV, iov_total(t, n));
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		CALL(fid, dat_ep_post_rdma_write(ep, n, t, ck, rt, f));
		break;
	case F_ep_post_rdma_read:
		rt = rriov(S_RIOV, iov_total(t, n));
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		CALL(fid, dat_ep_post_rdma_read(ep, n, t, ck, rt, f));
		break;
	default: {
		const DAT_RMR_TRIPLET *lt = rriov(S_RIOV2, 0);
		rt = rriov(S_RIOV, lt ? lt->segment_length : 0);
		f = (DAT_COMPLETION_FLAGS)AV(rcompl());
		CALL(fid, dat_ep_post_rdma_read_to_rmr(ep, lt, ck, rt, f));
		break;
	}
	}
}

/* ---- PSP, RSP, CSP, CR ---- */

static void do_psp_create(int any)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_CONN_QUAL q = 0, *qp = NULL;
	DAT_EVD_HANDLE evd;
	DAT_PSP_FLAGS f;
	DAT_PSP_HANDLE *psp;
	DAT_RETURN r;
	if (any)
		qp = OUTP(1, DAT_CONN_QUAL);
	else
		q = rqual(1);
	evd = pick_evd_with(DAT_EVD_CR_FLAG);
	f = (DAT_PSP_FLAGS)AV(bad() ? (uint32_t)r64() : (chance(80) ? DAT_PSP_CONSUMER_FLAG : DAT_PSP_PROVIDER_FLAG));
	psp = OUTP(0, DAT_PSP_HANDLE);
	if (nlive(K_PSP) >= 6) {
		ia = NULL; /* keep the number of listeners bounded */
		expect_fail = 1;
	}
	r = any ? CALL(F_psp_create_any, dat_psp_create_any(ia, qp, evd, f, psp))
		: CALL(F_psp_create, dat_psp_create(ia, q, evd, f, psp));
	if (r == DAT_SUCCESS && psp) {
		struct obj *o = add_obj(K_PSP, *psp, ia, 1);
		if (o) {
			o->qual = any ? (qp ? *qp : 0) : q;
			if (o->qual)
				publish_qual(o->qual);
		}
	}
}

static void do_psp_query(void)
{
	DAT_PSP_HANDLE psp = ph_primary(K_PSP);
	DAT_PSP_PARAM_MASK m = (DAT_PSP_PARAM_MASK)AV(rmask(DAT_PSP_FIELD_ALL));
	DAT_PSP_PARAM *p = OUTP(0, DAT_PSP_PARAM);
	CALL(F_psp_query, dat_psp_query(psp, m, p));
}

static void do_psp_free(void)
{
	DAT_PSP_HANDLE psp = ph_destroy(K_PSP);
	if (CALL(F_psp_free, dat_psp_free(psp)) == DAT_SUCCESS)
		forget(K_PSP, find_obj(K_PSP, psp), 1);
}

static void do_rsp_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_CONN_QUAL q = rqual(1);
	DAT_EP_HANDLE ep = ph(K_EP);
	DAT_EVD_HANDLE evd = pick_evd_with(DAT_EVD_CR_FLAG);
	DAT_RSP_HANDLE *rsp = OUTP(0, DAT_RSP_HANDLE);
	DAT_RETURN r;
	if (nlive(K_RSP) >= 4) {
		ia = NULL;
		expect_fail = 1;
	}
	r = CALL(F_rsp_create, dat_rsp_create(ia, q, ep, evd, rsp));
	if (r == DAT_SUCCESS && rsp) {
		struct obj *o = add_obj(K_RSP, *rsp, ia, 1);
		if (o)
			o->qual = q;
	}
}

static void do_rsp_query(void)
{
	DAT_RSP_HANDLE rsp = ph_primary(K_RSP);
	DAT_RSP_PARAM_MASK m = (DAT_RSP_PARAM_MASK)AV(rmask(DAT_RSP_FIELD_ALL));
	DAT_RSP_PARAM *p = OUTP(0, DAT_RSP_PARAM);
	CALL(F_rsp_query, dat_rsp_query(rsp, m, p));
}

static void do_rsp_free(void)
{
	DAT_RSP_HANDLE rsp = ph_primary(K_RSP);
	if (CALL(F_rsp_free, dat_rsp_free(rsp)) == DAT_SUCCESS)
		forget(K_RSP, find_obj(K_RSP, rsp), 1);
}

static void do_csp_create(void)
{
	DAT_IA_HANDLE ia = ph_primary(K_IA);
	DAT_COMM *comm = slot_ptr(S_IN0 + 2, sizeof(*comm));
	DAT_IA_ADDRESS_PTR addr;
	DAT_EVD_HANDLE evd;
	DAT_CSP_HANDLE *csp;
	DAT_RETURN r;
	comm->domain = chance(50) ? AF_INET : (int)r64();
	comm->type = chance(50) ? SOCK_STREAM : (int)r64();
	comm->protocol = (int)rnd(10);
	if (bad() && chance(30))
		comm = NULL;
	AP(comm);
	addr = raddr();
	evd = pick_evd_with(DAT_EVD_CR_FLAG);
	csp = OUTP(0, DAT_CSP_HANDLE);
	r = CALL(F_csp_create, dat_csp_create(ia, comm, addr, evd, csp));
	if (r == DAT_SUCCESS && csp)
		add_obj(K_CSP, *csp, ia, 1);
}

static void do_csp_query(void)
{
	DAT_CSP_HANDLE csp = ph_primary(K_CSP);
	DAT_CSP_PARAM_MASK m = (DAT_CSP_PARAM_MASK)AV(rmask(DAT_CSP_FIELD_ALL));
	DAT_CSP_PARAM *p = OUTP(0, DAT_CSP_PARAM);
	CALL(F_csp_query, dat_csp_query(csp, m, p));
}

static void do_csp_free(void)
{
	DAT_CSP_HANDLE csp = ph_primary(K_CSP);
	if (CALL(F_csp_free, dat_csp_free(csp)) == DAT_SUCCESS)
		forget(K_CSP, find_obj(K_CSP, csp), 1);
}

static void do_cr_query(void)
{
	DAT_CR_HANDLE cr = ph(K_CR);
	DAT_CR_PARAM_MASK m = (DAT_CR_PARAM_MASK)AV(rmask(DAT_CR_FIELD_ALL));
	DAT_CR_PARAM *p = OUTP(0, DAT_CR_PARAM);
	DAT_RETURN r = CALL(F_cr_query, dat_cr_query(cr, m, p));
	if (r == DAT_SUCCESS && p) {
		if ((m & DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR) && p->remote_ia_address_ptr)
			touch(p->remote_ia_address_ptr, sizeof(struct sockaddr_in));
		if ((m & DAT_CR_FIELD_PRIVATE_DATA) && (m & DAT_CR_FIELD_PRIVATE_DATA_SIZE) && p->private_data) {
			if (p->private_data_size < 0 || p->private_data_size > max_pd) {
				me->oddities++;
				note("dat_cr_query: private_data_size %d", p->private_data_size);
			} else {
				touch(p->private_data, (size_t)p->private_data_size);
			}
		}
	}
}

static void do_cr_accept(void)
{
	DAT_CR_HANDLE cr = ph(K_CR);
	DAT_EP_HANDLE ep;
	struct obj *o = NULL;
	DAT_COUNT size;
	DAT_PVOID pd;
	if (!bad() && (o = pick_live_if(K_EP, ep_idle)))
		ep = (arg_tag((uint64_t)(uintptr_t)o->h, 'L'), o->h);
	else
		ep = ph(K_EP);
	pd = rpd(&size);
	if (CALL(F_cr_accept, dat_cr_accept(cr, ep, size, pd)) == DAT_SUCCESS) {
		forget(K_CR, find_obj(K_CR, cr), 1);
		if ((o = find_obj(K_EP, ep)))
			o->conn = 1;
	}
}

static void do_cr_reject(void)
{
	DAT_CR_HANDLE cr = ph(K_CR);
	DAT_COUNT size;
	DAT_PVOID pd = rpd(&size);
	if (CALL(F_cr_reject, dat_cr_reject(cr, size, pd)) == DAT_SUCCESS)
		forget(K_CR, find_obj(K_CR, cr), 1);
}

static void do_cr_handoff(void)
{
	DAT_CR_HANDLE cr = ph(K_CR);
	DAT_CONN_QUAL q = rqual(0);
	CALL(F_cr_handoff, dat_cr_handoff(cr, q));
}

/* ---- Generic handles ---- */

static DAT_HANDLE any_handle(int *k, char *tag)
{
	*k = (int)rnd(NKIND);
	return pick_handle_t(*k, tag);
}

static void do_set_consumer_context(void)
{
	int k;
	char tag;
	DAT_HANDLE h = any_handle(&k, &tag);
	DAT_CONTEXT c = rcontext();
	arg_tag((uint64_t)(uintptr_t)h, tag);
	AV(c.as_64);
	if (tag == 'F' || tag == 'G' || (tag == 'N'))
		expect_fail = 1;
	CALL(F_set_consumer_context, dat_set_consumer_context(h, c));
}

static void do_get_consumer_context(void)
{
	int k;
	char tag;
	DAT_HANDLE h = any_handle(&k, &tag);
	DAT_CONTEXT *c;
	arg_tag((uint64_t)(uintptr_t)h, tag);
	if (tag == 'F' || tag == 'G' || (tag == 'N'))
		expect_fail = 1;
	c = OUTP(0, DAT_CONTEXT);
	CALL(F_get_consumer_context, dat_get_consumer_context(h, c));
}

static void do_get_handle_type(void)
{
	int k;
	char tag;
	DAT_HANDLE h = any_handle(&k, &tag);
	DAT_HANDLE_TYPE *t;
	DAT_RETURN r;
	arg_tag((uint64_t)(uintptr_t)h, tag);
	if (tag == 'F' || tag == 'G' || (tag == 'N'))
		expect_fail = 1;
	t = OUTP(0, DAT_HANDLE_TYPE);
	r = CALL(F_get_handle_type, dat_get_handle_type(h, t));
	if (r == DAT_SUCCESS && t && tag == 'L' && *t != ktype[k]) {
		me->oddities++;
		note("dat_get_handle_type of a live %s says %d", kname[k], (int)*t);
	}
}

/* ---- Registry and errors ---- */

static void do_registry_list_providers(void)
{
	DAT_COUNT max = AV(bad() ? -(DAT_COUNT)rnd(3) - 1 : (DAT_COUNT)rnd(65));
	DAT_COUNT *n = OUTP(0, DAT_COUNT);
	DAT_PROVIDER_INFO **list = slot_ptr(S_IN0 + 3, 64 * sizeof(*list)), *infos = slot_ptr(S_OUT0 + 1, 64 * sizeof(*infos));
	int i;
	for (i = 0; i < 64; i++)
		list[i] = &infos[i];
	if (bad() && chance(30))
		list = NULL;
	AP(list);
	CALL(F_registry_list_providers, dat_registry_list_providers(max, n, list));
}

static DAT_PROVIDER_INFO *rprovider_info(void)
{
	DAT_PROVIDER_INFO *pi = slot_ptr(S_IN0 + 4, sizeof(*pi));
	memset(pi, 0, sizeof(*pi));
	if (bad()) {
		switch (rnd(3)) {
		case 0:
			memset(pi->ia_name, 'x', sizeof(pi->ia_name)); /* no NUL */
			break;
		case 1:
			snprintf(pi->ia_name, sizeof(pi->ia_name), "%s", ia_name);
			break;
		default:
			break;
		}
	} else {
		snprintf(pi->ia_name, sizeof(pi->ia_name), "fuzz-%u", rnd(3));
	}
	pi->dapl_version_major = bad() ? (DAT_UINT32)r64() : DAT_VERSION_MAJOR;
	pi->dapl_version_minor = bad() ? (DAT_UINT32)r64() : DAT_VERSION_MINOR;
	pi->is_thread_safe = (DAT_BOOLEAN)(bad() ? (uint32_t)r64() : rnd(2));
	if (bad() && chance(30))
		pi = NULL;
	return AP(pi);
}

static DAT_PROVIDER *rprovider(void)
{
	DAT_PROVIDER *p = slot_ptr(S_IN0 + 5, sizeof(*p));
	memset(p, 0, sizeof(*p));
	p->device_name = "fuzz";
	if (bad() && chance(30))
		p = NULL;
	return AP(p);
}

static void do_registry_add_provider(void)
{
	const DAT_PROVIDER *p = rprovider();
	const DAT_PROVIDER_INFO *pi = rprovider_info();
	CALL(F_registry_add_provider, dat_registry_add_provider(p, pi));
}

static void do_registry_remove_provider(void)
{
	const DAT_PROVIDER *p = rprovider();
	const DAT_PROVIDER_INFO *pi = rprovider_info();
	CALL(F_registry_remove_provider, dat_registry_remove_provider(p, pi));
}

static void do_registry_providers_related(void)
{
	char *a = rname(S_NAME, 1), *b = rname(S_NAME2, 0);
	DAT_HA_RELATIONSHIP *rel = OUTP(0, DAT_HA_RELATIONSHIP);
	CALL(F_registry_providers_related, dat_registry_providers_related(a, b, rel));
}

static DAT_RETURN rreturn_value(void)
{
	switch (rnd(4)) {
	case 0:
		return (DAT_RETURN)r64();
	case 1:
		return DAT_CLASS_ERROR | ((1 + rnd(24)) << 16) | rnd(104);
	case 2:
		return me->ring[tid][rnd(RING)].ret;
	default:
		return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED | rnd(200);
	}
}

static void touch_str(const char *s)
{
	if (s)
		touch(s, strlen(s));
}

static void do_strerror(void)
{
	DAT_RETURN v = (DAT_RETURN)AV(rreturn_value());
	const char **m1 = OUTP(0, const char *), **m2 = OUTP(1, const char *);
	if (CALL(F_strerror, dat_strerror(v, m1, m2)) == DAT_SUCCESS) {
		if (m1)
			touch_str(*m1);
		if (m2)
			touch_str(*m2);
	}
}

static void do_strerror_extension(void)
{
	DAT_IB_RETURN v = (DAT_IB_RETURN)AV(rreturn_value());
	const char **m = OUTP(0, const char *);
	if (CALL(F_strerror_extension, dat_strerror_extension(v, m)) == DAT_SUCCESS && m)
		touch_str(*m);
}

static void do_strerror_ext_status(void)
{
	DAT_IB_STATUS v = (DAT_IB_STATUS)AV(chance(50) ? rnd(4) : (uint32_t)r64());
	const char **m = OUTP(0, const char *);
	if (CALL(F_strerror_ext_status, dat_strerror_ext_status(v, m)) == DAT_SUCCESS && m)
		touch_str(*m);
}

/* A fetch-and-add or compare-and-swap as the dat_ib_post_* macros make it: an EP (mostly a
 * connected one), an 8-byte result segment in one of its LMRs, and a word of a region of the
 * peer's (read-only ones among them, which no atomic may reach), or bad ones. */
static void do_atomic(void)
{
	struct obj *o, *lo = NULL;
	DAT_EP_HANDLE ep = pick_dto_ep(&o);
	DAT_LMR_TRIPLET *t;
	DAT_RMR_TRIPLET *rt;
	DAT_DTO_COOKIE ck;
	DAT_COMPLETION_FLAGS f;
	DAT_COUNT n;
	want_pz = o ? o->pz : NULL;
	if (!bad())
		lo = pick_live_if(K_LMR, lmr_in_pz);
	if (lo && lo->len >= 8) {
		t = slot_ptr(S_IOV, sizeof(*t));
		t->virtual_address = ((lo->zb ? 0 : lo->base) + rnd((uint32_t)(lo->len - 8) + 1) + 7) & ~7ull;
		t->segment_length = 8;
		t->lmr_context = lo->lctx;
		if (t->virtual_address + 8 > (lo->zb ? 0 : lo->base) + lo->len)
			t->virtual_address -= 8;
		AP(t);
	} else {
		t = riov(&n, want_pz, 1);
		if (t && n == 0)
			t = slot_ptr(S_IOV, sizeof(*t)); /* one triplet (of junk): an atomic reads one */
	}
	rt = (DAT_RMR_TRIPLET *)rriov(S_RIOV, 8);
	if (rt && !bad())
		rt->virtual_address &= ~7ull; /* atomics need an aligned word */
	ck = rcontext();
	f = (DAT_COMPLETION_FLAGS)AV(rcompl());
	if (chance(50))
		CALL(F_extension_op, dat_ib_post_fetch_and_add(ep, r64(), t, ck, rt, f));
	else
		CALL(F_extension_op, dat_ib_post_cmp_and_swap(ep, r64(), r64(), t, ck, rt, f));
}

static void do_extension_op(void)
{
	static const int ops[] = { 0, 1, 2, 3, 4, 5, 26, 27, 28, 29, 0x1000, 0x2000, 6, 7, 100, -1 };
	if (chance(30)) {
		do_atomic();
		return;
	}
	int k = (int)rnd(NKIND);
	char tag;
	DAT_HANDLE h = pick_handle_t(k, &tag);
	int op = chance(80) ? ops[rnd(16)] : (int)r64();
	/* Every variadic argument is a pointer to a large harness buffer: what the shim reads as
	 * an integer is just a number, what it reads as a pointer is valid memory. */
	void *s = slot_ptr(S_IN0 + 6, 4096);
	arg_tag((uint64_t)(uintptr_t)h, tag);
	AV(op);
	if (CALL(F_extension_op, dat_extension_op(h, op, s, s, s, s, s, s, s, s)) == DAT_SUCCESS &&
	    op == DAT_IB_CLOSE_QUERY_OP && find_obj(K_IA, h))
		forget_ia(h); /* dat_ib_close_query closed it (it closes any IA) */
}

/* ------------------------------------------------------------------------------------------ */
/* Keeping the pool populated, connections up, DTOs flowing                                    */

static int is_core(struct obj *o)
{
	return o->core;
}

static struct obj *ensure_ia(void)
{
	struct obj *o = pick_live_if(K_IA, is_core);
	if (!o) {
		int saved = making_core;
		DAT_RETURN r;
		making_core = 1;
		r = open_ia(ia_name, 16, 1);
		making_core = saved;
		if (r != DAT_SUCCESS)
			return NULL;
		o = pick_live_if(K_IA, is_core);
	}
	return o;
}

static int count_if(int k, int (*pred)(struct obj *))
{
	int i, n = 0;
	for (i = 0; i < SLOTS; i++)
		n += pools[k].o[i].live && pred(&pools[k].o[i]);
	return n;
}

static __thread DAT_EVD_FLAGS want_flags;
static int evd_has(struct obj *o)
{
	return o->core && (o->flags & want_flags) != 0 && !(o->flags & DAT_EVD_ASYNC_FLAG);
}



/* The minimum pool, made with good arguments (badp is 0 here). */
static int min_idle_eps = 5;
static void ensure_pool_(void)
{
	struct obj *ia = ensure_ia(), *pz, *o;
	static const DAT_EVD_FLAGS kinds[] = { DAT_EVD_DTO_FLAG, DAT_EVD_DTO_FLAG, DAT_EVD_CONNECTION_FLAG,
					       DAT_EVD_CR_FLAG, DAT_EVD_RMR_BIND_FLAG, DAT_EVD_SOFTWARE_FLAG };
	static const int need[] = { 3, 3, 2, 1, 1, 1 };
	unsigned i;
	DAT_RETURN r;
	if (!ia)
		return;
	if (count_if(K_PZ, is_core) < 2) {
		DAT_PZ_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		rec_begin(F_pz_create);
		AV(ia->h);
		if (CALL(F_pz_create, dat_pz_create(ia->h, h)) == DAT_SUCCESS)
			add_obj(K_PZ, *h, ia->h, 1);
	}
	if (count_if(K_CNO, is_core) < 2) {
		DAT_CNO_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		DAT_FD *fd = slot_ptr(S_OUT0 + 1, sizeof(*fd));
		rec_begin(F_cno_fd_create);
		AV(ia->h);
		if (CALL(F_cno_fd_create, dat_cno_fd_create(ia->h, fd, h)) == DAT_SUCCESS) {
			o = add_obj(K_CNO, *h, ia->h, 1);
			if (o)
				o->fd = *fd;
		}
		{
			DAT_OS_WAIT_PROXY_AGENT a = { (DAT_PVOID)me, agent_fn };
			h = slot_ptr(S_OUT0, sizeof(*h)); /* a fresh slot: the last call's are poisoned */
			rec_begin(F_cno_create);
			AV(ia->h);
			if (CALL(F_cno_create, dat_cno_create(ia->h, a, h)) == DAT_SUCCESS)
				add_obj(K_CNO, *h, ia->h, 1);
		}
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		want_flags = kinds[i];
		if (count_if(K_EVD, evd_has) < need[i]) {
			DAT_EVD_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
			DAT_CNO_HANDLE cno = NULL;
			if (kinds[i] == DAT_EVD_DTO_FLAG && chance(30) && (o = pick_live_if(K_CNO, is_core)))
				cno = o->h;
			rec_begin(F_evd_create);
			AV(ia->h);
			AV(64);
			AV(cno);
			AV(kinds[i]);
			r = CALL(F_evd_create, dat_evd_create(ia->h, 64, cno, kinds[i], h));
			if (r == DAT_SUCCESS && (o = add_obj(K_EVD, *h, ia->h, 1)))
				o->flags = kinds[i];
		}
	}
	pz = pick_live_if(K_PZ, is_core);
	if (!pz)
		return;
	for (i = 0; i < 8 && count_if(K_LMR, is_core) < 4; i++) {
		DAT_REGION_DESCRIPTION reg;
		DAT_LMR_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		DAT_LMR_CONTEXT *lc = slot_ptr(S_OUT0 + 1, sizeof(*lc));
		DAT_RMR_CONTEXT *rc = slot_ptr(S_OUT0 + 2, sizeof(*rc));
		DAT_VLEN *rl = slot_ptr(S_OUT0 + 3, sizeof(*rl));
		DAT_VADDR *ra = slot_ptr(S_OUT0 + 4, sizeof(*ra));
		uint32_t chunk = rnd(16);
		reg.for_va = arena + chunk * (ARENA / 16);
		rec_begin(F_lmr_create);
		AV(ia->h);
		AV(reg.for_va);
		AV(ARENA / 16);
		AV(pz->h);
		r = CALL(F_lmr_create, dat_lmr_create(ia->h, DAT_MEM_TYPE_VIRTUAL, reg, ARENA / 16, pz->h,
						      DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, h, lc, rc, rl, ra));
		if (r != DAT_SUCCESS)
			break;
		track_lmr(*h, ia->h, pz->h, *lc, *rc, 1);
	}
	if (count_if(K_SRQ, is_core) < 1) {
		DAT_SRQ_ATTR *a = slot_ptr(S_IN0, sizeof(*a));
		DAT_SRQ_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		a->max_recv_dtos = 32;
		a->max_recv_iov = 4;
		a->low_watermark = 0;
		rec_begin(F_srq_create);
		AV(ia->h);
		AV(pz->h);
		if (CALL(F_srq_create, dat_srq_create(ia->h, pz->h, a, h)) == DAT_SUCCESS && (o = add_obj(K_SRQ, *h, ia->h, 1)))
			o->pz = pz->h;
	}
	if (count_if(K_RMR, is_core) < 2) {
		DAT_RMR_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		rec_begin(F_rmr_create);
		AV(pz->h);
		if (CALL(F_rmr_create, dat_rmr_create(pz->h, h)) == DAT_SUCCESS && (o = add_obj(K_RMR, *h, ia->h, 1)))
			o->pz = pz->h;
	}
	for (i = 0; i < 8 && count_if(K_EP, ep_idle_core) < min_idle_eps && count_if(K_EP, is_core) < SLOTS - 6; i++) {
		DAT_EP_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		DAT_EVD_HANDLE recv, req, conn;
		DAT_SRQ_HANDLE srq = NULL;
		int with_srq = chance(20) && (o = pick_live_if(K_SRQ, is_core)) != NULL;
		if (with_srq)
			srq = o->h;
		want_flags = DAT_EVD_DTO_FLAG;
		o = pick_live_if(K_EVD, evd_has);
		recv = o ? o->h : NULL;
		o = pick_live_if(K_EVD, evd_has);
		req = o ? o->h : NULL;
		want_flags = DAT_EVD_CONNECTION_FLAG;
		o = pick_live_if(K_EVD, evd_has);
		conn = o ? o->h : NULL;
		rec_begin(with_srq ? F_ep_create_with_srq : F_ep_create);
		AV(ia->h);
		AV(pz->h);
		AV(recv);
		AV(req);
		AV(conn);
		if (with_srq) {
			DAT_EP_ATTR *a = slot_ptr(S_ATTR, sizeof(*a));
			good_ep_attr(a);
			r = CALL(F_ep_create_with_srq, dat_ep_create_with_srq(ia->h, pz->h, recv, req, conn, srq, a, h));
		} else
			r = CALL(F_ep_create, dat_ep_create(ia->h, pz->h, recv, req, conn, NULL, h));
		if (r != DAT_SUCCESS)
			continue;
		if ((o = add_obj(K_EP, *h, ia->h, 1))) {
			o->pz = pz->h;
			o->srq = srq;
		}
	}
	if (count_if(K_PSP, is_core) < 1 || !me->psp_qual[0]) {
		DAT_PSP_HANDLE *h = slot_ptr(S_OUT0, sizeof(*h));
		DAT_CONN_QUAL *q = slot_ptr(S_OUT0 + 1, sizeof(*q));
		want_flags = DAT_EVD_CR_FLAG;
		o = pick_live_if(K_EVD, evd_has);
		if (o && nlive(K_PSP) < 6) {
			rec_begin(F_psp_create_any);
			AV(ia->h);
			AV(o->h);
			r = CALL(F_psp_create_any, dat_psp_create_any(ia->h, q, o->h, DAT_PSP_CONSUMER_FLAG, h));
			if (r == DAT_SUCCESS && (o = add_obj(K_PSP, *h, ia->h, 1))) {
				o->qual = *q;
				me->psp_qual[0] = *q;
			}
		}
	}
}

static void ensure_pool(void)
{
	making_core = 1;
	ensure_pool_();
	making_core = 0;
}

/* Posts a good receive or send on a connected EP. */
static void post_good(struct obj *ep, int fid)
{
	unsigned saved = badp;
	badp = 0;
	rec_begin(fid);
	AV(ep->h);
	{
		DAT_COUNT n;
		DAT_LMR_TRIPLET *t;
		iov_shape = fid == F_ep_post_recv ? SHAPE_LARGE : fid == F_ep_post_send ? SHAPE_SMALL : SHAPE_ANY;
		t = riov(&n, ep->pz, 2);
		iov_shape = SHAPE_ANY;
		DAT_DTO_COOKIE ck = rcontext();
		if (fid == F_ep_post_recv)
			CALL(fid, dat_ep_post_recv(ep->h, n, t, ck, DAT_COMPLETION_DEFAULT_FLAG));
		else if (fid == F_ep_post_send)
			CALL(fid, dat_ep_post_send(ep->h, n, t, ck, DAT_COMPLETION_DEFAULT_FLAG));
		else {
			const DAT_RMR_TRIPLET *rt = rriov(S_RIOV, iov_total(t, n));
			if (fid == F_ep_post_rdma_write)
				CALL(fid, dat_ep_post_rdma_write(ep->h, n, t, ck, rt, DAT_COMPLETION_DEFAULT_FLAG));
			else
				CALL(fid, dat_ep_post_rdma_read(ep->h, n, t, ck, rt, DAT_COMPLETION_DEFAULT_FLAG));
		}
	}
	badp = saved;
}

static void maintain(void)
{
	int i, nconn;
	unsigned saved = badp;
	badp = 0;
	ensure_pool();
	drain_all(8);
	nconn = count_if(K_EP, ep_connected);
	if (nconn < 3) {
		struct obj *o = pick_live_if(K_EP, ep_idle_core);
		if (o && (peer->psp_qual[0] || me->psp_qual[0]))
			connect_ep(o, 1);
	}
	for (i = 0; i < SLOTS; i++) {
		struct obj *o = &pools[K_EP].o[i];
		if (o->live && o->conn == 2) {
			post_good(o, F_ep_post_recv);
			post_good(o, F_ep_post_recv);
			if (chance(50))
				post_good(o, F_ep_post_send);
			if (chance(30))
				post_good(o, chance(50) ? F_ep_post_rdma_write : F_ep_post_rdma_read);
		} else if (o->live && o->conn == 3 && chance(50)) {
			rec_begin(F_ep_reset);
			AV(o->h);
			if (CALL(F_ep_reset, dat_ep_reset(o->h)) == DAT_SUCCESS)
				o->conn = 0;
		}
	}
	badp = saved;
}

/* Every so often: everything enabled and waitable again, fd CNOs checked. */
static void refresh(void)
{
	int i;
	for (i = 0; i < SLOTS; i++) {
		struct obj *o = &pools[K_EVD].o[i];
		if (!o->live)
			continue;
		rec_begin(F_evd_enable);
		AV(o->h);
		CALL(F_evd_enable, dat_evd_enable(o->h));
		rec_begin(F_evd_clear_unwaitable);
		AV(o->h);
		CALL(F_evd_clear_unwaitable, dat_evd_clear_unwaitable(o->h));
	}
	/* (With several threads another one may be freeing the CNO, or closing its IA, right now.) */
	for (i = 0; i < SLOTS && nthreads == 1; i++) {
		struct obj *o = &pools[K_CNO].o[i];
		struct pollfd pfd;
		if (!o->live || o->fd < 0)
			continue;
		pfd.fd = o->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLNVAL)) {
			me->oddities++;
			note("the fd %d of a live fd CNO is closed", o->fd);
			o->fd = -1;
		}
	}
	check_canary();
}

/* ------------------------------------------------------------------------------------------ */
/* A step                                                                                     */

static unsigned wsum;

static void step(void)
{
	uint32_t w = rnd(wsum), acc = 0;
	int fid;
	static const unsigned levels[] = { 0, 5, 25, 60 };
	for (fid = 0; fid < NFUNC; fid++) {
		acc += fweight[fid];
		if (w < acc)
			break;
	}
	badp = levels[rnd(4)];
	if (fid != F_evd_dequeue && fid != F_ep_connect)
		rec_begin(fid);
	switch (fid) {
	case F_ia_openv: do_ia_openv(); break;
	case F_ia_query: do_ia_query(); break;
	case F_ia_close: do_ia_close(); break;
	case F_pz_create: do_pz_create(); break;
	case F_pz_query: do_pz_query(); break;
	case F_pz_free: do_pz_free(); break;
	case F_evd_create: do_evd_create(); break;
	case F_evd_query: do_evd_query(); break;
	case F_evd_free: do_evd_free(); break;
	case F_evd_resize: do_evd_resize(); break;
	case F_evd_post_se: do_evd_post_se(); break;
	case F_evd_dequeue: do_dequeue(NULL, 0); break;
	case F_evd_wait: do_evd_wait(); break;
	case F_evd_enable: do_evd_enable(); break;
	case F_evd_disable: do_evd_disable(); break;
	case F_evd_set_unwaitable: do_evd_set_unwaitable(); break;
	case F_evd_clear_unwaitable: do_evd_clear_unwaitable(); break;
	case F_evd_modify_cno: do_evd_modify_cno(); break;
	case F_cno_create: do_cno_create(); break;
	case F_cno_fd_create: do_cno_fd_create(); break;
	case F_cno_modify_agent: do_cno_modify_agent(); break;
	case F_cno_query: do_cno_query(); break;
	case F_cno_free: do_cno_free(); break;
	case F_cno_wait: do_cno_wait(); break;
	case F_cno_trigger: do_cno_trigger(); break;
	case F_lmr_create: do_lmr_create(); break;
	case F_lmr_query: do_lmr_query(); break;
	case F_lmr_free: do_lmr_free(); break;
	case F_lmr_sync_rdma_read:
	case F_lmr_sync_rdma_write: do_lmr_sync(fid); break;
	case F_rmr_create:
	case F_rmr_create_for_ep: do_rmr_create(fid); break;
	case F_rmr_query: do_rmr_query(); break;
	case F_rmr_bind: do_rmr_bind(); break;
	case F_rmr_free: do_rmr_free(); break;
	case F_srq_create: do_srq_create(); break;
	case F_srq_free: do_srq_free(); break;
	case F_srq_post_recv: do_srq_post_recv(); break;
	case F_srq_query: do_srq_query(); break;
	case F_srq_resize: do_srq_resize(); break;
	case F_srq_set_lw: do_srq_set_lw(); break;
	case F_ep_create: do_ep_create(0); break;
	case F_ep_create_with_srq: do_ep_create(1); break;
	case F_ep_query: do_ep_query(); break;
	case F_ep_modify: do_ep_modify(); break;
	case F_ep_get_status: do_ep_get_status(); break;
	case F_ep_free: do_ep_free(); break;
	case F_ep_reset: do_ep_reset(); break;
	case F_ep_recv_query: do_ep_recv_query(); break;
	case F_ep_set_watermark: do_ep_set_watermark(); break;
	case F_ep_connect: do_ep_connect(); break;
	case F_ep_dup_connect: do_ep_dup_connect(); break;
	case F_ep_common_connect: do_ep_common_connect(); break;
	case F_ep_disconnect: do_ep_disconnect(); break;
	case F_ep_post_send:
	case F_ep_post_send_with_invalidate:
	case F_ep_post_rdma_write:
	case F_ep_post_rdma_read:
	case F_ep_post_rdma_read_to_rmr:
	case F_ep_post_recv: do_dto(fid); break;
	case F_psp_create: do_psp_create(0); break;
	case F_psp_create_any: do_psp_create(1); break;
	case F_psp_query: do_psp_query(); break;
	case F_psp_free: do_psp_free(); break;
	case F_rsp_create: do_rsp_create(); break;
	case F_rsp_query: do_rsp_query(); break;
	case F_rsp_free: do_rsp_free(); break;
	case F_csp_create: do_csp_create(); break;
	case F_csp_query: do_csp_query(); break;
	case F_csp_free: do_csp_free(); break;
	case F_cr_query: do_cr_query(); break;
	case F_cr_accept: do_cr_accept(); break;
	case F_cr_reject: do_cr_reject(); break;
	case F_cr_handoff: do_cr_handoff(); break;
	case F_set_consumer_context: do_set_consumer_context(); break;
	case F_get_consumer_context: do_get_consumer_context(); break;
	case F_get_handle_type: do_get_handle_type(); break;
	case F_registry_list_providers: do_registry_list_providers(); break;
	case F_registry_add_provider: do_registry_add_provider(); break;
	case F_registry_remove_provider: do_registry_remove_provider(); break;
	case F_registry_providers_related: do_registry_providers_related(); break;
	case F_strerror: do_strerror(); break;
	case F_strerror_extension: do_strerror_extension(); break;
	case F_strerror_ext_status: do_strerror_ext_status(); break;
	case F_extension_op: do_extension_op(); break;
	default: break;
	}
}

/* ------------------------------------------------------------------------------------------ */
/* The workers                                                                                */

static int pipe_to_peer, pipe_from_peer;

static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	size_t got = 0;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (got < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t k;
		int left = (int)((deadline - now_ns()) / 1000000);
		int pr = now_ns() >= deadline ? 0 : poll(&p, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		k = read(fd, (char *)buf + got, n - got);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

/* Both workers connect a few EPs to each other before the random phase. */
static void initial_connections(void)
{
	DAT_CONN_QUAL mine = me->psp_qual[0], theirs = 0;
	uint64_t deadline;
	int i, made = 0;
	if (write(pipe_to_peer, &mine, sizeof(mine)) != sizeof(mine) ||
	    read_full(pipe_from_peer, &theirs, sizeof(theirs), 20000) < 0) {
		note("setup: no qualifier from the peer");
		exit(2);
	}
	if (verbose)
		fprintf(stderr, "worker %d: listening on %" PRIu64 ", peer on %" PRIu64 "\n", wid, mine, theirs);
	peer->psp_qual[0] = peer->psp_qual[0] ? peer->psp_qual[0] : theirs;
	for (i = 0; i < SLOTS && made < 2; i++) {
		struct obj *o = &pools[K_EP].o[i];
		if (o->live && o->conn == 0) {
			struct sockaddr_in *sin = slot_ptr(S_ADDR, sizeof(*sin));
			DAT_RETURN r;
			*sin = lo_addr;
			rec_begin(F_ep_connect);
			AV(o->h);
			AV(theirs);
			r = CALL(F_ep_connect, dat_ep_connect(o->h, (DAT_IA_ADDRESS_PTR)sin, theirs, 5000000, 0, NULL,
							      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
			if (r == DAT_SUCCESS) {
				o->conn = 1;
				made++;
			}
		}
	}
	deadline = now_ns() + 10000000000ull;
	while (now_ns() < deadline) {
		int conn = count_if(K_EP, ep_connected);
		if (conn >= 4)
			break;
		drain_all(4);
		usleep(1000);
	}
	if (verbose)
		fprintf(stderr, "worker %d: %d EPs connected after setup\n", wid, count_if(K_EP, ep_connected));
	if (count_if(K_EP, ep_connected) == 0)
		note("setup: no connection established");
}

/* The random phase of one harness thread; thread 0 also keeps the pool going. */
static void run_steps(uint64_t calls)
{
	uint64_t k;
	for (k = 1; me->calls < calls; k++) {
		cur_step = k;
		me->steps++;
		seed_step(k, 0);
		step();
		if (tid == 0 && k % 64 == 0) {
			seed_step(k, 2);
			maintain();
		}
		if (tid == 0 && k % 1024 == 0) {
			seed_step(k, 3);
			refresh();
		}
	}
}

static struct targ {
	pthread_t th;
	int tid;
	uint64_t calls;
} targs[MAXT];

static void *thread_main(void *p)
{
	struct targ *a = p;
	tid = a->tid;
	setup_slots();
	pthread_mutex_lock(&hmx);
	me->progress[tid] = now_ns();
	run_steps(a->calls);
	pthread_mutex_unlock(&hmx);
	return NULL;
}

static void worker(uint64_t calls)
{
	uint64_t t0, k;
	struct itimerval it;
	struct sigaction sa;
	int sock;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	DAT_PROVIDER_ATTR pattr;

	pthread_mutex_lock(&hmx);
	setup_memory();
	setup_foreign();
	setup_slots();
	lo_addr.sin_family = AF_INET;
	lo_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* A port nobody listens on: bound, never listening, held for the whole run. */
	sock = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(sock, (struct sockaddr *)&sin, &sl) < 0) {
		perror("dead port");
		exit(2);
	}
	dead_port = ntohs(sin.sin_port);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	me->progress[0] = now_ns();
	it.it_interval.tv_sec = (time_t)(signal_us / 1000000);
	it.it_interval.tv_usec = (suseconds_t)(signal_us % 1000000);
	it.it_value = it.it_interval;
	setitimer(ITIMER_REAL, &it, NULL);

	for (k = 0; k < NFUNC; k++)
		wsum += fweight[k];

	cur_step = 0;
	seed_step(0, 1);
	badp = 0;
	if (!ensure_ia()) {
		note("setup: cannot open %s", ia_name);
		exit(2);
	}
	rec_begin(F_ia_query);
	if (CALL(F_ia_query, dat_ia_query(pick_live(K_IA)->h, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
					  &pattr)) == DAT_SUCCESS)
		max_pd = pattr.max_private_data_size;
	if (max_pd < 0 || max_pd > 4096)
		max_pd = 56;
	ensure_pool();
	for (k = 0; k < SLOTS; k++) {
		struct obj *o = &pools[K_EP].o[k];
		if (o->live) {
			post_good(o, F_ep_post_recv);
			post_good(o, F_ep_post_recv);
		}
	}
	initial_connections();
	setup_phase = 0;
	me->ready = 1;

	t0 = now_ns();
	for (k = 1; k < (uint64_t)nthreads; k++) {
		targs[k].tid = (int)k;
		targs[k].calls = calls;
		if (pthread_create(&targs[k].th, NULL, thread_main, &targs[k])) {
			perror("pthread_create");
			exit(2);
		}
	}
	run_steps(calls);
	pthread_mutex_unlock(&hmx);
	for (k = 1; k < (uint64_t)nthreads; k++)
		pthread_join(targs[k].th, NULL);
	pthread_mutex_lock(&hmx);
	me->seconds = (double)(now_ns() - t0) / 1e9;
	check_canary();
	drain_all(64);
	/* The end: close every IA abruptly. */
	for (k = 0; k < SLOTS; k++) {
		struct obj *o = &pools[K_IA].o[k];
		if (o->live) {
			rec_begin(F_ia_close);
			AV(o->h);
			CALL(F_ia_close, dat_ia_close(o->h, DAT_CLOSE_ABRUPT_FLAG));
		}
	}
	it.it_value.tv_sec = it.it_interval.tv_sec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	me->finished = 1;
	exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* The supervisor                                                                             */

static void report(double wall)
{
	uint64_t tot[NOUT] = { 0 }, calls = 0;
	int f, o, w;
	printf("\n%-36s %9s %9s", "function", "calls", "max ms");
	for (o = 0; o < NOUT; o++) {
		for (f = 0; f < NFUNC; f++)
			tot[o] += shm[0].counts[f][o] + shm[1].counts[f][o];
	}
	printf("  outcomes\n");
	for (f = 0; f < NFUNC; f++) {
		uint64_t n = 0;
		for (o = 0; o < NOUT; o++)
			n += shm[0].counts[f][o] + shm[1].counts[f][o];
		printf("%-36s %9" PRIu64 " %9.1f ", fname[f], n,
		       (double)(shm[0].max_us[f] > shm[1].max_us[f] ? shm[0].max_us[f] : shm[1].max_us[f]) / 1000.0);
		for (o = 0; o < NOUT; o++) {
			uint64_t c = shm[0].counts[f][o] + shm[1].counts[f][o];
			if (c)
				printf(" %s:%" PRIu64, oname[o], c);
		}
		printf("\n");
	}
	printf("%-36s %9" PRIu64 " %9s ", "all", shm[0].calls + shm[1].calls, "");
	for (o = 0; o < NOUT; o++)
		if (tot[o])
			printf(" %s:%" PRIu64, oname[o], tot[o]);
	printf("\n\n");
	{
		static const char *ops[DTO_OPS] = { "send", "rdma_write", "rdma_read", "receive", "recv_inval", "bind", "fmr", "inval", "ext" };
		printf("DTO completions (operation: status counts, 0 = success):\n");
		for (o = 0; o < DTO_OPS; o++) {
			int s, any = 0;
			for (s = 0; s < DTO_ST; s++)
				any |= (shm[0].dto[o][s] + shm[1].dto[o][s]) != 0;
			if (!any)
				continue;
			printf("  %-11s", ops[o]);
			for (s = 0; s < DTO_ST; s++) {
				uint64_t c = shm[0].dto[o][s] + shm[1].dto[o][s];
				if (c)
					printf(" %d:%" PRIu64, s, c);
			}
			printf("\n");
		}
	}
	for (w = 0; w < 2; w++) {
		struct wshared *s = &shm[w];
		calls += s->calls;
		unsigned e;
		printf("worker %d: %" PRIu64 " calls in %" PRIu64 " steps, %.1f s, %.0f calls/s; agent calls %" PRIu64
		       "; events:", w, s->calls, s->steps, s->seconds, s->seconds > 0 ? (double)s->calls / s->seconds : 0.0,
		       s->agent);
		for (e = 0; e < NEVENTS; e++)
			if (s->events[e])
				printf(" %s %" PRIu64, event_names[e].name, s->events[e]);
		printf("\n");
		if (s->wild || s->oddities || s->bad_success || s->canary)
			printf("worker %d: oddities %" PRIu64 ", LMRs accepted outside the arena %" PRIu64
			       ", successes with an invalid handle %" PRIu64 ", canary hits %" PRIu64 "\n",
			       w, s->oddities, s->wild, s->bad_success, s->canary);
		printf("worker %d: registrations of memory it may not write or does not have %" PRIu64
		       ", read-only ones made %" PRIu64 ", inaccessible ones made %" PRIu64 "\n",
		       w, s->foreign_tried, s->foreign_read_only, s->inaccessible);
	}
	printf("\ncalls %" PRIu64 ", %.1f s, %.0f calls/s (seed %" PRIu64 ")\n", calls, wall, (double)calls / wall, g_seed);
}

int main(int argc, char **argv)
{
	int opt, w, p01[2], p10[2], failed = 0, crashes = 0;
	pid_t pid[2];
	uint64_t t0, hangs = 0, invalid = 0, badev = 0, canary = 0, badsucc = 0, wild = 0, inacc = 0;
	double wall;

	g_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	while ((opt = getopt(argc, argv, "s:n:i:t:vP:S:T:")) != -1) {
		switch (opt) {
		case 's':
			g_seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			g_calls = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			ia_name = optarg;
			break;
		case 't':
			hang_ns = strtoull(optarg, NULL, 0) * 1000000ull;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'P':
			poison = atoi(optarg);
			break;
		case 'S':
			signal_us = strtoull(optarg, NULL, 0);
			break;
		case 'T':
			nthreads = atoi(optarg);
			if (nthreads < 1 || nthreads > MAXT) {
				fprintf(stderr, "api_fuzz: -T takes 1 to %d\n", MAXT);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n CALLS] [-i IA] [-t HANG_MS] [-P 0|1] [-S SIGNAL_US] [-T THREADS] [-v]\n", argv[0]);
			return 2;
		}
	}
	printf("api_fuzz: seed %" PRIu64 ", %" PRIu64 " calls over 2 workers, IA %s, hang threshold %" PRIu64
	       " ms, poisoning %s, SIGALRM every %" PRIu64 " us, %d thread%s per worker\n",
	       g_seed, g_calls, ia_name, hang_ns / 1000000, poison ? "on" : "off", signal_us, nthreads,
	       nthreads > 1 ? "s" : "");
	fflush(stdout);
	shm = mmap(NULL, 2 * sizeof(struct wshared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED || pipe(p01) || pipe(p10)) {
		perror("setup");
		return 2;
	}
	t0 = now_ns();
	for (w = 0; w < 2; w++) {
		pid[w] = fork();
		if (pid[w] < 0) {
			perror("fork");
			return 2;
		}
		if (pid[w] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the supervisor */
			wid = w;
			me = &shm[w];
			peer = &shm[1 - w];
			pipe_to_peer = w == 0 ? p01[1] : p10[1];
			pipe_from_peer = w == 0 ? p10[0] : p01[0];
			worker(g_calls / 2 + (w == 0 ? g_calls % 2 : 0));
		}
	}
	for (w = 0; w < 2; w++) {
		int st;
		pid_t got = wait(&st);
		int who = got == pid[0] ? 0 : 1;
		if (WIFSIGNALED(st)) {
			crashes++;
			fprintf(stderr, "api_fuzz: CRASH: worker %d died of signal %d (%s); seed %" PRIu64 "\n", who,
				WTERMSIG(st), strsignal(WTERMSIG(st)), g_seed);
			dump_ring(&shm[who], who, 24);
		} else if (WEXITSTATUS(st) != 0) {
			failed++;
			fprintf(stderr, "api_fuzz: worker %d exited with status %d; seed %" PRIu64 "\n", who, WEXITSTATUS(st),
				g_seed);
			if (WEXITSTATUS(st) == 4 || WEXITSTATUS(st) == 5)
				hangs++;
			else
				dump_ring(&shm[who], who, 24);
		}
	}
	wall = (double)(now_ns() - t0) / 1e9;
	report(wall);
	for (w = 0; w < 2; w++) {
		hangs += shm[w].hangs;
		invalid += shm[w].invalid;
		badev += shm[w].bad_events;
		canary += shm[w].canary;
		badsucc += shm[w].bad_success;
		wild += shm[w].wild;
		inacc += shm[w].inaccessible;
		if (shm[w].note[0])
			printf("worker %d first note: %s\n", w, shm[w].note);
	}
	printf("crashes %d, hangs %" PRIu64 ", invalid returns %" PRIu64 ", bad events %" PRIu64 ", canary hits %" PRIu64
	       ", successes with invalid handles %" PRIu64 ", registrations outside harness memory %" PRIu64
	       ", registrations of memory the process cannot access as asked %" PRIu64 "%s\n",
	       crashes, hangs, invalid, badev, canary, badsucc, wild, inacc, failed ? ", a worker failed" : "");
	if (crashes || hangs || invalid || badev || canary || badsucc || wild || inacc || failed) {
		printf("FAILED: replay with: api_fuzz -s %" PRIu64 " -n %" PRIu64 " -i %s -t %" PRIu64 " -T %d -P %d -S %" PRIu64
		       "\n", g_seed, g_calls, ia_name, hang_ns / 1000000, nthreads, poison, signal_us);
		return 1;
	}
	return 0;
}
