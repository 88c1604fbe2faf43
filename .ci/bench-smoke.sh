#!/usr/bin/env bash
# Keeps benches/garm_commands/ from rotting: runs every step of the benchmark once, with tiny
# sizes (`--quick`, a few seconds), and fails only if the harness fails: a provider command that
# does not succeed, a replayed request that is refused, a count that does not add up. It never
# fails because something is slow; timings on a shared CI machine mean nothing, and the quick
# mode asserts none. The quick mode prints its table and leaves BENCHMARKS.md alone.
#
# It runs through `cargo test --bench` rather than `cargo bench`: the same harness, but built
# with the test profile that `cargo test` in .ci/run has already built (dependencies included),
# so this step costs seconds. `cargo bench` would first build everything again at opt-level 3,
# which takes minutes on a 2-core runner and checks nothing more. The figures in BENCHMARKS.md
# come from `cargo bench --bench garm_commands`.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== benchmark harness, quick mode (cargo test --bench garm_commands -- --quick)"
if ! cargo test --locked --bench garm_commands -- --quick; then
  echo "bench-smoke: the benchmark harness failed (output above)" >&2
  exit 1
fi
echo "bench-smoke: harness OK"
