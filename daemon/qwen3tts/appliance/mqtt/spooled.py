"""A spooled announcement read at start, checked again by the door that accepted it.

The spool is input too: a file edited by hand, written by an older version with other limits, or damaged
on disk must not play what the door would have refused (a 100,000-character text, a `not_before` that
never comes). So each entry is turned back into the `say` payload it came from (say_reader.py
`say_payload`) and put through the door's own validator (validate.py `check_size`, say_reader.py
`read_say`, `admit`): the same limits and reasons, no second copy of the rules. What only a spooled
entry has (its response topic, Hermes siteId, packet id, repeat state) is checked with the door's readers
and limits too. The announcer quarantines an entry that fails, with the reason (queue.py `replay`).
"""

from __future__ import annotations

from typing import Any

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt import topics as topic_rules
from qwen3tts.appliance.mqtt.fields import SESSION_MAX_CHARS, name_of
from qwen3tts.appliance.mqtt.payload import ID_PATTERN
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.pool_link import SPOOLED_PACKET_ID_END
from qwen3tts.appliance.mqtt.say_reader import admit, read_say, say_payload
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import check_size
from qwen3tts.errors import RequestError


class SpooledCheck:
    """`check(ann, now)`: None for an entry the door would have accepted, else RequestError with why."""

    def __init__(self, policy: AnnouncementPolicy, topics: Topics) -> None:
        self.policy = policy
        self.topics = topics

    def __call__(self, ann: Announcement, now: float) -> None:
        try:  # the door's bytes of it: a lone surrogate (a JSON escape in the file) has none
            encoded = say_payload(_asked(ann))
        except UnicodeEncodeError as exc:
            raise RequestError(
                f"a field is not valid Unicode text ({exc.reason}: {exc.object[exc.start]!r})"
            ) from exc
        payload = check_size(encoded, self.policy.max_payload_bytes)
        admit(self.policy, now, **read_say(payload))
        self._check_spooled_only(ann, now)

    @staticmethod
    def readable_id(value: object) -> str | None:
        """The id of an unreadable entry, when it is one the door would have taken (for its event)."""
        return value if isinstance(value, str) and ID_PATTERN.fullmatch(value) else None

    def _check_spooled_only(self, ann: Announcement, now: float) -> None:
        if ann.response_topic is not None:
            refusal = topic_rules.refusal(self.topics, ann.response_topic)
            if refusal:  # the door drops such a topic before it spools: this one was never ours
                raise RequestError(refusal)
        if ann.hermes_site_id is not None:
            name_of({"siteId": ann.hermes_site_id}, "siteId", SESSION_MAX_CHARS)
        if ann.message_id is not None and not 0 < ann.message_id < SPOOLED_PACKET_ID_END:
            raise RequestError(f"packet id {ann.message_id} is not an MQTT (or pool) packet id")
        if ann.plays_done >= ann.repeat:
            raise RequestError(f"it already played {ann.plays_done} of {ann.repeat} times")
        if ann.cursor > len(ann.text):
            raise RequestError(f"its resume point (sentence {ann.cursor + 1}) is beyond its text")
        ahead = ann.not_before - now
        if ahead > self.policy.max_repeat_interval:  # only a repeat waits, and at most this long
            raise RequestError(
                f"not_before is {ahead:.3g} s ahead; a repeat waits at most "
                f"{self.policy.max_repeat_interval:g} s"
            )


_ASKED = ("text", "id", "lang", "voice", "instruct", "priority", "volume", "chime", "repeat",
          "repeat_interval", "interrupt", "session_id", "normalize", "ssml", "seed", "cache",
          "zones")  # fmt: skip
"""What of a spooled announcement a say payload carries (its deadline is on the steady time line, not
in the payload: it is not checked again)."""


def _asked(ann: Announcement) -> dict[str, Any]:
    """The fields of the `say` a door would have parsed for `ann` (its JSON form: every field it reads)."""
    return {name: getattr(ann, name) for name in _ASKED}
