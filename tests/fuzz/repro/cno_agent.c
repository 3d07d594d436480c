/*
 * Seen in every api_fuzz run ("agent calls 0"): a CNO's OS Wait Proxy Agent is never invoked.
 * dat_cno_modify_agent(3): "If non-null, any trigger received by the CNO is also passed to the
 * OS Wait Proxy Agent. This is in addition to any local delivery through the CNO."
 * (dat_cno_create(3): the agent "is invoked when the CNO is triggered".) Here an event posted to
 * an EVD feeding the CNO triggers it, dat_cno_wait returns that EVD, and the agent has not been
 * called. The library keeps the agent (dat_cno_query returns it) but nothing calls it.
 *
 * build: gcc -I include tests/fuzz/repro/cno_agent.c -L LIBDIR -l:libdat2.so.2
 * run:   DAT_OVERRIDE=/dev/null LD_LIBRARY_PATH=LIBDIR ./a.out     (exit 1: agent not called)
 */
#include <dat2/udat.h>
#include <stdio.h>

static int calls;

static void agent(DAT_PVOID instance, DAT_EVD_HANDLE evd)
{
	(void)instance;
	(void)evd;
	calls++;
}

int main(void)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd, woken = DAT_HANDLE_NULL;
	DAT_CNO_HANDLE cno;
	DAT_EVENT ev = { 0 };
	DAT_OS_WAIT_PROXY_AGENT a = { NULL, agent };
	if (dat_ia_open("tcp-lo", 8, &async_evd, &ia) != DAT_SUCCESS || dat_cno_create(ia, a, &cno) != DAT_SUCCESS ||
	    dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd) != DAT_SUCCESS)
		return 2;
	ev.event_number = DAT_SOFTWARE_EVENT;
	if (dat_evd_post_se(evd, &ev) != DAT_SUCCESS || dat_cno_wait(cno, 1000000, &woken) != DAT_SUCCESS)
		return 2;
	printf("the CNO was triggered by EVD %p (posted to %p); its agent was called %d times\n", woken, evd, calls);
	return calls ? 0 : 1;
}
