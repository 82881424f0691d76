"""Print the Debian mirror this machine's apt already uses, so a root is bootstrapped from it.

No mirror host is written anywhere in the project: scripts/package.sh and the fresh-root tests ask
this script at run time. It reads /etc/apt/sources.list and /etc/apt/sources.list.d/*.list (one-line
format) and *.sources (deb822), and prints the first `deb` URI that serves SUITE itself (not
SUITE-security or SUITE-updates, which debootstrap cannot start from). When no source names SUITE
(a bookworm machine's apt knows nothing of trixie), it prints the URI that serves this machine's own
release: a Debian archive carries every release, so the same mirror serves the other one. Standard
library only: it runs under the system python3 before any venv exists.

    python3 packaging/apt_mirror.py bookworm      ->  http://<mirror>/debian
    python3 packaging/apt_mirror.py trixie        ->  the same, on a bookworm machine
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

APT_DIR = Path("/etc/apt")
OS_RELEASE = Path("/etc/os-release")


def one_line_entries(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(type, uri, suites) of every `deb ...` line; `[option=value ...]` blocks are skipped."""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest.startswith("["):
            rest = rest.partition("]")[2].strip()
        fields = rest.split()
        if len(fields) >= 2:
            yield kind, fields[0], [fields[1]]


def deb822_entries(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(type, uri, suites) for every type and URI of every stanza of a .sources file."""
    for stanza in _stanzas(text):
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        suites = stanza.get("suites", "").split()
        for kind in stanza.get("types", "").split():
            for uri in stanza.get("uris", "").split():
                yield kind, uri, suites


def _stanzas(text: str) -> Iterator[dict[str, str]]:
    fields: dict[str, str] = {}
    key = None
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if fields:
                yield fields
            fields, key = {}, None
        elif raw[0] in " \t" and key:  # a continuation line (e.g. an inline Signed-By key)
            fields[key] += " " + raw.strip()
        else:
            name, _, value = raw.partition(":")
            key = name.strip().lower()
            fields[key] = value.strip()


def mirror_for(suite: str, apt_dir: Path | None = None) -> str | None:
    """The first `deb` URI in apt's sources that carries `suite`; None when none does."""
    apt_dir = apt_dir or APT_DIR
    files = [apt_dir / "sources.list"]
    files += sorted((apt_dir / "sources.list.d").glob("*.list"))
    files += sorted((apt_dir / "sources.list.d").glob("*.sources"))
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        entries = deb822_entries(text) if path.suffix == ".sources" else one_line_entries(text)
        for kind, uri, suites in entries:
            if kind == "deb" and suite in suites:
                return uri.rstrip("/")
    return None


def own_release(os_release: Path | None = None) -> str | None:
    """This machine's release codename (VERSION_CODENAME in /etc/os-release), None when unknown."""
    try:
        text = (os_release or OS_RELEASE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "VERSION_CODENAME":
            return value.strip().strip("\"'") or None
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: apt_mirror.py SUITE", file=sys.stderr)
        return 2
    suite = argv[0]
    uri = mirror_for(suite)
    if uri is None:
        own = own_release()
        uri = mirror_for(own) if own and own != suite else None
        if uri is None:
            print(f"apt_mirror.py: no 'deb' source for suite {suite!r} in {APT_DIR}", file=sys.stderr)
            return 1
        print(f"apt_mirror.py: no source names {suite}: using {own}'s archive", file=sys.stderr)
    print(uri)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
