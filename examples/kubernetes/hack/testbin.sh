#!/usr/bin/env bash
# testbin.sh builds the binaries the integration tests of examples/kubernetes run
# against — kube-apiserver and kube-controller-manager v1.37.2, etcd v3.6.16 and
# kwok v0.8.0 — and kubectl v1.37.2 for hack/local-up.sh and its user, from the Go
# module proxy (nothing is downloaded from anywhere else) into a cache directory
# keyed by their versions, and prints that directory as the last line of stdout,
# the form KUBEBUILDER_ASSETS takes:
#
#     export KUBEBUILDER_ASSETS="$(examples/kubernetes/hack/testbin.sh)"
#     export PATH="$(examples/kubernetes/hack/testbin.sh):$PATH"    # kubectl
#
# Each binary is built only when missing: a warm cache returns at once, and a
# cache from before kubectl was added gains kubectl alone. A cold build took 16 min of CPU here (33 min
# wall on a 2-core machine busy with other builds; roughly half that idle); the
# binaries take 330 MB, the Go build cache a few GB more. Progress goes to
# stderr.
#
# Environment: GOODSCHED_TESTBIN_CACHE (default $HOME/.cache/goodsched-testbin).
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

cache="${GOODSCHED_TESTBIN_CACHE:-${HOME}/.cache/goodsched-testbin}"
bin="${cache}/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
work="${cache}/build"
mkdir -p "${bin}" "${work}"

log() { echo "testbin: $*" >&2; }

need() {
	local name
	for name in "$@"; do
		[ -x "${bin}/${name}" ] || return 0
	done
	return 1
}

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# etcd lives in a module of its own: kubernetes' go.mod pins etcd client
# libraries of another minor version.
if need etcd; then
	log "building etcd ${ETCD_VERSION} (about 4 min cold)"
	d="${work}/etcd"
	mkdir -p "${d}"
	(
		cd "${d}"
		[ -f go.mod ] || go mod init goodsched.io/testbin/etcd >/dev/null 2>&1
		go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
		go build -trimpath -ldflags "-s -w" -o "${bin}/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
		mv "${bin}/etcd.tmp" "${bin}/etcd"
	)
fi

# kube-apiserver, kube-controller-manager and kubectl come from one tools module
# that requires k8s.io/kubernetes.
k8s_tools="${work}/kubernetes"
k8s_module() {
	mkdir -p "${k8s_tools}"
	cd "${k8s_tools}"
	local tools
	tools='//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)'
	if [ ! -f go.mod ]; then
		# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
		# them with local paths; point each at its published version instead.
		local modfile
		modfile="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
		{
			echo "module goodsched.io/testbin/kubernetes"
			echo
			echo "go 1.25"
			echo
			echo "require k8s.io/kubernetes ${K8S_VERSION}"
			echo
			echo "replace ("
			sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"${STAGING_VERSION}"'#p' "${modfile}"
			echo ")"
		} >go.mod
		rm -f go.sum
	fi
	if [ ! -f go.sum ] || [ "$(cat tools.go 2>/dev/null)" != "${tools}" ]; then
		printf '%s\n' "${tools}" >tools.go
		go mod tidy >&2
	fi
}
k8s_build() {
	local V=k8s.io/component-base/version cmd
	local flags="-s -w -X ${V}.gitVersion=${K8S_VERSION} -X ${V}.gitMajor=1 -X ${V}.gitMinor=37 -X ${V}.gitTreeState=clean"
	for cmd in "$@"; do
		go build -trimpath -ldflags "${flags}" -o "${bin}/${cmd}.tmp" "k8s.io/kubernetes/cmd/${cmd}" >&2
		mv "${bin}/${cmd}.tmp" "${bin}/${cmd}"
	done
}

if need kube-apiserver kube-controller-manager; then
	log "building kube-apiserver and kube-controller-manager ${K8S_VERSION} (about 8 min cold)"
	(k8s_module; k8s_build kube-apiserver kube-controller-manager)
fi

if need kubectl; then
	log "building kubectl ${K8S_VERSION} (about 2 min after the API server)"
	(k8s_module; k8s_build kubectl)
fi

if need kwok; then
	log "building kwok ${KWOK_VERSION} (about 2 min cold)"
	GOBIN="${work}/gobin" go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
	mv "${work}/gobin/kwok" "${bin}/kwok"
fi

# kwok needs Stage objects for node heartbeats and pod lifecycles; they ship in
# its module under kustomize/stage/. pod-complete is left out on purpose: it
# would finish every Job pod at once, and the tests decide when a job is done.
if [ ! -f "${bin}/kwok-stages.yaml" ]; then
	src="$(go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
	{
		for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
			pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml; do
			p="${src}/kustomize/stage/${f}"
			[ -f "${p}" ] || { log "missing kwok stage ${p}"; exit 1; }
			echo "---"
			cat "${p}"
		done
	} >"${bin}/kwok-stages.yaml.tmp"
	mv "${bin}/kwok-stages.yaml.tmp" "${bin}/kwok-stages.yaml"
fi

echo "${bin}"
