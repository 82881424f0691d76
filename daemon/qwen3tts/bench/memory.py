"""Where the resident bytes of a loaded runtime go: a per-component memory breakdown for `qwen3tts bench`.

Three kinds of figures, each labelled with how it was obtained:
- `stored_bytes`: the weight files of each graph in the bundle (what a read_model maps);
- `load_rss_delta_bytes`: how much the process's resident set grew while each component was read and
  compiled (RssLedger wraps the compiler; the ov.Model is dropped after compile, so a delta that stays
  is what the compiled model keeps: repacked weights, kernels, scratch);
- `known_bytes`: allocations we size ourselves (KV pool, codec state per stream, host tables).
`fused`: a stage that runs as a fused native frame (runtime/native_decode/) has no compiled model; its
entry names the bundle's bytes it reads in place, and its ledger figures are its mapped pages and scratch.
`released_weight_file_bytes`: weight-file pages the loader gave back after each graph's warm-up
(runtime/warm_up.py): no longer resident, no longer counted in any figure above.
`process` splits the current resident set into anonymous and file-backed pages (/proc/self/status):
mmapped weight files show up as file-backed, copies as anonymous; `resident_by_mapping` names the
file (weights, compile-cache blob, library) each file-backed page belongs to (/proc/self/smaps).
"""

from __future__ import annotations

import math
import resource
from collections import defaultdict
from pathlib import Path

from qwen3tts.model import bundle as layout

COMPONENT_FILES = {
    "talker": (layout.TALKER_XML,),
    "code_predictor": (layout.CODE_PREDICTOR_XML,),
    "speaker_encoder": (layout.SPEAKER_ENCODER_XML,),
}


def status_bytes() -> dict[str, int]:
    """VmRSS, RssAnon, RssFile, RssShmem and VmHWM of this process, in bytes (Linux)."""
    wanted = {"VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"}
    values = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in wanted:
                values[key] = int(rest.split()[0]) * 1024  # reported in kB
    except OSError:
        values["VmHWM"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return values


def resident_by_mapping(smaps_text: str | None = None, min_bytes: int = 1 << 20) -> dict[str, dict[str, int]]:
    """Resident bytes per mapped file (by name) and for anonymous memory ("[anon]", heap included), from
    /proc/self/smaps: which weight file, compile-cache blob or library holds resident pages."""
    if smaps_text is None:
        try:
            smaps_text = Path("/proc/self/smaps").read_text()
        except OSError:
            return {}
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"rss": 0, "anonymous": 0})
    name = "[anon]"
    for line in smaps_text.splitlines():
        fields = line.split(None, 5)
        if fields and "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header
            path = fields[5].strip() if len(fields) == 6 else ""
            name = Path(path).name if path.startswith("/") else "[anon]"
        elif fields and fields[0] in ("Rss:", "Anonymous:"):
            totals[name]["rss" if fields[0] == "Rss:" else "anonymous"] += int(fields[1]) * 1024
    return {k: v for k, v in sorted(totals.items(), key=lambda kv: -kv[1]["rss"]) if v["rss"] >= min_bytes}


def rss_bytes() -> int:
    return status_bytes().get("VmRSS", 0)


def mapped_file_names() -> set[str]:
    """Names of the files this process maps now (/proc/self/maps), as resident_by_mapping names them."""
    try:
        text = Path("/proc/self/maps").read_text()
    except OSError:
        return set()
    fields = (line.split(None, 5) for line in text.splitlines())
    return {Path(f[5].strip()).name for f in fields if len(f) == 6 and f[5].startswith("/")}


class RssLedger:
    """Records the resident-set growth of each component's load (attach before loading), and which files
    each one mapped (its weight files, or the compile-cache blob it was imported from).

    A timeline of marks: each compile and each warm-up ends with a mark, and the growth since the
    previous mark is that component's: its read, transformation (the talker's PagedAttention pass) and
    compile, then its first inferences (repacked weights) net of the weight-file pages given back after
    them (runtime/warm_up.py). Growth after the last mark (tokenizer, host tables, KV pool) is not a
    graph's: `last_mark` is where it starts.
    """

    def __init__(self):
        self.deltas: dict[str, int] = defaultdict(int)
        self.files: dict[str, set[str]] = defaultdict(set)
        self.before_load = rss_bytes()
        self.last_mark = self.before_load
        self._mapped_before: set[str] | None = None

    def mark(self, component: str) -> None:
        now = rss_bytes()
        self.deltas[component] += now - self.last_mark
        self.last_mark = now

    @classmethod
    def attach(cls, compiler) -> RssLedger:
        """Wrap `compiler.read`, `compiler.compile`, `compiler.build` and `compiler.warm_up` (any
        PartCompiler) on this instance; a warm-up's growth (first inferences of dynamic-shape graphs)
        counts for its component, and a build (the fused native code predictor, which maps the bundle's
        weights and allocates its scratch instead of compiling) counts like a compile."""
        ledger = cls()
        read, compile_, build, warm_up = compiler.read, compiler.compile, compiler.build, compiler.warm_up

        def read_and_note(path):
            if ledger._mapped_before is None:
                ledger._mapped_before = mapped_file_names()
            return read(path)

        def note(component, make, *args, **kwargs):
            result = None
            try:
                result = make(component, *args, **kwargs)
                return result
            finally:  # a failed build (the loader falls back to the plugin) still ends its growth
                ledger.mark(component)
                ledger.files[component] |= mapped_file_names() - (ledger._mapped_before or set())
                if result is not None:  # the fallback's compile maps the same model's files again
                    ledger._mapped_before = None

        def warm_up_and_note(component, run):
            result = warm_up(component, run)
            ledger.mark(component)
            return result

        compiler.read, compiler.warm_up = read_and_note, warm_up_and_note
        compiler.compile = lambda component, *args, **kwargs: note(component, compile_, *args, **kwargs)
        compiler.build = lambda component, make: note(component, build, make)

        return ledger


def stored_bytes(bundle_dir: Path, manifest: layout.Manifest) -> dict[str, int]:
    """Bytes of each graph's weight files (.bin) in the bundle; the codec sums all its graphs."""
    files = {**COMPONENT_FILES, "codec": layout.codec_xmls(manifest)}
    out = {}
    for component, xmls in files.items():
        paths = [Path(bundle_dir) / xml.replace(".xml", ".bin") for xml in xmls]
        if any(p.exists() for p in paths):
            out[component] = sum(p.stat().st_size for p in paths if p.exists())
    for name in (layout.TEXT_TABLE, layout.CODEC_EMBEDDING):
        path = Path(bundle_dir) / name
        if path.exists():
            out[f"table:{name}"] = path.stat().st_size
    return out


def codec_state_bytes(runner) -> int:
    """Carried state of one codec stream (conv tails, attention window), from the compiled shapes."""
    models = runner.codec_models  # the runner owns them; read-only here
    return sum(math.prod(shape) * kind.size for shape, kind in models.state_inputs.values())


def breakdown(runtime, ledger: RssLedger | None) -> dict:
    """The JSON-ready memory section: see the module docstring for what each figure means."""
    runner, builder = runtime.runner, runtime.prompt_builder
    tables = {
        name: int(getattr(array, "nbytes", 0))
        for name, array in (("text_table", builder.text_table), ("codec_table", builder.codec_table))
    }
    known = {
        "kv_pool": int(runner.kv_cache_bytes),
        "kv_blocks": int(runner.num_kv_blocks),
        "codec_state_per_stream": codec_state_bytes(runner),
        **{f"host_{k}": v for k, v in tables.items()},
    }
    section = {
        "stored_bytes": stored_bytes(runtime.bundle_dir, runtime.manifest),
        "known_bytes": known,
        "released_weight_file_bytes": dict(getattr(runtime, "released_weight_bytes", {})),
        "process": status_bytes(),
        "resident_by_mapping": resident_by_mapping(),
        "decode_paths": runtime.plan.decode_paths(),
        "fused": fused_footprint(runner),
    }
    if ledger is not None:
        section["load_rss_delta_bytes"] = dict(ledger.deltas)
        section["rss_before_load"] = ledger.before_load
        section["mapped_by_component"] = {c: sorted(f) for c, f in ledger.files.items()}
    return section


def fused_footprint(runner) -> dict[str, dict]:
    """The fused native stages' own figures (no compiled model holds their weights): the bytes of the
    bundle's file each reads in place at every frame, its kernel set and threads. Their load growth
    (those pages as they fault in, the scratch, the copied norm gains and scales) is in the ledger."""
    predictor = getattr(runner, "fused_code_predictor", None)
    if predictor is None:
        return {}
    return {
        "code_predictor": {
            "mapped_weight_bytes": predictor.mapped_weight_bytes,
            "kernel_set": predictor.isa,
            "threads": predictor.threads,
        }
    }


def resident_by_component(section: dict, mapping: dict[str, dict[str, int]] | None = None) -> dict[str, dict]:
    """Resident bytes per component now: the file-backed pages of the files it mapped at load (weights
    used in place, e.g. by the native kernels, or a compile-cache blob) and the anonymous growth of its
    load (repacked weights, compile state, scratch); what no component claims is `other` (Python,
    libraries, the KV blocks written, host tables, anything allocated since)."""
    mapping = resident_by_mapping(min_bytes=0) if mapping is None else mapping
    claimed: set[str] = set()
    out: dict[str, dict] = {}
    for component, files in section.get("mapped_by_component", {}).items():
        weight_files = [f for f in files if not f.endswith(".so") and ".so." not in f]
        file_bytes = sum(mapping.get(f, {}).get("rss", 0) for f in weight_files)
        claimed.update(weight_files)
        anonymous = max(0, section.get("load_rss_delta_bytes", {}).get(component, 0) - file_bytes)
        out[component] = {"file_bytes": file_bytes, "anonymous_bytes": anonymous, "files": weight_files}
    process = status_bytes()
    accounted = sum(c["file_bytes"] + c["anonymous_bytes"] for c in out.values())
    out["other"] = {"bytes": max(0, process.get("VmRSS", 0) - accounted)}
    return out


def components(
    baseline: dict[str, int], ledger: RssLedger, loaded_rss: int, after_runs_rss: int
) -> dict[str, int]:
    """The resident set after the runs, split into consecutive growths (bytes; a step that gave pages
    back is negative), so that they add up to it exactly:

    - `baseline` (measured by the caller before it imported the rest): the interpreter, the CLI, numpy;
    - `openvino_and_bench`: imports and the OpenVINO core up to the first graph read;
    - one entry per graph (talker, codec, code_predictor, speaker_encoder): its RssLedger delta;
    - `tokenizer_tables_kv_pool`: the rest of the load (tokenizer, host tables, KV pool: a pool's pages
      count only once written, so most of it shows under `runs`);
    - `runs`: growth while the workloads ran (KV blocks written, activations of larger batches).
    """
    out = dict(baseline)
    out["openvino_and_bench"] = ledger.before_load - sum(baseline.values())
    out.update(ledger.deltas)
    out["tokenizer_tables_kv_pool"] = loaded_rss - ledger.last_mark
    out["runs"] = after_runs_rss - loaded_rss
    return out


def render(section: dict) -> list[str]:
    """Markdown lines for report.py-style output (MiB)."""
    mib = 1 << 20
    lines = ["| component | stored MiB | load RSS delta MiB |", "|---|---|---|"]
    deltas = section.get("load_rss_delta_bytes", {})
    for name in sorted(set(section["stored_bytes"]) | set(deltas)):
        stored = section["stored_bytes"].get(name)
        delta = deltas.get(name)
        cells = [f"{v / mib:.0f}" if v is not None else "-" for v in (stored, delta)]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    for name, fused in section.get("fused", {}).items():
        delta = deltas.get(name)
        growth = f", load growth {delta / mib:.0f} MiB (those pages, scratch)" if delta is not None else ""
        lines.append(
            f"{name}: fused native frame ({fused['kernel_set']}), no compiled model: reads "
            f"{fused['mapped_weight_bytes'] / mib:.0f} MiB of the bundle's mapped weights in place{growth}"
        )
    for name, account in section.get("resident_by_component", {}).items():
        if name != "other":
            lines.append(
                f"resident {name}: {account['file_bytes'] / mib:.0f} MiB of mapped files, "
                f"{account['anonymous_bytes'] / mib:.0f} MiB anonymous"
            )
    known, process = section["known_bytes"], section["process"]
    lines.append(
        f"KV pool {known['kv_pool'] / mib:.0f} MiB ({known['kv_blocks']} blocks); codec state "
        f"{known['codec_state_per_stream'] / 1024:.0f} KiB per stream; resident now "
        f"{process.get('VmRSS', 0) / mib:.0f} MiB (anonymous {process.get('RssAnon', 0) / mib:.0f}, "
        f"file-backed {process.get('RssFile', 0) / mib:.0f}), peak {process.get('VmHWM', 0) / mib:.0f} MiB"
    )
    return lines
