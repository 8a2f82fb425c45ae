// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// gloo-bench: one rank of a Gloo collective job, every result checked.
//
// Ranks are processes (on testbed hosts or anywhere) that meet through a FileStore in a
// directory they all see. The transport is Gloo's own: `ibverbs` (over metaroce through
// libmetaroce, or any verbs device) or `tcp`. Two modes:
//
//   sweep  (default)  each op at each size: --warmup runs, then --iters timed runs (fewer
//                     for large sizes with --iter-bytes: about that many bytes per size,
//                     at least 3 runs); a JSON line per (op, size) with the completion times.
//   --mixed N         N rounds, each an op and size drawn from --seed (the same on every
//                     rank); every element of every result checked.
//
// Every result is checked in both modes. The last line, written after a final barrier and
// the teardown of every buffer, pair and device, says the rank ended cleanly.
//
// The collectives are Gloo's: AllreduceRing, AllreduceHalvingDoubling, BroadcastOneToAll,
// BarrierAllToAll. Gloo's own all-to-all needs unbound buffers, which its ibverbs transport
// does not have, so `alltoall` here is written on the same bound-buffer pair API that Gloo's
// algorithms use (a clear-to-send from each receiver, then one RDMA write per peer).
//
// Exit status: 0 every result right, 1 a wrong result or a transport error (named on
// stderr), 2 bad arguments.

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

namespace {

struct Options {
	int rank = -1;
	int size = 0;
	std::string store;
	std::string prefix = "gloo-bench";
	std::string transport = "ibverbs";
	std::string device = "metaroce0";
	int port = 1;
	int gid = 0;
	std::string tcp_host;
	std::vector<std::string> ops = {"allreduce_ring", "allreduce_hd", "alltoall", "broadcast",
					"barrier"};
	std::vector<size_t> sizes = {4096};
	int iters = 10;
	int warmup = 2;
	int mixed = 0;
	unsigned seed = 1;
	int progress = 0;
	size_t iter_bytes = 0;
	int timeout_ms = 60000;
};

[[noreturn]] void usage(const char *why)
{
	if (why)
		fprintf(stderr, "gloo-bench: %s\n", why);
	fprintf(stderr,
		"usage: gloo-bench --rank R --size N (1..64) --store DIR [--prefix P]\n"
		"         [--transport ibverbs|tcp] [--device NAME] [--port N] [--gid N]\n"
		"         [--tcp-host ADDR] [--ops LIST] [--sizes LIST] [--iters N] [--warmup N]\n"
		"         [--iter-bytes B] [--mixed ROUNDS --seed S [--progress N]]\n"
		"         [--timeout-ms MS]\n"
		"  ops: allreduce_ring allreduce_hd alltoall broadcast barrier (comma separated)\n"
		"  sizes: bytes per rank, with K or M (comma separated, a multiple of 4 * N)\n");
	exit(2);
}

std::vector<std::string> split(const std::string &s)
{
	std::vector<std::string> out;
	std::stringstream in(s);
	std::string item;
	while (std::getline(in, item, ','))
		if (!item.empty())
			out.push_back(item);
	return out;
}

size_t parse_size(const std::string &s)
{
	char *end = nullptr;
	unsigned long long v = strtoull(s.c_str(), &end, 10);
	if (end == s.c_str())
		usage(("bad size " + s).c_str());
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v == 0 || v > (1ULL << 30))
		usage(("bad size " + s).c_str());
	return v;
}

int parse_int(const char *s, int lo, int hi, const char *what)
{
	char *end = nullptr;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		usage((std::string("bad ") + what + " " + s).c_str());
	return (int)v;
}

Options parse(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (i + 1 >= argc)
			usage(("missing value for " + a).c_str());
		const char *v = argv[++i];
		if (a == "--rank")
			o.rank = parse_int(v, 0, 63, "rank");
		else if (a == "--size")
			o.size = parse_int(v, 1, 64, "size");
		else if (a == "--store")
			o.store = v;
		else if (a == "--prefix")
			o.prefix = v;
		else if (a == "--transport")
			o.transport = v;
		else if (a == "--device")
			o.device = v;
		else if (a == "--port")
			o.port = parse_int(v, 1, 255, "port");
		else if (a == "--gid")
			o.gid = parse_int(v, 0, 255, "gid");
		else if (a == "--tcp-host")
			o.tcp_host = v;
		else if (a == "--ops")
			o.ops = split(v);
		else if (a == "--sizes") {
			o.sizes.clear();
			for (auto &s : split(v))
				o.sizes.push_back(parse_size(s));
		} else if (a == "--iters")
			o.iters = parse_int(v, 1, 1000000, "iters");
		else if (a == "--warmup")
			o.warmup = parse_int(v, 0, 1000000, "warmup");
		else if (a == "--mixed")
			o.mixed = parse_int(v, 1, 1000000, "mixed");
		else if (a == "--progress")
			o.progress = parse_int(v, 1, 1000000, "progress");
		else if (a == "--iter-bytes")
			o.iter_bytes = parse_size(v);
		else if (a == "--seed")
			o.seed = (unsigned)parse_int(v, 0, 1 << 30, "seed");
		else if (a == "--timeout-ms")
			o.timeout_ms = parse_int(v, 1, 3600000, "timeout");
		else
			usage(("unknown option " + a).c_str());
	}
	if (o.rank < 0 || o.size <= 0 || o.rank >= o.size || o.store.empty())
		usage("--rank, --size and --store are required, rank < size");
	if (o.transport != "ibverbs" && o.transport != "tcp")
		usage("transport is ibverbs or tcp");
	if (o.transport == "tcp" && o.tcp_host.empty())
		usage("--transport tcp needs --tcp-host");
	static const char *known[] = {"allreduce_ring", "allreduce_hd", "alltoall", "broadcast",
				      "barrier"};
	for (auto &op : o.ops)
		if (std::find(std::begin(known), std::end(known), op) == std::end(known))
			usage(("unknown op " + op).c_str());
	for (auto s : o.sizes)
		if (s % (4 * (size_t)o.size))
			usage("every size must be a multiple of 4 * size (whole elements per rank)");
	return o;
}

// The values every rank can compute for any rank, round and index: small integers, so float
// sums stay exact (below 2^24) for up to 64 ranks: 64 * 65 / 2 * 4095 = 8.5 million.
float allreduce_input(int rank, uint64_t round, size_t i)
{
	return (float)((rank + 1) * ((i * 7 + round * 13) % 4096));
}

float allreduce_expected(int size, uint64_t round, size_t i)
{
	return (float)((size * (size + 1) / 2) * ((i * 7 + round * 13) % 4096));
}

uint32_t alltoall_value(int from, int to, uint64_t round, size_t j)
{
	return ((uint32_t)from << 22) ^ ((uint32_t)to << 12) ^ (uint32_t)(j * 2654435761u + round);
}

float broadcast_value(int root, uint64_t round, size_t i)
{
	return (float)((i * 31 + round * 7 + (size_t)root) % 65536);
}

// All-to-all on Gloo's bound buffers: slice p of `in` goes to rank p and lands in slice
// `rank` of p's `out`. Each receiver first says it is ready (its `out` may be overwritten),
// as Gloo's own algorithms do with their notification buffers.
class AlltoallBound {
      public:
	AlltoallBound(const std::shared_ptr<gloo::Context> &ctx, uint32_t *in, uint32_t *out,
		      size_t per_peer)
	    : ctx_(ctx), in_(in), out_(out), per_peer_(per_peer), ready_in_(ctx->size)
	{
		int data_slot = ctx->nextSlot();
		int ready_slot = ctx->nextSlot();
		size_t bytes = per_peer * sizeof(uint32_t);
		send_.resize(ctx->size);
		recv_.resize(ctx->size);
		ready_send_.resize(ctx->size);
		ready_recv_.resize(ctx->size);
		for (int p = 0; p < ctx->size; p++) {
			if (p == ctx->rank)
				continue;
			auto &pair = ctx->getPair(p);
			send_[p] = pair->createSendBuffer(data_slot, in + p * per_peer, bytes);
			recv_[p] = pair->createRecvBuffer(data_slot, out + p * per_peer, bytes);
			ready_send_[p] = pair->createSendBuffer(ready_slot, &ready_out_,
								sizeof(ready_out_));
			ready_recv_[p] = pair->createRecvBuffer(ready_slot, &ready_in_[p],
								sizeof(ready_in_[p]));
		}
	}

	void run()
	{
		int n = ctx_->size, me = ctx_->rank;
		for (int k = 1; k < n; k++)
			ready_send_[(me + k) % n]->send();
		memcpy(out_ + me * per_peer_, in_ + me * per_peer_, per_peer_ * sizeof(uint32_t));
		for (int k = 1; k < n; k++) {
			int p = (me + k) % n;
			ready_recv_[p]->waitRecv();
			send_[p]->send();
		}
		for (int k = 1; k < n; k++)
			recv_[(me + n - k) % n]->waitRecv();
		for (int k = 1; k < n; k++) {
			send_[(me + k) % n]->waitSend();
			ready_send_[(me + k) % n]->waitSend();
		}
	}

      private:
	std::shared_ptr<gloo::Context> ctx_;
	uint32_t *in_, *out_;
	size_t per_peer_;
	int ready_out_ = 0;
	std::vector<int> ready_in_;
	std::vector<std::unique_ptr<gloo::transport::Buffer>> send_, recv_, ready_send_,
		ready_recv_;
};

// Gloo's BarrierAllToAll returns once every peer's notification arrived, without waiting for
// its own notifications to complete; a barrier destroyed then still expects completions
// (Gloo enforces that it does not). Waiting for them at the end of each run keeps every
// run's sends accounted for, as a framework that reuses or frees the barrier needs.
class Barrier : public gloo::BarrierAllToAll {
      public:
	using gloo::BarrierAllToAll::BarrierAllToAll;

	void run()
	{
		gloo::BarrierAllToAll::run();
		for (auto &b : sendBuffers_)
			b->waitSend();
	}
};

// One collective at one size, its buffers registered once and reused, as a framework keeps
// them (PyTorch's ProcessGroupGloo caches its algorithm entries the same way).
struct Collective {
	std::string op;
	size_t bytes = 0;
	int root = 0;
	std::vector<float> fbuf;
	std::vector<uint32_t> in, out;
	std::unique_ptr<gloo::AllreduceRing<float>> ring;
	std::unique_ptr<gloo::AllreduceHalvingDoubling<float>> hd;
	std::unique_ptr<gloo::BroadcastOneToAll<float>> bcast;
	std::unique_ptr<Barrier> barrier;
	std::unique_ptr<AlltoallBound> a2a;

	Collective(const std::shared_ptr<gloo::Context> &ctx, const std::string &op_,
		   size_t bytes_, int root_)
	    : op(op_), bytes(bytes_), root(root_)
	{
		size_t count = bytes / sizeof(float);
		if (op == "allreduce_ring" || op == "allreduce_hd" || op == "broadcast")
			fbuf.assign(count, 0.0f);
		if (op == "allreduce_ring")
			ring.reset(new gloo::AllreduceRing<float>(ctx, {fbuf.data()}, (int)count));
		else if (op == "allreduce_hd")
			hd.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, {fbuf.data()},
									   (int)count));
		else if (op == "broadcast")
			bcast.reset(new gloo::BroadcastOneToAll<float>(ctx, {fbuf.data()}, count,
								       root));
		else if (op == "barrier")
			barrier.reset(new Barrier(ctx));
		else {
			in.assign(count, 0);
			out.assign(count, 0);
			a2a.reset(new AlltoallBound(ctx, in.data(), out.data(),
						    count / ctx->size));
		}
	}

	void prepare(int rank, int size, uint64_t round)
	{
		if (ring || hd)
			for (size_t i = 0; i < fbuf.size(); i++)
				fbuf[i] = allreduce_input(rank, round, i);
		else if (bcast)
			for (size_t i = 0; i < fbuf.size(); i++)
				fbuf[i] = rank == root ? broadcast_value(root, round, i) : -1.0f;
		else if (a2a) {
			size_t per = in.size() / size;
			for (int p = 0; p < size; p++)
				for (size_t j = 0; j < per; j++)
					in[p * per + j] = alltoall_value(rank, p, round, j);
			std::fill(out.begin(), out.end(), 0xdeadbeefu);
		}
	}

	void run()
	{
		if (ring)
			ring->run();
		else if (hd)
			hd->run();
		else if (bcast)
			bcast->run();
		else if (barrier)
			barrier->run();
		else
			a2a->run();
	}

	// The first wrong element, described; empty when every element is right.
	std::string check(int rank, int size, uint64_t round)
	{
		char why[200];
		if (ring || hd) {
			for (size_t i = 0; i < fbuf.size(); i++)
				if (fbuf[i] != allreduce_expected(size, round, i)) {
					snprintf(why, sizeof(why), "element %zu is %g, expected %g", i,
						 fbuf[i], allreduce_expected(size, round, i));
					return why;
				}
		} else if (bcast) {
			for (size_t i = 0; i < fbuf.size(); i++)
				if (fbuf[i] != broadcast_value(root, round, i)) {
					snprintf(why, sizeof(why), "element %zu is %g, expected %g", i,
						 fbuf[i], broadcast_value(root, round, i));
					return why;
				}
		} else if (a2a) {
			size_t per = out.size() / size;
			for (int q = 0; q < size; q++)
				for (size_t j = 0; j < per; j++)
					if (out[q * per + j] != alltoall_value(q, rank, round, j)) {
						snprintf(why, sizeof(why),
							 "element %zu from rank %d is 0x%08x, expected "
							 "0x%08x",
							 j, q, out[q * per + j],
							 alltoall_value(q, rank, round, j));
						return why;
					}
		}
		return "";
	}
};

double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

double percentile(std::vector<double> v, double p)
{
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(p * (double)(v.size() - 1) + 0.5);
	return v[std::min(i, v.size() - 1)];
}

// What a collective of `bytes` per rank moves per link, relative to its algorithm bandwidth
// (the convention of nccl-tests, so figures compare with published ones).
double bus_factor(const std::string &op, int n)
{
	if (op == "allreduce_ring" || op == "allreduce_hd")
		return 2.0 * (n - 1) / n;
	if (op == "alltoall")
		return (double)(n - 1) / n;
	return 1.0;
}

std::shared_ptr<gloo::transport::Device> make_device(const Options &o)
{
	if (o.transport == "tcp") {
		gloo::transport::tcp::attr attr;
		attr.hostname = o.tcp_host;
		return gloo::transport::tcp::CreateDevice(attr);
	}
	gloo::transport::ibverbs::attr attr;
	attr.name = o.device;
	attr.port = o.port;
	attr.index = o.gid;
	return gloo::transport::ibverbs::CreateDevice(attr);
}

// A transport error inside a collective leaves Gloo buffers with sends outstanding, whose
// destructors abort when the stack unwinds: say what went wrong and end here instead.
[[noreturn]] void fail_now(const Options &o, const std::string &what, const std::exception &e)
{
	fprintf(stderr, "gloo-bench: rank %d: %s: %s\n", o.rank, what.c_str(), e.what());
	fflush(stderr);
	fflush(stdout);
	_exit(1);
}

int run(const Options &o)
{
	auto dev = make_device(o);
	gloo::rendezvous::FileStore file_store(o.store);
	gloo::rendezvous::PrefixStore store(o.prefix, file_store);
	auto ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
	ctx->setTimeout(std::chrono::milliseconds(o.timeout_ms));
	ctx->connectFullMesh(store, dev);

	std::map<std::string, std::unique_ptr<Collective>> cache;
	auto get = [&](const std::string &op, size_t bytes, int root) -> Collective & {
		std::string key = op + "/" + std::to_string(bytes) + "/" + std::to_string(root);
		auto &c = cache[key];
		if (!c)
			c.reset(new Collective(ctx, op, bytes, root));
		return *c;
	};
	uint64_t round = 0;
	int failures = 0;
	std::string summary;

	if (o.mixed) {
		std::mt19937 rng(o.seed);
		std::map<std::string, int> runs;
		double t0 = now_s();
		for (int i = 0; i < o.mixed; i++) {
			const std::string &op = o.ops[rng() % o.ops.size()];
			size_t bytes = o.sizes[rng() % o.sizes.size()];
			int root = op == "broadcast" ? (int)(rng() % o.size) : 0;
			Collective &c = get(op, bytes, root);
			c.prepare(o.rank, o.size, round);
			try {
				c.run();
			} catch (const std::exception &e) {
				fail_now(o, "round " + std::to_string(i) + " " + op + " of " +
						    std::to_string(bytes) + " B",
					 e);
			}
			std::string bad = c.check(o.rank, o.size, round);
			if (!bad.empty()) {
				fprintf(stderr, "gloo-bench: rank %d round %d %s of %zu B: %s\n",
					o.rank, i, op.c_str(), bytes, bad.c_str());
				failures++;
			}
			runs[op]++;
			round++;
			if (o.progress && (i + 1) % o.progress == 0)
				fprintf(stderr, "gloo-bench: rank %d round %d\n", o.rank, i + 1);
		}
		char line[160];
		snprintf(line, sizeof(line), "\"mode\": \"mixed\", \"rounds\": %d, \"seed\": %u, "
			 "\"seconds\": %.3f, \"ops\": {", o.mixed, o.seed, now_s() - t0);
		summary = line;
		const char *sep = "";
		for (auto &r : runs) {
			summary += std::string(sep) + "\"" + r.first + "\": " + std::to_string(r.second);
			sep = ", ";
		}
		summary += "}, ";
	} else {
		for (auto &op : o.ops)
			for (size_t bytes : o.sizes) {
				Collective &c = get(op, bytes, 0);
				std::vector<double> times;
				int wrong = 0, iters = o.iters;

				if (o.iter_bytes && o.iter_bytes / bytes < (size_t)iters)
					iters = std::max(3, (int)(o.iter_bytes / bytes));
				for (int i = 0; i < o.warmup + iters; i++) {
					c.prepare(o.rank, o.size, round);
					double t = now_s();
					try {
						c.run();
					} catch (const std::exception &e) {
						fail_now(o, op + " of " + std::to_string(bytes) + " B", e);
					}
					t = now_s() - t;
					std::string bad = c.check(o.rank, o.size, round);
					if (!bad.empty()) {
						fprintf(stderr, "gloo-bench: rank %d %s of %zu B: %s\n",
							o.rank, op.c_str(), bytes, bad.c_str());
						wrong++;
					}
					if (i >= o.warmup)
						times.push_back(t);
					round++;
				}
				failures += wrong;
				double med = percentile(times, 0.5);
				double algbw = op == "barrier" ? 0 : bytes * 8 / med / 1e9;
				printf("{\"rank\": %d, \"op\": \"%s\", \"bytes\": %zu, \"iters\": %d, "
				       "\"wrong\": %d, \"median_s\": %.6f, \"p99_s\": %.6f, "
				       "\"min_s\": %.6f, \"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f}\n",
				       o.rank, op.c_str(), bytes, iters, wrong, med,
				       percentile(times, 0.99), percentile(times, 0.0), algbw,
				       algbw * bus_factor(op, o.size));
				fflush(stdout);
			}
	}
	// Teardown as a framework does it: a last barrier, so no rank destroys what a peer
	// still writes to and every send of ours has completed (completions on a pair come in
	// order), then the algorithms (their buffers and regions), the context (its pairs and
	// queue pairs) and the device.
	{
		Barrier last(ctx);
		last.run();
	}
	cache.clear();
	ctx.reset();
	dev.reset();
	printf("{\"rank\": %d, %s\"wrong\": %d, \"teardown\": \"clean\"}\n", o.rank,
	       summary.c_str(), failures);
	return failures ? 1 : 0;
}

// A crash names where it happened: the rank's log is often all there is of a failed job.
void on_fatal_signal(int sig)
{
	void *frames[64];
	int n = backtrace(frames, 64);
	static const char head[] = "gloo-bench: fatal signal, backtrace:\n";
	(void)!write(2, head, sizeof(head) - 1);
	backtrace_symbols_fd(frames, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

} // namespace

int main(int argc, char **argv)
{
	Options o = parse(argc, argv);
	void *warm[1];

	backtrace(warm, 1); /* loads what backtrace needs now, not in a signal handler */
	signal(SIGSEGV, on_fatal_signal);
	signal(SIGBUS, on_fatal_signal);
	signal(SIGABRT, on_fatal_signal);
	try {
		return run(o);
	} catch (const std::exception &e) {
		fprintf(stderr, "gloo-bench: rank %d: %s\n", o.rank, e.what());
		return 1;
	}
}
