"""The MQTT door as the service runs it: the paho client, the intake worker, and their lifecycle.

Built from the `mqtt` settings and the running announcer; started after READY, stopped last (the final
status and `offline` go out through it), and rebuilt when a SIGHUP changed the MQTT settings. With
`mqtt.pool` set, the box's pool membership too (appliance/mqtt/pool_member.py): its own connection,
a second intake on the pool's topics with the same policy, answering through the box's connection.
"""

from __future__ import annotations

from qwen3tts import __version__
from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.appliance.mqtt.discovery import discovery_configs, voice_messages
from qwen3tts.appliance.mqtt.intake import Intake
from qwen3tts.appliance.mqtt.messages import Say
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.pool import PoolTopics
from qwen3tts.appliance.mqtt.pool_member import PoolMember
from qwen3tts.appliance.mqtt.spooled import SpooledCheck
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.errors import ConfigError
from qwen3tts.settings import Settings
from qwen3tts.voices.catalog import VoiceCatalog


class MqttDoor:
    """One MQTT connection and the intake behind it."""

    def __init__(self, settings: Settings, announcer: Announcer, catalog: VoiceCatalog, publish, heartbeat,
                 *, supports_instruct: bool, play_finished=None):  # fmt: skip
        self.settings = settings
        self.catalog = catalog
        zones = tuple(announcer.playbacks)  # the zones it plays in: the say field and zone topics name these
        self.client = MqttClient(settings.mqtt, on_inbound=self._post, zones=zones)
        policy = AnnouncementPolicy.from_settings(
            settings.announcements,
            max_text_chars=settings.engine.max_text_chars,
            catalog=catalog,
            supports_instruct=supports_instruct,
            zones=zones,
            chimes=announcer.lookahead.sounds.chime_names(),
        )
        topics = self.client.topics
        self.spooled_check = SpooledCheck(policy, topics)
        """The door's validation of what the spool holds, for the announcer's replay (spooled.py)."""
        self.intake = Intake(
            announcer, policy, topics, publish,
            hermes_site_id=settings.mqtt.hermes_site_id,
            hermes_chime=settings.mqtt.hermes_chime,
            play_finished=play_finished,
            discovery=(lambda: discovery_configs(topics, voices=catalog.names, sw_version=__version__))
            if settings.mqtt.discovery else None,
            heartbeat=heartbeat,
            room=self.client.backlog.wait_for_room,
        )  # fmt: skip
        self.pool = self._pool_member(policy, announcer, publish, heartbeat) if settings.mqtt.pool else None

    def _pool_member(self, policy, announcer, publish, heartbeat) -> PoolMember:
        """The pool side; its workers beat the intake's heartbeat (a reload may drop the pool, and a
        heartbeat once registered must keep beating)."""
        mqtt, own = self.settings.mqtt, self.client.topics
        topics = PoolTopics(mqtt.pool, mqtt.pool_topic or f"{mqtt.prefix}/pool")
        if topics.say == Say.topic_for(own.base):
            raise ConfigError(f"mqtt.pool_topic: the pool's topic {topics.say} is this box's own say topic")

        def intake(handover) -> Intake:
            return Intake(handover, policy, topics.intake_topics(own), publish, heartbeat=heartbeat)

        return PoolMember(mqtt, topics, own.base.rsplit("/", 1)[-1], f"{self.client.client_id}-pool",
                          announcer=announcer, make_intake=intake, room=self.client.backlog.wait_for_room,
                          heartbeat=heartbeat)  # fmt: skip

    def drop_rescued(self, spool) -> None:
        """Before the announcer replays `spool`: what a rescuer of our pool session took goes."""
        if self.pool is not None:
            self.pool.drop_rescued(spool)

    def _post(self, inbound) -> None:
        self.intake.post(inbound)

    @property
    def topics(self):
        return self.client.topics

    def start(self, supervisor: Supervisor) -> None:
        """The intake worker, then the connection (which subscribes and says `online`)."""
        supervisor.start("intake", self.intake.run)
        self.client.start(supervisor)
        if self.pool is not None:
            self.pool.start(supervisor)
        self.announce_voices()

    def stop_intake(self) -> None:
        """Stop reading: what arrives now stays unacknowledged at the broker, which delivers it again."""
        self.intake.close()
        if self.pool is not None:
            self.pool.close()

    def stop(self, *, final: bool = True) -> None:
        """Disconnect; `final` (not a reload's reconnect) also tells the pool this member is gone."""
        self.intake.close()
        if self.pool is not None:
            self.pool.stop(offline=final)
        self.client.stop()

    def on_queue(self, announcements) -> None:
        """The announcer's thread, after each event: the pool's gate follows the queue."""
        if self.pool is not None:
            self.pool.on_queue(announcements)

    def pool_status(self) -> dict[str, object]:
        return self.pool.status() if self.pool is not None else {}

    def publish(self, message):
        """paho's message info (None: dropped)."""
        return self.client.publish(message)

    def announce_voices(self) -> None:
        """The retained `voices` topic and Home Assistant's entities (its voice select lists them all)."""
        for message in voice_messages(
            self.topics, self.catalog, discovery=self.settings.mqtt.discovery, sw_version=__version__
        ):
            self.client.publish(message)
