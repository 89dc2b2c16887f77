#!/usr/bin/env bash
# Makes the files the dev overlay's secretGenerator reads, in secrets/ beside this script: the
# development CA and certificates (scripts/make_dev_certs.sh) and a tokens file with one admin
# token, printed once. Development only: production Secrets come from the cluster's own CA
# (docs/operations.md, "Container images and Kubernetes"). Idempotent: keeps what exists.
#   make-secrets.sh [GRAPHOPT_CLI]   (default: graphopt on PATH, else the Bazel-built one)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "${here}/../../../.." && pwd)"
cli="${1:-$(command -v graphopt || echo "${repo}/.bazel/bin/client/graphopt")}"
"${repo}/scripts/make_dev_certs.sh" "${here}/secrets"
if [[ ! -s "${here}/secrets/tokens" ]]; then
  out=$("${cli}" token new --admin --label dev-admin 2>/dev/null)
  echo "${out}" | sed -n 's/^ *tokens file line: *//p' >"${here}/secrets/tokens"
  chmod 0600 "${here}/secrets/tokens"
  echo "make-secrets: admin token (shown once; keep it in GRAPHOPT_TOKEN):"
  echo "${out}" | sed -n 's/^ *token: *//p'
fi
