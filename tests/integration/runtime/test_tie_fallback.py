"""The code predictor's tie fallbacks take their memory at load (runtime/tie_fallback.py).

The loader adds one boolean input to the code predictor graph it reads, OR'd into each tie fallback's
condition. Off, the graph gives the codes of the bundle's own graph; on, every step runs the stable TopK
and still gives them (and greedy rows the lowest id among equal maxima). The warm-up runs it on once at
the engine's largest batch; after that, frames whose every step ties (forced) take no more live memory,
where without the forced warm-up the plugin took ~140 KB per fallback at the first tie
(docs/benchmarks.md, "Whose memory it is"). Live memory is glibc's (mallinfo2), as
scripts/measure_tie_fallback_memory.py measures it: what the verdicts compare are allocations, never times.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from script_modules import script

from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.parts import PartCompiler
from qwen3tts.runtime.tie_fallback import FORCE_TIE_FALLBACK, add_fallback_switch
from qwen3tts.settings_loader import load_settings

live = script("measure_tie_fallback_memory").live
F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # as the daemon compiles the code predictor on the CPU here
# (temperature, top_k, top_p) per row: greedy, top-k, no filter, top-k + top-p, top-p only, k = 1
SAMPLING = [(0.0, 50, 1.0), (0.9, 50, 1.0), (0.9, 0, 1.0), (0.8, 50, 0.8), (1.0, 0, 0.9), (1.3, 1, 1.0)]
# Every row filters: the sampler's branch that holds the fallbacks
FILTERED = [s for s in SAMPLING if s[1] > 0 or s[2] < 1]
LARGEST_BATCH = 4
SETTINGS = [
    "devices.talker=[CPU]",
    "devices.codec=[CPU]",
    "devices.native_kernels=never",  # the plugin's graph for every batch
    "devices.inference_precision=f32",
    "engine.num_kv_blocks=4",
    f"engine.max_num_seqs={LARGEST_BATCH}",
]
# Less than one fallback's body (~126-151 KB at batch 1-8, measured): the verdicts' line between none taken
# and at least one; a forced frame after a warm-up without the switch took ~2.4 MB (15 bodies)
ONE_BODY = 64 * 1024


def _frame(spec, rows: int, seed: int, sampling=SAMPLING) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    settings = np.array([sampling[(seed + row) % len(sampling)] for row in range(rows)])
    predictor = spec.code_predictor
    return {
        cp.PAST_HIDDEN: rng.standard_normal((rows, spec.talker.hidden_size)).astype(np.float32),
        cp.CODE0: rng.integers(0, predictor.vocab_size, rows).astype(np.int64),
        cp.NOISE: rng.random((rows, predictor.num_code_groups - 1, predictor.vocab_size), dtype=np.float32),
        cp.TEMPERATURE: settings[:, 0].astype(np.float32),
        cp.TOP_K: settings[:, 1].astype(np.int64),
        cp.TOP_P: settings[:, 2].astype(np.float32),
    }


def _forced(feed: dict, force: bool = True) -> dict:
    return {**feed, FORCE_TIE_FALLBACK: np.array(force)}


def _switched_model(bundle) -> tuple[ov.Model, int]:
    model = ov.Core().read_model(bundle / layout.CODE_PREDICTOR_XML)
    return model, add_fallback_switch(model)


def _live_gain(request: ov.InferRequest, feeds: list[dict]) -> int:
    """Live malloc'd bytes gained over inferring `feeds` (built beforehand, kept alive throughout). Each
    batch size is run once before, switch off: the graph takes memory at the first frame of every new
    shape (~110-190 KB at batch 1-3 of the tiny bundle, measured), ties or not, and that is not theirs."""
    for rows in sorted({len(feed[cp.CODE0]) for feed in feeds}):
        request.infer(_forced(next(feed for feed in feeds if len(feed[cp.CODE0]) == rows), False))
    before = live()
    for feed in feeds:
        request.infer(feed)
    return live() - before


def test_the_switch_reaches_every_tie_fallback_and_the_bundle_stays_as_it_was(tiny_models):
    bundle = tiny_models.bundle()
    xml = bundle / layout.CODE_PREDICTOR_XML
    on_disk = xml.read_bytes()
    spec = layout.read_manifest(bundle).spec

    model, switched = _switched_model(bundle)

    assert switched == spec.code_predictor.num_code_groups - 1  # one exact_topk per sampled step
    assert [p.get_any_name() for p in model.inputs] == [*cp.INPUT_NAMES, FORCE_TIE_FALLBACK]
    assert xml.read_bytes() == on_disk
    assert add_fallback_switch(ov.Core().read_model(bundle / layout.TALKER_XML)) == 0  # none: unchanged


def test_off_the_codes_are_the_bundles_own_and_on_the_stable_topks(tiny_models):
    bundle = tiny_models.bundle()
    spec = layout.read_manifest(bundle).spec
    core = ov.Core()
    reference = core.compile_model(bundle / layout.CODE_PREDICTOR_XML, "CPU", F32).create_infer_request()
    switched = core.compile_model(_switched_model(bundle)[0], "CPU", F32).create_infer_request()

    for rows, seed in [(1, 0), (2, 1), (3, 2), (4, 3), (6, 4), (1, 5)]:
        feed = _frame(spec, rows, seed)
        result = reference.infer(feed)
        expected = {name: np.array(result[name]) for name in cp.OUTPUT_NAMES}  # (the request reuses them)
        for force in (False, True):
            got = switched.infer(_forced(feed, force))
            assert np.array_equal(got[cp.CODES], expected[cp.CODES]), (rows, seed, force)
            np.testing.assert_allclose(got[cp.NEXT_EMBED], expected[cp.NEXT_EMBED], rtol=1e-6)
            np.testing.assert_allclose(got[cp.LOGITS], expected[cp.LOGITS], rtol=1e-5, atol=1e-6)
            greedy = feed[cp.TEMPERATURE] <= 0  # the stable TopK's first id: the lowest of equal maxima
            lowest = np.argmax(np.asarray(got[cp.LOGITS])[greedy], axis=-1)
            assert np.array_equal(np.asarray(got[cp.CODES])[greedy], lowest)


def test_the_switch_on_runs_the_fallbacks_which_keep_their_memory_from_then_on(tiny_models):
    """What the warm-up relies on: forced once, each fallback's body takes its memory, and keeps it."""
    bundle = tiny_models.bundle()
    spec = layout.read_manifest(bundle).spec
    model, switched = _switched_model(bundle)
    request = ov.Core().compile_model(model, "CPU", F32).create_infer_request()
    first = _live_gain(request, [_forced(_frame(spec, LARGEST_BATCH, 10, FILTERED))])
    again = _live_gain(request, [_forced(_frame(spec, rows, 20 + rows, FILTERED)) for rows in (4, 3, 2, 1)])

    assert first > switched * ONE_BODY, first  # every fallback ran: ~15 x 126 KB at batch 4
    assert again < ONE_BODY, again


class _Recording:
    """A compiled graph whose infer requests record what each infer was fed (the rest is the graph's)."""

    def __init__(self, compiled: ov.CompiledModel):
        self.compiled, self.feeds = compiled, []

    def __getattr__(self, name: str):
        return getattr(self.compiled, name)

    def create_infer_request(self):
        request, feeds = self.compiled.create_infer_request(), self.feeds

        class Request:
            def infer(self, feed):
                feeds.append({name: np.array(value) for name, value in feed.items()})
                return request.infer(feed)

        return Request()


class _RecordingCompiler(PartCompiler):
    """The loader's own compiler; the code predictor graph it compiles comes back recording its feeds."""

    def compile(self, component, model, *args, **kwargs):
        compiled, placement = super().compile(component, model, *args, **kwargs)
        if component == "code_predictor":
            self.code_predictor = compiled = _Recording(compiled)
        return compiled, placement


def test_the_warm_up_forces_the_fallbacks_once_at_the_largest_batch_and_inference_never(tiny_models):
    settings = load_settings(None, SETTINGS)
    compiler = _RecordingCompiler(settings.devices)
    runtime = load_runtime(tiny_models.bundle(), settings, compiler)
    warm_up = list(compiler.code_predictor.feeds)

    for rows in (1, LARGEST_BATCH, 2):
        runtime.runner.code_predictor(*_frame(runtime.spec, rows, rows).values())

    forced = [(len(feed[cp.CODE0]), bool(feed[FORCE_TIE_FALLBACK])) for feed in warm_up]
    assert forced == [(LARGEST_BATCH, True), (1, False)]
    engine = settings.engine  # the frame runs the daemon's own sampling: its top-k sizes the bodies
    assert set(warm_up[0][cp.TOP_K]) == {engine.subtalker_top_k} and engine.subtalker_top_k == 50
    assert set(warm_up[0][cp.TOP_P]) == {np.float32(engine.subtalker_top_p)}
    real = compiler.code_predictor.feeds[len(warm_up) :]
    assert [(len(feed[cp.CODE0]), bool(feed[FORCE_TIE_FALLBACK])) for feed in real] == [
        (1, False),
        (LARGEST_BATCH, False),
        (2, False),
    ]


# The daemon's sampling is one for all its requests: the top-k it sorts (a body's memory grows with it, and
# with the batch) is the settings'. Default: top-k 50; top-p alone: every token sorted (k = 2048 here).
@pytest.mark.parametrize(
    "sampling", [[], ["engine.subtalker_top_k=0", "engine.subtalker_top_p=0.9"]], ids=["top-k", "top-p"]
)
def test_after_load_frames_that_tie_at_every_step_take_no_more_memory(tiny_models, sampling):
    settings = load_settings(None, [*SETTINGS, *sampling])
    compiler = _RecordingCompiler(settings.devices)
    runtime = load_runtime(tiny_models.bundle(), settings, compiler)
    # another request than the warm-up's, as the runner's is: the plugin keeps the bodies per graph
    request = compiler.code_predictor.compiled.create_infer_request()
    engine = settings.engine
    rows_sampling = [(engine.subtalker_temperature, engine.subtalker_top_k, engine.subtalker_top_p)]

    sizes = [*range(1, LARGEST_BATCH + 1), *range(LARGEST_BATCH, 0, -1)] * 2
    feeds = [_forced(_frame(runtime.spec, rows, seed, rows_sampling)) for seed, rows in enumerate(sizes)]
    gain = _live_gain(request, feeds)

    assert gain < ONE_BODY, gain
