#!/usr/bin/env bash
# local-down.sh stops every process hack/local-up.sh started (each in a process
# group of its own: SIGTERM, then SIGKILL after 5 s) and removes its state
# directory, then checks that no such process runs and the directory is gone;
# it exits 1 and says what is left otherwise.
#
#     hack/local-down.sh [--dir DIR]    # default: GOODSCHED_LOCAL_DIR, else
#                                       # ${TMPDIR:-/tmp}/goodsched-local
set -euo pipefail

state="${GOODSCHED_LOCAL_DIR:-${TMPDIR:-/tmp}/goodsched-local}"
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) state="$2"; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
	*) echo "local-down: unknown argument $1 (see -h)" >&2; exit 2 ;;
	esac
done
if [ ! -d "${state}" ]; then
	echo "local-down: nothing to stop (no ${state})" >&2
	exit 0
fi
state="$(cd "${state}" && pwd)"
if [ ! -f "${state}/.goodsched-local" ]; then
	echo "local-down: ${state} was not made by local-up.sh (no .goodsched-local in it): left alone" >&2
	exit 1
fi

# running PID: the process exists and is not a zombie.
running() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	[ "$(awk '{ sub(/.*\) /, ""); print substr($0, 1, 1) }' <<<"${stat}")" != Z ]
}
# ours PID: it runs and is one local-up started: its command line names the
# state directory (a recorded PID may have been reused since).
ours() {
	running "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "${state}"
}

pids=()
if [ -f "${state}/pids" ]; then
	while read -r name pid; do
		[ -n "${pid:-}" ] || continue
		pids+=("${pid}")
		if ours "${pid}"; then
			kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
		fi
	done <"${state}/pids"
fi
deadline=$(($(date +%s) + 5))
for pid in "${pids[@]}"; do
	while ours "${pid}" && [ "$(date +%s)" -lt "${deadline}" ]; do sleep 0.1; done
	if ours "${pid}"; then
		kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
	fi
done

left=()
for pid in "${pids[@]}"; do
	for _ in $(seq 50); do ours "${pid}" || break; sleep 0.1; done
	if ours "${pid}"; then left+=("${pid}"); fi
done
# Anything else in one of their process groups (a process a component
# started) must be gone too.
for p in /proc/[0-9]*; do
	pgid="$(awk '{ sub(/.*\) /, ""); print $3 }' "${p}/stat" 2>/dev/null)" || continue
	for pid in "${pids[@]}"; do
		if [ "${pgid}" = "${pid}" ] && [ "${p#/proc/}" != "${pid}" ] && running "${p#/proc/}"; then
			left+=("${p#/proc/}")
		fi
	done
done
if [ "${#left[@]}" -gt 0 ]; then
	echo "local-down: still running: ${left[*]}; the state stays in ${state}" >&2
	exit 1
fi
rm -rf "${state}"
if [ -e "${state}" ]; then
	echo "local-down: could not remove ${state}" >&2
	exit 1
fi
echo "local-down: stopped ${#pids[@]} processes, removed ${state}" >&2
