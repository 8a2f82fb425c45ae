/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The xdp backend's AF_XDP sockets: one per receive queue of each plane interface, each
 * worker thread holding those of its queues, into which the XDP program redirects what it
 * does not place (control packets, SENDs, refusals), and through which the worker transmits
 * whole frames it builds itself (Ethernet, IPv4 or IPv6 with ECT(0) and DF, UDP with its
 * checksum). The next hop's MAC comes from the kernel over
 * rtnetlink (route, then neighbour: neigh.h), asked without waiting; while a neighbour is
 * unknown the datagram goes out of the plane's UDP socket instead, which makes the kernel
 * resolve it: resolved, never guessed.
 *
 * Frames are 4096 bytes (XDP_PACKET_HEADROOM of them in front) with no multi-buffer support:
 * a plane whose MTU does not fit, or whose sockets cannot be opened, runs without AF_XDP (the
 * reason is in the status note), and what the program does not place there passes up to the
 * UDP sockets. Each socket pins 8 MiB of frames (RLIMIT_MEMLOCK).
 *
 * Transmit rings are kicked in every turn that transmits or receives, and while frames are in
 * flight at least every 20 µs (the loop's TX_KICK_NS): in copy mode one kick sends a batch at
 * a time.
 */
#ifndef METAROCE_DAEMON_AFXDP_H
#define METAROCE_DAEMON_AFXDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/xdp.h>

#include "config.h"
#include "frame.h"
#include "neigh.h"

struct mrcd_dgram;
struct xsk_socket;
struct xsk_umem;

#define MRCD_XSK_FRAME 4096u
#define MRCD_XSK_RX_FRAMES 1024u
#define MRCD_XSK_TX_FRAMES 1024u
struct mrcd_xsk_queue;

struct mrcd_xsk_plane {
	int ifindex;
	uint8_t plane;
	struct mrcd_frame_origin origin;
	unsigned n_queues;
	struct mrcd_xsk_queue *queues; /* [0] also transmits */
};

struct mrcd_afxdp {
	struct mrcd_xsk_plane planes[MRC_MAX_PLANES];
	unsigned n_planes;
	int nl_fd;		/* rtnetlink, for routes and neighbours; never blocks */
	bool nl_ready;		/* the loop saw it readable */
	struct mrcd_neigh_cache neigh;
	unsigned rx_cursor;	/* the plane the next receive starts at */
};

/*
 * Opens a socket per receive queue of every plane interface that is the worker's (queue q is
 * worker q % n_workers's) and puts it in xsks_fd (the program's XSKMAP). A plane where that
 * fails, or where the worker has no queue, goes without (the worker sends there through its
 * UDP socket): err then says which and why. Returns how many planes have sockets, or -1 with
 * the reason in err and nothing left open.
 */
int mrcd_afxdp_open(struct mrcd_afxdp *x, const struct mrcd_config *cfg, int xsks_fd,
		    unsigned worker, unsigned n_workers, char *err, size_t errlen);
void mrcd_afxdp_close(struct mrcd_afxdp *x);

/* Receives up to n datagrams; returns how many. Frames that were not the UDP datagrams the
 * program sends are counted in *bad. */
unsigned mrcd_afxdp_rx(struct mrcd_afxdp *x, struct mrcd_dgram *d, unsigned n, uint64_t *bad);

/*
 * Sends d through the plane's socket. Returns 1 when sent, 0 when the ring is full (try
 * again later), -1 when the next hop is not resolved yet (send it another way; the lookup
 * is repeated later), -2 when the plane has no AF_XDP socket or the datagram no frame (send
 * it another way).
 */
int mrcd_afxdp_tx(struct mrcd_afxdp *x, const struct mrcd_dgram *d, uint64_t now_ns);
/* Tells the kernel to send what the transmit rings hold, and takes back finished frames. */
void mrcd_afxdp_kick(struct mrcd_afxdp *x);
/* Frames the kernel has not finished with: the loop must kick again soon. */
bool mrcd_afxdp_tx_pending(struct mrcd_afxdp *x);

/* The fds to wait on for receive readiness: the sockets' and rtnetlink's. */
unsigned mrcd_afxdp_poll_fds(const struct mrcd_afxdp *x, int *fds, unsigned max);
/* The loop saw fd readable. */
void mrcd_afxdp_fd_ready(struct mrcd_afxdp *x, int fd);
/* The questions about next hops that lookups queued go out; answers that came are taken. */
void mrcd_afxdp_neigh_send(struct mrcd_afxdp *x, uint64_t now_ns);
void mrcd_afxdp_neigh_receive(struct mrcd_afxdp *x, uint64_t now_ns);

/* The receive queues of an interface (1 when it does not say): AF_XDP binds a socket to each,
 * and workers = auto counts them. */
unsigned mrcd_iface_rx_queues(const char *ifname);

#endif /* METAROCE_DAEMON_AFXDP_H */
