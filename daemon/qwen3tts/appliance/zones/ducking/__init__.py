"""Ducking: lowering a zone's other audio while an announcement plays (docs/operations.md, "Ducking").

zone_ducking.py  ZoneDucking: when to duck and restore, the ramp, one backend's failure never another's
alsa.py          an ALSA mixer control of the zone's card
snapcast.py      the volumes of a Snapcast group's clients
mqtt.py          a duck / unduck message for Home Assistant or Music Assistant (the message: mqtt/duck.py)
backends.py      each zone's ZoneDucking from the settings

The playback calls it through audio/ducking_hook.py (the audio package may not import zones).
"""
