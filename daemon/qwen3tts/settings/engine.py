"""Where the bundle comes from, which device runs which graph, and how the engine batches."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from qwen3tts.errors import ConfigError

TextTrack = Literal["auto", "whole", "streamed"]  # engine.text_track (runtime/prompt.py reads the values)


@dataclass(frozen=True)
class ModelSettings:
    """Where the OpenVINO bundle comes from."""

    bundle: Path | None = None
    """Directory of the OpenVINO bundle (manifest.json inside); `qwen3tts build` makes one. Default null:
    the embedded random bundle <state>/bundle-tiny that `run --embedded` builds (see docs/operations.md)."""
    checkpoint: Path | None = None
    """Release checkpoint `qwen3tts build` reads without --checkpoint (docs/models.md). Default none."""
    weights: Literal["int8", "int4-cp", "int4", "f16", "f32"] = "int8"
    """Weight precision policy used by `build` when it has to build the bundle; int4-cp / int4 are faster
    build options with more drift (docs/fidelity.md). Default int8."""
    cache_dir: Path | None = None
    """OpenVINO compile cache directory. Default null: <cache>/openvino ($CACHE_DIRECTORY under systemd)."""


@dataclass(frozen=True)
class DeviceSettings:
    """Which OpenVINO device runs which graph: preference lists, first that compiles wins."""

    talker: tuple[str, ...] = ("GPU", "CPU")
    """Device preference for the talker (and the code predictor, which follows it). Default GPU, CPU."""
    codec: tuple[str, ...] = ("NPU", "GPU", "CPU")
    """Device preference for the speech decoder. Default NPU, GPU, CPU."""
    inference_precision: Literal["auto", "f32", "bf16", "f16"] = "auto"
    """INFERENCE_PRECISION_HINT; auto is f32 on CPUs (bf16 measured too lossy for the codec and no faster
    with compressed weights) and the device default on GPU/NPU. An explicit f32 means exact f32 arithmetic:
    the exact codec graphs (never a lossy variant), no native kernels, and no dynamic int8 quantization of
    the activations (the CPU plugin's default on CPUs with VNNI). Default auto."""
    codec_variant: Literal["auto", "f32", "bf16-tail"] = "auto"
    """Codec graphs on a CPU: auto loads the bundle's fastest variant that passed its build-time SNR gate
    (>= 35 dB against the exact decode) and whose needs the CPU meets (bf16-tail: AVX-512 BF16 or AMX),
    else the exact f32 graphs; f32 always loads the exact graphs, and so does devices.inference_precision
    f32. Default auto."""
    num_threads: int = field(default=0, metadata={"min": 0})
    """CPU inference threads; 0 lets OpenVINO use every core (one thread for a bundle whose talker and code
    predictor weights are under 64 MiB, such as a `qwen3tts tiny` one: too small to split). Default 0."""
    cpu_pinning: bool = True
    """Pin CPU inference threads to cores. Default true."""
    native_kernels: Literal["auto", "always", "never"] = "auto"
    """The compiled INT8 matrix products of native/ (libqwen3tts_native.so, built by scripts/setup.sh) for
    the talker and code predictor on the CPU, and the code predictor's fused native frame (one call per
    frame, needs AVX2; it reads INT8 and INT4_SYM code-predictor weights, each measured against the
    plugin's graph of the same weights): auto uses them where they measured faster on this CPU class
    (docs/benchmarks.md),
    the fused frame only for the batch sizes it measured faster at (the plugin's graph, compiled beside
    it when engine.max_num_seqs is above them, takes the larger ones), unless devices.inference_precision
    is an explicit f32 (their int16 activations are not exact f32); always uses them wherever the library
    loads, the frame at every batch (no compiled graph: the least memory); never does not. Default auto."""
    native_talker: Literal["auto", "always", "never"] = "auto"
    """The talker's step as one native call (native/src/talker.hpp: every layer, attention over its own
    half-precision paged KV cache of 32-position blocks, codec_head), instead of the plugin's compiled
    talker, which is then not compiled at all; CPU with AVX2 and an INT8 bundle only, else the plugin with
    one log line naming why. auto takes it where it measured faster at every batch up to
    engine.max_num_seqs on this CPU class (docs/benchmarks.md; not with devices.native_kernels never);
    always tries it; never does not. Default auto."""
    native_library: Path | None = None
    """Path of libqwen3tts_native.so. Default null: native/build/ of the source tree qwen3tts runs from,
    else qwen3tts/lib/ beside the installed package (where the Debian package puts it)."""

    def __post_init__(self) -> None:
        for key in ("talker", "codec"):
            for index, name in enumerate(getattr(self, key)):
                _check_device_name(f"devices.{key}[{index}]", name)


VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")


def _check_device_name(path: str, name: str) -> None:
    family = name.split(":", 1)[0].split(".", 1)[0].strip().upper()
    if family in VIRTUAL_DEVICES:
        raise ConfigError(
            f"{path}: {name!r} is an OpenVINO meta-device, not supported: list real devices in order of "
            "preference instead, e.g. [GPU, CPU] (the first that compiles wins; see `qwen3tts devices`)"
        )
    if not family or ":" in name:
        raise ConfigError(f"{path}: expected a device name such as CPU, GPU, GPU.1 or NPU, got {name!r}")


@dataclass(frozen=True)
class EngineSettings:
    """The continuous-batching engine."""

    max_num_seqs: int = field(default=4, metadata={"min": 1, "max": 64})
    """Most announcements synthesised at once (the batch limit before thermal throttling). Default 4."""
    max_num_batched_tokens: int = field(default=256, metadata={"min": 16})
    """Token budget of one engine step; longer prompts are prefilled in chunks. Default 256 tokens."""
    num_kv_blocks: int = field(default=0, metadata={"min": 0})
    """Paged KV cache blocks; 0 derives the count from kv_cache_mib. Default 0."""
    kv_cache_mib: int = field(default=256, metadata={"min": 1})
    """KV cache memory budget in MiB, used when num_kv_blocks is 0. Default 256 MiB."""
    kv_cache_precision: Literal["u8", "f16", "bf16", "f32"] = "u8"
    """Element type of the paged KV cache. Default u8. The native talker (devices.native_talker) keeps u8
    (a scale and zero point per position and head) or, for any other value, IEEE half."""
    prefix_caching: bool = True
    """Share KV blocks of bit-identical prompt prefixes between requests (same voice). Default true."""
    max_frames: int = field(default=2048, metadata={"min": 2})
    """Most 80 ms frames one request may produce (2048 = 164 s). Default 2048 frames."""
    max_text_chars: int = field(default=2000, metadata={"min": 1})
    """Longest accepted text, in characters. Default 2000."""
    first_chunk_frames: int = field(default=1, metadata={"min": 1})
    """Frames in the first codec chunk of a stream (built into the bundle). Default 1 = 80 ms."""
    chunk_frames: int = field(default=12, metadata={"min": 1})
    """Frames in each later codec chunk (built into the bundle). Default 12 = 960 ms. A bundle built with
    4 lets an announcement faster than real time start about half a second sooner (it need not wait for
    a 12-frame chunk); on a CPU codec it cost no synthesis time where measured (docs/benchmarks.md)."""
    text_track: TextTrack = "auto"
    """How the prompt gives the text to the talker: whole (every text token before the first frame) or
    streamed (the first token in the prompt, one more with each frame: the first frame comes after a
    prompt of 8-10 positions whatever the text's length, so first audio is sooner by the prefill of
    the text). Both are the official model's modes; auto takes the official wrapper's (whole, streamed
    for Base). Default auto."""
    temperature: float = field(default=0.9, metadata={"min": 0.0})
    """Talker sampling temperature; 0 means greedy. Default 0.9 (official)."""
    top_k: int = field(default=50, metadata={"min": 0})
    """Talker top-k; 0 disables. Default 50 (official)."""
    top_p: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Talker nucleus threshold. Default 1.0 (official)."""
    repetition_penalty: float = field(default=1.05, metadata={"min": 1.0})
    """Penalty on repeated code-0 tokens. Default 1.05 (official)."""
    subtalker_temperature: float = field(default=0.9, metadata={"min": 0.0})
    """Code-predictor sampling temperature; 0 means greedy. Default 0.9 (official)."""
    subtalker_top_k: int = field(default=50, metadata={"min": 0})
    """Code-predictor top-k; 0 disables (the sampler then sorts nothing). Default 50 (official)."""
    subtalker_top_p: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})
    """Code-predictor nucleus threshold. Default 1.0 (official)."""
