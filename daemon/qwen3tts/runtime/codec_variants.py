"""Which codec sample parts to load: the exact f32 ones, or a lossy variant the bundle vouches for.

A bundle always holds the exact graphs and may hold variants (manifest `codec_variants`, fastest
first): alternative sample parts of the split layout that share its one frame part, each with the
SNR it measured against the exact decode at build time and the CPU capabilities it needs to be
faster (model/codec_gate.py); whole-layout bundles load their exact graphs. `devices.codec_variant:
auto` takes the first variant that passes today's gate and whose needs this CPU's
OPTIMIZATION_CAPABILITIES meet; `f32` always loads the exact graphs (so does an explicit
`devices.inference_precision: f32`); a variant's name asks for that one. The choice and its reason
are one log line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from qwen3tts.model.bundle import CodecVariant
from qwen3tts.model.codec_gate import MIN_SNR_DB
from qwen3tts.runtime.devices import base_device, candidates
from qwen3tts.settings import DeviceSettings

log = logging.getLogger(__name__)

EXACT = "f32"


def choose_codec_variant(
    variants: Sequence[CodecVariant], settings: DeviceSettings, device: str, capabilities: Sequence[str]
) -> tuple[CodecVariant | None, str]:
    """(the variant to load, or None for the exact graphs; why, for the log)."""
    wanted = settings.codec_variant
    if wanted == EXACT:
        return None, "devices.codec_variant is f32"
    if not variants:
        return None, "the bundle has no other variant (rebuild with `qwen3tts build` to measure one)"
    if settings.inference_precision == "f32":
        return None, "devices.inference_precision f32 asks for exact arithmetic"
    if settings.inference_precision != "auto":
        return None, f"devices.inference_precision {settings.inference_precision} applies to the whole graph"
    if base_device(device) != "CPU":
        return None, f"variants are measured on the CPU plugin, the codec runs on {device}"
    candidates = [v for v in variants if wanted in ("auto", v.name)]
    if not candidates:
        return None, f"devices.codec_variant {wanted}: the bundle has only {_names(variants)}"
    passed = [v for v in candidates if v.snr_db >= MIN_SNR_DB]
    if not passed:
        return None, f"{_names(candidates)} measured below the {MIN_SNR_DB:.0f} dB SNR gate"
    fits = [v for v in passed if set(v.needs) <= set(capabilities)]
    if not fits:
        needs = "+".join(sorted({n for v in passed for n in v.needs}))
        return None, f"{_names(passed)} need {needs}; this CPU offers {', '.join(capabilities) or 'nothing'}"
    chosen = fits[0]
    return chosen, (
        f"{'set in devices.codec_variant' if wanted == chosen.name else 'auto'}: the CPU has "
        f"{'+'.join(chosen.needs)} and the variant measured {chosen.snr_db:.1f} dB SNR against the "
        f"exact decode at build time (gate {MIN_SNR_DB:.0f} dB)"
    )


def _names(variants: Sequence[CodecVariant]) -> str:
    return ", ".join(v.name for v in variants)


def pick_for_load(compiler, variants: Sequence[CodecVariant], preferences: Sequence[str]) -> str | None:
    """The variant name to load (None: exact) for the first device the codec will be tried on; logs why."""
    order, _ = candidates(preferences, compiler.available)
    device = order[0] if order else "CPU"
    chosen, why = choose_codec_variant(variants, compiler.settings, device, compiler.capabilities(device))
    refused = chosen is None and compiler.settings.codec_variant not in ("auto", EXACT)
    log.log(
        logging.WARNING if refused else logging.INFO,
        "codec graphs: %s (%s)",
        chosen.name if chosen else "f32 exact",
        why,
    )
    return chosen.name if chosen else None
