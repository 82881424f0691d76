"""qwen3tts: a voice-appliance daemon speaking MQTT announcements with Qwen3-TTS on OpenVINO."""

__version__ = "0.1.0"
