#!/usr/bin/env bash
# The container image's whole file system, assembled from a build tree (the Dockerfile's last
# step; image_rootfs_test runs what it makes): the gpuledger binary, stripped, and exactly the
# shared libraries it loads, copied from this (Debian) system, the kernel-time tracer library,
# the CA bundle, and users root and gpuledger (65532). No shell, no package manager, no tools.
#   image-rootfs.sh BUILD_DIR DEST
set -euo pipefail
build=${1:?usage: image-rootfs.sh BUILD_DIR DEST}
dest=${2:?usage: image-rootfs.sh BUILD_DIR DEST}
bin="$build/src/cmd/gpuledger"
tracer="$build/src/sources/kerneltime/libgpuledger-kerneltime.so"
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir="usr/lib/$multiarch"

[ -x "$bin" ] || { echo "image-rootfs.sh: no $bin (build the gpuledger target)" >&2; exit 1; }
mkdir -p "$dest" && chmod 0755 "$dest"
mkdir -p "$dest"/{usr/bin,"$libdir",usr/lib64,etc/ld.so.conf.d,etc/ssl/certs,opt/gpuledger/lib}
install -d -m 1777 "$dest/tmp"
install -d -m 0755 -o 65532 -g 65532 "$dest/var/lib/gpuledger" 2>/dev/null ||
  install -d -m 0755 "$dest/var/lib/gpuledger"
# Merged /usr, as Debian: /lib and /lib64 are links into it.
ln -sfn usr/lib "$dest/lib"
ln -sfn usr/lib64 "$dest/lib64"

strip --strip-unneeded -o "$dest/usr/bin/gpuledger" "$bin"
# Every library the loader resolves for the binary, under the name it asked for, and the
# loader itself at the path the binary names (PT_INTERP).
ldd "$bin" | while read -r name arrow path _; do
  if [ "$arrow" = "=>" ] && [ -f "$path" ]; then
    cp -L "$path" "$dest/$libdir/$name"
  elif [ -f "$name" ]; then
    cp -L "$name" "$dest/usr/${name#/}"
  fi
done
[ -f "$tracer" ] && strip --strip-unneeded -o "$dest/opt/gpuledger/lib/libgpuledger-kerneltime.so" "$tracer"

cp -L /etc/ssl/certs/ca-certificates.crt "$dest/etc/ssl/certs/ca-certificates.crt"
# The NVIDIA runtime adds the driver's libraries under /usr/lib and a file in ld.so.conf.d, then
# runs ldconfig on this root, so dlopen("libnvidia-ml.so.1") finds them.
echo 'include /etc/ld.so.conf.d/*.conf' >"$dest/etc/ld.so.conf"
printf 'root:x:0:0:root:/root:/sbin/nologin\ngpuledger:x:65532:65532:gpuledger:/var/lib/gpuledger:/sbin/nologin\n' >"$dest/etc/passwd"
printf 'root:x:0:\ngpuledger:x:65532:\n' >"$dest/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$dest/etc/nsswitch.conf"
echo "image-rootfs.sh: $dest: $(find "$dest" -type f | wc -l) files, $(du -sh "$dest" | cut -f1)"
