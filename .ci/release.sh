#!/usr/bin/env bash
# Release artifacts of garm-provider-edge-connect (docs/packaging.md, "Release artifacts"):
#
#   bash .ci/release.sh [--smoke] [--arch amd64|arm64]... [--out DIR]
#
# For each architecture (default: amd64 and arm64) the static production binary (demo feature off,
# musl, built exactly like the Dockerfile's builder), then SHA256SUMS over everything, and a
# CycloneDX 1.5 JSON list of the crates that are compiled into the binary. The version is
# `git describe`; an exact release tag must match the version in Cargo.toml, and a full release
# refuses a work tree with uncommitted changes. Default output: target/dist/VERSION/.
#
# --smoke (CI): the native architecture only, a dirty tree allowed, output in a temporary
# directory that is checked (checksums, SBOM shape, static binary that prints its version) and
# removed. The build is the one .ci/static-chroot.sh just made, so this costs seconds there.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly PROVIDER=garm-provider-edge-connect
smoke=0
out=""
arches=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --arch)
      [ "$#" -ge 2 ] || { echo "--arch needs amd64 or arm64" >&2; exit 2; }
      arches+=("$2")
      shift
      ;;
    --out)
      [ "$#" -ge 2 ] || { echo "--out needs a directory" >&2; exit 2; }
      out="$2"
      shift
      ;;
    -h | --help)
      sed -n '2,15p' "$0"
      exit 0
      ;;
    *)
      echo "unknown argument: $1 (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

# --- tools -----------------------------------------------------------------------------------
need_apt=()
command -v jq >/dev/null 2>&1 || need_apt+=(jq)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v readelf >/dev/null 2>&1 || need_apt+=(binutils)
command -v sha256sum >/dev/null 2>&1 || need_apt+=(coreutils)

host_arch="$(uname -m)"
case "${host_arch}" in
  x86_64) host_arch=amd64 ;;
  aarch64) host_arch=arm64 ;;
esac
if [ "${#arches[@]}" -eq 0 ]; then
  if [ "${smoke}" -eq 1 ]; then
    arches=("${host_arch}")
  else
    arches=(amd64 arm64)
  fi
fi

# triple_of ARCH, cc_of ARCH: the same mapping and the same compilers as the Dockerfile's builder.
triple_of() {
  case "$1" in
    amd64) echo x86_64-unknown-linux-musl ;;
    arm64) echo aarch64-unknown-linux-musl ;;
    *) return 1 ;;
  esac
}
cc_of() {
  if [ "$1" = "${host_arch}" ]; then
    echo musl-gcc
  elif [ "$1" = arm64 ]; then
    echo aarch64-linux-gnu-gcc
  else
    echo x86_64-linux-gnu-gcc
  fi
}
for arch in "${arches[@]}"; do
  triple_of "${arch}" >/dev/null || { echo "unsupported architecture ${arch}: amd64 or arm64" >&2; exit 2; }
  cc="$(cc_of "${arch}")"
  if ! command -v "${cc}" >/dev/null 2>&1; then
    case "${cc}" in
      musl-gcc) need_apt+=(musl-tools) ;;
      aarch64-linux-gnu-gcc) need_apt+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross) ;;
      x86_64-linux-gnu-gcc) need_apt+=(gcc-x86-64-linux-gnu libc6-dev-amd64-cross) ;;
    esac
  fi
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "== installing: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# --- version ---------------------------------------------------------------------------------
metadata="$(cargo metadata --format-version 1 --no-deps --locked)"
target_dir="$(jq -r '.target_directory' <<<"${metadata}")"
cargo_version="$(jq -r --arg name "${PROVIDER}" '.packages[] | select(.name == $name) | .version' <<<"${metadata}")"

dirty=0
git diff --quiet HEAD -- 2>/dev/null || dirty=1
if describe="$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)"; then
  :
else
  # No release tag yet: the Cargo version, marked as a build of this commit.
  describe="v${cargo_version}-0-g$(git rev-parse --short=12 HEAD)"
  [ "${dirty}" -eq 0 ] || describe="${describe}-dirty"
fi
version="${describe}"
echo "== version ${version} (Cargo.toml: ${cargo_version})"
tag="${describe%-dirty}"
release_tag=""
if [[ ! "${tag}" =~ -[0-9]+-g[0-9a-f]+$ ]]; then
  # On a release tag the binary's own version (GetVersion) is the tag: build.rs takes it from
  # GARM_PROVIDER_VERSION and refuses one whose version is not Cargo.toml's (a pre-release
  # suffix such as -rc.1 is allowed).
  if [ "${tag%%-*}" != "v${cargo_version}" ]; then
    echo "tag ${tag} does not match Cargo.toml's version ${cargo_version}" >&2
    exit 1
  fi
  release_tag="${tag}"
  export GARM_PROVIDER_VERSION="${release_tag}"
fi
if [ "${dirty}" -eq 1 ] && [ "${smoke}" -eq 0 ]; then
  echo "the work tree has uncommitted changes: commit them, or run with --smoke" >&2
  exit 1
fi

if [ -z "${out}" ]; then
  if [ "${smoke}" -eq 1 ]; then
    out="$(mktemp -d "${TMPDIR:-/tmp}/release-smoke.XXXXXX")"
    trap 'rm -rf "${out}"' EXIT
  else
    out="${target_dir}/dist/${version}"
  fi
fi
mkdir -p "${out}"
rm -f "${out}/${PROVIDER}-"* "${out}/SHA256SUMS"

# --- binaries --------------------------------------------------------------------------------
# The SBOM's timestamp is the commit's, so the same commit gives the same document. Not exported:
# ring's build script watches SOURCE_DATE_EPOCH, and setting it would rebuild the binary that
# static-chroot.sh (and the Dockerfile, which does not set it either) made.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"

for arch in "${arches[@]}"; do
  triple="$(triple_of "${arch}")"
  cc="$(cc_of "${arch}")"
  rustflags=""
  if ! rustup target list --installed | grep -qx "${triple}"; then
    echo "== rustup target add ${triple}"
    if ! rustup target add "${triple}"; then
      if [ "${smoke}" -eq 1 ] && [ "${arch}" = "${host_arch}" ] && [ "${arch}" = amd64 ]; then
        # As in .ci/static-chroot.sh: a machine without the musl standard library still checks
        # the rest of the pipeline with a static glibc build. Never for a real release.
        echo "== smoke: musl target unavailable, static glibc build instead"
        triple=x86_64-unknown-linux-gnu
        rustflags="-C target-feature=+crt-static"
      else
        echo "cannot install the ${triple} standard library" >&2
        exit 1
      fi
    fi
  fi
  triple_env="${triple//-/_}"
  # The native build leaves the linker alone, so that it is the very build static-chroot.sh made
  # (a changed linker setting would rebuild every crate).
  linker=()
  [ "${cc}" = musl-gcc ] || linker=("CARGO_TARGET_${triple_env^^}_LINKER=${cc}")
  build=(cargo build --release --locked --no-default-features --target "${triple}" --bin "${PROVIDER}")
  echo "== ${build[*]} (CC ${cc})"
  start="$(date +%s)"
  env "CC_${triple_env}=${cc}" RUSTFLAGS="${rustflags}" "${linker[@]}" "${build[@]}"
  echo "== built in $(($(date +%s) - start)) s"
  bin="${target_dir}/${triple}/release/${PROVIDER}"
  headers="$(readelf -lW -dW "${bin}")"
  case "${headers}" in
    *"program interpreter"* | *"(NEEDED)"*)
      echo "${bin} is not statically linked" >&2
      exit 1
      ;;
  esac
  install -m 0755 "${bin}" "${out}/${PROVIDER}-${version}-linux-${arch}"
  echo "== ${PROVIDER}-${version}-linux-${arch}: $(stat -c %s "${bin}") bytes"
done

# --- dependency list -------------------------------------------------------------------------
# CycloneDX from cargo's own resolution, offline: `cargo metadata` with the production features
# and the first architecture's platform filter gives the graph, Cargo.lock the crates' SHA-256.
# Walking from the provider along normal and build edges only leaves out dev-dependencies and
# everything behind features that are off (the simulator behind `demo`).
sbom="${out}/${PROVIDER}-${version}.cdx.json"
full_metadata="$(cargo metadata --format-version 1 --locked --no-default-features \
  --filter-platform "$(triple_of "${arches[0]}")")"
# Cargo.lock as JSON lines {name, version, checksum}; awk, because the format is a flat list of
# [[package]] tables and TOML tooling would be one more thing to install.
checksums="$(awk '
  /^\[\[package\]\]/ { if (name != "") print name, version, sum; name = ""; version = ""; sum = "" }
  /^name = /     { name = $3 }
  /^version = /  { version = $3 }
  /^checksum = / { sum = $3 }
  END { if (name != "") print name, version, sum }
' Cargo.lock | tr -d '"' | jq -R -s 'split("\n") | map(select(length > 0) | split(" ")
  | select(length == 3 and .[2] != "") | {key: "\(.[0])@\(.[1])", value: .[2]}) | from_entries')"

jq --arg provider "${PROVIDER}" --arg version "${version}" --argjson epoch "${epoch}" \
  --argjson sums "${checksums}" '
  def spdx: if . == null then null else gsub(" */ *"; " OR ") end;
  def purl: "pkg:cargo/\(.name)@\(.version)";
  (.packages | map({key: .id, value: .}) | from_entries) as $pkgs
  | (.resolve.nodes | map({key: .id, value: .}) | from_entries) as $nodes
  | (.packages[] | select(.name == $provider and .source == null) | .id) as $root
  | def runtime_deps($id):
      [$nodes[$id].deps[] | select(any(.dep_kinds[]; .kind == null or .kind == "build")) | .pkg];
    ({seen: {}, todo: [$root]}
     | until(.todo | length == 0;
         .todo[0] as $id
         | .todo |= .[1:]
         | if .seen[$id] then . else .seen[$id] = true | .todo += runtime_deps($id) end)
     | .seen | keys) as $closure
  # References by name and version: cargo'"'"'s package ids of path packages hold the absolute path of
  # the checkout, which has no place in a published document.
  | def ref($id): $pkgs[$id] | if .source == null then "path:\(.name)@\(.version)" else purl end;
    def component($p):
      {type: "library", "bom-ref": ref($p.id), name: $p.name, version: $p.version, purl: ($p | purl)}
      + (if $p.license then {licenses: [{expression: ($p.license | spdx)}]} else {} end)
      + (if $sums["\($p.name)@\($p.version)"] then
           {hashes: [{alg: "SHA-256", content: $sums["\($p.name)@\($p.version)"]}]} else {} end)
      + {properties: [{name: "cargo:source",
                       value: ($p.source // "path (this repository)")}]};
  {
    bomFormat: "CycloneDX",
    specVersion: "1.5",
    version: 1,
    metadata: {
      timestamp: ($epoch | todate),
      tools: {components: [{type: "application", name: ".ci/release.sh (cargo metadata + Cargo.lock)"}]},
      component: (component($pkgs[$root]) | .type = "application" | .version = $version)
    },
    components: ([$closure[] | select(. != $root) | component($pkgs[.])] | sort_by(.name, .version)),
    dependencies: [$closure[] | {ref: ref(.), dependsOn: (runtime_deps(.) | map(ref(.)) | sort)}]
  }' <<<"${full_metadata}" >"${sbom}"
echo "== $(basename "${sbom}"): $(jq '.components | length' "${sbom}") crates"

(cd "${out}" && sha256sum -- "${PROVIDER}-"* >SHA256SUMS)
printf '%s\n' "${version}" >"${out}/VERSION"

# --- checks ----------------------------------------------------------------------------------
(cd "${out}" && sha256sum --quiet -c SHA256SUMS)
jq -e --arg provider "${PROVIDER}" '
  .bomFormat == "CycloneDX"
  and (.components | length > 0)
  and all(.components[]; (.name | length > 0) and (.version | length > 0) and (.purl | startswith("pkg:cargo/")))
  and (.metadata.component.name == $provider)
  and ([.components[].name] | index("reqwest") != null)
  and ([.components[].name] | index("assert_cmd") == null)
  and (tostring | test("file://") | not)
' "${sbom}" >/dev/null || { echo "the SBOM is incomplete, lists dev-dependencies or names a local path" >&2; exit 1; }
native="${out}/${PROVIDER}-${version}-linux-${host_arch}"
if [ -x "${native}" ]; then
  printed="$(env -i GARM_COMMAND=GetVersion "${native}")"
  # build.rs appends the commit as semver build metadata when built from a checkout, except
  # for a release tag, which GetVersion prints as it is.
  commit="$(git rev-parse --short=7 HEAD 2>/dev/null || true)"
  if [ -n "${release_tag}" ]; then
    if [ "${printed}" != "${release_tag}" ]; then
      echo "GetVersion printed '${printed}', expected the release tag ${release_tag}" >&2
      exit 1
    fi
  elif [ "${printed}" != "v${cargo_version}" ] && [ "${printed}" != "v${cargo_version}+${commit}" ]; then
    echo "GetVersion printed '${printed}', expected v${cargo_version} or v${cargo_version}+${commit}" >&2
    exit 1
  fi
fi

echo "== artifacts in ${out}:"
(cd "${out}" && ls -l)
if [ "${smoke}" -eq 1 ]; then
  echo "release smoke run: binary, SHA256SUMS and SBOM checked"
fi
