"""What the status page (servers/status_page.py, voice_console.py) reads of the running appliance and may
ask of it.

Called on the servers' thread (the voice calls in a worker thread of theirs): everything here reads what
other threads publish (the status read-out, the queue's ids, the recent events) or hands over, like the
MQTT intake does: a text from the page is admitted by the same policy and given to the announcer's inbox,
a new default voice goes to the announcer as `voice/set` does. A voice is cloned by `voice add`'s own code
(runtime/voice_maker.py) into the registry; then the service reads the registry again, as on SIGHUP, and
every door offers what it now holds.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict
from pathlib import Path

from qwen3tts.appliance.mqtt.say_reader import admit
from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS, Priority
from qwen3tts.errors import BundleError, RequestError
from qwen3tts.runtime.voice_maker import VoiceOrder, make_voice
from qwen3tts.servers.offer import DEFAULT_VOICE, model_label
from qwen3tts.voices import VoiceError, VoiceRegistry, bundle_hash, voices_dir

log = logging.getLogger(__name__)


class Console:
    """The servers' `console`: the status (`console_status()`, `recent_events()`), `announce()`, and the
    voices (`voice_list()`, `add_voice()`, `remove_voice()`, `set_default_voice()`)."""

    priorities = tuple(level.label for level in ANNOUNCEMENT_LEVELS)

    def __init__(self, service):
        self.service = service
        self._registry_lock = threading.Lock()  # the page's changes to the registry, one at a time

    def console_status(self) -> dict:
        service = self.service
        current = service.announcer.current
        ann = current.ann if current is not None else None
        playing = ann and {"id": ann.id, "text": ann.text, "priority": ann.priority.label}
        queue = service.announcer.queue.ids()
        zones = [{"zone": zone, "sink": sink.name, "state": service.outputs.states.get(zone, "ok")}
                 for zone, sink in service.sinks.items()]  # fmt: skip
        return {**asdict(service.status()), "queue": queue, "current": playing or None, "zones": zones,
                "model": model_label(service.runtime.spec)}  # fmt: skip

    def recent_events(self) -> list[dict]:
        return self.service.events.list()

    def announce(self, text: str, voice: str | None, priority: str) -> str:
        """A text from the page at the level it names (one of `priorities`, which the page checked),
        checked as any `say` is, then queued like one."""
        service = self.service
        level = Priority.announcement_level(priority) or Priority.NORMAL
        ann = admit(service.mqtt.intake.policy, time.time(), text=text, voice=voice, priority=level)
        service.announcer.enqueue(ann)
        return ann.id

    # ---- voices ----

    def voice_list(self) -> dict:
        catalog, spec = self.service.catalog, self.service.runtime.spec
        presets = [{"name": name, "kind": "preset"} for name in catalog.speakers or (DEFAULT_VOICE,)]
        registered = [self._entry(name) for name in catalog.registered_names]
        cloning = None
        if spec.speaker_encoder is None:
            cloning = f"cloning from a recording needs a Base bundle; this one is {model_label(spec)}"
        return {"voices": presets + registered, "default": self._default(), "cloning": cloning}

    def add_voice(self, name: str, audio: Path, transcript: str | None, x_vector_only: bool) -> dict:
        """Clone through `voice add`'s checks and work, then offer the voice on every door."""
        service = self.service
        order = VoiceOrder(name, audio=audio, text=transcript, x_vector_only=x_vector_only)
        with self._registry_lock:
            voice = make_voice(order, self._registry(), service.settings.model.bundle, service.settings,
                               warn=lambda line: log.warning("voice %s: %s", name, line))  # fmt: skip
            service.reload_voices()
        return self._entry(voice.name)

    def remove_voice(self, name: str) -> None:
        """VoiceError when no registered voice has that name; RequestError for the default voice."""
        registered = self.service.catalog.registered_names
        found = next((known for known in registered if known.lower() == name.lower()), None)
        if found is None:
            raise VoiceError(f"no registered voice named {name[:64]!r}")
        if found.lower() == (self._default() or "").lower():
            raise RequestError(f"{found} is the default voice: make another voice the default first")
        with self._registry_lock:
            self._registry().remove(found)
            self.service.reload_voices()

    def set_default_voice(self, name: str, timeout: float) -> str:
        """The default for every door, set as `voice/set` sets it; TimeoutError if the announcer is stuck."""
        catalog = self.service.catalog
        bundle_own = name.lower() == DEFAULT_VOICE and not catalog.speakers and catalog.find(name) is None
        voice = None if bundle_own else catalog.find(name)
        if voice is None and not bundle_own:
            known = ", ".join(catalog.names or (DEFAULT_VOICE,))
            raise RequestError(f"unknown voice {name[:64]!r}; known: {known}")
        taken = threading.Event()
        self.service.announcer.set_voice(voice, lambda event, **fields: taken.set())
        if not taken.wait(timeout):
            raise TimeoutError
        return voice or DEFAULT_VOICE

    def _default(self) -> str:
        return self.service.announcer.lookahead.defaults.voice or DEFAULT_VOICE

    def _registry(self) -> VoiceRegistry:
        return VoiceRegistry(voices_dir(self.service.settings))

    def _entry(self, name: str) -> dict:
        """A registered voice as the page lists it: how it was made, and what its recording says."""
        try:
            voice = self._registry().get(name, bundle_hash(self.service.settings.model.bundle))
        except (RequestError, BundleError, OSError):  # removed or damaged meanwhile: listed by name only
            return {"name": name, "kind": "registered"}
        return {"name": name, "kind": voice.kind, "icl": voice.uses_icl,
                "transcript": voice.ref_text, "instruct": voice.instruct}  # fmt: skip
