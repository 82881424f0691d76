"""packaging/apt_mirror.py finds the mirror in apt's own sources, in both formats, and nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from conftest import REPO

spec = importlib.util.spec_from_file_location("apt_mirror", REPO / "packaging" / "apt_mirror.py")
apt_mirror = importlib.util.module_from_spec(spec)
spec.loader.exec_module(apt_mirror)


def apt_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_deb822_source_gives_the_uri_serving_the_suite_not_its_security_archive(tmp_path):
    root = apt_dir(
        tmp_path,
        {
            "sources.list.d/debian.sources": (
                "Types: deb\n# a comment\nURIs: http://security.invalid/debian-security\n"
                "Suites: bookworm-security\nComponents: main\n\n"
                "Types: deb-src deb\nURIs: http://mirror.invalid/debian/\nSuites: bookworm bookworm-updates\n"
                "Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n key\n"
            )
        },
    )
    assert apt_mirror.mirror_for("bookworm", root) == "http://mirror.invalid/debian"
    assert apt_mirror.mirror_for("trixie", root) is None


def test_one_line_sources_with_options_and_disabled_stanzas(tmp_path):
    root = apt_dir(
        tmp_path,
        {
            "sources.list": "# deb http://commented.invalid/debian bookworm main\n"
            "deb-src http://src.invalid/debian bookworm main\n",
            "sources.list.d/a.sources": (
                "Enabled: no\nTypes: deb\nURIs: http://off.invalid/debian\nSuites: bookworm\n"
            ),
            "sources.list.d/b.list": (
                "deb [arch=amd64 signed-by=/k.gpg] http://on.invalid/debian bookworm main\n"
            ),
            "sources.list.d/c.list.disabled": "deb http://ignored.invalid/debian bookworm main\n",
        },
    )
    assert apt_mirror.mirror_for("bookworm", root) == "http://on.invalid/debian"


def test_the_command_fails_with_a_message_when_no_source_serves_the_suite(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(apt_mirror, "APT_DIR", apt_dir(tmp_path, {}))
    assert apt_mirror.main(["bookworm"]) == 1
    assert "no 'deb' source for suite 'bookworm'" in capsys.readouterr().err


def test_a_suite_no_source_names_is_served_by_the_archive_of_the_machines_own_release(
    capsys, monkeypatch, tmp_path
):
    sources = "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
    monkeypatch.setattr(apt_mirror, "APT_DIR", apt_dir(tmp_path, {"sources.list.d/d.sources": sources}))
    os_release = tmp_path / "os-release"
    os_release.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\n')
    monkeypatch.setattr(apt_mirror, "OS_RELEASE", os_release)
    assert apt_mirror.main(["trixie"]) == 0
    out, err = capsys.readouterr()
    assert out == "http://mirror.invalid/debian\n"
    assert "no source names trixie: using bookworm's archive" in err


def test_without_a_source_for_the_own_release_either_the_command_fails(capsys, monkeypatch, tmp_path):
    sources = "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\n"
    monkeypatch.setattr(apt_mirror, "APT_DIR", apt_dir(tmp_path, {"sources.list.d/d.sources": sources}))
    os_release = tmp_path / "os-release"
    os_release.write_text("VERSION_CODENAME=noble\n")  # a machine whose own release apt does not name
    monkeypatch.setattr(apt_mirror, "OS_RELEASE", os_release)
    assert apt_mirror.main(["trixie"]) == 1
    assert "no 'deb' source for suite 'trixie'" in capsys.readouterr().err
    os_release.unlink()  # nor when the machine's release is unknown
    assert apt_mirror.own_release(os_release) is None
    assert apt_mirror.main(["trixie"]) == 1
