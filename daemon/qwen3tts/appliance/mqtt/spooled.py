"""A spooled announcement read at start, checked again by the door that accepted it.

The spool is input too: a file edited by hand, written by an older version with other limits, or damaged
on disk must not play what the door would have refused (a 100,000-character text, a `not_before` that
never comes). So each entry is turned back into the `say` it came from and put through the door's own
validator (validate.py `check_size`, `read_say`, `admit`): the same limits and reasons, no second copy
of the rules. What only a spooled entry has (its response topic, Hermes siteId, packet id,
repeat state) is checked with the door's readers and limits too. The announcer quarantines an entry that
fails, with the reason (queue.py `replay`).
"""

from __future__ import annotations

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt import topics as topic_rules
from qwen3tts.appliance.mqtt.fields import SESSION_MAX_CHARS, name_of
from qwen3tts.appliance.mqtt.messages import Say
from qwen3tts.appliance.mqtt.payload import ID_PATTERN
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.pool_link import POOL_PACKET_BASE
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import admit, check_size, read_say
from qwen3tts.errors import RequestError


class SpooledCheck:
    """`check(ann, now)`: None for an entry the door would have accepted, else RequestError with why."""

    def __init__(self, policy: AnnouncementPolicy, topics: Topics) -> None:
        self.policy = policy
        self.topics = topics

    def __call__(self, ann: Announcement, now: float) -> None:
        try:  # the door's bytes of it: a lone surrogate (a JSON escape in the file) has none
            encoded = _say_of(ann).payload()
        except UnicodeEncodeError as exc:
            raise RequestError(
                f"a field is not valid Unicode text ({exc.reason}: {exc.object[exc.start]!r})"
            ) from exc
        payload = check_size(encoded, self.policy.max_payload_bytes)
        admit(read_say(payload), self.policy, now)
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
        if ann.message_id is not None and not 0 < ann.message_id < 2 * POOL_PACKET_BASE:
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


def _say_of(ann: Announcement) -> Say:
    """The `say` a door would have parsed for `ann` (its JSON form: every field the door reads)."""
    return Say(
        text=ann.text, id=ann.id, lang=ann.lang, voice=ann.voice, instruct=ann.instruct,
        priority=ann.priority, volume=ann.volume, chime=ann.chime, repeat=ann.repeat,
        repeat_interval=ann.repeat_interval, interrupt=ann.interrupt, session_id=ann.session_id,
        normalize=ann.normalize, ssml=ann.ssml, seed=ann.seed, cache=ann.cache, zones=ann.zones,
    )  # fmt: skip
