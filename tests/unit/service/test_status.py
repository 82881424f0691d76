"""What the appliance says about itself (service/status.py), from stand-ins for the running components
(the service passes them in): the retained status' state, figures and device plan, and what /metrics
and /healthz show."""

from types import SimpleNamespace

from qwen3tts import __version__
from qwen3tts.engine.stats import EngineStats
from qwen3tts.service.status import appliance_figures, build_status, engine_figures

STATS = EngineStats(
    num_running=3, num_waiting=2, num_kv_blocks_used=10, num_kv_blocks_free=6, frames_per_second=41.26,
    max_batch=4, num_preemptions=0, mean_batch=2.3456, num_cached_blocks=7, prefix_queried_tokens=120,
    prefix_hit_tokens=80,
)  # fmt: skip


def announcer(current=None, replay=None, queue=()):
    lookahead = SimpleNamespace(replay=replay, defaults=SimpleNamespace(voice="ryan"))
    return SimpleNamespace(current_id=current, queue=list(queue), volume=0.8, lookahead=lookahead,
                           current_from_cache=bool(current))  # fmt: skip


def runtime(random_weights=False):
    plan = SimpleNamespace(
        summary=lambda: {"talker": "GPU", "speech_decoder": "NPU"},
        decode_paths=lambda: {"talker": "plugin", "code_predictor": "fused native avx2"},
    )
    engine = SimpleNamespace(stats=lambda: STATS)
    return SimpleNamespace(engine=engine, plan=plan, manifest=SimpleNamespace(random_weights=random_weights))


def status(**overrides):
    args = dict(stopping=False, announcer=announcer(), runtime=runtime(), thermal=None, audio="alsa:ok",
                bundle="/var/lib/qwen3tts/bundle")  # fmt: skip
    return build_status(**(args | overrides))


def test_engine_figures_are_the_operators_view_of_the_batch_rounded():
    assert engine_figures(STATS) == {
        "running": 3, "waiting": 2, "max_batch": 4, "mean_batch": 2.35, "frames_per_second": 41.3,
        "prefix_cached_blocks": 7, "prefix_queried_tokens": 120, "prefix_hit_tokens": 80,
    }  # fmt: skip


def test_an_idle_appliance_without_a_governor_is_cool_and_shows_its_plan_with_the_audio_sink():
    got = status(announcer=announcer(queue=["a", "b"]))
    assert (got.state, got.queue_depth, got.current_id, got.batch_limit) == ("idle", 2, None, 4)
    assert (got.thermal_level, got.temperature_c) == ("cool", None)
    assert got.device_plan == {"talker": "GPU", "speech_decoder": "NPU", "audio": "alsa:ok"}
    assert got.decode_paths == {"talker": "plugin", "code_predictor": "fused native avx2"}
    assert (got.voice, got.volume, got.weights, got.version) == ("ryan", 0.8, "release", __version__)
    assert (got.cache, got.pool, got.cached) == ({}, {}, False)
    assert got.engine == engine_figures(STATS)


def test_an_announcement_in_progress_is_speaking_and_stopping_wins_over_it():
    assert status(announcer=announcer(current="a1")).state == "speaking"
    assert status(announcer=announcer(current="a1")).current_id == "a1"
    assert status(stopping=True, announcer=announcer(current="a1")).state == "stopping"


def test_the_governors_decision_and_the_phrase_cache_and_pool_are_reported():
    thermal = SimpleNamespace(decision=SimpleNamespace(level_name="warm", temperature_c=81.5))
    replay = SimpleNamespace(stats=lambda: {"entries": 3, "hits": 5})
    got = status(thermal=thermal, announcer=announcer(replay=replay), runtime=runtime(random_weights=True),
                 pool={"name": "hall", "members": 2})  # fmt: skip
    assert (got.thermal_level, got.temperature_c) == ("warm", 81.5)
    assert got.cache == {"entries": 3, "hits": 5}
    assert got.pool == {"name": "hall", "members": 2}
    assert got.weights == "random (qwen3tts tiny)"


def test_a_governor_without_a_decision_yet_counts_as_cool():
    assert status(thermal=SimpleNamespace(decision=None)).thermal_level == "cool"


def test_appliance_figures_report_a_sink_that_is_not_ok_as_degraded():
    playback = SimpleNamespace(underflows=2)
    thermal = SimpleNamespace(decision=SimpleNamespace(level=1))
    figures = appliance_figures(queue_depth=5, playback=playback, thermal=thermal, sink_state="lost",
                                counts={"rejected": 3, "error": 1})  # fmt: skip
    assert (figures.queue_depth, figures.underflows, figures.thermal_level) == (5, 2, 1)
    assert (figures.rejected, figures.failed, figures.degraded) == (3, 1, ("audio sink lost",))


def test_appliance_figures_of_a_healthy_box_without_a_governor():
    figures = appliance_figures(queue_depth=0, playback=SimpleNamespace(underflows=0), thermal=None,
                                sink_state="ok", counts={"rejected": 0, "error": 0})  # fmt: skip
    assert (figures.thermal_level, figures.degraded) == (0, ())
