# shellcheck shell=bash
# Starting and stopping the emulators, shared by scripts/test and
# scripts/bench, which source this file from the repository root.
#
# Each scripts/emulators/NAME.sh defines NAME_start, which installs (or
# reuses from the cache) and starts one service on loopback in the
# background, records its pid in $EMULATOR_RUN/NAME.pid and exports the
# variables the tests read.
#
#   emulators_start [NAME...]  creates $EMULATOR_RUN, arranges for
#                              emulators_stop to run on exit, and starts the
#                              named emulators (all of them if none is named)
#   emulators_stop             stops everything started and removes
#                              $EMULATOR_RUN
#
# emulators_start sets the shell's EXIT trap; the caller sets no other.

emulators_stop() {
	[ -n "${EMULATOR_RUN:-}" ] && [ -d "$EMULATOR_RUN" ] || return 0
	for pidfile in "$EMULATOR_RUN"/*.pid; do
		[ -e "$pidfile" ] || continue
		kill "$(cat "$pidfile")" 2>/dev/null || true
	done
	sleep 0.5
	for pidfile in "$EMULATOR_RUN"/*.pid; do
		[ -e "$pidfile" ] || continue
		kill -9 "$(cat "$pidfile")" 2>/dev/null || true
	done
	rm -rf "$EMULATOR_RUN"
}

emulators_start() {
	export EMULATOR_RUN
	EMULATOR_RUN=$(mktemp -d "${TMPDIR:-/tmp}/bucketlease-emulators.XXXXXX")
	trap emulators_stop EXIT
	export BUCKETLEASE_TOOLS_CACHE="${BUCKETLEASE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bucketlease/tools}"
	mkdir -p "$BUCKETLEASE_TOOLS_CACHE"
	local names=("$@") script name
	if [ ${#names[@]} -eq 0 ]; then
		for script in scripts/emulators/*.sh; do
			[ -e "$script" ] || continue
			names+=("$(basename "$script" .sh)")
		done
	fi
	for name in "${names[@]}"; do
		script="scripts/emulators/$name.sh"
		if [ ! -e "$script" ]; then
			echo "no emulator script $script" >&2
			return 1
		fi
		echo "== emulator: $name"
		# shellcheck source=/dev/null
		source "$script"
		"${name}_start"
	done
}
