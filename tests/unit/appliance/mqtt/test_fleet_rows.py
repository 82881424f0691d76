"""`qwen3tts fleet`'s reading of retained messages: one row per box, hostile payloads shown as `?`."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from qwen3tts.appliance.mqtt.fleet import boxes, table


def status(**fields) -> bytes:
    return json.dumps(fields).encode()


def test_a_box_is_one_row_from_its_status_and_availability():
    retained = [
        (
            "qwen3tts/kiosk/status",
            status(
                state="idle",
                queue_depth=2,
                version="1.2",
                zones=["hall"],
                pool={"group": "g", "state": "taking"},
            ),
        ),
        ("qwen3tts/kiosk/availability", b"online"),
        ("qwen3tts/shop/availability", b"offline"),
        ("qwen3tts/shop/status", status(state="speaking", queue_depth=1)),
        ("qwen3tts/a/b/status", status(state="idle")),  # not a box's topic
    ]
    rows = [b.row() for b in boxes("qwen3tts", retained)]
    assert [r["site"] for r in rows] == ["kiosk", "shop"]
    kiosk, shop = rows
    assert (kiosk["state"], kiosk["queue_depth"], kiosk["zones"], kiosk["version"]) == (
        "idle",
        2,
        ["hall"],
        "1.2",
    )
    assert (shop["state"], shop["last_state"]) == ("offline", "speaking")
    text = table(rows)
    assert "g:taking" in text.splitlines()[1] and text.splitlines()[2].startswith("shop")


def test_wrong_types_are_shown_as_unknown_and_unreadable_status_names_why():
    retained = [
        ("qwen3tts/x/status", status(state=7, queue_depth=-1, version=["1"], zones="hall")),
        ("qwen3tts/y/status", b"\xff not json"),
        ("qwen3tts/z/status", b"[1, 2]"),
    ]
    x, y, z = (b.row() for b in boxes("qwen3tts", retained))
    assert (x["state"], x["queue_depth"], x["version"], x["zones"]) == ("?", "?", "?", "?")
    assert y["problem"].startswith("status unreadable") and z["problem"] == "status is not a JSON object"


def test_an_unprintable_site_or_state_cannot_break_the_table_line():
    rows = [b.row() for b in boxes("qwen3tts", [("qwen3tts/evil\x1b[2J/status", status(state="a\nb"))])]
    assert "\n" not in table(rows).splitlines()[1] and "\x1b" not in table(rows)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.sampled_from(["state", "queue_depth", "zones", "pool", "engine", "version",
                                        "problem", "current_id"]), json_values))  # fmt: skip
def test_any_json_status_gives_a_row_and_a_table(fields):
    rows = [b.row() for b in boxes("qwen3tts", [("qwen3tts/s/status", json.dumps(fields).encode())])]
    assert rows[0]["site"] == "s" and len(table(rows).splitlines()) == 2
