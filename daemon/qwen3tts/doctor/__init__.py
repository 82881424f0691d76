"""`qwen3tts doctor`: every link of the chain an appliance needs, checked once, each with ✔/✘ and the fix.

check.py holds the result type and its rendering; platform.py the machine (OpenVINO and its devices,
device nodes, drivers, disk, thermal sensors); service.py what the daemon is configured to use (the
bundle, spool and quarantine, the broker, the audio output). thermal.py is the detailed sensor listing
of `doctor --thermal`.
"""
