#!/usr/bin/env bash
# Builds deploy/Dockerfile into an image and runs it: the image starts, refuses an open listener
# without authentication, serves with a token, runs as UID 10001, and `argus collect` starts from it.
#
#   scripts/check-image.sh            build with Docker when an engine answers, else with buildah
#   SKIP_BUILD=1 scripts/check-image.sh   check the image the last run built
#
# Without a Docker engine the image is built and run daemonless with buildah (Debian's, installed
# here when missing), in storage of its own under $WORK, its containers run with chroot isolation (no
# OCI runtime: in an unprivileged build sandbox one cannot set the rlimits it asks for) on the host's
# network, as the image's user, with the image's entrypoint and command. When the base images
# (rust:1-trixie, debian:trixie-slim) cannot be pulled from a registry, stand-ins are made from the
# same Debian release with debootstrap: debian:trixie-slim from the minbase variant, rust:1-trixie
# from it plus the build packages of its buildpack-deps base, the Rust toolchain this machine builds
# with (the official image's rustup download is not reachable from every build machine) and the
# certificate authorities this machine trusts beyond Debian's. The Dockerfile itself is used as it is.
#
# Takes 10-20 minutes on two cores (a cold release build); the result is recorded in
# docs/performance.md ("Container image"). WORK (default /var/tmp/argus-image) keeps the stand-in base
# images and the build storage between runs; remove it to start over.
set -euo pipefail
cd "$(dirname "$0")/.."

WORK="${WORK:-/var/tmp/argus-image}"
IMAGE="localhost/argus:check"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
mkdir -p "$WORK"
log() { echo "[$(date +%H:%M:%S)] check-image: $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  ENGINE=(docker)
  BUILD=(docker build)
  IMAGE=argus:check
else
  need=()
  for tool in buildah debootstrap; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
  if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || fail "no Docker engine, and ${need[*]} missing (apt-get install ${need[*]})"
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
      || { apt-get update -qq >/dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
  fi
  # Storage of its own (vfs needs no overlay support); chroot isolation needs no OCI runtime.
  STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
  ENGINE=(buildah "${STORE[@]}")
  BUILD=(buildah "${STORE[@]}" bud --isolation chroot --pull=never --ignorefile deploy/Dockerfile.dockerignore)
fi

# A base image: pulled when a registry answers, else the stand-in `make_NAME` builds from ROOTFS.
base() {
  local ref="$1" maker="$2"
  if "${ENGINE[@]}" inspect --type image "$ref" >/dev/null 2>&1; then
    return
  fi
  if timeout 60 "${ENGINE[@]}" pull -q "$ref" >/dev/null 2>&1; then
    log "pulled $ref"
    return
  fi
  log "$ref cannot be pulled: making a stand-in from Debian $SUITE"
  "$maker" "$ref"
}

# Imports a root filesystem as an image with the given config (buildah from scratch).
import_rootfs() {
  local ref="$1" rootfs="$2"; shift 2
  local ctr mnt
  ctr=$(buildah "${STORE[@]}" from scratch)
  mnt=$(buildah "${STORE[@]}" mount "$ctr")
  cp -a "$rootfs"/. "$mnt"/
  buildah "${STORE[@]}" umount "$ctr" >/dev/null
  buildah "${STORE[@]}" config "$@" --cmd /bin/bash "$ctr"
  buildah "${STORE[@]}" commit -q "$ctr" "$ref" >/dev/null
  buildah "${STORE[@]}" rm "$ctr" >/dev/null
}

debootstrap_rootfs() {
  local dir="$1"; shift
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir"
    log "debootstrap $SUITE into $dir $*"
    debootstrap --variant=minbase "$@" "$SUITE" "$dir" "$MIRROR" >"$dir.log" 2>&1 \
      || { tail -20 "$dir.log" >&2; fail "debootstrap $dir"; }
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
    touch "$dir/.complete"
  fi
}

make_slim() {
  debootstrap_rootfs "$WORK/rootfs-slim"
  import_rootfs "$1" "$WORK/rootfs-slim" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
}

make_rust() {
  # buildpack-deps:trixie's compilers and tools that Rust crates' build scripts use.
  debootstrap_rootfs "$WORK/rootfs-rust" \
    --include=ca-certificates,curl,git,gcc,g++,libc6-dev,make,pkg-config,libssl-dev,xz-utils
  local sysroot toolchain
  sysroot=$(rustc --print sysroot)
  toolchain="$WORK/rootfs-rust/usr/local/rust"
  if [ ! -x "$toolchain/bin/cargo" ]; then
    log "copying the Rust toolchain $(rustc --version) into the stand-in"
    mkdir -p "$toolchain" "$WORK/rootfs-rust/usr/local/cargo/bin"
    cp -a "$sysroot/bin" "$sysroot/lib" "$toolchain/"
    for b in "$toolchain"/bin/*; do ln -sf "/usr/local/rust/bin/$(basename "$b")" "$WORK/rootfs-rust/usr/local/cargo/bin/"; done
  fi
  # The certificate authorities this machine adds to Debian's (a TLS-inspecting egress proxy's, say),
  # so that cargo reaches crates.io from the build as it does from here.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$WORK/rootfs-rust/usr/local/share/ca-certificates/"
    chroot "$WORK/rootfs-rust" update-ca-certificates >/dev/null
  fi
  import_rootfs "$1" "$WORK/rootfs-rust" --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
}

if [ "${ENGINE[0]}" != docker ]; then
  base docker.io/library/debian:trixie-slim make_slim
  base docker.io/library/rust:1-trixie make_rust
fi

if [ -n "${SKIP_BUILD:-}" ]; then
  log "SKIP_BUILD: checking the image built last time"
else
  log "building $IMAGE from deploy/Dockerfile"
  start=$(date +%s)
  "${BUILD[@]}" -f deploy/Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log" >&2; fail "build"; }
  log "built in $(( $(date +%s) - start )) s"
fi

# How the checks run a container of the image: run_image ARGS… (the image's command without ARGS),
# in the foreground; start_image MOUNT ARGS… in the background, stop_image to end it.
if [ "${ENGINE[0]}" = docker ]; then
  size="$(( $(docker image inspect "$IMAGE" --format '{{.Size}}') / 1048576 )) MiB"
  run_image() { docker run --rm --network host "$IMAGE" "$@"; }
  run_as() { docker run --rm --entrypoint "$1" "$IMAGE" "${@:2}"; }
  start_image() { docker run -d --name "argus-check-$$" --network host -v "$1" "$IMAGE" "${@:2}" >/dev/null; }
  stop_image() { docker rm -f "argus-check-$$" >/dev/null 2>&1 || true; }
else
  CTR=$("${ENGINE[@]}" from --pull=never "$IMAGE")
  trap '"${ENGINE[@]}" rm "$CTR" >/dev/null 2>&1 || true' EXIT
  config=$("${ENGINE[@]}" inspect --type container "$CTR")
  field() { python3 -c 'import json, sys; c = json.load(sys.stdin)["OCIv1"]["config"]; print("\n".join(c.get(sys.argv[1]) or []))' "$1" <<<"$config"; }
  mapfile -t ENTRY < <(field Entrypoint)
  mapfile -t CMD < <(field Cmd)
  size=$("${ENGINE[@]}" images --format '{{.Size}}' "$IMAGE")
  run_image() {
    [ $# -gt 0 ] || set -- "${CMD[@]}"
    "${ENGINE[@]}" run --isolation chroot "$CTR" -- "${ENTRY[@]}" "$@"
  }
  run_as() { "${ENGINE[@]}" run --isolation chroot "$CTR" -- "$@"; }
  start_image() {
    "${ENGINE[@]}" run --isolation chroot -v "$1" "$CTR" -- "${ENTRY[@]}" "${@:2}" >"$WORK/serve.log" 2>&1 &
    BG=$!
  }
  stop_image() { kill "$BG" 2>/dev/null || true; wait "$BG" 2>/dev/null || true; }
fi
log "image: $size, entrypoint ${ENTRY[*]:-(docker)}, command ${CMD[*]:-(docker)}"

# 1. The default command listens on 0.0.0.0 with no token configured: it must refuse, and say how.
out=$(run_image 2>&1) && fail "the default command started without authentication"
grep -q "refusing to listen on 0.0.0.0:9700 without authentication" <<<"$out" || fail "unexpected refusal: $out"
log "ok: the default command refuses an unauthenticated 0.0.0.0 listener"

# 2. With a token it serves: runs as 10001, writes and reads with the token, refuses without it.
uid=$(run_as id -u)
[ "$uid" = 10001 ] || fail "runs as UID $uid, not 10001"
entry=$(run_image token new --name check --scope read --scope write 2>/dev/null)
token=$(grep -o 'argus_[A-Za-z0-9_-]*' <<<"$entry" | head -1)
[ -n "$token" ] || fail "no token in: $entry"
conf="$WORK/serve.toml"
printf '[server]\nlisten = "127.0.0.1:19700"\n\n[auth]\n' >"$conf"
grep -A3 '^\[\[auth.tokens\]\]' <<<"$entry" >>"$conf"
start_image "$conf:/etc/argus/check.toml:ro" \
  serve --config /etc/argus/check.toml --listen 0.0.0.0:19700 --data-dir /var/lib/argus --no-collector
for _ in $(seq 60); do curl -fsS http://127.0.0.1:19700/-/ready >/dev/null 2>&1 && break; sleep 1; done
curl -fsS http://127.0.0.1:19700/-/ready >/dev/null || { stop_image; fail "not ready in 60 s"; }
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'check_metric,host=a value=1' http://127.0.0.1:19700/write)
[ "$code" = 401 ] || { stop_image; fail "a write without a token answered $code, not 401"; }
now=$(date +%s)
curl -fsS -H "Authorization: Bearer $token" --data-binary "check_metric,host=a value=42 ${now}000000000" \
  http://127.0.0.1:19700/write >/dev/null || { stop_image; fail "an authenticated write failed"; }
got=$(curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:19700/api/v1/query?query=check_metric_value&time=$now")
grep -q '"42"' <<<"$got" || { stop_image; fail "the written sample did not come back: $got"; }
stop_image
log "ok: serves with a token as UID 10001; a write without one is refused, with it written and read back"

# 3. The node collector starts from the same image.
run_image collect --help >/dev/null || fail "argus collect --help"
log "ok: all checks passed ($(run_image --version))"
