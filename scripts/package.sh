#!/usr/bin/env bash
# Build the Debian package of this checkout for one Debian release: dist/qwen3tts_<version>_amd64.deb.
#
#   sudo scripts/package.sh [--suite SUITE] [--out DIR] [--base ROOT] [--work DIR]
#
# SUITE is the release the package is for (default: this machine's, e.g. bookworm; trixie for
# Debian 13). The venv must run on that release's python3, not on whatever python built it (a pyenv
# interpreter here). So, the way dh-virtualenv builds inside the target release:
#   1. a build root: a copy of a minimal root of SUITE (packaging/make-root.sh, debootstrap; made
#      once and kept in var/package/ unless --base names one) with that release's python3, which
#      says which Python (3.11 on bookworm, 3.13 on trixie) and which glibc the wheels are for;
#   2. wheels: the project and its pure-Python dependencies built with this checkout's pip (.venv),
#      then the whole set resolved by that pip for the target's Python and glibc (binary wheels
#      only, so nothing is compiled for the wrong interpreter), at the versions constraints.txt pins
#      (the ones the tests ran on);
#   3. the venv: created at its final path /opt/qwen3tts/venv inside the build root with the root's
#      python3, the wheels installed offline (pip --no-index), byte-compiled hash-based (the .pyc
#      stay valid whatever mtimes dpkg gives the files);
#   4. debhelper (packaging/debian) makes the package from that venv and the checkout's unit and
#      configuration, on this machine, and compiles native/ (cmake, g++) against the venv's openvino
#      into the venv (libqwen3tts_native.so, the native decode path). It links this machine's libstdc++
#      and glibc (the Depends say which): build on a release no newer than SUITE.
# The changelog's version is the package for the changelog's release (bookworm); a package for
# another release gets +deb<release> appended (0.1.0-1+deb13 for trixie: newer than bookworm's
# 0.1.0-1, so a box upgraded to Debian 13 takes it as an upgrade). --work DIR (default
# var/package) keeps the base roots, the wheels and the last venv between builds. Run as root
# (chroot). Needs debootstrap and debhelper: scripts/setup.sh installs them.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

version=""
out="$repo/dist"
base=""
work="$repo/var/package"
suite="$(. /etc/os-release && echo "$VERSION_CODENAME")"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$(realpath -m "$2")"; shift 2 ;;
        --base) base="$(realpath -m "$2")"; shift 2 ;;
        --suite) suite="$2"; shift 2 ;;
        --work) work="$(realpath -m "$2")"; shift 2 ;;
        *) echo "package.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
cd "$repo"  # after the arguments: their relative paths are the caller's
if [ "$(id -u)" -ne 0 ]; then
    echo "package.sh: run as root (the venv is built in a chroot of $suite)" >&2
    exit 1
fi
for tool in debootstrap dpkg-buildpackage dh cmake g++; do
    command -v "$tool" >/dev/null || { echo "package.sh: $tool missing: run scripts/setup.sh" >&2; exit 1; }
done
pip_python="$repo/.venv/bin/python"
[ -x "$pip_python" ] || { echo "package.sh: no .venv here: run scripts/setup.sh" >&2; exit 1; }

started=$(date +%s)
step() { echo "package.sh: [$(( $(date +%s) - started ))s] $*"; }

upstream="$("$pip_python" -c 'import qwen3tts; print(qwen3tts.__version__)')"
changelog_version="$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)"
if [ "${changelog_version%-*}" != "$upstream" ]; then
    echo "package.sh: packaging/debian/changelog is at $changelog_version but qwen3tts is $upstream:" \
         "add a changelog entry" >&2
    exit 1
fi

root="$work/build-root"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }

# make_build_root: $root, a copy of the base with the release's python3.
make_build_root() {
    step "build root: a copy of $base with $suite's python3"
    rm -rf "$root"
    cp -a "$base" "$root"
    in_root apt-get update -qq >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; exit 1; }
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 \
        >>"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; exit 1; }
}

# build_venv DIR: DIR/venv, made at /opt/qwen3tts/venv in the build root with the release's python3.
build_venv() {
    [ -d "$root" ] || make_build_root
    step "venv /opt/qwen3tts/venv with $suite's /usr/bin/python$target_python"
    mkdir -p "$root/tmp/wheels"
    cp "$wheels"/*.whl "$root/tmp/wheels/"
    local pip_wheel
    pip_wheel="$(cd "$root/tmp/wheels" && ls pip-*.whl)"
    in_root "/usr/bin/python$target_python" -m venv --without-pip /opt/qwen3tts/venv
    # SOURCE_DATE_EPOCH makes pip's byte-compilation hash-based (PEP 552), so the .pyc stay valid
    # whatever mtimes dpkg gives the files; pip runs from its wheel, so the venv holds no pip and
    # nothing can be installed into it behind dpkg's back.
    in_root env SOURCE_DATE_EPOCH="$(dpkg-parsechangelog -l packaging/debian/changelog -S Timestamp)" \
        /opt/qwen3tts/venv/bin/python "/tmp/wheels/$pip_wheel/pip" install -q --no-index \
        --find-links /tmp/wheels --no-cache-dir --disable-pip-version-check qwen3tts \
        >"$work/venv.log" 2>&1 || { tail -20 "$work/venv.log" >&2; exit 1; }
    in_root /opt/qwen3tts/venv/bin/qwen3tts --version >/dev/null
    # Wheels that carry every platform's library (audiostretchy: a macOS .dylib and a Windows .dll
    # beside its Linux .so): what Linux can never load goes, and lintian has nothing to say about it.
    find "$root/opt/qwen3tts/venv" -type f \( -name '*.dylib' -o -name '*.dll' \) -delete
    # The wheels' own test suites (numpy/_core/tests, scipy/*/tests, sklearn/*/tests, ...: about 70 of the
    # venv's 700 MB) are never imported by the daemon: the appliance's disk, the download and every
    # install and upgrade are that much smaller without them (tests/integration/packaging checks).
    find "$root/opt/qwen3tts/venv/lib" -type d -name tests -prune -exec rm -rf {} +
    mkdir -p "$1"
    mv "$root/opt/qwen3tts/venv" "$1/venv"
}

mkdir -p "$work"
if [ -z "$base" ]; then
    base="$work/base-$suite"
    [ -d "$base" ] || { step "making a minimal $suite root in $base (once)"; packaging/make-root.sh "$suite" "$base"; }
fi

# The package's version: the changelog's for the changelog's release, +deb<N> for another one.
distribution="$(dpkg-parsechangelog -l packaging/debian/changelog -S Distribution)"
if [ "$suite" != "$distribution" ]; then
    release="$(. "$base/etc/os-release" && echo "${VERSION_ID:-}")"
    [ -n "$release" ] || { echo "package.sh: $base/etc/os-release has no VERSION_ID" >&2; exit 1; }
    version="$changelog_version+deb$release"
fi

# What the wheels are for: the release's Python (3.11, 3.13) and glibc (2.36, 2.41), asked once of
# a build root and kept beside the base root.
target="$work/target-$suite"
rm -rf "$root"  # a build root an interrupted build left behind
if [ ! -s "$target" ]; then
    make_build_root
    in_root sh -c 'python3 -c "import sys; print(\"%d.%d\" % sys.version_info[:2])"; getconf GNU_LIBC_VERSION' \
        | paste -s -d ' ' >"$target.new"
    mv "$target.new" "$target"
fi
read -r target_python _ target_glibc <"$target"  # e.g. "3.13 glibc 2.41"

step "wheels of qwen3tts $upstream and its dependencies for Python $target_python, glibc $target_glibc"
built="$work/wheels-built"
wheels="$work/wheels"
sources="$work/sources"
rm -rf "$built" "$wheels" "$sources"
# The project's wheel is built from a copy of what goes into it: setuptools builds in the source tree
# (build/, daemon/*.egg-info), so two builds of one checkout at once (one per release) would share those,
# and a build/ left in the checkout from an older one could leak into the wheel.
mkdir -p "$sources"
tar -C "$repo" --exclude=__pycache__ --exclude='*.egg-info' -cf - pyproject.toml README.md daemon \
    | tar -C "$sources" -xf -
# the changelog's time stamp makes the project's own wheel the same bytes from the same checkout
SOURCE_DATE_EPOCH="$(dpkg-parsechangelog -l packaging/debian/changelog -S Timestamp)" \
    "$pip_python" -m pip wheel -q --disable-pip-version-check --constraint "$repo/constraints.txt" \
    --wheel-dir "$built" "$sources" pip \
    >"$work/wheels.log" 2>&1 || { tail -20 "$work/wheels.log" >&2; exit 1; }
rm -rf "$sources"
# The same set resolved for the target: the pure wheels just built are taken as they are, every
# binary one is the release's (cp313 for trixie), for each manylinux level its glibc runs.
platforms=()
for (( minor = ${target_glibc#2.}; minor >= 5; minor-- )); do
    platforms+=(--platform "manylinux_2_${minor}_x86_64")
done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
"$pip_python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --constraint "$repo/constraints.txt" \
    --python-version "$target_python" --implementation cp --abi "cp${target_python/./}" "${platforms[@]}" \
    --find-links "$built" --dest "$wheels" "$built"/qwen3tts-*.whl "$built"/pip-*.whl >>"$work/wheels.log" 2>&1 \
    || { tail -20 "$work/wheels.log" >&2; exit 1; }
rm -rf "$built"

# The venv depends only on the wheels, the target release and build_venv itself: one built the same
# way from the same wheels is reused (a package built again from an unchanged venv skips 1-2 minutes).
key="$suite-$( (cat "$wheels"/*.whl; declare -f build_venv) | sha256sum | cut -c1-16)"
cache="$work/venv-cache/$key"
if [ -d "$cache/venv" ]; then
    step "venv: the one built from the same wheels ($cache)"
else
    rm -rf "$work/venv-cache/$suite-"*
    build_venv "$cache"
fi
rm -rf "$root"

step "debhelper"
src="$work/src/qwen3tts-$upstream"
rm -rf "$work/src"
mkdir -p "$src/upstream"
cp -a packaging/debian "$src/debian"
cp -al "$cache/venv" "$src/venv"  # dh_install copies it; nothing writes here
cp systemd/qwen3tts.service config/qwen3tts.yaml README.md docs/operations.md "$src/upstream/"
mkdir -p "$src/native"  # the sources only: a checkout's native/build is for its own venv's openvino
cp -a native/CMakeLists.txt native/src "$src/native/"
if [ -n "$version" ] && [ "$version" != "$changelog_version" ]; then
    {
        echo "qwen3tts ($version) $suite; urgency=medium"
        echo
        echo "  * Build for $suite of $(git describe --always --dirty 2>/dev/null || echo 'this checkout')."
        echo
        echo " -- $(dpkg-parsechangelog -l packaging/debian/changelog -S Maintainer)  $(date -R)"
        echo
        cat packaging/debian/changelog
    } >"$src/debian/changelog"
fi
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$work/dpkg-buildpackage.log" 2>&1 \
    || { tail -30 "$work/dpkg-buildpackage.log" >&2; exit 1; }

mkdir -p "$out"
deb="$(cd "$work/src" && ls qwen3tts_*_amd64.deb)"
mv "$work/src/$deb" "$out/$deb"
rm -rf "$work/src"
step "$out/$deb ($(du -m "$out/$deb" | cut -f1) MB)"
