"""The renderer's UPnP device: a MediaRenderer:1 with AVTransport, RenderingControl, ConnectionManager.

Its UDN is derived from its name and the host name, so a controller (Home Assistant keys its entity
on it) finds the same device after a restart, and two boxes with two names are two devices.
"""

from __future__ import annotations

import socket
import uuid
import xml.etree.ElementTree as ET  # builds the library's descriptor stubs only; nothing is parsed

from async_upnp_client.const import DeviceInfo
from async_upnp_client.server import UpnpServerDevice

from qwen3tts import __version__
from qwen3tts.errors import ConfigError
from qwen3tts.servers.renderer.avtransport import AVTransportService
from qwen3tts.servers.renderer.rendering import ConnectionManagerService, RenderingControlService

DEVICE_TYPE = "urn:schemas-upnp-org:device:MediaRenderer:1"
DESCRIPTION_PATH = "/device.xml"
MAX_NAME_CHARS = 64


def friendly_name(configured: str | None) -> str:
    """The configured name, else `qwen3tts <host name>`; ConfigError naming the key if unusable."""
    name = configured if configured is not None else f"qwen3tts {socket.gethostname().split('.')[0]}"
    if not name.strip() or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise ConfigError(
            f"servers.renderer.name: {name[:80]!r} must be 1 to {MAX_NAME_CHARS} printable characters"
        )
    return name


def device_udn(name: str) -> str:
    return f"uuid:{uuid.uuid5(uuid.NAMESPACE_DNS, f'{name}.{socket.gethostname()}.qwen3tts-renderer')}"


def renderer_device_class(name: str) -> type[UpnpServerDevice]:
    """A device class for this name (the library reads the definition from the class)."""
    definition = DeviceInfo(
        device_type=DEVICE_TYPE,
        friendly_name=name,
        manufacturer="qwen3tts",
        manufacturer_url=None,
        model_description="Qwen3-TTS voice appliance: media played as announcements",
        model_name="qwen3tts renderer",
        model_number=__version__,
        model_url=None,
        serial_number=None,
        udn=device_udn(name),
        upc=None,
        presentation_url=None,
        url=DESCRIPTION_PATH,
        icons=[],
        xml=ET.Element("server_device"),
    )
    return type(
        "RendererDevice",
        (UpnpServerDevice,),
        {
            "DEVICE_DEFINITION": definition,
            "EMBEDDED_DEVICES": [],
            "SERVICES": [AVTransportService, RenderingControlService, ConnectionManagerService],
        },
    )
