"""Import stubs that let the official `qwen_tts` package load without sox, onnxruntime and torchaudio.

`qwen_tts.core.__init__` imports the 25 Hz tokenizer (`speech_vq.py`), which needs all three, although
the 12 Hz path we use never calls them. torchaudio has no wheel for torch 2.13, so they are replaced by
empty modules. Runs only in the reference venv.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

STUBBED = ("sox", "onnxruntime", "torchaudio", "torchaudio.compliance", "torchaudio.compliance.kaldi")


def _stub(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    # torch._dynamo calls importlib.util.find_spec on loaded modules; a None __spec__ makes it raise.
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    sys.modules[name] = module
    return module


def install() -> list[str]:
    """Stub the 25 Hz-only dependencies that are not installed; return the names stubbed.

    torch and transformers are imported first: transformers probes find_spec("torchaudio") while it
    imports, and a stub seen at that moment would make it think torchaudio is usable.
    """
    import torch  # noqa: F401
    import transformers  # noqa: F401

    missing_roots = {n.split(".")[0] for n in STUBBED if importlib.util.find_spec(n.split(".")[0]) is None}
    stubbed = [_stub(n).__name__ for n in STUBBED if n.split(".")[0] in missing_roots]
    if "torchaudio" in missing_roots:
        sys.modules["torchaudio"].compliance = sys.modules["torchaudio.compliance"]
        sys.modules["torchaudio.compliance"].kaldi = sys.modules["torchaudio.compliance.kaldi"]
    return stubbed
