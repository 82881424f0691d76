"""bench/memory.py's per-component account: consecutive growths of the resident set, so they add up."""

from __future__ import annotations

from qwen3tts.bench import memory


class FakeCompiler:
    """A PartCompiler's four hooks; each step moves the (fake) resident set by a known amount."""

    def __init__(self, resident: list[int], steps: dict[str, int]):
        self.resident, self.steps = resident, steps

    def read(self, path):
        self.resident[0] += self.steps.get(f"read {path}", 0)
        return path

    def compile(self, component, model, *args, **kwargs):
        self.resident[0] += self.steps.get(f"compile {component}", 0)
        return component

    def build(self, component, make):
        self.resident[0] += self.steps.get(f"build {component}", 0)
        return make()

    def warm_up(self, component, run):
        self.resident[0] += self.steps.get(f"warm {component}", 0)
        return run()


def test_each_graph_owns_its_read_compile_and_warm_up_and_the_rest_is_named(monkeypatch):
    resident = [100]
    monkeypatch.setattr(memory, "rss_bytes", lambda: resident[0])
    monkeypatch.setattr(memory, "mapped_file_names", lambda: set())
    steps = {"read talker.xml": 5, "compile talker": 40, "warm talker": -3}
    steps |= {"compile codec": 7, "warm codec": 2, "read predictor.xml": 1, "build code_predictor": 3}
    compiler = FakeCompiler(resident, steps)
    ledger = memory.RssLedger.attach(compiler)
    compiler.read("talker.xml")
    compiler.compile("talker", None)
    assert compiler.warm_up("talker", lambda: 11) == 11  # what the warm-up returns (released bytes) goes back
    resident[0] += 1  # between two graphs: counted for the next one
    compiler.read("codec.xml")
    compiler.compile("codec", None)
    compiler.warm_up("codec", lambda: 0)
    compiler.read("predictor.xml")
    assert compiler.build("code_predictor", lambda: "frame") == "frame"  # the fused frame: no compile
    assert dict(ledger.deltas) == {"talker": 42, "codec": 10, "code_predictor": 4}

    resident[0] += 6  # tokenizer, tables
    loaded = resident[0]
    parts = memory.components({"python_numpy_and_cli": 75}, ledger, loaded, loaded + 9)
    assert parts == {
        "python_numpy_and_cli": 75,
        "openvino_and_bench": 25,
        "talker": 42,
        "codec": 10,
        "code_predictor": 4,
        "tokenizer_tables_kv_pool": 6,
        "runs": 9,
    }
    assert sum(parts.values()) == loaded + 9
