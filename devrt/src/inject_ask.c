// SPDX-License-Identifier: Apache-2.0
/*
 * inject_ask.c - one exchange of the injection protocol with the collector
 * (gpuext_abi.h, "devrt injection protocol"): connect to its unix socket,
 * send the request, read and check the response, all within one deadline.
 * The socket is non-blocking and every wait is a poll() bounded by what is
 * left of the deadline, so a collector that accepts and never answers costs
 * the program at most the timeout.  Anything the response claims is checked
 * against the limits before it is believed; a response that breaks the
 * protocol is GPUEXT_INJ_R_BAD_RESPONSE and the original module is kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "inject.h"

static int wait_fd(int fd, short ev, __u64 deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	__u64 now;
	int r;

	for (;;) {
		now = devrt_now();
		if (now >= deadline)
			return -GPUEXT_INJ_R_TIMEOUT;
		r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -GPUEXT_INJ_R_IO;
	}
}

static int send_all(int fd, const void *buf, size_t n, __u64 deadline)
{
	const char *p = buf;
	ssize_t w;
	int r;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if ((r = wait_fd(fd, POLLOUT, deadline)))
				return r;
			continue;
		}
		return -GPUEXT_INJ_R_IO;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t n, __u64 deadline)
{
	char *p = buf;
	ssize_t got;
	int r;

	while (n) {
		got = recv(fd, p, n, 0);
		if (got > 0) {
			p += got;
			n -= (size_t)got;
			continue;
		}
		if (got == 0)	/* closed early: a short answer */
			return -GPUEXT_INJ_R_BAD_RESPONSE;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if ((r = wait_fd(fd, POLLIN, deadline)))
				return r;
			continue;
		}
		return -GPUEXT_INJ_R_IO;
	}
	return 0;
}

static int connect_to(const char *path, __u64 deadline)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, err = 0;
	socklen_t len = sizeof(err);

	if (strlen(path) >= sizeof(a.sun_path))
		return -GPUEXT_INJ_R_CONNECT;
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -GPUEXT_INJ_R_IO;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (errno != EAGAIN && errno != EINPROGRESS) {
		close(fd);
		return -GPUEXT_INJ_R_CONNECT;
	}
	/* A full backlog: wait for room, within the deadline. */
	if (wait_fd(fd, POLLOUT, deadline) ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		close(fd);
		return -GPUEXT_INJ_R_TIMEOUT;
	}
	return fd;
}

/* nkernels NUL-terminated, non-empty names, exactly filling len bytes. */
static int names_ok(const char *s, size_t len, __u32 n)
{
	size_t i = 0, b;
	__u32 k;

	for (k = 0; k < n; k++) {
		for (b = i; i < len && s[i]; i++)
			;
		if (i == len || i == b)
			return 0;
		i++;
	}
	return i == len;
}

void devrt_inject_answer_free(struct devrt_inj_answer *a)
{
	free(a->ptx);
	free(a->names);
	free(a->init);
	a->ptx = a->names = NULL;
	a->init = NULL;
}

/*
 * The region's initial contents: entries of struct gpuext_inj_init, each
 * followed by its bytes padded to 8, exactly filling len bytes, every one
 * inside the shared_size bytes of the region.
 */
static int init_ok(const __u8 *b, size_t len, __u64 shared)
{
	struct gpuext_inj_init e;
	size_t i = 0;

	while (i < len) {
		if (len - i < sizeof(e))
			return 0;
		memcpy(&e, b + i, sizeof(e));
		i += sizeof(e);
		if (!e.len || e._pad || e.offset > shared ||
		    e.len > shared - e.offset ||
		    ((__u64)e.len + 7) / 8 * 8 > len - i)
			return 0;
		for (i += e.len; i % 8; i++)
			if (b[i])
				return 0;	/* padding is zero */
	}
	return 1;
}

static int read_answer(int fd, const struct gpuext_inj_req *req,
		       struct devrt_inj_answer *a, __u64 deadline)
{
	struct gpuext_inj_resp h;
	char reason[GPUEXT_INJ_MAX_REASON];
	int r;

	if ((r = recv_all(fd, &h, sizeof(h), deadline)))
		return r;
	if (h.magic != GPUEXT_INJ_RESP_MAGIC || h.version != GPUEXT_INJ_VERSION ||
	    h.hdr_size != sizeof(h) || h.status < GPUEXT_INJ_PATCHED ||
	    h.status > GPUEXT_INJ_ERROR || h.reason_len > GPUEXT_INJ_MAX_REASON ||
	    h.ptx_len > GPUEXT_INJ_MAX_PTX || h.names_len > GPUEXT_INJ_MAX_NAMES ||
	    h.nkernels > GPUEXT_INJ_MAX_KERNELS ||
	    h.shared_size > GPUEXT_INJ_MAX_SHARED ||
	    h.init_len > GPUEXT_INJ_MAX_INIT || h.init_len % 8 ||
	    (h.init_len && !h.shared_size) ||
	    memcmp(h.sha256, req->sha256, sizeof(h.sha256)) ||
	    ((h.status == GPUEXT_INJ_PATCHED) !=
	     (h.ptx_len > 0 && h.nkernels > 0)) ||
	    (h.status != GPUEXT_INJ_PATCHED &&
	     (h.names_len || h.ptx_len || h.nkernels || h.init_len)))
		return -GPUEXT_INJ_R_BAD_RESPONSE;
	if ((r = recv_all(fd, reason, h.reason_len, deadline)))
		return r;
	a->flags = h.flags;
	a->shared_size = h.shared_size;
	a->nkernels = h.nkernels;
	memcpy(a->text, reason,
	       h.reason_len < sizeof(a->text) - 1 ? h.reason_len :
						    sizeof(a->text) - 1);
	a->text[h.reason_len < sizeof(a->text) - 1 ? h.reason_len :
						     sizeof(a->text) - 1] = '\0';
	if (h.status == GPUEXT_INJ_PATCHED) {
		a->ptx = malloc(h.ptx_len + 1);
		a->names = malloc(h.names_len + 1);
		a->init = h.init_len ? malloc(h.init_len) : NULL;
		if (!a->ptx || !a->names || (h.init_len && !a->init))
			return -GPUEXT_INJ_R_NO_MEMORY;
		if ((r = recv_all(fd, a->ptx, h.ptx_len, deadline)) ||
		    (r = recv_all(fd, a->names, h.names_len, deadline)) ||
		    (r = recv_all(fd, a->init, h.init_len, deadline)))
			return r;
		a->init_len = h.init_len;
		a->probe_version = h.probe_version;
		a->ptx[h.ptx_len] = '\0';
		a->names[h.names_len] = '\0';
		a->ptx_len = h.ptx_len;
		if (strlen(a->ptx) != h.ptx_len ||
		    !names_ok(a->names, h.names_len, h.nkernels) ||
		    !init_ok(a->init, a->init_len, h.shared_size))
			return -GPUEXT_INJ_R_BAD_RESPONSE;
	}
	a->status = h.status;
	return 0;
}

/*
 * Sends req with its PTX and names to the collector at sock and reads the
 * answer into ans (free it with devrt_inject_answer_free).  0 with
 * ans->status set, or -1 with ans->reason (GPUEXT_INJ_R_*) set.
 */
int devrt_inject_ask(const char *sock, __u32 timeout_ms,
		     const struct gpuext_inj_req *req, const char *ptx,
		     const char *names, struct devrt_inj_answer *ans)
{
	__u64 deadline = devrt_now() + (__u64)timeout_ms * 1000000ULL;
	int fd, r;

	memset(ans, 0, sizeof(*ans));
	fd = connect_to(sock, deadline);
	if (fd < 0) {
		ans->reason = (__u32)-fd;
		return -1;
	}
	r = send_all(fd, req, sizeof(*req), deadline);
	if (!r)
		r = send_all(fd, ptx, req->ptx_len, deadline);
	if (!r)
		r = send_all(fd, names, req->names_len, deadline);
	if (!r)
		r = read_answer(fd, req, ans, deadline);
	close(fd);
	if (r) {
		devrt_inject_answer_free(ans);
		ans->status = 0;
		ans->reason = (__u32)-r;
		return -1;
	}
	return 0;
}
