# Sourced by scripts/services/*.sh for a server they run in the background
# with a pid file. The caller defines PIDFILE, LOG, ENDPOINT, DAEMON (the
# server's name in messages), MARKER (a word of its command line) and the
# functions die and answering (the server answers on ENDPOINT).

# ours: the pid file names a live process of this server.
ours() {
	[[ -f $PIDFILE ]] || return 1
	local pid
	pid=$(<"$PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$MARKER"
}

# daemon_wait SECONDS: wait until the server just started answers; fail
# with the end of its log if it exits or does not answer in time.
daemon_wait() {
	local _
	for _ in $(seq 1 $(($1 * 4))); do
		if answering; then
			echo "$DAEMON ready on $ENDPOINT" >&2
			return 0
		fi
		ours || { tail -n 20 "$LOG" >&2; die "$DAEMON exited during start-up (log: $LOG)"; }
		sleep 0.25
	done
	tail -n 20 "$LOG" >&2
	daemon_stop
	die "$DAEMON did not answer on $ENDPOINT within $1 s (log: $LOG)"
}

# daemon_stop: stop the server of the pid file, if it lives (10 s, then
# SIGKILL). Safe to call when nothing runs.
daemon_stop() {
	if ! ours; then
		rm -f "$PIDFILE"
		return 0
	fi
	local pid _
	pid=$(<"$PIDFILE")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 40); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
	rm -f "$PIDFILE"
}
