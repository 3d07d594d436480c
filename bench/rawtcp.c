/*
 * rawtcp: the same transfers as datperf over a plain TCP socket on loopback, the yardstick
 * the benchmark compares us with. The program forks: the parent listens, the child connects.
 *
 *   rawtcp [-m pingpong|mempoll|stream] [-s bytes] [-n iterations] [-w buffers] [-p|-1] [-q]
 *
 *   -m pingpong  ping-pong of -s bytes; prints the one-way latency (RTT / 2)
 *   -m mempoll   datperf's memory-polling ping-pong built the way our transport runs it:
 *                in each process the main thread spins on the last byte of its buffer and
 *                yields after each send, and a helper thread blocked in recv (woken by the
 *                kernel, as our progress thread is) puts the message there; prints the
 *                one-way latency. What that design costs without any library.
 *   -m stream    -s bytes written `iterations` times; prints bandwidth
 *   -w buffers   stream from and into this many buffers in turn (default 1): datperf keeps
 *                16 transfers in flight, each in its own buffer, and that memory does not
 *                stay in the cache the way one buffer written over and over does
 *   -p           poll: non-blocking receives in a loop (default: blocking receives)
 *   -1           one side polls, the other blocks in recv: the yardstick of datperf's
 *                memory-polling ping-pong, where nothing but the kernel runs the data to
 *                the side that waits
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
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

int main(int argc, char **argv)
{
	int c, one = 1, lfd, fd, status, pipefd[2];
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	pid_t child;
	char *buf;
	double start, figure = 0;

	while ((c = getopt(argc, argv, "m:s:n:w:p1q")) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 's': size = atol(optarg); break;
		case 'n': iterations = atol(optarg); break;
		case 'w': buffers = atol(optarg); break;
		case 'p': polling = 1; break;
		case '1': half_polling = 1; break;
		case 'q': quiet = 1; break;
		default: fprintf(stderr, "usage: rawtcp [-m pingpong|mempoll|stream] [-s bytes] [-n iterations] [-w buffers] [-p|-1] [-q]\n"); return 2;
		}
	}
	if (size < 1 || iterations < 1 || buffers < 1) {
		fprintf(stderr, "rawtcp: sizes and counts are at least 1\n");
		return 2;
	}
	buf = calloc((size_t)buffers, (size_t)size);
	if (!buf || pipe(pipefd))
		die("setup");
	child = fork();
	if (child < 0)
		die("fork");
	if (child) {
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1) ||
		    getsockname(lfd, (struct sockaddr *)&sin, &len))
			die("listen");
		if (write(pipefd[1], &sin.sin_port, sizeof(sin.sin_port)) != sizeof(sin.sin_port))
			die("pipe");
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
	} else {
		in_port_t port;
		if (read(pipefd[0], &port, sizeof(port)) != sizeof(port))
			die("pipe");
		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = port;
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			die("connect");
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (half_polling)
		polling = !child; /* the child polls, the parent (which prints) blocks */
	if (!strcmp(mode, "mempoll")) {
		/* The child sends first; the parent's reply is the last message of the run. Each
		 * side's helper thread stays blocked in recv until the other side shuts down. */
		figure = mempoll(fd, !child, buf);
		shutdown(fd, SHUT_RDWR);
		if (!child)
			_exit(0);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
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
			if (!child)
				send_all(fd, buf, size);
			recv_all(fd, buf, size);
			if (child)
				send_all(fd, buf, size);
		}
		figure = (now() - start) / iterations / 2 * 1e6;
	} else {
		start = now();
		for (long i = 0; i < iterations; i++) {
			char *at = buf + (i % buffers) * size;
			if (!child)
				send_all(fd, at, size);
			else
				recv_all(fd, at, size);
		}
		/* the receiver's one-byte answer marks the end of the stream */
		if (child)
			send_all(fd, buf, 1);
		else
			recv_all(fd, buf, 1);
		figure = (double)size * iterations / (now() - start) / 1e6;
	}
	close(fd);
	if (!child) {
		if (!quiet)
			printf("rawtcp: %s, %ld bytes x %ld, %s: ", mode, size, iterations, half_polling ? "one side polling" : polling ? "polling" : "blocking");
		printf(!strcmp(mode, "pingpong") ? (quiet ? "%.2f\n" : "%.2f us one-way latency\n")
						 : (quiet ? "%.1f\n" : "%.1f MB/s\n"), figure);
		return 0;
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
