"""The AVTransport service: SetAVTransportURI, Play, Stop and what a controller polls.

No `from __future__ import annotations` here: async-upnp-client checks each action's parameter
annotations against the state variables' Python types at run time.
"""

import logging
import xml.etree.ElementTree as ET  # builds the library's descriptor stubs only; nothing is parsed

from async_upnp_client.client import UpnpRequester
from async_upnp_client.const import ServiceInfo
from async_upnp_client.exceptions import UpnpActionError
from async_upnp_client.server import callable_action, create_event_var, create_state_var

from qwen3tts.servers.renderer.events import AVT_EVENT_NS, EventingService, last_change, upnp_time
from qwen3tts.servers.renderer.fetch import MediaError
from qwen3tts.servers.renderer.guard import controller_address
from qwen3tts.servers.renderer.player import Player

log = logging.getLogger(__name__)

INVALID_INSTANCE_ID = 718
_STATES = ["STOPPED", "PLAYING", "TRANSITIONING", "NO_MEDIA_PRESENT"]
_STRING = (
    "TransportStatus",
    "CurrentTrackDuration",
    "CurrentMediaDuration",
    "CurrentTrackMetaData",
    "CurrentTrackURI",
    "AVTransportURI",
    "AVTransportURIMetaData",
    "NextAVTransportURI",
    "NextAVTransportURIMetaData",
    "RelativeTimePosition",
    "AbsoluteTimePosition",
    "CurrentTransportActions",
    "PlaybackStorageMedium",
    "RecordStorageMedium",
    "PossiblePlaybackStorageMedia",
    "PossibleRecordStorageMedia",
    "RecordMediumWriteStatus",
    "CurrentPlayMode",
    "CurrentRecordQualityMode",
    "PossibleRecordQualityModes",
)


def check_instance(instance_id: int) -> None:
    if instance_id != 0:
        raise UpnpActionError(error_code=INVALID_INSTANCE_ID, error_desc="Invalid InstanceID")


class AVTransportService(EventingService):
    SERVICE_DEFINITION = ServiceInfo(
        service_id="urn:upnp-org:serviceId:AVTransport",
        service_type="urn:schemas-upnp-org:service:AVTransport:1",
        control_url="/upnp/control/AVTransport",
        event_sub_url="/upnp/event/AVTransport",
        scpd_url="/AVTransport.xml",
        xml=ET.Element("server_service"),
    )
    STATE_VARIABLE_DEFINITIONS = {  # noqa: RUF012 (the library reads a class attribute)
        "TransportState": create_state_var("string", allowed=_STATES, default="NO_MEDIA_PRESENT"),
        "TransportPlaySpeed": create_state_var("string", allowed=["1"], default="1"),
        "NumberOfTracks": create_state_var("ui4", allowed_range={"min": "0", "max": "1"}, default="0"),
        "CurrentTrack": create_state_var("ui4", default="0"),
        "RelativeCounterPosition": create_state_var("i4", default="2147483647"),
        "AbsoluteCounterPosition": create_state_var("i4", default="2147483647"),
        "LastChange": create_event_var(
            "string", default=""
        ),  # no max_rate: the library cannot defer (see events.py)
        "A_ARG_TYPE_InstanceID": create_state_var("ui4", default="0"),
        **{name: create_state_var("string", default="") for name in _STRING},
    }

    def __init__(self, requester: UpnpRequester) -> None:
        super().__init__(requester)
        self.player: Player | None = None  # set by the site before it serves

    def attach(self, player: Player) -> None:
        self.player = player
        player.on_change(self._publish)
        self._publish()

    def _publish(self) -> None:
        player = self.player
        values = {
            "TransportState": player.state,
            "TransportStatus": player.status,
            "CurrentTransportActions": player.actions,
            "AVTransportURI": player.uri,
            "CurrentTrackURI": player.uri,
            "NumberOfTracks": "1" if player.uri else "0",
            "CurrentMediaDuration": upnp_time(player.duration),
            "CurrentTrackDuration": upnp_time(player.duration),
        }
        self.state_variable("LastChange").value = last_change(AVT_EVENT_NS, values)

    @callable_action(
        name="SetAVTransportURI",
        in_args={
            "InstanceID": "A_ARG_TYPE_InstanceID",
            "CurrentURI": "AVTransportURI",
            "CurrentURIMetaData": "AVTransportURIMetaData",
        },
        out_args={},
    )
    async def set_uri(self, InstanceID: int, CurrentURI: str, CurrentURIMetaData: str) -> dict:
        check_instance(InstanceID)
        _upnp_error(lambda: self.player.set_uri(CurrentURI, CurrentURIMetaData))
        return {}

    @callable_action(
        name="Play",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID", "Speed": "TransportPlaySpeed"},
        out_args={},
    )
    async def play(self, InstanceID: int, Speed: str) -> dict:
        check_instance(InstanceID)
        try:
            await self.player.play(controller_address())
        except MediaError as exc:
            raise UpnpActionError(error_code=exc.code, error_desc=str(exc)[:200]) from None
        return {}

    @callable_action(name="Stop", in_args={"InstanceID": "A_ARG_TYPE_InstanceID"}, out_args={})
    async def stop(self, InstanceID: int) -> dict:
        check_instance(InstanceID)
        self.player.stop()
        return {}

    @callable_action(
        name="GetTransportInfo",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID"},
        out_args={
            "CurrentTransportState": "TransportState",
            "CurrentTransportStatus": "TransportStatus",
            "CurrentSpeed": "TransportPlaySpeed",
        },
    )
    async def transport_info(self, InstanceID: int) -> dict:
        check_instance(InstanceID)
        return {
            "CurrentTransportState": self.player.state,
            "CurrentTransportStatus": self.player.status,
            "CurrentSpeed": "1",
        }

    @callable_action(
        name="GetPositionInfo",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID"},
        out_args={
            "Track": "CurrentTrack",
            "TrackDuration": "CurrentTrackDuration",
            "TrackMetaData": "CurrentTrackMetaData",
            "TrackURI": "CurrentTrackURI",
            "RelTime": "RelativeTimePosition",
            "AbsTime": "AbsoluteTimePosition",
            "RelCount": "RelativeCounterPosition",
            "AbsCount": "AbsoluteCounterPosition",
        },
    )
    async def position_info(self, InstanceID: int) -> dict:
        check_instance(InstanceID)
        player, position = self.player, upnp_time(self.player.position())
        return {
            "Track": 1 if player.uri else 0,
            "TrackDuration": upnp_time(player.duration),
            "TrackMetaData": player.metadata,
            "TrackURI": player.uri,
            "RelTime": position,
            "AbsTime": position,
            "RelCount": 2147483647,
            "AbsCount": 2147483647,
        }

    @callable_action(
        name="GetMediaInfo",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID"},
        out_args={
            "NrTracks": "NumberOfTracks",
            "MediaDuration": "CurrentMediaDuration",
            "CurrentURI": "AVTransportURI",
            "CurrentURIMetaData": "AVTransportURIMetaData",
            "NextURI": "NextAVTransportURI",
            "NextURIMetaData": "NextAVTransportURIMetaData",
            "PlayMedium": "PlaybackStorageMedium",
            "RecordMedium": "RecordStorageMedium",
            "WriteStatus": "RecordMediumWriteStatus",
        },
    )
    async def media_info(self, InstanceID: int) -> dict:
        check_instance(InstanceID)
        player = self.player
        return {
            "NrTracks": 1 if player.uri else 0,
            "MediaDuration": upnp_time(player.duration),
            "CurrentURI": player.uri,
            "CurrentURIMetaData": player.metadata,
            "NextURI": "",
            "NextURIMetaData": "",
            "PlayMedium": "NETWORK" if player.uri else "NONE",
            "RecordMedium": "NOT_IMPLEMENTED",
            "WriteStatus": "NOT_IMPLEMENTED",
        }

    @callable_action(
        name="GetCurrentTransportActions",
        in_args={"InstanceID": "A_ARG_TYPE_InstanceID"},
        out_args={"Actions": "CurrentTransportActions"},
    )
    async def transport_actions(self, InstanceID: int) -> dict:
        check_instance(InstanceID)
        return {"Actions": self.player.actions}


def _upnp_error(call) -> None:
    try:
        call()
    except MediaError as exc:
        raise UpnpActionError(error_code=exc.code, error_desc=str(exc)[:200]) from None
