"""The voices the daemon speaks, as one list: the bundle's preset speakers, then the operator's
registered voices (registered_voices.py), read at start and again on SIGHUP.

`names` is what an announcement's `voice` may name: the intake's policy, the retained `voices` topic
and Home Assistant's voice select all list it. `resolve()` turns a `voice/set` name in any case into
its listed spelling; `default_voice()` is the `voice` settings in the bundle's spelling.
"""

from __future__ import annotations

from qwen3tts import __version__
from qwen3tts.appliance.discovery import discovery_configs
from qwen3tts.appliance.events import Voices
from qwen3tts.appliance.lookahead import Voice
from qwen3tts.appliance.registered_voices import RegisteredVoices
from qwen3tts.settings import Settings, VoiceSettings
from qwen3tts.voices import voices_dir


class VoiceCatalog:
    """Preset speakers + registered voices; `registered` is the object the announcer reads too."""

    def __init__(self, speakers, languages, registered: RegisteredVoices, prompt_builder=None):
        self.speakers = tuple(speakers)
        self.languages = tuple(languages)
        self.registered = registered
        self._prompt_builder = prompt_builder  # None: a runtime test double, which has no registered voices

    @property
    def names(self) -> tuple[str, ...]:
        """What `voice` may name: the bundle's preset speakers, then the registered voices."""
        return (*self.speakers, *self.registered.names)

    def load(self, settings: Settings) -> bool:
        """Read the registry for the settings' bundle again; True when the list of names changed."""
        before = self.names
        if self._prompt_builder is not None:
            self.registered.load(voices_dir(settings), settings.model.bundle, self._prompt_builder)
        return self.names != before

    def resolve(self, name: str) -> str | None:
        """`name` (any case) in its listed spelling, or None when no voice has that name."""
        return {known.lower(): known for known in self.names}.get(name.lower())

    def default_voice(self, voice_settings: VoiceSettings) -> Voice:
        """The `voice` settings as the announcer's default voice, in the bundle's spelling."""
        return Voice.from_settings(voice_settings, self.speakers)

    def discovery(self, topics) -> list:
        """Home Assistant's entities; its voice select offers every name."""
        return discovery_configs(topics, voices=self.names, sw_version=__version__)

    def messages(self, topics, discovery: bool) -> list:
        """What announces the list: the retained `voices` message, and the discovery configs if enabled."""
        voices = Voices(voices=self.names, languages=self.languages)
        return [voices, *(self.discovery(topics) if discovery else [])]
