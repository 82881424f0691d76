"""A/B timing of bundle variants in ONE process, round by round, so machine load hits every variant alike.

On a shared machine absolute times drift by tens of percent between runs; the ratio of two variants
measured in alternation does not. Each round times every variant's stages back to back (talker step,
code predictor frame, codec chunk; the fastest of a few calls) at one batch size; the report gives
per-stage medians over rounds and the median of the per-round ratios against the first variant.

`--clock cpu` times with the process's CPU time instead of wall time. With INFERENCE_NUM_THREADS=1
that is the work an inference costs, whatever share of a core the scheduler granted: the way to
compare variants on a machine loaded far beyond its cores (wall-clock ratios there swing by +-30 %).

    python -m qwen3tts.bench.interleaved --rounds 7 --batch 1 \\
        base=var/bundle-0.6b-int8-base fused=var/bundle-0.6b-int8 \\
        'dq0=var/bundle-0.6b-int8,DYNAMIC_QUANTIZATION_GROUP_SIZE=0'

A variant is `label=bundle[,KEY=VALUE...]`: OpenVINO CPU compile properties for every graph, or for
one graph as `talker.KEY=VALUE`, `code_predictor.KEY=VALUE`, `codec.KEY=VALUE`; `codec_variant=f32`
(or a variant's name) is the `devices.codec_variant` setting, i.e. which codec graphs of the bundle load;
`native=always|never|auto` the `devices.native_kernels` setting (native/ INT8 kernels or the plugin's).
The `prefill` stage is one talker chunk of --prefill positions on an empty cache (time to first audio).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.runtime.devices import Placement, compile_properties
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.settings import Settings

STAGES = ("talker", "code_predictor", "codec")
ALL_STAGES = (*STAGES, "prefill")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
COMPONENTS = ("talker", "code_predictor", "codec", "speaker_encoder")
CODEC_VARIANT = "codec_variant"  # a setting, not a compile property: which codec graphs load
NATIVE = "native"  # a setting too: devices.native_kernels
SETTINGS_KEYS = (CODEC_VARIANT, NATIVE)


@dataclass(frozen=True)
class Variant:
    label: str
    bundle: Path
    properties: dict[str, dict[str, str]] = field(default_factory=dict)  # component or "*" -> props

    @classmethod
    def parse(cls, text: str) -> Variant:
        label, _, rest = text.partition("=")
        bundle, *props = rest.split(",")
        if not label or not bundle:
            raise argparse.ArgumentTypeError(f"expected label=bundle[,KEY=VALUE...], got {text!r}")
        properties: dict[str, dict[str, str]] = {}
        for prop in props:
            key, _, value = prop.partition("=")
            component, _, name = key.rpartition(".") if key.split(".")[0] in COMPONENTS else ("", "", key)
            properties.setdefault(component or "*", {})[name] = value
        return cls(label, Path(bundle), properties)


class OverrideCompiler(PartCompiler):
    """PartCompiler on the CPU with per-variant compile properties on top of the settings' ones."""

    def __init__(self, settings: Settings, variant: Variant):
        import dataclasses

        chosen = variant.properties.get("*", {})
        devices = dataclasses.replace(
            settings.devices,
            codec_variant=chosen.get(CODEC_VARIANT, settings.devices.codec_variant),
            native_kernels=chosen.get(NATIVE, settings.devices.native_kernels),
        )
        super().__init__(devices)
        self.variant = variant

    def compile(self, component, model, preferences, kv_cache_precision=None, cacheable=True):
        capabilities = self.capabilities("CPU")
        props = compile_properties("CPU", self.settings, kv_cache_precision, component, capabilities)
        shared = self.variant.properties.get("*", {})
        props.update({k: v for k, v in shared.items() if k not in SETTINGS_KEYS})
        props.update(self.variant.properties.get(component, {}))
        return self.core.compile_model(model, "CPU", props), Placement(component, "CPU")


class StageTimer:
    """Times one loaded runtime's stages on fixed random inputs at batch `batch`."""

    def __init__(
        self, runtime, batch: int, context: int, clock=time.perf_counter, seed: int = 0, prefill: int = 48
    ):
        self.runner = runtime.runner
        self.clock = clock
        spec = runtime.spec
        rng = np.random.default_rng(seed)
        hidden = spec.talker.hidden_size
        blocks_per_seq = -(-(context + 1) // self.runner.block_size)
        self.chunks = [
            TalkerChunk(
                i,
                rng.standard_normal((1, hidden)).astype(np.float32),
                context,
                list(range(i * blocks_per_seq, (i + 1) * blocks_per_seq)),
            )
            for i in range(batch)
        ]
        groups, vocab = spec.code_predictor.num_code_groups, spec.code_predictor.vocab_size
        self.predictor_feed = (
            rng.standard_normal((batch, hidden)).astype(np.float32),
            rng.integers(0, vocab, batch),
            rng.random((batch, groups - 1, vocab), dtype=np.float32),
            np.full(batch, 0.9, np.float32),
            np.full(batch, 50, np.int64),
            np.ones(batch, np.float32),
        )
        prefill_blocks = list(range(-(-prefill // self.runner.block_size)))
        embeds = rng.standard_normal((prefill, hidden)).astype(np.float32)
        self.prefill_chunk = [TalkerChunk(0, embeds, 0, prefill_blocks)]
        chunk = max(runtime.manifest.codec_chunks)
        self.codec_frames = rng.integers(0, spec.codec.codebook_size, (chunk, spec.codec.num_quantizers))
        self.batch = batch

    def time(self, stage: str, calls: int) -> float:
        """Fastest of `calls` calls of `stage`, in ms: on a loaded machine the least disturbed sample."""
        run = {
            "talker": self._talker,
            "code_predictor": self._predictor,
            "codec": self._codec,
            "prefill": self._prefill,
        }[stage]
        samples = []
        for _ in range(calls):
            started = self.clock()
            run()
            samples.append(self.clock() - started)
        return 1e3 * min(samples)

    def _talker(self) -> None:
        self.runner.talker(self.chunks)

    def _prefill(self) -> None:
        self.runner.talker(self.prefill_chunk)

    def _predictor(self) -> None:
        self.runner.code_predictor(*self.predictor_feed)

    def _codec(self) -> None:
        self.runner.codec_open(-1)
        self.runner.codec_decode(-1, self.codec_frames)
        self.runner.codec_close(-1)


def run(
    variants: list[Variant],
    batch: int,
    rounds: int,
    calls: int,
    context: int,
    stages=STAGES,
    clock: str = "wall",
    prefill: int = 48,
) -> dict:
    from qwen3tts.runtime.loader import load_runtime

    settings = Settings()
    settings = _bench_settings(settings, batch)
    timers = {}
    for variant in variants:
        runtime = load_runtime(variant.bundle, settings, OverrideCompiler(settings, variant))
        timers[variant.label] = StageTimer(runtime, batch, context, CLOCKS[clock], prefill=prefill)
        for stage in stages:  # warm-up: first inferences allocate and tune
            timers[variant.label].time(stage, 2)
    samples = {v.label: {s: [] for s in stages} for v in variants}
    for number in range(rounds):
        for variant in round_order(variants, number):
            for stage in stages:
                samples[variant.label][stage].append(timers[variant.label].time(stage, calls))
    return {**_summary(samples, variants[0].label, batch, rounds, calls, context), "clock": clock}


def round_order(variants: list, number: int) -> list:
    """The variants of round `number`, rotated by one slot per round.

    With whole runtimes loaded, whichever variant runs first in a round measured 10-15 % slower than
    an identical copy of it later in the round (caches and the memory bus, docs/benchmarks.md); in a
    fixed order that bias landed on the base of every ratio. Rotating puts every variant in every slot
    equally often over a multiple of len(variants) rounds.
    """
    shift = number % len(variants) if variants else 0
    return variants[shift:] + variants[:shift]


def _bench_settings(settings: Settings, batch: int) -> Settings:
    import dataclasses

    engine = dataclasses.replace(
        settings.engine, max_num_seqs=max(batch, settings.engine.max_num_seqs), num_kv_blocks=0
    )
    return dataclasses.replace(settings, engine=engine)


def _summary(samples, base: str, batch: int, rounds: int, calls: int, context: int) -> dict:
    out = {"batch": batch, "rounds": rounds, "calls_per_round": calls, "context": context, "variants": {}}
    for label, stages in samples.items():
        out["variants"][label] = {
            stage: {
                "median_ms": statistics.median(values),
                "min_ms": min(values),
                "ratio_to_base": statistics.median(
                    v / b for v, b in zip(values, samples[base][stage], strict=True)
                ),
            }
            for stage, values in stages.items()
        }
    return out


def render(summary: dict) -> str:
    stages = list(next(iter(summary["variants"].values())))
    lines = [
        f"batch {summary['batch']}, {summary['rounds']} rounds x {summary['calls_per_round']} calls, "
        f"talker context {summary['context']}, {summary['clock']} clock; "
        "median ms (min) and median per-round ratio to the first",
        "| variant | " + " | ".join(stages) + " |",
        "|---|" + "---|" * len(stages),
    ]
    for label, measured in summary["variants"].items():
        cells = [
            f"{s['median_ms']:.1f} ({s['min_ms']:.1f}) x{s['ratio_to_base']:.2f}"
            for s in (measured[k] for k in stages)
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qwen3tts.bench.interleaved", description=__doc__)
    parser.add_argument("variants", nargs="+", type=Variant.parse, help="label=bundle[,KEY=VALUE...]")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3, help="calls per stage per round (fastest taken)")
    parser.add_argument("--context", type=int, default=100, help="talker positions already cached")
    parser.add_argument(
        "--stages", default=",".join(STAGES), help="comma-separated subset of " + ",".join(ALL_STAGES)
    )
    parser.add_argument("--prefill", type=int, default=48, help="positions of the prefill stage")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="wall or process CPU time")
    parser.add_argument("--json", type=Path, help="write the summary as JSON")
    args = parser.parse_args(argv)
    stages = tuple(s for s in args.stages.split(",") if s)
    if not set(stages) <= set(ALL_STAGES):
        parser.error(f"--stages: expected a subset of {','.join(ALL_STAGES)}, got {args.stages!r}")
    summary = run(
        args.variants, args.batch, args.rounds, args.calls, args.context, stages, args.clock, args.prefill
    )
    print(render(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
