"""One doctor check's result, and how a list of them is shown (text with ✔/✘, or JSON) and scored."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

OK, FAIL = "✔", "✘"


@dataclass(frozen=True)
class Check:
    """What one check found; `fix` says what to do when it failed."""

    name: str
    """Short name of the link, e.g. "OpenVINO", "GPU", "broker"."""
    ok: bool
    detail: str
    """What was found, in one line."""
    fix: str = ""
    """What to do about a failure (empty when ok)."""
    needed: bool = True
    """False for what the appliance can run without (the GPU when the CPU is in the plan)."""


def render_text(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        optional = "" if check.needed or check.ok else " (optional)"
        lines.append(f"{OK if check.ok else FAIL} {check.name}{optional}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"    fix: {check.fix}")
    broken = [c.name for c in checks if not c.ok and c.needed]
    lines.append(f"broken: {', '.join(broken)}" if broken else "everything needed works")
    return "\n".join(lines) + "\n"


def render_json(checks: list[Check]) -> str:
    document = {"ok": exit_code(checks) == 0, "checks": [dataclasses.asdict(c) for c in checks]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def exit_code(checks: list[Check]) -> int:
    """1 when something needed is broken; optional failures are reported but do not fail the doctor."""
    return 1 if any(not c.ok and c.needed for c in checks) else 0
