"""Write debian/copyright from copyright.in: the bundled venv's paragraphs filled in.

Run by debian/rules with Debian's python3 on the built venv (standard library only). The licence of
each distribution is what its own metadata declares (License-Expression, else License when it is a
short name, else the `License ::` classifiers); its full text is in its .dist-info directory.

    python3 debian/bundled-licenses.py venv debian/copyright.in >debian/copyright
"""

from __future__ import annotations

import sys
from importlib.metadata import distributions
from pathlib import Path

NAME = "bundled-python-distributions"


def declared_license(meta) -> str:
    expression = (meta.get("License-Expression") or "").strip()
    if expression:
        return expression
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 60:
        return text
    classifiers = [
        c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License ::")
    ]
    return " / ".join(classifiers) or "see its .dist-info directory"


def bundled(venv: Path) -> list[tuple[str, str, str]]:
    (site,) = venv.glob("lib/python3*/site-packages")
    return sorted(
        (dist.metadata["Name"], dist.version, declared_license(dist.metadata))
        for dist in distributions(path=[str(site)])
    )


def main(venv: str, template: str) -> int:
    files = f"Files: venv/*\nCopyright: the authors of each distribution listed under {NAME}\nLicense: {NAME}"
    lines = [
        f"License: {NAME}",
        " Each distribution in /opt/qwen3tts/venv is under its own licence, whose full",
        " text it ships in its .dist-info directory:",
        " .",
    ]
    lines += [f" {name} {version}: {license_name}" for name, version, license_name in bundled(Path(venv))]
    text = Path(template).read_text(encoding="utf-8")
    text = text.replace("@BUNDLED_FILES@", files).replace("@BUNDLED_LICENSE@", "\n".join(lines))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
