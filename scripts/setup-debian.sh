#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the benchmarks need.
# Idempotent: does nothing when every package is already installed. slurmctld, slurmd and
# munge: the one-node Slurm cluster of tests/e2e/test_slurm.py (doc/scale-out.md); redis-server:
# inductor's Redis remote cache of tests/e2e/test_redis_cache.py (doc/compile-cache.md).
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config sqlite3 libsqlite3-dev nlohmann-json3-dev
      libcli11-dev libabsl-dev libgtest-dev libgmock-dev libspdlog-dev libfmt-dev libssl-dev
      hyperfine procps time libcpp-httplib-dev libboost1.81-dev libgoogle-perftools-dev zlib1g-dev wrk chromium nodejs clang-format
      slurmctld slurmd munge redis-server)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm ships inside some nodejs builds (NodeSource); Debian's nodejs needs the npm package.
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing Debian packages: ${missing[*]}"
if ! $SUDO apt-get update -qq >/tmp/compatlab-apt.log 2>&1; then
  echo "setup: cannot reach the Debian package registry (apt-get update failed; see /tmp/compatlab-apt.log)" >&2
  exit 1
fi
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >>/tmp/compatlab-apt.log 2>&1; then
  echo "setup: apt-get install failed for: ${missing[*]} (see /tmp/compatlab-apt.log)" >&2
  exit 1
fi
