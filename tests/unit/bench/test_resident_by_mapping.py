"""bench/memory.py's smaps reading: resident bytes per mapped file, anonymous memory pooled."""

from qwen3tts.bench.memory import resident_by_mapping

SMAPS = """\
7f0000000000-7f0010000000 r--s 00000000 08:01 42 /bundle/talker.bin
Size:             262144 kB
Rss:                8192 kB
Anonymous:             0 kB
7f0010000000-7f0020000000 r--s 00000000 08:01 43 /cache/123.blob
Rss:                2048 kB
Anonymous:             0 kB
5600000000-5600100000 rw-p 00000000 00:00 0 [heap]
Rss:                3072 kB
Anonymous:          3072 kB
7f0030000000-7f0040000000 rw-p 00000000 00:00 0
Rss:                5120 kB
Anonymous:          5120 kB
7f0050000000-7f0050010000 r--s 00000000 08:01 44 /bundle/tiny.bin
Rss:                  64 kB
Anonymous:             0 kB
"""


def test_files_by_name_anonymous_pooled_small_ones_left_out():
    found = resident_by_mapping(SMAPS, min_bytes=1 << 20)
    assert found == {
        "talker.bin": {"rss": 8 << 20, "anonymous": 0},
        "[anon]": {"rss": 8 << 20, "anonymous": 8 << 20},  # heap + an unnamed mapping
        "123.blob": {"rss": 2 << 20, "anonymous": 0},
    }
    assert list(found)[-1] == "123.blob"  # largest first


def test_resident_by_component_claims_each_components_mapped_files_and_its_anonymous_growth(monkeypatch):
    from qwen3tts.bench import memory

    mib = 1 << 20
    section = {
        "mapped_by_component": {
            "talker": ["talker.bin", "libopenvino_intel_cpu_plugin.so"],  # a library is nobody's weights
            "code_predictor": ["123.blob"],
        },
        "load_rss_delta_bytes": {"talker": 430 * mib, "code_predictor": 300 * mib},
    }
    mapping = {
        "talker.bin": {"rss": 424 * mib, "anonymous": 0},
        "123.blob": {"rss": 117 * mib, "anonymous": 0},
        "libopenvino_intel_cpu_plugin.so": {"rss": 30 * mib, "anonymous": 0},
    }
    monkeypatch.setattr(memory, "status_bytes", lambda: {"VmRSS": 1000 * mib})
    account = memory.resident_by_component(section, mapping)
    assert account["talker"] == {"file_bytes": 424 * mib, "anonymous_bytes": 6 * mib, "files": ["talker.bin"]}
    assert account["code_predictor"]["file_bytes"] == 117 * mib
    assert account["code_predictor"]["anonymous_bytes"] == 183 * mib
    assert account["other"]["bytes"] == (1000 - 424 - 6 - 117 - 183) * mib
