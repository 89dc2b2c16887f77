#!/usr/bin/env bash
# Builds the container images graphopt-server, graphopt-worker and graphopt-etcd offline, from
# Debian packages only: no registry is ever contacted. Each image is a debootstrap'd Debian
# root file system holding just the shared libraries its binaries load (found with ldd and
# dpkg -S on this machine, so they match what the binaries were linked against), committed
# with `buildah from scratch`. They run as uid/gid 65532 and carry OCI labels.
#
# Usage: deploy/build-images.sh [--tag TAG] [--bin-dir DIR] [--output-dir DIR]
#                               [--images "server worker etcd"] [--cache-dir DIR]
#   --bin-dir     a folder with server/graphopt-server, worker/graphopt-worker and
#                 client/graphopt (default: build them with Bazel and use .bazel/bin)
#   --output-dir  also write each image as an OCI archive, DIR/<image>.oci.tar
#   --tag         image tag (default: the version and the commit, e.g. 0.1.0-1a2b3c4)
#   --cache-dir   where the root file systems are cached as tarballs, keyed by their package
#                 list, suite and mirror (default: ~/.cache/graphopt-images): a warm cache
#                 skips debootstrap, the slow step
# Environment: GRAPHOPT_DEBIAN_MIRROR overrides the mirror (default: the one apt uses here),
# GRAPHOPT_LICENSE the licenses label, SOURCE_DATE_EPOCH the created label.
#
# Needs root (debootstrap), buildah and debootstrap (scripts/install_deps.sh installs them).
# Prints each image's name, id and size, and the time each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly REPO_ROOT="${PWD}"

readonly SUITE=bookworm
readonly VERSION=0.1.0  # the CLI's kVersion
# Bumped when the way a root file system is made changes, so cached tarballs are not reused.
readonly ROOTFS_RECIPE=3
readonly APP_UID=65532

tag=""
bin_dir=""
output_dir=""
images="server worker etcd"
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
cache_dir="${XDG_CACHE_HOME:-${home}/.cache}/graphopt-images"

usage() {
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

while (($#)); do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --output-dir) output_dir="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --cache-dir) cache_dir="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "build-images: unknown argument '$1'" >&2; usage ;;
  esac
done

log() { echo "build-images: $*"; }
die() { echo "build-images: error: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap creates device nodes and chroots)"
for tool in buildah debootstrap dpkg ldd tar sha256sum; do
  command -v "${tool}" >/dev/null || die "${tool} is missing (run scripts/install_deps.sh)"
done

# The Debian mirror apt uses on this machine (deb822 .sources or one-line .list files), so an
# offline machine with a local mirror works unchanged.
debian_mirror() {
  if [[ -n "${GRAPHOPT_DEBIAN_MIRROR:-}" ]]; then
    echo "${GRAPHOPT_DEBIAN_MIRROR}"
    return
  fi
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ {u=$2} /^Suites:/ && u != "" && $0 ~ / '"${SUITE}"'( |$)/ {print u; exit}')
  if [[ -z "${uri}" ]]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" && $0 ~ / '"${SUITE}"' / {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}')
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}
readonly MIRROR=$(debian_mirror)

step_start=$(date +%s.%N)
timing() {  # prints how long the step since the last call took
  local now
  now=$(date +%s.%N)
  log "$(awk -v a="${step_start}" -v b="${now}" -v s="$1" 'BEGIN {printf "%-44s %6.1f s", s, b - a}')"
  step_start=${now}
}

# --- The binaries ---------------------------------------------------------------------------
if [[ -z "${bin_dir}" ]]; then
  log "building the binaries with Bazel"
  bazel build --config=ci //server:graphopt-server //worker:graphopt-worker //client:graphopt
  bin_dir="${REPO_ROOT}/.bazel/bin"
  timing "bazel build"
fi
readonly SERVER_BIN="${bin_dir}/server/graphopt-server"
readonly WORKER_BIN="${bin_dir}/worker/graphopt-worker"
readonly CLI_BIN="${bin_dir}/client/graphopt"
for b in "${SERVER_BIN}" "${WORKER_BIN}" "${CLI_BIN}"; do
  [[ -x "${b}" ]] || die "${b} is missing or not executable"
done

# The Debian packages holding the shared libraries the given binaries load. dpkg knows a file
# by the path it shipped it under: with the merged /usr, ldd's /lib path may be /usr/lib there.
# One dpkg -S for all candidates (each call reads dpkg's whole file list).
runtime_packages() {
  local libs=() candidates=() lib real owners pkg
  mapfile -t libs < <(ldd "$@" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u)
  for lib in "${libs[@]}"; do
    real=$(readlink -f "${lib}")
    candidates+=("${lib}" "${real}" "/usr${lib}" "/usr${real}" "${lib#/usr}" "${real#/usr}")
  done
  owners=$(dpkg -S "${candidates[@]}" 2>/dev/null || true)
  for lib in "${libs[@]}"; do
    real=$(readlink -f "${lib}")
    pkg=""
    for candidate in "${lib}" "${real}" "/usr${lib}" "/usr${real}" "${lib#/usr}" "${real#/usr}"; do
      pkg=$(awk -v path="${candidate}" '$NF == path {sub(/:.*/, "", $1); print $1; exit}' \
        <<<"${owners}")
      [[ -n "${pkg}" ]] && break
    done
    [[ -n "${pkg}" ]] || die "no Debian package holds ${lib} (a library built by hand?)"
    echo "${pkg}"
  done | sort -u
}

# --- Root file systems, cached by package list ------------------------------------------------
mkdir -p "${cache_dir}"

# Makes (or takes from the cache) the root file system tarball for the packages in $@ and
# prints its path.
rootfs_tarball() {
  local packages key tarball work
  packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
  key=$(printf '%s\n' "${ROOTFS_RECIPE}" "${SUITE}" "${MIRROR}" "${packages}" | sha256sum |
    cut -c1-16)
  tarball="${cache_dir}/rootfs-${SUITE}-${key}.tar"
  if [[ -s "${tarball}" ]]; then
    log "root file system ${key} from the cache (${packages})" >&2
    echo "${tarball}"
    return
  fi
  work=$(mktemp -d /var/tmp/graphopt-rootfs.XXXXXX)
  log "debootstrap ${SUITE} from ${MIRROR} with ${packages}" >&2
  if ! debootstrap --variant=minbase --include="${packages}" "${SUITE}" "${work}/root" \
    "${MIRROR}" >"${work}/debootstrap.log" 2>&1; then
    tail -20 "${work}/debootstrap.log" >&2
    rm -rf "${work}"
    die "debootstrap failed"
  fi
  local root="${work}/root"
  # Nothing in the image installs packages: drop apt's lists and caches, the documentation
  # (except the copyright files) and the locales. dpkg's status file stays, so `dpkg -l` in
  # the image lists what it holds.
  rm -rf "${root}"/var/cache/apt/* "${root}"/var/lib/apt/lists/* "${root}"/var/cache/debconf/*-old \
    "${root}"/usr/share/man "${root}"/usr/share/info "${root}"/usr/share/locale \
    "${root}"/usr/share/lintian "${root}"/var/log/* "${root}"/usr/share/common-licenses
  find "${root}/usr/share/doc" -type f ! -name copyright -delete
  find "${root}/usr/share/doc" -type d -empty -delete
  echo "graphopt:x:${APP_UID}:${APP_UID}:graphopt:/home/graphopt:/usr/sbin/nologin" \
    >>"${root}/etc/passwd"
  echo "graphopt:x:${APP_UID}:" >>"${root}/etc/group"
  echo "graphopt:!:19000::::::" >>"${root}/etc/shadow"
  install -d -o "${APP_UID}" -g "${APP_UID}" -m 0750 "${root}/home/graphopt"
  install -d -o "${APP_UID}" -g "${APP_UID}" -m 0700 "${root}/var/lib/graphopt"
  tar --numeric-owner --xattrs -C "${root}" -cf "${work}/rootfs.tar" .
  mv "${work}/rootfs.tar" "${tarball}"  # atomic: a concurrent build never sees half a file
  rm -rf "${work}"
  echo "${tarball}"
}

# --- Images ------------------------------------------------------------------------------------
if [[ -z "${tag}" ]]; then
  revision=$(git -C "${REPO_ROOT}" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
  tag="${VERSION}-${revision}"
fi
readonly REVISION=$(git -C "${REPO_ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)
readonly SOURCE=$(git -C "${REPO_ROOT}" config --get remote.origin.url 2>/dev/null ||
  echo "https://github.com/graphopt/graphopt")
readonly CREATED=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
readonly LICENSES="${GRAPHOPT_LICENSE:-NOASSERTION}"

# build_image NAME DESCRIPTION ROOTFS_TAR ENTRYPOINT_JSON PORTS -- FILE...
# copies each FILE to /usr/local/bin and commits NAME:tag and NAME:latest.
build_image() {
  local name="$1" description="$2" rootfs="$3" entrypoint="$4" ports="$5"
  shift 6
  local ctr
  ctr=$(buildah from scratch)
  buildah add --quiet "${ctr}" "${rootfs}" / >/dev/null
  for f in "$@"; do
    buildah copy --quiet --chmod 0755 "${ctr}" "${f}" "/usr/local/bin/$(basename "${f}")" \
      >/dev/null
  done
  local port_args=()
  for p in ${ports}; do port_args+=(--port "${p}"); done
  buildah config \
    --user "${APP_UID}:${APP_UID}" \
    --workingdir /home/graphopt \
    --env HOME=/home/graphopt \
    --env PATH=/usr/local/bin:/usr/bin:/bin \
    --entrypoint "${entrypoint}" --cmd '' \
    "${port_args[@]}" \
    --label "org.opencontainers.image.title=${name}" \
    --label "org.opencontainers.image.description=${description}" \
    --label "org.opencontainers.image.version=${tag}" \
    --label "org.opencontainers.image.revision=${REVISION}" \
    --label "org.opencontainers.image.source=${SOURCE}" \
    --label "org.opencontainers.image.licenses=${LICENSES}" \
    --label "org.opencontainers.image.created=${CREATED}" \
    --label "org.opencontainers.image.base.name=debian:${SUITE} (debootstrap, ${MIRROR})" \
    "${ctr}"
  local previous
  previous=$(buildah images --noheading --format '{{.ID}}' "localhost/${name}:${tag}" 2>/dev/null |
    head -1 || true)
  buildah commit --quiet --rm "${ctr}" "localhost/${name}:${tag}" >/dev/null
  buildah tag "localhost/${name}:${tag}" "localhost/${name}:latest"
  # The image this build replaced, once no name is left on it (rebuilds would pile up).
  if [[ -n "${previous}" ]] && buildah images --noheading --filter dangling=true \
    --format '{{.ID}}' | grep -qx "${previous}"; then
    buildah rmi "${previous}" >/dev/null 2>&1 || true
  fi
  if [[ -n "${output_dir}" ]]; then
    mkdir -p "${output_dir}"
    rm -f "${output_dir}/${name}.oci.tar"
    buildah push --quiet "localhost/${name}:${tag}" "oci-archive:${output_dir}/${name}.oci.tar:${name}:${tag}"
  fi
  timing "image ${name}"
}

# Server and worker share one root file system: one debootstrap, one cached tarball, and the
# same base layer content in both images.
app_packages=$(runtime_packages "${SERVER_BIN}" "${WORKER_BIN}" "${CLI_BIN}")
timing "runtime libraries -> $(echo "${app_packages}" | wc -l) packages"

for image in ${images}; do
  case "${image}" in
    server)
      rootfs=$(rootfs_tarball ${app_packages})
      timing "root file system (server, worker)"
      # The CLI rides along so that `graphopt health` can check the server from inside (exec
      # probes: the kubelet's own gRPC probe speaks no TLS).
      build_image graphopt-server \
        "graphopt optimizer and coordinator (gRPC); health: graphopt health --server 127.0.0.1:50051" \
        "${rootfs}" '["/usr/local/bin/graphopt-server"]' "50051 9090" -- \
        "${SERVER_BIN}" "${CLI_BIN}"
      ;;
    worker)
      rootfs=$(rootfs_tarball ${app_packages})
      timing "root file system (server, worker)"
      # The CLI here too: the kubelet's gRPC probe speaks no TLS, `graphopt health` does.
      build_image graphopt-worker \
        "graphopt worker: executes plans (gRPC); health: graphopt health --server 127.0.0.1:50061" \
        "${rootfs}" '["/usr/local/bin/graphopt-worker"]' "50061 9090" -- \
        "${WORKER_BIN}" "${CLI_BIN}"
      ;;
    etcd)
      # Debian's etcd, the version the tests run against.
      rootfs=$(rootfs_tarball etcd-server)
      timing "root file system (etcd)"
      build_image graphopt-etcd "etcd (Debian's etcd-server) for graphopt's shared state" \
        "${rootfs}" '["/usr/bin/etcd"]' "2379 2380" --
      ;;
    *) die "unknown image '${image}' (server, worker, etcd)" ;;
  esac
done

log "images:"
for image in ${images}; do
  buildah images --noheading --format "{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}" \
    "localhost/graphopt-${image}:${tag}" | grep -F ":${tag} " | sed 's/^/build-images:   /'
done
if [[ -n "${output_dir}" ]]; then
  (cd "${output_dir}" && ls -l ./*.oci.tar | awk '{print "build-images:   " $NF " " $5 " bytes"}')
fi
