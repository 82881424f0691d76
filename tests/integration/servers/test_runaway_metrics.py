"""Issue 24 item 5 at the network doors: a request the frame cap stopped counts in /metrics and says so in
the log (its end token masked: the tiny model may sample it at any frame, `Running.without_end`)."""

from __future__ import annotations

import logging

import httpx
from prometheus_client.parser import text_string_to_metric_families

CAPPED = "qwen3tts_sentences_frame_capped_total"


def capped(running) -> float:
    text = httpx.get(f"{running.http_url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == CAPPED:
                return sample.value
    raise AssertionError(f"{CAPPED} missing from /metrics")


def test_an_http_request_stopped_by_the_frame_cap_counts_in_metrics_and_is_logged(serve, caplog):
    running = serve("engine.max_frames=4")
    running.without_end = True
    assert capped(running) == 0
    with caplog.at_level(logging.WARNING, logger="qwen3tts.servers.speech_stream"):
        response = httpx.post(
            f"{running.http_url}/v1/audio/speech",
            json={"input": "Mind the gap.", "voice": "ryan", "response_format": "pcm"},
            timeout=60,
        )
    assert response.status_code == 200 and response.content
    assert capped(running) == 1
    assert any("sentence 1 was stopped at the frame cap" in r.getMessage() for r in caplog.records)
