"""RenderingControl (volume and mute of channel Master) and ConnectionManager (the formats we take).

No `from __future__ import annotations` here: async-upnp-client checks each action's parameter
annotations against the state variables' Python types at run time.
"""

import xml.etree.ElementTree as ET  # builds the library's descriptor stubs only; nothing is parsed

from async_upnp_client.client import UpnpRequester
from async_upnp_client.const import ServiceInfo
from async_upnp_client.server import UpnpServerService, callable_action, create_event_var, create_state_var

from qwen3tts.servers.renderer.avtransport import check_instance
from qwen3tts.servers.renderer.decode import SINK_TYPES
from qwen3tts.servers.renderer.events import RCS_EVENT_NS, EventingService, last_change
from qwen3tts.servers.renderer.player import Player

SINK_PROTOCOL_INFO = ",".join(f"http-get:*:{kind}:*" for kind in SINK_TYPES)


class RenderingControlService(EventingService):
    SERVICE_DEFINITION = ServiceInfo(
        service_id="urn:upnp-org:serviceId:RenderingControl",
        service_type="urn:schemas-upnp-org:service:RenderingControl:1",
        control_url="/upnp/control/RenderingControl",
        event_sub_url="/upnp/event/RenderingControl",
        scpd_url="/RenderingControl.xml",
        xml=ET.Element("server_service"),
    )
    STATE_VARIABLE_DEFINITIONS = {  # noqa: RUF012 (the library reads a class attribute)
        "Volume": create_state_var(
            "ui2", allowed_range={"min": "0", "max": "100", "step": "1"}, default="50"
        ),
        "Mute": create_state_var("boolean", default="0"),
        "PresetNameList": create_state_var("string", default="FactoryDefaults"),
        "LastChange": create_event_var(
            "string", default=""
        ),  # no max_rate: the library cannot defer (see events.py)
        "A_ARG_TYPE_Channel": create_state_var("string", allowed=["Master"], default="Master"),
        "A_ARG_TYPE_InstanceID": create_state_var("ui4", default="0"),
    }

    def __init__(self, requester: UpnpRequester) -> None:
        super().__init__(requester)
        self.player: Player | None = None

    def attach(self, player: Player) -> None:
        self.player = player
        player.on_change(self._publish)
        self._publish()

    def _publish(self) -> None:
        values = {"Volume": str(self.player.volume), "Mute": "1" if self.player.muted else "0"}
        self.state_variable("LastChange").value = last_change(RCS_EVENT_NS, values, channel="Master")

    @callable_action(
        name="GetVolume",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID", "Channel": "A_ARG_TYPE_Channel"},
        out_args={"CurrentVolume": "Volume"},
    )
    async def get_volume(self, InstanceID: int, Channel: str) -> dict:
        check_instance(InstanceID)
        return {"CurrentVolume": self.player.volume}

    @callable_action(
        name="SetVolume",
        in_args={
            "InstanceID": "A_ARG_TYPE_InstanceID",
            "Channel": "A_ARG_TYPE_Channel",
            "DesiredVolume": "Volume",
        },
        out_args={},
    )
    async def set_volume(self, InstanceID: int, Channel: str, DesiredVolume: int) -> dict:
        check_instance(InstanceID)
        self.player.set_volume(DesiredVolume)  # the range 0..100 is checked by the library first
        return {}

    @callable_action(
        name="GetMute",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID", "Channel": "A_ARG_TYPE_Channel"},
        out_args={"CurrentMute": "Mute"},
    )
    async def get_mute(self, InstanceID: int, Channel: str) -> dict:
        check_instance(InstanceID)
        return {"CurrentMute": self.player.muted}

    @callable_action(
        name="SetMute",
        in_args={
            "InstanceID": "A_ARG_TYPE_InstanceID",
            "Channel": "A_ARG_TYPE_Channel",
            "DesiredMute": "Mute",
        },
        out_args={},
    )
    async def set_mute(self, InstanceID: int, Channel: str, DesiredMute: bool) -> dict:
        check_instance(InstanceID)
        self.player.set_muted(DesiredMute)
        return {}


class ConnectionManagerService(UpnpServerService):
    SERVICE_DEFINITION = ServiceInfo(
        service_id="urn:upnp-org:serviceId:ConnectionManager",
        service_type="urn:schemas-upnp-org:service:ConnectionManager:1",
        control_url="/upnp/control/ConnectionManager",
        event_sub_url="/upnp/event/ConnectionManager",
        scpd_url="/ConnectionManager.xml",
        xml=ET.Element("server_service"),
    )
    STATE_VARIABLE_DEFINITIONS = {  # noqa: RUF012 (the library reads a class attribute)
        "SourceProtocolInfo": create_state_var("string", default=""),
        "SinkProtocolInfo": create_state_var("string", default=SINK_PROTOCOL_INFO),
        "CurrentConnectionIDs": create_state_var("string", default="0"),
        "A_ARG_TYPE_ConnectionID": create_state_var("i4", default="0"),
        "A_ARG_TYPE_RcsID": create_state_var("i4", default="0"),
        "A_ARG_TYPE_AVTransportID": create_state_var("i4", default="0"),
        "A_ARG_TYPE_ProtocolInfo": create_state_var("string", default=""),
        "A_ARG_TYPE_ConnectionManager": create_state_var("string", default=""),
        "A_ARG_TYPE_Direction": create_state_var("string", allowed=["Input", "Output"], default="Input"),
        "A_ARG_TYPE_ConnectionStatus": create_state_var("string", allowed=["OK", "Unknown"], default="OK"),
    }

    @callable_action(
        name="GetProtocolInfo",
        in_args={},
        out_args={"Source": "SourceProtocolInfo", "Sink": "SinkProtocolInfo"},
    )
    async def protocol_info(self) -> dict:
        return {"Source": "", "Sink": SINK_PROTOCOL_INFO}

    @callable_action(
        name="GetCurrentConnectionIDs", in_args={}, out_args={"ConnectionIDs": "CurrentConnectionIDs"}
    )
    async def connection_ids(self) -> dict:
        return {"ConnectionIDs": "0"}

    @callable_action(
        name="GetCurrentConnectionInfo",
        in_args={"ConnectionID": "A_ARG_TYPE_ConnectionID"},
        out_args={
            "RcsID": "A_ARG_TYPE_RcsID",
            "AVTransportID": "A_ARG_TYPE_AVTransportID",
            "ProtocolInfo": "A_ARG_TYPE_ProtocolInfo",
            "PeerConnectionManager": "A_ARG_TYPE_ConnectionManager",
            "PeerConnectionID": "A_ARG_TYPE_ConnectionID",
            "Direction": "A_ARG_TYPE_Direction",
            "Status": "A_ARG_TYPE_ConnectionStatus",
        },
    )
    async def connection_info(self, ConnectionID: int) -> dict:
        return {
            "RcsID": 0,
            "AVTransportID": 0,
            "ProtocolInfo": "",
            "PeerConnectionManager": "",
            "PeerConnectionID": -1,
            "Direction": "Input",
            "Status": "OK",
        }
