/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The shared-memory boundary between libmetaroce (in the application) and metaroced: the one
 * definition of the work-queue and completion-queue rings both sides map. Each ring lives in
 * its own memfd, sealed against shrinking (F_SEAL_SHRINK) so neither side can fault the other
 * by truncating it. Exactly one side produces into a ring and the other consumes:
 *
 *     SQ ring   library -> daemon    struct mrc_sq_entry   (ibv_post_send)
 *     RQ ring   library -> daemon    struct mrc_rq_entry   (ibv_post_recv)
 *     CQ ring   daemon  -> library   struct mrc_cq_entry   (ibv_poll_cq)
 *
 * Layout of one ring region (offsets in bytes, 64-byte cache lines):
 *
 *     0    +--------------------------------------------------+
 *          | struct mrc_ring_hdr: magic, version, kind,        |  written once by the daemon
 *          | entry size, entry count (a power of two)          |
 *     64   +--------------------------------------------------+
 *          | producer index   (u32, release-stored by producer)|  own cache line
 *     128  +--------------------------------------------------+
 *          | consumer index   (u32, release-stored by consumer)|  own cache line
 *     192  +--------------------------------------------------+
 *          | entry[0] ... entry[n - 1]                         |  entry i at index i & (n - 1)
 *          +--------------------------------------------------+
 *
 * Indices run freely modulo 2^32; the ring holds producer - consumer entries, never more than
 * n. A consumer reads the producer index with acquire, copies the entry out once, validates the
 * copy, then release-stores the consumer index. The daemon treats every value it reads from a
 * client's ring as hostile: an index that claims more than n entries, or an entry with bad
 * fields, is a client error, never a daemon fault.
 */
#ifndef METAROCE_SHM_H
#define METAROCE_SHM_H

#include <linux/types.h>

#define MRC_RING_MAGIC 0x4d524352u /* "MRCR" */
#define MRC_RING_VERSION 1
#define MRC_RING_CACHELINE 64
#define MRC_RING_MAX_SGE 4

enum mrc_ring_kind {
	MRC_RING_SQ = 1,
	MRC_RING_RQ = 2,
	MRC_RING_CQ = 3,
};

struct mrc_ring_hdr {
	__u32 magic;	  /* MRC_RING_MAGIC */
	__u16 version;	  /* MRC_RING_VERSION */
	__u16 kind;	  /* enum mrc_ring_kind */
	__u32 entry_size; /* sizeof the entry struct of this kind */
	__u32 entries;	  /* a power of two */
	__u32 qp_num;	  /* SQ, RQ: the QP; CQ: 0 */
	__u32 reserved[11];
};

/*
 * Each index line also carries one word, `aux`, written only by the side that owns the line:
 *
 *     CQ consumer line (library)  arm request: 0 none, MRC_CQ_ARM_NEXT, MRC_CQ_ARM_SOLICITED
 *                                 (ibv_req_notify_cq), with MRC_CQ_ARM_SPINNING while
 *                                 ibv_get_cq_event spins on the CQ; the daemon clears it
 *                                 when it fires, and does not fire a spinning arm
 *     CQ producer line (daemon)   completion events raised so far (ibv_get_cq_event counts)
 *     SQ consumer line (daemon)   MRC_QP_AUX_ERROR once the QP has entered the error state,
 *                                 and MRC_RING_AUX_NEED_WAKEUP (below)
 *     RQ consumer line (daemon)   MRC_RING_AUX_NEED_WAKEUP
 *     SRQ consumer line (daemon)  MRC_SRQ_AUX_LIMIT once fewer entries than its limit remained
 *                                 (the library clears it when it reports the event)
 *     SQ, RQ producer lines       unused, 0
 *
 * MRC_RING_AUX_NEED_WAKEUP is the doorbell's suppression, as AF_XDP's and io_uring's
 * need-wakeup flags: clear while the daemon reads the ring on every turn of its loop, set
 * before it sleeps. After publishing entries the library fences (sequentially consistent)
 * and reads the flag; only when it is set does it mark the QP in its doorbell page and write
 * its doorbell eventfd. The daemon sets the flag, fences, then looks at the producer index
 * once more: one of the two always sees the other's write.
 */
struct mrc_ring_index {
	__u32 value;
	__u32 aux;
	__u32 pad[MRC_RING_CACHELINE / 4 - 2];
};

#define MRC_CQ_ARM_NEXT 1u
#define MRC_CQ_ARM_SOLICITED 2u
/*
 * With an arm: the library is spinning on this CQ (METAROCE_BUSY_POLL) and takes the event
 * itself when a completion satisfies the arm, clearing the arm with the compare-and-swap the
 * daemon uses to fire. The daemon leaves a spinning arm alone. Before the library sleeps it
 * clears the bit, fences and looks at the ring again, while the daemon fences between
 * producing a completion and reading the arm: either the daemon sees the bit gone and fires,
 * or the library sees the completion and takes it (both may try: the exchange picks one).
 */
#define MRC_CQ_ARM_SPINNING 4u
#define MRC_QP_AUX_ERROR 1u
#define MRC_SRQ_AUX_LIMIT 4u /* IBV_EVENT_SRQ_LIMIT_REACHED is owed */
#define MRC_RING_AUX_NEED_WAKEUP 2u

/*
 * A client's doorbell page: one per control connection, created by the daemon and handed
 * over with the HELLO reply. Before it writes its doorbell eventfd the library sets the QP's
 * bit here (the one the CREATE_QP reply names), so a wakeup tells the daemon which QPs to
 * look at; the daemon takes each word with an atomic exchange. A bit already set means a
 * doorbell is on its way: the eventfd need not be written again. Bits name no QP of another
 * client: the daemon checks each against its owner.
 */
#define MRC_DOORBELL_MAGIC 0x4d524442u /* "MRDB" */
#define MRC_DOORBELL_VERSION 1
#define MRC_DOORBELL_BITS 4096u

struct mrc_doorbell_page {
	__u32 magic;   /* MRC_DOORBELL_MAGIC */
	__u16 version; /* MRC_DOORBELL_VERSION */
	__u16 reserved0;
	__u32 bits;    /* MRC_DOORBELL_BITS */
	__u32 reserved[13];
	__u64 rung[MRC_DOORBELL_BITS / 64]; /* bit b: word b / 64, mask 1 << (b % 64) */
};

/* Offsets of the parts of a ring region. */
#define MRC_RING_PRODUCER_OFF 64
#define MRC_RING_CONSUMER_OFF 128
#define MRC_RING_ENTRIES_OFF 192
#define MRC_RING_BYTES(entries, entry_size) (MRC_RING_ENTRIES_OFF + (entries) * (entry_size))

/*
 * The values the entries carry, defined here and nowhere else: the library writes them from
 * verbs' and reads them into verbs', the daemon maps them to and from its engine's (which
 * neither side of this boundary includes).
 */
enum mrc_sq_opcode {
	MRC_SQ_WRITE = 0,
	MRC_SQ_WRITE_IMM = 1,
	MRC_SQ_SEND = 2,
	MRC_SQ_SEND_IMM = 3,
	MRC_SQ_READ = 4,
	MRC_SQ_ATOMIC_CMP_SWAP = 5,  /* 8 bytes at raddr; the original lands in sge[0] */
	MRC_SQ_ATOMIC_FETCH_ADD = 6,
	MRC_SQ_SEND_INV = 7,	     /* a SEND; imm is the peer's key to invalidate [SPEC R-520] */
	MRC_SQ_BIND_MW = 8,	     /* bind (or, length 0, unbind) a window: the bind fields */
	MRC_SQ_LOCAL_INV = 9,	     /* invalidate a type 2 window of ours: imm is its key */
};

#define MRC_SQ_F_SIGNALED 0x01u	 /* IBV_SEND_SIGNALED */
#define MRC_SQ_F_SOLICITED 0x02u /* IBV_SEND_SOLICITED */
#define MRC_SQ_F_FENCE 0x04u	 /* IBV_SEND_FENCE */
#define MRC_SQ_F_ALL (MRC_SQ_F_SIGNALED | MRC_SQ_F_SOLICITED | MRC_SQ_F_FENCE)

/* ibv_wc_status's meanings, our own numbers. */
enum mrc_cq_status {
	MRC_CQ_SUCCESS = 0,
	MRC_CQ_LOC_LEN_ERR = 1,
	MRC_CQ_WR_FLUSH_ERR = 2,
	MRC_CQ_REM_ACCESS_ERR = 3,
	MRC_CQ_REM_INV_REQ_ERR = 4,
	MRC_CQ_REM_OP_ERR = 5,
	MRC_CQ_RETRY_EXC_ERR = 6,
	MRC_CQ_RNR_RETRY_EXC_ERR = 7,
	MRC_CQ_LOC_QP_OP_ERR = 8,
	MRC_CQ_LOC_PROT_ERR = 9,
	MRC_CQ_GENERAL_ERR = 10, /* what the daemon could not map to a better one */
	MRC_CQ_MW_BIND_ERR = 11, /* a bind or local invalidation refused [SPEC R-523] */
};

enum mrc_cq_opcode {
	MRC_CQ_SEND = 0,
	MRC_CQ_RDMA_WRITE = 1,
	MRC_CQ_RDMA_READ = 2,
	MRC_CQ_RECV = 3,		/* a SEND or SEND with immediate arrived */
	MRC_CQ_RECV_RDMA_WITH_IMM = 4,	/* a WRITE with immediate arrived */
	MRC_CQ_COMP_SWAP = 5,
	MRC_CQ_FETCH_ADD = 6,
	MRC_CQ_BIND_MW = 7,
	MRC_CQ_LOCAL_INV = 8,
};

#define MRC_CQ_F_WITH_IMM 0x01u
#define MRC_CQ_F_SOLICITED 0x02u
#define MRC_CQ_F_GRH 0x04u /* a UD receive: the buffer begins with the 40-byte GRH */
#define MRC_CQ_F_WITH_INV 0x08u /* a SEND_INV arrived: imm is the key it invalidated */

/* The completion opcode of a send work request. */
static inline __u8 mrc_sq_cq_opcode(__u8 sq_opcode)
{
	return sq_opcode == MRC_SQ_WRITE || sq_opcode == MRC_SQ_WRITE_IMM ? MRC_CQ_RDMA_WRITE
	       : sq_opcode == MRC_SQ_READ				  ? MRC_CQ_RDMA_READ
	       : sq_opcode == MRC_SQ_ATOMIC_CMP_SWAP			  ? MRC_CQ_COMP_SWAP
	       : sq_opcode == MRC_SQ_ATOMIC_FETCH_ADD			  ? MRC_CQ_FETCH_ADD
	       : sq_opcode == MRC_SQ_BIND_MW				  ? MRC_CQ_BIND_MW
	       : sq_opcode == MRC_SQ_LOCAL_INV				  ? MRC_CQ_LOCAL_INV
									  : MRC_CQ_SEND;
}

/* READ and the atomics: their scatter elements are written into (local write access). */
static inline int mrc_sq_writes_locally(__u8 sq_opcode)
{
	return sq_opcode == MRC_SQ_READ || sq_opcode == MRC_SQ_ATOMIC_CMP_SWAP ||
	       sq_opcode == MRC_SQ_ATOMIC_FETCH_ADD;
}

/* A scatter element as the application wrote it: addresses in the application's space. */
struct mrc_shm_sge {
	__u64 addr;
	__u32 length;
	__u32 lkey;
};

/* ibv_post_send, one work request. */
struct mrc_sq_entry {
	__u64 wr_id;
	__u8 opcode;	/* enum mrc_sq_opcode */
	__u8 flags;	/* MRC_SQ_F_* */
	__u8 num_sge;	/* <= MRC_RING_MAX_SGE */
	__u8 reserved;
	__u32 imm;	/* *_IMM: verbs' imm_data, its bytes as the application wrote them (network
			 * order); SEND_INV, LOCAL_INV: the key to invalidate */
	union {
		struct { /* an RC QP's */
			__u32 rkey;
			__u32 reserved2;
			__u64 raddr;
			__u64 compare_add; /* ATOMIC_CMP_SWAP: compared with; FETCH_ADD: addend */
			__u64 swap;	   /* ATOMIC_CMP_SWAP: stored on a match */
		};
		struct { /* a UD QP's SEND and SEND_IMM: the address handle's destination */
			__u32 remote_qpn;
			__u32 remote_qkey;  /* bit 31 set: the QP's own [SPEC R-426] */
			__u8 dgid[16];	    /* the peer's address, IPv4-mapped for IPv4 */
			__u64 ud_reserved;  /* 0 */
		};
		struct { /* BIND_MW [SPEC 4.9] */
			__u32 mw_rkey;	  /* the key the window takes: its own, new low byte */
			__u32 mr_lkey;	  /* the region it opens onto; ignored with length 0 */
			__u64 mw_addr;	  /* the window's first byte, in the region's addresses */
			__u64 mw_length;  /* 0: unbind (type 1) */
			__u32 mw_access;  /* MRC_CTL_ACCESS_REMOTE_* | MRC_CTL_ACCESS_ZERO_BASED */
			__u32 mw_reserved; /* 0 */
		};
	};
	struct mrc_shm_sge sge[MRC_RING_MAX_SGE];
};

/* ibv_post_recv, one work request. */
struct mrc_rq_entry {
	__u64 wr_id;
	__u8 num_sge;
	__u8 reserved[7];
	struct mrc_shm_sge sge[MRC_RING_MAX_SGE];
};

/* One work completion. */
struct mrc_cq_entry {
	__u64 wr_id;
	__u8 status;	/* enum mrc_cq_status */
	__u8 opcode;	/* enum mrc_cq_opcode */
	__u8 flags;	/* MRC_CQ_F_* */
	__u8 sl;	/* a UD receive: the RoCEv2 packet type, as mlx5 reports it [SPEC R-425] */
	__u32 byte_len;
	__u32 imm;
	__u32 qp_num;
	__u32 src_qp;	/* a UD receive's: the sending QP */
	__u32 reserved2;
};

_Static_assert(sizeof(struct mrc_ring_hdr) == 64, "ring header is one cache line");
_Static_assert(sizeof(struct mrc_ring_index) == 64, "an index owns its cache line");
_Static_assert(sizeof(struct mrc_sq_entry) == 112, "mrc_sq_entry is 112 bytes");
_Static_assert(sizeof(struct mrc_rq_entry) == 80, "mrc_rq_entry is 80 bytes");
_Static_assert(sizeof(struct mrc_cq_entry) == 32, "mrc_cq_entry is 32 bytes");

#endif /* METAROCE_SHM_H */
