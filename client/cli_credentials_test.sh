#!/bin/bash
# The graphopt CLI's credentials end to end: `graphopt token new` makes tokens whose lines go
# into a tokens file; server/auth_echo_server (the security graphopt-server sets up from the
# same flags, services that answer with who the caller is) then sees the token given by --token
# or GRAPHOPT_TOKEN, the --tenant, and TLS with --tls-ca, through `passes`, `workers` and
# `run --server`. Errors arrive as "error: CODE: message" and never repeat a token.
set -euo pipefail

readonly GRAPHOPT="client/graphopt"
readonly ECHO_SERVER="server/auth_echo_server"
readonly TMP="${TEST_TMPDIR:-$(mktemp -d)}"
unset GRAPHOPT_TOKEN

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_ok NAME PATTERN COMMAND...: the command succeeds and its stdout has PATTERN.
expect_ok() {
  local name="$1" pattern="$2"
  shift 2
  local out
  if ! out="$("$@" 2>"${TMP}/stderr")"; then
    fail "${name}: exited non-zero: $(cat "${TMP}/stderr")"
  elif ! grep -qF -- "${pattern}" <<<"${out}"; then
    fail "${name}: stdout lacks '${pattern}': ${out}"
  else
    echo "ok: ${name}"
  fi
}

# expect_error NAME PATTERN COMMAND...: the command exits 1 and its stderr has PATTERN.
expect_error() {
  local name="$1" pattern="$2"
  shift 2
  local rc=0
  "$@" >"${TMP}/stdout" 2>"${TMP}/stderr" || rc=$?
  if [[ ${rc} -ne 1 ]]; then
    fail "${name}: exit status ${rc}, expected 1: $(cat "${TMP}/stderr")"
  elif ! grep -qF -- "${pattern}" "${TMP}/stderr"; then
    fail "${name}: stderr lacks '${pattern}': $(cat "${TMP}/stderr")"
  else
    echo "ok: ${name}"
  fi
}

# start_server PORT_VAR ARGS...: starts the echo server and waits for its port file.
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "${pid}" 2>/dev/null || true; done
}
trap cleanup EXIT
start_server() {
  local var="$1"
  shift
  local port_file="${TMP}/port.$RANDOM"
  "${ECHO_SERVER}" --port_file="${port_file}" "$@" 2>"${TMP}/server.log.$RANDOM" &
  pids+=($!)
  for _ in $(seq 100); do
    [[ -s "${port_file}" ]] && break
    sleep 0.1
  done
  [[ -s "${port_file}" ]] || { echo "the echo server did not start" >&2; exit 1; }
  printf -v "${var}" '%s' "$(cat "${port_file}")"
}

# --- token new -------------------------------------------------------------------------------
"${GRAPHOPT}" token new --tenant acme --label "ci bot" >"${TMP}/acme.out" 2>/dev/null
"${GRAPHOPT}" token new --admin --label ops >"${TMP}/admin.out" 2>/dev/null
ACME="$(sed -n 's/^token: //p' "${TMP}/acme.out")"
ADMIN="$(sed -n 's/^token: //p' "${TMP}/admin.out")"
[[ "${ACME}" =~ ^gopt_[A-Za-z0-9_-]{43}$ ]] || fail "token new printed '${ACME}'"
sed -n 's/^tokens file line: //p' "${TMP}/acme.out" "${TMP}/admin.out" >"${TMP}/tokens"
grep -q "^tenant acme [0-9a-f]\{64\} ci bot$" "${TMP}/tokens" || fail "tokens file: $(cat "${TMP}/tokens")"
grep -q "^admin - [0-9a-f]\{64\} ops$" "${TMP}/tokens" || fail "tokens file: $(cat "${TMP}/tokens")"
grep -qF "${ACME#gopt_}" "${TMP}/tokens" && fail "the tokens file holds a token in the clear"
rc=0
"${GRAPHOPT}" token new >/dev/null 2>&1 || rc=$?
[[ ${rc} -eq 2 ]] || fail "token new without --tenant or --admin: exit ${rc}, expected 2"

# --- plaintext server with tokens ------------------------------------------------------------
start_server PORT --insecure --tokens_file="${TMP}/tokens"
SERVER="127.0.0.1:${PORT}"
expect_ok "--token" "tenant acme (token 'ci bot')" \
  "${GRAPHOPT}" passes --server="${SERVER}" --token="${ACME}"
expect_ok "GRAPHOPT_TOKEN" "tenant acme (token 'ci bot')" \
  env GRAPHOPT_TOKEN="${ACME}" "${GRAPHOPT}" passes --server="${SERVER}"
expect_ok "--token wins over GRAPHOPT_TOKEN" "admin (token 'ops') for tenant default" \
  env GRAPHOPT_TOKEN="${ACME}" "${GRAPHOPT}" passes --server="${SERVER}" --token="${ADMIN}"
expect_ok "admin --tenant" "admin (token 'ops') for tenant globex" \
  "${GRAPHOPT}" passes --server="${SERVER}" --token="${ADMIN}" --tenant=globex
expect_error "no token" "error: UNAUTHENTICATED: " "${GRAPHOPT}" passes --server="${SERVER}"
expect_error "no token says how" "GRAPHOPT_TOKEN" "${GRAPHOPT}" passes --server="${SERVER}"
expect_error "other tenant" "error: PERMISSION_DENIED: " \
  "${GRAPHOPT}" passes --server="${SERVER}" --token="${ACME}" --tenant=globex
expect_error "ill-formed token" "is not a graphopt token" \
  "${GRAPHOPT}" passes --server="${SERVER}" --token=not-a-token-secret
grep -q "not-a-token-secret" "${TMP}/stderr" && fail "the ill-formed token was echoed"
expect_ok "workers as admin" "admin" "${GRAPHOPT}" workers --server="${SERVER}" --token="${ADMIN}"
expect_error "workers as tenant" "ListWorkers needs an admin token" \
  env GRAPHOPT_TOKEN="${ACME}" "${GRAPHOPT}" workers --server="${SERVER}"
expect_error "unknown token" "error: UNAUTHENTICATED: " \
  "${GRAPHOPT}" passes --server="${SERVER}" \
  --token="$("${GRAPHOPT}" token new --tenant acme 2>/dev/null | sed -n 's/^token: //p')"

cat >"${TMP}/model.pbtxt" <<'EOF'
inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
nodes { name: "relu" op_type: "Relu" inputs: "x" outputs: "y" }
outputs { name: "y" }
EOF
expect_error "run --server carries the token" "authenticated as tenant acme (token 'ci bot')" \
  env GRAPHOPT_TOKEN="${ACME}" "${GRAPHOPT}" run "${TMP}/model.pbtxt" --server="${SERVER}"

# --- TLS -------------------------------------------------------------------------------------
if command -v openssl >/dev/null; then
  bash scripts/make_dev_certs.sh "${TMP}/certs" >/dev/null
  start_server TLS_PORT --tls_cert="${TMP}/certs/server.pem" --tls_key="${TMP}/certs/server.key" \
    --tls_ca="${TMP}/certs/ca.pem" --tokens_file="${TMP}/tokens"
  expect_ok "--tls-ca" "tenant acme (token 'ci bot')" \
    "${GRAPHOPT}" passes --server="127.0.0.1:${TLS_PORT}" --tls-ca="${TMP}/certs/ca.pem" \
    --token="${ACME}"
  expect_ok "--tls-ca by name with a client certificate" "tenant acme" \
    "${GRAPHOPT}" passes --server="localhost:${TLS_PORT}" --tls-ca="${TMP}/certs/ca.pem" \
    --tls-cert="${TMP}/certs/worker.pem" --tls-key="${TMP}/certs/worker.key" --token="${ACME}"
  expect_error "plaintext to TLS" "error: UNAVAILABLE: " \
    "${GRAPHOPT}" passes --server="127.0.0.1:${TLS_PORT}" --token="${ACME}" --timeout=5
  expect_error "--tls-cert without --tls-key" "--tls-cert and --tls-key go together" \
    "${GRAPHOPT}" passes --server="127.0.0.1:${TLS_PORT}" --tls-ca="${TMP}/certs/ca.pem" \
    --tls-cert="${TMP}/certs/worker.pem"
else
  echo "SKIPPED: the TLS cases (openssl is not installed)"
fi

if [[ ${failures} -gt 0 ]]; then
  echo "${failures} checks failed" >&2
  exit 1
fi
echo "all checks passed"
