#!/usr/bin/env bash
# Builds what a release ships, into dist/:
#
#   scripts/dist.sh npm       dist/mcpcage-VERSION.tgz: the npm package (no
#                             dependencies, no install script) carrying a
#                             static binary per platform and a tiny launcher
#   scripts/dist.sh version   prints VERSION
#   scripts/dist.sh cross     builds every package for every platform and
#                             keeps nothing: what a release builds must
#                             compile on each (make test runs it)
#   scripts/dist.sh release   dist/mcpcage-VERSION-OS-ARCH.tar.gz (.zip for
#                             windows when zip is there), the npm package,
#                             and dist/SHA256SUMS over all of them
#
# Binaries are static (CGO_ENABLED=0), built with -trimpath, and carry
# VERSION (git describe, or $VERSION) in `mcpcage --version`.
# Platforms: linux, darwin, windows on amd64 and arm64 ($PLATFORMS to narrow).
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-release}
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null | sed 's/^v//' || echo 0.0.0-dev)}
# npm wants semver: a bare commit becomes 0.1.0-dev.COMMIT.
if ! [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then VERSION=0.1.0-dev.$VERSION; fi
if [ "$what" = version ]; then echo "$VERSION"; exit 0; fi
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
OUT=dist
say() { echo "dist: $*" >&2; }

if [ "$what" = cross ]; then
	for p in $PLATFORMS; do
		t=$SECONDS
		CGO_ENABLED=0 GOOS=${p%/*} GOARCH=${p#*/} $GO build ./... || { echo "dist: error: $p does not build (above)" >&2; exit 1; }
		say "$p builds ($((SECONDS - t))s)"
	done
	exit 0
fi

rm -rf "$OUT/stage"
mkdir -p "$OUT/stage/npm/bin" "$OUT/stage/npm/vendor"
T0=$SECONDS
for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/} t=$SECONDS
	exe=mcpcage
	[ "$os" = windows ] && exe=mcpcage.exe
	dir="$OUT/stage/npm/vendor/$os-$arch"
	mkdir -p "$dir"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION" -o "$dir/$exe" ./cmd/mcpcage
	say "built $os/$arch ($(du -h "$dir/$exe" | cut -f1), $((SECONDS - t))s)"
done

cp npm/bin/mcpcage.js "$OUT/stage/npm/bin/"
cp LICENSE "$OUT/stage/npm/"
cat >"$OUT/stage/npm/package.json" <<JSON
{
  "name": "mcpcage",
  "version": "$VERSION",
  "description": "Every MCP server in its own cage: Docker isolation, tool pinning, hidden-instruction scanning and a chained audit log",
  "license": "Apache-2.0",
  "bin": { "mcpcage": "bin/mcpcage.js" },
  "files": ["bin/", "vendor/", "LICENSE", "README.md"],
  "engines": { "node": ">=16" }
}
JSON
cat >"$OUT/stage/npm/README.md" <<'MD'
# mcpcage

Every MCP server in its own cage. This package carries prebuilt mcpcage
binaries (linux, darwin, windows on x64 and arm64) and a launcher; it has no
dependencies and runs no install script.

    npm install -g mcpcage
    mcpcage --version

Docker must be installed and running. See the project's README for usage.
MD
rm -f "$OUT/mcpcage-$VERSION.tgz"
(cd "$OUT/stage/npm" && npm pack --silent --pack-destination "$PWD/../.." >/dev/null)
say "npm package $OUT/mcpcage-$VERSION.tgz ($(du -h "$OUT/mcpcage-$VERSION.tgz" | cut -f1))"

if [ "$what" = release ]; then
	files=("mcpcage-$VERSION.tgz")
	for p in $PLATFORMS; do
		os=${p%/*} arch=${p#*/}
		name="mcpcage-$VERSION-$os-$arch"
		src="$OUT/stage/npm/vendor/$os-$arch"
		cp LICENSE README.md "$src/"
		if [ "$os" = windows ] && command -v zip >/dev/null; then
			(cd "$src" && zip -q -X "$PWD/../../../../$name.zip" ./*)
			files+=("$name.zip")
		else
			tar -C "$src" --owner=0 --group=0 --numeric-owner --mtime=@0 -czf "$OUT/$name.tar.gz" .
			files+=("$name.tar.gz")
		fi
		rm "$src/LICENSE" "$src/README.md"
	done
	(cd "$OUT" && sha256sum "${files[@]}" >SHA256SUMS)
	say "release archives and $OUT/SHA256SUMS ($((SECONDS - T0))s):"
	sed 's/^/  /' "$OUT/SHA256SUMS" >&2
fi
