/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verbs some scripts need beyond a connected QP, as a program calls them: a UD QP (SPEC
 * 4.8) to RTS with its qkey, an address handle for the peer, a datagram sent to the peer's QP
 * under its qkey; a type 2 memory window (SPEC 4.9) bound through a QP, and invalidated;
 * and verbs' values in the suite's words.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_AGENTS_MORE_VERBS_H
#define METAROCE_TESTS_COMPLIANCE_AGENTS_MORE_VERBS_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* INIT, RTR and RTS; 0 or an errno. */
int ud_ready(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn);
/* The address handle of an IPv4 peer, NULL (errno set) when verbs refuses it. */
struct ibv_ah *ud_peer(struct ibv_pd *pd, struct in_addr peer);
/* A send (with imm when with_imm) of sge to QP remote_qpn at ah; 0 or an errno. */
int ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey,
	    struct ibv_sge *sge, uint64_t wr_id, bool with_imm, uint32_t imm, bool solicited);

/* A type 2 window over all of mr with its remote access, bound through qp (whose send
 * completions go to cq, polled here until the bind's comes); NULL with errno set. */
struct ibv_mw *window_bound(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_cq *cq,
			    struct ibv_mr *mr, int access);
/* IBV_WR_LOCAL_INV of rkey through qp; 0 or an errno. */
int window_invalidate(struct ibv_qp *qp, uint32_t rkey, uint64_t wr_id);

/* The verbs MTU of a payload size (0: none is), and a completion's status and opcode as the
 * suite names them (ibv_wc_status_str's words; "?" for one it does not know). */
enum ibv_mtu verbs_mtu_of(uint16_t payload);
const char *verbs_status_name(enum ibv_wc_status s);
const char *verbs_opcode_name(enum ibv_wc_opcode o);

#endif
