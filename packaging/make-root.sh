#!/usr/bin/env bash
# Make a minimal Debian root (debootstrap --variant=minbase) of SUITE in DIR, from the mirror this
# machine's apt already uses (packaging/apt_mirror.py: no mirror host is written in the project).
# scripts/package.sh builds the package's venv in a copy of it; the fresh-root tests install the
# package into another copy. Run as root. About 40 s and 206 MB for bookworm, 55 s for trixie.
#
#   packaging/make-root.sh bookworm /var/tmp/bookworm-base
#   packaging/make-root.sh trixie /var/tmp/trixie-base
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suite="${1:?usage: make-root.sh SUITE DIR}"
dir="${2:?usage: make-root.sh SUITE DIR}"

mirror="$(/usr/bin/python3 "$here/apt_mirror.py" "$suite")"
if [ -e "$dir" ]; then
    echo "make-root.sh: $dir exists; remove it first" >&2
    exit 1
fi
partial="$dir.partial"
rm -rf "$partial"
log="$(mktemp)"
if ! debootstrap --variant=minbase "$suite" "$partial" "$mirror" >"$log" 2>&1; then
    tail -20 "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
mv "$partial" "$dir"
