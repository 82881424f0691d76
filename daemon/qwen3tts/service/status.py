"""What the appliance says about itself: the retained MQTT status and the figures /metrics shows.

Pure read-outs of the running components (the service passes them in); nothing here changes state,
so they may be called from the status worker and the servers' thread alike.
"""

from __future__ import annotations

from qwen3tts import __version__
from qwen3tts.appliance.mqtt.events import Status
from qwen3tts.engine.stats import EngineStats
from qwen3tts.model.bundle import weights_kind
from qwen3tts.servers import ApplianceFigures


def engine_figures(stats: EngineStats) -> dict[str, float]:
    """The status' `engine` object: enough for an operator (and Home Assistant) to see it batch."""
    return {
        "running": stats.num_running,
        "waiting": stats.num_waiting,
        "max_batch": stats.max_batch,
        "mean_batch": round(stats.mean_batch, 2),
        "frames_per_second": round(stats.frames_per_second, 1),
        "prefix_cached_blocks": stats.num_cached_blocks,
        "prefix_queried_tokens": stats.prefix_queried_tokens,
        "prefix_hit_tokens": stats.prefix_hit_tokens,
    }


def build_status(*, stopping: bool, announcer, runtime, thermal, audio: str, bundle: str,
                 pool: dict | None = None) -> Status:  # fmt: skip
    """The retained status from the components' current state; `audio` is `<sink>:<state>`, `pool` the
    pool membership (empty when the box is in none)."""
    stats = runtime.engine.stats()
    decision = thermal.decision if thermal is not None else None
    current = announcer.current_id
    replay = announcer.lookahead.replay
    return Status(
        state="stopping" if stopping else ("speaking" if current else "idle"),
        queue_depth=len(announcer.queue),
        current_id=current,
        batch_limit=stats.max_batch,
        thermal_level=decision.level_name if decision else "cool",
        temperature_c=decision.temperature_c if decision else None,
        volume=announcer.volume,
        voice=announcer.lookahead.defaults.voice or "",
        device_plan={**runtime.plan.summary(), "audio": audio},
        decode_paths=runtime.plan.decode_paths(),
        bundle=bundle,
        weights=weights_kind(runtime.manifest),
        engine=engine_figures(stats),
        cached=announcer.current_from_cache,
        cache=replay.stats() if replay else {},
        pool=pool or {},
        version=__version__,
    )


def appliance_figures(
    *, queue_depth: int, playback, thermal, sink_state: str, counts: dict[str, int]
) -> ApplianceFigures:
    """What /metrics and /healthz show of the appliance; `counts` holds rejected and error events."""
    decision = thermal.decision if thermal is not None else None
    return ApplianceFigures(
        queue_depth=queue_depth,
        underflows=playback.underflows,
        thermal_level=decision.level if decision is not None else 0,
        rejected=counts["rejected"],
        failed=counts["error"],
        degraded=() if sink_state == "ok" else (f"audio sink {sink_state}",),
    )
