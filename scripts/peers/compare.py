"""qwen3tts against the two best CPU engines for Qwen3-TTS, end to end, round by round in one run.

Run with the peers' venv (scripts/peers/setup.sh makes it and converts the checkpoint for each peer):

    var/peers/venv/bin/python scripts/peers/compare.py

Each engine runs in its own long-lived worker process (so peak RSS is per engine, and the peers' packages
never enter the product's venv): qwen3tts under the repo's .venv (worker_qwen3tts.py), vox-tts and the
qwentts.cpp wheel under this venv. Every worker loads its model, warms up, then answers "run SEED" with
one synthesis of the same text at --frames frames and --threads threads. Round by round (engine order
rotated every round), one engine runs while the others are stopped with SIGSTOP, so an idle engine's
spinning threads cannot take CPU from the one being measured. Per run: wall and process-CPU ms per frame
(end to end: prompt, prefill, generation, codec, first to last sample), time to first audio, and each
engine's own per-stage split. At the end: peak RSS (VmHWM) of each worker, one table, and the median of
the per-round ratios (qwen3tts / peer).

Fails loudly (exit 1) if a peer or its converted model is missing, or if any engine produces a number of
frames other than --frames.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TEXT = (
    "The next train to the city centre leaves from platform four in ten minutes; passengers for the "
    "airport please change at the central station."
)
STAGES = ("talker", "code_predictor", "codec")


class Worker:
    """One engine in its own process, driven over stdin/stdout, one JSON line per answer."""

    def __init__(self, name: str, cmd: list[str], env: dict, log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log_path.open("w"),
            env=env,
            text=True,
            bufsize=1,
        )
        self.ready: dict = {}

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            tail = self.log_path.read_text(errors="replace").splitlines()[-15:]
            raise SystemExit(
                f"{self.name}: worker exited (code {self.proc.poll()}); log {self.log_path}:\n"
                + "\n".join(tail)
            )
        return json.loads(line)

    def wait_ready(self) -> None:
        self.ready = self.read()["ready"]

    def run(self, seed: int) -> dict:
        self.proc.stdin.write(f"run {seed}\n")
        self.proc.stdin.flush()
        return self.read()

    def pause(self, stopped: bool) -> None:
        self.proc.send_signal(signal.SIGSTOP if stopped else signal.SIGCONT)

    def peak_rss(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()


def thread_env(threads: int) -> dict:
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    return env


def commands(args) -> dict[str, tuple[list[str], dict]]:
    """The worker command and environment of every engine; exits if something it needs is missing."""
    common = [
        "--frames",
        str(args.frames),
        "--text",
        args.text,
        "--language",
        "english",
        "--speaker",
        args.speaker,
    ]
    peers = Path(args.peers_dir)
    found: dict[str, tuple[list[str], dict]] = {}
    missing: list[str] = []

    ours_py = Path(args.qwen3tts_python)
    if not ours_py.exists() or not Path(args.bundle, "manifest.json").exists():
        missing.append(f"qwen3tts: {ours_py} or the bundle {args.bundle}")
    env = thread_env(args.threads)
    env["PYTHONPATH"] = str(REPO / "daemon")
    found["qwen3tts"] = (
        [
            str(ours_py),
            str(HERE / "worker_qwen3tts.py"),
            "--bundle",
            args.bundle,
            "--threads",
            str(args.threads),
            *(arg for setting in args.qwen3tts_set for arg in ("--set", setting)),
            *common,
        ],
        env,
    )

    tmod = peers / f"vox-{args.size}.{args.quant}.tmod"
    if not _importable("vox") or not tmod.exists():
        missing.append(f"vox: the package vox-tts 0.19.5 in {sys.executable} or {tmod}")
    env = thread_env(args.threads)
    env["VOX_DEBUG_NO_EOS"] = "1"  # vox's own switch: no EOS, so max_frames is the length
    found["vox"] = (
        [
            sys.executable,
            str(HERE / "worker_vox.py"),
            "--model",
            str(tmod),
            "--threads",
            str(args.threads),
            "--mode",
            args.vox_mode,
            *common,
        ],
        env,
    )

    qwentts_dir = peers / f"qwentts-{args.size}"
    suffix = "Q8_0.gguf" if args.quant == "q8" else "Q8_0-cpQ4_0.gguf"
    talker = next(iter(sorted(qwentts_dir.glob(f"qwen-talker-*-{suffix}"))), None)
    codec = qwentts_dir / "qwen-tokenizer-12hz-Q8_0.gguf"
    shim = _qwentts_shim()
    if not _importable("qwentts_cpp") or talker is None or not codec.exists() or shim is None:
        missing.append(
            f"qwentts: qwentts-cpp-python 0.5.0 (patched by setup.sh) in {sys.executable} or "
            f"{qwentts_dir}/qwen-talker-*-{suffix}"
        )
    env = thread_env(args.threads)
    env["LD_PRELOAD"] = str(shim)
    env["QWENTTS_SHIM_NPROCS"] = str(2 * args.threads)  # it runs hardware_concurrency() / 2 threads
    found["qwentts"] = (
        [
            sys.executable,
            str(HERE / "worker_qwentts.py"),
            "--talker",
            str(talker),
            "--codec",
            str(codec),
            *common,
        ],
        env,
    )

    wanted = args.engines.split(",")
    missing = [m for m in missing if m.split(":")[0] in wanted]
    if missing:
        raise SystemExit("missing (run scripts/peers/setup.sh first):\n  " + "\n  ".join(missing))
    return {name: found[name] for name in wanted}


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _qwentts_shim() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("qwentts_cpp")
    if spec is None or spec.origin is None:
        return None
    shim = Path(spec.origin).parent / "lib" / "libggml-cuda.so.0"
    return shim if shim.exists() else None


def run_rounds(workers: dict[str, Worker], args) -> list[dict]:
    names = list(workers)
    results = []
    for round_index in range(args.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        for name in order:
            for other in names:
                if other != name:
                    workers[other].pause(True)
            result = workers[name].run(seed=1000 + round_index)
            for other in names:
                if other != name:
                    workers[other].pause(False)
            if result["frames"] != args.frames:
                raise SystemExit(
                    f"{name} produced {result['frames']} frames in round {round_index}, "
                    f"not {args.frames}: the comparison would not be per equal work"
                )
            result.update(engine=name, round=round_index)
            results.append(result)
            print(
                f"round {round_index} {name}: {1e3 * result['wall_s'] / result['frames']:.1f} ms/frame wall, "
                f"{1e3 * result['cpu_s'] / result['frames']:.1f} CPU",
                file=sys.stderr,
                flush=True,
            )
    return results


def summarise(results: list[dict], workers: dict[str, Worker], rss: dict[str, int], args) -> dict:
    engines = {}
    for name in workers:
        runs = [r for r in results if r["engine"] == name]
        wall = [1e3 * r["wall_s"] / r["frames"] for r in runs]
        cpu = [1e3 * r["cpu_s"] / r["frames"] for r in runs]
        stages = {s: [r["stage_ms"][s] for r in runs if s in r.get("stage_ms", {})] for s in STAGES}
        engines[name] = {
            "ready": workers[name].ready,
            "wall_ms_per_frame": {"min": min(wall), "median": statistics.median(wall)},
            "cpu_ms_per_frame": {"min": min(cpu), "median": statistics.median(cpu)},
            "stage_ms_per_frame": {s: (min(v), max(v)) for s, v in stages.items() if v},
            "prefill_ms_median": statistics.median([r["prefill_ms"] or 0.0 for r in runs]),
            "ttfa_ms_median": 1e3 * statistics.median([r["ttfa_s"] for r in runs]),
            "first_chunk_frames": runs[0]["first_chunk_frames"],
            "peak_rss_bytes": rss[name],
        }
    ratios = {}
    if "qwen3tts" in workers:
        for peer in (n for n in workers if n != "qwen3tts"):
            per_round = {"wall": [], "cpu": []}
            for round_index in range(args.rounds):
                ours = next(r for r in results if r["engine"] == "qwen3tts" and r["round"] == round_index)
                theirs = next(r for r in results if r["engine"] == peer and r["round"] == round_index)
                per_round["wall"].append(ours["wall_s"] / theirs["wall_s"])
                per_round["cpu"].append(ours["cpu_s"] / theirs["cpu_s"])
            ratios[peer] = {k: statistics.median(v) for k, v in per_round.items()}
    return {
        "frames": args.frames,
        "threads": args.threads,
        "rounds": args.rounds,
        "quant": args.quant,
        "size": args.size,
        "text": args.text,
        "engines": engines,
        "ratio_ours_over_peer": ratios,
        "runs": results,
        "loadavg": os.getloadavg(),
    }


def print_table(summary: dict) -> None:
    print(
        f"\n{summary['frames']} frames per run, {summary['threads']} threads, {summary['rounds']} rounds, "
        f"load average after {summary['loadavg'][0]:.1f}"
    )
    print(
        "| engine | wall ms/frame min / median | CPU ms/frame min / median | talker | code predictor | codec "
        "| prefill ms | first audio ms (frames) | peak RSS |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, e in summary["engines"].items():
        stages = [e["stage_ms_per_frame"].get(s) for s in STAGES]
        cells = ["–" if s is None else f"{s[0]:.0f}–{s[1]:.0f}" for s in stages]
        print(
            f"| {name} | {e['wall_ms_per_frame']['min']:.0f} / {e['wall_ms_per_frame']['median']:.0f} "
            f"| {e['cpu_ms_per_frame']['min']:.0f} / {e['cpu_ms_per_frame']['median']:.0f} "
            f"| {' | '.join(cells)} | {e['prefill_ms_median']:.0f} "
            f"| {e['ttfa_ms_median']:.0f} ({e['first_chunk_frames']:.0f}) "
            f"| {e['peak_rss_bytes'] / 2**30:.2f} GiB |"
        )
    for peer, r in summary["ratio_ours_over_peer"].items():
        print(
            f"qwen3tts / {peer}, median of per-round ratios: wall {r['wall']:.2f} "
            f"(peer is {1 / r['wall']:.2f}x our time), CPU {r['cpu']:.2f} (peer {1 / r['cpu']:.2f}x)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--speaker", default="aiden", help="CustomVoice speaker, the same for every engine")
    parser.add_argument("--engines", default="qwen3tts,vox,qwentts", help="comma-separated, first = ours")
    parser.add_argument(
        "--bundle", default=str(REPO / "var" / "bundle-0.6b-int8"), help="qwen3tts bundle (int8)"
    )
    parser.add_argument("--qwen3tts-python", default=str(REPO / ".venv" / "bin" / "python"))
    parser.add_argument(
        "--peers-dir", default=str(REPO / "var" / "peers"), help="where setup.sh put the converted models"
    )
    parser.add_argument("--size", default="0.6b", help="model size of the peers' converted files")
    parser.add_argument(
        "--quant",
        choices=("q8", "q4"),
        default="q8",
        help="the peers' files: q8 = vox q8 and qwentts Q8_0; q4 = vox q4 and qwentts with a Q4_0 code "
        "predictor (to compare with an int4-cp bundle)",
    )
    parser.add_argument("--vox-mode", default="speed", help="vox's resource mode (speed: its fastest)")
    parser.add_argument(
        "--qwen3tts-set", action="append", default=[], metavar="KEY=VALUE", help="qwen3tts settings override"
    )
    parser.add_argument("--json", help="write every run and the summary here")
    args = parser.parse_args()
    cmds = commands(args)
    log_dir = Path(args.peers_dir) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    workers: dict[str, Worker] = {}
    try:
        for name, (cmd, env) in cmds.items():  # one at a time: loading is not measured, memory is
            workers[name] = Worker(name, cmd, env, log_dir)
            workers[name].wait_ready()
            workers[name].pause(True)
            print(f"{name} ready: {json.dumps(workers[name].ready)}", file=sys.stderr, flush=True)
        for w in workers.values():
            w.pause(False)
        results = run_rounds(workers, args)
        rss = {name: w.peak_rss() for name, w in workers.items()}
    finally:
        for w in workers.values():
            w.close()
    summary = summarise(results, workers, rss, args)
    summary["elapsed_s"] = time.monotonic() - started
    print_table(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
