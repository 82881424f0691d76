"""Capture the official talker / code-predictor computation of one generation, stage by stage.

The prompt comes from the official code itself: `Qwen3TTSForConditionalGeneration.generate` builds
it and hands it to `talker.generate`, where a wrapper records it. The stages are then replayed by
hand on the official modules (prefill, teacher-forced decode, code predictor), following
the official loop, and a hand-written greedy loop must reproduce the official greedy codes
exactly, which proves that the replay is the same computation. Runs only in the reference venv.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from transformers.cache_utils import DynamicCache


class ReplayMismatchError(RuntimeError):
    """The hand-written replay does not reproduce the official generate()."""


@dataclass
class OfficialRun:
    """What the official generate() saw and returned for one request (batch of one)."""

    input_ids: np.ndarray  # (T,) chat-formatted target text ids
    instruct_ids: np.ndarray | None  # (I,) chat-formatted instruct ids, None without instruct
    prompt_embeds: torch.Tensor  # (1, L, H)
    trailing_text: torch.Tensor  # (1, K, H)
    tts_pad_embed: torch.Tensor  # (1, 1, H)
    codes: torch.Tensor  # (F, 16) greedy codes, frames from the first EOS on dropped
    hidden: torch.Tensor  # (F, H) talker hidden state that produced each frame's code 0
    talker_kwargs: dict = field(default_factory=dict)
    output: object = None  # what the wrapper call returned: (waveforms, sample rate)
    ref_ids: np.ndarray | None = None  # (R,) chat-formatted reference transcript ids (ICL), else None
    voice_clone_prompt: dict | None = None  # base: what generate() got (ref_code, ref_spk_embedding, ...)


def capture_official(tts, call) -> OfficialRun:
    """Run `call()` (a wrapper generate_* call) while recording the prompt and the returned codes."""
    model = tts.model
    seen: dict = {}
    model_generate, talker_generate = model.generate, model.talker.generate

    def record_model(*args, **kwargs):
        seen["model"] = kwargs
        seen["result"] = model_generate(*args, **kwargs)
        return seen["result"]

    def record_talker(*args, **kwargs):
        seen["talker"] = kwargs
        return talker_generate(*args, **kwargs)

    model.generate, model.talker.generate = record_model, record_talker
    try:
        output = call()
    finally:
        del model.generate, model.talker.generate  # drop the instance attributes again
    kw, talker_kw = seen["model"], seen["talker"]
    if len(kw["input_ids"]) != 1 or talker_kw["inputs_embeds"].shape[0] != 1:
        raise ValueError("capture_official expects a batch of one")
    instruct = (kw.get("instruct_ids") or [None])[0]
    ref = (kw.get("ref_ids") or [None])[0]
    codes, hidden = seen["result"]
    return OfficialRun(
        input_ids=kw["input_ids"][0][0].numpy().astype(np.int64),
        instruct_ids=None if instruct is None else instruct[0].numpy().astype(np.int64),
        prompt_embeds=talker_kw["inputs_embeds"].detach(),
        trailing_text=talker_kw["trailing_text_hidden"].detach(),
        tts_pad_embed=talker_kw["tts_pad_embed"].detach(),
        codes=codes[0].detach(),
        hidden=hidden[0].detach(),
        talker_kwargs={k: v for k, v in talker_kw.items() if isinstance(v, (int, float, bool, list))},
        output=output,
        ref_ids=None if ref is None else ref[0].numpy().astype(np.int64),
        voice_clone_prompt=kw.get("voice_clone_prompt"),
    )


class TalkerReplay:
    """The talker loop written with the official modules."""

    def __init__(self, model):
        self.talker = model.talker
        self.config = model.config.talker_config

    def _positions(self, start: int, length: int) -> torch.Tensor:
        # all three MRoPE rows carry the same plain positions (batch of one, no left padding)
        return torch.arange(start, start + length).view(1, 1, -1).expand(3, 1, -1)

    def prefill(self, prompt_embeds: torch.Tensor):
        """(1, L, H) prompt -> (cache, hidden (L, H) after the final norm, code-0 logits (V,))."""
        cache = DynamicCache()
        positions = self._positions(0, prompt_embeds.shape[1])
        out = self.talker.model(
            inputs_embeds=prompt_embeds, position_ids=positions, past_key_values=cache, use_cache=True
        )
        hidden = out.last_hidden_state[0]  # (L, H)
        return cache, hidden, self.talker.codec_head(hidden[-1])

    def frame_input(self, frame: torch.Tensor, text_vector: torch.Tensor) -> torch.Tensor:
        """Next talker input: sum of the 16 code embeddings of `frame` (16,) plus the text-track vector."""
        embed = self.talker.get_input_embeddings()(frame[:1].view(1, 1))
        tables = self.talker.code_predictor.get_input_embeddings()
        for j in range(self.config.num_code_groups - 1):
            embed = embed + tables[j](frame[j + 1 : j + 2].view(1, 1))
        return embed + text_vector.view(1, 1, -1)  # (1, 1, H)

    def decode_step(self, cache, position: int, step_input: torch.Tensor):
        """One talker step at `position`: (1, 1, H) input -> (hidden (H,), code-0 logits (V,))."""
        out = self.talker.model(
            inputs_embeds=step_input,
            position_ids=self._positions(position, 1),
            past_key_values=cache,
            use_cache=True,
        )
        hidden = out.last_hidden_state[0, -1]
        return hidden, self.talker.codec_head(hidden)

    def text_vector(self, run: OfficialRun, step: int) -> torch.Tensor:
        """Text-track vector added at decode step `step`: the trailing text, then tts_pad."""
        trailing = run.trailing_text[0]
        return trailing[step] if step < trailing.shape[0] else run.tts_pad_embed.view(-1)

    def code_predictor(self, hidden: torch.Tensor, frame: torch.Tensor, pick=None):
        """Teacher-forced code predictor for one frame: (15, codebook) logits for codes 1..15.

        `frame` (16,) gives code 0 and the codes fed back; with `pick` (logits -> code) the fed-back codes
        come from `pick` instead, which makes it the free-running greedy predictor. Returns (logits, codes).
        """
        predictor = self.talker.code_predictor
        cache = DynamicCache()
        code0_embed = self.talker.get_input_embeddings()(frame[:1].view(1, 1))  # the talker's table
        step_input = torch.cat([hidden.view(1, 1, -1), code0_embed], 1)  # (1, 2, H)
        codes, logits = [int(frame[0])], []
        for j in range(self.config.num_code_groups - 1):
            out = predictor.model(
                inputs_embeds=predictor.small_to_mtp_projection(step_input),
                past_key_values=cache,
                use_cache=True,
            )
            step_logits = predictor.lm_head[j](out.last_hidden_state[0, -1])  # (codebook,)
            logits.append(step_logits)
            code = int(frame[j + 1]) if pick is None else pick(step_logits)
            codes.append(code)
            step_input = predictor.model.codec_embedding[j](torch.tensor([[code]]))
        return torch.stack(logits), torch.tensor(codes)

    def processed_code0_logits(self, logits: torch.Tensor, generated: list[int], repetition_penalty: float):
        """HF processor order: repetition penalty, min_new_tokens=2 (no EOS), suppress specials."""
        logits = logits.clone()
        for token in set(generated):
            value = logits[token]
            logits[token] = value / repetition_penalty if value > 0 else value * repetition_penalty
        eos = self.config.codec_eos_token_id
        if len(generated) < 2:
            logits[eos] = -float("inf")
        vocab = self.config.vocab_size
        logits[[i for i in range(vocab - 1024, vocab) if i != eos]] = -float("inf")
        return logits

    def greedy_code0(self, logits: torch.Tensor, generated: list[int], repetition_penalty: float) -> int:
        return int(self.processed_code0_logits(logits, generated, repetition_penalty).argmax())


def _argmax(logits: torch.Tensor) -> int:
    return int(logits.argmax())


def _margin(logits: torch.Tensor) -> float:
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


@torch.no_grad()
def greedy_replay(model, run: OfficialRun, max_new_tokens: int, repetition_penalty: float):
    """The whole greedy generation written by hand. Returns the (F, 16) codes (N sampled tokens give
    N-1 frames) and the smallest top-1 gaps of the talker's and the code predictor's greedy choices."""
    replay = TalkerReplay(model)
    cache, hidden, logits = replay.prefill(run.prompt_embeds)
    prompt_len, past_hidden = hidden.shape[0], hidden[-1]
    generated, frames, margins = [], [], {"talker": [], "code_predictor": []}

    def pick(step_logits: torch.Tensor) -> int:
        margins["code_predictor"].append(_margin(step_logits))
        return _argmax(step_logits)

    for step in range(max_new_tokens):
        processed = replay.processed_code0_logits(logits, generated, repetition_penalty)
        margins["talker"].append(_margin(processed))
        code0 = _argmax(processed)
        generated.append(code0)
        if code0 == replay.config.codec_eos_token_id or step == max_new_tokens - 1:
            break  # the last sampled token never gets its code-predictor pass
        _, frame = replay.code_predictor(past_hidden, torch.tensor([code0]), pick=pick)
        frames.append(frame)
        step_input = replay.frame_input(frame, replay.text_vector(run, step))
        past_hidden, logits = replay.decode_step(cache, prompt_len + step, step_input)
    return torch.stack(frames), {name: min(values) for name, values in margins.items()}


@torch.no_grad()
def teacher_forced(model, run: OfficialRun, num_decode_steps: int, num_predictor_frames: int) -> dict:
    """Prefill, `num_decode_steps` talker steps fed with the official greedy frames, and the code
    predictor for the first `num_predictor_frames` frames. Returns float32 numpy arrays by fixture name.
    With as many steps as frames (a run that ended with EOS), the last step's logits choose EOS."""
    frames = run.codes
    if num_decode_steps > frames.shape[0] or num_predictor_frames > num_decode_steps + 1:
        raise ValueError(f"{frames.shape[0]} frames cannot feed {num_decode_steps} decode steps")
    replay = TalkerReplay(model)
    cache, prefill_hidden, prefill_logits = replay.prefill(run.prompt_embeds)
    prompt_len = prefill_hidden.shape[0]
    inputs, hiddens, logits = [], [], []
    for step in range(num_decode_steps):
        step_input = replay.frame_input(frames[step], replay.text_vector(run, step))
        hidden, step_logits = replay.decode_step(cache, prompt_len + step, step_input)
        inputs.append(step_input.view(-1))
        hiddens.append(hidden)
        logits.append(step_logits)
    # the hidden state that produced frame f's code 0: prefill for f = 0, decode step f-1 after that
    producing = torch.stack([prefill_hidden[-1], *hiddens])[:num_predictor_frames]
    predictor_logits = torch.stack(
        [replay.code_predictor(producing[f], frames[f])[0] for f in range(num_predictor_frames)]
    )
    arrays = {
        "prefill_hidden": prefill_hidden,
        "prefill_logits": prefill_logits,
        "decode_inputs": torch.stack(inputs),
        "decode_hidden": torch.stack(hiddens),
        "decode_logits": torch.stack(logits),
        "predictor_hidden": producing,
        "predictor_logits": predictor_logits,
    }
    _check_against_official(replay, run, arrays)
    return {name: value.float().numpy() for name, value in arrays.items()}


def _check_against_official(replay: TalkerReplay, run: OfficialRun, arrays: dict) -> None:
    """The replayed hidden states and greedy choices must be the official ones."""
    steps = arrays["decode_hidden"].shape[0]
    official = run.hidden[: steps + 1]
    mine = torch.cat([arrays["prefill_hidden"][-1:], arrays["decode_hidden"]])[: official.shape[0]]
    max_diff = float((official - mine).abs().max())
    if max_diff > 1e-4:
        raise ReplayMismatchError(f"talker hidden states differ from the official ones by {max_diff:.2e}")
    penalty = run.talker_kwargs["repetition_penalty"]
    if replay.greedy_code0(arrays["prefill_logits"], [], penalty) != int(run.codes[0, 0]):
        raise ReplayMismatchError("prefill: greedy code 0 differs from the official first code")
    generated = [int(run.codes[0, 0])]
    for step in range(steps):
        chosen = replay.greedy_code0(arrays["decode_logits"][step], generated, penalty)
        # the step after the last frame is the one that chose EOS
        last = step + 1 == run.codes.shape[0]
        expected = replay.config.codec_eos_token_id if last else int(run.codes[step + 1, 0])
        if chosen != expected:
            raise ReplayMismatchError(f"decode step {step}: greedy code 0 {chosen} != official {expected}")
        generated.append(chosen)
    for f, frame_logits in enumerate(arrays["predictor_logits"]):
        if not torch.equal(frame_logits.argmax(-1), run.codes[f, 1:]):
            raise ReplayMismatchError(f"frame {f}: code-predictor argmax != the official codes 1..15")
