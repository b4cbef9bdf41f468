#!/usr/bin/env bash
# Installs and runs a local Weaviate server for ragmem's tests and for trying
# the Weaviate backend.
#
#   scripts/weaviate.sh install          build weaviate-server once into the cache; print its path
#   scripts/weaviate.sh start [DIR]      start one node on loopback (anonymous access, no modules,
#                                        no GraphQL API: ragmem uses gRPC and REST only), data under
#                                        DIR (default a new temp folder); wait until ready
#   scripts/weaviate.sh stop             stop the node started by start
#   scripts/weaviate.sh test CMD...      install, start, run CMD with RAGMEM_WEAVIATE_URL and
#                                        RAGMEM_WEAVIATE_BIN set, stop; exit with CMD's status
#
# Environment: WEAVIATE_PORT (HTTP, default 8080), WEAVIATE_GRPC_PORT (default 50051),
# WEAVIATE_GRAPHQL (default off; "on" keeps Weaviate's deprecated GraphQL API for your own use),
# RAGMEM_CACHE (default $HOME/.cache/ragmem). The binary is built with
# `go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2` and kept under
# $RAGMEM_CACHE/weaviate-v1.35.2/bin, so later runs reuse it.
set -euo pipefail

VERSION=v1.35.2
CACHE="${RAGMEM_CACHE:-$HOME/.cache/ragmem}"
BIN_DIR="$CACHE/weaviate-$VERSION/bin"
BIN="$BIN_DIR/weaviate-server"
STATE="$CACHE/weaviate-run"
PORT="${WEAVIATE_PORT:-8080}"
GRPC="${WEAVIATE_GRPC_PORT:-50051}"
DISABLE_GRAPHQL=true
if [ "${WEAVIATE_GRAPHQL:-off}" = on ]; then
	DISABLE_GRAPHQL=false
fi

install() {
	if [ ! -x "$BIN" ]; then
		echo "weaviate.sh: building weaviate-server $VERSION (once; this takes a few minutes)" >&2
		mkdir -p "$BIN_DIR"
		# Built outside the repository so that its go.mod plays no part.
		(cd "$(mktemp -d)" && GOBIN="$BIN_DIR" nice go install "github.com/weaviate/weaviate/cmd/weaviate-server@$VERSION")
	fi
	echo "$BIN"
}

ready() {
	local url="http://127.0.0.1:$PORT/v1/.well-known/ready"
	for _ in $(seq 1 600); do
		if curl -fsS -o /dev/null "$url" 2>/dev/null; then
			return 0
		fi
		if [ -f "$STATE/pid" ] && ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
			echo "weaviate.sh: the server exited; its log:" >&2
			tail -n 40 "$STATE/log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
	echo "weaviate.sh: not ready after 120 s; its log:" >&2
	tail -n 40 "$STATE/log" >&2 || true
	return 1
}

start() {
	install >/dev/null
	mkdir -p "$STATE"
	if [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
		echo "weaviate.sh: already running (pid $(cat "$STATE/pid"))" >&2
		return 1
	fi
	local data="${1:-}"
	if [ -z "$data" ]; then
		data="$(mktemp -d "${TMPDIR:-/tmp}/ragmem-weaviate.XXXXXX")"
		echo "$data" >"$STATE/tmpdata"
	fi
	# Loopback only where Weaviate lets us choose (HTTP, gossip, Raft); no
	# modules, no telemetry, no profiling listener.
	env AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
		AUTHENTICATION_APIKEY_ENABLED=false \
		PERSISTENCE_DATA_PATH="$data" \
		DEFAULT_VECTORIZER_MODULE=none \
		ENABLE_MODULES= \
		API_BASED_MODULES_DISABLED=true \
		DISABLE_TELEMETRY=true \
		GO_PROFILING_DISABLE=true \
		PROMETHEUS_MONITORING_ENABLED=false \
		CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
		CLUSTER_BIND_ADDR=127.0.0.1 \
		CLUSTER_HOSTNAME=node1 \
		GRPC_PORT="$GRPC" \
		DISABLE_GRAPHQL="$DISABLE_GRAPHQL" \
		LOG_LEVEL=warning \
		GOMAXPROCS="${WEAVIATE_GOMAXPROCS:-1}" \
		setsid "$BIN" --host 127.0.0.1 --port "$PORT" --scheme http >"$STATE/log" 2>&1 &
	echo $! >"$STATE/pid"
	ready
	echo "weaviate.sh: Weaviate $VERSION ready at http://127.0.0.1:$PORT, gRPC on port $GRPC (data $data)" >&2
}

stop() {
	if [ -f "$STATE/pid" ]; then
		local pid
		pid="$(cat "$STATE/pid")"
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			for _ in $(seq 1 150); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$STATE/pid"
	fi
	if [ -f "$STATE/tmpdata" ]; then
		rm -rf "$(cat "$STATE/tmpdata")"
		rm -f "$STATE/tmpdata"
	fi
}

case "${1:-}" in
install) install ;;
start)
	shift
	start "$@"
	;;
stop) stop ;;
test)
	shift
	export RAGMEM_WEAVIATE_BIN
	RAGMEM_WEAVIATE_BIN="$(install)"
	trap stop EXIT
	start
	export RAGMEM_WEAVIATE_URL="http://127.0.0.1:$PORT?grpc=127.0.0.1:$GRPC"
	"$@"
	;;
*)
	sed -n '2,18p' "$0" >&2
	exit 2
	;;
esac
