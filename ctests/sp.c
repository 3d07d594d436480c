/*
 * Service points: dat_psp_query, dat_rsp_create, dat_rsp_query, dat_cr_handoff,
 * dat_csp_create, dat_csp_query, dat_csp_free. For each, a garbage handle, an invalid
 * parameter on an otherwise valid call, and a success where it is cheap. The one connection
 * request (for dat_cr_handoff) comes from an EP of the same IA over loopback, is handed off to
 * a second PSP, and is rejected there; no connection is established.
 */
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define WAIT_US (10 * 1000 * 1000)

#define H(name, call, sub) expect_ret("sp/" name, (call), DAT_ERROR(DAT_INVALID_HANDLE, (sub)))

/* Qualifiers above 0xffff, as uDAPL programs use them (dapltest's 0xAffab1e, rank << 35): they
 * fold into a port as OpenFabrics folds them (qual % 32001 + 33534), so FOLD_PORTS apart share
 * one. Several are tried, in case another program holds a port. */
#define LARGE_QUAL ((DAT_CONN_QUAL)0xAffab1e)
#define FOLD_PORTS 32001

int main(void)
{
	DAT_HANDLE g = GARBAGE_HANDLE;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd, cr_evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep, client;
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL, tmp;
	DAT_CSP_HANDLE csp = DAT_HANDLE_NULL;
	DAT_CR_HANDLE cr = DAT_HANDLE_NULL;
	DAT_CONN_QUAL port = 0;
	DAT_PSP_PARAM pp;
	DAT_RSP_PARAM rp;
	DAT_CSP_PARAM cp;
	DAT_COMM comm;
	DAT_EVENT e;
	DAT_COUNT n;
	DAT_RETURN r;
	struct sockaddr_in sin;

	watchdog(60);
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "sp: cannot open %s\n", ia_name());
		return 2;
	}
	must(dat_pz_create(ia, &pz), "dat_pz_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), "dat_evd_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), "dat_evd_create");
	must(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), "dat_evd_create");
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep), "dat_ep_create");
	must(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &client), "dat_ep_create");
	must(dat_psp_create_any(ia, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
	ia_own_address(ia, &sin);

	/* dat_psp_query: "DAT_INVALID_HANDLE: The psp_handle parameter is invalid." */
	H("psp_query-garbage", dat_psp_query(g, DAT_PSP_FIELD_ALL, &pp), DAT_INVALID_HANDLE_PSP);
	H("psp_query-null", dat_psp_query(DAT_HANDLE_NULL, DAT_PSP_FIELD_ALL, &pp), DAT_INVALID_HANDLE_PSP);
	/* "DAT_INVALID_PARAMETER: The psp_param_mask parameter is invalid." */
	expect_type("sp/psp_query-unknown-mask-bits", dat_psp_query(psp, 0x100000, &pp), DAT_INVALID_PARAMETER);
	memset(&pp, 0, sizeof(pp));
	expect_ret("sp/psp_query", dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
	expect_true("sp/psp_query-values", pp.ia_handle == ia && pp.conn_qual == port && pp.evd_handle == cr_evd &&
		    pp.psp_flags == DAT_PSP_CONSUMER_FLAG, "the IA, the port, the CR EVD, DAT_PSP_CONSUMER_FLAG");

	/* dat_rsp_create: "DAT_INVALID_HANDLE: The ia_handle, evd_handle, or ep_handle parameter
	 * is invalid." */
	H("rsp_create-garbage-ia", dat_rsp_create(g, port, ep, cr_evd, &tmp), DAT_INVALID_HANDLE_IA);
	H("rsp_create-garbage-ep", dat_rsp_create(ia, port, g, cr_evd, &tmp), DAT_INVALID_HANDLE_EP);
	H("rsp_create-garbage-evd", dat_rsp_create(ia, port, ep, g, &tmp), DAT_INVALID_HANDLE_EVD_CR);
	/* "DAT_INVALID_PARAMETER: The conn_qual parameter is invalid.": no qualifier is, here. The
	 * page leaves the valid ones to the provider, and OpenFabrics takes every 64-bit value
	 * (dapltest's limit tests listen on 0xAffab1e + n): compatibility decides. A large
	 * qualifier listens; one that folds into the same port is "in use". */
	{
		DAT_CONN_QUAL q = 0;
		DAT_PSP_HANDLE big = DAT_HANDLE_NULL, clash = DAT_HANDLE_NULL;
		r = DAT_CONN_QUAL_IN_USE;
		for (int i = 0; i < 16 && DAT_GET_TYPE(r) == DAT_CONN_QUAL_IN_USE; i++) {
			q = LARGE_QUAL + (DAT_CONN_QUAL)i * 7919;
			r = dat_psp_create(ia, q, cr_evd, DAT_PSP_CONSUMER_FLAG, &big);
		}
		expect_ret("sp/psp_create-large-qual", r, DAT_SUCCESS);
		memset(&pp, 0, sizeof(pp));
		if (r == DAT_SUCCESS)
			dat_psp_query(big, DAT_PSP_FIELD_ALL, &pp);
		expect_true("sp/psp_query-large-qual", r == DAT_SUCCESS && pp.conn_qual == q, "the whole qualifier");
		expect_type("sp/psp_create-folded-qual-in-use",
			    dat_psp_create(ia, q + FOLD_PORTS, cr_evd, DAT_PSP_CONSUMER_FLAG, &clash), DAT_CONN_QUAL_IN_USE);
		expect_type("sp/rsp_create-folded-qual-in-use", dat_rsp_create(ia, q + FOLD_PORTS, ep, cr_evd, &tmp),
			    DAT_CONN_QUAL_IN_USE);
		if (r == DAT_SUCCESS)
			dat_psp_free(big);
		tmp = DAT_HANDLE_NULL;
		r = DAT_CONN_QUAL_IN_USE;
		for (int i = 0; i < 16 && DAT_GET_TYPE(r) == DAT_CONN_QUAL_IN_USE; i++)
			r = dat_rsp_create(ia, ((DAT_CONN_QUAL)(i + 3) << 35) + 1, ep, cr_evd, &tmp);
		expect_ret("sp/rsp_create-large-qual", r, DAT_SUCCESS);
		if (r == DAT_SUCCESS)
			dat_rsp_free(tmp);
		tmp = DAT_HANDLE_NULL;
	}
	expect_type("sp/rsp_create-null-out", dat_rsp_create(ia, port, ep, cr_evd, NULL), DAT_INVALID_PARAMETER);
	/* "DAT_CONN_QUAL_IN_USE: Specified Connection Qualifier is in use." (the PSP's port) */
	expect_type("sp/rsp_create-conn-qual-in-use", dat_rsp_create(ia, port, ep, cr_evd, &tmp), DAT_CONN_QUAL_IN_USE);
	expect_state("sp/rsp_create-failed-calls-leave-unconnected", ep, DAT_EP_STATE_UNCONNECTED);
	/* The PSP's port, freed, for the RSP (the client below connects to a new PSP). */
	dat_psp_free(psp);
	expect_ret("sp/rsp_create", dat_rsp_create(ia, port, ep, cr_evd, &rsp), DAT_SUCCESS);
	/* "The Local Endpoint is transitioned from Reserved to Passive Connection Pending". */
	expect_state("sp/rsp_create-ep-reserved", ep, DAT_EP_STATE_RESERVED);
	/* "DAT_INVALID_STATE: ... an Endpoint was not in the Idle state." (now RESERVED) */
	expect_type("sp/rsp_create-ep-not-idle", dat_rsp_create(ia, 0, ep, cr_evd, &tmp), DAT_INVALID_STATE);

	/* dat_rsp_query: "DAT_INVALID_HANDLE: The rsp_handle parameter is invalid." */
	H("rsp_query-garbage", dat_rsp_query(g, DAT_RSP_FIELD_ALL, &rp), DAT_INVALID_HANDLE_RSP);
	H("rsp_query-evd-handle", dat_rsp_query(cr_evd, DAT_RSP_FIELD_ALL, &rp), DAT_INVALID_HANDLE_RSP);
	/* "DAT_INVALID_PARAMETER: The rsp_param_mask parameter is invalid." */
	if (rsp != DAT_HANDLE_NULL) {
		expect_type("sp/rsp_query-unknown-mask-bits", dat_rsp_query(rsp, 0x100000, &rp), DAT_INVALID_PARAMETER);
		memset(&rp, 0, sizeof(rp));
		expect_ret("sp/rsp_query", dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp), DAT_SUCCESS);
		expect_true("sp/rsp_query-values", rp.ia_handle == ia && rp.conn_qual == port && rp.ep_handle == ep &&
			    rp.evd_handle == cr_evd, "the IA, the port, the EP, the CR EVD");
		dat_rsp_free(rsp);
	}

	/* dat_cr_handoff: "DAT_INVALID_HANDLE: The cr_handle parameter is invalid." */
	H("cr_handoff-garbage", dat_cr_handoff(g, port), DAT_INVALID_HANDLE_CR);
	H("cr_handoff-null", dat_cr_handoff(DAT_HANDLE_NULL, port), DAT_INVALID_HANDLE_CR);
	/* "DAT_INVALID_PARAMETER: The handoff parameter is invalid.": a request to hand off,
	 * from the client EP to a fresh PSP, and qualifier 0, which names no service point (a PSP
	 * created with it listens on any port; every other 64-bit value can be one). */
	port = 0;
	must(dat_psp_create_any(ia, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create_any");
	must(dat_ep_connect(client, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
			    DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
	memset(&e, 0, sizeof(e));
	if (dat_evd_wait(cr_evd, WAIT_US, 1, &e, &n) == DAT_SUCCESS && e.event_number == DAT_CONNECTION_REQUEST_EVENT)
		cr = e.event_data.cr_arrival_event_data.cr_handle;
	expect_true("sp/cr_handoff-request-arrives", cr != DAT_HANDLE_NULL, "a DAT_CONNECTION_REQUEST_EVENT");
	if (cr != DAT_HANDLE_NULL) {
		DAT_PSP_HANDLE other = DAT_HANDLE_NULL;
		DAT_CONN_QUAL other_port = 0;
		DAT_CR_PARAM crp;
		expect_type("sp/cr_handoff-conn-qual-zero", dat_cr_handoff(cr, 0), DAT_INVALID_PARAMETER);
		/* "hands off the Connection Request to another Service Point specified by the
		 * Connection Qualifier handoff" ... "This operation also destroys the Connection Request
		 * instance": a new request event at the other PSP, the old CR gone. */
		must(dat_psp_create_any(ia, &other_port, cr_evd, DAT_PSP_CONSUMER_FLAG, &other), "dat_psp_create_any");
		expect_ret("sp/cr_handoff", dat_cr_handoff(cr, other_port), DAT_SUCCESS);
		expect_type("sp/cr_handoff-destroys-cr", dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_INVALID_HANDLE);
		memset(&e, 0, sizeof(e));
		cr = DAT_HANDLE_NULL;
		if (dat_evd_wait(cr_evd, WAIT_US, 1, &e, &n) == DAT_SUCCESS && e.event_number == DAT_CONNECTION_REQUEST_EVENT)
			cr = e.event_data.cr_arrival_event_data.cr_handle;
		expect_true("sp/cr_handoff-arrives-at-other-sp",
			    cr != DAT_HANDLE_NULL && e.event_data.cr_arrival_event_data.sp_handle.psp_handle == other &&
				    e.event_data.cr_arrival_event_data.conn_qual == other_port,
			    "a DAT_CONNECTION_REQUEST_EVENT of the other PSP, with its qualifier");
		dat_psp_free(other);
		/* A qualifier nobody listens on (the other PSP's, freed) names no service point. */
		if (cr != DAT_HANDLE_NULL)
			expect_type("sp/cr_handoff-conn-qual-unused", dat_cr_handoff(cr, other_port), DAT_INVALID_PARAMETER);
		dat_cr_reject(cr, 0, NULL);
		/* The client learns of the rejection; the EP is freed after. */
		dat_evd_wait(conn_evd, WAIT_US, 1, &e, &n);
	}
	dat_psp_free(psp);

	/* dat_csp_create, dat_csp_query, dat_csp_free (DAT 2.0, no man page): handles as for the
	 * other service points; a CR EVD as for dat_psp_create. */
	comm.domain = AF_INET;
	comm.type = SOCK_STREAM;
	comm.protocol = 0;
	H("csp_create-garbage-ia", dat_csp_create(g, &comm, (DAT_IA_ADDRESS_PTR)&sin, cr_evd, &csp),
	  DAT_INVALID_HANDLE_IA);
	H("csp_create-garbage-evd", dat_csp_create(ia, &comm, (DAT_IA_ADDRESS_PTR)&sin, g, &csp),
	  DAT_INVALID_HANDLE_EVD_CR);
	expect_type("sp/csp_create-null-comm", dat_csp_create(ia, NULL, (DAT_IA_ADDRESS_PTR)&sin, cr_evd, &csp),
		    DAT_INVALID_PARAMETER);
	expect_type("sp/csp_create-null-out", dat_csp_create(ia, &comm, (DAT_IA_ADDRESS_PTR)&sin, cr_evd, NULL),
		    DAT_INVALID_PARAMETER);
	H("csp_query-garbage", dat_csp_query(g, DAT_CSP_FIELD_ALL, &cp), DAT_INVALID_HANDLE_CSP);
	H("csp_query-evd-handle", dat_csp_query(cr_evd, DAT_CSP_FIELD_ALL, &cp), DAT_INVALID_HANDLE_CSP);
	H("csp_free-garbage", dat_csp_free(g), DAT_INVALID_HANDLE_CSP);
	H("csp_free-null", dat_csp_free(DAT_HANDLE_NULL), DAT_INVALID_HANDLE_CSP);
	/* A CSP at the IA's address, on the port the PSP above held (free again). The cases below
	 * need one, so they run only where dat_csp_create makes it (OpenFabrics has none). */
	csp = DAT_HANDLE_NULL;
	sin.sin_port = htons((unsigned short)port);
	r = exported("dat_csp_create") ? dat_csp_create(ia, &comm, (DAT_IA_ADDRESS_PTR)&sin, cr_evd, &csp)
				       : DAT_NOT_IMPLEMENTED;
	if (r == DAT_SUCCESS) {
		memset(&cp, 0, sizeof(cp));
		expect_ret("sp/csp_query", dat_csp_query(csp, DAT_CSP_FIELD_ALL, &cp), DAT_SUCCESS);
		expect_true("sp/csp_query-values",
			    cp.ia_handle == ia && cp.evd_handle == cr_evd && cp.comm && cp.comm->domain == AF_INET &&
				    cp.comm->type == SOCK_STREAM && cp.address_ptr &&
				    ((struct sockaddr_in *)cp.address_ptr)->sin_port == sin.sin_port,
			    "the IA, the communicator, the address and its port, the CR EVD");
		/* dat_ep_common_connect: a connect to the CSP named by the remote address (and its
		 * port) arrives as a request of the CSP; rejected, the requester is PEER_REJECTED. */
		dat_ep_reset(client);
		expect_ret("sp/ep_common_connect", dat_ep_common_connect(client, (DAT_IA_ADDRESS_PTR)&sin, WAIT_US, 0, NULL),
			   DAT_SUCCESS);
		memset(&e, 0, sizeof(e));
		cr = DAT_HANDLE_NULL;
		if (dat_evd_wait(cr_evd, WAIT_US, 1, &e, &n) == DAT_SUCCESS && e.event_number == DAT_CONNECTION_REQUEST_EVENT)
			cr = e.event_data.cr_arrival_event_data.cr_handle;
		expect_true("sp/ep_common_connect-arrives-at-csp",
			    cr != DAT_HANDLE_NULL && e.event_data.cr_arrival_event_data.sp_handle.csp_handle == csp,
			    "a DAT_CONNECTION_REQUEST_EVENT of the CSP");
		if (cr != DAT_HANDLE_NULL) {
			dat_cr_reject(cr, 0, NULL);
			memset(&e, 0, sizeof(e));
			dat_evd_wait(conn_evd, WAIT_US, 1, &e, &n);
			expect_event("sp/ep_common_connect-rejected", e.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
		}
		expect_type("sp/csp_query-unknown-mask-bits", dat_csp_query(csp, 0x100000, &cp), DAT_INVALID_PARAMETER);
		expect_type("sp/csp_query-null-param", dat_csp_query(csp, DAT_CSP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
		expect_ret("sp/csp_free", dat_csp_free(csp), DAT_SUCCESS);
		H("csp_free-freed", dat_csp_free(csp), DAT_INVALID_HANDLE_CSP);
	} else {
		char b[160];
		fprintf(stderr, "sp: dat_csp_create returned %s: no CSP, csp_query/csp_free parameter cases not run\n",
			render(r, b, sizeof(b)));
	}

	dat_ep_free(client);
	dat_ep_free(ep);
	dat_evd_free(cr_evd);
	dat_evd_free(conn_evd);
	dat_evd_free(dto_evd);
	dat_pz_free(pz);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
