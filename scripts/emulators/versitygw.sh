# shellcheck shell=bash
# Versity S3 Gateway (github.com/versity/versitygw) with its posix backend:
# a third-party S3 server the lease is measured on (lab/compat's test,
# and scripts/compat's table). Sourced by scripts/emulators.sh, which then
# calls versitygw_start. Needs only bash and Go.
#
# The gateway is built once from the Go module proxy at a pinned version with
# `go install` (about 2 minutes on a small machine) and cached under
# $BUCKETLEASE_TOOLS_CACHE/versitygw-<version>/versitygw. versitygw_start
# runs it on 127.0.0.1 with a free port, its buckets in a directory under
# $EMULATOR_RUN and generated root credentials, waits until it answers,
# records its pid in $EMULATOR_RUN/versitygw.pid and exports:
#
#   BUCKETLEASE_TEST_VERSITYGW_ENDPOINT    http://127.0.0.1:PORT
#   BUCKETLEASE_TEST_VERSITYGW_ACCESS_KEY  root access key
#   BUCKETLEASE_TEST_VERSITYGW_SECRET_KEY  root secret key (never printed)
#   BUCKETLEASE_TEST_VERSITYGW_VERSION     the version that runs
#
# Tests create their own buckets.

VERSITYGW_VERSION=v1.8.0

# versitygw_install prints the path of the cached gateway binary, building
# it first if it is missing; the build goes to a temporary directory that
# is moved into place in one rename.
versitygw_install() {
	local cache="${BUCKETLEASE_TOOLS_CACHE:?BUCKETLEASE_TOOLS_CACHE is not set}"
	local dir="$cache/versitygw-$VERSITYGW_VERSION"
	if [ -x "$dir/versitygw" ]; then
		printf '%s\n' "$dir/versitygw"
		return 0
	fi
	echo "versitygw: building github.com/versity/versitygw@$VERSITYGW_VERSION (about 2 minutes, once)" >&2
	local tmp
	tmp=$(mktemp -d "$cache/.versitygw-build.XXXXXX") || return 1
	if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off \
		go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") >&2; then
		rm -rf "$tmp"
		echo "versitygw: go install failed" >&2
		return 1
	fi
	mkdir -p "$tmp/final" && mv "$tmp/bin/versitygw" "$tmp/final/versitygw" || { rm -rf "$tmp"; return 1; }
	# Another run may have won the race; keep whichever landed first.
	if ! mv -T "$tmp/final" "$dir" 2>/dev/null; then
		[ -x "$dir/versitygw" ] || { rm -rf "$tmp"; echo "versitygw: cannot install into $dir" >&2; return 1; }
	fi
	rm -rf "$tmp"
	printf '%s\n' "$dir/versitygw"
}

# versitygw_port_free reports whether nothing listens on 127.0.0.1:$1.
versitygw_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# versitygw_answers reports whether an HTTP server answers on 127.0.0.1:$1
# (any status: an unsigned request gets 403, which is an answer).
versitygw_answers() {
	local status
	status=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" >&3
		IFS= read -r -t 2 line <&3 || exit 1
		printf '%s' "$line"
	) 2>/dev/null || return 1
	case "$status" in
	"HTTP/1."?" "*) return 0 ;;
	*) return 1 ;;
	esac
}

versitygw_secret() {
	od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

versitygw_start() {
	: "${EMULATOR_RUN:?EMULATOR_RUN is not set}"
	local bin
	bin=$(versitygw_install) || return 1
	local data="$EMULATOR_RUN/versitygw-data" log="$EMULATOR_RUN/versitygw.log"
	mkdir -p "$data"
	local user pass
	user="bl$(versitygw_secret 8)"
	pass=$(versitygw_secret 20)
	local attempt port pid i
	for attempt in 1 2 3; do
		port=""
		for i in $(seq 1 50); do
			port=$((20000 + RANDOM % 40000))
			versitygw_port_free "$port" && break
			port=""
		done
		[ -n "$port" ] || { echo "versitygw: found no free port" >&2; return 1; }
		# Credentials reach the gateway through its environment only.
		ROOT_ACCESS_KEY_ID="$user" ROOT_SECRET_ACCESS_KEY="$pass" \
			"$bin" --port "127.0.0.1:$port" --quiet posix "$data" >"$log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$EMULATOR_RUN/versitygw.pid"
		for i in $(seq 1 60); do # up to 30 s
			if versitygw_answers "$port"; then
				export BUCKETLEASE_TEST_VERSITYGW_ENDPOINT="http://127.0.0.1:$port"
				export BUCKETLEASE_TEST_VERSITYGW_ACCESS_KEY="$user"
				export BUCKETLEASE_TEST_VERSITYGW_SECRET_KEY="$pass"
				export BUCKETLEASE_TEST_VERSITYGW_VERSION="$VERSITYGW_VERSION"
				echo "versitygw $VERSITYGW_VERSION: ready on 127.0.0.1:$port (pid $pid, log $log)"
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		echo "versitygw: attempt $attempt did not become ready; last log lines:" >&2
		tail -n 5 "$log" >&2 || true
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	echo "versitygw: could not start the gateway" >&2
	return 1
}
