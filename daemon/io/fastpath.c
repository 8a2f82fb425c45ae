/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "fastpath.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "log.h"
#include "metaroce_xdp.skel.h"
#include "proto/conn.h"

#define PROG_NAME "metaroce_xdp"
#define PENDING_CAP 1024u

static size_t qps_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct mrc_xdp_qp) * MRC_XDP_MAX_QPS + page - 1) & ~(page - 1);
}

/* The interface that holds the plane's address, when the configuration names none. */
static int iface_of(const struct mrcd_plane *p)
{
	struct ifaddrs *ifa, *i;
	int ifindex = 0;

	if (p->ifname[0])
		return (int)if_nametoindex(p->ifname);
	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !ifindex; i = i->ifa_next) {
		uint8_t a[16] = { 0 };

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a[10] = a[11] = 0xff;
			memcpy(a + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			memcpy(a, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		if (!memcmp(a, p->addr.addr, 16))
			ifindex = (int)if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifa);
	return ifindex;
}

/*
 * One daemon's program per interface: a daemon claims each interface by binding an abstract
 * socket named after it, which lives in the network namespace (as the interface does) and dies
 * with the daemon. A metaroce program found on an interface nobody claims was left behind; one
 * on a claimed interface is a live daemon's, and is not touched. Returns the socket or -errno.
 */
static int claim(int ifindex)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), n, e;

	if (fd < 0)
		return -errno;
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "metaroce-xdp-%d", ifindex);
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* A program of ours left attached by a daemon that died: it goes before ours comes. */
static void detach_leftover(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	if (libxdp_get_error(mp) || !mp)
		return;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		/* one held by a BPF link (someone pinned it) cannot be detached: the attach then
		 * names it */
		if (p && !strcmp(xdp_program__name(p), PROG_NAME) && !xdp_multiprog__detach(mp))
			mrcd_log(LOG_NOTICE, "ifindex %d: detached a metaroce XDP program left "
					     "behind", ifindex);
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			if (strcmp(xdp_program__name(p), PROG_NAME) ||
			    xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0))
				continue;
			mrcd_log(LOG_NOTICE, "ifindex %d: detached a metaroce XDP program left "
					     "behind", ifindex);
		}
	}
	xdp_multiprog__close(mp);
}

/* The program the kernel runs on an interface in that mode, by id; 0 for none. Unlike libxdp's
 * view, this needs no CAP_SYS_ADMIN (which opening a program by its id does). */
static __u32 attached_id(int ifindex, bool native)
{
	__u32 id = 0;

	if (bpf_xdp_query_id(ifindex, native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE, &id))
		return 0;
	return id;
}

/* Whether libxdp put the program behind its dispatcher, where other programs can join it:
 * then what the interface runs is the dispatcher, not ours. */
static bool attached_shared(const struct mrcd_fastpath *fp, const struct mrcd_fastpath_iface *f)
{
	__u32 id = attached_id(f->ifindex, f->native);

	return id && id != xdp_program__id(fp->prog);
}

/* Takes ours off an interface it holds alone, by netlink and only if it is still ours there:
 * libxdp's own detach first opens the attached program by id, which needs CAP_SYS_ADMIN. */
static int detach_alone(const struct mrcd_fastpath *fp, const struct mrcd_fastpath_iface *f)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_program__fd(fp->prog));

	return bpf_xdp_detach(f->ifindex,
			      XDP_FLAGS_REPLACE |
				      (f->native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE),
			      &opts);
}

/* Whether this process has a capability in its effective set (false if it cannot tell). */
static bool has_cap(unsigned cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d) || cap >= 64)
		return false;
	return d[cap / 32].effective >> (cap % 32) & 1;
}

/* Why libxdp attached the program alone: its dispatcher lives pinned in a bpffs. */
static const char *why_alone(void)
{
	const char *dir = getenv("LIBXDP_BPFFS");
	struct statfs st;

	if (!dir)
		dir = "/sys/fs/bpf";
	if (statfs(dir, &st) || st.f_type != BPF_FS_MAGIC)
		return "libxdp's dispatcher needs a bpffs at $LIBXDP_BPFFS or /sys/fs/bpf, and "
		       "there is none";
	if (!has_cap(CAP_SYS_ADMIN))
		return "libxdp's dispatcher needs CAP_SYS_ADMIN (it opens programs and their BTF "
		       "by id), which this process lacks";
	return "libxdp's dispatcher could not be loaded (the kernel refused it, or another "
	       "libxdp's; metaroced -v shows why)";
}

/* The program that holds an interface when libxdp could not attach ours beside it: 1 when
 * it sits behind a dispatcher (which ours could have joined, had libxdp been able to), 0 when
 * it is alone, -1 when libxdp cannot read it (without CAP_SYS_ADMIN). */
static int holder_name(int ifindex, char *name, size_t len)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	bool dispatcher;

	snprintf(name, len, "?");
	if (libxdp_get_error(mp) || !mp) {
		/* its id at least */
		__u32 id = attached_id(ifindex, true);

		if (id || (id = attached_id(ifindex, false)))
			snprintf(name, len, "id %u", id);
		return -1;
	}
	dispatcher = !xdp_multiprog__is_legacy(mp);
	p = dispatcher ? xdp_multiprog__next_prog(NULL, mp) : xdp_multiprog__main_prog(mp);
	if (p)
		snprintf(name, len, "%s, id %u", xdp_program__name(p), xdp_program__id(p));
	xdp_multiprog__close(mp);
	return dispatcher ? 1 : 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct mrcd_fastpath_events *ev = ctx;

	if (len < sizeof(struct mrc_xdp_event))
		return 0;
	memcpy(&ev->pending[ev->n_pending++], data, sizeof(struct mrc_xdp_event));
	/* full: stop here; the rest stays in the ring for the next call */
	return ev->n_pending == PENDING_CAP ? -E2BIG : 0;
}

static size_t wake_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct mrc_xdp_wake) * MRC_XDP_MAX_WORKERS + page - 1) & ~(page - 1);
}

static void events_close(struct mrcd_fastpath_events *ev)
{
	if (ev->ring)
		ring_buffer__free(ev->ring);
	if (ev->ring_pos)
		munmap(ev->ring_pos, 2 * (size_t)sysconf(_SC_PAGESIZE));
	if (ev->ring_fd >= 0)
		close(ev->ring_fd);
	free(ev->pending);
	memset(ev, 0, sizeof(*ev));
	ev->ring_fd = -1;
}

/* Worker k's ring, put at k in mrc_events; 0 or errno with what failed in *what. */
static int events_open(struct mrcd_fastpath *fp, unsigned k, const char **what)
{
	const struct bpf_map *outer = fp->skel->maps.mrc_events;
	struct mrcd_fastpath_events *ev = &fp->workers[k];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	__u32 key = k;
	void *pos;

	*what = "an event ring";
	ev->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "mrc_events_w", 0, 0,
				     MRC_XDP_EVENT_RING_BYTES, NULL);
	if (ev->ring_fd < 0)
		return errno;
	if (bpf_map_update_elem(bpf_map__fd(outer), &key, &ev->ring_fd, BPF_ANY))
		return errno;
	ev->pending = calloc(PENDING_CAP, sizeof(*ev->pending));
	if (!ev->pending)
		return ENOMEM;
	ev->ring = ring_buffer__new(ev->ring_fd, on_event, ev, NULL);
	if (!ev->ring)
		return errno;
	ev->epoll_fd = ring_buffer__epoll_fd(ev->ring);
	/* the consumer's page, then the producer's: positions at the start of each */
	*what = "mapping an event ring's positions";
	pos = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, ev->ring_fd, 0);
	if (pos == MAP_FAILED)
		return errno;
	ev->ring_pos = pos;
	ev->ring_consumer = pos;
	ev->ring_producer = (const uint64_t *)((const uint8_t *)pos + page);
	ev->wake = &fp->wake[k];
	return 0;
}

static enum xdp_attach_mode mode_of(const struct mrcd_fastpath_iface *f)
{
	return f->native ? XDP_MODE_NATIVE : XDP_MODE_SKB;
}

/*
 * Alone on an interface, libxdp attaches the program to the interface itself, where it would
 * outlive a daemon that crashed. A BPF link holds it instead: the kernel detaches it when the
 * daemon's last descriptor closes, however the daemon ends, and nobody else's attach can
 * replace it meanwhile. (Behind the dispatcher, libxdp keeps its own pinned state: a program
 * left there is removed by the next start, detach_leftover.) Without a link it stays as
 * libxdp attached it; -errno when it could be put back neither way.
 */
static int hold_by_link(const struct mrcd_fastpath *fp, struct mrcd_fastpath_iface *f)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts,
		    .flags = f->native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
	int fd, e;

	if (detach_alone(fp, f))
		return 0;
	fd = bpf_link_create(xdp_program__fd(fp->prog), f->ifindex, BPF_XDP, &opts);
	if (fd >= 0) {
		f->link_fd = fd;
		return 0;
	}
	e = errno;
	mrcd_log(LOG_NOTICE, "ifindex %d: no BPF link for XDP (%s): the program stays attached "
			     "to the interface, and a crash would leave it there until the next start",
		 f->ifindex, strerror(e));
	/* someone else's program may have taken the interface in between */
	return xdp_program__attach(fp->prog, f->ifindex, mode_of(f), 0);
}

static void detach_all(struct mrcd_fastpath *fp)
{
	for (unsigned i = 0; i < fp->n_ifaces; i++) {
		struct mrcd_fastpath_iface *f = &fp->ifaces[i];

		if (f->link_fd >= 0)
			close(f->link_fd);
		else if (f->shared)
			xdp_program__detach(fp->prog, f->ifindex, mode_of(f), 0);
		else
			detach_alone(fp, f);
	}
	fp->n_ifaces = 0;
}

void mrcd_fastpath_close(struct mrcd_fastpath *fp)
{
	if (fp->prog)
		detach_all(fp);
	for (unsigned k = 0; fp->workers && k < fp->n_workers; k++)
		events_close(&fp->workers[k]);
	free(fp->workers);
	if (fp->qps)
		munmap(fp->qps, qps_bytes());
	if (fp->wake)
		munmap(fp->wake, wake_bytes());
	if (fp->prog)
		xdp_program__close(fp->prog);
	if (fp->skel)
		metaroce_xdp__destroy(fp->skel);
	for (unsigned i = 0; i < fp->n_claims; i++)
		close(fp->claims[i]);
	memset(fp, 0, sizeof(*fp));
}

static int fail(struct mrcd_fastpath *fp, char *err, size_t errlen, const char *what, int e)
{
	snprintf(err, errlen, "%s: %s", what, strerror(e < 0 ? -e : e));
	mrcd_fastpath_close(fp);
	return -1;
}

/*
 * The capabilities loading and attaching the program needs that this process lacks, as
 * ", CAP_BPF"...; "" when it has them. Without them libxdp's attach fails with whatever its
 * refused load left behind ("Bad file descriptor"), which would send an operator the wrong way.
 * CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, as the kernel lets it. (They are read
 * in this process's user namespace; in another than the initial one, where bpf() wants them,
 * nothing shows as missing and the error stays libxdp's.)
 */
static void lacking_caps(char *out, size_t len)
{
	static const struct {
		unsigned cap;
		const char *name;
	} need[] = { { CAP_NET_ADMIN, "CAP_NET_ADMIN" },
		     { CAP_BPF, "CAP_BPF" },
		     { CAP_PERFMON, "CAP_PERFMON" } };
	size_t n = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!has_cap(need[i].cap) &&
		    (need[i].cap == CAP_NET_ADMIN || !has_cap(CAP_SYS_ADMIN)) && n < len)
			n += (size_t)snprintf(out + n, len - n, ", %s", need[i].name);
}

/* libbpf and libxdp talk a lot while loading: the daemon's debug log, not its journal. */
__attribute__((format(printf, 1, 0))) static int to_debug_log(const char *fmt, va_list ap)
{
	char line[256];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	mrcd_log(LOG_DEBUG, "libbpf: %s", line);
	return 0;
}

__attribute__((format(printf, 2, 0))) static int libbpf_to_log(enum libbpf_print_level level,
								   const char *fmt, va_list ap)
{
	(void)level;
	return to_debug_log(fmt, ap);
}

__attribute__((format(printf, 2, 0))) static int libxdp_to_log(enum libxdp_print_level level,
								   const char *fmt, va_list ap)
{
	(void)level;
	return to_debug_log(fmt, ap);
}

int mrcd_fastpath_open(struct mrcd_fastpath *fp, const struct mrcd_config *cfg, uint16_t port,
		       bool redirect, unsigned n_workers, char *err, size_t errlen)
{
	size_t note_len = 0;
	void *qps, *wake;
	int e;

	memset(fp, 0, sizeof(*fp));
	if (n_workers == 0 || n_workers > MRC_XDP_MAX_WORKERS) {
		snprintf(err, errlen, "%u workers: the program has rings for 1 to %u", n_workers,
			 MRC_XDP_MAX_WORKERS);
		return -1;
	}
	libbpf_set_print(libbpf_to_log);
	libxdp_set_print(libxdp_to_log);
	fp->skel = metaroce_xdp__open();
	if (!fp->skel)
		return fail(fp, err, errlen, "opening the XDP program", errno);
	fp->skel->rodata->cfg_port = port;
	fp->skel->rodata->cfg_redirect = redirect;
	{
		struct mrc_conn_config cc;

		/* a sleeping daemon is woken as often as the engine would acknowledge */
		mrc_conn_config_default(&cc);
		fp->skel->rodata->cfg_wake_every = cc.ack_coalesce_packets;
	}
	fp->prog = xdp_program__from_bpf_obj(fp->skel->obj, "xdp.frags");
	e = (int)libxdp_get_error(fp->prog);
	if (e) {
		fp->prog = NULL;
		return fail(fp, err, errlen, "libxdp", e);
	}
	/* it reads jumbo frames through dynptrs; libxdp does not learn that from the object */
	xdp_program__set_xdp_frags_support(fp->prog, true);
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		struct mrcd_fastpath_iface *f = &fp->ifaces[fp->n_ifaces];
		char name[IF_NAMESIZE] = "?";

		f->ifindex = iface_of(&cfg->planes[i]);
		f->plane = cfg->planes[i].index;
		f->link_fd = -1;
		if (f->ifindex <= 0) {
			char what[64];

			snprintf(what, sizeof(what), "plane %u: no interface holds its address",
				 f->plane);
			return fail(fp, err, errlen, what, ENODEV);
		}
		e = claim(f->ifindex);
		if (e < 0) {
			char what[96];

			if_indextoname((unsigned)f->ifindex, name);
			snprintf(what, sizeof(what), "%s: %s", name,
				 e == -EADDRINUSE ? "another metaroced runs its XDP program there"
						  : "claiming the interface");
			return fail(fp, err, errlen, what, e == -EADDRINUSE ? EBUSY : -e);
		}
		fp->claims[fp->n_claims++] = e;
		detach_leftover(f->ifindex);
		f->native = true;
		e = xdp_program__attach(fp->prog, f->ifindex, XDP_MODE_NATIVE, 0);
		if (e) {
			f->native = false;
			e = xdp_program__attach(fp->prog, f->ifindex, XDP_MODE_SKB, 0);
		}
		if_indextoname((unsigned)f->ifindex, name);
		if (e == -EBUSY || e == -EEXIST) {
			char holder[64];

			/* left alone: another's program is not ours to replace */
			int dispatcher = holder_name(f->ifindex, holder, sizeof(holder));

			snprintf(err, errlen, "%s: another XDP program is attached there (%s) and ours "
					      "cannot join it: %s", name, holder,
				 dispatcher > 0	 ? why_alone()
				 : dispatcher == 0 ? "it is attached alone, not behind libxdp's dispatcher"
						   : "libxdp cannot read it, nor join it, without "
						     "CAP_SYS_ADMIN");
			mrcd_fastpath_close(fp);
			return -1;
		}
		if (e) {
			char what[64], lacking[64];

			lacking_caps(lacking, sizeof(lacking));
			if (lacking[0]) {
				snprintf(err, errlen, "attaching XDP to %s: loading and attaching the "
						      "program needs CAP_NET_ADMIN, CAP_BPF and "
						      "CAP_PERFMON, and this process lacks %s", name,
					 lacking + 2);
				mrcd_fastpath_close(fp);
				return -1;
			}
			snprintf(what, sizeof(what), "attaching XDP to %s", name);
			return fail(fp, err, errlen, what, e);
		}
		f->shared = attached_shared(fp, f);
		fp->n_ifaces++; /* from here on, detach_all takes it away again */
		if (!f->shared) {
			mrcd_log(LOG_NOTICE, "%s: XDP program attached alone, so another XDP program "
					     "there is refused, not run beside it: %s", name, why_alone());
			e = hold_by_link(fp, f);
			if (e) {
				char what[64];

				fp->n_ifaces--; /* not attached: nothing to detach */
				snprintf(what, sizeof(what), "attaching XDP to %s again", name);
				return fail(fp, err, errlen, what, e);
			}
		}
		note_len += (size_t)snprintf(fp->note + note_len,
					     note_len < sizeof(fp->note) ? sizeof(fp->note) - note_len : 0,
					     "%s%s %s", i ? ", " : "", name,
					     f->native ? "native" : "generic");
		if (note_len >= sizeof(fp->note))
			note_len = sizeof(fp->note) - 1;
		{
			__u32 ifindex = (__u32)f->ifindex;
			struct mrc_xdp_plane plane = { .index = f->plane };

			memcpy(plane.addr, cfg->planes[i].addr.addr, sizeof(plane.addr));
			if (bpf_map__update_elem(fp->skel->maps.mrc_planes, &ifindex, sizeof(ifindex),
						 &plane, sizeof(plane), BPF_ANY))
				return fail(fp, err, errlen, "mrc_planes", errno);
		}
	}
	qps = mmap(NULL, qps_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
		   bpf_map__fd(fp->skel->maps.mrc_qps), 0);
	if (qps == MAP_FAILED)
		return fail(fp, err, errlen, "mapping mrc_qps", errno);
	fp->qps = qps;
	wake = mmap(NULL, wake_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
		    bpf_map__fd(fp->skel->maps.mrc_wake), 0);
	if (wake == MAP_FAILED)
		return fail(fp, err, errlen, "mapping mrc_wake", errno);
	fp->wake = wake;
	fp->workers = aligned_alloc(64, n_workers * sizeof(*fp->workers));
	if (!fp->workers)
		return fail(fp, err, errlen, "event rings", ENOMEM);
	memset(fp->workers, 0, n_workers * sizeof(*fp->workers));
	fp->n_workers = n_workers;
	for (unsigned k = 0; k < n_workers; k++)
		fp->workers[k].ring_fd = -1;
	for (unsigned k = 0; k < n_workers; k++) {
		const char *what;

		e = events_open(fp, k, &what);
		if (e)
			return fail(fp, err, errlen, what, e);
	}
	fp->mrs_fd = bpf_map__fd(fp->skel->maps.mrc_mrs);
	fp->pages_fd = bpf_map__fd(fp->skel->maps.mrc_mr_pages);
	fp->outcomes_fd = bpf_map__fd(fp->skel->maps.mrc_outcomes);
	fp->xsks_fd = bpf_map__fd(fp->skel->maps.mrc_xsks);
	return 0;
}

int mrcd_fastpath_plane(const struct mrcd_fastpath *fp, uint32_t ifindex)
{
	for (unsigned i = 0; i < fp->n_ifaces; i++)
		if ((uint32_t)fp->ifaces[i].ifindex == ifindex)
			return fp->ifaces[i].plane;
	return -1;
}

unsigned mrcd_fastpath_events(struct mrcd_fastpath *fp, unsigned worker,
			      struct mrc_xdp_event *out, unsigned max)
{
	struct mrcd_fastpath_events *ev = &fp->workers[worker];
	unsigned n;

	if (!ev->n_pending)
		ring_buffer__consume(ev->ring);
	n = ev->n_pending < max ? ev->n_pending : max;
	memcpy(out, ev->pending, n * sizeof(*out));
	memmove(ev->pending, ev->pending + n, (ev->n_pending - n) * sizeof(*out));
	ev->n_pending -= n;
	return n;
}

bool mrcd_fastpath_events_pending(const struct mrcd_fastpath *fp, unsigned worker)
{
	const struct mrcd_fastpath_events *ev = &fp->workers[worker];

	return ev->n_pending || __atomic_load_n(ev->ring_producer, __ATOMIC_ACQUIRE) !=
					 __atomic_load_n(ev->ring_consumer, __ATOMIC_ACQUIRE);
}

int mrcd_fastpath_events_fd(const struct mrcd_fastpath *fp, unsigned worker)
{
	return fp->workers[worker].epoll_fd;
}

bool mrcd_fastpath_arm(struct mrcd_fastpath *fp, unsigned worker, bool sleeping)
{
	struct mrc_xdp_wake *wake = fp->workers[worker].wake;

	__atomic_store_n(&wake->asleep, sleeping ? 1ull : 0ull, __ATOMIC_SEQ_CST);
	if (!sleeping)
		return true;
	/* pairs with the program's locked add between reserving an event and reading asleep */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!mrcd_fastpath_events_pending(fp, worker))
		return true;
	__atomic_store_n(&wake->asleep, 0ull, __ATOMIC_RELAXED);
	return false;
}

/* --- regions ---------------------------------------------------------------------------- */

/* The largest page map made: 1 TiB, as for a memfd segment (the daemon hands clients at
 * most 4 GiB ones: the program addresses no more). */
#define MAX_PAGES (1ull << 28)

int mrcd_fastpath_page_map(struct mrcd_fastpath *fp, uint64_t pages)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	int fd;

	(void)fp;
	if (!pages || pages > MAX_PAGES)
		return -EINVAL;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "mrc_pages", 4, MRC_XDP_PAGE, (__u32)pages, &opts);
	return fd < 0 ? -errno : fd;
}

bool mrcd_fastpath_is_page_map(const struct mrcd_fastpath *fp, int fd, uint64_t *bytes)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	(void)fp;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_MAP_TYPE_ARRAY ||
	    info.key_size != 4 || info.value_size != MRC_XDP_PAGE ||
	    !(info.map_flags & BPF_F_MMAPABLE))
		return false;
	*bytes = (uint64_t)info.max_entries * MRC_XDP_PAGE;
	return true;
}

int mrcd_fastpath_mr_set(struct mrcd_fastpath *fp, uint32_t slot, uint32_t key, uint32_t access,
			 uint32_t owner, uint64_t iova, uint64_t len, int page_fd, uint64_t offset)
{
	struct mrc_xdp_mr mr = { .key = 0, .access = access, .owner = owner,
				 .offset = (uint32_t)offset, .addr = iova, .len = len };

	if (slot >= MRC_XDP_MAX_MRS || offset > UINT32_MAX)
		return -EINVAL;
	/* key cleared first, pages and fields next, the key last: a program reading the slot
	 * half-written finds no key that matches (xdp.h) */
	if (bpf_map_update_elem(fp->mrs_fd, &slot, &mr, BPF_ANY) ||
	    bpf_map_update_elem(fp->pages_fd, &slot, &page_fd, BPF_ANY))
		return -errno;
	mr.key = key;
	return bpf_map_update_elem(fp->mrs_fd, &slot, &mr, BPF_ANY) ? -errno : 0;
}

void mrcd_fastpath_mr_clear(struct mrcd_fastpath *fp, uint32_t slot)
{
	struct mrc_xdp_mr mr = { 0 };

	if (slot >= MRC_XDP_MAX_MRS)
		return;
	bpf_map_update_elem(fp->mrs_fd, &slot, &mr, BPF_ANY);
	bpf_map_delete_elem(fp->pages_fd, &slot);
}

/* --- QPs -------------------------------------------------------------------------------- */

static struct mrc_xdp_qp *slot_of(const struct mrcd_fastpath *fp, uint32_t qpn)
{
	struct mrc_xdp_qp *q = &fp->qps[MRC_QP_SLOT(qpn)];

	return __atomic_load_n(&q->qpn, __ATOMIC_ACQUIRE) == qpn ? q : NULL;
}

const struct mrc_xdp_qp *mrcd_fastpath_qp(const struct mrcd_fastpath *fp, uint32_t qpn)
{
	return slot_of(fp, qpn);
}

void mrcd_fastpath_qp_peer(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t peer_planes,
			   const uint8_t peer[MRC_MAX_PLANES][16])
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);

	if (!q)
		return;
	/* the planes shrink before the addresses change and grow after: a packet is checked
	 * against an address the daemon meant for that plane, old or new */
	__atomic_and_fetch(&q->peer_planes, peer_planes, __ATOMIC_RELEASE);
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		if (peer_planes >> p & 1 && memcmp(q->peer[p], peer[p], 16)) {
			__atomic_and_fetch(&q->peer_planes, ~(1u << p), __ATOMIC_RELEASE);
			memcpy(q->peer[p], peer[p], 16);
		}
	__atomic_store_n(&q->peer_planes, peer_planes, __ATOMIC_RELEASE);
}

void mrcd_fastpath_qp_set(struct mrcd_fastpath *fp, uint32_t qpn, unsigned worker,
			  uint32_t owner, uint32_t base, uint32_t flags, uint32_t peer_planes,
			  const uint8_t peer[MRC_MAX_PLANES][16], const struct mrc_auth_key *auth)
{
	struct mrc_xdp_qp *q = &fp->qps[MRC_QP_SLOT(qpn)];

	/* whatever held the slot stops first; the QP number goes in last */
	__atomic_store_n(&q->qpn, 0, __ATOMIC_RELEASE);
	/* a worker the program has no ring for would lose every event: worker 0 takes them
	 * and hands them over (never happens: the core's shards are the workers) */
	q->worker = worker < fp->n_workers ? worker : 0;
	q->base = base;
	q->flags = flags;
	q->owner = owner;
	memset(q->ring, 0, sizeof(q->ring));
	q->ce_packets = q->placed_packets = q->placed_bytes = q->duplicates = 0;
	q->peer_planes = peer_planes;
	memcpy(q->peer, peer, sizeof(q->peer));
	q->auth_k0 = auth ? auth->k0 : 0;
	q->auth_k1 = auth ? auth->k1 : 0;
	for (unsigned i = 0; i < MRC_XDP_MAX_READS; i++)
		q->reads[i].len = 0; /* the sequences go on: a run that saw an old one notices */
	__atomic_store_n(&q->qpn, qpn, __ATOMIC_RELEASE);
}

void mrcd_fastpath_qp_advance(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t old_base,
			      uint32_t base)
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);
	uint32_t passed = base - old_base;

	if (!q || !passed)
		return;
	/* the new base first, so no packet of a passed PSN sets its bit again (xdp.h) */
	__atomic_store_n(&q->base, base, __ATOMIC_RELEASE);
	if (passed >= MRC_SACK_BITS) {
		for (unsigned w = 0; w < MRC_SACK_BITS / 64; w++)
			__atomic_store_n(&q->ring[w], 0, __ATOMIC_RELEASE);
		return;
	}
	for (uint32_t psn = old_base; psn != base; psn++) {
		unsigned idx = psn % MRC_SACK_BITS;

		__atomic_and_fetch(&q->ring[idx / 64], ~(1ull << (idx % 64)), __ATOMIC_RELEASE);
	}
}

bool mrcd_fastpath_qp_read(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t msn, uint32_t key,
			   uint64_t addr, uint32_t len)
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);
	struct mrc_xdp_read *rd = q ? &q->reads[msn & (MRC_XDP_MAX_READS - 1)] : NULL;
	uint32_t seq;

	if (!rd || !len || __atomic_load_n(&rd->len, __ATOMIC_RELAXED))
		return false; /* held by an outstanding READ: the engine places this one's */
	/* a sequence lock: odd while the fields change, so a run never mixes two READs */
	seq = rd->seq;
	__atomic_store_n(&rd->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&rd->msn, msn, __ATOMIC_RELAXED);
	__atomic_store_n(&rd->key, key, __ATOMIC_RELAXED);
	__atomic_store_n(&rd->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&rd->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&rd->seq, seq + 2, __ATOMIC_RELEASE);
	return true;
}

void mrcd_fastpath_qp_reads_done(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t oldest,
				 uint32_t next)
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);

	for (unsigned i = 0; q && i < MRC_XDP_MAX_READS; i++) {
		struct mrc_xdp_read *rd = &q->reads[i];

		/* completed, or (oldest == next) everything: its sink is the application's again */
		if (__atomic_load_n(&rd->len, __ATOMIC_RELAXED) &&
		    rd->msn - oldest >= next - oldest)
			__atomic_store_n(&rd->len, 0, __ATOMIC_RELEASE);
	}
}

void mrcd_fastpath_qp_clear_flags(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t flags)
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);

	if (q)
		__atomic_and_fetch(&q->flags, ~flags, __ATOMIC_SEQ_CST);
}

void mrcd_fastpath_qp_clear(struct mrcd_fastpath *fp, uint32_t qpn)
{
	struct mrc_xdp_qp *q = slot_of(fp, qpn);

	if (q) {
		__atomic_store_n(&q->flags, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&q->qpn, 0, __ATOMIC_RELEASE);
	}
}

void mrcd_fastpath_wake_counts(const struct mrcd_fastpath *fp, unsigned worker,
			       uint64_t *woken, uint64_t *quiet)
{
	*woken = __atomic_load_n(&fp->wake[worker].wakeups, __ATOMIC_RELAXED);
	*quiet = __atomic_load_n(&fp->wake[worker].quiet, __ATOMIC_RELAXED);
}

void mrcd_fastpath_outcomes(const struct mrcd_fastpath *fp, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	memset(out, 0, MRC_XDP_OUTCOMES * sizeof(*out));
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	for (uint32_t k = 0; k < MRC_XDP_OUTCOMES; k++) {
		if (bpf_map_lookup_elem(fp->outcomes_fd, &k, v))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += v[c];
	}
	free(v);
}
