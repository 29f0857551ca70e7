#!/usr/bin/env bash
# local-up.sh runs goodsched-scheduler on a Kubernetes control plane of your own
# machine, with fake GPU nodes and no GPU: etcd, kube-apiserver,
# kube-controller-manager (the Job controller) and kwok (fake kubelets) on
# loopback, fake nodes labelled as GPU feature discovery labels real ones (Ready,
# untainted, their GPUs in status.allocatable), the scheduler built from this
# checkout, and the sample Jobs of deploy/. It returns once every pod of those
# Jobs is bound, and prints the kubeconfig path as the last line of stdout:
#
#     cd examples/kubernetes
#     export KUBECONFIG="$(hack/local-up.sh)" PATH="$(hack/testbin.sh):$PATH"
#     kubectl get pods -o wide
#     hack/local-down.sh
#
# The binaries come from hack/testbin.sh (or from KUBEBUILDER_ASSETS when it holds
# them all); a cold build of them takes a while, see the README. Progress and the
# processes' logs go to stderr and to the state directory.
#
# Flags (each also an environment variable):
#   --nodes SPEC  GOODSCHED_LOCAL_NODES  fake nodes, COUNTxGPUS:TYPE,... as in
#                 accel.ParseSpec (default 2x8:a100-40gb,2x4:t4). Types: a100-40gb,
#                 a100-80gb, a10g, h100-80gb, h200-141gb, l4, l40s, t4, v100-16gb,
#                 v100-32gb
#   --jobs FILES  GOODSCHED_LOCAL_JOBS   comma-separated manifests to apply and wait
#                 for (default deploy/sample-elastic-job.yaml and
#                 deploy/sample-rigid-job.yaml; "" = none)
#   --dir DIR     GOODSCHED_LOCAL_DIR    state: certificates, etcd data, logs, pids
#                 (default ${TMPDIR:-/tmp}/goodsched-local); local-down.sh takes
#                 the same
#   --timeout S   GOODSCHED_LOCAL_TIMEOUT  seconds to wait for the pods (default 120)
#   --scheduler-flags "..."  more flags for goodsched-scheduler (e.g. "-policy fifo")
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(dirname "${here}")"

nodes="${GOODSCHED_LOCAL_NODES:-2x8:a100-40gb,2x4:t4}"
jobs="${GOODSCHED_LOCAL_JOBS-${module}/deploy/sample-elastic-job.yaml,${module}/deploy/sample-rigid-job.yaml}"
state="${GOODSCHED_LOCAL_DIR:-${TMPDIR:-/tmp}/goodsched-local}"
timeout="${GOODSCHED_LOCAL_TIMEOUT:-120}"
sched_flags=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--nodes) nodes="$2"; shift 2 ;;
	--jobs) jobs="$2"; shift 2 ;;
	--dir) state="$2"; shift 2 ;;
	--timeout) timeout="$2"; shift 2 ;;
	--scheduler-flags) sched_flags="$2"; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "local-up: unknown argument $1 (see -h)" >&2; exit 2 ;;
	esac
done

start_s="${EPOCHREALTIME}"
log() { awk -v a="${EPOCHREALTIME}" -v b="${start_s}" -v m="$*" 'BEGIN { printf "local-up: [%5.1fs] %s\n", a - b, m }' >&2; }
die() { echo "local-up: $*" >&2; exit 1; }
bad() { echo "local-up: $*" >&2; exit 2; }

# product and memory (MiB) labels GPU feature discovery sets, per type.
gfd_labels() {
	case "$1" in
	a100-40gb) echo "NVIDIA-A100-SXM4-40GB 40960" ;;
	a100-80gb) echo "NVIDIA-A100-SXM4-80GB 81920" ;;
	a10g) echo "NVIDIA-A10G 24576" ;;
	h100-80gb) echo "NVIDIA-H100-80GB-HBM3 81920" ;;
	h200-141gb) echo "NVIDIA-H200 144384" ;;
	l4) echo "NVIDIA-L4 24576" ;;
	l40s) echo "NVIDIA-L40S 49152" ;;
	t4) echo "Tesla-T4 15360" ;;
	v100-16gb) echo "Tesla-V100-SXM2-16GB 16384" ;;
	v100-32gb) echo "Tesla-V100-SXM2-32GB 32768" ;;
	*) return 1 ;;
	esac
}

# Check the node spec before starting anything.
node_names=() node_gpus=() node_types=()
declare -A per_type=()
IFS=',' read -ra groups <<<"${nodes}"
for g in "${groups[@]}"; do
	[[ "${g}" =~ ^([0-9]+)x([0-9]+):([a-z0-9-]+)$ ]] || bad "--nodes ${nodes}: want COUNTxGPUS:TYPE,... such as 2x8:a100-40gb,2x4:t4"
	count="${BASH_REMATCH[1]}" gpus="${BASH_REMATCH[2]}" typ="${BASH_REMATCH[3]}"
	gfd_labels "${typ}" >/dev/null || bad "--nodes: type ${typ} is not one local-up.sh labels (see -h)"
	for ((i = 0; i < count; i++)); do
		node_names+=("${typ}-${per_type[${typ}]:-0}")
		per_type[${typ}]=$((${per_type[${typ}]:-0} + 1))
		node_gpus+=("${gpus}") node_types+=("${typ}")
	done
done
[ "${#node_names[@]}" -gt 0 ] || bad "--nodes: no nodes"
IFS=',' read -ra job_files <<<"${jobs}"
for f in "${job_files[@]}"; do
	[ -f "${f}" ] || bad "--jobs: no file ${f}"
done

if [ -f "${state}/pids" ]; then
	die "${state} holds a running cluster: stop it with hack/local-down.sh --dir ${state} first"
fi
if [ -d "${state}" ] && [ -n "$(ls -A "${state}")" ]; then
	die "--dir ${state} exists and is not empty: name a new directory (local-down.sh removes it)"
fi

# Binaries: KUBEBUILDER_ASSETS when it has them all, else testbin.sh.
assets="${KUBEBUILDER_ASSETS:-}"
for b in etcd kube-apiserver kube-controller-manager kwok kubectl kwok-stages.yaml; do
	[ -n "${assets}" ] && [ -e "${assets}/${b}" ] || { assets=""; break; }
done
if [ -z "${assets}" ]; then
	log "getting the control plane's binaries from hack/testbin.sh (at once when its cache is warm; a cold build: see README)"
	assets="$("${here}/testbin.sh" | tail -n 1)"
fi
kubectl="${assets}/kubectl"

mkdir -p "${state}"
state="$(cd "${state}" && pwd)"
touch "${state}/pids" "${state}/.goodsched-local" # the mark local-down.sh looks for
kc="${state}/admin.kubeconfig"

# The scheduler builds while the control plane starts.
(cd "${module}" && go build -o "${state}/goodsched-scheduler" ./cmd/goodsched-scheduler) >"${state}/build.log" 2>&1 &
build_pid=$!

# Anything failing from here stops what was started and removes the state.
started=0
on_exit() {
	rc=$?
	if [ "${rc}" -ne 0 ] && [ "${started}" -eq 0 ]; then
		kill "${build_pid}" 2>/dev/null || true
		wait "${build_pid}" 2>/dev/null || true
		for f in "${state}"/*.log; do
			[ -f "${f}" ] && { echo "--- last lines of ${f}" >&2; tail -n 5 "${f}" >&2; }
		done
		echo "local-up: failed; stopping what was started" >&2
		"${here}/local-down.sh" --dir "${state}" >&2 || true
	fi
}
trap on_exit EXIT

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
			echo "${p}"
			return
		fi
	done
}

# spawn NAME BINARY ARGS...: runs a process in a session (and process group)
# of its own, detached from this script's terminal and stdout, and records it.
spawn() {
	local name="$1"
	shift
	setsid "$@" </dev/null >"${state}/${name}.log" 2>&1 &
	echo "${name} $!" >>"${state}/pids"
}

wait_until() { # SECONDS WHAT COMMAND...
	local secs="$1" what="$2"
	shift 2
	local deadline=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "${deadline}" ] || die "${what} not ready after ${secs}s"
		sleep 0.2
	done
}

# Certificates and keys: a CA of our own, the API server's serving
# certificate for 127.0.0.1, the service-account key pair, an admin token.
log "writing certificates to ${state}"
(
	cd "${state}"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj /CN=goodsched-local-ca 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr -subj /CN=127.0.0.1 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
	openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out serving.crt -days 30 -extfile san.ext 2>/dev/null
	openssl genrsa -out sa.key 2048 2>/dev/null
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	chmod 600 ./*.key
)
token="$(openssl rand -hex 16)"
printf '%s,admin,uid-admin,"system:masters"\n' "${token}" >"${state}/tokens.csv"
chmod 600 "${state}/tokens.csv"

etcd_port=$(free_port) peer_port=$(free_port) api_port=$(free_port) kwok_port=$(free_port) metrics_port=$(free_port)
cat >"${kc}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: goodsched-local
  cluster:
    server: https://127.0.0.1:${api_port}
    certificate-authority: ${state}/ca.crt
users:
- name: admin
  user:
    token: ${token}
contexts:
- name: goodsched-local
  context: {cluster: goodsched-local, user: admin}
current-context: goodsched-local
EOF
chmod 600 "${kc}"
k() { "${kubectl}" --kubeconfig "${kc}" "$@"; }

log "starting etcd on 127.0.0.1:${etcd_port}"
spawn etcd "${assets}/etcd" --data-dir "${state}/etcd" \
	--listen-client-urls "http://127.0.0.1:${etcd_port}" --advertise-client-urls "http://127.0.0.1:${etcd_port}" \
	--listen-peer-urls "http://127.0.0.1:${peer_port}" --initial-advertise-peer-urls "http://127.0.0.1:${peer_port}" \
	--initial-cluster "default=http://127.0.0.1:${peer_port}" --unsafe-no-fsync --log-level warn
wait_until 60 etcd curl -fsS "http://127.0.0.1:${etcd_port}/health"

log "starting kube-apiserver on 127.0.0.1:${api_port}"
spawn kube-apiserver "${assets}/kube-apiserver" --etcd-servers "http://127.0.0.1:${etcd_port}" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="${api_port}" \
	--cert-dir "${state}/certs" --tls-cert-file "${state}/serving.crt" --tls-private-key-file "${state}/serving.key" \
	--service-account-issuer=https://127.0.0.1 --service-account-key-file "${state}/sa.pub" \
	--service-account-signing-key-file "${state}/sa.key" --token-auth-file "${state}/tokens.csv" \
	--authorization-mode=RBAC --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none \
	--disable-admission-plugins=ServiceAccount -v=0
wait_until 90 kube-apiserver k get --raw /readyz

log "starting kube-controller-manager (Job controller) and kwok (fake kubelets)"
spawn kube-controller-manager "${assets}/kube-controller-manager" --kubeconfig "${kc}" \
	--controllers job,garbagecollector --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
	--service-account-private-key-file "${state}/sa.key" --root-ca-file "${state}/ca.crt" -v=1
spawn kwok "${assets}/kwok" --kubeconfig "${kc}" --config "${assets}/kwok-stages.yaml" \
	--manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
	--node-ip=127.0.0.1 --server-address "127.0.0.1:${kwok_port}"

log "creating ${#node_names[@]} fake GPU nodes (${nodes})"
{
	for i in "${!node_names[@]}"; do
		read -r product mem <<<"$(gfd_labels "${node_types[$i]}")"
		cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: ${node_names[$i]}
  annotations: {kwok.x-k8s.io/node: fake}
  labels:
    kubernetes.io/hostname: ${node_names[$i]}
    nvidia.com/gpu.product: ${product}
    nvidia.com/gpu.memory: "${mem}"
    nvidia.com/gpu.count: "${node_gpus[$i]}"
EOF
	done
} >"${state}/nodes.yaml"
k apply -f "${state}/nodes.yaml" >/dev/null
# The API server drops a new Node's status: give each its GPUs through the
# status subresource (again if kwok's initialisation raced with it), and lift
# the not-ready taint that admission put on it once kwok made it Ready (what
# the node lifecycle controller, not run here, would do).
give_gpus() { # NODE GPUS
	k patch node "$1" --subresource=status --type=merge -p \
		"{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"$2\",\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\"},\"allocatable\":{\"nvidia.com/gpu\":\"$2\",\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\"}}}" >/dev/null
}
for i in "${!node_names[@]}"; do give_gpus "${node_names[$i]}" "${node_gpus[$i]}"; done
nodes_ready() {
	local i n gpus ready taints pending=0
	declare -A seen=()
	while read -r n gpus ready taints; do
		seen[${n}]="${gpus} ${ready} ${taints:-}"
	done < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.allocatable.nvidia\.com/gpu} {.status.conditions[?(@.type=="Ready")].status} {.spec.taints}{"\n"}{end}')
	for i in "${!node_names[@]}"; do
		n="${node_names[$i]}"
		read -r gpus ready taints <<<"${seen[${n}]:-- - -}"
		if [ "${gpus}" != "${node_gpus[$i]}" ]; then
			give_gpus "${n}" "${node_gpus[$i]}"
			pending=1
		elif [ "${ready}" != True ]; then
			pending=1
		elif [ -n "${taints:-}" ]; then
			k patch node "${n}" --type=merge -p '{"spec":{"taints":null}}' >/dev/null
			pending=1
		fi
	done
	return "${pending}"
}
wait_until 90 "fake nodes" nodes_ready

# The scheduler keeps its state (the binding key, measurements) in its own
# namespace, as deployed.
k apply -f "${module}/deploy/namespace.yaml" >/dev/null
log "waiting for the build of goodsched-scheduler"
wait "${build_pid}" || { cat "${state}/build.log" >&2; die "go build ./cmd/goodsched-scheduler failed"; }
log "starting goodsched-scheduler (metrics on 127.0.0.1:${metrics_port})"
# shellcheck disable=SC2086 # sched_flags is a list of flags
spawn goodsched-scheduler "${state}/goodsched-scheduler" -kubeconfig "${kc}" -leader-elect=false \
	-metrics-addr "127.0.0.1:${metrics_port}" ${sched_flags}
wait_until 60 goodsched-scheduler curl -fsS "http://127.0.0.1:${metrics_port}/healthz"
echo "http://127.0.0.1:${metrics_port}/metrics" >"${state}/metrics-url"
started=1

# all_bound: every Job of ours has a decision and as many bound pods as its
# (possibly just patched) parallelism, and no pod of ours is pending.
all_bound() {
	local jobs pods
	jobs="$(k get jobs -A -o jsonpath='{range .items[?(@.spec.template.spec.schedulerName=="goodsched")]}{.metadata.namespace}/{.metadata.name} {.spec.parallelism} {.metadata.annotations.goodsched\.io/last-decision}{"\n"}{end}')"
	pods="$(k get pods -A -o jsonpath='{range .items[?(@.spec.schedulerName=="goodsched")]}{.metadata.namespace}/{.metadata.labels.batch\.kubernetes\.io/job-name} {.spec.nodeName}{"\n"}{end}')"
	[ -n "${jobs}" ] || return 1
	awk -v pods="${pods}" 'BEGIN {
		n = split(pods, lines, "\n")
		for (i = 1; i <= n; i++) { split(lines[i], f, " "); if (f[1] == "") continue; total[f[1]]++; if (f[2] != "") bound[f[1]]++ }
	}
	{ if ($3 == "" || bound[$1] != $2 || total[$1] != $2) bad = 1 }
	END { exit bad }' <<<"${jobs}"
}
if [ "${#job_files[@]}" -gt 0 ]; then
	log "applying ${job_files[*]}"
	for f in "${job_files[@]}"; do k apply -f "${f}" >/dev/null; done
	deadline=$(($(date +%s) + timeout))
	until all_bound; do
		if [ "$(date +%s)" -ge "${deadline}" ]; then
			echo "local-up: not every pod was bound after ${timeout}s; the cluster stays up (logs in ${state})" >&2
			k get pods -A -o wide >&2 || true
			echo "${kc}"
			exit 1
		fi
		sleep 0.2
	done
	log "every pod of the Jobs is bound"
	k get pods -o wide >&2
fi
log "up: logs and state in ${state}; metrics at $(cat "${state}/metrics-url"); stop with hack/local-down.sh$([ "${state}" = "${TMPDIR:-/tmp}/goodsched-local" ] || echo " --dir ${state}")"
echo "${kc}"
