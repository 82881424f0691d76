"""Names and shapes of the tensors in a release `model.safetensors`, derived from a ModelSpec.

The names are the state-dict names of the official `Qwen3TTSForConditionalGeneration` (keys
`talker.*`, plus `speaker_encoder.*` in Base). One function per upstream module, so the reader that
validates a checkpoint and the writer of random checkpoints agree by construction.
"""

from __future__ import annotations

from qwen3tts.model.spec import CodePredictorSpec, ModelSpec, SpeakerEncoderSpec, TalkerSpec

Shapes = dict[str, tuple[int, ...]]


def model_tensor_shapes(spec: ModelSpec) -> Shapes:
    """Every tensor of `model.safetensors` for this spec, name -> shape (PyTorch layouts)."""
    shapes = talker_tensor_shapes(spec.talker)
    shapes.update(code_predictor_tensor_shapes(spec.code_predictor))
    if spec.speaker_encoder is not None:
        shapes.update(speaker_encoder_tensor_shapes(spec.speaker_encoder))
    return shapes


def decoder_layer_shapes(
    prefix: str,
    hidden: int,
    intermediate: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
) -> Shapes:
    """One Qwen3 decoder layer (`Qwen3TTSDecoderLayer` / `Qwen3TTSTalkerDecoderLayer`); Linear: (out, in)."""
    return {
        f"{prefix}.input_layernorm.weight": (hidden,),
        f"{prefix}.post_attention_layernorm.weight": (hidden,),
        f"{prefix}.self_attn.q_proj.weight": (num_heads * head_dim, hidden),
        f"{prefix}.self_attn.k_proj.weight": (num_kv_heads * head_dim, hidden),
        f"{prefix}.self_attn.v_proj.weight": (num_kv_heads * head_dim, hidden),
        f"{prefix}.self_attn.o_proj.weight": (hidden, num_heads * head_dim),
        f"{prefix}.self_attn.q_norm.weight": (head_dim,),
        f"{prefix}.self_attn.k_norm.weight": (head_dim,),
        f"{prefix}.mlp.gate_proj.weight": (intermediate, hidden),
        f"{prefix}.mlp.up_proj.weight": (intermediate, hidden),
        f"{prefix}.mlp.down_proj.weight": (hidden, intermediate),
    }


def talker_tensor_shapes(talker: TalkerSpec) -> Shapes:
    """`Qwen3TTSTalkerForConditionalGeneration` minus its code predictor."""
    h, text_h = talker.hidden_size, talker.text_hidden_size
    shapes: Shapes = {
        "talker.model.text_embedding.weight": (talker.text_vocab_size, text_h),
        "talker.model.codec_embedding.weight": (talker.vocab_size, h),
        "talker.model.norm.weight": (h,),
        "talker.text_projection.linear_fc1.weight": (text_h, text_h),
        "talker.text_projection.linear_fc1.bias": (text_h,),
        "talker.text_projection.linear_fc2.weight": (h, text_h),
        "talker.text_projection.linear_fc2.bias": (h,),
        "talker.codec_head.weight": (talker.vocab_size, h),
    }
    for i in range(talker.num_hidden_layers):
        shapes.update(
            decoder_layer_shapes(
                f"talker.model.layers.{i}",
                h,
                talker.intermediate_size,
                talker.num_attention_heads,
                talker.num_key_value_heads,
                talker.head_dim,
            )
        )
    return shapes


def code_predictor_tensor_shapes(cp: CodePredictorSpec) -> Shapes:
    """`Qwen3TTSTalkerCodePredictorModelForConditionalGeneration` (prefix `talker.code_predictor`)."""
    prefix = "talker.code_predictor"
    shapes: Shapes = {f"{prefix}.model.norm.weight": (cp.hidden_size,)}
    for i in range(cp.num_hidden_layers):
        shapes.update(
            decoder_layer_shapes(
                f"{prefix}.model.layers.{i}",
                cp.hidden_size,
                cp.intermediate_size,
                cp.num_attention_heads,
                cp.num_key_value_heads,
                cp.head_dim,
            )
        )
    # codes 1..G-1 each have an input table (talker width) and an output head
    for j in range(cp.num_code_groups - 1):
        shapes[f"{prefix}.model.codec_embedding.{j}.weight"] = (cp.vocab_size, cp.input_size)
        shapes[f"{prefix}.lm_head.{j}.weight"] = (cp.vocab_size, cp.hidden_size)
    if cp.has_input_projection:
        shapes[f"{prefix}.small_to_mtp_projection.weight"] = (cp.hidden_size, cp.input_size)
        shapes[f"{prefix}.small_to_mtp_projection.bias"] = (cp.hidden_size,)
    return shapes


def _conv(prefix: str, out_ch: int, in_ch: int, kernel: int) -> Shapes:
    """A Conv1d with bias; weight is (out, in, kernel)."""
    return {f"{prefix}.weight": (out_ch, in_ch, kernel), f"{prefix}.bias": (out_ch,)}


def speaker_encoder_tensor_shapes(se: SpeakerEncoderSpec) -> Shapes:
    """`Qwen3TTSSpeakerEncoder` (ECAPA-TDNN, prefix `speaker_encoder`)."""
    ch, kernels = se.enc_channels, se.enc_kernel_sizes
    shapes = _conv("speaker_encoder.blocks.0.conv", ch[0], se.mel_dim, kernels[0])
    for i in range(1, len(ch) - 1):  # SE-Res2Net blocks
        block = f"speaker_encoder.blocks.{i}"
        part = ch[i] // se.enc_res2net_scale
        shapes.update(_conv(f"{block}.tdnn1.conv", ch[i], ch[i - 1], 1))
        for j in range(se.enc_res2net_scale - 1):
            shapes.update(_conv(f"{block}.res2net_block.blocks.{j}.conv", part, part, kernels[i]))
        shapes.update(_conv(f"{block}.tdnn2.conv", ch[i], ch[i], 1))
        shapes.update(_conv(f"{block}.se_block.conv1", se.enc_se_channels, ch[i], 1))
        shapes.update(_conv(f"{block}.se_block.conv2", ch[i], se.enc_se_channels, 1))
    shapes.update(_conv("speaker_encoder.mfa.conv", ch[-1], ch[-1], kernels[-1]))
    shapes.update(_conv("speaker_encoder.asp.tdnn.conv", se.enc_attention_channels, ch[-1] * 3, 1))
    shapes.update(_conv("speaker_encoder.asp.conv", ch[-1], se.enc_attention_channels, 1))
    shapes.update(_conv("speaker_encoder.fc", se.enc_dim, ch[-1] * 2, 1))
    return shapes
