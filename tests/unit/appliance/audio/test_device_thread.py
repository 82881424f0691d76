"""DeviceThread (appliance/audio/device_thread.py) with plain callables: results and errors come back
to the caller, a call that never returns is given up on without blocking the caller, and a retired
thread cleans up once the driver lets go. Events, not sleeps, decide when the "driver" returns; how the
sinks use this against a stuck PortAudio stream is test_sinks.py."""

import threading

import pytest

from qwen3tts.appliance.audio.device_thread import DeviceStalled, DeviceThread


def wait_until_ended(device: DeviceThread) -> None:
    device._thread.join(30)  # the thread's end is the state under test; 30 s only bounds a failure
    assert not device.alive, "the device thread did not end"


def retire_and_wait(device: DeviceThread) -> None:
    cleaned = threading.Event()
    device.retire(cleaned.set)
    assert cleaned.wait(30)
    wait_until_ended(device)


def test_a_call_returns_its_result_and_runs_on_the_device_thread():
    device = DeviceThread("usb")
    assert device.call(lambda: threading.current_thread().name, timeout=30, what="open") == "audio-device usb"
    assert device.call(lambda: 42, timeout=30, what="write") == 42
    assert device.alive and not device.stuck


def test_calls_run_one_at_a_time_in_order():
    device, order = DeviceThread("usb"), []
    for n in range(5):
        device.call(lambda n=n: order.append(n), timeout=30, what="write")
    assert order == [0, 1, 2, 3, 4]


def test_a_calls_exception_reaches_the_caller_and_the_thread_goes_on():
    device, failure = DeviceThread("usb"), OSError("device unplugged")

    def fail():
        raise failure

    with pytest.raises(OSError) as raised:
        device.call(fail, timeout=30, what="write")
    assert raised.value is failure
    assert device.call(lambda: "still here", timeout=30, what="write") == "still here"
    assert not device.stuck


def test_a_call_that_never_returns_raises_device_stalled_and_refuses_the_next_call():
    device, release = DeviceThread("usb"), threading.Event()
    with pytest.raises(
        DeviceStalled, match=r"write did not return within 0\.05 s: the device takes no samples"
    ):
        device.call(release.wait, timeout=0.05, what="write")
    assert device.stuck
    ran = []
    with pytest.raises(DeviceStalled, match="close: an earlier call into usb never returned"):
        device.call(lambda: ran.append(1), timeout=30, what="close")
    release.set()
    retire_and_wait(device)
    assert ran == []  # the refused call never reached the driver


def test_a_retired_thread_cleans_up_only_once_the_stuck_call_returns_then_ends():
    device, release, cleaned = DeviceThread("usb"), threading.Event(), threading.Event()
    entered = threading.Event()

    def stuck_write():
        entered.set()
        release.wait()

    with pytest.raises(DeviceStalled):
        device.call(stuck_write, timeout=0.05, what="write")
    assert entered.wait(30)
    device.retire(cleaned.set)
    assert not cleaned.is_set() and device.alive  # still inside the driver: nothing closed under it
    release.set()
    assert cleaned.wait(30)
    wait_until_ended(device)


def test_retiring_an_idle_thread_runs_the_cleanup_and_ends_it():
    device = DeviceThread("usb")
    retire_and_wait(device)
    assert device.stuck  # no call is taken any more
