/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verbs calls verbs_check does not reach, each against what rdma-core documents, in one
 * process over loopback QPs: device, port and GID attributes as RoCE programs read them;
 * overlapping registrations on one page (each must keep receiving one-sided writes);
 * ibv_rereg_mr (new translation and keys; the old key refused), and with every combination of
 * new translation, access and PD, verified by the bytes a WRITE lands; protection domains as
 * a boundary between one process's QPs and regions; RTS to RTS; atomics and their refusals;
 * inline sends; ibv_query_qp;
 * what is refused and how (CQ timestamps, a CQ in use, UD QPs, qp_ex of a plain QP); and the
 * <metaroce/metaroce.h> extension, found with dlsym as a program run under metaroce-run would.
 *
 *   metaroce-run verbs_api_check       exit 0 when every check holds
 */
#include <dlfcn.h>

#include <metaroce/metaroce.h>

#include "api/api.h"

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct side a, b, c, d;
	uint8_t *page, *src;
	struct ibv_mr *src_mr, *lo, *hi, *mr;
	int err;

	if (!list || !list[0]) {
		fprintf(stderr, "verbs_api_check: no RDMA device found\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("open device");

	/* --- what RoCE programs read */
	CHECK(ibv_query_device(ctx, &dev) == 0 && dev.phys_port_cnt == 1 && dev.max_qp > 0 &&
		      dev.max_sge >= 1 && dev.atomic_cap == IBV_ATOMIC_HCA,
	      "device: 1 port, QPs, SGEs, atomics (IBV_ATOMIC_HCA)");
	CHECK(dev.vendor_id == 0xffffff && dev.vendor_part_id != 0 && dev.max_pd > 0 &&
		      dev.max_qp_rd_atom == 16 && dev.max_qp_init_rd_atom == 16 &&
		      !(dev.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT) && dev.max_srq > 0 &&
		      dev.max_srq_wr > 0 && dev.max_srq_sge > 0 && dev.max_ah > 0 &&
		      dev.max_mw > 0 && (dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		      (dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "device: a software vendor id (0x%x), READs 16 each way, SRQs, AHs, windows 1, 2B",
	      dev.vendor_id);
	{
		struct ibv_device_attr_ex ex;

		CHECK(ibv_query_device_ex(ctx, NULL, &ex) == 0 && ex.phys_port_cnt_ex == 1 &&
			      ex.orig_attr.vendor_id == dev.vendor_id && ex.odp_caps.general_caps == 0,
		      "ibv_query_device_ex: phys_port_cnt_ex %u, no ODP", ex.phys_port_cnt_ex);
	}
	CHECK(ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE &&
		      port.link_layer == IBV_LINK_LAYER_ETHERNET && port.gid_tbl_len >= 1 &&
		      port.lid == 0 && port.active_mtu >= IBV_MTU_1024,
	      "port 1: active, Ethernet link layer, LID 0, GIDs %d, MTU enum %d",
	      port.gid_tbl_len, port.active_mtu);
	CHECK(ibv_query_port(ctx, 2, &port) != 0, "port 2 does not exist");
	CHECK(ibv_query_gid(ctx, 1, 0, &gid0) == 0 && gid0.raw[10] == 0xff &&
		      gid0.raw[11] == 0xff && !memcmp(gid0.raw, "\0\0\0\0\0\0\0\0\0\0", 10),
	      "GID 0 is an IPv4-mapped address: %u.%u.%u.%u", gid0.raw[12], gid0.raw[13],
	      gid0.raw[14], gid0.raw[15]);
	{
		struct ibv_gid_entry e;

		CHECK(ibv_query_gid_ex(ctx, 1, 0, &e, 0) == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
			      !memcmp(e.gid.raw, gid0.raw, 16),
		      "GID 0 is RoCE v2");
		CHECK(ibv_query_gid_ex(ctx, 1, 99, &e, 0) != 0, "GID 99 does not exist");
	}

	/* --- two regions on one page: both must keep receiving one-sided writes */
	make_side(&a);
	make_side(&b);
	connect_to(&a, b.qp->qp_num);
	connect_to(&b, a.qp->qp_num);
	page = aligned_alloc(4096, 8192);
	src = malloc(256);
	if (!page || !src)
		die("malloc");
	memset(page, 0, 8192);
	lo = ibv_reg_mr(b.pd, page + 100, 200, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	hi = ibv_reg_mr(b.pd, page + 1000, 6000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	src_mr = ibv_reg_mr(a.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	if (!lo || !hi || !src_mr)
		die("reg_mr");
	memset(src, 0x11, 256);
	CHECK(write_to(&a, src_mr, src, 64, lo->rkey, (uintptr_t)page + 120, 0) == IBV_WC_SUCCESS &&
		      page[120] == 0x11 && page[183] == 0x11 && page[184] == 0,
	      "WRITE into the first of two regions sharing a page lands");
	memset(src, 0x22, 256);
	CHECK(write_to(&a, src_mr, src, 64, hi->rkey, (uintptr_t)page + 1000, 0) ==
			      IBV_WC_SUCCESS &&
		      page[1000] == 0x22 && page[1063] == 0x22,
	      "WRITE into the second, registered after it, lands too");
	memset(src, 0x33, 256);
	CHECK(write_to(&a, src_mr, src, 64, lo->rkey, (uintptr_t)page + 200, 0) ==
			      IBV_WC_SUCCESS &&
		      page[200] == 0x33,
	      "... and the first still receives after the second was registered");

	/* --- rereg: a new translation gets new keys; the old key no longer reaches it */
	{
		uint32_t old_rkey = hi->rkey;
		uint8_t *other = calloc(1, 4096);

		err = ibv_rereg_mr(hi, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other, 4096,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		CHECK(err == 0 && hi->addr == other, "ibv_rereg_mr to a new buffer");
		memset(src, 0x44, 256);
		CHECK(write_to(&a, src_mr, src, 32, hi->rkey, (uintptr_t)other + 10, 0) ==
				      IBV_WC_SUCCESS &&
			      other[10] == 0x44 && other[41] == 0x44,
		      "WRITE with the new rkey lands in the new buffer");
		if (old_rkey != hi->rkey) {
			enum ibv_wc_status st = write_to(&a, src_mr, src, 32, old_rkey,
							 (uintptr_t)page + 1000, 0);

			CHECK(st == IBV_WC_REM_ACCESS_ERR,
			      "the old rkey is refused: %s", ibv_wc_status_str(st));
		} else {
			CHECK(false, "ibv_rereg_mr kept the rkey");
		}
		ibv_dereg_mr(hi);
		free(other);
	}

	rereg_matrix();
	pd_boundary();
	atomics();
	shared_receive_queue();
	unreliable_datagrams();
	memory_windows();

	/* --- inline data: the source needs no registration and may change at once */
	make_side(&c);
	make_side(&d);
	connect_to(&c, d.qp->qp_num);
	connect_to(&d, c.qp->qp_num);
	mr = ibv_reg_mr(d.pd, page + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	{
		char msg[40] = "inline bytes, copied at post time";

		CHECK(write_to(&c, NULL, msg, sizeof(msg), mr->rkey, (uintptr_t)page + 4096,
			       IBV_SEND_INLINE) == IBV_WC_SUCCESS &&
			      !memcmp(page + 4096, "inline bytes, copied at post time",
				      sizeof(msg)),
		      "inline RDMA WRITE from an unregistered stack buffer");
	}

	/* --- the extension API: 2 paths on plane 0 only */
	{
		int (*set_paths)(struct ibv_qp *, unsigned, uint32_t) =
			(int (*)(struct ibv_qp *, unsigned, uint32_t))dlsym(RTLD_DEFAULT,
									   "metaroce_qp_set_paths");
		int (*query_paths)(struct ibv_qp *, struct metaroce_path_stats *, unsigned) =
			(int (*)(struct ibv_qp *, struct metaroce_path_stats *,
				 unsigned))dlsym(RTLD_DEFAULT, "metaroce_query_paths");
		struct metaroce_path_stats st[32];
		struct side e, f;
		struct ibv_mr *fmr;
		int n;

		CHECK(set_paths && query_paths, "metaroce_qp_set_paths and _query_paths found");
		if (!set_paths || !query_paths)
			return 1;
		make_side(&e);
		make_side(&f);
		CHECK(set_paths(e.qp, 2, 0x1) == 0, "metaroce_qp_set_paths(2 per plane, plane 0)");
		CHECK(set_paths(e.qp, 17, 0) == EINVAL, "... 17 paths per plane refused");
		connect_to(&e, f.qp->qp_num);
		connect_to(&f, e.qp->qp_num);
		CHECK(set_paths(e.qp, 4, 0) == EINVAL, "... and refused after RTR");
		/* the target QP reaches regions of its own PD only */
		fmr = ibv_reg_mr(f.pd, page + 4096, 4096,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!fmr)
			die("reg_mr");
		memset(src, 0x55, 256);
		CHECK(write_to(&e, NULL, src, 32, fmr->rkey, (uintptr_t)page + 5000,
			       IBV_SEND_INLINE) == IBV_WC_SUCCESS &&
			      page[5000] == 0x55,
		      "a WRITE on the narrowed QP lands");
		n = query_paths(e.qp, st, 32);
		CHECK(n == 2 && st[0].plane == 0 && st[1].plane == 0 &&
			      st[0].tx_packets + st[1].tx_packets >= 1 && st[0].sport != st[1].sport,
		      "metaroce_query_paths: %d paths, planes %u and %u, %llu packets", n,
		      n > 0 ? st[0].plane : 99, n > 1 ? st[1].plane : 99,
		      n > 1 ? (unsigned long long)(st[0].tx_packets + st[1].tx_packets) : 0ull);
		n = query_paths(f.qp, st, 32);
		CHECK(n >= 2, "the peer QP kept its own paths: %d", n);
		ibv_destroy_qp(e.qp);
		ibv_destroy_qp(f.qp);
		ibv_destroy_cq(e.cq);
		ibv_destroy_cq(f.cq);
		ibv_dereg_mr(fmr);
		ibv_dealloc_pd(e.pd);
		ibv_dealloc_pd(f.pd);
	}

	/* --- inline data stays the application's until completion: batches of max_send_wr
	 * inline WRITEs, each with its own pattern and target, the caller's buffer scribbled
	 * over right after each post */
	{
		enum { BATCHES = 12, PER = 16, LEN = 200 };
		uint8_t *dst = page + 4096 + 256;
		bool ok = true;

		for (unsigned round = 0; round < BATCHES && ok; round++) {
			unsigned done = 0;

			for (unsigned k = 0; k < PER && ok; k++) {
				uint8_t msg[LEN];
				struct ibv_sge sge = { (uintptr_t)msg, LEN, 0 };
				struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1,
							  .opcode = IBV_WR_RDMA_WRITE,
							  .send_flags = IBV_SEND_SIGNALED |
									IBV_SEND_INLINE,
							  .wr.rdma = { (uintptr_t)dst + k * LEN,
								       mr->rkey } },
						   *bad;

				memset(msg, (int)(round * PER + k + 1), LEN);
				ok = ibv_post_send(c.qp, &wr, &bad) == 0;
				memset(msg, 0xee, LEN);
			}
			while (ok && done < PER) {
				struct ibv_wc wc;

				ok = poll_one(c.cq, &wc) && wc.status == IBV_WC_SUCCESS;
				done++;
			}
			for (unsigned k = 0; k < PER * LEN && ok; k++)
				ok = dst[k] == (uint8_t)(round * PER + k / LEN + 1);
		}
		CHECK(ok, "%u inline WRITEs in batches of max_send_wr, every target byte-exact",
		      BATCHES * PER);
	}

	/* --- query and refusals */
	CHECK(ibv_query_qp(c.qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia) == 0 &&
		      qa.qp_state == IBV_QPS_RTS && qa.cap.max_inline_data >= 64 &&
		      qa.cap.max_send_wr >= 16 && qia.qp_type == IBV_QPT_RC,
	      "ibv_query_qp: RTS, the caps granted");
	errno = 0;
	CHECK(ibv_qp_to_qp_ex(c.qp) == NULL, "ibv_qp_to_qp_ex of a QP made without send_ops_flags");
	{
		struct ibv_cq_init_attr_ex ca = { .cqe = 8,
						  .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };

		errno = 0;
		CHECK(ibv_create_cq_ex(ctx, &ca) == NULL && errno == EOPNOTSUPP,
		      "CQ with completion timestamps refused: EOPNOTSUPP");
	}
	{
		struct ibv_qp_init_attr uc = { .send_cq = c.cq, .recv_cq = c.cq, .qp_type = IBV_QPT_UC,
					       .cap = { 1, 1, 1, 1, 0 } };

		errno = 0;
		CHECK(ibv_create_qp(c.pd, &uc) == NULL && errno == EOPNOTSUPP,
		      "UC QP refused: EOPNOTSUPP");
	}
	{
		/* what this device does not offer fails as rdma-core fails without the provider's
		 * support: EOPNOTSUPP, and nothing of the caller's touched */
		struct ibv_td_init_attr tda = { 0 };
		struct ibv_parent_domain_init_attr pda = { .pd = c.pd, .alloc = NULL };
		struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
							      IBV_XRCD_INIT_ATTR_OFLAGS,
						 .fd = -1, .oflags = 0 };
		struct ibv_alloc_dm_attr dma = { .length = 4096 };
		struct ibv_qp_init_attr raw = { .send_cq = c.cq, .recv_cq = c.cq,
						.qp_type = IBV_QPT_RAW_PACKET,
						.cap = { 1, 1, 1, 1, 0 } };
		struct ibv_qp_attr big = { .qp_state = IBV_QPS_RTS, .max_rd_atomic = 17 };
		void *odp;

		errno = 0;
		CHECK(ibv_alloc_td(ctx, &tda) == NULL && errno == EOPNOTSUPP,
		      "thread domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_alloc_parent_domain(ctx, &pda) == NULL && errno == EOPNOTSUPP,
		      "parent domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_open_xrcd(ctx, &xa) == NULL && errno == EOPNOTSUPP,
		      "XRC domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_alloc_dm(ctx, &dma) == NULL && errno == EOPNOTSUPP,
		      "device memory refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_create_qp(c.pd, &raw) == NULL && errno == EOPNOTSUPP,
		      "raw packet QP refused: EOPNOTSUPP");
		errno = 0;
		odp = malloc(4096);
		CHECK(odp && ibv_reg_mr(c.pd, odp, 4096,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) == NULL &&
			      errno == EOPNOTSUPP,
		      "on-demand paging refused: EOPNOTSUPP");
		free(odp);
		CHECK(ibv_modify_qp(c.qp, &big, IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
		      "max_rd_atomic 17, above max_qp_init_rd_atom: EINVAL");
	}
	CHECK(ibv_destroy_cq(c.cq) == EBUSY, "destroying a CQ a QP uses: EBUSY");

	CHECK(ibv_destroy_qp(c.qp) == 0 && ibv_destroy_qp(d.qp) == 0 && ibv_destroy_qp(a.qp) == 0 &&
		      ibv_destroy_qp(b.qp) == 0 && ibv_destroy_cq(c.cq) == 0 &&
		      ibv_destroy_cq(d.cq) == 0 && ibv_destroy_cq(a.cq) == 0 &&
		      ibv_destroy_cq(b.cq) == 0 && ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(lo) == 0 &&
		      ibv_dereg_mr(src_mr) == 0,
	      "everything destroyed cleanly");
	ibv_dealloc_pd(a.pd);
	ibv_dealloc_pd(b.pd);
	ibv_dealloc_pd(c.pd);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(page);
	free(src);
	printf("verbs_api_check: %s\n", failures ? "FAILED" : "OK");
	return failures ? 1 : 0;
}

