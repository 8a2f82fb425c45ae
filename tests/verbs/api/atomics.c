/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Atomics over loopback QPs and their refusals [SPEC R-321..R-325]. */
#include "api/api.h"

/* One atomic on side s into target at raddr under rkey; the original lands in *result. */
static enum ibv_wc_status atomic_on(struct side *s, uint64_t *result, enum ibv_wr_opcode op,
				    uint32_t rkey, uint64_t raddr, uint64_t compare_add,
				    uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)result, 8, s->local->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = { raddr, compare_add, swap, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(s->qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	if (!poll_one(s->cq, &wc))
		return IBV_WC_GENERAL_ERR;
	if (wc.status == IBV_WC_SUCCESS &&
	    (wc.opcode != (op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD) ||
	     wc.byte_len != 8))
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/*
 * Atomics over loopback QPs [SPEC R-321..R-325]: FETCH_ADD and CMP_SWAP results and memory;
 * refusals: a misaligned word, a region without remote-atomic access, a QP without it, a
 * result element that is not 8 bytes.
 */
void atomics(void)
{
	uint64_t *words = aligned_alloc(4096, 4096), *results = aligned_alloc(4096, 4096);
	int aw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_pd *target_pd = ibv_alloc_pd(ctx);
	struct ibv_mr *target, *plain;
	enum ibv_wc_status st;
	struct side w, t;

	if (!words || !results || !target_pd)
		die("atomics set-up");
	memset(words, 0, 4096);
	words[0] = 40;
	words[1] = 7;
	make_pair_with(&w, &t, target_pd, results, 4096);
	target = ibv_reg_mr(target_pd, words, 2048, aw);
	plain = ibv_reg_mr(target_pd, (uint8_t *)words + 2048, 2048,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!target || !plain)
		die("reg_mr");
	st = atomic_on(&w, &results[0], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0], 2, 0);
	CHECK(st == IBV_WC_SUCCESS && results[0] == 40 && words[0] == 42,
	      "FETCH_ADD 2 to 40: %s, returned %llu, the word now %llu", ibv_wc_status_str(st),
	      (unsigned long long)results[0], (unsigned long long)words[0]);
	st = atomic_on(&w, &results[1], IBV_WR_ATOMIC_CMP_AND_SWP, target->rkey,
		       (uintptr_t)&words[1], 6, 100);
	CHECK(st == IBV_WC_SUCCESS && results[1] == 7 && words[1] == 7,
	      "CMP_SWAP 6 -> 100 on 7 misses: returned %llu, the word stays %llu",
	      (unsigned long long)results[1], (unsigned long long)words[1]);
	st = atomic_on(&w, &results[2], IBV_WR_ATOMIC_CMP_AND_SWP, target->rkey,
		       (uintptr_t)&words[1], 7, UINT64_MAX);
	CHECK(st == IBV_WC_SUCCESS && results[2] == 7 && words[1] == UINT64_MAX,
	      "CMP_SWAP 7 -> 2^64-1 on 7 hits: returned %llu", (unsigned long long)results[2]);
	st = atomic_on(&w, &results[3], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[1], 3, 0);
	CHECK(st == IBV_WC_SUCCESS && words[1] == 2, "FETCH_ADD wraps modulo 2^64: %llu",
	      (unsigned long long)words[1]);
	{
		struct ibv_sge sge = { (uintptr_t)results, 16, w.local->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .wr.atomic = { (uintptr_t)&words[0], 1, 0, target->rkey } },
				   *bad;

		CHECK(ibv_post_send(w.qp, &wr, &bad) == EINVAL && words[0] == 42,
		      "an atomic whose result element is 16 bytes: EINVAL at post");
	}
	st = atomic_on(&w, &results[4], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0] + 4, 1, 0);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && words[0] == 42,
	      "FETCH_ADD on a misaligned word: %s, nothing changed", ibv_wc_status_str(st));
	drop_pair(&w, &t);

	make_pair_with(&w, &t, target_pd, results, 4096);
	st = atomic_on(&w, &results[5], IBV_WR_ATOMIC_FETCH_AND_ADD, plain->rkey,
		       (uintptr_t)words + 2048, 1, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && words[256] == 0,
	      "FETCH_ADD into a region without remote-atomic access: %s", ibv_wc_status_str(st));
	drop_pair(&w, &t);

	make_pair_with(&w, &t, target_pd, results, 4096);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS,
					 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
							    IBV_ACCESS_REMOTE_WRITE };

		CHECK(ibv_modify_qp(t.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0,
		      "RTS to RTS: the target QP stops admitting atomics");
	}
	st = atomic_on(&w, &results[6], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0], 1, 0);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && words[0] == 42,
	      "FETCH_ADD through a QP without remote-atomic access: %s", ibv_wc_status_str(st));
	drop_pair(&w, &t);
	ibv_dereg_mr(plain);
	ibv_dereg_mr(target);
	ibv_dealloc_pd(target_pd);
	free(words);
	free(results);
}

