"""The MQTT door's validator: every rule an inbound MQTT message must pass, in the order they apply.

`validate(inbound, topics, policy, hermes, now)`, the one entry point, takes a message as paho handed it
to the intake (`Inbound`: topic, payload bytes, MQTT 5 properties) and returns the validated message (a
say as the `Announcement` to queue), a `Rejection` with the reason of its `rejected` event and the
caller's id, or `Ignored` for what is not ours to answer. No payload makes it raise. The walk:

1. topic: one we subscribe to (routing.py `inbound_type`), else ignored. Home Assistant's birth and a
   satellite's playFinished are notices, not requests: never answered, dropped when unreadable or retained.
2. retain: a retained say or command is refused (`RETAINED_REASON`).
3. size: at most the topic's limit (`say`, Hermes say: `max_payload_bytes`; commands: messages.py
   `COMMAND_MAX_BYTES`), checked before a byte is decoded.
4. bytes -> typed message: strict UTF-8, a JSON object (bounded depth and numbers, clean strings) or
   for `say` plain text; each field by its reader (fields.py: types, bool is no number, finite numbers,
   ids, short one-line names, ...): say_reader.py `read_say` lists a say's (read into the keywords of
   `admit`, no record of its own), controls.py and hermes.py the others'.
5. zone topic: a say on `<zone_base>/<zone>/say` is for that zone; a `zones` field there must agree.
6. Hermes: a say (valid or not) for a siteId not ours is ignored; ours becomes a say's fields with that
   site's zones (hermes_sites.py `say_fields`).
7. content (say_reader.py `admit`, which builds the `Announcement`), against the configuration
   (policy.py): text or SSML, volume, repeat, repeat_interval, ttl, chime, voice, lang, instruct, the
   zones of this box; `voice/set`'s voice.

Shared with the HTTP and Wyoming doors, in one place each, so a rule gives the same reason at every door:
- bytes -> text -> JSON object, clean strings, `quote`: text/checks.py (servers/http_request.py reads
  HTTP bodies with it; servers/wyoming_events.py checks Wyoming's strings with its `check_clean`);
- text and SSML (clean, not empty, length, well-formed, `<voice>` names): synthesis.py `checked_speech`;
- the style instruction (`instruct`; HTTP `instructions`): synthesis.py `checked_instruct`;
- voice and language names: voices/catalog.py `VoiceCatalog.resolve` and `resolve_language`.

Run-time state is checked by its owner: a duplicate id or a full queue by the announcer, the backlog
of answers by backlog.py, a response topic by the intake (a warning, never a refusal: topics.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.controls import SetVoice
from qwen3tts.appliance.mqtt.fields import SESSION_MAX_CHARS, field_of, id_of, name_of, number_of
from qwen3tts.appliance.mqtt.hermes import HermesPlayFinished, HermesSay
from qwen3tts.appliance.mqtt.hermes_sites import HermesSites
from qwen3tts.appliance.mqtt.messages import HomeAssistantStatus, Inbound, Message, Say
from qwen3tts.appliance.mqtt.payload import salvage, salvage_id, salvage_name
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.routing import inbound_type
from qwen3tts.appliance.mqtt.say_reader import SayFields, admit, for_zone, read_say
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.errors import RequestError
from qwen3tts.text.checks import decode_json_object, decode_text, quote

RETAINED_REASON = "retained commands are ignored; publish without the retain flag"


@dataclass(frozen=True)
class Rejection:
    """A refused request: the reason for its `rejected` event, its kind, and the caller's names as read
    (else salvaged from the payload) for the answer: its id, a Hermes say's siteId and sessionId."""

    reason: str
    kind: type[Message]
    id: str | None = None
    hermes_site_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class Ignored:
    """A message that is not ours to answer (another topic or siteId, a bad notice): only logged."""

    why: str
    level: int = logging.INFO


def validate(
    inbound: Inbound, topics: Topics, policy: AnnouncementPolicy, hermes: HermesSites, now: float
) -> Message | Announcement | Rejection | Ignored:
    """The validated message (a say as its `Announcement`, queued at `now`), a Rejection or Ignored."""
    kind = inbound_type(topics, inbound.topic)
    if kind is None:
        return Ignored("ignoring a message on a topic we do not serve", logging.WARNING)
    if kind in (HomeAssistantStatus, HermesPlayFinished):
        return _notice(kind, inbound, topics)
    if inbound.retain:
        return _refused(RETAINED_REASON, kind, inbound, hermes)
    try:
        message = read(topics, inbound, say_max_bytes=policy.max_payload_bytes)
    except RequestError as exc:
        return _refused(str(exc), kind, inbound, hermes)
    if isinstance(message, HermesSay) and not hermes.speaks_for(message.site_id):
        return Ignored("ignoring a Hermes say for another siteId")
    try:
        return _checked(message, inbound, policy, hermes, now)
    except RequestError as exc:
        return _refused(str(exc), kind, inbound, hermes, message)


def _refused(
    reason: str,
    kind: type[Message],
    inbound: Inbound,
    hermes: HermesSites,
    message: Message | SayFields | None = None,
) -> Rejection | Ignored:
    """The rejection, named as far as the payload can be read (a say by the id read from it, which
    `admit` refused); an invalid Hermes say is answered only for one of our sites (another site's TTS
    answers its own)."""
    read_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    caller_id = read_id or salvage_id(inbound.payload)
    if kind is not HermesSay:
        return Rejection(reason, kind, caller_id)
    raw = salvage(inbound.payload)
    site = getattr(message, "site_id", None) or salvage_name(raw, "siteId") or "default"
    if not hermes.speaks_for(site):
        return Ignored("ignoring an invalid Hermes say for another siteId")
    session = getattr(message, "session_id", None) or salvage_name(raw, "sessionId")
    return Rejection(reason, kind, caller_id, site, session)


def _notice(kind: type[Message], inbound: Inbound, topics: Topics) -> Message | Ignored:
    if inbound.retain and kind is HermesPlayFinished:
        return Ignored("ignoring a retained Hermes playFinished", logging.DEBUG)  # says nothing of a play now
    try:
        return read(topics, inbound)
    except RequestError as exc:
        if kind is HermesPlayFinished:
            return Ignored(f"ignoring a bad Hermes playFinished: {exc}", logging.WARNING)
        return Ignored(f"ignoring a Home Assistant status that is none: {exc}", logging.DEBUG)


def _checked(
    message: Message | SayFields,
    inbound: Inbound,
    policy: AnnouncementPolicy,
    hermes: HermesSites,
    now: float,
) -> Message | Announcement:
    """Step 7: the rules that depend on the configuration; RequestError naming the first broken one."""
    if isinstance(message, dict):  # a say's fields, read by say_reader.py
        return admit(policy, now, **message)
    if isinstance(message, HermesSay):
        ann = admit(policy, now, **hermes.say_fields(message, inbound, policy.zones))
        return replace(ann, hermes_site_id=message.site_id, session_id=message.session_id)
    if isinstance(message, SetVoice):
        return SetVoice(policy.catalog.resolve(message.voice))
    return message


# --- steps 3 to 5: bytes -> a typed message ---------------------------------------------------------


def read(topics: Topics, inbound: Inbound, *, say_max_bytes: int = 65536) -> Message | SayFields:
    """The typed message of a topic we serve (a say: its fields, say_reader.py), its size checked before
    anything is decoded."""
    cls = inbound_type(topics, inbound.topic)
    if cls is None:
        raise RequestError(f"no handler for topic {quote(inbound.topic, 80)}")
    payload = check_size(inbound.payload, cls.max_bytes or say_max_bytes)
    if cls is HermesSay:
        return read_hermes_say(payload)
    if cls is not Say:
        return cls.from_mqtt(inbound.topic, payload, inbound)
    say = read_say(payload, inbound)
    zone = topics.zone_of(inbound.topic)
    return say if zone is None else for_zone(say, zone)


def check_size(payload: bytes, limit: int) -> bytes:
    if len(payload) > limit:
        raise RequestError(f"payload too large ({len(payload)} bytes > {limit})")
    return payload


def read_hermes_say(payload: bytes) -> HermesSay:
    """`hermes/tts/say`: a JSON object {text, id, lang, volume, siteId, sessionId}."""
    obj = decode_json_object(decode_text(payload))
    return HermesSay(
        text=field_of(obj, "text", str, ""),
        id=id_of(obj),
        lang=name_of(obj, "lang"),
        volume=number_of(obj, "volume"),
        site_id=name_of(obj, "siteId", SESSION_MAX_CHARS) or "default",
        session_id=name_of(obj, "sessionId", SESSION_MAX_CHARS),
    )
