# Sourced by .ci/run (`. .ci/docker-daemon.sh`): starts a Docker-compatible daemon, podman's Docker
# API service, on a unix socket in a temporary directory and exports GARM_TEST_DOCKER_HOST for the
# runner image's test against a real daemon (tests/it/runner_entrypoint.rs,
# dind_entrypoint_runs_a_container_step_and_a_build_step_against_a_real_daemon). Installs what is
# missing from Debian's packages: podman, runc (the runtime named below; Debian's podman pulls in
# crun only), busybox-static (the test's base image is its binary, as nothing can be pulled) and a
# Docker CLI. Nothing is written outside the temporary directory.

garm_docker_need=()
command -v podman >/dev/null 2>&1 || garm_docker_need+=(podman)
command -v runc >/dev/null 2>&1 || garm_docker_need+=(runc)
dpkg -s busybox-static >/dev/null 2>&1 || garm_docker_need+=(busybox-static)
if ! command -v docker >/dev/null 2>&1; then
  # Debian 13 ships the CLI alone as docker-cli; Debian 12 only inside docker.io.
  if apt-cache show docker-cli >/dev/null 2>&1; then garm_docker_need+=(docker-cli); else garm_docker_need+=(docker.io); fi
fi
if [ "${#garm_docker_need[@]}" -gt 0 ]; then
  echo "== installing: ${garm_docker_need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${garm_docker_need[@]}"
fi

garm_docker_dir=$(mktemp -d "${TMPDIR:-/tmp}/garm-docker-daemon.XXXXXX")
# Inside a container podman needs runc with plain cgroupfs, no ulimits of its own and a file
# event log (no systemd, no journald); vfs storage works on any filesystem.
cat >"$garm_docker_dir/containers.conf" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
CONTAINERS_CONF="$garm_docker_dir/containers.conf" podman \
  --root "$garm_docker_dir/storage" --runroot "$garm_docker_dir/run" --storage-driver vfs \
  system service --time=0 "unix://$garm_docker_dir/docker.sock" >"$garm_docker_dir/podman.log" 2>&1 &
garm_docker_pid=$!
if [ -z "$(trap -p EXIT)" ]; then
  trap 'kill "$garm_docker_pid" 2>/dev/null; wait "$garm_docker_pid" 2>/dev/null; rm -rf "$garm_docker_dir"' EXIT
fi
garm_docker_tries=0
until curl -fsS --noproxy '*' --unix-socket "$garm_docker_dir/docker.sock" http://docker/_ping >/dev/null 2>&1; do
  garm_docker_tries=$((garm_docker_tries + 1))
  if [ "$garm_docker_tries" -ge 60 ] || ! kill -0 "$garm_docker_pid" 2>/dev/null; then
    echo "error: podman's Docker API service did not answer on $garm_docker_dir/docker.sock; its log:" >&2
    cat "$garm_docker_dir/podman.log" >&2
    exit 1
  fi
  sleep 1
done
export GARM_TEST_DOCKER_HOST="unix://$garm_docker_dir/docker.sock"
echo "== podman's Docker API service answers at $GARM_TEST_DOCKER_HOST ($(docker --version))"
