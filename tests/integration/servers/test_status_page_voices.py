"""The status page in headless Chromium: what it says about the box (bundle, version, random weights, the
zones and their state) at a desktop's and a phone's width without a horizontal scroll, and the voices
managed from it — cloned from an uploaded recording (each hostile upload of `voice add`'s tests refused
with its reason), previewed in the page, made the default and deleted, with no restart. Screenshots go
to the test's tmp dir."""

from __future__ import annotations

import pytest
from status_page_rig import HOSTILE, TIMEOUT_MS, recordings, start_page_daemon

from qwen3tts import __version__
from qwen3tts.voices import VoiceRegistry, voices_dir

pytestmark = pytest.mark.slow

DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
OVERFLOW = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_the_page_shows_the_bundle_and_its_zones_and_fits_a_desktop_and_a_phone(
    tmp_path, mosquitto, tiny_models, browser
):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    zones = {"zones": [{"name": "lobby", "output": "wav", "wav_dir": str(tmp_path / "lobby")},
                       {"name": "yard", "output": "null"}]}  # fmt: skip
    service, url = start_page_daemon(tmp_path, mosquitto, bundle, sections=zones)
    try:
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page = browser.new_context(viewport=viewport).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{url}/status")
            page.wait_for_selector("#state[data-state=idle]")
            page.wait_for_selector("#voice-list tr")
            page.screenshot(path=str(tmp_path / f"status-{name}.png"), full_page=True)
            scroll_width, inner_width = page.evaluate(OVERFLOW)
            assert scroll_width <= inner_width == viewport["width"], name  # no horizontal scroll
            assert bundle.name in page.inner_text("#bundle")
            assert page.inner_text("#version") == f"v{__version__}"
            assert (
                page.is_visible("#weights")
                and page.inner_text("#weights") == "random weights (qwen3tts tiny)"
            )
            lobby, yard = page.locator("#zones li").all_inner_texts()
            assert lobby.startswith("lobby: wav:") and lobby.endswith(" ok") and yard == "yard: null ok"
            now, engine, zones_box = box(page, "#current"), box(page, "#batch"), box(page, "#zones")
            if name == "desktop":  # compact: the three small panels share one row, and speaking is on screen
                assert now["y"] == engine["y"] == zones_box["y"]
                assert box(page, "#speak button[type=submit]")["y"] < viewport["height"]
            else:  # a phone: one column
                assert now["y"] < engine["y"] < zones_box["y"]
            page.context.close()
    finally:
        service.stop()


def test_the_voice_list_loads_when_its_script_arrives_after_the_first_state(
    tmp_path, mosquitto, tiny_models, browser
):
    """voices.js held back until page.js has drawn the first state (whose "voices-changed" then had no
    listener yet, as CI saw once under load): the list still loads."""
    service, url = start_page_daemon(tmp_path, mosquitto, tiny_models.bundle("custom_voice", "tiny", "f32"))
    try:
        page = browser.new_context(viewport=DESKTOP).new_page()
        page.set_default_timeout(TIMEOUT_MS)
        held = []
        page.route("**/status/voices.js", lambda route: held.append(route))
        page.goto(f"{url}/status", wait_until="commit")
        page.wait_for_selector("#state[data-state=idle]")  # page.js ran, its first state is drawn
        while not held:
            page.wait_for_timeout(20)  # lets Playwright deliver the intercepted request
        assert page.locator("#voice-list tr").count() == 0
        held[0].continue_()
        page.wait_for_selector("#voice-list tr[data-voice=vivian]")
        page.context.close()
    finally:
        service.stop()


def a_late_answer_does_not_undo_a_newer_one(page) -> None:
    """Two loads of the voice list under way (an action's own and the state poll's): the older answer,
    arriving last, is not drawn over the newer (CI saw "Make default" undone that way)."""
    held = []
    page.route("**/status/voices", lambda route: held.append(route) if not held else route.continue_())
    page.evaluate("() => { window.olderLoad = loadVoices(); }")
    while not held:
        page.wait_for_timeout(20)  # lets Playwright deliver the intercepted request
    page.evaluate("() => loadVoices()")  # the newer load: answered at once, and drawn
    held[0].fulfill(json={"voices": [], "default": None, "cloning": None, "limits": {}})
    page.evaluate("() => window.olderLoad")
    page.unroute("**/status/voices")
    assert page.locator("#voice-list tr[data-voice=default] .default").count() == 1


def test_a_voice_is_cloned_previewed_made_default_and_deleted_from_the_page(
    tmp_path, mosquitto, tiny_models, browser
):
    files = recordings(tmp_path / "rec")
    service, url = start_page_daemon(tmp_path, mosquitto, tiny_models.bundle("base", "tiny", "f32"))
    registry = VoiceRegistry(voices_dir(service.settings))
    try:
        page = browser.new_context(viewport=DESKTOP, bypass_csp=True).new_page()  # so the test may evaluate
        page.set_default_timeout(TIMEOUT_MS)
        page.on("dialog", lambda dialog: dialog.accept())  # "Delete the voice anna?"
        page.goto(f"{url}/status")
        page.wait_for_selector("#voice-list tr[data-voice=default] .default")  # a Base bundle's own voice
        assert page.is_hidden("#clone-off") and "1–30 s" in page.inner_text("#clone-limits")
        a_late_answer_does_not_undo_a_newer_one(page)

        def clone(stem: str, name: str, transcript: str, expect: str) -> str:
            page.fill("#clone-name", name)
            page.set_input_files("#clone-audio", str(files[stem]))
            page.fill("#clone-text", transcript)
            page.click("#clone-submit")
            page.wait_for_function("(expect) => document.getElementById('voice-answer').textContent"
                                   ".includes(expect)", arg=expect)  # fmt: skip
            return page.inner_text("#voice-answer")

        for stem, name, transcript, message in HOSTILE:
            said = clone(stem, name, transcript, message)
            assert "/tmp" not in said, said
        assert registry.names() == []
        page.screenshot(path=str(tmp_path / "voices-refused.png"), full_page=True)

        assert clone("ref", "anna", "Hello there.", "added anna") == "added anna"
        page.wait_for_selector("#voice-list tr[data-voice=anna]")
        assert page.inner_text("#voice-list tr[data-voice=anna] td:nth-child(2)") == "cloned"
        page.wait_for_selector("#voices option[value=anna]", state="attached")  # the speak form offers it
        assert registry.names() == ["anna"]

        page.click("#voice-list tr[data-voice=anna] button:text-is('Preview')")
        page.wait_for_selector("#voice-answer:has-text('a sample of anna')")
        duration = page.evaluate("""() => new Promise((done) => {
            const player = document.getElementById('preview');
            if (player.readyState >= 1) done(player.duration);
            else player.onloadedmetadata = () => done(player.duration);
        })""")
        assert duration > 0.5 and page.get_attribute("#preview", "data-voice") == "anna"

        page.click("#voice-list tr[data-voice=anna] button:text-is('Make default')")
        page.wait_for_selector("#voice-list tr[data-voice=anna] .default")
        assert service.status().voice == "anna"
        assert page.locator("#voice-list tr[data-voice=anna] button:text-is('Delete')").count() == 0
        page.screenshot(path=str(tmp_path / "voices-anna.png"), full_page=True)
        page.set_viewport_size(PHONE)  # the clone form and the voice list on a phone
        page.wait_for_function("() => window.innerWidth === 390")
        scroll_width, inner_width = page.evaluate(OVERFLOW)
        assert scroll_width <= inner_width
        page.screenshot(path=str(tmp_path / "voices-phone.png"), full_page=True)
        page.set_viewport_size(DESKTOP)

        page.click("#voice-list tr[data-voice=default] button:text-is('Make default')")
        page.wait_for_selector("#voice-list tr[data-voice=default] .default")
        page.click("#voice-list tr[data-voice=anna] button:text-is('Delete')")
        page.wait_for_selector("#voice-list tr[data-voice=anna]", state="detached")
        assert registry.names() == [] and "anna" not in service.catalog.names
        page.wait_for_selector("#voices option[value=anna]", state="detached")
    finally:
        service.stop()
