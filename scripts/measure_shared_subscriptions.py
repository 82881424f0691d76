"""What mosquitto does with a shared subscription when a member is slow, dead or gone (issue 23 item 3).

Starts its own mosquitto on a free loopback port and drives plain paho MQTT 5 clients (no qwen3tts code),
so what it prints is the broker's behaviour, not ours. docs/operations.md ("A synthesis pool") quotes it.

    .venv/bin/python scripts/measure_shared_subscriptions.py [--mosquitto /usr/sbin/mosquitto] [--settle-s 1]

Each experiment has three members of `$share/g/pool/say` unless it says otherwise; "acks" means the
member acknowledges a message as soon as it arrives, "holds" that it never does (a member too busy to
take its share), "dead" that its socket closes without DISCONNECT (what a SIGKILL leaves the broker).
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

SHARED = "$share/g/pool/say"
TOPIC = "pool/say"
SETTLE_S = 1.0
"""How long each experiment lets the broker deliver before it counts (--settle-s); the figures docs quote
were taken with 1 s. The suite's smoke run takes less: it checks that the script runs, not the counts."""


class Member:
    """One MQTT 5 client of the shared subscription; counts what it got, acks by hand or holds."""

    def __init__(self, port, name, *, ack=True, receive_maximum=20, session_expiry=3600, ack_delay=0.0,
                 subscribe=True):  # fmt: skip
        self.name, self.ack, self.ack_delay = name, ack, ack_delay
        self.got: list[tuple[bytes, bool]] = []  # (payload, dup)
        self.unacked: dict[int, int] = {}  # mid -> qos
        self.peak_unacked = 0
        self.lock = threading.Lock()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=name, protocol=paho.MQTTv5,
                                  manual_ack=True)  # fmt: skip
        self.client.on_message = self._on_message
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = session_expiry
        props.ReceiveMaximum = receive_maximum
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *a: subscribed.set()
        self.client.connect("127.0.0.1", port, clean_start=False, properties=props)
        self.client.loop_start()
        if subscribe:
            self.client.subscribe(SHARED, qos=1)
            subscribed.wait(5)

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.got.append((bytes(msg.payload), bool(msg.dup)))
            self.unacked[msg.mid] = msg.qos
            self.peak_unacked = max(self.peak_unacked, len(self.unacked))
        if self.ack:
            if self.ack_delay:
                threading.Timer(self.ack_delay, self.ack_one, (msg.mid,)).start()
            else:
                self.ack_one(msg.mid)

    def ack_one(self, mid):
        with self.lock:
            qos = self.unacked.pop(mid, None)
        if qos:
            self.client.ack(mid, qos)

    def ack_all(self):
        self.ack = True
        for mid in list(self.unacked):
            self.ack_one(mid)

    def unsubscribe(self):
        done = threading.Event()
        self.client.on_unsubscribe = lambda *a: done.set()
        self.client.unsubscribe(SHARED)
        done.wait(5)

    def die(self):
        """Close the socket without DISCONNECT, as the kernel does for a SIGKILLed process."""
        sock = self.client.socket()
        self.client.loop_stop()
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def leave(self, session_expiry=None):
        props = None
        if session_expiry is not None:
            props = Properties(PacketTypes.DISCONNECT)
            props.SessionExpiryInterval = session_expiry
        self.client.disconnect(properties=props)
        self.client.loop_stop()

    def count(self):
        with self.lock:
            return len(self.got)


class Broker:
    def __init__(self, binary: str):
        self.dir = Path(tempfile.mkdtemp(prefix="mosq-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        (self.dir / "m.conf").write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
        )
        self.process = subprocess.Popen([binary, "-c", str(self.dir / "m.conf")], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("mosquitto did not start")

    def stop(self):
        self.process.terminate()
        self.process.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


def publish(port, count, start=0, expiry=None, gap=0.002):
    """QoS 1 publishes; returns the PUBACK reason codes (16 = no matching subscribers)."""
    codes: list[int] = []
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    client.on_publish = lambda c, u, mid, rc, p: codes.append(rc.value)
    client.connect("127.0.0.1", port)
    client.loop_start()
    for n in range(start, start + count):
        props = None
        if expiry is not None:
            props = Properties(PacketTypes.PUBLISH)
            props.MessageExpiryInterval = expiry
        client.publish(TOPIC, f"m{n}", qos=1, properties=props).wait_for_publish(5)
        time.sleep(gap)
    client.disconnect()
    client.loop_stop()
    return codes


def counts(*members):
    return " ".join(f"{m.name}={m.count()}" for m in members)


def round_robin_with_a_member_that_holds(port):
    a = Member(port, "rr-a", ack=False, receive_maximum=2)
    b, c = Member(port, "rr-b"), Member(port, "rr-c")
    publish(port, 30)
    time.sleep(SETTLE_S)
    held = counts(a, b, c)
    a.ack_all()
    time.sleep(SETTLE_S)
    print(f"1. round robin, a holds (Receive Maximum 2), 30 messages: got {held}; "
          f"after a acks: {counts(a, b, c)}")  # fmt: skip
    for m in (a, b, c):
        m.leave(0)


def receive_maximum(port, receive_max, ack_delay):
    """One member alone: how many unacknowledged messages the broker lets it have."""
    label = f"acks after {ack_delay * 1000:.0f} ms" if ack_delay else "holds"
    m = Member(port, "rm", receive_maximum=receive_max, ack=bool(ack_delay), ack_delay=ack_delay)
    publish(port, 60, gap=0.0)
    time.sleep(3 * SETTLE_S)  # acks 0.2 s late, two at a time: the peak is reached in the first second
    print(f"2. one member that {label}, Receive Maximum {receive_max}, 60 messages: at most "
          f"{m.peak_unacked} unacknowledged at once ({m.count()} received)")  # fmt: skip
    m.ack_all()
    m.leave(0)


def dead_member(port, session_expiry):
    a = Member(port, f"dead-{session_expiry}-a", ack=False, receive_maximum=2, session_expiry=session_expiry)
    b, c = Member(port, f"dead-{session_expiry}-b"), Member(port, f"dead-{session_expiry}-c")
    publish(port, 12)
    time.sleep(SETTLE_S)
    before = counts(a, b, c)
    a.die()
    time.sleep(SETTLE_S)
    after_death = counts(b, c)
    publish(port, 30, start=100)
    time.sleep(SETTLE_S)
    while_dead = counts(b, c)
    back = Member(port, a.name, subscribe=False, session_expiry=session_expiry)
    time.sleep(SETTLE_S)
    dups = sum(1 for _, dup in back.got if dup)
    print(f"3. a dies (session expiry {session_expiry} s) holding its share: before {before}; "
          f"b, c right after: {after_death}; 30 more while a is dead: {while_dead}; a reconnects: "
          f"{back.count()} messages ({dups} flagged DUP)")  # fmt: skip
    for m in (back, b, c):
        m.ack_all()
        m.leave(0)


def unsubscribe_while_holding(port):
    a = Member(port, "unsub-a", ack=False, receive_maximum=2)
    b, c = Member(port, "unsub-b"), Member(port, "unsub-c")
    publish(port, 12)
    time.sleep(SETTLE_S)
    before = counts(a, b, c)
    a.unsubscribe()
    publish(port, 30, start=100)
    time.sleep(SETTLE_S)
    after = counts(a, b, c)
    a.ack_all()
    time.sleep(SETTLE_S)
    print(f"4. a holds, then unsubscribes: before {before}; 30 more after the unsubscribe: {after}; "
          f"a then acks: {counts(a, b, c)} (what was assigned to a stays a's)")  # fmt: skip
    for m in (a, b, c):
        m.leave(0)


def expiry_at_a_dead_member(port):
    a = Member(port, "exp-a", ack=False, receive_maximum=2)
    b = Member(port, "exp-b")
    a.die()
    time.sleep(0.3)
    publish(port, 10, expiry=2)
    time.sleep(3)
    back = Member(port, "exp-a", subscribe=False)
    time.sleep(SETTLE_S)
    print(f"5. 10 messages with Message Expiry 2 s while a is dead, a back after 3 s: a got {back.count()}, "
          f"b got {b.count()}")  # fmt: skip
    for m in (back, b):
        m.ack_all()
        m.leave(0)


def takeover(port):
    a = Member(port, "take-a", ack=False, receive_maximum=2)
    b, c = Member(port, "take-b"), Member(port, "take-c")
    publish(port, 12)
    time.sleep(SETTLE_S)
    a.die()
    publish(port, 9, start=100)
    time.sleep(SETTLE_S)
    held_for_a = 12 // 3 + 9 // 3
    rescuer = Member(port, "take-a", subscribe=False)  # b's process, connecting with a's client id
    time.sleep(SETTLE_S)
    rescuer.unsubscribe()
    rescued = rescuer.count()
    rescuer.leave(0)
    publish(port, 30, start=200)
    time.sleep(SETTLE_S)
    back = Member(port, "take-a", subscribe=False)
    time.sleep(SETTLE_S)
    print(f"6. session takeover: a dies holding ~{held_for_a}; a peer connects with a's client id and gets "
          f"{rescued}, unsubscribes, leaves with session expiry 0; 30 more: {counts(b, c)}; "
          f"a restarts and gets {back.count()}")  # fmt: skip
    for m in (back, b, c):
        m.leave(0)


def no_member(port):
    a = Member(port, "none-a")
    a.unsubscribe()
    codes = publish(port, 3)
    print(f"7. every member unsubscribed: PUBACK reason codes {codes} "
          "(16 = no matching subscribers: dropped)")  # fmt: skip
    a.leave(0)


def main() -> None:
    global SETTLE_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mosquitto", default=shutil.which("mosquitto") or "/usr/sbin/mosquitto")
    parser.add_argument("--settle-s", type=float, default=SETTLE_S, help="delivery time before a count")
    args = parser.parse_args()
    SETTLE_S = args.settle_s
    version = subprocess.run([args.mosquitto, "-h"], capture_output=True, text=True).stdout.splitlines()[0]
    print(version)
    limits = [partial(receive_maximum, receive_max=rm, ack_delay=d) for rm in (2, 65535) for d in (0.0, 0.2)]
    for experiment in (round_robin_with_a_member_that_holds, *limits, lambda p: dead_member(p, 3600),
                       lambda p: dead_member(p, 0), unsubscribe_while_holding, expiry_at_a_dead_member,
                       takeover, no_member):  # fmt: skip
        broker = Broker(args.mosquitto)
        try:
            experiment(broker.port)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
