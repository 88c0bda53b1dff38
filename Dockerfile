# The gpuledger image: one binary, the agent and the server alike (deploy/ runs it with
# `agent ...` or `server ...`). Built with `make image` (Docker or Podman).
#
# Stage 1 builds on Debian with the same script as a workstation (scripts/install-deps.sh
# build: the build dependencies alone, no test servers). Stage 2 is nothing but what
# scripts/image-rootfs.sh assembles: the stripped binary, exactly the shared libraries it loads,
# the kernel-time tracer library, the CA bundle and two users. No shell, no package manager:
# debug it with `kubectl debug` and an ephemeral container. image_rootfs_test runs that file
# system in a chroot.
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
COPY scripts/install-deps.sh /src/scripts/install-deps.sh
RUN /src/scripts/install-deps.sh build \
 && apt-get install -y -qq --no-install-recommends ca-certificates binutils \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake --preset ci -B /build -DGPULEDGER_TESTS=OFF -DGPULEDGER_CCACHE=OFF \
 && cmake --build /build --target gpuledger gpuledger-kerneltime \
 && scripts/image-rootfs.sh /build /rootfs

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /var/lib/gpuledger
ENTRYPOINT ["/usr/bin/gpuledger"]
CMD ["--help"]
