#!/usr/bin/env bash
# Makes a development certificate authority and the certificates of a graphopt cluster with
# openssl, for trying TLS/mTLS locally and for tests. Not for production: there, certificates
# come from the cluster's own CA (cert-manager, Vault, ...) with the same names.
#
# Usage: make_dev_certs.sh DIR [--client] [--days N]
#   DIR       folder for the files (created, mode 0700)
#   --client  also make a client certificate (graphopt-client), for clients that present one
#   --days N  validity of the certificates made now (default 825)
#
# Files in DIR (keys mode 0600, certificates 0644):
#   ca.pem, ca.key          the cluster CA (self-signed)
#   server.pem, server.key  SAN DNS:graphopt-server, DNS:localhost, IP:127.0.0.1
#   worker.pem, worker.key  SAN DNS:graphopt-worker, DNS:localhost, IP:127.0.0.1
#   etcd.pem, etcd.key      SAN DNS:graphopt-etcd, DNS:*.graphopt-etcd, DNS:localhost,
#                           IP:127.0.0.1 (etcd members behind their headless Service)
#   client.pem, client.key  SAN DNS:graphopt-client (with --client)
# The DNS name "graphopt-server" / "graphopt-worker" is the process's cluster identity (see
# server/tls.h). Every leaf certificate is good for both TLS server and client authentication,
# since servers and workers each act as both.
#
# Idempotent: files that exist are kept, so running it again makes only what is missing (new
# leaf certificates are signed by the CA already in DIR). Delete a pair to have it made again.
# Prints one line per file it made or kept.
set -euo pipefail

usage() {
  sed -n '6,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit "${1:-2}"
}

dir=""
client=0
days=825
while [[ $# -gt 0 ]]; do
  case "$1" in
    --client) client=1; shift ;;
    --days) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage; days="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "make_dev_certs: unknown option '$1'" >&2; usage ;;
    *) [[ -z "${dir}" ]] || usage; dir="$1"; shift ;;
  esac
done
[[ -n "${dir}" ]] || usage

command -v openssl >/dev/null || {
  echo "make_dev_certs: openssl not found (Debian: apt-get install openssl)" >&2
  exit 1
}

umask 077
mkdir -p "${dir}"
chmod 0700 "${dir}"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# Moves a finished file into DIR, so an interrupted run never leaves half a file behind.
install_file() {  # SRC DEST MODE
  chmod "$3" "$1"
  mv -f "$1" "$2"
}

# An EC P-256 key: fast to make, accepted by gRPC and by every TLS stack in use.
new_key() {  # OUT
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

if [[ -f "${dir}/ca.pem" && -f "${dir}/ca.key" ]]; then
  echo "kept ${dir}/ca.pem (CA)"
else
  if [[ -f "${dir}/ca.pem" || -f "${dir}/ca.key" ]]; then
    echo "make_dev_certs: ${dir} has only one of ca.pem and ca.key; remove it first" >&2
    exit 1
  fi
  # A new CA makes any leaf signed by another one useless: drop those.
  rm -f "${dir}"/{server,worker,etcd,client}.{pem,key}
  new_key "${tmp}/ca.key"
  openssl req -x509 -new -key "${tmp}/ca.key" -sha256 -days "${days}" \
    -subj "/O=graphopt development/CN=graphopt dev CA $(date -u +%Y%m%dT%H%M%S)-${RANDOM}" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "${tmp}/ca.pem" 2>/dev/null
  install_file "${tmp}/ca.key" "${dir}/ca.key" 0600
  install_file "${tmp}/ca.pem" "${dir}/ca.pem" 0644
  echo "made ${dir}/ca.pem, ${dir}/ca.key (CA)"
fi

# Signs a leaf certificate for NAME with the CA in DIR.
make_leaf() {  # FILE_STEM NAME SAN
  local stem="$1" name="$2" san="$3"
  if [[ -f "${dir}/${stem}.pem" && -f "${dir}/${stem}.key" ]]; then
    echo "kept ${dir}/${stem}.pem (${name})"
    return
  fi
  new_key "${tmp}/${stem}.key"
  openssl req -new -key "${tmp}/${stem}.key" -subj "/O=graphopt development/CN=${name}" \
    -out "${tmp}/${stem}.csr" 2>/dev/null
  cat >"${tmp}/${stem}.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=${san}
EOF
  openssl x509 -req -in "${tmp}/${stem}.csr" -CA "${dir}/ca.pem" -CAkey "${dir}/ca.key" \
    -CAcreateserial -CAserial "${tmp}/ca.srl" -sha256 -days "${days}" \
    -extfile "${tmp}/${stem}.ext" -out "${tmp}/${stem}.pem" 2>/dev/null
  install_file "${tmp}/${stem}.key" "${dir}/${stem}.key" 0600
  install_file "${tmp}/${stem}.pem" "${dir}/${stem}.pem" 0644
  echo "made ${dir}/${stem}.pem, ${dir}/${stem}.key (${name}; ${san})"
}

make_leaf server graphopt-server "DNS:graphopt-server,DNS:localhost,IP:127.0.0.1"
make_leaf worker graphopt-worker "DNS:graphopt-worker,DNS:localhost,IP:127.0.0.1"
make_leaf etcd graphopt-etcd "DNS:graphopt-etcd,DNS:*.graphopt-etcd,DNS:localhost,IP:127.0.0.1"
if ((client)); then
  make_leaf client graphopt-client "DNS:graphopt-client"
fi
