# shellcheck shell=bash
# Azurite, the Azure Blob Storage emulator the azblob:// driver's tests run
# against. Sourced by scripts/test, which then calls azurite_start.
#
# Azurite comes from npm at the exact version pinned in tools/package.json and
# tools/package-lock.json, installed with `npm ci --prefix tools` into
# tools/node_modules (ignored by git) and reused when that version is already
# there. Only the blob service runs (the azurite-blob entry point), on
# 127.0.0.1 with a port the kernel picks, in memory, with telemetry off, with its files and log
# under $EMULATOR_RUN/azurite; its pid goes to $EMULATOR_RUN/azurite.pid.
#
# Exports:
#   BUCKETLEASE_TEST_AZURITE_ENDPOINT           http://127.0.0.1:PORT/devstoreaccount1
#   BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING  a connection string for Azurite's
#                                               well-known development account
# The development account key is published by Microsoft and works only
# against the emulator; it is still never printed.

AZURITE_TOOLS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../tools" && pwd)"

# azurite_pinned prints the version tools/package.json pins.
azurite_pinned() {
	node -p "require(process.argv[1]).dependencies.azurite" "$AZURITE_TOOLS_DIR/package.json"
}

# azurite_installed prints the installed version, or nothing.
azurite_installed() {
	node -p "require(process.argv[1]).version" "$AZURITE_TOOLS_DIR/node_modules/azurite/package.json" 2>/dev/null || true
}

# azurite_current succeeds if tools/node_modules holds a complete install
# (npm writes node_modules/.package-lock.json last) of the pinned version.
azurite_current() {
	[ -f "$AZURITE_TOOLS_DIR/node_modules/.package-lock.json" ] &&
		[ -x "$AZURITE_TOOLS_DIR/node_modules/.bin/azurite-blob" ] &&
		[ "$(azurite_installed)" = "$(azurite_pinned)" ]
}

azurite_install() {
	if azurite_current; then
		return 0
	fi
	# Two runs sharing a work tree must not run npm ci in one directory at
	# once: the second waits, then finds the install done. The lock is named
	# after the tools directory, outside the work tree.
	local lock
	lock="${TMPDIR:-/tmp}/bucketlease-azurite-npm-ci-$(printf %s "$AZURITE_TOOLS_DIR" | cksum | cut -d' ' -f1).lock"
	(
		if ! flock -w 600 9; then
			echo "azurite: gave up waiting for $lock" >&2
			exit 1
		fi
		if azurite_current; then
			exit 0
		fi
		echo "installing azurite $(azurite_pinned) into $AZURITE_TOOLS_DIR/node_modules (npm ci)"
		if ! npm ci --prefix "$AZURITE_TOOLS_DIR" --no-audit --no-fund >"$EMULATOR_RUN/azurite-npm.log" 2>&1; then
			echo "azurite: npm ci failed; its log:" >&2
			tail -n 20 "$EMULATOR_RUN/azurite-npm.log" >&2 || true
			exit 1
		fi
		if ! azurite_current; then
			echo "azurite: npm ci installed version '$(azurite_installed)', want $(azurite_pinned)" >&2
			exit 1
		fi
	) 9>"$lock"
}

azurite_start() {
	: "${EMULATOR_RUN:?EMULATOR_RUN must name the run directory}"
	azurite_install || return 1
	local run="$EMULATOR_RUN/azurite"
	mkdir -p "$run"
	# From inside the run directory, so that nothing lands in the work tree.
	(cd "$run" && exec "$AZURITE_TOOLS_DIR/node_modules/.bin/azurite-blob" \
		--blobHost 127.0.0.1 --blobPort 0 \
		--inMemoryPersistence \
		--skipApiVersionCheck --disableProductStyleUrl --disableTelemetry \
		>"$run/server.log" 2>&1) &
	local pid=$!
	echo "$pid" >"$EMULATOR_RUN/azurite.pid"
	local i port=""
	for i in $(seq 1 300); do # up to 60 s
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		port=$(sed -n 's|.*successfully listens on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$run/server.log" | head -n 1)
		if [ -n "$port" ]; then
			break
		fi
		sleep 0.2
	done
	if [ -z "$port" ]; then
		kill "$pid" 2>/dev/null || true
		echo "azurite: the blob service did not start; its log:" >&2
		tail -n 20 "$run/server.log" >&2 || true
		return 1
	fi
	local account=devstoreaccount1
	# Azurite's published development key (see the Azurite README).
	local key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	export BUCKETLEASE_TEST_AZURITE_ENDPOINT="http://127.0.0.1:$port/$account"
	export BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$key;BlobEndpoint=$BUCKETLEASE_TEST_AZURITE_ENDPOINT;"
	echo "azurite $(azurite_installed) blob service on $BUCKETLEASE_TEST_AZURITE_ENDPOINT (pid $pid)"
}
