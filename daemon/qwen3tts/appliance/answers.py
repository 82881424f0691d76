"""What goes back out for an announcement or a command: the event, its MQTT 5 reply, Hermes answers.

`announcement_events()` is used by the intake and by the player for every step of an
announcement's life; `answer()` builds a command's single answer event. Both copy the event to
the request's response topic (already checked by the intake) with its correlation data.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

from qwen3tts.appliance.announcement import Announcement
from qwen3tts.appliance.events import Event, Reply
from qwen3tts.appliance.hermes import HermesError, HermesSayFinished
from qwen3tts.appliance.messages import Message

log = logging.getLogger(__name__)


@dataclass
class IntakeResult:
    """What one inbound message led to: messages to publish, commands for the player."""

    publish: list[Message] = field(default_factory=list)
    commands: list[Message] = field(default_factory=list)
    """Stop, SetVolume and SetVoice for the service to apply (waiting entries are already handled)."""
    accepted: Announcement | None = None


HERMES_FINAL = ("finished", "cancelled", "expired", "rejected", "error")
"""Events after which a Hermes say is over: each sends the one sayFinished it is owed."""


@dataclass(frozen=True)
class Caller:
    """Where answers to one inbound message go besides `<base>/event`."""

    response_topic: str | None = None
    correlation_data: bytes | None = None
    warnings: tuple[str, ...] = ()


def announcement_events(
    ann: Announcement, event: str, reason: str = "", now: float | None = None, warnings: tuple[str, ...] = ()
) -> list[Message]:
    """The `event` message for `ann`, plus its MQTT 5 reply and Hermes answers where they apply."""
    now = time.time() if now is None else now
    ev = Event(
        event=event,
        id=ann.id or None,
        reason=reason,
        t_event=now,
        t_queued=ann.t_queued or None,
        t_started=ann.t_started,
        t_first_audio=ann.t_first_audio,
        t_finished=ann.t_finished,
        cached=True if ann.from_cache and event in ("started", "first_audio", "finished") else None,
        warnings=warnings,
        correlation_data=ann.correlation_data,
    )
    out: list[Message] = [ev]
    if ann.response_topic:
        out.append(Reply(response_topic=ann.response_topic, event=ev))
    if ann.hermes_site_id is not None and event in ("error", "rejected"):
        out.append(
            HermesError(error=reason, context=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id)
        )
    if ann.hermes_site_id is not None and event in HERMES_FINAL:
        out.append(HermesSayFinished(id=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id))
    return out


def answer(event: Event, caller: Caller, now: float, command: Message | None = None) -> IntakeResult:
    """A command's answer event (and its reply), and the command for the player if any."""
    event = replace(event, t_event=now, warnings=caller.warnings, correlation_data=caller.correlation_data)
    publish: list[Message] = [event]
    if caller.response_topic:
        publish.append(Reply(caller.response_topic, event))
    log.info("answered %s with %s", type(command).__name__ if command else "stop", event.event)
    return IntakeResult(publish=publish, commands=[command] if command is not None else [])
