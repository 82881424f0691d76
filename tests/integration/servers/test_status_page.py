"""The status page in a real headless Chromium (Debian's, driven by Playwright; no browser download):
it loads from the daemon alone, shows the live state, and a text submitted in its form is announced on
the appliance until the page lists its `finished` event. Screenshots go to the test's tmp dir. The
voices and the page's layout: test_status_page_voices.py."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from status_page_rig import start_page_daemon

pytestmark = pytest.mark.slow


def start(tmp_path: Path, mosquitto, tiny_models, token: str | None = None):
    return start_page_daemon(tmp_path, mosquitto, tiny_models.bundle("custom_voice", "tiny", "f32"), token)


def test_the_page_shows_live_state_and_a_submitted_text_finishes(tmp_path, mosquitto, tiny_models, browser):
    service, url = start(tmp_path, mosquitto, tiny_models)
    try:
        page = browser.new_context().new_page()
        outside = []
        page.on("request", lambda req: None if req.url.startswith(url) else outside.append(req.url))
        page.goto(f"{url}/status")
        page.wait_for_selector("#state[data-state=idle]", timeout=15000)
        assert "running" in page.inner_text("#batch")  # engine figures from the live status
        assert page.locator("#voices option").count() == len(service.catalog.speakers)
        page.fill("#text", "The store closes in ten minutes.")
        page.select_option("#priority", "priority")
        page.click("button[type=submit]")
        page.wait_for_selector("#answer:has-text('queued as')")
        ann_id = page.inner_text("#answer").removeprefix("queued as ").strip()
        finished = f"#events tr:has(td:text-is('{ann_id}')) td.event-finished"
        page.wait_for_selector(finished, timeout=60000)
        page.screenshot(path=str(tmp_path / "status-page.png"), full_page=True)
        assert outside == []  # no external assets: everything came from the daemon
        assert [p.name for p in (tmp_path / "wav").iterdir()] == [f"000001-{ann_id}.wav"]  # played here
    finally:
        service.stop()


def test_in_the_browser_plays_the_text_and_the_appliance_stays_quiet(
    tmp_path, mosquitto, tiny_models, browser
):
    service, url = start(tmp_path, mosquitto, tiny_models)
    try:
        page = browser.new_context(bypass_csp=True).new_page()  # so the test may evaluate script
        page.goto(f"{url}/status")
        page.fill("#text", "Only in the browser.")
        page.check("input[value=browser]")
        page.click("button[type=submit]")
        page.wait_for_selector("#answer:has-text('play')", timeout=60000)
        duration = page.evaluate("""() => new Promise((done) => {
            const player = document.getElementById('player');
            if (player.readyState >= 1) done(player.duration);
            else player.onloadedmetadata = () => done(player.duration);
        })""")
        assert duration > 0.5  # the browser decoded the audio the server streamed
        assert not (tmp_path / "wav").exists() or list((tmp_path / "wav").iterdir()) == []
    finally:
        service.stop()


def test_with_a_token_the_browser_is_asked_for_it_and_outsiders_are_refused(
    tmp_path, mosquitto, tiny_models, browser
):
    service, url = start(tmp_path, mosquitto, tiny_models, token="page-secret")
    try:
        refused = httpx.get(f"{url}/status")
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
        context = browser.new_context(http_credentials={"username": "me", "password": "page-secret"})
        page = context.new_page()
        page.goto(f"{url}/status")
        page.wait_for_selector("#state[data-state=idle]", timeout=15000)
        page.screenshot(path=str(tmp_path / "status-page-token.png"))
        wrong = browser.new_context(http_credentials={"username": "me", "password": "guess"}).new_page()
        assert wrong.goto(f"{url}/status").status == 401
    finally:
        service.stop()


def test_announce_refuses_what_a_cross_site_form_can_send(tmp_path, mosquitto, tiny_models):
    service, url = start(tmp_path, mosquitto, tiny_models)
    try:
        plain = {"Content-Type": "text/plain"}
        form = httpx.post(f"{url}/status/announce", content='{"text": "hi"}', headers=plain)
        assert form.status_code == 415
        rebound = httpx.post(f"{url}/status/announce", json={"text": "hi"}, headers={"Host": "evil.example"})
        assert rebound.status_code == 403
        bad = httpx.post(f"{url}/status/announce", json={"text": "hi", "priority": "loud"})
        assert bad.status_code == 400 and "normal, priority, emergency" in bad.json()["error"]["message"]
        assert service.events.list() == []
    finally:
        service.stop()
