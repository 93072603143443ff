#!/usr/bin/env bash
# Builds a Debian bookworm base image from Debian's archive, for machines that reach Debian's
# package mirror but no image registry. The result stands in for debian:bookworm-slim:
#
#   docker/build-base.sh                      # makes gaia-env/debian:bookworm-slim
#   docker build --network host --build-arg BASE_IMAGE=gaia-env/debian:bookworm-slim -f docker/Dockerfile .
#
# Needs root, debootstrap and a running Docker engine. DEBIAN_MIRROR picks another mirror;
# REBUILD=1 replaces an existing image of that name.
set -euo pipefail
name="${1:-gaia-env/debian:bookworm-slim}"
if docker image inspect "$name" >/dev/null 2>&1 && [ "${REBUILD:-0}" != 1 ]; then
  echo "$name exists (REBUILD=1 builds it again)"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install -y debootstrap" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root: sudo $0 $*" >&2; exit 1; }

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
# minbase: essential packages and apt only, like the slim images.
debootstrap --variant=minbase bookworm "$root" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"}

# Like the slim images: packages installed later leave out documentation, manuals and
# translations, and apt keeps no downloaded archives.
cat > "$root/etc/dpkg/dpkg.cfg.d/excludes" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
CFG
echo 'APT::Keep-Downloaded-Packages "false";' > "$root/etc/apt/apt.conf.d/docker-clean"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/var/cache/debconf/*-old \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
# The image must not carry this machine's name resolution.
: > "$root/etc/resolv.conf"
: > "$root/etc/hostname"

tar --numeric-owner -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' - "$name"
echo "built $name"
