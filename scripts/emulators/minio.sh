# shellcheck shell=bash
# MinIO server for the s3, r2 and minio driver tests. Sourced by scripts/test,
# which then calls minio_start. Needs only bash and Go.
#
# The server binary is built once from a pinned module version with
# `go install` and cached under $BUCKETLEASE_TOOLS_CACHE/minio-<version>/minio
# (the build takes about 5-8 minutes on a fresh machine). minio_start runs it
# on 127.0.0.1 with a free port, a data directory under $EMULATOR_RUN and
# generated root credentials, waits until it is ready, records its pid in
# $EMULATOR_RUN/minio.pid and exports:
#
#   BUCKETLEASE_TEST_MINIO_ENDPOINT    host:port, plain HTTP
#   BUCKETLEASE_TEST_MINIO_ACCESS_KEY  root user
#   BUCKETLEASE_TEST_MINIO_SECRET_KEY  root password (never printed)
#
# Tests create their own buckets.

# The MinIO server version: RELEASE.2025-10 era, after the 2025-09-07 fix that
# makes If-Match on a missing key 404 and If-None-Match: * on a missing key
# succeed (see shared notes, service-semantics.md, quirk 4).
MINIO_SERVER_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

# minio_install prints the path of the cached server binary, building it
# first if it is missing. The build goes to a temporary directory that is
# moved into place in one rename, so an interrupted build leaves no half
# binary in the cache.
minio_install() {
	local cache="${BUCKETLEASE_TOOLS_CACHE:?BUCKETLEASE_TOOLS_CACHE is not set}"
	local dir="$cache/minio-$MINIO_SERVER_VERSION"
	if [ -x "$dir/minio" ]; then
		printf '%s\n' "$dir/minio"
		return 0
	fi
	echo "minio: building github.com/minio/minio@$MINIO_SERVER_VERSION (about 5-8 minutes, once)" >&2
	local tmp
	tmp=$(mktemp -d "$cache/.minio-build.XXXXXX") || return 1
	if ! (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 GOFLAGS= GOWORK=off \
		go install "github.com/minio/minio@$MINIO_SERVER_VERSION") >&2; then
		rm -rf "$tmp"
		echo "minio: go install failed" >&2
		return 1
	fi
	mkdir -p "$tmp/final" && mv "$tmp/bin/minio" "$tmp/final/minio" || { rm -rf "$tmp"; return 1; }
	# Another run may have won the race; keep whichever landed first.
	if ! mv -T "$tmp/final" "$dir" 2>/dev/null; then
		[ -x "$dir/minio" ] || { rm -rf "$tmp"; echo "minio: cannot install into $dir" >&2; return 1; }
	fi
	rm -rf "$tmp"
	printf '%s\n' "$dir/minio"
}

# minio_port_free reports whether nothing listens on 127.0.0.1:$1.
minio_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# minio_free_port prints a port on 127.0.0.1 that nothing listens on.
minio_free_port() {
	local i port
	for i in $(seq 1 50); do
		port=$((20000 + RANDOM % 40000))
		if minio_port_free "$port"; then
			printf '%s\n' "$port"
			return 0
		fi
	done
	echo "minio: found no free port in 50 tries" >&2
	return 1
}

# minio_ready reports whether the server on 127.0.0.1:$1 answers its
# readiness endpoint with 200, using bash's /dev/tcp (no curl needed).
minio_ready() {
	local status
	status=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET /minio/health/ready HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" >&3
		IFS= read -r -t 2 line <&3 || exit 1
		printf '%s' "$line"
	) 2>/dev/null || return 1
	case "$status" in
	"HTTP/1."?" 200"*) return 0 ;;
	*) return 1 ;;
	esac
}

# minio_secret prints n random hex characters.
minio_secret() {
	od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

minio_start() {
	: "${EMULATOR_RUN:?EMULATOR_RUN is not set}"
	local bin
	bin=$(minio_install) || return 1
	local data="$EMULATOR_RUN/minio-data" log="$EMULATOR_RUN/minio.log"
	mkdir -p "$data"
	local user pass
	user="bl$(minio_secret 8)"
	pass=$(minio_secret 20)
	local attempt port cport pid i
	for attempt in 1 2 3; do
		port=$(minio_free_port) || return 1
		cport=$(minio_free_port) || return 1
		# Credentials reach the server through its environment only.
		MINIO_ROOT_USER="$user" MINIO_ROOT_PASSWORD="$pass" MINIO_BROWSER=off \
			MINIO_UPDATE=off MINIO_CI_CD=1 \
			"$bin" server --quiet --anonymous \
			--address "127.0.0.1:$port" --console-address "127.0.0.1:$cport" \
			"$data" >"$log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$EMULATOR_RUN/minio.pid"
		# Up to 60 s: the first start initialises the data directory.
		for i in $(seq 1 120); do
			if minio_ready "$port"; then
				export BUCKETLEASE_TEST_MINIO_ENDPOINT="127.0.0.1:$port"
				export BUCKETLEASE_TEST_MINIO_ACCESS_KEY="$user"
				export BUCKETLEASE_TEST_MINIO_SECRET_KEY="$pass"
				echo "minio: ready on 127.0.0.1:$port (pid $pid, log $log)"
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		echo "minio: attempt $attempt did not become ready; last log lines:" >&2
		tail -n 5 "$log" >&2 || true
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	echo "minio: could not start the server" >&2
	return 1
}
