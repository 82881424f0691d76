"""The project's exception hierarchy.

Every error a user or operator can cause has its own class, so callers can react to the kind of
failure and logs can name it (`type(exc).__name__`).
"""


class Qwen3TTSError(Exception):
    """Base class of every error raised on purpose by qwen3tts."""


class ConfigError(Qwen3TTSError):
    """A configuration value is unknown, of the wrong type or out of range; the message names the key path."""


class CheckpointError(Qwen3TTSError):
    """A checkpoint lacks a file or tensor or has a wrong shape; the message names file and tensor."""


class TokenizerError(Qwen3TTSError):
    """The text tokenizer files are missing or inconsistent."""


class BundleError(Qwen3TTSError):
    """An OpenVINO bundle is missing, corrupt or does not match its manifest."""


class DeviceError(Qwen3TTSError):
    """No device in the plan could compile or run a graph."""


class RequestError(Qwen3TTSError):
    """A synthesis request is invalid (rejected at submit) or failed while running."""


class AudioError(Qwen3TTSError):
    """An audio file or sink could not be read, opened or written."""


class NotAvailableError(Qwen3TTSError):
    """A feature that is not available in this build or on this machine."""


class BrokerError(Qwen3TTSError):
    """The MQTT broker cannot be reached, refused the connection or did not answer."""
