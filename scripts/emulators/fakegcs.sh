# shellcheck shell=bash
# fake-gcs-server, the Google Cloud Storage emulator the gs:// driver's tests
# run against. Sourced by scripts/test, which then calls fakegcs_start.
#
# The server is built from the Go module proxy at a pinned version with
# `go install` into a temporary directory, then moved into
# $BUCKETLEASE_TOOLS_CACHE/fake-gcs-server-<version>/ and reused from there.
# It listens on 127.0.0.1 on a free port, keeps its objects in memory, logs to
# $EMULATOR_RUN/fakegcs/server.log, and its pid goes to $EMULATOR_RUN/fakegcs.pid.
#
# Exports:
#   BUCKETLEASE_TEST_GCS_ENDPOINT  http://127.0.0.1:PORT (the tests create
#                                  their own buckets; no credentials needed)
#
# Known emulator deviation: fake-gcs-server ignores ifGenerationMatch on an
# object DELETE (fsouza/fake-gcs-server#1282); driver/gcs's test lists it.

FAKEGCS_MODULE=github.com/fsouza/fake-gcs-server
FAKEGCS_VERSION=v1.56.1

# fakegcs_install sets FAKEGCS_BIN, building the pinned server if the cache
# does not have it yet.
fakegcs_install() {
	local dir="$BUCKETLEASE_TOOLS_CACHE/fake-gcs-server-$FAKEGCS_VERSION"
	FAKEGCS_BIN="$dir/fake-gcs-server"
	if [ -x "$FAKEGCS_BIN" ]; then
		return 0
	fi
	echo "building $FAKEGCS_MODULE@$FAKEGCS_VERSION (cached afterwards in $dir)"
	mkdir -p "$BUCKETLEASE_TOOLS_CACHE"
	local tmp
	tmp=$(mktemp -d "$BUCKETLEASE_TOOLS_CACHE/.fake-gcs-server-build.XXXXXX")
	# Build outside this module so that its go.mod plays no part.
	if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-buildvcs=false go install "$FAKEGCS_MODULE@$FAKEGCS_VERSION"); then
		rm -rf "$tmp"
		echo "fakegcs: go install $FAKEGCS_MODULE@$FAKEGCS_VERSION failed" >&2
		return 1
	fi
	# A concurrent run may have finished first; either copy is good.
	if ! mv -T "$tmp" "$dir" 2>/dev/null; then
		rm -rf "$tmp"
	fi
	[ -x "$FAKEGCS_BIN" ]
}

# fakegcs_port_in_use PORT succeeds if something accepts connections there.
fakegcs_port_in_use() (
	exec 3<>"/dev/tcp/127.0.0.1/$1"
) 2>/dev/null

# fakegcs_ready PORT succeeds if the server answers its bucket list with 200.
fakegcs_ready() (
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf 'GET /storage/v1/b HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" >&3
	IFS= read -r -t 2 status <&3 || exit 1
	case "$status" in
	"HTTP/1."?" 200"*) exit 0 ;;
	*) exit 1 ;;
	esac
) 2>/dev/null

fakegcs_start() {
	: "${EMULATOR_RUN:?EMULATOR_RUN must name the run directory}"
	: "${BUCKETLEASE_TOOLS_CACHE:?BUCKETLEASE_TOOLS_CACHE must name the tools cache}"
	fakegcs_install || return 1
	local run="$EMULATOR_RUN/fakegcs"
	mkdir -p "$run"
	local attempt port pid i
	# A port picked at random can be taken between the check and the bind;
	# then the server exits and the next attempt picks another.
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if fakegcs_port_in_use "$port"; then
			continue
		fi
		# -public-host: the client library's XML reads (its default for
		# object downloads) reach /BUCKET/OBJECT on the endpoint's host,
		# which fake-gcs-server serves only for its public host.
		"$FAKEGCS_BIN" -scheme http -host 127.0.0.1 -port "$port" \
			-public-host "127.0.0.1:$port" -backend memory -log-level warn >"$run/server.log" 2>&1 &
		pid=$!
		echo "$pid" >"$EMULATOR_RUN/fakegcs.pid"
		for i in $(seq 1 150); do # up to 30 s
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if fakegcs_ready "$port"; then
				export BUCKETLEASE_TEST_GCS_ENDPOINT="http://127.0.0.1:$port"
				echo "fake-gcs-server $FAKEGCS_VERSION on $BUCKETLEASE_TEST_GCS_ENDPOINT (pid $pid)"
				return 0
			fi
			sleep 0.2
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		echo "fakegcs: attempt $attempt on port $port did not become ready" >&2
	done
	echo "fakegcs: fake-gcs-server did not start; its log:" >&2
	tail -n 20 "$run/server.log" >&2 || true
	return 1
}
