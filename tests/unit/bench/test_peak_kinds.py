"""Which measured peak bounds each stage in `qwen3tts bench` (bench/suite.py's peak_kinds): a stage that
runs without a compiled graph (the fused native code predictor on an INT4 bundle) has none to ask."""

from qwen3tts.bench.suite import peak_kinds


class Compiled:
    """The recording compiler's answer: the precision of each graph it compiled, None for the others."""

    def __init__(self, **compiled):
        self.compiled = compiled

    def precision(self, component):
        return self.compiled.get(component)


def test_a_stage_without_a_compiled_graph_takes_the_compressed_weight_peak():
    manifest = {"talker": "int8", "code_predictor": "int4_sym_g128", "codec": "f16"}
    kinds = peak_kinds(Compiled(codec="f32"), manifest)  # the INT4 frame: no code-predictor graph
    assert kinds == {"talker": "int8_weights", "code_predictor": "int8_weights", "codec": "f32"}


def test_a_compiled_stage_takes_the_precision_it_was_compiled_with():
    manifest = {"talker": "int8", "code_predictor": "int4_sym_g128", "codec": "f16"}
    kinds = peak_kinds(Compiled(code_predictor="f32", codec="bf16"), manifest)
    assert kinds == {"talker": "int8_weights", "code_predictor": "f32", "codec": "bf16"}
