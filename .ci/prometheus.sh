#!/usr/bin/env bash
# The metrics test against a real Prometheus (tests/it/metrics.rs): installs Debian's prometheus
# when it is missing, then runs that test alone, so that a failure of the metrics pipeline is
# named before the whole suite (which runs it again with the other ignored tests).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v prometheus >/dev/null 2>&1; then
  echo "== installing: prometheus"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
fi
# The package's own service is not wanted: the test starts its own Prometheus on 127.0.0.1.
prometheus --version | head -1
cargo test --locked --test it metrics::a_real_prometheus_holds_what_garms_commands_did -- --ignored --exact
