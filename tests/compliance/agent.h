/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent protocol: iut.h's operations as lines of text between the suite and a process
 * that drives an implementation under test, so an implementation the suite cannot link (a
 * daemon, a NIC, a DPDK stack, a program in another language) is tested the same way. The
 * suite starts the agent and speaks on its standard input and output.
 *
 * The agent first says who it is; then, for each request line, answers one line:
 *
 *   agent:  metaroce-compliance 1 name=NAME settle_ns=N own_defaults=0|1 node=0|1  (iut.h)
 *   suite:  open now=NS qpn=Q peer_qpn=Q psn=P peer_psn=P max_payload=B paths=N planes=N
 *                sports=S,S.. rq_depth=N mr_key=K mr_addr=A mr_len=L access=rwa|- retry_cnt=N
 *                rnr_retry=N rtr=0|1 qp_access=rwa|- [discovery=1 node_id=N peer_node_id=N]
 *                [auth=1 key_to_iut=HEX key_from_iut=HEX cluster_key=HEX] [rx_capacity_kbps=N]
 *                [ud=1 qkey=N peer_qkey=N] [mw=1]
 *   agent:  ok qpn=Q psn=P peer_psn=P mr_key=K mr_addr=A   (the values it made the QP with)
 *                [node_id=N peer_node_id=N port=P addrs=A,A.. peer_addrs=A,A.. stranger=A
 *                neighbour=A]   (its network: discovery=1 needs it, any agent may say it)
 *                [public_key=HEX cluster_key=HEX key_to_iut=HEX key_from_iut=HEX]   (auth=1:
 *                the keys it made the QP with, its own or the script's; with discovery=1 the
 *                QP keys are the script's, as the agent cannot know what the suite's node
 *                derives)
 *   suite:  close                                   agent: ok
 *   suite:  deliver now=NS plane=P sport=S ce=0|1 [from=A] bytes=HEX       agent: ok
 *   suite:  collect now=NS
 *   agent:  ok plane=P sport=S ce=0|1 [ecn=0..3] [df=0|1] [to=A dport=P] bytes=HEX | none
 *   suite:  deadline                                agent: ok NS | ok never
 *   suite:  advance now=NS                          agent: ok
 *   suite:  post now=NS kind=write|write_imm|send|send_imm|read|recv|local_inv id=N off=N
 *                len=N rkey=K raddr=A imm=N solicited=0|1   agent: ok | error -ERRNO
 *   suite:  poll     agent: ok id=N recv=0|1 status=S opcode=O len=N imm=N with_imm=0|1
 *                [with_inv=0|1 inv_rkey=K] | none
 *   suite:  state                            agent: ok rts|err|closing|closed | none
 *   suite:  counter name=NAME                       agent: ok V | none
 *   suite:  memory off=N len=N                      agent: ok HEX | none
 *   suite:  fill off=N len=N value=B                agent: ok
 *   suite:  drain now=NS plane=P drained=0|1        agent: ok | error -ERRNO | unsupported
 *   suite:  destroy now=NS                          agent: ok | error -ERRNO | unsupported
 *   suite:  ready now=NS                            agent: ok | error -ERRNO | unsupported
 *   suite:  register now=NS                         agent: ok KEY | error -ERRNO | unsupported
 *
 * Any request may also be answered "error TEXT" (the run fails there, with TEXT), and open
 * "unsupported TEXT" (the IUT cannot make that QP by design: the script is skipped). Numbers
 * are decimal or 0x hexadecimal; HEX is two lower-case digits a byte; an address A is its 16
 * bytes as HEX (IPv4 as ::ffff:a.b.c.d). With discovery=1 the suite plays the peer's node
 * (iut.h): the agent says the node id it picked and its network, and the suite says where a
 * datagram comes from (from=) and hears where one goes (to=, dport=). tests/compliance/
 * README.md says the same with examples.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_AGENT_H
#define METAROCE_TESTS_COMPLIANCE_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "compliance/iut.h"

#define AGENT_PROTOCOL 1
#define AGENT_MAX_WORDS 48u

/* Serves ops on in and out until the suite closes in (every request line answered, a broken
 * one with "error"); returns 0, or 1 when it could not start. */
int agent_serve(const struct iut_ops *ops, FILE *in, FILE *out);

/* The monotonic clock, in ns: what a real-time IUT is waited for by. */
uint64_t agent_clock_ns(void);
/* Text as a JSON string (quoted, escaped), for the results files the suite writes. */
void agent_json_str(FILE *out, const char *s);

/* Both ends: a line cut into words (in place); the value of key=... among them, or NULL; a
 * number; bytes as HEX and back (-1: not HEX, or more than cap bytes). */
unsigned agent_words(char *line, char **words, unsigned max);
const char *agent_arg(char *const *words, unsigned n, const char *key);
bool agent_num(const char *s, uint64_t *v);
void agent_hex_put(FILE *out, const uint8_t *bytes, size_t len);
long agent_hex_get(const char *hex, uint8_t *out, size_t cap);
/* n addresses as "A,A,..", and back: false unless exactly n came. */
void agent_addrs_put(FILE *out, const uint8_t (*addrs)[16], unsigned n);
bool agent_addrs_get(const char *list, uint8_t (*addrs)[16], unsigned n);

#endif
