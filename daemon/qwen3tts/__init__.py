"""qwen3tts: a voice-appliance daemon speaking MQTT announcements with Qwen3-TTS on OpenVINO."""

from qwen3tts.telemetry import block_openvino_telemetry

__version__ = "0.1.0"

block_openvino_telemetry()  # before anything imports openvino (see qwen3tts/telemetry.py)
