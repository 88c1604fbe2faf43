# syntax=docker/dockerfile:1
#
# Three images from one build (docs/packaging.md):
#
#   binary     FROM scratch, only the static provider at /opt/garm/providers.d/garm-provider-edge-connect,
#              for `COPY --from=` into any GARM image:
#                docker buildx build --platform linux/amd64,linux/arm64 --target binary -t <registry>/garm-provider-edge-connect:<tag> .
#   installer  the same binary on busybox, so that a Kubernetes init container can copy it into a shared
#              volume (a scratch image has no `cp` to run; the Helm chart's delivery installer uses this one):
#                docker buildx build --platform linux/amd64,linux/arm64 --target installer -t <registry>/garm-provider-edge-connect-installer:<tag> .
#   garm       GARM's own image with the provider added:
#                docker buildx build --platform linux/amd64 --target garm -t <registry>/garm-edge-connect:<tag> .
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
# Base of the installer image: only its static busybox `cp` is used.
ARG BUSYBOX_VERSION=1.37.0-musl

# ---------------------------------------------------------------------------------------------
# The builder always runs on the machine's own platform and cross-compiles for TARGETARCH: rustc
# under QEMU emulation takes many times longer for a fat-LTO build, and a cross build produces the
# same bytes. Only ring's C and assembly need a C compiler for the target.
FROM --platform=$BUILDPLATFORM docker.io/library/rust:${RUST_VERSION}-bookworm AS builder

ARG BUILDARCH
ARG TARGETARCH
# A release names its tag (--build-arg GARM_PROVIDER_VERSION=v0.2.0): build.rs makes it the
# version GetVersion prints, and refuses a tag that is not Cargo.toml's version. Unset: the Cargo
# version. A build argument reaches RUN as an environment variable of the same name.
ARG GARM_PROVIDER_VERSION=""
# Debian bookworm's packages (the base tag fixes the release): musl-gcc for a native build, the
# GNU cross gcc for the other architecture. rustc links musl targets against its own bundled musl
# CRT and libc (self-contained linking), so a glibc cross gcc serves as the musl linker and as
# ring's C compiler. ring's C includes only basic headers such as stdint.h, which the cross gcc
# finds in the cross libc's headers (merely a Recommends of the gcc package, hence named here).
ARG MUSL_TOOLS_VERSION=1.2.3-1
ARG CROSS_GCC_VERSION=4:12.2.0-3
ARG CROSS_LIBC_VERSION=2.36-8cross1

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The target triple goes to /etc/provider-target; the compiler and linker go to cargo's own config
# ([env] reaches ring's build script, [target] the final link), so the build step below is the same
# command for every pair of platforms.
RUN set -eu; \
    case "${TARGETARCH:-amd64}" in \
        amd64) triple=x86_64-unknown-linux-musl; cross=x86_64-linux-gnu ;; \
        arm64) triple=aarch64-unknown-linux-musl; cross=aarch64-linux-gnu ;; \
        *) echo "TARGETARCH ${TARGETARCH} is not supported: build linux/amd64 or linux/arm64" >&2; exit 1 ;; \
    esac; \
    apt-get update; \
    if [ "${BUILDARCH:-amd64}" = "${TARGETARCH:-amd64}" ]; then \
        apt-get install -y --no-install-recommends "musl-tools=${MUSL_TOOLS_VERSION}"; \
        cc=musl-gcc; \
    elif [ "${cross}" = aarch64-linux-gnu ]; then \
        apt-get install -y --no-install-recommends "gcc-aarch64-linux-gnu=${CROSS_GCC_VERSION}" \
            "libc6-dev-arm64-cross=${CROSS_LIBC_VERSION}"; \
        cc="${cross}-gcc"; \
    else \
        apt-get install -y --no-install-recommends "gcc-x86-64-linux-gnu=${CROSS_GCC_VERSION}" \
            "libc6-dev-amd64-cross=${CROSS_LIBC_VERSION}"; \
        cc="${cross}-gcc"; \
    fi; \
    rm -rf /var/lib/apt/lists/*; \
    rustup target add "${triple}"; \
    printf '%s\n' "${triple}" > /etc/provider-target; \
    { \
        printf '[env]\nCC_%s = "%s"\n' "${triple//-/_}" "${cc}"; \
        if [ "${cc}" != musl-gcc ]; then printf '[target.%s]\nlinker = "%s"\n' "${triple}" "${cc}"; fi; \
    } > "${CARGO_HOME}/config.toml"

WORKDIR /src
COPY . .

# The production build: the demo feature (and with it the simulator) left out. Same command as
# .ci/static-chroot.sh and .ci/release.sh. --locked: build exactly Cargo.lock. The registry and the
# target directory are cache mounts (kept between builds, never in a layer), so the binary is
# copied out of the target directory within the same step. A binary that asks for a program
# interpreter or a shared library is refused here, before it can reach an image that has neither;
# readelf reads any architecture's ELF headers, so this holds for a cross build too (ldd would
# only say "not a dynamic executable" about a foreign binary, static or not).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    triple="$(cat /etc/provider-target)" \
    && cargo build --release --locked --no-default-features --target "${triple}" --bin garm-provider-edge-connect \
    && install -D -m 0755 "target/${triple}/release/garm-provider-edge-connect" /out/garm-provider-edge-connect \
    && headers="$(readelf -lW -dW /out/garm-provider-edge-connect)" \
    && case "${headers}" in \
        *"program interpreter"* | *"(NEEDED)"*) \
            echo "garm-provider-edge-connect is not statically linked" >&2; exit 1 ;; \
    esac

# ---------------------------------------------------------------------------------------------
# Nothing but the binary: the smallest thing to COPY --from, to scan and to sign. ENTRYPOINT only
# serves `docker run <image> version` and `check`; GARM never runs this image.
FROM scratch AS binary

LABEL org.opencontainers.image.title="garm-provider-edge-connect" \
      org.opencontainers.image.description="GARM external provider for Deutsche Telekom Edge Connect (static binary only)" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY --from=builder --chmod=0755 /out/garm-provider-edge-connect /opt/garm/providers.d/garm-provider-edge-connect
ENTRYPOINT ["/opt/garm/providers.d/garm-provider-edge-connect"]

# ---------------------------------------------------------------------------------------------
# A scratch image cannot deliver its file by itself: there is no program in it but the provider,
# and the provider has no command that copies itself. busybox's static `cp` does it; the init
# container names the destination (the Helm chart's templates/deployment.yaml). No RUN here, so this
# target, like `binary`, builds for any platform without emulation.
FROM docker.io/library/busybox:${BUSYBOX_VERSION} AS installer

LABEL org.opencontainers.image.title="garm-provider-edge-connect-installer" \
      org.opencontainers.image.description="Copies the static garm-provider-edge-connect binary into a volume (init container)" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY --from=binary /opt/garm/providers.d/garm-provider-edge-connect /opt/garm/providers.d/garm-provider-edge-connect
# emptyDir volumes are writable by every user, so the copy needs no root.
USER 65532:65532
ENTRYPOINT ["/bin/cp", "/opt/garm/providers.d/garm-provider-edge-connect"]
CMD ["/providers/garm-provider-edge-connect"]

# ---------------------------------------------------------------------------------------------
FROM ghcr.io/cloudbase/garm:${GARM_VERSION} AS garm

LABEL org.opencontainers.image.title="garm-edge-connect" \
      org.opencontainers.image.description="GARM with the Deutsche Telekom Edge Connect external provider" \
      org.opencontainers.image.licenses="Apache-2.0"

# The path GARM's provider_executable points at (config/garm-provider.snippet.toml).
COPY --from=binary /opt/garm/providers.d/garm-provider-edge-connect /opt/garm/providers.d/garm-provider-edge-connect
# The example provider config at the path the snippet's config_file names. Deployments that mount
# their own /etc/garm over it keep their file; the example stays readable in the image (see
# docs/packaging.md for copying it out).
COPY --chmod=0644 config/provider.example.toml /etc/garm/edge-connect-provider-config.toml
# Credentials are NOT part of the image: mount them read-only at
# /etc/garm-creds/credentials.toml (mode 0600 or 0400; the provider refuses a file group or others
# can read), or pass EDP_EDGE_CONNECT_USERNAME / EDP_EDGE_CONNECT_PASSWORD through GARM's
# environment_variables = ["EDP_EDGE_CONNECT_"].

# Fail the build, not the first runner, if the binary cannot start in GARM's image: GetVersion
# needs neither config nor network. This is the only step that executes target-platform code, so
# building this target for a foreign platform needs QEMU (binfmt); `binary` and `installer` do not.
RUN GARM_COMMAND=GetVersion /opt/garm/providers.d/garm-provider-edge-connect

# ENTRYPOINT, USER and the rest are GARM's, unchanged.
