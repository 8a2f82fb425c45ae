/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "io/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "log.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void mrcd_key_b64(const uint8_t key[32], char out[MRCD_KEY_B64_LEN])
{
	sodium_bin2base64(out, MRCD_KEY_B64_LEN, key, 32, sodium_base64_VARIANT_ORIGINAL);
}

/* A 32-byte key from a file of 32 raw bytes or of base64 (and white space). */
static int read_key(const char *what, const char *path, uint8_t key[32], char *err,
		    size_t errlen)
{
	char text[128];
	struct stat st;
	size_t len = 0, got;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return fail(err, errlen, "%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, "%s %s is not a regular file", what, path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return fail(err, errlen, "%s %s is readable by others (mode %03o): chmod 600 it",
			    what, path, (unsigned)(st.st_mode & 0777));
	}
	while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len == 32) {
		memcpy(key, text, 32);
		sodium_memzero(text, sizeof(text));
		return 0;
	}
	if (len == sizeof(text) ||
	    sodium_base642bin(key, 32, text, len, " \t\r\n", &got, NULL,
			      sodium_base64_VARIANT_ORIGINAL) ||
	    got != 32) {
		sodium_memzero(text, sizeof(text));
		return fail(err, errlen, "%s %s holds no key: 32 bytes, raw or in base64, wanted "
			    "(e.g. head -c 32 /dev/urandom | base64 > %s)", what, path, path);
	}
	sodium_memzero(text, sizeof(text));
	return 0;
}

/* A new key pair's secret into path, which must not exist; its directory made 0700. */
static int make_key(const char *path, uint8_t secret[32], char *err, size_t errlen)
{
	uint8_t public_key[32];
	char b64[MRCD_KEY_B64_LEN + 1], dir[256];
	char *slash;
	int fd;
	bool ok;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			return fail(err, errlen, "key_file's directory %s: %s", dir, strerror(errno));
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fail(err, errlen, "key_file %s: cannot create: %s", path, strerror(errno));
	crypto_kx_keypair(public_key, secret);
	mrcd_key_b64(secret, b64);
	b64[MRCD_KEY_B64_LEN - 1] = '\n';
	ok = write(fd, b64, MRCD_KEY_B64_LEN) == MRCD_KEY_B64_LEN && fsync(fd) == 0;
	sodium_memzero(b64, sizeof(b64));
	if (close(fd) || !ok) {
		unlink(path);
		return fail(err, errlen, "key_file %s: cannot write: %s", path, strerror(errno));
	}
	return 0;
}

/* key_file's secret key, made when the file does not exist yet; *made says which. */
static int own_key(const char *path, uint8_t secret[32], bool *made, char *err, size_t errlen)
{
	*made = false;
	if (access(path, F_OK) == 0)
		return read_key("key_file", path, secret, err, errlen);
	if (errno != ENOENT)
		return fail(err, errlen, "key_file %s: %s", path, strerror(errno));
	*made = true;
	return make_key(path, secret, err, errlen);
}

int mrcd_keys_public(const char *key_file, char out[MRCD_KEY_B64_LEN], char *err,
		     size_t errlen)
{
	uint8_t secret[32], public_key[32];
	bool made;

	if (sodium_init() < 0)
		return fail(err, errlen, "libsodium did not initialise");
	if (own_key(key_file, secret, &made, err, errlen))
		return -1;
	if (mrc_auth_public_of(secret, public_key)) {
		sodium_memzero(secret, sizeof(secret));
		return fail(err, errlen, "key_file %s holds no usable X25519 key", key_file);
	}
	sodium_memzero(secret, sizeof(secret));
	mrcd_key_b64(public_key, out);
	return 0;
}

int mrcd_keys_load(struct mrcd_keys *k, const struct mrcd_config *cfg, char *err, size_t errlen)
{
	struct mrc_auth *a = &k->auth;
	int rc;

	memset(k, 0, sizeof(*k));
	if (sodium_init() < 0)
		return fail(err, errlen, "libsodium did not initialise");
	if (!mrcd_config_authenticates(cfg))
		return 0; /* mode off: nothing read, nothing made */
	a->mode = cfg->auth == MRCD_AUTH_FULL ? MRC_AUTH_FULL : MRC_AUTH_HEADER;
	if (own_key(cfg->key_file, a->secret_key, &k->generated, err, errlen))
		return -1;
	if (mrc_auth_public_of(a->secret_key, a->public_key))
		return fail(err, errlen, "key_file %s holds no usable X25519 key", cfg->key_file);
	if (cfg->cluster_key_file[0]) {
		if (read_key("cluster_key_file", cfg->cluster_key_file, a->cluster_key, err, errlen))
			return -1;
		a->has_cluster_key = true;
	}
	for (unsigned i = 0; i < cfg->n_allowed; i++) {
		const struct mrcd_allowed_peer *c = &cfg->allowed[i];
		struct mrc_auth_peer *p = &k->allowed[i];

		memcpy(p->public_key, c->public_key, sizeof(p->public_key));
		p->n_prefixes = c->n_prefixes;
		for (unsigned j = 0; j < c->n_prefixes; j++) {
			memcpy(p->prefixes[j].addr, c->prefixes[j].addr.addr, 16);
			p->prefixes[j].bits = c->prefixes[j].len;
		}
	}
	a->allowed = cfg->n_allowed ? k->allowed : NULL;
	a->n_allowed = cfg->n_allowed;
	rc = mrc_auth_init(a);
	if (rc == -EINVAL)
		return fail(err, errlen, "allowed_peer names this daemon's own public key");
	if (rc)
		return fail(err, errlen, "an allowed_peer's public key is not a usable X25519 key");
	return 0;
}

void mrcd_keys_wipe(struct mrcd_keys *k)
{
	sodium_memzero(k, sizeof(*k));
}
