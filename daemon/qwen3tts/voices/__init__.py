"""Named voices an operator adds once (`qwen3tts voice add`) and requests pick by name.

registry.py stores and reads them (numpy and JSON only: the appliance reads it without OpenVINO);
reference_audio.py reads an operator's reference recording in any common format. Deriving a voice
(x-vector, reference codes) needs the bundle's graphs and lives in runtime/voice_maker.py.
"""

from qwen3tts.voices.registry import RegisteredVoice, VoiceError, VoiceRegistry, bundle_hash, voices_dir

__all__ = ["RegisteredVoice", "VoiceError", "VoiceRegistry", "bundle_hash", "voices_dir"]
