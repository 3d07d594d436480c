/*
 * rawtcp: the same transfers as datperf over a plain TCP socket on loopback, the yardstick
 * the benchmark compares us with. The program forks: the parent listens, the child connects.
 * With -l or -c it runs one side only, so the two may run on different hosts (both given the
 * same -m, -s, -n and -p).
 *
 *   rawtcp [-m pingpong|mempoll|stream|sendwait|emptyrecv] [-s bytes] [-n iterations] [-w buffers] [-p|-1] [-q]
 *          [-l port | -c address:port]
 *
 *   -m pingpong  ping-pong of -s bytes; prints the one-way latency (RTT / 2)
 *   -m mempoll   datperf's memory-polling ping-pong built the way our transport runs it:
 *                in each process the main thread spins on the last byte of its buffer and
 *                yields after each send, and a helper thread blocked in recv (woken by the
 *                kernel, as our progress thread is) puts the message there; prints the
 *                one-way latency. What that design costs without any library.
 *   -m stream    -s bytes written `iterations` times; prints bandwidth
 *   -m sendwait  datperf's sendwait: -s bytes sent, then the receiver's one-byte answer awaited
 *                before the next (what a DAT send's completion tells: the peer has the
 *                message); prints messages per second
 *   -w buffers   stream from and into this many buffers in turn (default 1): datperf keeps
 *                16 transfers in flight, each in its own buffer, and that memory does not
 *                stay in the cache the way one buffer written over and over does
 *   -p           poll: non-blocking receives in a loop (default: blocking receives)
 *   -1           one side polls, the other blocks in recv: the yardstick of datperf's
 *                memory-polling ping-pong, where nothing but the kernel runs the data to
 *                the side that waits
 *   -m emptyrecv the cost of one non-blocking recv on a connected socket with nothing to read
 *                (what a poll that asks the kernel costs at the least), -n calls: prints
 *                nanoseconds per call, the median of batches of 1000 (as datperf -m dequeue)
 *   -l port      the listening side only: waits for one connection on `port` (any address)
 *                and prints "rawtcp: listening on port N" once it can come
 *   -c addr:port the connecting side only: connects to IPv4 `addr` at `port` and prints the
 *                figures
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *mode = "pingpong";
static long size = 8;
static long iterations = 10000;
static long buffers = 1;
static int polling;
static int half_polling;
static int quiet;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void send_all(int fd, const char *p, long n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, (size_t)n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("send");
		}
		p += k;
		n -= k;
	}
}

static void recv_all(int fd, char *p, long n)
{
	while (n > 0) {
		ssize_t k = recv(fd, p, (size_t)n, polling ? MSG_DONTWAIT : 0);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("recv");
		}
		if (k == 0) {
			fprintf(stderr, "rawtcp: peer closed\n");
			exit(1);
		}
		p += k;
		n -= k;
	}
}

/* -m mempoll: the helper thread lands each message in `landing` (its last byte last). */
static int mem_fd;
static char *landing;

static void *land(void *unused)
{
	char *in = malloc((size_t)size);
	(void)unused;
	if (!in)
		die("malloc");
	for (;;) {
		for (long got = 0; got < size;) {
			ssize_t k = recv(mem_fd, in + got, (size_t)(size - got), 0);
			if (k == 0 || (k < 0 && errno != EINTR)) {
				free(in);
				return NULL; /* the run is over */
			}
			got += k > 0 ? k : 0;
		}
		memcpy(landing, in, (size_t)size - 1);
		__atomic_store_n(&landing[size - 1], in[size - 1], __ATOMIC_RELEASE);
	}
}

static double mempoll(int fd, int first, char *buf)
{
	pthread_t t;
	double start = 0;
	mem_fd = fd;
	landing = calloc(1, (size_t)size);
	if (!landing || pthread_create(&t, NULL, land, NULL))
		die("mempoll setup");
	for (long i = 0; i < iterations + 100; i++) {
		char mark = (char)(i % 251 + 1);
		if (i == 100)
			start = now();
		for (int turn = 0; turn < 2; turn++) {
			if ((turn == 0) == first) {
				buf[size - 1] = mark;
				send_all(fd, buf, size);
				sched_yield();
			} else {
				while (__atomic_load_n(&landing[size - 1], __ATOMIC_ACQUIRE) != mark)
					;
			}
		}
	}
	return (now() - start) / iterations / 2 * 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* -m emptyrecv: ns per recv(MSG_DONTWAIT) of an empty socket, the median batch's. */
static double empty_recv(int fd, char *buf)
{
	enum { BATCH = 1000 };
	long batches = (iterations + BATCH - 1) / BATCH;
	double *per_call = malloc((size_t)batches * sizeof *per_call), median;
	if (!per_call)
		die("malloc");
	for (long b = 0; b < batches; b++) {
		double t = now();
		for (int i = 0; i < BATCH; i++)
			if (recv(fd, buf, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN) {
				fprintf(stderr, "rawtcp: the socket that should stay empty was not\n");
				exit(1);
			}
		per_call[b] = (now() - t) / BATCH * 1e9;
	}
	qsort(per_call, (size_t)batches, sizeof *per_call, by_value);
	median = batches % 2 ? per_call[batches / 2] : (per_call[batches / 2 - 1] + per_call[batches / 2]) / 2;
	free(per_call);
	return median;
}

/* -c's address:port into `sin`; 0 if it is not one. */
static int parse_address(const char *arg, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = strrchr(arg, ':');
	long port = colon ? atol(colon + 1) : 0;
	if (!colon || colon - arg >= (long)sizeof(host) || port < 1 || port > 65535)
		return 0;
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = 0;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1;
}

/* The listening side's connection: on loopback at a port of the kernel's choosing, told to
 * the forked client through `port_pipe`, or on `port` of every address (-l). */
static int serve(long port, int port_pipe)
{
	int one = 1, lfd, fd;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(port > 0 ? INADDR_ANY : INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)(port > 0 ? port : 0));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len))
		die("listen");
	if (port > 0) {
		printf("rawtcp: listening on port %ld\n", port);
		fflush(stdout);
	} else if (write(port_pipe, &sin.sin_port, sizeof(sin.sin_port)) != sizeof(sin.sin_port)) {
		die("pipe");
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(lfd);
	return fd;
}

/* The connecting side's: to `to` (-c), or to the forked parent's loopback port. */
static int dial(const struct sockaddr_in *to, int port_pipe)
{
	struct sockaddr_in sin;
	int fd;
	if (to) {
		sin = *to;
	} else {
		in_port_t port;
		if (read(port_pipe, &port, sizeof(port)) != sizeof(port))
			die("pipe");
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = port;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect");
	return fd;
}

int main(int argc, char **argv)
{
	int c, one = 1, fd, status, pipefd[2] = {-1, -1}, client, connect_given = 0;
	long listen_port = -1;
	struct sockaddr_in connect_to;
	pid_t child;
	char *buf;
	double start, figure = 0;

	while ((c = getopt(argc, argv, "m:s:n:w:p1ql:c:")) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 's': size = atol(optarg); break;
		case 'n': iterations = atol(optarg); break;
		case 'w': buffers = atol(optarg); break;
		case 'p': polling = 1; break;
		case '1': half_polling = 1; break;
		case 'q': quiet = 1; break;
		case 'l': listen_port = atol(optarg); break;
		case 'c': connect_given = parse_address(optarg, &connect_to); if (connect_given) break; /* fall through */
		default:
			fprintf(stderr, "usage: rawtcp [-m pingpong|mempoll|stream|sendwait|emptyrecv] [-s bytes] [-n iterations] [-w buffers] [-p|-1] [-q]\n"
					"              [-l port | -c address:port]\n");
			return 2;
		}
	}
	if (size < 1 || iterations < 1 || buffers < 1) {
		fprintf(stderr, "rawtcp: sizes and counts are at least 1\n");
		return 2;
	}
	if (strcmp(mode, "pingpong") && strcmp(mode, "mempoll") && strcmp(mode, "stream") && strcmp(mode, "sendwait") &&
	    strcmp(mode, "emptyrecv")) {
		fprintf(stderr, "rawtcp: no mode %s\n", mode);
		return 2;
	}
	if (listen_port == 0 || listen_port > 65535 || (listen_port > 0 && connect_given)) {
		fprintf(stderr, "rawtcp: -l takes a port (1-65535), and not with -c\n");
		return 2;
	}
	buf = calloc((size_t)buffers, (size_t)size);
	if (!buf)
		die("setup");
	/* Both sides forked from here (the parent listens), or the one side -l or -c names. */
	if (listen_port > 0 || connect_given) {
		child = listen_port > 0 ? 1 : 0;
	} else {
		if (pipe(pipefd))
			die("setup");
		child = fork();
		if (child < 0)
			die("fork");
	}
	client = !child;
	fd = client ? dial(connect_given ? &connect_to : NULL, pipefd[0]) : serve(listen_port, pipefd[1]);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (half_polling)
		polling = client; /* the client polls, the server (which prints) blocks */
	if (!strcmp(mode, "mempoll")) {
		/* The client sends first; the server's reply is the last message of the run. Each
		 * side's helper thread stays blocked in recv until the other side shuts down. */
		figure = mempoll(fd, client, buf);
		shutdown(fd, SHUT_RDWR);
		if (client)
			_exit(0);
		if (listen_port < 0 && (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)))
			return 1;
		if (quiet)
			printf("%.2f\n", figure);
		else
			printf("rawtcp: mempoll, %ld bytes x %ld: %.2f us one-way latency\n", size, iterations, figure);
		return 0;
	}
	if (!strcmp(mode, "pingpong")) {
		start = now();
		for (long i = 0; i < iterations + 100; i++) {
			if (i == 100)
				start = now();
			if (client)
				send_all(fd, buf, size);
			recv_all(fd, buf, size);
			if (!client)
				send_all(fd, buf, size);
		}
		figure = (now() - start) / iterations / 2 * 1e6;
	} else if (!strcmp(mode, "emptyrecv")) {
		/* the server sends nothing until the client's byte says it is done */
		if (client) {
			figure = empty_recv(fd, buf);
			send_all(fd, buf, 1);
		} else {
			recv_all(fd, buf, 1);
		}
	} else if (!strcmp(mode, "sendwait")) {
		start = now();
		for (long i = 0; i < iterations + 100; i++) {
			if (i == 100)
				start = now();
			if (client) {
				send_all(fd, buf, size);
				recv_all(fd, buf, 1);
			} else {
				recv_all(fd, buf, size);
				send_all(fd, buf, 1);
			}
		}
		figure = iterations / (now() - start);
	} else {
		start = now();
		for (long i = 0; i < iterations; i++) {
			char *at = buf + (i % buffers) * size;
			if (client)
				send_all(fd, at, size);
			else
				recv_all(fd, at, size);
		}
		/* the receiver's one-byte answer marks the end of the stream */
		if (!client)
			send_all(fd, buf, 1);
		else
			recv_all(fd, buf, 1);
		figure = (double)size * iterations / (now() - start) / 1e6;
	}
	close(fd);
	if (client) {
		if (!quiet)
			printf("rawtcp: %s, %ld bytes x %ld, %s: ", mode, size, iterations, half_polling ? "one side polling" : polling ? "polling" : "blocking");
		if (!strcmp(mode, "pingpong"))
			printf(quiet ? "%.2f\n" : "%.2f us one-way latency\n", figure);
		else if (!strcmp(mode, "sendwait"))
			printf(quiet ? "%.0f\n" : "%.0f messages/s\n", figure);
		else if (!strcmp(mode, "emptyrecv"))
			printf(quiet ? "%.1f\n" : "%.1f ns a call (median batch)\n", figure);
		else
			printf(quiet ? "%.1f\n" : "%.1f MB/s\n", figure);
		return 0;
	}
	if (listen_port < 0 && (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)))
		return 1;
	return 0;
}
