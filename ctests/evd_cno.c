/*
 * CNOs and the EVD calls that tie them: dat_cno_create, dat_cno_fd_create,
 * dat_cno_modify_agent, dat_cno_query, dat_cno_trigger, dat_cno_wait, dat_evd_modify_cno,
 * dat_evd_set_unwaitable, dat_evd_clear_unwaitable. For each, a garbage handle, an invalid
 * parameter (or, where the function takes nothing but its handle, the state it sets), and a
 * success. Software events stand in for completions; nothing waits longer than 1 ms.
 */
#include "check.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define H(name, call, sub) expect_ret("evd_cno/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))
#define T(name, call) expect_type("evd_cno/" name, (call), DAT_INVALID_HANDLE)

/* What the proxy agent was called with. */
static int agent_calls;
static DAT_PVOID agent_data;
static DAT_EVD_HANDLE agent_evd;

static void agent_func(DAT_PVOID data, DAT_EVD_HANDLE evd)
{
	agent_calls++;
	agent_data = data;
	agent_evd = evd;
}

/* A thread blocked in dat_cno_wait, for dat_cno_free's rule about it. */
struct cno_waiter {
	DAT_CNO_HANDLE cno;
	DAT_EVD_HANDLE woken_by;
	DAT_RETURN ret;
	volatile pid_t tid;
};

static void *cno_waiter_main(void *arg)
{
	struct cno_waiter *w = arg;
	w->tid = (pid_t)syscall(SYS_gettid);
	w->ret = dat_cno_wait(w->cno, 20 * 1000 * 1000, &w->woken_by);
	return NULL;
}

/* Whether thread tid sleeps in ppoll (where dat_cno_wait blocks) within 10 s. */
static int asleep_in_ppoll(pid_t tid)
{
	char path[64];
	struct timespec pause = { 0, 1000 * 1000 };
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (int i = 0; i < 10000; i++) {
		long nr = -1;
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_ppoll)
			return 1;
		nanosleep(&pause, NULL);
	}
	return 0;
}

static DAT_RETURN post_se(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	memset(&e, 0, sizeof(e));
	e.event_number = DAT_SOFTWARE_EVENT;
	e.event_data.software_event_data.pointer = NULL;
	return dat_evd_post_se(evd, &e);
}

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd, se_evd, got;
	DAT_CNO_HANDLE cno = DAT_HANDLE_NULL, fd_cno = DAT_HANDLE_NULL, tmp;
	DAT_OS_WAIT_PROXY_AGENT agent;
	DAT_CNO_PARAM cp;
	DAT_EVD_PARAM ep;
	DAT_EVENT ev;
	DAT_COUNT n;
	DAT_FD fd = -1;
	static int instance;

	watchdog(60);
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "evd_cno: cannot open %s\n", ia_name());
		return 2;
	}

	/* dat_cno_create: "DAT_INVALID_HANDLE: The ia_handle parameter is invalid." */
	H("cno_create-garbage-ia", dat_cno_create(g, DAT_OS_WAIT_PROXY_AGENT_NULL, &tmp), DAT_INVALID_HANDLE_IA);
	/* "DAT_INVALID_PARAMETER: One of the parameters was invalid": no place for the handle. */
	expect_type("evd_cno/cno_create-null-out", dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL),
		    DAT_INVALID_PARAMETER);
	expect_ret("evd_cno/cno_create", dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
	if (cno == DAT_HANDLE_NULL)
		must(DAT_ERROR(DAT_INTERNAL_ERROR, 0), "dat_cno_create");

	/* dat_cno_fd_create (DAT 2.0, no man page): as dat_cno_create, with the fd out. */
	H("cno_fd_create-garbage-ia", dat_cno_fd_create(g, &fd, &tmp), DAT_INVALID_HANDLE_IA);
	expect_type("evd_cno/cno_fd_create-null-fd", dat_cno_fd_create(ia, NULL, &tmp), DAT_INVALID_PARAMETER);
	expect_type("evd_cno/cno_fd_create-null-out", dat_cno_fd_create(ia, &fd, NULL), DAT_INVALID_PARAMETER);
	fd = -1;
	expect_ret("evd_cno/cno_fd_create", dat_cno_fd_create(ia, &fd, &fd_cno), DAT_SUCCESS);
	expect_true("evd_cno/cno_fd_create-fd", fd >= 0, "a file descriptor");

	/* dat_cno_query: "DAT_INVALID_HANDLE: The cno_handle parameter is invalid." */
	H("cno_query-garbage", dat_cno_query(g, DAT_CNO_FIELD_ALL, &cp), DAT_INVALID_HANDLE_CNO);
	/* "DAT_INVALID_PARAMETER: The cno_param_mask parameter is invalid." */
	expect_type("evd_cno/cno_query-unknown-mask-bits", dat_cno_query(cno, 0x100000, &cp), DAT_INVALID_PARAMETER);
	memset(&cp, 0, sizeof(cp));
	expect_ret("evd_cno/cno_query", dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp), DAT_SUCCESS);
	/* "A value of DAT_OS_WAIT_PROXY_AGENT_NULL in cno_param indicates that there are no Proxy
	 * Agent associated with the CNO." */
	expect_true("evd_cno/cno_query-no-agent", cp.ia_handle == ia && cp.proxy.agent.proxy_agent_func == NULL,
		    "the IA, and no proxy agent");

	/* dat_cno_modify_agent: "DAT_INVALID_HANDLE: The cno_handle parameter is invalid." */
	H("cno_modify_agent-garbage", dat_cno_modify_agent(g, DAT_OS_WAIT_PROXY_AGENT_NULL), DAT_INVALID_HANDLE_CNO);
	/* "DAT_INVALID_PARAMETER: ... or the agent parameter is invalid": the man page defines no
	 * invalid agent (OpenFabrics stores any), so no case; the agent round-trips instead. */
	agent.instance_data = &instance;
	agent.proxy_agent_func = agent_func;
	expect_ret("evd_cno/cno_modify_agent", dat_cno_modify_agent(cno, agent), DAT_SUCCESS);
	memset(&cp, 0, sizeof(cp));
	dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp);
	expect_true("evd_cno/cno_modify_agent-queried", cp.proxy.agent.proxy_agent_func == agent_func &&
		    cp.proxy.agent.instance_data == &instance, "dat_cno_query returns the new agent");
	expect_ret("evd_cno/cno_modify_agent-null", dat_cno_modify_agent(cno, DAT_OS_WAIT_PROXY_AGENT_NULL),
		   DAT_SUCCESS);

	/* dat_cno_wait: "DAT_INVALID_HANDLE: The cno_handle parameter is invalid." */
	H("cno_wait-garbage", dat_cno_wait(g, 1000, &got), DAT_INVALID_HANDLE_CNO);
	/* "DAT_INVALID_PARAMETER: One of the parameters was invalid or out of range": no place
	 * for the EVD. */
	expect_type("evd_cno/cno_wait-null-out", dat_cno_wait(cno, 1000, NULL), DAT_INVALID_PARAMETER);
	/* "DAT_QUEUE_EMPTY: The operation timed out without a notification." and "On a timeout,
	 * evd_handle is explicitly set to a null handle." */
	got = g;
	expect_type("evd_cno/cno_wait-timeout", dat_cno_wait(cno, 1000, &got), DAT_QUEUE_EMPTY);
	expect_true("evd_cno/cno_wait-timeout-null-evd", got == DAT_HANDLE_NULL, "evd_handle set to DAT_HANDLE_NULL");

	/* dat_evd_modify_cno: "DAT_INVALID_HANDLE: Invalid DAT handle." for either handle. */
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &se_evd), "dat_evd_create");
	T("evd_modify_cno-garbage-evd", dat_evd_modify_cno(g, cno));
	H("evd_modify_cno-garbage-cno", dat_evd_modify_cno(se_evd, g), DAT_INVALID_HANDLE_CNO);
	expect_ret("evd_cno/evd_modify_cno", dat_evd_modify_cno(se_evd, cno), DAT_SUCCESS);
	memset(&ep, 0, sizeof(ep));
	dat_evd_query(se_evd, DAT_EVD_FIELD_ALL, &ep);
	expect_true("evd_cno/evd_modify_cno-queried", ep.cno_handle == cno, "dat_evd_query returns the new CNO");

	/* An event on the EVD notifies the CNO: dat_cno_wait returns that EVD. */
	post_se(se_evd);
	got = DAT_HANDLE_NULL;
	expect_ret("evd_cno/cno_wait-notified", dat_cno_wait(cno, 1000000, &got), DAT_SUCCESS);
	expect_true("evd_cno/cno_wait-names-evd", got == se_evd, "the EVD that notified");
	dat_evd_dequeue(se_evd, &ev);

	/* dat_cno_create: the agent "is invoked when the CNO is triggered. After it is invoked,
	 * it is no longer associated with the CNO"; dat_cno_modify_agent: "any trigger received
	 * by the CNO is also passed to the OS Wait Proxy Agent". So one trigger calls it with its
	 * instance data and the EVD; the next one does not. */
	agent.instance_data = &instance;
	agent.proxy_agent_func = agent_func;
	dat_cno_modify_agent(cno, agent);
	agent_calls = 0;
	post_se(se_evd);
	dat_cno_wait(cno, 1000000, &got);
	dat_evd_dequeue(se_evd, &ev);
	expect_true("evd_cno/cno_agent-invoked", agent_calls == 1 && agent_data == &instance && agent_evd == se_evd,
		    "the agent called once, with its instance data and the EVD");
	memset(&cp, 0, sizeof(cp));
	dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp);
	post_se(se_evd);
	dat_cno_wait(cno, 1000000, &got);
	dat_evd_dequeue(se_evd, &ev);
	expect_true("evd_cno/cno_agent-once", agent_calls == 1 && cp.proxy.agent.proxy_agent_func == NULL,
		    "no longer associated after it was invoked");

	/* dat_cno_trigger (DAT 2.0, no man page): the handle and the out-pointer. */
	H("cno_trigger-garbage", dat_cno_trigger(g, &got), DAT_INVALID_HANDLE_CNO);
	expect_type("evd_cno/cno_trigger-null-out", dat_cno_trigger(fd_cno, NULL), DAT_INVALID_PARAMETER);
	expect_ret("evd_cno/evd_modify_cno-to-fd-cno", dat_evd_modify_cno(se_evd, fd_cno), DAT_SUCCESS);
	post_se(se_evd);
	got = DAT_HANDLE_NULL;
	expect_ret("evd_cno/cno_trigger", dat_cno_trigger(fd_cno, &got), DAT_SUCCESS);
	dat_evd_dequeue(se_evd, &ev);
	/* Two EVDs trigger the fd CNO: its descriptor stays readable until both were taken (a
	 * program that sleeps in poll() on it would otherwise sleep with a trigger pending). */
	{
		DAT_EVD_HANDLE second;
		struct pollfd pfd;
		int first_left, second_left;
		must(dat_evd_create(ia, 8, fd_cno, DAT_EVD_SOFTWARE_FLAG, &second), "dat_evd_create");
		post_se(se_evd);
		post_se(second);
		dat_cno_trigger(fd_cno, &got);
		pfd.fd = fd;
		pfd.events = POLLIN;
		first_left = poll(&pfd, 1, 0) == 1;
		dat_cno_trigger(fd_cno, &got);
		second_left = poll(&pfd, 1, 0) == 1;
		expect_true("evd_cno/cno_fd-readable-while-triggers-wait", first_left && !second_left,
			    "readable after the first trigger is taken, quiet after the second");
		dat_evd_dequeue(se_evd, &ev);
		dat_evd_dequeue(second, &ev);
		dat_evd_free(second);
	}
	/* "A Consumer can specify the value of DAT_HANDLE_NULL for cno_handle". */
	expect_ret("evd_cno/evd_modify_cno-null", dat_evd_modify_cno(se_evd, DAT_HANDLE_NULL), DAT_SUCCESS);

	/* dat_evd_set_unwaitable: "DAT_INVALID_HANDLE: The evd_handle parameter is invalid." It
	 * takes nothing else; the state it sets is checked instead: "calls to dat_evd_wait(3DAT)
	 * return synchronously with a DAT_INVALID_STATE error", and dat_evd_query reports
	 * DAT_EVD_UNWAITABLE. */
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd), "dat_evd_create");
	T("evd_set_unwaitable-garbage", dat_evd_set_unwaitable(g));
	T("evd_set_unwaitable-cno-handle", dat_evd_set_unwaitable(cno));
	expect_ret("evd_cno/evd_set_unwaitable", dat_evd_set_unwaitable(evd), DAT_SUCCESS);
	expect_type("evd_cno/evd_wait-unwaitable", dat_evd_wait(evd, 1000, 1, &ev, &n), DAT_INVALID_STATE);
	memset(&ep, 0, sizeof(ep));
	dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep);
	expect_true("evd_cno/evd_set_unwaitable-queried", (ep.evd_state & DAT_EVD_STATE_UNWAITABLE) != 0,
		    "evd_state DAT_EVD_STATE_UNWAITABLE");
	/* "Events arriving on the EVD after it is set unwaitable ... can be retrieved with
	 * dat_evd_dequeue(3DAT)." */
	post_se(se_evd);
	expect_ret("evd_cno/evd_set_unwaitable-dequeue", dat_evd_dequeue(se_evd, &ev), DAT_SUCCESS);

	/* dat_evd_clear_unwaitable: "DAT_INVALID_HANDLE: The evd_handle parameter is invalid."
	 * Afterwards dat_evd_wait is permitted again: on an empty EVD it times out. */
	T("evd_clear_unwaitable-garbage", dat_evd_clear_unwaitable(g));
	T("evd_clear_unwaitable-cno-handle", dat_evd_clear_unwaitable(cno));
	expect_ret("evd_cno/evd_clear_unwaitable", dat_evd_clear_unwaitable(evd), DAT_SUCCESS);
	expect_type("evd_cno/evd_wait-waitable-again", dat_evd_wait(evd, 1000, 1, &ev, &n), DAT_TIMEOUT_EXPIRED);
	memset(&ep, 0, sizeof(ep));
	dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep);
	expect_true("evd_cno/evd_clear_unwaitable-queried", (ep.evd_state & DAT_EVD_STATE_UNWAITABLE) == 0,
		    "evd_state not DAT_EVD_STATE_UNWAITABLE");

	dat_evd_free(evd);
	dat_evd_free(se_evd);

	/* dat_cno_free: "A CNO cannot be deleted while it is referenced by an Event Dispatcher or
	 * while a thread is blocked on it." ... "DAT_INVALID_STATE: ... there is a thread blocked
	 * on it." Then the page's way to unblock the waiter: a temporary EVD attached to the CNO,
	 * a software event posted on it. */
	{
		struct cno_waiter w = { .cno = cno, .woken_by = DAT_HANDLE_NULL, .ret = DAT_SUCCESS, .tid = 0 };
		pthread_t thread;
		DAT_EVD_HANDLE temporary;
		DAT_EVENT taken;
		must(pthread_create(&thread, NULL, cno_waiter_main, &w) == 0 ? DAT_SUCCESS : DAT_INTERNAL_ERROR,
		     "pthread_create");
		while (!w.tid)
			sched_yield();
		if (asleep_in_ppoll(w.tid))
			expect_type("evd_cno/cno_free-thread-blocked", dat_cno_free(cno), DAT_INVALID_STATE);
		else
			expect_true("evd_cno/cno_free-thread-blocked", 0, "the waiter asleep in dat_cno_wait within 10 s");
		if (dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &temporary) != DAT_SUCCESS)
			temporary = DAT_HANDLE_NULL; /* the CNO is gone: the waiter ends by itself */
		else
			post_se(temporary);
		pthread_join(thread, NULL);
		expect_true("evd_cno/cno_wait-unblocked-by-software-event",
			    temporary != DAT_HANDLE_NULL && w.ret == DAT_SUCCESS && w.woken_by == temporary,
			    "dat_cno_wait returns DAT_SUCCESS with the temporary EVD");
		if (temporary != DAT_HANDLE_NULL) {
			dat_evd_dequeue(temporary, &taken);
			dat_evd_free(temporary);
		}
	}
	expect_ret("evd_cno/cno_free", dat_cno_free(cno), DAT_SUCCESS);
	expect_ret("evd_cno/cno_free-fd", dat_cno_free(fd_cno), DAT_SUCCESS);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
