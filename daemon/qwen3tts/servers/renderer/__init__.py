"""A UPnP/DLNA MediaRenderer: the box as a media player Home Assistant and Music Assistant already know.

Home Assistant's DLNA Digital Media Renderer integration and Music Assistant's DLNA provider (both on
async-upnp-client's DmrDevice) find it over SSDP, send SetAVTransportURI + Play, poll or subscribe to
its state, and set its volume. The media is fetched and decoded here, within limits, and handed to the
`MediaOutlet` the service passes (the announcement queue); the servers never import the appliance.

    outlet.py       Media and the MediaOutlet protocol: the one hand-off
    fetch.py        the URL fetched with size, time and content-type limits
    decode.py       bytes -> 24 kHz mono PCM, only the audio containers we decode
    metadata.py     the title in the controller's DIDL-Lite metadata
    player.py       the state machine (NO_MEDIA_PRESENT, STOPPED, TRANSITIONING, PLAYING), volume, mute
    avtransport.py  rendering.py  the UPnP services; events.py their LastChange
    device.py       the MediaRenderer device; guard.py the request guard; site.py serving and SSDP
"""
