#!/usr/bin/env bash
# Builds the Dockerfile's `binary`, `installer` and `garm` targets with Debian's podman and runs
# each image as it is used (docs/packaging.md, "Images in CI"):
#   binary     `check` against the Edge Connect simulator on 127.0.0.1
#   installer  its copy into a volume, under the security settings of the Helm chart's init container
#              (user 65532, read-only root, no capabilities, no privilege escalation)
#   garm       the provider at GARM's path: GetVersion and a ListInstances against the simulator
#
# The base images cannot be pulled on this machine, so stand-ins are made here from Debian's
# packages and tagged with the names the Dockerfile uses (never pulled: --pull=never):
#   docker.io/library/rust:<RUST_VERSION>-bookworm  a bookworm rootfs (mmdebstrap) with gcc and
#       the toolchain installed by rustup-init as the official image installs it (RUSTUP_HOME
#       /usr/local/rustup, CARGO_HOME /usr/local/cargo, profile minimal); rustup-init is the
#       host's rustup binary under that name
#   docker.io/library/busybox:<BUSYBOX_VERSION>     Debian's busybox-static at /bin/busybox
#   ghcr.io/cloudbase/garm:<GARM_VERSION>           busybox, /opt/garm/providers.d/, the CA bundle and
#       GARM's entrypoint, laid out like GARM's image; /bin/garm is not GARM
# One line per check, then "N passed, M failed"; exits non-zero if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== images: build the Dockerfile's targets with podman and run them"
if [ "${IMAGES_STEP:-}" = skip ]; then
  # The release workflow (.forgejo/workflows/release.yml) builds the real images with buildx.
  echo "== images: skipped (IMAGES_STEP=skip)"
  exit 0
fi

arg() { sed -n "s/^ARG $1=//p" Dockerfile | head -n 1; }
RUST_VERSION="$(arg RUST_VERSION)"
GARM_VERSION="$(arg GARM_VERSION)"
BUSYBOX_VERSION="$(arg BUSYBOX_VERSION)"
readonly RUST_VERSION GARM_VERSION BUSYBOX_VERSION
readonly RUST_IMAGE="docker.io/library/rust:${RUST_VERSION}-bookworm"
readonly BUSYBOX_IMAGE="docker.io/library/busybox:${BUSYBOX_VERSION}"
readonly GARM_IMAGE="ghcr.io/cloudbase/garm:${GARM_VERSION}"
readonly TAG=ci
# A release tag as a release would name it (a pre-release of Cargo.toml's version, so that only
# the tag can be where it came from): the build takes it as GARM_PROVIDER_VERSION, and the garm
# image's GetVersion must print exactly it.
CARGO_VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
readonly RELEASE_TAG="v${CARGO_VERSION}-ci"
step_start=$(date +%s)
readonly PROVIDER_PATH=/opt/garm/providers.d/garm-provider-edge-connect
readonly CONTROLLER_ID=7c1f3e0a-2b4d-4e6f-8a9b-0c1d2e3f4a5b

passed=0
failed=0
work=""
sim_pid=""

pass() {
  passed=$((passed + 1))
  printf 'PASS %s\n' "$1"
}
fail() {
  failed=$((failed + 1))
  printf 'FAIL %s: %s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-800)"
}
finish() {
  if [ -n "${sim_pid}" ]; then
    kill -TERM "${sim_pid}" 2>/dev/null || true
    wait "${sim_pid}" 2>/dev/null || true
  fi
  [ -z "${work}" ] || rm -rf "${work}"
}
trap finish EXIT

need_apt=()
for tool in podman mmdebstrap runc; do
  command -v "${tool}" >/dev/null 2>&1 || need_apt+=("${tool}")
done
[ -x /bin/busybox ] || need_apt+=(busybox-static)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "== installing: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" uidmap
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/images.XXXXXX")"
# What this machine needs of podman (a container without systemd and without a cgroup v2
# delegation; crun is not installed): runc, cgroupfs, no default ulimits to raise.
cat >"${work}/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF="${work}/containers.conf"

# --- stand-ins for the base images ------------------------------------------------------------
if ! podman image exists "${RUST_IMAGE}"; then
  echo "== stand-in ${RUST_IMAGE} (mmdebstrap bookworm + rustup-init ${RUST_VERSION})"
  rustup_bin="$(command -v rustup)"
  # In the hooks, "$1" is mmdebstrap's chroot directory, expanded by mmdebstrap's shell.
  # shellcheck disable=SC2016
  mmdebstrap --quiet --variant=apt --include=ca-certificates,gcc,libc6-dev \
    --customize-hook="upload ${rustup_bin} /tmp/rustup-init" \
    --customize-hook='chmod 0755 "$1/tmp/rustup-init"' \
    --customize-hook="upload /etc/ssl/certs/ca-certificates.crt /tmp/host-ca.crt" \
    --customize-hook="chroot \"\$1\" env SSL_CERT_FILE=/tmp/host-ca.crt RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo /tmp/rustup-init -y -q --no-modify-path --profile minimal --default-toolchain ${RUST_VERSION}" \
    --customize-hook='rm -f "$1/tmp/rustup-init" "$1/tmp/host-ca.crt"; chmod -R a+w "$1/usr/local/rustup" "$1/usr/local/cargo"' \
    bookworm "${work}/rust.tar"
  podman import --quiet \
    --change 'ENV RUSTUP_HOME=/usr/local/rustup' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV RUST_VERSION=${RUST_VERSION}" \
    "${work}/rust.tar" "${RUST_IMAGE}" >/dev/null
  rm -f "${work}/rust.tar"
fi

busybox_root() {
  local root="$1"
  mkdir -p "${root}/bin" "${root}/tmp" "${root}/etc"
  chmod 1777 "${root}/tmp"
  install -m 0755 /bin/busybox "${root}/bin/busybox"
  for applet in sh cp ls cat mkdir rm chmod env; do
    ln -s busybox "${root}/bin/${applet}"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"${root}/etc/passwd"
}

if ! podman image exists "${BUSYBOX_IMAGE}"; then
  echo "== stand-in ${BUSYBOX_IMAGE} (Debian's busybox-static)"
  busybox_root "${work}/busybox"
  tar -C "${work}/busybox" -cf "${work}/busybox.tar" .
  podman import --quiet --change 'CMD ["sh"]' "${work}/busybox.tar" "${BUSYBOX_IMAGE}" >/dev/null
fi

if ! podman image exists "${GARM_IMAGE}"; then
  echo "== stand-in ${GARM_IMAGE} (busybox laid out like GARM's image)"
  root="${work}/garm"
  busybox_root "${root}"
  mkdir -p "${root}/opt/garm/providers.d" "${root}/etc/ssl/certs" "${root}/etc/garm"
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "${root}/etc/ssl/certs/ca-certificates.crt"
  # Not GARM: says so and fails, so that nothing mistakes the stand-in for the real server.
  printf '#!/bin/sh\necho "stand-in for GARM (.ci/images.sh): not GARM" >&2\nexit 1\n' >"${root}/bin/garm"
  chmod 0755 "${root}/bin/garm"
  ln -s garm "${root}/bin/garm-cli"
  tar -C "${root}" -cf "${work}/garm.tar" .
  podman import --quiet --change 'ENTRYPOINT ["/bin/garm", "-config", "/etc/garm/config.toml"]' \
    "${work}/garm.tar" "${GARM_IMAGE}" >/dev/null
fi

# --- the three targets -----------------------------------------------------------------------
# --format docker: the OCI format has no SHELL, which the builder stage sets. The host's CA
# bundle is mounted for the build's downloads (rustup, crates.io): this machine reaches them
# only through a TLS proxy whose CA is in that bundle, not in Debian's.
build() {
  local target="$1" start end
  start=$(date +%s)
  if podman build --quiet --pull=never --format docker --target "${target}" \
    --build-arg GARM_PROVIDER_VERSION="${RELEASE_TAG}" \
    --volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    -t "garm-provider-edge-connect-${target}:${TAG}" . >"${work}/build-${target}.log" 2>&1; then
    end=$(date +%s)
    pass "podman build --target ${target} ($((end - start)) s)"
  else
    fail "podman build --target ${target}" "$(tail -n 15 "${work}/build-${target}.log")"
    return 1
  fi
}
built_binary=false
built_installer=false
built_garm=false
build binary && built_binary=true
build installer && built_installer=true
build garm && built_garm=true

# --- the simulator and a provider config for it ------------------------------------------------
cargo build --locked --quiet --bin edge-connect-sim
mkdir -m 0755 "${work}/sim" "${work}/etc"
target/debug/edge-connect-sim --listen 127.0.0.1:0 --state-dir "${work}/sim" \
  >"${work}/sim.stdout" 2>"${work}/sim.stderr" </dev/null &
sim_pid=$!
sim_url=""
for _ in $(seq 300); do
  sim_url="$(head -n 1 "${work}/sim.stdout")"
  [ -z "${sim_url}" ] || break
  kill -0 "${sim_pid}" 2>/dev/null || break
  sleep 0.1
done
if [[ ! "${sim_url}" =~ ^http://127\.0\.0\.1:[0-9]+$ ]]; then
  fail "simulator starts" "first stdout line '${sim_url}'; stderr: $(tail -n 5 "${work}/sim.stderr")"
  printf '%d passed, %d failed\n' "${passed}" "${failed}"
  exit 1
fi
install -m 0600 /dev/null "${work}/etc/credentials.toml"
printf 'username = "garm"\npassword = "garm-password"\n' >"${work}/etc/credentials.toml"
cat >"${work}/etc/provider.toml" <<EOF
credentials_file = "/etc/garm-creds/credentials.toml"
token_cache = false

[edge_connect]
organization = "edp-developer-framework"
region = "EU"
url = "${sim_url}"
default_flavor = "EU.small"

[edge_connect.zone]
organization = "TelekomOP"
name = "Munich"
EOF
chmod 0644 "${work}/etc/provider.toml"
mounts=(--volume "${work}/etc/provider.toml:/etc/garm/edge-connect-provider-config.toml:ro"
  --volume "${work}/etc/credentials.toml:/etc/garm-creds/credentials.toml:ro")
run() { podman run --rm --pull=never --network host "$@"; }

# --- binary: `check` against the simulator ---------------------------------------------------
if ${built_binary}; then
  if out="$(run "${mounts[@]}" "garm-provider-edge-connect-binary:${TAG}" \
    --config /etc/garm/edge-connect-provider-config.toml check 2>&1)"; then
    pass "binary image: check against the simulator ($(printf '%s\n' "${out}" | grep -c '✓') steps passed)"
  else
    fail "binary image: check against the simulator" "${out}"
  fi
fi

# --- installer: the copy, as the Helm chart's init container runs it --------------------
if ${built_installer}; then
  # An emptyDir is a directory every user may write.
  mkdir -m 0777 "${work}/providers"
  if out="$(run --user 65532:65532 --read-only --cap-drop ALL --security-opt no-new-privileges \
    --volume "${work}/providers:/providers" "garm-provider-edge-connect-installer:${TAG}" \
    /providers/garm-provider-edge-connect 2>&1)" \
    && version="$("${work}/providers/garm-provider-edge-connect" version 2>&1)"; then
    pass "installer image: copies the provider as user 65532 with a read-only root (${version})"
  else
    fail "installer image: copies the provider under the Kubernetes security settings" "${out:-} ${version:-}"
  fi
fi

# --- garm: the provider at GARM's path, started as GARM starts it ------------------------------
if ${built_garm}; then
  if out="$(run --entrypoint "${PROVIDER_PATH}" --env GARM_COMMAND=GetVersion \
    "garm-provider-edge-connect-garm:${TAG}" 2>&1)" && [ "${out}" = "${RELEASE_TAG}" ]; then
    pass "garm image: GetVersion at ${PROVIDER_PATH} prints the release tag ${out}"
  else
    fail "garm image: GetVersion at ${PROVIDER_PATH}" "${out}"
  fi
  if out="$(run "${mounts[@]}" --entrypoint "${PROVIDER_PATH}" \
    --env GARM_COMMAND=ListInstances --env GARM_CONTROLLER_ID="${CONTROLLER_ID}" \
    --env GARM_POOL_ID=9dcf590a-1192-4a9c-b3e4-e0902974c2c0 \
    --env GARM_PROVIDER_CONFIG_FILE=/etc/garm/edge-connect-provider-config.toml \
    --env GARM_INTERFACE_VERSION=v0.1.0 \
    "garm-provider-edge-connect-garm:${TAG}" </dev/null 2>&1)" && [ "${out}" = "[]" ]; then
    pass "garm image: ListInstances against the simulator answers []"
  else
    fail "garm image: ListInstances against the simulator" "${out}"
  fi
  if out="$(run --entrypoint /bin/cat "garm-provider-edge-connect-garm:${TAG}" \
    /etc/garm/edge-connect-provider-config.toml 2>&1)" \
    && [ "${out}" = "$(cat config/provider.example.toml)" ]; then
    pass "garm image: the example provider config at the snippet's config_file"
  else
    fail "garm image: the example provider config at the snippet's config_file" "$(printf '%s' "${out}" | head -n 3)"
  fi
fi

echo "== images: $(($(date +%s) - step_start)) s"
printf '%d passed, %d failed\n' "${passed}" "${failed}"
[ "${failed}" -eq 0 ]
