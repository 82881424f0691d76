"""Prometheus metrics: engine figures and appliance figures read at scrape time, network requests counted.

The appliance provides a callable returning `ApplianceFigures` (queue depth, underflows, thermal level,
rejected/failed counts, reasons it is degraded); the engine's figures come from `engine.stats()`. Both
are read when /metrics is scraped, so nothing here runs on the audio path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TTFA_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
RTF_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0)
OUTCOMES = ("ok", "cancelled", "error", "rejected", "busy", "unauthorized", "timeout")


@dataclass(frozen=True)
class ApplianceFigures:
    """What the appliance reports to /metrics and /healthz; counters count since the daemon started."""

    queue_depth: int = 0
    """Announcements waiting in the queue."""
    underflows: int = 0
    """Audio underflows (the sink ran dry mid-announcement)."""
    thermal_level: int = 0
    """Thermal governor level: 0 is cool, each step up halves the batch limit."""
    rejected: int = 0
    """Announcements rejected at the intake (invalid, queue full)."""
    failed: int = 0
    """Announcements that failed (synthesis or playback error)."""
    degraded: tuple[str, ...] = ()
    """Reasons the appliance is degraded (e.g. 'audio sink lost', 'talker on CPU fallback'); empty = ready."""


ApplianceSource = Callable[[], ApplianceFigures]


class ServerMetrics:
    """One registry per Servers instance (not the global one), so tests and restarts never collide."""

    def __init__(self, engine, appliance: ApplianceSource | None = None):
        self.registry = CollectorRegistry()
        self._appliance = appliance or ApplianceFigures
        self.registry.register(_ScrapeCollector(engine, self.figures))
        self.requests = Counter(
            "qwen3tts_network_requests", "Network synthesis requests by server and outcome.",
            ["server", "outcome"], registry=self.registry,
        )  # fmt: skip
        self.active = Gauge(
            "qwen3tts_network_active_requests", "Network requests synthesising now.", registry=self.registry
        )
        self.time_to_first_audio = Histogram(
            "qwen3tts_network_time_to_first_audio_seconds",
            "From a network request's arrival to its first PCM chunk.",
            ["server"], buckets=TTFA_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.rtf = Histogram(
            "qwen3tts_network_real_time_factor",
            "Synthesis time / audio duration of each finished network request.",
            ["server"], buckets=RTF_BUCKETS, registry=self.registry,
        )  # fmt: skip
        for server in ("wyoming", "http"):  # every series exists from the start, at zero
            for outcome in OUTCOMES:
                self.requests.labels(server, outcome)

    def figures(self) -> ApplianceFigures:
        """The appliance's figures; a failing source is logged and reads as degraded, never as an error."""
        try:
            return self._appliance()
        except Exception as exc:  # a boundary: the source is the service's code, run on the servers'
            # thread; whatever it raises, /metrics and /healthz still answer (as degraded)
            log.exception("appliance metrics source failed")
            return ApplianceFigures(degraded=(f"metrics source failed: {type(exc).__name__}",))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _ScrapeCollector(Collector):
    """Engine and appliance figures, read at each scrape."""

    def __init__(self, engine, figures: Callable[[], ApplianceFigures]):
        self._engine = engine
        self._figures = figures

    def collect(self):
        stats = self._engine.stats()
        mean_batch = stats.num_frames / stats.num_steps if stats.num_steps else 0.0
        figures = self._figures()
        gauges = [
            ("engine_running_requests", "Requests in the running batch.", stats.num_running),
            ("engine_waiting_requests", "Requests waiting for a slot.", stats.num_waiting),
            ("engine_kv_blocks_used", "Paged KV cache blocks in use.", stats.num_kv_blocks_used),
            ("engine_kv_blocks_free", "Paged KV cache blocks free.", stats.num_kv_blocks_free),
            ("engine_max_batch", "Live batch limit (thermal throttle).", stats.max_batch),
            ("engine_frames_per_second", "80 ms frames generated per second.", stats.frames_per_second),
            ("engine_mean_batch", "Frames per engine step since start.", mean_batch),
            ("queue_depth", "Announcements waiting.", figures.queue_depth),
            ("thermal_level", "Thermal level (0 = cool).", figures.thermal_level),
            ("degraded", "1 when the appliance reports a degraded state.", int(bool(figures.degraded))),
        ]
        counters = [
            ("engine_steps", "Engine steps that produced frames.", stats.num_steps),
            ("engine_frames", "80 ms frames produced.", stats.num_frames),
            ("engine_preemptions", "Requests preempted for recompute.", stats.num_preemptions),
            ("sentences_frame_capped", "Sentences stopped by the frame cap.", stats.num_frame_capped),
            ("audio_underflows", "Audio underflows.", figures.underflows),
            ("announcements_rejected", "Announcements rejected.", figures.rejected),
            ("announcements_failed", "Announcements failed.", figures.failed),
        ]
        for name, documentation, value in gauges:
            yield GaugeMetricFamily(f"qwen3tts_{name}", documentation, value=value)
        for name, documentation, value in counters:
            yield CounterMetricFamily(f"qwen3tts_{name}", documentation, value=value)
