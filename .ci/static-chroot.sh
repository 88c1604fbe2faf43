#!/usr/bin/env bash
# Proves what the Dockerfile promises, without a Docker engine: the provider, built exactly as the
# image builds it (static musl, rustls with compiled-in web PKI roots), runs in a root that holds
# nothing but the binary, its config and a credentials file (no libc, no loader, no /etc/ssl, no
# shell, no /dev, no /proc), with the bare environment GARM gives it, and completes a runner's
# lifecycle against the Edge Connect simulator on 127.0.0.1.
#
# The simulator runs outside the chroot; the chroot shares the network namespace, so the provider
# reaches it on 127.0.0.1. Needs root (chroot). One line per check, then "N passed, M failed";
# exits non-zero if any check failed. Runs from a clean clone: installs what it lacks.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
# Extra rustc flags for the static build (only set for the glibc fallback below).
static_rustflags=""
readonly PROVIDER=garm-provider-edge-connect
readonly SIM=edge-connect-sim
# A fixed controller id: the simulator is new for every run, so nothing can collide with it.
readonly CONTROLLER_ID=2f0b5a44-6c1e-4d3b-9a7e-5e8c1d2b3a4f
# Bound for one provider command. Against a local simulator each takes well under a second; the
# bound only keeps a hung provider from holding CI until its global limit.
readonly COMMAND_TIMEOUT_SECS=120

passed=0
failed=0
work=""
sim_pid=""

pass() {
  passed=$((passed + 1))
  printf 'PASS %s\n' "$1"
}

# fail CHECK DETAIL: the detail stays on the same line (newlines folded) so that each check is
# exactly one line of output.
fail() {
  failed=$((failed + 1))
  printf 'FAIL %s: %s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-600)"
}

stop_sim() {
  [ -n "${sim_pid}" ] || return 0
  kill -TERM "${sim_pid}" 2>/dev/null || true
  # The simulator stops on SIGTERM; SIGKILL after 5 s so cleanup never hangs on it.
  for _ in $(seq 50); do
    kill -0 "${sim_pid}" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "${sim_pid}" 2>/dev/null || true
  wait "${sim_pid}" 2>/dev/null || true
  sim_pid=""
}

on_exit() {
  local rc=$?
  stop_sim
  if [ "${rc}" -ne 0 ] && [ "${failed}" -eq 0 ]; then
    # set -e stopped the script outside a check: that must not read as success.
    fail "run completed" "stopped early with exit code ${rc} (see the messages above)"
  fi
  if [ -n "${work}" ]; then
    if [ "${failed}" -eq 0 ]; then
      rm -rf "${work}"
    else
      printf 'kept for inspection: %s (chroot in root/, simulator output in sim.*)\n' "${work}"
    fi
  fi
  printf '%d passed, %d failed\n' "${passed}" "${failed}"
  [ "${failed}" -eq 0 ] || exit 1
}
trap on_exit EXIT

# fatal CHECK DETAIL: a failed check that the remaining ones depend on.
fatal() {
  fail "$1" "$2"
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  fatal "running as root" "chroot needs root; run as root (CI does)"
fi

# --- tools -----------------------------------------------------------------------------------
need_apt=()
command -v jq >/dev/null 2>&1 || need_apt+=(jq)
command -v file >/dev/null 2>&1 || need_apt+=(file)
# musl-gcc compiles ring's C and assembly for the musl target, as in the Dockerfile.
command -v musl-gcc >/dev/null 2>&1 || need_apt+=(musl-tools)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "== installing: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi
if ! rustup target list --installed | grep -qx "${TARGET}"; then
  echo "== rustup target add ${TARGET}"
  if ! rustup target add "${TARGET}"; then
    # A machine that cannot download the musl standard library still proves the point with a
    # fully static glibc build: no libc, no CA store, no PATH in the chroot either way.
    echo "== musl target unavailable; building a static glibc binary (crt-static) instead"
    TARGET=x86_64-unknown-linux-gnu
    static_rustflags="-C target-feature=+crt-static"
  fi
fi
# Absolute paths: `env -i` below leaves the provider, and chroot itself, without PATH.
chroot_cmd="$(command -v chroot)"
timeout_cmd="$(command -v timeout)"

metadata="$(cargo metadata --format-version 1 --no-deps --locked)"
target_dir="$(jq -r '.target_directory' <<<"${metadata}")"
version="$(jq -r --arg name "${PROVIDER}" '.packages[] | select(.name == $name) | .version' <<<"${metadata}")"

# --- build -----------------------------------------------------------------------------------
# The provider exactly as the Dockerfile builds it: the production build, without the demo feature
# and so without the simulator. The simulator is its own workspace package and only the
# counterpart here, so the ordinary debug build (already warm from `cargo test`) does.
echo "== cargo build --release --locked --no-default-features --target ${TARGET} --bin ${PROVIDER}"
if ! CC_x86_64_unknown_linux_musl=musl-gcc RUSTFLAGS="${static_rustflags}" \
  cargo build --release --locked --no-default-features --target "${TARGET}" --bin "${PROVIDER}"; then
  fatal "provider builds for ${TARGET}" "cargo build failed (output above)"
fi
echo "== cargo build --locked -p ${SIM} --bin ${SIM}"
if ! cargo build --locked -p "${SIM}" --bin "${SIM}"; then
  fatal "simulator builds" "cargo build failed (output above)"
fi
provider_bin="${target_dir}/${TARGET}/release/${PROVIDER}"
sim_bin="${target_dir}/debug/${SIM}"

# --- static linking --------------------------------------------------------------------------
file_says="$(file -b "${provider_bin}")"
# ldd exits non-zero for some static binaries ("not a dynamic executable"): only its words count.
ldd_says="$(ldd "${provider_bin}" 2>&1 || true)"
linkage=""
if [[ "${file_says}" =~ (statically|static-pie)\ linked ]]; then
  linkage="${BASH_REMATCH[0]}"
fi
if [ -n "${linkage}" ] && [[ "${ldd_says}" =~ statically\ linked|not\ a\ dynamic\ executable ]]; then
  pass "provider is statically linked (file: ${linkage}; $(stat -c %s "${provider_bin}") bytes)"
else
  fatal "provider is statically linked" "file: ${file_says}; ldd: ${ldd_says}"
fi

# --- the empty root --------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/static-chroot.XXXXXX")"
root="${work}/root"
mkdir -m 0755 "${root}"
mkdir "${work}/sim"

# The simulator first: the provider config needs its URL. Its first stdout line is the URL.
"${sim_bin}" --listen 127.0.0.1:0 --state-dir "${work}/sim" \
  >"${work}/sim.stdout" 2>"${work}/sim.stderr" </dev/null &
sim_pid=$!
sim_url=""
for _ in $(seq 300); do
  sim_url="$(head -n 1 "${work}/sim.stdout")"
  [ -z "${sim_url}" ] || break
  kill -0 "${sim_pid}" 2>/dev/null || break
  sleep 0.1
done
if [[ "${sim_url}" =~ ^http://127\.0\.0\.1:[0-9]+$ ]]; then
  pass "simulator listens at ${sim_url}"
else
  fatal "simulator starts" "first stdout line '${sim_url}'; stderr: $(tail -n 5 "${work}/sim.stderr")"
fi

install -m 0755 "${provider_bin}" "${root}/${PROVIDER}"
# The provider refuses a credentials file that group or others can read.
install -m 0600 /dev/null "${root}/credentials.toml"
printf 'username = "garm"\npassword = "garm-password"\n' >"${root}/credentials.toml"
# Paths are inside the chroot. token_cache = false: the cache directory would be the only other
# file the provider writes, and the point here is that it needs nothing it was not given.
cat >"${root}/provider.toml" <<EOF
log_file = "/provider.log"
credentials_file = "/credentials.toml"
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
chmod 0644 "${root}/provider.toml"

contents="$(cd "${root}" && find . -mindepth 1 | LC_ALL=C sort | tr '\n' ' ')"
expected="./credentials.toml ./${PROVIDER} ./provider.toml "
if [ "${contents}" = "${expected}" ]; then
  pass "chroot holds only the provider, its config and its credentials (no libc, no /etc/ssl, no shell)"
else
  fatal "chroot holds only the provider, its config and its credentials" "found: ${contents}"
fi

# --- the bootstrap -----------------------------------------------------------------------------
# The project's GitHub JIT example is what GARM sends for a real pool. Without it (a checkout
# that predates it), a minimal document with the fields GARM always sets stands in.
bootstrap="examples/bootstrap-github-jit.json"
if [ ! -f "${bootstrap}" ]; then
  bootstrap="${work}/bootstrap.json"
  b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
  token="$(printf '{"alg":"HS256","typ":"JWT"}' | b64url).$(printf '{"name":"garm-st4t1cchr00t","forge_type":"github","exp":4102444800}' | b64url).$(printf 'not-verified' | b64url)"
  jq -n --arg token "${token}" '{
    name: "garm-st4t1cchr00t",
    image: "ghcr.io/example-org/garm-runner:2.330.0",
    "instance-token": $token,
    pool_id: "9dcf590a-1192-4a9c-b3e4-e0902974c2c0",
    flavor: "EU.small",
    arch: "amd64",
    os_type: "linux",
    jit_config_enabled: true,
    repo_url: "https://github.com/example-org",
    "callback-url": "https://garm.example.com/api/v1/callbacks",
    "metadata-url": "https://garm.example.com/api/v1/metadata"
  }' >"${bootstrap}"
fi
instance="$(jq -r '.name' "${bootstrap}")"
pool_id="$(jq -r '.pool_id' "${bootstrap}")"

# --- the provider in the chroot ----------------------------------------------------------------
# run_provider GARM_COMMAND STDIN [NAME=VALUE...]: execs the provider in the chroot the way GARM
# does: no arguments, and an environment of GARM's variables only (no PATH, no HOME). GARM v0.1.0
# sets GARM_INTERFACE_VERSION=v0.1.0 itself. Sets rc, out and err.
rc=0
out=""
err=""
run_provider() {
  local command="$1" stdin="$2"
  shift 2
  rc=0
  "${timeout_cmd}" "${COMMAND_TIMEOUT_SECS}" env -i \
    GARM_COMMAND="${command}" \
    GARM_INTERFACE_VERSION=v0.1.0 \
    GARM_CONTROLLER_ID="${CONTROLLER_ID}" \
    GARM_PROVIDER_CONFIG_FILE=/provider.toml \
    "$@" \
    "${chroot_cmd}" "${root}" "/${PROVIDER}" \
    <"${stdin}" >"${work}/stdout" 2>"${work}/stderr" || rc=$?
  out="$(cat "${work}/stdout")"
  err="$(cat "${work}/stderr")"
}

# what_happened: the detail of a failed provider check.
what_happened() {
  printf 'exit %s; stdout: %.300s; stderr: %.300s' "${rc}" "${out:-<empty>}" "${err:-<empty>}"
}

# json_is FILTER: stdout is one JSON document and FILTER holds for it.
json_is() {
  [ -n "${out}" ] && jq -e "$@" >/dev/null 2>&1 <<<"${out}"
}

# GetVersion is the crate version, with the git commit as semver build metadata when the binary
# was built from a checkout (v0.1.0+abc1234; build.rs), which CI's clone is.
run_provider GetVersion /dev/null
commit="$(git rev-parse --short=7 HEAD 2>/dev/null || true)"
version_ok=false
if [ "${out}" = "v${version}" ]; then
  version_ok=true
elif [ -n "${commit}" ] && [ "${out}" = "v${version}+${commit}" ]; then
  version_ok=true
fi
if [ "${rc}" -eq 0 ] && [ "${version_ok}" = true ]; then
  pass "GetVersion prints ${out}"
else
  fail "GetVersion prints v${version}[+${commit}]" "$(what_happened)"
fi

run_provider CreateInstance "${bootstrap}" GARM_POOL_ID="${pool_id}"
# shellcheck disable=SC2016 # $name is a jq variable, bound with --arg
if [ "${rc}" -eq 0 ] && json_is --arg name "${instance}" \
  'type == "object" and .name == $name and (.provider_id | type == "string" and length > 0) and .status == "running"'; then
  pass "CreateInstance ${instance} (from ${bootstrap}): running, provider_id $(jq -r '.provider_id' <<<"${out}")"
else
  fail "CreateInstance ${instance} (from ${bootstrap}) answers a running instance" "$(what_happened)"
fi

run_provider ListInstances /dev/null GARM_POOL_ID="${pool_id}"
# shellcheck disable=SC2016 # $name is a jq variable, bound with --arg
if [ "${rc}" -eq 0 ] && json_is --arg name "${instance}" 'type == "array" and any(.[]; .name == $name)'; then
  pass "ListInstances of pool ${pool_id} lists ${instance}"
else
  fail "ListInstances of pool ${pool_id} lists ${instance}" "$(what_happened)"
fi

run_provider DeleteInstance /dev/null GARM_INSTANCE_ID="${instance}"
# GARM ignores DeleteInstance's stdout; in GARM mode the provider prints one JSON document or
# nothing, and a delete has nothing to say.
if [ "${rc}" -eq 0 ] && { [ -z "${out}" ] || json_is .; }; then
  pass "DeleteInstance ${instance}"
else
  fail "DeleteInstance ${instance}" "$(what_happened)"
fi

run_provider ListInstances /dev/null GARM_POOL_ID="${pool_id}"
# shellcheck disable=SC2016 # $name is a jq variable, bound with --arg
if [ "${rc}" -eq 0 ] && json_is --arg name "${instance}" 'type == "array" and all(.[]; .name != $name)'; then
  pass "ListInstances after the delete no longer lists ${instance}"
else
  fail "ListInstances after the delete no longer lists ${instance}" "$(what_happened)"
fi

if [ -s "${root}/provider.log" ]; then
  pass "provider logged to /provider.log inside the chroot"
else
  fail "provider logged to /provider.log inside the chroot" "the file is missing or empty"
fi
