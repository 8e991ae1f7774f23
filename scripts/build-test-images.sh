#!/usr/bin/env bash
# Build the Docker images the docker-backend tests use. Idempotent: skips images that exist.
# Nothing is pulled from a registry: the base image comes from Debian packages (debootstrap),
# fixture task images are made by committing containers of the base.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=bench-test-base:1
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq debootstrap; }
  dir=$(mktemp -d /tmp/bench-debootstrap.XXXXXX)
  trap '$SUDO rm -rf "$dir"' EXIT
  echo "building $BASE (debootstrap, about 70 s)" >&2
  $SUDO debootstrap --variant=minbase --include=git,python3,ca-certificates bookworm "$dir" >&2
  $SUDO tar -C "$dir" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
fi

# Fixture task images: scripts/test-images/<name>.sh builds a repository under /testbed (or the
# directory a `# workdir: DIR` line of the script names) inside a container of the base, and
# the container is committed as bench-test-<name>:1 with that WORKDIR.
# Optional beside it: <name>.wheels, pinned pure-Python wheels downloaded on the host (PyPI) and
# copied to /wheels in the container (containers have no network); <name>.debs, Debian packages
# downloaded on the host (`apt-get download`, the host's release must be the base's, bookworm)
# and copied to /debs for the script to install; <name>.tags, more names
# for the committed image (e.g. the SWE-bench image names its fixture rows resolve to).
for script in scripts/test-images/*.sh; do
  [ -e "$script" ] || continue
  name=$(basename "$script" .sh)
  tag="bench-test-$name:1"
  tags="${script%.sh}.tags"
  if docker image inspect "$tag" >/dev/null 2>&1; then
    if [ -f "$tags" ]; then
      grep -v '^#' "$tags" | while read -r t; do [ -n "$t" ] && docker tag "$tag" "$t"; done
    fi
    continue
  fi
  echo "building $tag" >&2
  cid=$(docker create "$BASE" sleep infinity)
  docker cp "$script" "$cid:/build.sh"
  wheels="${script%.sh}.wheels"
  if [ -f "$wheels" ]; then
    wdir=$(mktemp -d /tmp/bench-wheels.XXXXXX)
    grep -v '^#' "$wheels" | xargs python3 -m pip download -q --no-deps --only-binary=:all: -d "$wdir" >&2
    docker cp "$wdir" "$cid:/wheels"
    rm -rf "$wdir"
  fi
  debs="${script%.sh}.debs"
  if [ -f "$debs" ]; then
    ddir=$(mktemp -d /tmp/bench-debs.XXXXXX)
    pkgs=$(grep -v '^#' "$debs" | xargs)
    (cd "$ddir" && apt-get download -q $pkgs >&2) ||
      { $SUDO apt-get update -qq && (cd "$ddir" && apt-get download -q $pkgs >&2); }
    docker cp "$ddir" "$cid:/debs"
    rm -rf "$ddir"
  fi
  docker start "$cid" >/dev/null
  if ! docker exec "$cid" bash /build.sh >&2; then
    docker rm -f "$cid" >/dev/null; echo "failed: $tag" >&2; exit 1
  fi
  docker exec "$cid" rm -f /build.sh
  docker exec "$cid" rm -rf /wheels /debs
  workdir=$(sed -n 's/^# workdir: *//p' "$script" | head -n 1)
  docker commit -c 'CMD ["sleep","infinity"]' -c "WORKDIR ${workdir:-/testbed}" "$cid" "$tag" >/dev/null
  docker rm -f "$cid" >/dev/null
  if [ -f "$tags" ]; then
    grep -v '^#' "$tags" | while read -r t; do [ -n "$t" ] && docker tag "$tag" "$t"; done
  fi
done
