/*
 * calltime: an LD_PRELOAD shim that times the data-path calls of whichever DAT library is
 * loaded (ours or OpenFabrics'), so the libraries' own cost per call can be compared apart
 * from the provider's system calls, which dominate an emulated guest's latency and its noise.
 *
 *   LD_PRELOAD=build/bin/calltime.so datperf -P ia -m pingpong -p ...
 *
 * At exit each process prints one line to stderr:
 *   calltime: post_send NS post_recv NS post_rdma_write NS dequeue_found NS dequeue_empty NS
 * the mean nanoseconds per call, in user space: the time a post spends in write(2) (how a
 * soft-RoCE provider rings its doorbell) is left out. A call a process never made prints "-".
 * The shim's own cost (two reads of the time-stamp counter a call) is in every figure alike.
 */
#define _GNU_SOURCE
#include <dat2/udat.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { POST_SEND, POST_RECV, POST_WRITE, FOUND, EMPTY, KINDS };
static const char *const names[KINDS] = {"post_send", "post_recv", "post_rdma_write", "dequeue_found", "dequeue_empty"};

static uint64_t total[KINDS], calls[KINDS]; /* ticks, calls */
/* Ticks this thread spent in write(2) inside the post it is timing. */
static __thread uint64_t in_syscall;
static __thread int in_post;

static uint64_t clock_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Ticks of the time-stamp counter where there is one: an emulated guest's clock_gettime is a
 * system call (its clock source is the HPET) and would cost more than the calls it times.
 * Converted to nanoseconds at exit, against the clock over the process's life. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static uint64_t now_ticks(void) { return __rdtsc(); }
#else
static uint64_t now_ticks(void) { return clock_ns(); }
#endif

static uint64_t start_ticks, start_ns;

__attribute__((constructor)) static void calibrate(void)
{
	start_ns = clock_ns();
	start_ticks = now_ticks();
}

static void count(int kind, uint64_t ticks)
{
	/* Relaxed atomics: a program may post from several threads. */
	__atomic_fetch_add(&total[kind], ticks, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls[kind], 1, __ATOMIC_RELAXED);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (!in_post)
		return syscall(SYS_write, fd, buf, n);
	uint64_t start = now_ticks();
	ssize_t r = syscall(SYS_write, fd, buf, n);
	in_syscall += now_ticks() - start;
	return r;
}

#define REAL(f) static __typeof__(&f) real_##f; if (!real_##f) real_##f = (__typeof__(&f))dlsym(RTLD_NEXT, #f)

/* Times one post: its whole time less what it spent in write(2). */
#define TIME_POST(kind, call) do { \
	in_post = 1; \
	in_syscall = 0; \
	uint64_t start = now_ticks(); \
	DAT_RETURN rc = call; \
	uint64_t spent = now_ticks() - start; \
	in_post = 0; \
	count(kind, spent - in_syscall); \
	return rc; \
} while (0)

DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	REAL(dat_ep_post_send);
	TIME_POST(POST_SEND, real_dat_ep_post_send(ep, n, iov, cookie, flags));
}

DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	REAL(dat_ep_post_recv);
	TIME_POST(POST_RECV, real_dat_ep_post_recv(ep, n, iov, cookie, flags));
}

DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
{
	REAL(dat_ep_post_rdma_write);
	TIME_POST(POST_WRITE, real_dat_ep_post_rdma_write(ep, n, iov, cookie, remote, flags));
}

DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event)
{
	REAL(dat_evd_dequeue);
	uint64_t start = now_ticks();
	DAT_RETURN rc = real_dat_evd_dequeue(evd, event);
	count(rc == DAT_SUCCESS ? FOUND : EMPTY, now_ticks() - start);
	return rc;
}

__attribute__((destructor)) static void report(void)
{
	if (!calls[POST_SEND] && !calls[POST_RECV] && !calls[POST_WRITE] && !calls[FOUND])
		return;
	double ns_per_tick = (double)(clock_ns() - start_ns) / (double)(now_ticks() - start_ticks);
	char line[512];
	int at = snprintf(line, sizeof line, "calltime:");
	for (int k = 0; k < KINDS; k++) {
		if (calls[k])
			at += snprintf(line + at, sizeof line - at, " %s %.0f", names[k], ns_per_tick * (double)total[k] / (double)calls[k]);
		else
			at += snprintf(line + at, sizeof line - at, " %s -", names[k]);
	}
	fprintf(stderr, "%s\n", line);
}
