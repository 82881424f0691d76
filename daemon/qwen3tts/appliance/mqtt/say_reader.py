"""A `say` payload read straight into the `Announcement` it queues: steps 4, 5 and 7 of validate.py for a say.

`read_say` turns the bytes into the say's fields, each by its reader (fields.py), as a plain mapping whose
keys are `admit`'s keywords; `for_zone` applies a zone topic; `admit` checks them against the
configuration (policy.py) and builds the frozen `Announcement`. There is no record in between: the
fields of a say live only as these keywords, the Announcement is the one record of what was asked, and
what only the door needs of a say (its ttl, expires_at and MQTT 5 message expiry, whether it came as
plain text) ends here, folded into the Announcement's deadline. `say_payload` is the reader's inverse,
for what writes a say (the spool's check of an entry, spooled.py; tests).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.fields import (
    SESSION_MAX_CHARS,
    chime_of,
    field_of,
    id_of,
    name_of,
    number_of,
    priority_of,
    seed_of,
    zones_of,
)
from qwen3tts.appliance.mqtt.messages import CHIME_VALUES, Inbound, MqttMeta
from qwen3tts.appliance.mqtt.payload import encode_json
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError
from qwen3tts.synthesis import checked_instruct, checked_speech
from qwen3tts.text.checks import check_clean, decode_json_object, decode_text, quote

SayFields = dict[str, Any]
"""A say's fields as read, by the names of `admit`'s keywords (a mapping, not a record: see above)."""


def read_say(payload: bytes, meta: MqttMeta | Inbound | None = None) -> SayFields:
    """A `say` payload: plain UTF-8 text, or a JSON object with `text` and the fields below; `meta`
    carries the MQTT 5 properties (response topic, correlation data, message expiry)."""
    meta = meta or MqttMeta()
    extra = {"response_topic": meta.response_topic, "correlation_data": meta.correlation_data,
             "message_expiry": meta.message_expiry}  # fmt: skip
    text = decode_text(payload)
    if not text.lstrip().startswith("{"):
        return {"text": check_clean("text", text, allow_line_breaks=True).strip(), **extra}
    return _fields_of(decode_json_object(text), extra)


def _fields_of(obj: dict[str, Any], extra: dict[str, Any]) -> SayFields:
    if "text" not in obj:
        raise RequestError("missing field 'text'")
    return {
        "text": field_of(obj, "text", str, ""),
        "id": id_of(obj),
        "lang": name_of(obj, "lang"),
        "voice": name_of(obj, "voice") or name_of(obj, "speaker"),
        "instruct": field_of(obj, "instruct", str),
        "priority": priority_of(obj),
        "volume": number_of(obj, "volume"),
        "chime": chime_of(obj),
        "repeat": field_of(obj, "repeat", int, 1),
        "repeat_interval": number_of(obj, "repeat_interval") or 0.0,
        "ttl": number_of(obj, "ttl"),
        "expires_at": number_of(obj, "expires_at"),  # absolute, Unix time in seconds
        "interrupt": field_of(obj, "interrupt", bool),
        "session_id": name_of(obj, "sessionId", SESSION_MAX_CHARS),
        "normalize": field_of(obj, "normalize", bool),
        "ssml": field_of(obj, "ssml", bool),
        "seed": seed_of(obj),
        "cache": field_of(obj, "cache", bool),
        "zones": zones_of(obj),
        **extra,
    }


def for_zone(say: SayFields, zone: str) -> SayFields:
    """A message on one zone's topic never reaches another zone."""
    zones = say.get("zones", ())
    if zones not in ((), (zone,)):
        raise RequestError(f"field 'zones' {list(zones)} disagrees with the zone topic of {quote(zone)}")
    return {**say, "zones": (zone,)}


def admit(
    policy: AnnouncementPolicy, now: float, *, text: str, id: str | None = None,
    priority: Priority = Priority.NORMAL, lang: str | None = None, voice: str | None = None,
    instruct: str | None = None, volume: float | None = None, chime: str | None = None,
    interrupt: bool | None = None, repeat: int = 1, repeat_interval: float = 0.0, ttl: float | None = None,
    expires_at: float | None = None, message_expiry: int | None = None, response_topic: str | None = None,
    correlation_data: bytes | None = None, session_id: str | None = None, normalize: bool | None = None,
    ssml: bool | None = None, seed: int | None = None, cache: bool | None = None, zones: tuple[str, ...] = (),
) -> Announcement:  # fmt: skip
    """The announcement for a valid say (its fields as `read_say` reads them), queued at `now`
    (`warnings` says what was ignored); else RequestError naming the first problem. A request the bundle
    cannot serve is refused (or adjusted, with a warning) here, before it is queued, never at synthesis."""
    checked, ssml_warnings = checked_speech(text, ssml, policy.max_text_chars, policy.catalog, policy.chimes)
    _check_numbers(policy, volume, repeat, repeat_interval, ttl)
    if chime is not None and chime not in CHIME_VALUES:
        raise RequestError(f"unknown chime {quote(chime)}; expected one of {', '.join(CHIME_VALUES)}")
    voice = policy.catalog.resolve(voice) if voice is not None else None
    lang = policy.catalog.resolve_language(lang) if lang is not None else None
    instruct, warnings = checked_instruct(instruct, policy.max_text_chars, policy.supports_instruct)
    _check_zones(zones, policy.zones)
    return Announcement(
        id=id or str(uuid.uuid4()),
        text=checked,
        priority=priority,
        lang=lang,
        voice=voice,
        instruct=instruct,
        volume=volume,
        chime=chime,
        interrupt=interrupt if interrupt is not None else priority is not Priority.NORMAL,
        repeat=repeat,
        repeat_interval=repeat_interval,
        expires_at=policy.expiry(ttl=ttl, expires_at=expires_at, message_expiry=message_expiry),
        response_topic=response_topic,
        correlation_data=correlation_data,
        session_id=session_id,
        normalize=normalize,
        ssml=ssml,
        seed=seed,
        cache=cache,
        zones=zones,
        t_queued=now,
        warnings=warnings + ssml_warnings,
    )


def _check_numbers(
    policy: AnnouncementPolicy, volume: float | None, repeat: int, repeat_interval: float, ttl: float | None
) -> None:
    if volume is not None and not 0.0 <= volume <= 1.0:
        raise RequestError(f"volume must be between 0 and 1, got {volume}")
    if not 1 <= repeat <= policy.max_repeat:
        raise RequestError(f"repeat must be between 1 and {policy.max_repeat}, got {repeat}")
    if not 0.0 <= repeat_interval <= policy.max_repeat_interval:
        raise RequestError(f"repeat_interval must be 0..{policy.max_repeat_interval:g} s")
    if ttl is not None and ttl <= 0:
        raise RequestError(f"ttl must be positive, got {ttl}")


def _check_zones(zones: tuple[str, ...], box_zones: tuple[str, ...]) -> None:
    """A say may name only zones this box has (no zones configured: not checked)."""
    unknown = [zone for zone in zones if box_zones and zone not in box_zones]
    if unknown:
        names = ", ".join(quote(zone) for zone in unknown)
        raise RequestError(f"unknown zone {names}; this box has {', '.join(box_zones)}")


_LEFT_OUT = {"priority": Priority.NORMAL, "repeat": 1, "repeat_interval": 0.0, "zones": ()}
"""Fields a say payload leaves out at their default (the reader reads them back as these)."""
_NOT_PAYLOAD = ("response_topic", "correlation_data", "message_expiry")
"""The MQTT 5 properties: published beside the payload, never in it."""


def say_payload(say: Mapping[str, Any]) -> bytes:
    """The JSON `say` payload `read_say` reads back as `say` (keys as `admit`'s keywords); what is None or
    at its default is left out."""
    body = {key: value for key, value in say.items()
            if value is not None and key not in _NOT_PAYLOAD
            and not (key in _LEFT_OUT and value == _LEFT_OUT[key])}  # fmt: skip
    if "priority" in body:
        body["priority"] = body["priority"].label
    if "session_id" in body:
        body["sessionId"] = body.pop("session_id")
    if "zones" in body:
        body["zones"] = list(body["zones"])
    return encode_json(body)
