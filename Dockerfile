# syntax=docker/dockerfile:1
#
# GARM with the Edge Connect provider built in (docs/packaging.md):
#
#   docker build --platform linux/amd64 --target garm -t <registry>/garm-edge-connect:<tag> .
#
# The provider is linked statically against musl and talks TLS through rustls with the web PKI
# roots compiled in, so it needs nothing from the image it lands in: GARM's image is busybox-based
# (no glibc, no guaranteed CA store). .ci/static-chroot.sh builds with the same flags and runs the
# binary in an empty chroot against the Edge Connect simulator, which is how CI checks this
# promise without a Docker engine.
#
# The example runner images have their own Dockerfile in examples/runner-image/ (build context is
# that directory); see docs/packaging.md.

# Rust toolchain of the builder: keep it at the version CI builds with, so the image and CI's
# static-chroot test compile the same code with the same compiler.
ARG RUST_VERSION=1.95.0
# GARM release to build on (ghcr.io/cloudbase/garm tags are the GARM release tags).
ARG GARM_VERSION=v0.2.1

# ---------------------------------------------------------------------------------------------
FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS builder

# Only x86_64 is built: the musl target and its C toolchain below are x86_64 ones, and a builder
# running under another architecture would produce a binary of the wrong kind. Say so up front
# instead of failing in the middle of the link.
ARG TARGETARCH
RUN if [ -n "${TARGETARCH}" ] && [ "${TARGETARCH}" != "amd64" ]; then \
        echo "this image is linux/amd64 only: build with --platform linux/amd64" >&2; \
        exit 1; \
    fi

# musl-gcc compiles ring's C and assembly for the musl target (cc-rs finds no
# x86_64-linux-musl-gcc on Debian). The version is bookworm's, which the base tag fixes.
ARG MUSL_TOOLS_VERSION=1.2.3-1
RUN apt-get update \
    && apt-get install -y --no-install-recommends "musl-tools=${MUSL_TOOLS_VERSION}" \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add x86_64-unknown-linux-musl
ENV CC_x86_64_unknown_linux_musl=musl-gcc

WORKDIR /src
COPY . .

# Same command as .ci/static-chroot.sh. --locked: build exactly Cargo.lock. The registry and the
# target directory are cache mounts (kept between builds, never in a layer), so the binary is
# copied out of the target directory within the same step. ldd refuses a dynamically linked
# result before it can reach an image that has no loader for it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl --bin garm-provider-edge-connect \
    && install -D -m 0755 target/x86_64-unknown-linux-musl/release/garm-provider-edge-connect \
        /out/garm-provider-edge-connect \
    && case "$(ldd /out/garm-provider-edge-connect 2>&1 || true)" in \
        *"statically linked"* | *"not a dynamic executable"*) ;; \
        *) echo "garm-provider-edge-connect is not statically linked" >&2; exit 1 ;; \
    esac

# ---------------------------------------------------------------------------------------------
FROM ghcr.io/cloudbase/garm:${GARM_VERSION} AS garm

LABEL org.opencontainers.image.title="garm-edge-connect" \
      org.opencontainers.image.description="GARM with the Deutsche Telekom Edge Connect external provider" \
      org.opencontainers.image.licenses="Apache-2.0"

# The path GARM's provider_executable points at (config/garm-provider.snippet.toml).
COPY --from=builder --chmod=0755 /out/garm-provider-edge-connect /opt/garm/providers.d/garm-provider-edge-connect
# The example provider config at the path the snippet's config_file names. Deployments that mount
# their own /etc/garm over it keep their file; the example stays readable in the image (see
# docs/packaging.md for copying it out).
COPY --chmod=0644 config/provider.example.toml /etc/garm/edge-connect-provider-config.toml
# Credentials are NOT part of the image: mount them read-only at
# /etc/garm-creds/credentials.toml (mode 0600; the provider refuses a file others can read), or
# pass EDP_EDGE_CONNECT_USERNAME / EDP_EDGE_CONNECT_PASSWORD through GARM's
# environment_variables = ["EDP_EDGE_CONNECT_"].

# Fail the build, not the first runner, if the binary cannot start in GARM's image: GetVersion
# needs neither config nor network.
RUN GARM_COMMAND=GetVersion /opt/garm/providers.d/garm-provider-edge-connect

# ENTRYPOINT, USER and the rest are GARM's, unchanged.
