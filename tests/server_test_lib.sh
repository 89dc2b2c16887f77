# Shared by the shell tests that drive a real graphopt-server with the graphopt CLI: the
# binaries' paths, failure reporting with the server's log, expectation helpers, and starting
# and stopping the server on a free loopback port. Source it after `set -euo pipefail`; it
# installs an EXIT trap that kills a server still running (a failed test must not leave one).

readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
readonly SERVER="${RUNFILES}/server/graphopt-server"
readonly CLI="${RUNFILES}/client/graphopt"
readonly TMP="${TEST_TMPDIR:?}"
readonly PORT_FILE="${TMP}/port"
readonly SERVER_LOG="${TMP}/server.log"

server_pid=""
# Set by start_server: host:port of the running server.
ADDR=""

fail() {
  echo "FAIL: $*" >&2
  if [[ -f "${SERVER_LOG}" ]]; then
    echo "--- server log (last 40 lines) ---" >&2
    tail -40 "${SERVER_LOG}" >&2
  fi
  exit 1
}

_server_test_cleanup() {
  if [[ -n "${server_pid}" ]] && kill -0 "${server_pid}" 2>/dev/null; then
    kill -KILL "${server_pid}" 2>/dev/null || true
    wait "${server_pid}" 2>/dev/null || true
  fi
}
trap _server_test_cleanup EXIT

# run_expect CODE OUTFILE ERRFILE CMD...: runs CMD, requires exit status CODE.
run_expect() {
  local expected="$1" out="$2" err="$3"
  shift 3
  local rc=0
  "$@" >"${out}" 2>"${err}" || rc=$?
  if [[ "${rc}" -ne "${expected}" ]]; then
    echo "--- stdout ---" >&2; cat "${out}" >&2
    echo "--- stderr ---" >&2; cat "${err}" >&2
    fail "expected exit ${expected}, got ${rc}: $*"
  fi
}

expect_grep() {  # expect_grep PATTERN FILE [description]
  grep -Eq -- "$1" "$2" || { cat "$2" >&2; fail "${3:-'$1' not found in $2}"; }
}

expect_no_grep() {  # expect_no_grep PATTERN FILE [description]
  if grep -Eq -- "$1" "$2"; then cat "$2" >&2; fail "${3:-'$1' found in $2}"; fi
}

require_binaries() {
  local binary
  for binary in "${SERVER}" "${CLI}"; do
    [[ -x "${binary}" ]] || fail "missing binary ${binary}"
  done
}

# start_server [--wait FILE]... [SERVER FLAGS...]: starts graphopt-server (--insecure, a free
# loopback port) with the given flags, its output going to SERVER_LOG, and waits at most 30 s
# for its port file and every --wait FILE (a metrics port file, say) to be written. Sets
# server_pid and ADDR.
start_server() {
  local wait_files=("${PORT_FILE}")
  while [[ $# -gt 0 && "$1" == "--wait" ]]; do
    wait_files+=("$2")
    shift 2
  done
  rm -f "${wait_files[@]}"
  "${SERVER}" --insecure --listen 127.0.0.1:0 --port_file "${PORT_FILE}" "$@" \
    >"${SERVER_LOG}" 2>&1 &
  server_pid=$!
  local f ready
  for _ in $(seq 1 300); do
    ready=1
    for f in "${wait_files[@]}"; do [[ -s "${f}" ]] || ready=0; done
    [[ "${ready}" -eq 1 ]] && break
    kill -0 "${server_pid}" 2>/dev/null || fail "server exited during start-up"
    sleep 0.1
  done
  for f in "${wait_files[@]}"; do [[ -s "${f}" ]] || fail "no ${f} after 30 s"; done
  local port
  port="$(cat "${PORT_FILE}")"
  [[ "${port}" =~ ^[0-9]+$ && "${port}" -gt 0 ]] || fail "bad port file contents '${port}'"
  ADDR="127.0.0.1:${port}"
}

# stop_server: SIGTERM, and the server must exit 0.
stop_server() {
  kill -TERM "${server_pid}"
  wait "${server_pid}" || fail "the server did not exit 0 on SIGTERM"
  server_pid=""
}
