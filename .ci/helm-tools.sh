#!/usr/bin/env bash
# Installs what tests/it/helm_chart.rs needs to prove the Helm chart (through tests/it/helm_engine.py):
# helm-python-sdk (Helm 4's own Go engine as a library: lint, values schema, render; offline),
# kubernetes-validate (the Kubernetes OpenAPI schemas of each release, for every rendered
# object) and PyYAML, pinned, into target/ci-tools/helm-py/ (--target: the same with a pyenv
# Python and with Debian's externally managed one, and the pinned versions are what run). The
# test finds them there.
# python3 >= 3.11 comes with the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly HELM_PYTHON_SDK_VERSION=0.2.2
readonly KUBERNETES_VALIDATE_VERSION=1.37.0
readonly PYYAML_VERSION=6.0.3
readonly dir="target/ci-tools/helm-py"
readonly stamp="${dir}/.installed-${HELM_PYTHON_SDK_VERSION}-${KUBERNETES_VALIDATE_VERSION}-${PYYAML_VERSION}"

if [ -e "${stamp}" ]; then
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "== installing: python3-pip"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip
fi
echo "== installing into ${dir}: helm-python-sdk ${HELM_PYTHON_SDK_VERSION}, kubernetes-validate ${KUBERNETES_VALIDATE_VERSION}"
rm -rf "${dir}"
python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location --target "${dir}" \
  "helm-python-sdk==${HELM_PYTHON_SDK_VERSION}" \
  "kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}" \
  "PyYAML==${PYYAML_VERSION}"
touch "${stamp}"
