/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/auth.c and the packet tags (SPEC 14.6): the trailer on the wire, the tag against
 * libsodium's SipHash, keys that pair up between two daemons and nowhere else, addresses an
 * allowed key may claim, and a transfer in virtual time with every packet tagged, into which
 * forgeries that pass every sequence check are refused for their tag alone.
 */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include <metaroce/drop_reasons.h>

#include "codec_fixtures.h"
#include "conn_xfer.h"
#include "proto/auth.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "suites.h"

static void v4(uint8_t out[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	mrc_addr_from_v4(out, (const uint8_t[4]){ a, b, c, d });
}

static void random_key(struct mrc_auth_key *k)
{
	randombytes_buf(k, sizeof(*k));
}

/* An ACK with MRC_F_AUTH and its trailer under k, in codec_buf; its whole length. */
static size_t tagged_ack(const struct mrc_auth_key *k)
{
	struct mrc_packet p = codec_sample(MRC_OP_ACK, 1);
	size_t len;

	p.flags |= MRC_F_AUTH;
	ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_OK);
	mrc_auth_put_tag(k, codec_buf, mrc_header_len(MRC_OP_ACK), codec_buf + len);
	return len + MRC_AUTH_TAG_LEN;
}

/* The tag is SipHash-2-4 of the headers as sent, checksum included, under the QP key: the
 * same bytes libsodium computes, written as its reference writes them. */
START_TEST(mrc_auth__tag_is_siphash_of_the_headers)
{
	uint8_t key[16], want[8];
	struct mrc_auth_key k;
	size_t len;

	ck_assert_int_ge(sodium_init(), 0);
	for (unsigned round = 0; round < 200; round++) {
		randombytes_buf(key, sizeof(key));
		memcpy(&k.k0, key, 8); /* little-endian halves: this test runs on x86 and arm64 */
		memcpy(&k.k1, key + 8, 8);
		len = tagged_ack(&k);
		crypto_shorthash_siphash24(want, codec_buf, mrc_header_len(MRC_OP_ACK), key);
		ck_assert_mem_eq(codec_buf + len - MRC_AUTH_TAG_LEN, want, sizeof(want));
	}
}
END_TEST

/* The trailer lies outside payload_len and the checksum; AUTH without one is malformed, and
 * any change to the headers or the tag fails the tag. */
START_TEST(mrc_codec__auth_trailer_decoded_and_checked)
{
	struct mrc_auth_key k, other;
	struct mrc_packet got;
	size_t len;

	random_key(&k);
	random_key(&other);
	len = tagged_ack(&k);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_uint_eq(got.flags & MRC_F_AUTH, MRC_F_AUTH);
	ck_assert_ptr_eq(got.auth, codec_buf + len - MRC_AUTH_TAG_LEN);
	ck_assert_ptr_eq(got.wire, codec_buf);
	ck_assert(mrc_auth_packet_ok(&k, &got));
	ck_assert(!mrc_auth_packet_ok(&other, &got));
	/* missing or short trailer: lengths disagree */
	ck_assert_int_eq(mrc_decode(codec_buf, len - MRC_AUTH_TAG_LEN, &got), MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(mrc_decode(codec_buf, len - 1, &got), MRC_WIRE_E_LENGTH);
	/* every bit of the tag matters, and the checksum does not see it */
	for (unsigned bit = 0; bit < 8 * MRC_AUTH_TAG_LEN; bit++) {
		codec_buf[len - MRC_AUTH_TAG_LEN + bit / 8] ^= (uint8_t)(1u << bit % 8);
		ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
		ck_assert(!mrc_auth_packet_ok(&k, &got));
		codec_buf[len - MRC_AUTH_TAG_LEN + bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	/* a header field changed and the checksum fixed, as an on-path writer would */
	codec_buf[sizeof(struct mrc_hdr) + 12] ^= 0x40; /* rate hint */
	codec_reseal(codec_buf, len - MRC_AUTH_TAG_LEN);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert(!mrc_auth_packet_ok(&k, &got));
	/* without the flag a packet has no trailer, and none is taken from its end */
	len = codec_encode_ok(&(struct mrc_packet){ .opcode = MRC_OP_CLOSE, .dst_qpn = 5 });
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_ptr_null(got.auth);
	ck_assert(!mrc_auth_packet_ok(&k, &got));
}
END_TEST

struct identity {
	struct mrc_auth auth;
	struct mrc_auth_peer allowed[2];
	uint8_t addr[16];
};

static void identity_init(struct identity *id, uint8_t host)
{
	ck_assert_int_ge(sodium_init(), 0);
	memset(id, 0, sizeof(*id));
	id->auth.mode = MRC_AUTH_HEADER;
	crypto_kx_keypair(id->auth.public_key, id->auth.secret_key);
	v4(id->addr, 198, 18, 0, host);
}

/* a allows b's key for b's /32 */
static void allow(struct identity *a, const struct identity *b)
{
	struct mrc_auth_peer *p = &a->allowed[a->auth.n_allowed++];

	memcpy(p->public_key, b->auth.public_key, sizeof(p->public_key));
	memcpy(p->prefixes[0].addr, b->addr, 16);
	p->prefixes[0].bits = 128;
	p->n_prefixes = 1;
	a->auth.allowed = a->allowed;
}

static void announce_one(struct mrc_discover *d, const uint8_t addr[16])
{
	memset(d, 0, sizeof(*d));
	d->n_addrs = 1;
	memcpy(d->addrs[0].addr, addr, 16);
}

/* a's keys with b, b's with a: each one's tx is the other's rx, and tx differs from rx. */
static void check_pairing(struct identity *a, struct identity *b)
{
	struct mrc_peer_keys ab, ba;
	struct mrc_auth_key a_tx, a_rx, b_tx, b_rx;
	struct mrc_discover d;

	ck_assert_int_eq(mrc_auth_init(&a->auth), 0);
	ck_assert_int_eq(mrc_auth_init(&b->auth), 0);
	announce_one(&d, b->addr);
	ck_assert_int_eq(mrc_auth_static_keys(&a->auth, b->auth.public_key, b->addr, &d, &ab), 0);
	announce_one(&d, a->addr);
	ck_assert_int_eq(mrc_auth_static_keys(&b->auth, a->auth.public_key, a->addr, &d, &ba), 0);
	ck_assert_mem_eq(ab.static_tx, ba.static_rx, MRC_AUTH_KEY_LEN);
	ck_assert_mem_eq(ab.static_rx, ba.static_tx, MRC_AUTH_KEY_LEN);
	ck_assert(memcmp(ab.static_tx, ab.static_rx, MRC_AUTH_KEY_LEN));
	mrc_auth_sessions(&ab, 111, 222);
	mrc_auth_sessions(&ba, 222, 111);
	ck_assert_mem_eq(ab.session_tx, ba.session_rx, MRC_AUTH_KEY_LEN);
	ck_assert_mem_eq(ab.session_rx, ba.session_tx, MRC_AUTH_KEY_LEN);
	ck_assert(memcmp(ab.session_tx, ab.static_tx, MRC_AUTH_KEY_LEN));
	ck_assert_mem_eq(&ab.ud_tx, &ba.ud_rx, sizeof(ab.ud_tx));
	mrc_auth_qp_keys(&ab, 7, 9, &a_tx, &a_rx);
	mrc_auth_qp_keys(&ba, 9, 7, &b_tx, &b_rx);
	ck_assert_mem_eq(&a_tx, &b_rx, sizeof(a_tx));
	ck_assert_mem_eq(&a_rx, &b_tx, sizeof(a_rx));
	ck_assert(memcmp(&a_tx, &a_rx, sizeof(a_tx)));
	/* another QP pair, or a restart (a new node id), and every key is another */
	mrc_auth_qp_keys(&ab, 7, 10, &b_tx, &b_rx);
	ck_assert(memcmp(&a_tx, &b_tx, sizeof(a_tx)));
	mrc_auth_sessions(&ab, 111, 223);
	ck_assert(memcmp(ab.session_tx, ba.session_rx, MRC_AUTH_KEY_LEN));
}

/* Allowed peers (crypto_kx), a cluster key, and both: the keys pair up. */
START_TEST(mrc_auth__keys_pair_up_in_every_mode)
{
	struct identity a, b;

	identity_init(&a, 1);
	identity_init(&b, 2);
	allow(&a, &b);
	allow(&b, &a);
	check_pairing(&a, &b);

	a.auth.has_cluster_key = b.auth.has_cluster_key = true;
	randombytes_buf(a.auth.cluster_key, MRC_AUTH_KEY_LEN);
	memcpy(b.auth.cluster_key, a.auth.cluster_key, MRC_AUTH_KEY_LEN);
	check_pairing(&a, &b);

	a.auth.n_allowed = b.auth.n_allowed = 0;
	a.auth.allowed = b.auth.allowed = NULL;
	check_pairing(&a, &b);
}
END_TEST

/* Who may speak: an allowed key from its own prefixes only, never our own key, and with
 * neither a cluster key nor allowed peers nothing starts. */
START_TEST(mrc_auth__allowed_keys_claim_their_prefixes_only)
{
	struct identity a, b, c;
	struct mrc_peer_keys k;
	struct mrc_discover d;
	uint8_t elsewhere[16];

	identity_init(&a, 1);
	identity_init(&b, 2);
	identity_init(&c, 3);
	ck_assert_int_eq(mrc_auth_init(&a.auth), -EINVAL); /* nothing to authenticate with */
	allow(&a, &b);
	ck_assert_int_eq(mrc_auth_init(&a.auth), 0);
	v4(elsewhere, 198, 18, 0, 9);
	announce_one(&d, b.addr);
	ck_assert_int_eq(mrc_auth_static_keys(&a.auth, b.auth.public_key, b.addr, &d, &k), 0);
	/* from, or announcing, an address outside b's prefixes */
	ck_assert_int_eq(mrc_auth_static_keys(&a.auth, b.auth.public_key, elsewhere, &d, &k),
			 -EPERM);
	announce_one(&d, elsewhere);
	ck_assert_int_eq(mrc_auth_static_keys(&a.auth, b.auth.public_key, b.addr, &d, &k),
			 -EPERM);
	/* a key nobody allowed, and ours (only a reflection carries it) */
	announce_one(&d, c.addr);
	ck_assert_int_eq(mrc_auth_static_keys(&a.auth, c.auth.public_key, c.addr, &d, &k),
			 -EPERM);
	ck_assert_int_eq(mrc_auth_static_keys(&a.auth, a.auth.public_key, b.addr, &d, &k),
			 -EPERM);
	/* whom to ask first at an address: its allowed key, or nobody */
	ck_assert_int_eq(mrc_auth_keys_for_address(&a.auth, b.addr, &k), 0);
	ck_assert_mem_eq(k.public_key, b.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	ck_assert_int_eq(mrc_auth_keys_for_address(&a.auth, c.addr, &k), -EACCES);
	/* allowing ourselves is a configuration error */
	allow(&a, &a);
	ck_assert_int_eq(mrc_auth_init(&a.auth), -EINVAL);
}
END_TEST

/* A packet for x's victim: pkt encoded with AUTH, tagged under k (NULL: no trailer). */
static int inject_bytes(struct xfer *x, struct mrc_conn *victim, struct mrc_packet *p,
			const struct mrc_auth_key *k)
{
	struct mrc_rx_info rx = { 0 };
	uint8_t buf[256];
	size_t len;

	p->dst_qpn = x->a->conn == victim ? x->a->qpn : x->b->qpn;
	p->tx_ts = (uint32_t)x->sim->now_ns;
	p->flags = k ? MRC_F_AUTH : 0;
	ck_assert_int_eq(mrc_encode(p, buf, sizeof(buf) - MRC_AUTH_TAG_LEN, &len), MRC_WIRE_OK);
	if (k) {
		mrc_auth_put_tag(k, buf, mrc_header_len(p->opcode), buf + len);
		len += MRC_AUTH_TAG_LEN;
	}
	return mrc_conn_recv(victim, &rx, buf, len, x->sim->now_ns);
}

/*
 * Every packet of a transfer tagged, every one checked: it completes byte-exact. A CLOSE and
 * an RNR NAK that know the sequence state (which passes every other check) are refused
 * without a tag, under a wrong key, and under the key a tags with itself (a reflection); a
 * data packet likewise never lands.
 */
START_TEST(mrc_conn__authenticated_transfer_refuses_untagged_forgeries)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct mrc_auth_key a_tx, a_rx, wrong;
	struct mrc_conn_info info;
	struct mrc_packet p;
	struct xfer x;
	/* none, a wrong one, and the victim's own sending key (a packet reflected to it) */
	const struct mrc_auth_key *to_a[3] = { NULL, &wrong, &a_tx };
	const struct mrc_auth_key *to_b[3] = { NULL, &wrong, &a_rx };

	ck_assert_int_ge(sodium_init(), 0);
	random_key(&a_tx);
	random_key(&a_rx);
	random_key(&wrong);
	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.auth = true;
	cc.auth_tx = a_tx;
	cc.auth_rx = a_rx;
	xfer_init(&x, &sc, &cc, 4, 4 << 20);
	xfer_post(&x, MRC_WR_WRITE, 2 << 20, 0);
	xfer_post(&x, MRC_WR_SEND, 1 << 20, 0);
	xfer_post(&x, MRC_WR_READ, 512 << 10, 0);
	xfer_run_to_midway(&x);
	for (unsigned round = 0; round < 300; round++) {
		const struct mrc_auth_key *k = to_a[round % 3];

		mrc_conn_get_info(x.a->conn, &info);
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_CLOSE;
		p.u.close.cum_psn = info.snd_una;
		ck_assert_int_eq(inject_bytes(&x, x.a->conn, &p, k), MRC_DROP_UNAUTHENTICATED);
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_NAK;
		p.u.nak.kind = MRC_NAK_REMOTE_ACCESS;
		p.u.nak.cum_psn = info.snd_una;
		p.u.nak.nak_psn = info.snd_una;
		ck_assert_int_eq(inject_bytes(&x, x.a->conn, &p, k), MRC_DROP_UNAUTHENTICATED);
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_WRITE;
		p.psn = mrc_conn_rcv_base(x.b->conn);
		p.u.data.rkey = x.key_b_dst;
		p.u.data.raddr = 0;
		p.u.data.msg_len = 16;
		p.payload = (const uint8_t *)"forged forged!!!";
		p.payload_len = 16;
		ck_assert_int_eq(inject_bytes(&x, x.b->conn, &p, to_b[round % 3]),
				 MRC_DROP_UNAUTHENTICATED);
		sim_run(x.sim, x.sim->now_ns + 20000, NULL, NULL);
	}
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	xfer_run(&x, 10000000000ull); /* byte-exact, or the test fails */
	ck_assert_uint_ge(x.a->drops[MRC_DROP_UNAUTHENTICATED], 600);
	/* the same CLOSE under the right key ends the QP: the tag was all that refused it */
	mrc_conn_get_info(x.a->conn, &info);
	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_CLOSE;
	p.u.close.cum_psn = info.snd_una;
	ck_assert_int_eq(inject_bytes(&x, x.a->conn, &p, &a_rx), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	xfer_free(&x);
}
END_TEST

/*
 * A sealed WRITE (auth = full, R-342): its payload travels encrypted, its checksum covers the
 * ciphertext, and it opens to the plaintext under the right key only; any byte changed in
 * its headers, payload or trailer (the checksum made right again, as an attacker can), or
 * another key, and it does not open. A tag check of header mode refuses it too.
 */
START_TEST(mrc_auth__sealed_packet_opens_intact_only)
{
	static const char text[] = "the tenant's secret bytes, 41 of them!!!";
	struct mrc_packet p = { .opcode = MRC_OP_WRITE, .flags = MRC_F_AUTH | MRC_F_SEALED,
				.dst_qpn = 77, .psn = 1000 }, got;
	struct mrc_seal_key k, other;
	struct mrc_auth_key sip;
	uint8_t buf[256], plain[64];
	size_t len, hdr_len = mrc_header_len(MRC_OP_WRITE), n;

	ck_assert_int_ge(sodium_init(), 0);
	randombytes_buf(k.k, sizeof(k.k));
	randombytes_buf(other.k, sizeof(other.k));
	random_key(&sip);
	p.u.data = (struct mrc_data){ .msg_len = sizeof(text), .rkey = 0x123456, .raddr = 4096 };
	p.payload = (const uint8_t *)text;
	p.payload_len = sizeof(text);
	ck_assert_int_eq(mrc_encode(&p, buf, sizeof(buf), &len), MRC_WIRE_OK);
	mrc_auth_seal(&k, 5, buf, hdr_len, len - hdr_len, buf + len);
	n = len + sizeof(struct mrc_seal_trailer);
	ck_assert(memmem(buf, n, "secret", 6) == NULL); /* nothing of the text in the clear */
	ck_assert_int_eq(mrc_decode(buf, n, &got), MRC_WIRE_OK);
	ck_assert_ptr_eq(got.auth, buf + len);
	ck_assert_uint_eq(got.flags & (MRC_F_AUTH | MRC_F_SEALED), MRC_F_AUTH | MRC_F_SEALED);
	ck_assert(mrc_auth_open(&k, &got, plain));
	ck_assert_mem_eq(plain, text, sizeof(text));
	ck_assert(!mrc_auth_open(&other, &got, plain));
	ck_assert(!mrc_auth_packet_ok(&sip, &got));
	for (size_t at = 0; at < n; at++) {
		uint8_t copy[256];

		if (at == offsetof(struct mrc_hdr, csum) || at == offsetof(struct mrc_hdr, csum) + 1)
			continue;
		memcpy(copy, buf, n);
		copy[at] ^= 0x10;
		/* an attacker keeps the checksum right */
		memset(copy + offsetof(struct mrc_hdr, csum), 0, 2);
		store_be16(copy + offsetof(struct mrc_hdr, csum), mrc_csum_compute(copy, len));
		if (mrc_decode(copy, n, &got) != MRC_WIRE_OK)
			continue; /* refused before any tag: a length or field the decoder checks */
		ck_assert_msg(!mrc_auth_open(&k, &got, plain), "byte %zu changed, still opens", at);
	}
}
END_TEST

/*
 * A transfer with every packet sealed completes byte-exact (the payloads decrypted where
 * they land); a packet tagged as header mode tags, with the right key, is refused, and the
 * same CLOSE sealed under the right key is believed: the seal is what decides.
 */
START_TEST(mrc_conn__sealed_transfer)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct mrc_conn_info info;
	struct mrc_rx_info rx = { 0 };
	struct mrc_packet p;
	struct xfer x;
	uint8_t buf[256];
	size_t len, hdr_len = mrc_header_len(MRC_OP_CLOSE);

	ck_assert_int_ge(sodium_init(), 0);
	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.auth = cc.seal = true;
	random_key(&cc.auth_tx);
	random_key(&cc.auth_rx);
	randombytes_buf(cc.seal_tx.k, sizeof(cc.seal_tx.k));
	randombytes_buf(cc.seal_rx.k, sizeof(cc.seal_rx.k));
	cc.payload_by_reference = true; /* which sealing overrides */
	xfer_init(&x, &sc, &cc, 4, 4 << 20);
	xfer_post(&x, MRC_WR_WRITE, 2 << 20, 0);
	xfer_post(&x, MRC_WR_SEND, 1 << 20, 0);
	xfer_post(&x, MRC_WR_READ, 512 << 10, 0);
	xfer_run_to_midway(&x);
	mrc_conn_get_info(x.a->conn, &info);
	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_CLOSE;
	p.dst_qpn = x.a->qpn;
	p.u.close.cum_psn = info.snd_una;
	ck_assert_int_eq(inject_bytes(&x, x.a->conn, &p, &cc.auth_rx), MRC_DROP_UNAUTHENTICATED);
	xfer_run(&x, 10000000000ull); /* byte-exact, or the test fails */
	ck_assert_uint_eq(x.b->drops[MRC_DROP_UNAUTHENTICATED], 0);
	mrc_conn_get_info(x.a->conn, &info);
	p.flags = MRC_F_AUTH | MRC_F_SEALED;
	p.u.close.cum_psn = info.snd_una;
	ck_assert_int_eq(mrc_encode(&p, buf, sizeof(buf), &len), MRC_WIRE_OK);
	mrc_auth_seal(&cc.seal_rx, 1ull << 40, buf, hdr_len, len - hdr_len, buf + len);
	len += sizeof(struct mrc_seal_trailer);
	ck_assert_int_eq(mrc_conn_recv(x.a->conn, &rx, buf, len, x.sim->now_ns), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	xfer_free(&x);
}
END_TEST

Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *t = tcase_create("auth");

	tcase_add_test(t, mrc_auth__tag_is_siphash_of_the_headers);
	tcase_add_test(t, mrc_codec__auth_trailer_decoded_and_checked);
	tcase_add_test(t, mrc_auth__keys_pair_up_in_every_mode);
	tcase_add_test(t, mrc_auth__allowed_keys_claim_their_prefixes_only);
	tcase_add_test(t, mrc_conn__authenticated_transfer_refuses_untagged_forgeries);
	tcase_add_test(t, mrc_auth__sealed_packet_opens_intact_only);
	tcase_add_test(t, mrc_conn__sealed_transfer);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return s;
}
