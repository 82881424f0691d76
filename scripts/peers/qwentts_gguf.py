"""Convert a Hugging Face Qwen3-TTS 12 Hz checkpoint (release layout) into the two GGUFs qwentts.cpp loads.

The qwentts-cpp-python wheel ships no converter (upstream converts with its own scripts and publishes ready
GGUFs), so this writes the layout the wheel's libqwen (revision 6fae929) reads: the metadata keys and tensor
names below are the ones its loader looks up. Weights: every matrix of the talker and the code predictor
(embeddings and heads included) and of the codec's transformer in Q8_0, norms, convolutions, codebooks and
projections in F32, which is what upstream's Q8_0 files hold ("RVQ codebooks and projections stay F32").
Runs in the peers venv (torch for bf16 safetensors, gguf for the writer):

    python scripts/peers/qwentts_gguf.py CHECKPOINT_DIR OUT_DIR [--code-predictor Q4_0]

`--code-predictor Q4_0` writes the code predictor's layer matrices in Q4_0 (symmetric 4-bit, one f16 scale
per 32: like our INT4_SYM `int4-cp` bundle) and the rest as above, into `qwen-talker-...-Q8_0-cpQ4_0.gguf`.
Upstream publishes Q4_K_M files, but gguf-py cannot write k-quants and the wheel has no quantizer, so
Q4_0 is the 4-bit format we can make here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import gguf
import numpy as np
from safetensors import safe_open

Q8 = gguf.GGMLQuantizationType.Q8_0
Q4 = gguf.GGMLQuantizationType.Q4_0
LM_SUFFIX = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
TALKER_TOP = {
    "talker.model.codec_embedding.weight": "talker.codec_embd.weight",
    "talker.model.text_embedding.weight": "talker.text_embd.weight",
    "talker.model.norm.weight": "talker.output_norm.weight",
    "talker.codec_head.weight": "talker.codec_head.weight",
    "talker.code_predictor.model.norm.weight": "code_pred.output_norm.weight",
    "talker.code_predictor.small_to_mtp_projection.weight": "code_pred.mtp_proj.weight",
    "talker.code_predictor.small_to_mtp_projection.bias": "code_pred.mtp_proj.bias",
}


def tensors(path: Path):
    with safe_open(str(path), framework="pt") as f:
        for key in sorted(f.keys()):
            yield key, f.get_tensor(key).float().numpy()


def add(writer, name: str, arr: np.ndarray, quantize: bool, kind=Q8) -> None:
    if quantize and arr.ndim == 2 and arr.shape[-1] % 32 == 0:
        writer.add_tensor(name, gguf.quants.quantize(arr, kind), raw_dtype=kind)
    else:
        writer.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))


def talker_name(key: str) -> str | None:
    if key in TALKER_TOP:
        return TALKER_TOP[key]
    if m := re.match(r"talker\.model\.layers\.(\d+)\.(.+)$", key):
        return f"talker.blk.{m[1]}.{LM_SUFFIX[m[2]]}"
    if m := re.match(r"talker\.code_predictor\.model\.layers\.(\d+)\.(.+)$", key):
        return f"code_pred.blk.{m[1]}.{LM_SUFFIX[m[2]]}"
    if m := re.match(r"talker\.code_predictor\.model\.codec_embedding\.(\d+)\.weight$", key):
        return f"code_pred.codec_embd.{m[1]}.weight"
    if m := re.match(r"talker\.code_predictor\.lm_head\.(\d+)\.weight$", key):
        return f"code_pred.lm_head.{m[1]}.weight"
    if m := re.match(r"talker\.text_projection\.linear_fc(\d)\.(weight|bias)$", key):
        return f"talker.text_proj.fc{m[1]}.{m[2]}"
    return None


def write_talker(ckpt: Path, out: Path, code_predictor=Q8) -> None:
    cfg = json.loads((ckpt / "config.json").read_text())
    t, cp = cfg["talker_config"], cfg["talker_config"]["code_predictor_config"]
    w = gguf.GGUFWriter(str(out), "qwen3-tts")
    w.add_string("qwen3-tts.tokenizer_type", cfg["tokenizer_type"])
    w.add_string("qwen3-tts.model_size", cfg["tts_model_size"])
    w.add_string("qwen3-tts.model_type", cfg["tts_model_type"])
    w.add_uint32("qwen3-tts.num_code_groups", t["num_code_groups"])
    for prefix, c in (("talker", t), ("code_pred", cp)):
        p = f"qwen3-tts.{prefix}"
        w.add_uint32(f"{p}.embedding_length", c["hidden_size"])
        w.add_uint32(f"{p}.feed_forward_length", c["intermediate_size"])
        w.add_uint32(f"{p}.block_count", c["num_hidden_layers"])
        w.add_uint32(f"{p}.attention.head_count", c["num_attention_heads"])
        w.add_uint32(f"{p}.attention.head_count_kv", c["num_key_value_heads"])
        w.add_uint32(f"{p}.attention.key_length", c["head_dim"])
        w.add_uint32(f"{p}.vocab_size", c["vocab_size"])
        w.add_uint32(f"{p}.context_length", c["max_position_embeddings"])
        w.add_float32(f"{p}.rope.freq_base", float(c["rope_theta"]))
        w.add_float32(f"{p}.attention.layer_norm_rms_epsilon", float(c["rms_norm_eps"]))
    rope = t.get("rope_scaling") or {}
    if "mrope_section" in rope:
        w.add_array("qwen3-tts.talker.rope.mrope_section", rope["mrope_section"])
        w.add_bool("qwen3-tts.talker.rope.mrope_interleaved", bool(rope.get("interleaved", False)))
    for key, src in (
        ("pad_id", "codec_pad_id"),
        ("bos_id", "codec_bos_id"),
        ("eos_id", "codec_eos_token_id"),
        ("think_id", "codec_think_id"),
        ("nothink_id", "codec_nothink_id"),
        ("think_bos_id", "codec_think_bos_id"),
        ("think_eos_id", "codec_think_eos_id"),
    ):
        w.add_uint32(f"qwen3-tts.codec.{key}", t[src])
    langs = t.get("codec_language_id") or {}
    w.add_array("qwen3-tts.codec.language_names", list(langs))
    w.add_array("qwen3-tts.codec.language_ids", [int(v) for v in langs.values()])
    speakers = t.get("spk_id") or {}
    if speakers:
        dialects = t.get("spk_is_dialect") or {}
        w.add_array("qwen3-tts.codec.speaker_names", list(speakers))
        w.add_array(
            "qwen3-tts.codec.speaker_ids",
            [int(v[0] if isinstance(v, list) else v) for v in speakers.values()],
        )
        w.add_array(
            "qwen3-tts.codec.speaker_dialects",
            [d if isinstance(d := dialects.get(k), str) else "" for k in speakers],
        )
    for key in ("im_start", "im_end", "tts_pad", "tts_bos", "tts_eos"):
        w.add_uint32(f"qwen3-tts.text.{key}_id", cfg[f"{key}_token_id"])
    vocab = json.loads((ckpt / "vocab.json").read_text())
    added = json.loads((ckpt / "tokenizer_config.json").read_text()).get("added_tokens_decoder", {})
    size = max([*vocab.values(), *map(int, added)]) + 1
    tokens, types = [f"<|unused-{i}|>" for i in range(size)], [5] * size
    for tok, i in vocab.items():
        tokens[i], types[i] = tok, 1
    for i, info in added.items():
        tokens[int(i)], types[int(i)] = info["content"], 4
    merges = [ln for ln in (ckpt / "merges.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", merges)
    for key, arr in tensors(ckpt / "model.safetensors"):
        name = talker_name(key)
        if name is None:
            raise SystemExit(f"unhandled talker tensor {key}")
        layer_matrix = name.startswith("code_pred.blk.") and not name.endswith("norm.weight")
        kind = code_predictor if layer_matrix else Q8
        add(w, name, arr, quantize=not name.endswith("norm.weight"), kind=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def codec_name(key: str) -> str | None:
    p = key.split(".")
    if key.startswith("decoder.pre_conv."):
        return f"tok_dec.pre_conv.{p[-1]}"
    if m := re.match(r"decoder\.pre_transformer\.(input_proj|output_proj|norm)\.(weight|bias)$", key):
        return f"tok_dec.pre_tfm.{m[1]}.{m[2]}"
    if m := re.match(r"decoder\.pre_transformer\.layers\.(\d+)\.(.+)$", key):
        rest = {"self_attn_layer_scale.scale": "attn_scale", "mlp_layer_scale.scale": "ffn_scale"}.get(m[2])
        return f"tok_dec.pre_tfm.blk.{m[1]}.{rest or LM_SUFFIX[m[2]]}"
    if key.startswith("decoder.upsample."):
        if p[3] == "0":
            return f"tok_dec.upsample.{p[2]}.conv.{p[-1]}"
        return f"tok_dec.upsample.{p[2]}.{'gamma' if p[4] == 'gamma' else p[4] + '.' + p[-1]}"
    if key.startswith("decoder.decoder."):
        i = int(p[2])
        if i in (0, 6):
            return f"tok_dec.dec.{i}.conv.{p[-1]}"
        if i == 5:
            return f"tok_dec.dec.5.snake.{p[-1]}"
        j = int(p[4])
        if j == 0:
            return f"tok_dec.dec.{i}.snake.{p[-1]}"
        if j == 1:
            return f"tok_dec.dec.{i}.conv_t.{p[-1]}"
        return f"tok_dec.dec.{i}.res.{j - 2}.{p[5]}.{p[-1]}"
    if key.startswith("decoder.quantizer.") and key.endswith(".output_proj.weight"):
        return f"tok_dec.vq_{'first' if 'rvq_first' in key else 'rest'}.output_proj.weight"
    if key.startswith("encoder.encoder.layers."):
        return f"tok_enc.conv.{p[3]}.{p[-1]}" if len(p) == 6 else f"tok_enc.res.{p[3]}.blk.{p[5]}.{p[-1]}"
    if m := re.match(r"encoder\.encoder_transformer\.layers\.(\d+)\.(.+)$", key):
        rest = m[2]
        for a, b in (
            ("input_layernorm", "attn_norm"),
            ("post_attention_layernorm", "ffn_norm"),
            ("self_attn.q_proj", "attn_q"),
            ("self_attn.k_proj", "attn_k"),
            ("self_attn.v_proj", "attn_v"),
            ("self_attn.o_proj", "attn_output"),
            ("mlp.fc1", "ffn_up"),
            ("mlp.fc2", "ffn_down"),
        ):
            if rest.startswith(a + "."):
                return f"tok_enc.blk.{m[1]}.{b}.{rest.rsplit('.', 1)[-1]}"
        return f"tok_enc.blk.{m[1]}.{'attn_scale' if rest.startswith('self_attn_layer') else 'ffn_scale'}"
    if key.startswith("encoder.downsample."):
        return f"tok_enc.downsample.{p[-1]}"
    if key.startswith("encoder.quantizer.") and (
        key.endswith("input_proj.weight") or key.endswith("output_proj.weight")
    ):
        side = "semantic" if "semantic" in key else "acoustic"
        return f"tok_enc.vq_{side}.{'input_proj' if 'input_proj' in key else 'output_proj'}.weight"
    return None


def write_codec(ckpt: Path, out: Path) -> None:
    cfg = json.loads((ckpt / "config.json").read_text())
    dec, enc = cfg["decoder_config"], cfg["encoder_config"]
    w = gguf.GGUFWriter(str(out), "qwen3-tts-tokenizer")
    for key in (
        "input_sample_rate",
        "output_sample_rate",
        "decode_upsample_rate",
        "encode_downsample_rate",
        "encoder_valid_num_quantizers",
    ):
        w.add_uint32(f"qwen3-tts-tokenizer.{key}", cfg[key])
    for side, c in (("decoder", dec), ("encoder", enc)):
        for key, value in c.items():
            name = "vector_quantization_hidden_dim" if key == "vector_quantization_hidden_dimension" else key
            if isinstance(value, bool) or not isinstance(value, (int, float, list)):
                continue
            k = f"qwen3-tts-tokenizer.{side}.{name}"
            if isinstance(value, list):
                w.add_array(k, value)
            elif isinstance(value, float) or key in ("rope_theta", "rms_norm_eps", "norm_eps"):
                w.add_float32(k, float(value))
            else:
                w.add_uint32(k, value)
    w.add_uint32("qwen3-tts-tokenizer.decoder.codebook_dim_internal", 256)
    kept_acoustic = cfg["encoder_valid_num_quantizers"] - enc["num_semantic_quantizers"]
    books: dict[tuple, dict] = {}
    for key, arr in tensors(ckpt / "model.safetensors"):
        if key.endswith(("embed_sum", "embedding_sum", "cluster_usage")):
            p = key.split(".")
            if p[0] == "decoder":
                books.setdefault((f"tok_dec.{p[2][1:]}", int(p[5])), {})[p[-1]] = arr
            elif "semantic" in p[2] or int(p[4]) < kept_acoustic:
                side = "semantic" if "semantic" in p[2] else "acoustic"
                books.setdefault((f"tok_enc.vq_{side}", int(p[4])), {})[p[-1]] = arr
            continue
        if key.endswith(("initialized", ".input_proj.weight")) and key.startswith("decoder.quantizer."):
            continue
        if key.endswith("initialized"):
            continue
        name = codec_name(key)
        if name is None:
            raise SystemExit(f"unhandled codec tensor {key}")
        add(w, name, arr, quantize=name.startswith("tok_dec.pre_tfm.blk.") and "norm" not in name)
    for (prefix, i), b in sorted(books.items()):
        total = b.get("embed_sum", b.get("embedding_sum"))
        add(
            w,
            f"{prefix}.{i}.codebook",
            total / np.clip(b["cluster_usage"], 1e-5, None)[:, None],
            quantize=False,
        )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv: list[str]) -> int:
    ckpt, out = Path(argv[0]), Path(argv[1])
    four_bit = argv[2:] == ["--code-predictor", "Q4_0"]
    out.mkdir(parents=True, exist_ok=True)
    kind = json.loads((ckpt / "config.json").read_text())["tts_model_type"].replace("_", "")
    size = json.loads((ckpt / "config.json").read_text())["tts_model_size"].lower()
    talker = out / f"qwen-talker-{size}-{kind}-Q8_0{'-cpQ4_0' if four_bit else ''}.gguf"
    write_talker(ckpt, talker, Q4 if four_bit else Q8)
    print("wrote", talker)
    codec = out / "qwen-tokenizer-12hz-Q8_0.gguf"
    if not codec.exists():
        write_codec(ckpt / "speech_tokenizer", codec)
        print("wrote", codec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
