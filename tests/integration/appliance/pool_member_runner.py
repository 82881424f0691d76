"""A pool member with its real workers, nothing synthesised: `IntakeRunner` plus the box's `PoolMember`.

As in mqtt_intake_runner.py the engine never runs, so the first announcement a member queues becomes the
playing one for good and the others wait: a member that takes `max_waiting` more is saturated and holds
the rest of its round-robin share unacknowledged. Its own topics work as usual (`qwen3tts/<site>/say`
makes it busy on its own). Used in-process (`PoolRunner`) and as a subprocess a test SIGKILLs
(`python pool_member_runner.py HOST PORT SITE SPOOL_DIR GROUP [withhold-acks]`): it prints
`REPLAYED <json ids>` after loading the spool and `READY` once it is in the round robin. With
`withhold-acks` it spools pooled messages but never acknowledges them: killed then, it is a member killed
between its spool write and its acknowledgement reaching the broker, held open for as long as a test needs.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))  # also when run as a script

from mqtt_intake_runner import IntakeRunner, serve_until_sigterm

from qwen3tts.appliance.mqtt.intake import Intake
from qwen3tts.appliance.mqtt.pool import PoolTopics
from qwen3tts.appliance.mqtt.pool_member import PoolMember
from qwen3tts.settings import MqttSettings

POOL_BASE = "qwen3tts/pool"


class PoolRunner(IntakeRunner):
    """One box of a pool: its own door (IntakeRunner) and its pool membership."""

    def __init__(self, host: str, port: int, site: str, spool_dir: Path, *, group: str = "g",
                 max_waiting: int = 2, max_delay: float = 30.0,
                 withhold_acks: bool = False) -> None:  # fmt: skip
        super().__init__(host, port, site, spool_dir)
        mqtt = MqttSettings(host=host, port=port, site=site, pool=group, pool_max_waiting=max_waiting,
                            pool_max_delay=max_delay)  # fmt: skip
        self.pool_topics = PoolTopics(group, POOL_BASE)
        policy, own = self.intake.policy, self.client.topics

        def intake(handover) -> Intake:
            return Intake(handover, policy, self.pool_topics.intake_topics(own), self.client.publish)

        self.pool = PoolMember(mqtt, self.pool_topics, site, f"{self.client.client_id}-pool",
                               announcer=self.announcer, make_intake=intake,
                               room=self.client.backlog.wait_for_room)  # fmt: skip
        if withhold_acks:  # the fake: the link's pooled messages reach the pool without their ack
            post = self.pool.link._on_inbound
            self.pool.link._on_inbound = lambda inbound: post(replace(inbound, ack=None))

    def _on_event(self, ann, event: str, reason: str, warnings: tuple[str, ...], **zones) -> None:
        super()._on_event(ann, event, reason, warnings, **zones)
        self.pool.on_queue(self.queue)  # the announcer's thread, as the service does it

    def start(self, timeout: float = 5.0) -> PoolRunner:
        self.pool.drop_rescued(self.queue.spool)  # before the replay, as the service does it
        super().start(timeout)
        self.pool.start(self.supervisor)
        if not self.pool.link.in_round_robin.wait(timeout):
            raise TimeoutError("the pool link did not join the round robin")
        return self

    def stop(self) -> None:
        self.pool.close()
        super().stop()
        self.pool.stop()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    host, port, site, spool_dir, group = argv[0], int(argv[1]), argv[2], Path(argv[3]), argv[4]
    withhold = argv[5:] == ["withhold-acks"]
    return serve_until_sigterm(PoolRunner(host, port, site, spool_dir, group=group, withhold_acks=withhold))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
