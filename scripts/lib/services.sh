# Sourced by the scripts that need the local stand-ins (test.sh, chaos.sh,
# loadtest-storage.sh); not run on its own. Run from the repository root.
#
#   use_services NAME...   install the pinned npm packages, start each
#                          scripts/services/NAME.sh, export its variables,
#                          and stop every started service when the calling
#                          script exits (whatever the exit status)

_services_started=()

_services_stop() {
  local s
  for s in ${_services_started[@]+"${_services_started[@]}"}; do
    bash "scripts/services/$s.sh" stop >/dev/null 2>&1 || true
  done
}

use_services() {
  trap _services_stop EXIT
  bash scripts/npm-deps.sh >/dev/null
  local s
  for s in "$@"; do
    _services_started+=("$s")
    echo "== starting $s"
    bash "scripts/services/$s.sh" start
    eval "$(bash "scripts/services/$s.sh" env)"
  done
}
