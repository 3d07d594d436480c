/*
 * dat_ep_connect(3DAT), sentence by sentence, beyond what connect.c and connect_args.c check.
 * Covered there already (not repeated here):
 *   "Upon successful completion of this operation, the local Endpoint is transferred into
 *    DAT_EP_STATE_ACTIVE_CONNECTION_PENDING": connect.c ep_connect/success,
 *    ep_connect/active-connection-pending.
 *   "The Consumer-provided private_data is passed to the remote side": connect.c
 *    ep_connect/private-data-arrives.
 *   "The acceptance ... DAT_CONNECTION_EVENT_ESTABLISHED ... DAT_EP_STATE_CONNECTED":
 *    connect.c ep_connect/active-established, ep_connect/connected.
 *   "The rejection ... DAT_CONNECTION_EVENT_PEER_REJECTED ... DAT_EP_STATE_DISCONNECTED":
 *    connect.c ep_connect/peer-rejected, ep_connect/rejected-is-disconnected.
 *   NON_PEER_REJECTED when nobody listens: connect.c ep_connect/nobody-listening (its state:
 *    here).
 *   "When the timeout expired ... DAT_CONNECTION_EVENT_TIMED_OUT": connect.c
 *    ep_connect/timed-out, ep_connect/timed-out-is-disconnected.
 *   DAT_INVALID_STATE: connect.c ep_connect/while-pending, ep_connect/connected-ep.
 *   DAT_INVALID_HANDLE, DAT_INVALID_ADDRESS (NULL), DAT_INVALID_PARAMETER (private data),
 *    DAT_MODEL_NOT_SUPPORTED (DAT_QOS_PREMIUM), a failed call leaves the EP UNCONNECTED:
 *    connect_args.c.
 * Two (three) IAs of one process play the sides.
 */
#include "side.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define SHORT_US (300 * 1000)

/* The next event on `evd` within `us` microseconds (times the time scale); 0: none. */
static DAT_EVENT_NUMBER event_within(DAT_EVD_HANDLE evd, DAT_TIMEOUT us)
{
	DAT_EVENT e;
	DAT_COUNT more;
	memset(&e, 0, sizeof(e));
	if (dat_evd_wait(evd, us * time_scale(), 1, &e, &more) != DAT_SUCCESS)
		return (DAT_EVENT_NUMBER)0;
	return e.event_number;
}

/* The next connection event of `ep` on `evd` within `us` microseconds (times the time scale),
 * skipping those of other EPs sharing the EVD; 0: none. */
static DAT_EVENT_NUMBER event_of(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, DAT_TIMEOUT us)
{
	for (;;) {
		DAT_EVENT e;
		DAT_COUNT more;
		memset(&e, 0, sizeof(e));
		if (dat_evd_wait(evd, us * time_scale(), 1, &e, &more) != DAT_SUCCESS)
			return (DAT_EVENT_NUMBER)0;
		if (e.event_data.connect_event_data.ep_handle == ep)
			return e.event_number;
	}
}

static int is_failed_accept(DAT_EVENT_NUMBER n)
{
	return n == DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR || n == DAT_CONNECTION_EVENT_DISCONNECTED;
}

static DAT_RETURN connect_with(struct side *s, DAT_CONN_QUAL port, DAT_TIMEOUT timeout, DAT_QOS qos,
			       DAT_CONNECT_FLAGS flags)
{
	struct sockaddr_in sin;
	ia_own_address(s->ia, &sin);
	return dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&sin, port, timeout, 0, NULL, qos, flags);
}

/* A fresh EP for side `s` (the old one freed). */
static void fresh_ep(struct side *s, const DAT_EP_ATTR *attr)
{
	if (s->ep)
		dat_ep_free(s->ep);
	must(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, attr, &s->ep), "dat_ep_create");
}

static void argument_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	struct sockaddr_in6 six;

	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);

	/* "timeout: ... Values must be positive." (OpenFabrics: DAT_INVALID_PARAMETER, argument 4) */
	expect_ret("ep_connect/timeout-zero-is-invalid", connect_with(&a, port, 0, DAT_QOS_BEST_EFFORT, 0),
		   DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
	expect_state("ep_connect/timeout-zero-leaves-unconnected", a.ep, DAT_EP_STATE_UNCONNECTED);

	/* "If the local Provider or Transport does not support the requested qos, the operation
	 * fails and DAT_MODEL_NOT_SUPPORTED is returned synchronously": every QoS but best effort
	 * (DAT_QOS_PREMIUM: connect_args.c). */
	expect_ret("ep_connect/qos-high-throughput-not-supported",
		   connect_with(&a, port, WAIT_US, DAT_QOS_HIGH_THROUGHPUT, 0), DAT_ERROR(DAT_MODEL_NOT_SUPPORTED, 0));
	expect_ret("ep_connect/qos-low-latency-not-supported",
		   connect_with(&a, port, WAIT_US, DAT_QOS_LOW_LATENCY, 0), DAT_ERROR(DAT_MODEL_NOT_SUPPORTED, 0));
	expect_ret("ep_connect/qos-economy-not-supported", connect_with(&a, port, WAIT_US, DAT_QOS_ECONOMY, 0),
		   DAT_ERROR(DAT_MODEL_NOT_SUPPORTED, 0));
	/* "The Provider specifies which quality of service it supports ... in the Provider
	 * attributes": each QoS is refused exactly when dat_qos_supported does not list it. */
	{
		DAT_PROVIDER_ATTR pr;
		static const DAT_QOS each[] = { DAT_QOS_HIGH_THROUGHPUT, DAT_QOS_LOW_LATENCY, DAT_QOS_ECONOMY,
						DAT_QOS_PREMIUM };
		int agree = 1;
		memset(&pr, 0, sizeof(pr));
		must(dat_ia_query(a.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pr), "dat_ia_query");
		for (unsigned i = 0; i < sizeof(each) / sizeof(each[0]); i++) {
			DAT_RETURN r = connect_with(&a, port, WAIT_US, each[i], 0);
			int listed = (pr.dat_qos_supported & each[i]) != 0;
			if (r == DAT_SUCCESS)
				dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG);
			if (listed != (r == DAT_SUCCESS))
				agree = 0;
		}
		expect_true("ep_connect/qos-as-provider-attributes-say", agree,
			    "every QoS refused exactly when dat_qos_supported does not list it");
	}

	/* "If the least significant bit of DAT_MULTIPATH_FLAG is 1, the Consumer requests
	 * multipathing": no transport of ours has it, so the requested model is not supported
	 * (OpenFabrics returns the same for every flag but the default). */
	expect_ret("ep_connect/multipath-not-supported",
		   connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, DAT_CONNECT_MULTIPATH_FLAG),
		   DAT_ERROR(DAT_MODEL_NOT_SUPPORTED, 0));
	DAT20_ONLY("ep_connect/multipath-required-not-supported", "DAT_CONNECT_MULTIPATH_REQUIRED_FLAG",
		   expect_ret("ep_connect/multipath-required-not-supported",
			      connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, DAT_CONNECT_MULTIPATH_REQUIRED_FLAG),
			      DAT_ERROR(DAT_MODEL_NOT_SUPPORTED, 0)));
	expect_state("ep_connect/unsupported-model-leaves-unconnected", a.ep, DAT_EP_STATE_UNCONNECTED);

	/* "If the Provider can locally determine that the remote_ia_address is invalid, or that
	 * the remote_ia_address cannot be converted to a Transport-specific address, the operation
	 * can fail synchronously with a DAT_INVALID_ADDRESS return": an IPv6 address (NULL:
	 * connect_args.c). */
	memset(&six, 0, sizeof(six));
	six.sin6_family = AF_INET6;
	six.sin6_addr = in6addr_loopback;
	expect_type("ep_connect/unconvertible-address",
		    dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&six, port, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT, 0),
		    DAT_INVALID_ADDRESS);

	/* "timeout: The value of DAT_TIMEOUT_INFINITE represents no timeout": the connect
	 * establishes. (That it never times out is checked where it can fail quickly, in the TCP
	 * transport's Rust tests: cm::tests::an_infinite_timeout_is_no_deadline.) */
	expect_ret("ep_connect/timeout-infinite", connect_with(&a, port, DAT_TIMEOUT_INFINITE, DAT_QOS_BEST_EFFORT, 0),
		   DAT_SUCCESS);
	{
		DAT_EVENT e = next(p.cr_evd);
		/* "If private_data_size is zero, then private_data can be NULL": the connect above
		 * passed (0, NULL), and its request arrives. */
		DAT_CR_PARAM crp;
		memset(&crp, 0, sizeof(crp));
		expect_true("ep_connect/null-private-data",
			    e.event_number == DAT_CONNECTION_REQUEST_EVENT &&
				    dat_cr_query(e.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &crp) ==
					    DAT_SUCCESS,
			    "the connect with (0, NULL) private data arrives as a request");
		dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL);
		next(p.conn_evd);
		expect_event("ep_connect/timeout-infinite-establishes", next(a.conn_evd).event_number,
			     DAT_CONNECTION_EVENT_ESTABLISHED);
	}
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

/* "As part of the successful completion of this operation, the local Endpoint is bound to a
 * Port Qualifier of the local IA. The Port Qualifier is passed to the remote side of the
 * requested connection and is available to the remote Consumer in the Connection Request." */
static void port_qualifier_case(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_CR_PARAM crp;
	DAT_EP_PARAM ep_param;
	DAT_EVENT e;

	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);
	must(connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
	e = next(p.cr_evd);
	memset(&crp, 0, sizeof(crp));
	must(dat_cr_query(e.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &crp), "dat_cr_query");
	dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL);
	next(p.conn_evd);
	next(a.conn_evd);
	memset(&ep_param, 0, sizeof(ep_param));
	must(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &ep_param), "dat_ep_query");
	{
		char got[96];
		snprintf(got, sizeof(got), "local %llu, in the request %llu",
			 (unsigned long long)ep_param.local_port_qual, (unsigned long long)crp.remote_port_qual);
		report("ep_connect/bound-to-a-port-qualifier", "the same nonzero port on both",
		       got, ep_param.local_port_qual != 0 && ep_param.local_port_qual == crp.remote_port_qual);
	}
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

/* A TCP port at `sin`'s address that never answers a connect: a listener whose backlog is
 * full (Linux drops the SYNs then). Its descriptors stay open until the program ends. */
static DAT_CONN_QUAL silent_port(struct sockaddr_in *sin)
{
	struct sockaddr_in at = *sin;
	socklen_t len = sizeof(at);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	at.sin_port = 0;
	if (l < 0 || bind(l, (struct sockaddr *)&at, sizeof(at)) || listen(l, 0) ||
	    getsockname(l, (struct sockaddr *)&at, &len))
		exit(2);
	for (int i = 0; i < 4; i++) {
		int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (f < 0)
			exit(2);
		connect(f, (struct sockaddr *)&at, sizeof(at));
	}
	return ntohs(at.sin_port);
}

/* Failures' states, a host that does not answer. */
static void failure_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	struct sockaddr_in sin;
	DAT_CONN_QUAL silent;
	DAT_RETURN r;

	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);
	dat_psp_free(psp);

	/* "The same DAT_CONNECTION_EVENT_NON_PEER_REJECTED event is returned if ... remote
	 * Consumer is not listening on the requested Connection Qualifier ... In this case, the
	 * local Endpoint is automatically transitioned into DAT_EP_STATE_DISCONNECTED state." */
	connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, 0);
	expect_event("ep_connect/non-peer-rejected", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	expect_state("ep_connect/non-peer-rejected-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);

	/* "When the Provider cannot reach the remote host or the remote host does not respond
	 * within the Consumer requested Timeout, a DAT_CONNECTION_EVENT_UNREACHABLE event is
	 * generated ... The Endpoint transitions into a DAT_EP_STATE_DISCONNECTED state." A host
	 * that does not answer, within a short timeout: an address of the IA's subnet nobody has
	 * (nobody answers its ARP); on the loopback IA, whose every address answers, a TCP port
	 * whose full backlog drops every SYN. A provider that finds no route at once may say so
	 * synchronously instead (DAT_INVALID_ADDRESS, as the sentence on it allows). */
	fresh_ep(&a, NULL);
	ia_own_address(a.ia, &sin);
	if ((ntohl(sin.sin_addr.s_addr) >> 24) == 127) {
		silent = silent_port(&sin);
	} else {
		uint32_t own = ntohl(sin.sin_addr.s_addr);
		uint32_t other = (own & 0xffffff00u) | ((own & 0xff) == 253 ? 252 : 253);
		sin.sin_addr.s_addr = htonl(other);
		silent = 4791;
	}
	r = dat_ep_connect(a.ep, (DAT_IA_ADDRESS_PTR)&sin, silent, SHORT_US * time_scale(), 0, NULL,
			   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
	if (DAT_GET_TYPE(r) == DAT_INVALID_ADDRESS) {
		report("ep_connect/unreachable", "DAT_CONNECTION_EVENT_UNREACHABLE", "DAT_INVALID_ADDRESS at once (allowed)", 1);
	} else if (strncmp(ia_name(), "tcp-", 4) == 0) {
		expect_event("ep_connect/unreachable", next(a.conn_evd).event_number, DAT_CONNECTION_EVENT_UNREACHABLE);
		expect_state("ep_connect/unreachable-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	} else {
		/* rdma-cm: once the address and route are found (at once on a netdev without ARP,
		 * the guest's), the request is out and nothing tells a host that does not answer
		 * from a consumer that does not: UNREACHABLE before, TIMED_OUT after. */
		DAT_EVENT_NUMBER n = next(a.conn_evd).event_number;
		report("ep_connect/unreachable", "UNREACHABLE (TIMED_OUT once the request is out)", event_name(n),
		       n == DAT_CONNECTION_EVENT_UNREACHABLE || n == DAT_CONNECTION_EVENT_TIMED_OUT);
		expect_state("ep_connect/unreachable-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	}
	close_side(&a);
	close_side(&p);
}

/* A connect given up (dat_ep_disconnect while it is pending) or timed out is over: the EP
 * hears of it once, a peer that accepts it later sees its connection fail, and the attempt
 * never reaches the EP again, even once it connects elsewhere. */
static void abandoned_cases(void)
{
	struct side a, p, q;
	DAT_PSP_HANDLE psp, qpsp;
	DAT_CONN_QUAL port, qport;
	DAT_CR_HANDLE cr;
	DAT_EVENT_NUMBER n;
	DAT_EVENT e;

	open_side(&a);
	open_side(&p);
	open_side(&q);
	port = listen_any(&p, &psp);
	qport = listen_any(&q, &qpsp);

	/* dat_ep_disconnect(3DAT) on an ACTIVE_CONNECTION_PENDING EP: the connect is abandoned,
	 * DISCONNECTED once. */
	must(connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
	cr = next(p.cr_evd).event_data.cr_arrival_event_data.cr_handle;
	expect_ret("ep_connect/disconnect-while-pending", dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	expect_state("ep_connect/disconnect-while-pending-is-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);
	expect_event("ep_connect/disconnect-while-pending-event", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_DISCONNECTED);
	/* The peer accepts the abandoned request: its connection fails (TCP: the accept finds
	 * the socket closed, ACCEPT_COMPLETION_ERROR; verbs: rdma-cm rejected the request as its
	 * id went, ACCEPT_COMPLETION_ERROR). */
	dat_cr_accept(cr, p.ep, 0, NULL);
	n = event_within(p.conn_evd, WAIT_US / time_scale());
	report("ep_connect/abandoned-accept-fails", "ACCEPT_COMPLETION_ERROR or DISCONNECTED", event_name(n),
	       is_failed_accept(n));
	expect_true("ep_connect/abandoned-no-second-event", event_within(a.conn_evd, SHORT_US) == 0,
		    "no event after the one DISCONNECTED");

	/* Reset and connect elsewhere: a late accept of the abandoned attempt does not take the EP. */
	fresh_ep(&p, NULL);
	must(dat_ep_reset(a.ep), "dat_ep_reset");
	must(connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
	cr = next(p.cr_evd).event_data.cr_arrival_event_data.cr_handle;
	dat_ep_disconnect(a.ep, DAT_CLOSE_ABRUPT_FLAG);
	next(a.conn_evd);
	must(dat_ep_reset(a.ep), "dat_ep_reset");
	must(connect_with(&a, qport, WAIT_US, DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
	e = next(q.cr_evd);
	dat_cr_accept(cr, p.ep, 0, NULL); /* the old attempt's, late */
	n = event_of(p.conn_evd, p.ep, WAIT_US / time_scale());
	report("ep_connect/stale-accept-fails", "ACCEPT_COMPLETION_ERROR or DISCONNECTED", event_name(n),
	       is_failed_accept(n));
	/* Whatever the peer saw, the EP's own queue and state show no trace of the old attempt. */
	expect_true("ep_connect/stale-accept-no-event", event_within(a.conn_evd, SHORT_US) == 0,
		    "no event while the new attempt waits");
	expect_state("ep_connect/stale-accept-does-not-take-over", a.ep, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, q.ep, 0, NULL);
	expect_event("ep_connect/new-attempt-establishes", next(a.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_event("ep_connect/new-attempt-peer-establishes", next(q.conn_evd).event_number,
		     DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_true("ep_connect/new-attempt-no-other-event", event_within(a.conn_evd, SHORT_US) == 0,
		    "nothing after ESTABLISHED");

	/* Timed out, then accepted late: TIMED_OUT once, and the peer's accept fails. */
	fresh_ep(&a, NULL);
	fresh_ep(&p, NULL);
	must(connect_with(&a, port, SHORT_US * time_scale(), DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
	cr = next(p.cr_evd).event_data.cr_arrival_event_data.cr_handle;
	expect_event("ep_connect/timed-out-then", next(a.conn_evd).event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
	dat_cr_accept(cr, p.ep, 0, NULL);
	n = event_of(p.conn_evd, p.ep, WAIT_US / time_scale());
	report("ep_connect/timed-out-accept-fails", "ACCEPT_COMPLETION_ERROR or DISCONNECTED", event_name(n),
	       is_failed_accept(n));
	expect_true("ep_connect/timed-out-no-second-event", event_within(a.conn_evd, SHORT_US) == 0,
		    "no event after TIMED_OUT");
	expect_state("ep_connect/timed-out-stays-disconnected", a.ep, DAT_EP_STATE_DISCONNECTED);

	dat_psp_free(psp);
	dat_psp_free(qpsp);
	close_side(&a);
	close_side(&p);
	close_side(&q);
}

/* USAGE: "The outstanding RDMA Read outgoing attribute should be smaller than the remote
 * Endpoint outstanding RDMA Read incoming attribute. If this is not the case, Connection
 * establishment might fail." Ours (as OpenFabrics) does not fail: reads in flight are held
 * to the lesser of our outgoing and the peer's incoming, and the EP's attributes stay what
 * the Consumer set. "... it can set the two outstanding RDMA Read attribute values to 0." */
static void rdma_read_depth_cases(void)
{
	struct side a, p;
	DAT_EP_PARAM param;
	DAT_EP_ATTR attr;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET r;
	DAT_DTO_COOKIE c;
	int i, ok = 1;

	open_side(&a);
	open_side(&p);
	must(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	attr = param.ep_attr;
	attr.max_rdma_read_out = 4;
	attr.max_rdma_read_in = 4;
	fresh_ep(&a, &attr);
	attr.max_rdma_read_out = 1;
	attr.max_rdma_read_in = 1;
	fresh_ep(&p, &attr);
	connect_opened(&a, &p);
	memset(p.buf, 0x5a, 256);
	for (i = 0; i < 4; i++) {
		l = iov(&a, i * 64, 64);
		r = rmr_triplet(p.rmr_ctx, p.buf + i * 64, 64);
		c.as_64 = (DAT_UINT64)i;
		must(dat_ep_post_rdma_read(a.ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_rdma_read");
	}
	for (i = 0; i < 4; i++) {
		DAT_EVENT e = next(a.req_evd);
		ok &= e.event_number == DAT_DTO_COMPLETION_EVENT &&
		      e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
	}
	expect_true("ep_connect/read-depths-disagree-connects-and-reads", ok && a.buf[255] == 0x5a,
		    "4 reads past the peer's incoming 1 complete DAT_DTO_SUCCESS");
	must(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &param), "dat_ep_query");
	{
		char got[64];
		snprintf(got, sizeof(got), "out %d, in %d", param.ep_attr.max_rdma_read_out, param.ep_attr.max_rdma_read_in);
		report("ep_connect/read-depth-attributes-kept", "out 4, in 4", got,
		       param.ep_attr.max_rdma_read_out == 4 && param.ep_attr.max_rdma_read_in == 4);
	}
	close_side(&a);
	close_side(&p);

	open_side(&a);
	open_side(&p);
	attr.max_rdma_read_out = 0;
	attr.max_rdma_read_in = 0;
	fresh_ep(&a, &attr);
	fresh_ep(&p, &attr);
	{
		DAT_PSP_HANDLE psp;
		DAT_EVENT e;
		DAT_CONN_QUAL port = listen_any(&p, &psp);
		must(connect_with(&a, port, WAIT_US, DAT_QOS_BEST_EFFORT, 0), "dat_ep_connect");
		e = next(p.cr_evd);
		dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL);
		expect_event("ep_connect/read-depths-zero-connect", next(a.conn_evd).event_number,
			     DAT_CONNECTION_EVENT_ESTABLISHED);
		dat_psp_free(psp);
	}
	close_side(&a);
	close_side(&p);
}

/* dat_psp_create(3DAT), dat_rsp_create(3DAT): "DAT_CONN_QUAL_IN_USE: Specified Connection
 * Qualifier is in use." As OpenFabrics returns it: the bare value where the port is taken
 * (its provider's bind), the error class only where a PSP of the same IA listens on that very
 * qualifier (found by its common code first). */
static void conn_qual_in_use_cases(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp, other;
	DAT_RSP_HANDLE rsp;
	DAT_CONN_QUAL port;

	open_side(&a);
	open_side(&p);
	port = listen_any(&p, &psp);
	expect_ret("psp_create/conn-qual-in-use-own-psp", dat_psp_create(p.ia, port, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &other),
		   DAT_ERROR(DAT_CONN_QUAL_IN_USE, 0));
	expect_ret("psp_create/conn-qual-in-use-port-taken",
		   dat_psp_create(a.ia, port, a.cr_evd, DAT_PSP_CONSUMER_FLAG, &other), DAT_CONN_QUAL_IN_USE);
	expect_ret("rsp_create/conn-qual-in-use-port-taken", dat_rsp_create(a.ia, port, a.ep, a.cr_evd, &rsp),
		   DAT_CONN_QUAL_IN_USE);
	dat_psp_free(psp);
	close_side(&a);
	close_side(&p);
}

int main(void)
{
	watchdog(90);
	argument_cases();
	port_qualifier_case();
	failure_cases();
	abandoned_cases();
	rdma_read_depth_cases();
	conn_qual_in_use_cases();
	return check_failures ? 1 : 0;
}
