# The OCI image in the two deployments packaging/k8s describes (make test-containers), run by
# podman on the two hosts of a testbed, each moving verified RDMA traffic between the hosts:
#  - the node daemon: metaroced in the host's network namespace, owning the plane interfaces
#    with the XDP program attached (the capabilities and seccomp profile of
#    packaging/container/), its control socket in a directory shared with an application
#    container; the daemon's container is restarted while the application's lives on;
#  - the per-pod sidecar: metaroced (udp backend, no capability at all) and the application in
#    one pod, sharing its network namespace and a volume for the socket.
# Every container, pod and volume made is removed, also on failure; podman is told which
# network to use each time, so it never makes a bridge or touches the firewall.
. "$(dirname "$0")/../integration/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
IMAGE=${IMAGE:?IMAGE: the image make image built}
command -v podman >/dev/null || fail "podman missing (make deps)"
command -v runc >/dev/null || fail "runc missing (make deps)"
command -v npm >/dev/null || fail "npm missing (make deps)"
[ "$(id -u)" -eq 0 ] || skip "needs root to run containers with the host's network namespaces"

# runc, cgroupfs and ulimits within root's hard limits: packaging/container/containers.conf
P() { CONTAINERS_CONF="$root/packaging/container/containers.conf" podman "$@"; }
P image exists "$IMAGE" || fail "no image $IMAGE (make image)"
CONTAINERS="" PODS="" VOLUMES=""
# podman builds its pods' pause image locally the first time; one this test made goes too
PAUSE_IMAGES_WERE=$(P images -q --filter reference=localhost/podman-pause)
# podman's cgroupfs manager leaves the cgroups of pods (and of conmon) behind: the test's go
libpod_cgroups() {
	find /sys/fs/cgroup/libpod_parent /sys/fs/cgroup/*/libpod_parent -depth -type d 2>/dev/null
}
LIBPOD_CGROUPS_WERE=$(libpod_cgroups)
containers_cleanup() {
	for c in $CONTAINERS; do P rm -f -t 0 "$c"; done >/dev/null 2>&1
	for p in $PODS; do P pod rm -f -t 0 "$p"; done >/dev/null 2>&1
	for v in $VOLUMES; do P volume rm -f "$v"; done >/dev/null 2>&1
	for i in $(P images -q --filter reference=localhost/podman-pause); do
		echo "$PAUSE_IMAGES_WERE" | grep -qx "$i" || P rmi "$i" >/dev/null
	done
	for d in $(libpod_cgroups); do
		echo "$LIBPOD_CGROUPS_WERE" | grep -qx "$d" || rmdir "$d"
	done
	cleanup
}
trap containers_cleanup EXIT INT TERM

# what podman's default network would change: compared at the end
host_net() { # (without the counters that traffic moves)
	sysctl -n net.ipv4.ip_forward net.ipv6.conf.all.forwarding
	iptables-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//'
	ip6tables-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//'
	nft -s list ruleset 2>/dev/null
	ip -o link show | awk '{print $2}'
}
host_net >"$TMP/host-net.before"

two_hosts
# The manifests' own settings, checked against what this test runs: the image, capabilities,
# seccomp profile, read-only root and socket volume of each container; and their ConfigMaps'
# files, which the daemons here run with (only the plane lines are this testbed's).
NODE_CAPS="NET_ADMIN,BPF,PERFMON,NET_RAW,IPC_LOCK"
python3 - "$root/packaging/k8s" "$IMAGE" "$NODE_CAPS" "$TMP" <<'PY' || fail "packaging/k8s"
import sys, yaml
k8s, image, node_caps, tmp = sys.argv[1:]
def load(name):
    docs = [d for d in yaml.safe_load_all(open(k8s + "/" + name)) if d]
    conf = [d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["metaroced.conf"]
    work = [d for d in docs if d["kind"] in ("DaemonSet", "Pod")][0]
    spec = work["spec"]["template"]["spec"] if work["kind"] == "DaemonSet" else work["spec"]
    return conf, spec, {c["name"]: c for c in spec["containers"]}
def mounts(c):
    return {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
for name, deployment, backend in (("daemonset.yaml", "node", "xdp"), ("sidecar-pod.yaml", "sidecar", "udp")):
    conf, spec, cs = load(name)
    d = cs["metaroced"]
    sc = d["securityContext"]
    assert d["image"] == image, (name, d["image"])
    assert sc["capabilities"]["drop"] == ["ALL"], name
    assert ",".join(sc["capabilities"].get("add", [])) == (node_caps if backend == "xdp" else ""), name
    want = {"type": "Localhost", "localhostProfile": "profiles/metaroced-xdp.json"} \
        if backend == "xdp" else {"type": "RuntimeDefault"}
    assert sc["seccompProfile"] == want, (name, sc["seccompProfile"])
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, name
    assert mounts(d)["/etc/metaroce"] == "config" and mounts(d)["/run/metaroce"] == "run", name
    lines = [l for l in conf.splitlines() if l.strip() and not l.startswith("#")]
    assert "backend = " + backend in lines, (name, lines)
    assert "control_socket = /run/metaroce/metaroced.sock" in lines, name
    with open("%s/%s.conf" % (tmp, deployment), "w") as f:
        f.writelines(l + "\n" for l in lines if not l.startswith("plane "))
    if deployment == "node":
        assert spec["hostNetwork"] is True
        run = [v for v in spec["volumes"] if v["name"] == "run"][0]
        assert run["hostPath"]["path"] == "/run/metaroce", run
    else:
        app = cs["app"]
        assert app["image"] == image and app["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert mounts(app)["/run/metaroce"] == "run"
        assert {"name": "METAROCE_SOCKET", "value": "/run/metaroce/metaroced.sock"} in app["env"]
        assert [v for v in spec["volumes"] if v["name"] == "run"][0]["emptyDir"] == {}
print("  packaging/k8s: image, capabilities, seccomp profile, volumes and settings as run here")
PY
# ... and against the Kubernetes API's schema: kubernetes-models' validators, from npm at the
# versions tests/system/k8s/package-lock.json pins
k8s="$BUILD/system/k8s"
mkdir -p "$k8s"
cp "$root/tests/system/k8s/package.json" "$root/tests/system/k8s/package-lock.json" \
	"$root/tests/system/k8s/validate.js" "$k8s/"
(cd "$k8s" && npm ci --no-audit --no-fund) >"$TMP/npm.log" 2>&1 ||
	{ tail "$TMP/npm.log"; fail "npm ci in $k8s (kubernetes-models)"; }
node "$k8s/validate.js" "$root/packaging/k8s/daemonset.yaml" "$root/packaging/k8s/sidecar-pod.yaml" \
	>"$TMP/schema.log" 2>&1 || { cat "$TMP/schema.log"; fail "packaging/k8s against the API schema"; }
models=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
	"$k8s/node_modules/kubernetes-models/package.json")
echo "  packaging/k8s against the API schema (kubernetes-models $models):" \
	"$(grep -c ': valid$' "$TMP/schema.log") objects valid"

# conf H DEPLOYMENT IFPREFIX: host H's configuration file, DEPLOYMENT's manifest's with the
# planes IFPREFIX0 and IFPREFIX1, for a container to mount
conf() {
	n=$([ "$1" = a ] && echo 1 || echo 2)
	cp "$TMP/$2.conf" "$TMP/$1.conf"
	printf 'plane = 0 %s 198.18.0.%s\nplane = 1 %s 198.19.0.%s\n' "${3}0" $n "${3}1" $n >>"$TMP/$1.conf"
}
# daemon_up NAME: the daemon in container NAME answers on its control socket
daemon_up() { P exec "$1" metaroce-ctl status >"$TMP/$1.status" 2>&1; }
# b_listening PORT: something listens on TCP PORT in B's network namespace ($B_NET enters it)
b_listening() { $B_NET ss -Hlnt "sport = :$1" | grep -q .; }
# perf NAME SERVER CLIENT ARGS...: metaroce-perf (verified) between two application
# containers, B's the server; the client's JSON in $TMP/NAME.json
perf() {
	name=$1 server=$2 client=$3
	shift 3
	P exec "$server" timeout 60 metaroce-run metaroce-perf "$@" >"$TMP/$name.server.log" 2>&1 &
	srv=$!
	PIDS="$PIDS $srv"
	wait_until 10 "metaroce-perf listening in B" b_listening 18700
	P exec "$client" timeout 60 metaroce-run metaroce-perf -j "$@" 198.18.0.2 \
		>"$TMP/$name.json" 2>"$TMP/$name.client.log" ||
		{ cat "$TMP/$name.client.log" "$TMP/$name.server.log"; fail "metaroce-perf $name (client)"; }
	wait "$srv" || { cat "$TMP/$name.server.log"; fail "metaroce-perf $name (server)"; }
}

# --- the node daemon: host network, plane interfaces, XDP, socket in a host directory -------
B_NET="ip netns exec $NS_B"
for h in a b; do
	conf $h node "${TAG}$h"
	mkdir -p "$TMP/run-$h"
	P run -d --name "${TAG}-daemon-$h" --network "ns:/run/netns/${TAG}$h" \
		--read-only --cap-drop all --cap-add "$NODE_CAPS" \
		--security-opt "seccomp=$root/packaging/container/seccomp-xdp.json" \
		--security-opt no-new-privileges \
		-v "$TMP/$h.conf:/etc/metaroce/metaroced.conf:ro" -v "$TMP/run-$h:/run/metaroce" \
		"$IMAGE" >/dev/null || fail "the daemon's container on $h"
	CONTAINERS="$CONTAINERS ${TAG}-daemon-$h"
	P run -d --name "${TAG}-app-$h" --network "ns:/run/netns/${TAG}$h" \
		--cap-drop all --security-opt no-new-privileges -v "$TMP/run-$h:/run/metaroce" \
		--entrypoint sleep "$IMAGE" infinity >/dev/null || fail "the application's container on $h"
	CONTAINERS="$CONTAINERS ${TAG}-app-$h"
done
for h in a b; do
	wait_until 20 "the node daemon on $h" daemon_up "${TAG}-daemon-$h"
	grep -q "backend xdp (${TAG}${h}0 [a-z]*, ${TAG}${h}1 [a-z]*) " "$TMP/${TAG}-daemon-$h.status" ||
		{ cat "$TMP/${TAG}-daemon-$h.status"; P logs "${TAG}-daemon-$h"; fail "$h: not XDP with AF_XDP on both planes"; }
done
echo "  node daemon: $(head -n 1 "$TMP/${TAG}-daemon-a.status" | sed 's/^node [0-9a-f]*  //')"
perf node "${TAG}-app-b" "${TAG}-app-a" -t write -q 4 -s 65536 -n 200 -V
json_check node 'j["messages"] == 800 and j["peer"]["verified"] == 800 and j["errors"] == 0'

# the daemon's container restarted; the application's container lives on and uses the new one
started() { P inspect -f '{{.State.Pid}} {{.State.StartedAt}}' "${TAG}-app-a"; }
app_before=$(started)
P restart -t 10 "${TAG}-daemon-a" >/dev/null || fail "podman restart of A's daemon"
wait_until 20 "the node daemon on A, restarted" daemon_up "${TAG}-daemon-a"
[ "$(started)" = "$app_before" ] || fail "A's application container did not live through the restart"
perf node_restarted "${TAG}-app-b" "${TAG}-app-a" -t write -q 4 -s 65536 -n 200 -V
json_check node_restarted 'j["messages"] == 800 and j["peer"]["verified"] == 800 and j["errors"] == 0'
echo "  A's daemon container restarted, its application container kept running and moved data again"
# (the daemon stops on SIGTERM; the applications, sleep as PID 1, are killed)
for h in a b; do
	P rm -f -t 10 "${TAG}-daemon-$h" >/dev/null && P rm -f -t 0 "${TAG}-app-$h" >/dev/null ||
		fail "removing host $h's containers"
	! ip -n "${TAG}$h" -o link show | grep -q "prog/xdp" ||
		fail "host $h's daemon container left its XDP program"
done

# --- the sidecar: a pod per host, the daemon (udp, no capability) beside the application ----
# Each pod has a network namespace of its own (podman 4.3 cannot give a pod an existing one),
# and its plane interfaces are put into it from outside, as a CNI plugin (Multus) does: one
# veth pair per plane between pod A and pod B.
for h in a b; do
	conf $h sidecar "${TAG}p$h"
	P pod create --name "${TAG}-pod-$h" --network none >/dev/null || fail "pod on $h"
	PODS="$PODS ${TAG}-pod-$h"
	P pod start "${TAG}-pod-$h" >/dev/null || fail "starting the pod on $h"
	infra=$(P pod inspect -f '{{.InfraContainerID}}' "${TAG}-pod-$h")
	eval "POD_$h=$(P inspect -f '{{.State.Pid}}' "$infra")"
done
for p in 0 1; do
	ip link add "${TAG}pa$p" netns "$POD_a" type veth peer "${TAG}pb$p" netns "$POD_b" ||
		fail "the pods' veth for plane $p"
	for h in a b; do
		n=$([ $h = a ] && echo 1 || echo 2)
		pid=$(eval echo "\$POD_$h")
		nsenter -t "$pid" -n ip addr add "198.1$((8 + p)).0.$n/24" dev "${TAG}p$h$p"
		nsenter -t "$pid" -n ip link set "${TAG}p$h$p" up
	done
done
B_NET="nsenter -t $POD_b -n"
for h in a b; do
	P volume create "${TAG}-sock-$h" >/dev/null || fail "volume on $h"
	VOLUMES="$VOLUMES ${TAG}-sock-$h"
	P run -d --pod "${TAG}-pod-$h" --name "${TAG}-sidecar-$h" --read-only \
		--cap-drop all --security-opt no-new-privileges \
		-v "$TMP/$h.conf:/etc/metaroce/metaroced.conf:ro" -v "${TAG}-sock-$h:/run/metaroce" \
		"$IMAGE" >/dev/null || fail "the sidecar's container on $h"
	P run -d --pod "${TAG}-pod-$h" --name "${TAG}-podapp-$h" --cap-drop all \
		--security-opt no-new-privileges -v "${TAG}-sock-$h:/run/metaroce" \
		--entrypoint sleep "$IMAGE" infinity >/dev/null || fail "the pod's application on $h"
done
for h in a b; do
	wait_until 20 "the sidecar on $h" daemon_up "${TAG}-sidecar-$h"
	grep -q "backend udp" "$TMP/${TAG}-sidecar-$h.status" ||
		{ cat "$TMP/${TAG}-sidecar-$h.status"; fail "$h's sidecar does not run udp"; }
done
# an unmodified verbs program, as the sidecar manifest's application runs it
P exec "${TAG}-podapp-b" timeout 60 metaroce-run ibv_rc_pingpong -g 0 -c -s 65536 -n 200 \
	>"$TMP/pp.server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
wait_until 10 "ibv_rc_pingpong listening in pod B" b_listening 18515
P exec "${TAG}-podapp-a" timeout 60 metaroce-run ibv_rc_pingpong -g 0 -c -s 65536 -n 200 198.18.0.2 \
	>"$TMP/pp.client.log" 2>&1 || { cat "$TMP/pp.client.log"; fail "ibv_rc_pingpong in A's pod"; }
wait "$srv" || { cat "$TMP/pp.server.log"; fail "ibv_rc_pingpong in B's pod"; }
for l in client server; do
	grep -q "^26214400 bytes in .* seconds" "$TMP/pp.$l.log" && ! grep -qi "invalid data" "$TMP/pp.$l.log" ||
		{ cat "$TMP/pp.$l.log"; fail "ibv_rc_pingpong $l: not 200 verified exchanges of 64 KiB"; }
done
echo "  sidecar: ibv_rc_pingpong between the pods, 200 x 64 KiB verified ($(grep "bytes in" "$TMP/pp.client.log"))"
perf sidecar "${TAG}-podapp-b" "${TAG}-podapp-a" -t write -q 4 -s 65536 -n 200 -V
json_check sidecar 'j["messages"] == 800 and j["peer"]["verified"] == 800 and j["errors"] == 0'

# the host's forwarding, firewall and links are as they were (the pods' veths went with them)
host_net >"$TMP/host-net.after"
diff "$TMP/host-net.before" "$TMP/host-net.after" ||
	fail "the host's sysctls, firewall or links changed (above)"
