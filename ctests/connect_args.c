/*
 * dat_ep_connect's and dat_cr_accept's invalid arguments: every error their man pages name for
 * a handle, an address, private data, flags or a QoS, and that a failed call leaves the EP as
 * it was. A process of their own: a library that crashes in one of them (reading through a
 * garbage handle, or copying a negative size) may leave a lock held or resources behind, and
 * then no case of the connection flow in connect.c is lost.
 */
#include "side.h"

static int bad_connects_left_unconnected = 1;

/* One case of an invalid dat_ep_connect, on an EP of its own: a library that goes on with the
 * call then disturbs no other case. The EP must stay UNCONNECTED. */
static void bad_connect(struct side *s, const char *name, DAT_RETURN type, struct sockaddr_in *addr,
			DAT_CONN_QUAL port, DAT_COUNT pd_size, const char *pd, DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	DAT_EP_HANDLE ep;
	DAT_EP_STATE state = DAT_EP_STATE_UNCONNECTED;
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, NULL, &ep), "dat_ep_create");
	expect_type(name, dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)addr, port, WAIT_US, pd_size, (DAT_PVOID)pd, qos, flags),
		    type);
	dat_ep_get_status(ep, &state, NULL, NULL);
	if (state != DAT_EP_STATE_UNCONNECTED)
		bad_connects_left_unconnected = 0;
	dat_ep_free(ep);
}

static void ep_connect_invalid_cases(void)
{
	struct side a, p;
	struct sockaddr_in sin;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_CR_HANDLE cr;
	char big[512];

	memset(big, 'x', sizeof(big));
	open_side(&a);
	open_side(&p);
	ia_own_address(p.ia, &sin);
	port = listen_any(&p, &psp);

	/* "DAT_INVALID_HANDLE: Invalid Endpoint handle." */
	expect_ret("ep_connect/null-ep", dat_ep_connect(NULL, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 0, NULL,
							 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	expect_ret("ep_connect/garbage-ep", dat_ep_connect(GARBAGE_HANDLE, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 0,
							    NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	/* dat_cr_accept's invalid arguments, on a request of their own, rejected after. */
	connect_to(&a, port, NULL, WAIT_US);
	cr = next(p.cr_evd).event_data.cr_arrival_event_data.cr_handle;
	/* "DAT_INVALID_HANDLE: The cr_handle or ep_handle parameter is invalid." */
	expect_ret("cr_accept/null-cr", dat_cr_accept(NULL, p.ep, 0, NULL),
		   DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR));
	expect_type("cr_accept/garbage-ep", dat_cr_accept(cr, GARBAGE_HANDLE, 0, NULL), DAT_INVALID_HANDLE);
	/* "DAT_INVALID_PARAMETER: The private_data_size or private_data parameter is invalid":
	 * more than dat_ia_query advertises, or negative. */
	expect_type("cr_accept/private-data-too-long", dat_cr_accept(cr, p.ep, p.max_pd + 1, big),
		    DAT_INVALID_PARAMETER);
	expect_type("cr_accept/negative-private-data-size", dat_cr_accept(cr, p.ep, -1, big),
		    DAT_INVALID_PARAMETER);
	dat_cr_reject(cr, 0, NULL);
	/* "DAT_INVALID_ADDRESS: Invalid address." */
	bad_connect(&a, "ep_connect/null-address", DAT_INVALID_ADDRESS, NULL, port, 0, NULL, DAT_QOS_BEST_EFFORT,
		    DAT_CONNECT_DEFAULT_FLAG);
	/* "DAT_INVALID_PARAMETER": private data beyond what dat_ia_query advertises. */
	bad_connect(&a, "ep_connect/private-data-too-long", DAT_INVALID_PARAMETER, &sin, port, a.max_pd + 1, big,
		    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	/* "DAT_INVALID_PARAMETER": a negative private data size, or a size with no data. */
	bad_connect(&a, "ep_connect/negative-private-data-size", DAT_INVALID_PARAMETER, &sin, port, -1, big,
		    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	bad_connect(&a, "ep_connect/private-data-null-with-size", DAT_INVALID_PARAMETER, &sin, port, 4, NULL,
		    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	/* An unknown connect flag value is an invalid parameter. */
	bad_connect(&a, "ep_connect/unknown-connect-flags", DAT_INVALID_PARAMETER, &sin, port, 0, NULL,
		    DAT_QOS_BEST_EFFORT, (DAT_CONNECT_FLAGS)0x40);
	/* "DAT_MODEL_NOT_SUPPORTED: the requested qos was not supported": a QoS we know but do
	 * not provide. */
	bad_connect(&a, "ep_connect/unsupported-qos", DAT_MODEL_NOT_SUPPORTED, &sin, port, 0, NULL, DAT_QOS_PREMIUM,
		    DAT_CONNECT_DEFAULT_FLAG);
	/* A call that fails leaves its EP as it was. */
	expect_true("ep_connect/failed-calls-leave-unconnected", bad_connects_left_unconnected,
		    "each EP still DAT_EP_STATE_UNCONNECTED");
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

int main(void)
{
	watchdog(60);
	ep_connect_invalid_cases();
	return check_failures ? 1 : 0;
}
