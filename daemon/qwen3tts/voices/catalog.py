"""The voices this daemon speaks, and the one place a voice or language name from a request is resolved.

The catalog lists the bundle's preset speakers, then the operator's registered voices (`qwen3tts voice
add`, registry.py). Every door asks it: the MQTT intake (`say`, `voice/set`), the Wyoming and HTTP
servers, Home Assistant's voice select, the retained `voices` topic. `choice()` turns a voice name into the
engine request's speaker / reference key / instruct: a registered cloned voice becomes its `voice:NAME`
reference key (never a path), a VoiceDesign voice its description.

The registered part is replaced as a whole when the registry is read again (start, SIGHUP, a voice added or
removed on the status page), so readers on any thread need no lock. Loading a voice's inputs into the
prompt builder needs the runtime and lives in the composition root (service/voices.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from qwen3tts.errors import RequestError
from qwen3tts.text import resolve_language

KEY_PREFIX = "voice:"
"""Engine `ref_audio` keys of registered cloned voices: `voice:NAME` (never a file path)."""


@dataclass(frozen=True)
class VoiceChoice:
    """The voice fields of one engine request."""

    speaker: str | None = None
    ref_audio: str | None = None
    instruct: str | None = None


class VoiceCatalog:
    """Preset speakers + registered voices, and the bundle's languages."""

    def __init__(self, speakers: Iterable[str] = (), languages: Iterable[str] = ()):
        self.speakers = tuple(speakers)
        self.languages = tuple(languages)
        self._registered: Mapping[str, VoiceChoice] = {}
        self._identities: Mapping[str, str] = {}
        self._registered_names: tuple[str, ...] = ()

    @property
    def registered_names(self) -> tuple[str, ...]:
        """The registered names in the registry's spelling, sorted."""
        return self._registered_names

    @property
    def names(self) -> tuple[str, ...]:
        """What a request's `voice` may name: the preset speakers, then the registered voices."""
        return (*self.speakers, *self._registered_names)

    def set_registered(self, entries: Mapping[str, VoiceChoice], identities: Mapping[str, str]) -> bool:
        """Replace the registered voices (name -> choice, name -> identity); True if the names changed."""
        before = self._registered_names
        self._registered = {name.lower(): choice for name, choice in entries.items()}
        self._identities = {name.lower(): identity for name, identity in identities.items()}
        self._registered_names = tuple(sorted(entries))
        return self._registered_names != before

    def find(self, name: str) -> str | None:
        """`name` (any case) in its listed spelling, or None when no voice has that name."""
        wanted = name.lower()
        return next((known for known in self.names if known.lower() == wanted), None)

    def resolve(self, name: str) -> str:
        """The listed spelling of `name`; RequestError naming the known voices when there is none.

        A catalog that lists nothing (a bundle without presets or registered voices) accepts any name:
        the engine decides.
        """
        if not self.names:
            return name
        found = self.find(name)
        if found is None:
            raise RequestError(f"unknown voice {name[:64]!r}; known: {', '.join(sorted(self.names))}")
        return found

    def resolve_language(self, tag: str) -> str:
        """The bundle's spelling of the language `tag` names (`auto` always works); RequestError if it
        cannot be spoken. An empty language list accepts any tag (a runtime test double)."""
        if not self.languages:
            return "auto" if tag.lower() == "auto" else tag
        name = resolve_language(tag, self.languages)
        return next((known for known in self.languages if known.lower() == name), name)

    def choice(self, voice: str | None, instruct: str | None) -> VoiceChoice:
        """Engine fields for `voice` (a preset speaker unless registered) and the request's instruct.

        A design voice's description replaces the request's instruct: the name stands for it.
        """
        entry = self._registered.get(voice.lower()) if voice else None
        if entry is None:
            return VoiceChoice(speaker=voice, instruct=instruct)
        return VoiceChoice(ref_audio=entry.ref_audio, instruct=entry.instruct or instruct)

    def identity(self, voice: str | None) -> str | None:
        """What the sound of `voice` depends on (the phrase cache key): a registered voice's content digest,
        so re-adding it under the same name is a different voice; else the name itself."""
        return self._identities.get(voice.lower(), voice) if voice else voice
