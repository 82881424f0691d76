"""LastChange: how AVTransport and RenderingControl tell subscribers what changed (UPnP AV, 2.3.1).

One evented variable per service holds an <Event> document with InstanceID 0's current values;
async-upnp-client's server sends it to every subscriber when it changes, and Home Assistant's DmrDevice
expands it back into the variables (dlna_handle_notify_last_change).

The variables are declared without a `max_rate`: async-upnp-client 0.49's server defers a rate-limited
event with the wall clock on the loop's monotonic clock and never clears the deferral, so after the
first deferred change no event would go out again. Our changes are few (one per state step).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from xml.sax.saxutils import quoteattr

from async_upnp_client.server import EventSubscriber, UpnpServerService

log = logging.getLogger(__name__)

AVT_EVENT_NS = "urn:schemas-upnp-org:metadata-1-0/AVT/"
RCS_EVENT_NS = "urn:schemas-upnp-org:metadata-1-0/RCS/"


def last_change(namespace: str, values: dict[str, str], channel: str | None = None) -> str:
    """The LastChange document for InstanceID 0 with these variables (a channel attribute for RCS)."""
    extra = f" channel={quoteattr(channel)}" if channel else ""
    body = "".join(f"<{name} val={quoteattr(value)}{extra}/>" for name, value in values.items())
    return f'<Event xmlns="{namespace}"><InstanceID val="0">{body}</InstanceID></Event>'


def upnp_time(seconds: float) -> str:
    """H:MM:SS, as AVTransport writes durations and positions."""
    whole = max(int(seconds), 0)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class EventingService(UpnpServerService):
    """A service whose events never fail silently: a subscriber whose callback does not take its NOTIFY
    is dropped with one log line (the library would leave it, and an unretrieved task traceback, for
    every later change until the subscription expires)."""

    async def async_send_events(self, subscriber: EventSubscriber | None = None) -> None:
        if subscriber is not None:  # a new subscription: its failure refuses it (the library's handler)
            await super().async_send_events(subscriber)
            return
        now = datetime.now()
        current = [each for each in self._subscribers if now < each.expiration]
        self._subscribers[:] = current
        send = super().async_send_events
        results = await asyncio.gather(*(send(each) for each in current), return_exceptions=True)
        for each, result in zip(current, results, strict=True):
            if isinstance(result, Exception):
                self.del_subscriber(each.uuid)
                log.info("renderer: subscriber %s dropped: its callback failed (%s)", each.url[:100],
                         type(result).__name__)  # fmt: skip
