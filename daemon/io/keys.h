/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's keys (SPEC 14.6), read at start from the files the configuration names: its
 * own X25519 secret key (key_file, made on first start, 0600, base64 like WireGuard's), the
 * cluster key (cluster_key_file: 32 bytes, raw or base64) and the allowed peers' public keys.
 * Files readable by group or others are refused: a key anyone can read is no key.
 */
#ifndef METAROCE_DAEMON_IO_KEYS_H
#define METAROCE_DAEMON_IO_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "proto/auth.h"

/* Base64 of a 32-byte key and its NUL. */
#define MRCD_KEY_B64_LEN 45

struct mrcd_keys {
	struct mrc_auth auth; /* mode off when the configuration authenticates nothing */
	struct mrc_auth_peer allowed[MRCD_MAX_ALLOWED_PEERS];
	bool generated;	      /* key_file was made now */
};

/*
 * Everything auth needs, or nothing (auth off: no file is touched). Returns 0, or -1 with
 * the reason in err (which file, and what is wrong with it).
 */
int mrcd_keys_load(struct mrcd_keys *k, const struct mrcd_config *cfg, char *err, size_t errlen);

/* The public key of key_file in base64 (the file made if it does not exist: --public-key). */
int mrcd_keys_public(const char *key_file, char out[MRCD_KEY_B64_LEN], char *err,
		     size_t errlen);

/* Base64 of a 32-byte key. */
void mrcd_key_b64(const uint8_t key[32], char out[MRCD_KEY_B64_LEN]);

/* The secrets wiped from memory (at stop). */
void mrcd_keys_wipe(struct mrcd_keys *k);

#endif /* METAROCE_DAEMON_IO_KEYS_H */
