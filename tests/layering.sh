#!/bin/sh
# What may call what (docs/ARCHITECTURE.md), checked on the source so a change that breaks it
# fails `make check` with the file and line:
#   - the engine (lib/proto) and the daemon's core (daemon/core) do no I/O and read no clock:
#     only the C library's pure headers and the project's own, no system call by name;
#   - the core never includes daemon/io; the library (lib/verbs, lib/shm, cli) never includes
#     the engine's or the daemon's headers: it speaks the public ones.
# Usage: sh tests/layering.sh (from the top of the tree). Exit 0, or 1 with every violation.
set -u
bad=0
say() {
	echo "layering: $*"
	bad=1
}

# libsodium's hashes and X25519 are pure functions (its randomness is named below)
pure='assert|ctype|errno|inttypes|limits|math|stdalign|stdarg|stdatomic|stdbool|stddef|stdint|stdio|stdlib|string|sodium|metaroce/[a-z_]+'
for f in lib/proto/*.[ch] daemon/core/*.[ch]; do
	grep -nE '^#include <' "$f" | grep -vE "^[0-9]+:#include <($pure)\.h>" |
		while IFS= read -r line; do echo "$f:$line"; done
done >"${TMPDIR:-/tmp}/layering.$$"
if [ -s "${TMPDIR:-/tmp}/layering.$$" ]; then
	say "a system header where no I/O may be:"
	cat "${TMPDIR:-/tmp}/layering.$$"
fi
rm -f "${TMPDIR:-/tmp}/layering.$$"

calls='\b(randombytes[a-z_]*|crypto_[a-z0-9_]*keypair|sodium_init|clock_gettime|gettimeofday|time|open|openat|close|read|write|send|sendmsg|sendmmsg|recv|recvmsg|recvmmsg|socket|bind|connect|accept4?|mmap|munmap|mremap|ioctl|fcntl|epoll_[a-z_]+|eventfd|poll|select|usleep|nanosleep|sleep|getrandom|fork|kill|syscall)[[:space:]]*\('
if grep -nE "$calls" lib/proto/*.[ch] daemon/core/*.[ch] | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)'; then
	say "a system call (above) where no I/O may be"
fi

if grep -nE '#include "(io|\.\./io)/' daemon/core/*.[ch]; then
	say "daemon/core includes daemon/io (above)"
fi
if grep -nE '#include "(proto|core|io)/' lib/verbs/*.[ch] lib/shm/*.[ch] cli/*.[ch] cli/*/*.[ch]; then
	say "the library or the CLI includes the engine's or the daemon's headers (above)"
fi
[ $bad -eq 0 ] && echo "layering: engine and core free of I/O; includes go one way"
exit $bad
