"""The thermal monitor throttles a live engine: four running streams, a hot chip, nothing dropped.

The engine is the real one on a tiny OpenVINO bundle (f32 for exact reproducibility); the assertions
only use the Engine API.
"""

import pytest
from bundles import PARITY_OVERRIDES
from fake_sysfs import laptop

from qwen3tts.appliance.thermal.governor import ThermalMonitor
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings import ThermalSettings
from qwen3tts.settings_loader import load_settings

TEXTS = {
    "a": "the next train to the airport leaves from platform four",
    "b": "please mind the gap",
    "c": "the shop closes in ten minutes",
    "d": "doors closing",
}
MAX_STEPS = 3000
FRAMES = {"a": 24, "b": 14, "c": 18, "d": 10}  # the random tiny model never says EOS: cap each stream


@pytest.fixture(scope="module")
def bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "f32")


@pytest.fixture
def make_engine(bundle):
    def make() -> Engine:
        return load_runtime(bundle, load_settings(None, [*PARITY_OVERRIDES, "engine.max_num_seqs=4"])).engine

    return make


def submit_all(engine: Engine) -> dict:
    return {
        name: engine.submit(Request(name, text, seed=11, max_frames=FRAMES[name]))
        for name, text in TEXTS.items()
    }


def run_to_completion(engine: Engine, handles: dict, steps_so_far: int = 0) -> dict[str, int]:
    """Step until every request finished; returns the engine step at which each one had finished."""
    finished: dict[str, int] = {}
    for step in range(steps_so_far, steps_so_far + MAX_STEPS):
        finished |= {name: step for name, h in handles.items() if h.wait(0) and name not in finished}
        if len(finished) == len(handles):
            return finished
        engine.step()
    raise AssertionError(f"requests did not finish: {sorted(set(handles) - set(finished))}")


def test_four_running_streams_honour_a_thermal_cut_to_one_at_the_next_step_and_all_finish(
    tmp_path, make_engine
):
    reference = make_engine()
    unthrottled = submit_all(reference)
    unthrottled_at = run_to_completion(reference, unthrottled)

    fake = laptop(tmp_path, package_c=60.0)
    engine = make_engine()
    changes = []
    settings = ThermalSettings(sysfs_root=tmp_path, ewma_alpha=1.0, batch_levels=(4, 2, 1))
    monitor = ThermalMonitor(settings, engine, lambda *change: changes.append(change[:2]))
    monitor.sample_once()
    handles = submit_all(engine)
    for _ in range(3):
        engine.step()
    assert engine.stats().num_running == 4
    assert all(h.frames.shape[0] > 0 for h in handles.values()), "every stream should be decoding"

    fake.set_zone_temp(1, 95.0)  # above T_hot (the 90 °C passive trip minus 5): two samples, 4 -> 2 -> 1
    monitor.sample_once()
    monitor.sample_once()
    assert changes == [("cool", 4), ("warm", 2), ("hot", 1)]
    preemptions_before = engine.stats().num_preemptions
    engine.step()
    stats = engine.stats()
    assert (stats.num_running, stats.max_batch) == (1, 1)
    assert stats.num_preemptions - preemptions_before == 3
    [kept] = [seq.request.id for seq in engine.scheduler.running]

    finished_at = run_to_completion(engine, handles, steps_so_far=4)
    for name in set(handles) - {kept}:  # preempted: later than the kept stream and than unthrottled
        assert finished_at[name] > finished_at[kept] and finished_at[name] > unthrottled_at[name], name
    for name, handle in handles.items():
        assert handle.status is unthrottled[name].status and handle.error is None, name
        assert handle.status.is_finished and handle.status is not SequenceStatus.FINISHED_CANCELLED
        assert (handle.frames == unthrottled[name].frames).all(), f"{name} changed when throttled"
    assert engine.block_manager.num_used_blocks == 0


def test_cooling_down_lets_the_batch_grow_back_after_the_dwell(tmp_path, make_engine):
    fake = laptop(tmp_path, package_c=95.0)
    engine = make_engine()
    now = [0.0]
    settings = ThermalSettings(sysfs_root=tmp_path, ewma_alpha=1.0, dwell_s=5.0)
    monitor = ThermalMonitor(settings, engine, clock=lambda: now[0])
    monitor.sample_once()  # hot at the first sample: batch 2
    handles = submit_all(engine)
    engine.step()
    assert engine.stats().num_running == 2
    fake.set_zone_temp(1, 70.0)
    for second in range(1, 6):  # cool from t=1: the dwell ends at t=6
        now[0] = float(second)
        monitor.sample_once()
        engine.step()
        assert engine.stats().num_running == 2, f"grew back too early, at {second} s"
    now[0] = 6.0
    monitor.sample_once()
    engine.step()
    assert engine.stats().num_running == 4
    run_to_completion(engine, handles)
