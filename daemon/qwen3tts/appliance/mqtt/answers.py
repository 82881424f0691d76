"""What goes back out for an announcement or a command: the event, its MQTT 5 reply, Hermes answers.

`announcement_events()` turns a step of an announcement's life (the announcer's `on_event`, or the
intake's refusal) into messages; `command_answer()` builds a command's single answer event. Both copy
the event to the request's response topic (already checked by the intake) with its correlation data.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.play import Play
from qwen3tts.appliance.mqtt.events import Event, Reply
from qwen3tts.appliance.mqtt.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.mqtt.messages import Message

log = logging.getLogger(__name__)


CACHED_EVENTS = ("started", "first_audio", "finished")
"""Events that say `cached` when the play's audio came from the phrase cache."""

HERMES_FINAL = ("finished", "cancelled", "expired", "rejected", "error")
"""Events after which a Hermes say is over: each sends the one sayFinished it is owed."""


@dataclass(frozen=True)
class Caller:
    """Where answers to one inbound message go besides `<base>/event`."""

    response_topic: str | None = None
    correlation_data: bytes | None = None
    warnings: tuple[str, ...] = ()


def announcement_events(
    ann: Announcement,
    event: str,
    reason: str = "",
    now: float | None = None,
    warnings: tuple[str, ...] = (),
    *,
    zones: tuple[str, ...] = (),
    zone: str | None = None,
    play: Play | None = None,
) -> list[Message]:
    """The `event` message for `ann`, plus its MQTT 5 reply and Hermes answers where they apply.

    `play` is the play the step is part of (its times; whether its audio came from the cache); `zones`
    names the zones the step concerns; `zone` the one zone whose output failed in an `error` that does not
    end the announcement (no sayFinished for it: the other zones play on)."""
    now = time.time() if now is None else now
    ev = Event(
        event=event,
        id=ann.id or None,
        reason=reason,
        t_event=now,
        t_queued=ann.t_queued or None,
        t_started=play.t_started if play is not None else None,
        t_first_audio=play.t_first_audio if play is not None else None,
        t_finished=play.t_finished if play is not None else None,
        cached=True if play is not None and play.from_cache and event in CACHED_EVENTS else None,
        warnings=warnings,
        zones=tuple(zones),
        zone=zone,
        correlation_data=ann.correlation_data,
    )
    out: list[Message] = [ev]
    if ann.response_topic:
        out.append(Reply(response_topic=ann.response_topic, event=ev))
    if ann.hermes_site_id is not None and event in ("error", "rejected"):
        out.append(
            HermesError(error=reason, context=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id)
        )
    if ann.hermes_site_id is not None and event in HERMES_FINAL and zone is None:
        out.append(HermesSayFinished(id=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id))
    return out


def command_answer(caller: Caller, now: float, event: str, **fields) -> list[Message]:
    """A command's answer event (`stopped`, `not_found`, `volume_set`, `voice_set`) and its reply."""
    answer = Event(
        event, t_event=now, warnings=caller.warnings, correlation_data=caller.correlation_data, **fields
    )
    log.info("answered %s%s", event, f" for {fields['id']}" if fields.get("id") else "")
    out: list[Message] = [answer]
    if caller.response_topic:
        out.append(Reply(caller.response_topic, answer))
    return out
