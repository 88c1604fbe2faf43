#!/usr/bin/env bash
# Builds the example runner image (examples/runner-image, target `forgejo`) with podman, with a
# stand-in forgejo-runner where the real one cannot be downloaded (docs/packaging.md, "The
# runner image in CI"):
#   - the Dockerfile's own download URL (code.forgejo.org) is answered by a local HTTPS server on
#     127.0.0.1 (--add-host), whose certificate a throw-away CA signs; only the stand-in Debian
#     image trusts that CA;
#   - with the pinned sha256 the stand-in binary must be refused (the build fails in
#     fetch-verified): the pin is what ties the image to the real release file;
#   - with the stand-in's own sha256 the image builds, and runs as the Kubernetes example runs it
#     (uid 1001, read-only root): the runner at /usr/local/bin/forgejo-runner, the entrypoint at
#     its path, both executable.
# docker.io/library/debian:<release>-slim is a stand-in made with mmdebstrap (minbase, with
# ca-certificates and the CA above). One line per check, then "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== runner image: examples/runner-image with a stand-in forgejo-runner"
if [ "${IMAGES_STEP:-}" = skip ]; then
  echo "== runner image: skipped (IMAGES_STEP=skip)"
  exit 0
fi

readonly DOCKERFILE=examples/runner-image/Dockerfile
arg() { sed -n "s/^ARG $1=//p" "${DOCKERFILE}" | head -n 1; }
DEBIAN_IMAGE="$(arg DEBIAN_IMAGE)"
FORGEJO_RUNNER_VERSION="$(arg FORGEJO_RUNNER_VERSION)"
readonly DEBIAN_IMAGE FORGEJO_RUNNER_VERSION
release="${DEBIAN_IMAGE##*:}"
release="${release%-slim}"
readonly RELEASE_PATH="/forgejo/runner/releases/download/v${FORGEJO_RUNNER_VERSION}/forgejo-runner-${FORGEJO_RUNNER_VERSION}-linux-amd64"

passed=0
failed=0
work=""
server_pid=""
pass() {
  passed=$((passed + 1))
  printf 'PASS %s\n' "$1"
}
fail() {
  failed=$((failed + 1))
  printf 'FAIL %s: %s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-800)"
}
finish() {
  [ -z "${server_pid}" ] || kill "${server_pid}" 2>/dev/null || true
  [ -z "${work}" ] || rm -rf "${work}"
}
trap finish EXIT
step_start=$(date +%s)

for tool in podman mmdebstrap openssl python3; do
  command -v "${tool}" >/dev/null 2>&1 || { echo "runner image: ${tool} is missing (.ci/images.sh installs podman and mmdebstrap)" >&2; exit 1; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/runner-image.XXXXXX")"
printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n' >"${work}/containers.conf"
export CONTAINERS_CONF="${work}/containers.conf"

# --- a CA only the stand-in Debian trusts, and a certificate for code.forgejo.org --------------
# The CA is kept with the stand-in image (its label names the files' directory), so that a later
# run serves with a certificate the kept image trusts.
ca_dir="target/ci-tools/runner-image-ca"
if [ ! -s "${ca_dir}/ca.pem" ] || ! podman image exists "${DEBIAN_IMAGE}"; then
  rm -rf "${ca_dir}"
  mkdir -p "${ca_dir}"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=runner-image stand-in CA" \
    -keyout "${ca_dir}/ca.key" -out "${ca_dir}/ca.pem" 2>/dev/null
  podman rmi -f "${DEBIAN_IMAGE}" >/dev/null 2>&1 || true
  echo "== stand-in ${DEBIAN_IMAGE} (mmdebstrap ${release} minbase)"
  # In the hook, "$1" is mmdebstrap's chroot directory, expanded by mmdebstrap's shell.
  # shellcheck disable=SC2016
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --customize-hook="upload ${ca_dir}/ca.pem /usr/local/share/ca-certificates/runner-image-stand-in.crt" \
    --customize-hook='chroot "$1" update-ca-certificates >/dev/null' \
    "${release}" "${work}/debian.tar"
  podman import --quiet --change 'CMD ["bash"]' "${work}/debian.tar" "${DEBIAN_IMAGE}" >/dev/null
  rm -f "${work}/debian.tar"
fi
openssl req -newkey rsa:2048 -nodes -subj "/CN=code.forgejo.org" -addext "subjectAltName=DNS:code.forgejo.org" \
  -keyout "${work}/server.key" -out "${work}/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:code.forgejo.org\n' >"${work}/ext"
openssl x509 -req -in "${work}/server.csr" -CA "${ca_dir}/ca.pem" -CAkey "${ca_dir}/ca.key" \
  -CAcreateserial -days 1 -extfile "${work}/ext" -out "${work}/server.pem" 2>/dev/null

# --- the stand-in runner, served at the release URL's path --------------------------------------
mkdir -p "${work}/www$(dirname "${RELEASE_PATH}")"
printf '#!/bin/sh\necho "forgejo-runner version v%s (stand-in, .ci/runner-image.sh)"\n' \
  "${FORGEJO_RUNNER_VERSION}" >"${work}/www${RELEASE_PATH}"
stand_in_sum="$(sha256sum "${work}/www${RELEASE_PATH}" | cut -d' ' -f1)"
python3 - "${work}" <<'EOF' >"${work}/server.log" 2>&1 &
import http.server, ssl, sys, functools
work = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=work + "/www")
server = http.server.HTTPServer(("127.0.0.1", 443), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(work + "/server.pem", work + "/server.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
EOF
server_pid=$!
for _ in $(seq 50); do
  curl -fsS --cacert "${ca_dir}/ca.pem" --resolve code.forgejo.org:443:127.0.0.1 \
    -o /dev/null "https://code.forgejo.org${RELEASE_PATH}" 2>/dev/null && break
  sleep 0.1
done

build() {
  podman build --pull=never --format docker --network host --add-host code.forgejo.org:127.0.0.1 \
    --platform linux/amd64 --target forgejo "$@" examples/runner-image
}

# --- the pinned checksum refuses the stand-in ------------------------------------------------
if out="$(build -t garm-runner-forgejo:refused 2>&1)"; then
  fail "the pinned sha256 refuses a forgejo-runner that is not the release's" "the build succeeded"
elif grep -q "FAILED" <<<"${out}" && grep -q "fetch-verified" <<<"${out}"; then
  pass "the pinned sha256 refuses a forgejo-runner that is not the release's (fetch-verified: FAILED)"
else
  fail "the pinned sha256 refuses a forgejo-runner that is not the release's" "failed otherwise: $(tail -n 8 <<<"${out}")"
fi

# --- with the stand-in's own sha256 the image builds and holds what it should ----------------
if out="$(build --build-arg FORGEJO_RUNNER_SHA256_AMD64="${stand_in_sum}" -t garm-runner-forgejo:ci 2>&1)"; then
  pass "podman build --target forgejo with the stand-in's sha256"
  if out="$(podman run --rm --pull=never --user 1001:1001 --read-only --cap-drop ALL \
    --entrypoint /usr/local/bin/forgejo-runner garm-runner-forgejo:ci 2>&1)" \
    && [ "${out}" = "forgejo-runner version v${FORGEJO_RUNNER_VERSION} (stand-in, .ci/runner-image.sh)" ]; then
    pass "runner image: the verified runner at /usr/local/bin/forgejo-runner runs as uid 1001 on a read-only root"
  else
    fail "runner image: the runner at /usr/local/bin/forgejo-runner" "${out}"
  fi
  if out="$(podman run --rm --pull=never --entrypoint /bin/sh garm-runner-forgejo:ci -c \
    'id -u; test -x /usr/local/bin/garm-runner-entrypoint && echo entrypoint' 2>&1)" \
    && [ "${out}" = "$(printf '1001\nentrypoint')" ]; then
    pass "runner image: user 1001, the entrypoint executable at /usr/local/bin/garm-runner-entrypoint"
  else
    fail "runner image: user and entrypoint" "${out}"
  fi
  # The Docker pools' tools (docs/runner-contract.md, "What the example image does with Docker"):
  # the runner user in group docker with GID 123 (the dind sidecar's socket group), the Docker CLI
  # and its buildx plugin answering as that user.
  if out="$(podman run --rm --pull=never --read-only --entrypoint /bin/sh garm-runner-forgejo:ci -c \
    'id -G | tr " " "\n" | grep -qx 123 && echo gid123; docker --version >/dev/null && echo cli; docker buildx version >/dev/null && echo buildx' 2>&1)" \
    && [ "${out}" = "$(printf 'gid123\ncli\nbuildx')" ]; then
    pass "runner image: user 1001 in GID 123, the Docker CLI and buildx answer"
  else
    fail "runner image: GID 123, the Docker CLI and buildx" "${out}"
  fi
else
  fail "podman build --target forgejo with the stand-in's sha256" "$(tail -n 12 <<<"${out}")"
fi

echo "== runner image: $(($(date +%s) - step_start)) s"
printf '%d passed, %d failed\n' "${passed}" "${failed}"
[ "${failed}" -eq 0 ]
