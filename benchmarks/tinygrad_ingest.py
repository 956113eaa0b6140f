"""Benchmark: tinygrad VIZ ingest at size: a small transformer's training steps, written by real tinygrad.

    python benchmarks/tinygrad_ingest.py                       # 2 layers, dim 64 (needs the `tinygrad` extra + clang)
    python benchmarks/tinygrad_ingest.py --layers 4 --dim 128  # larger
    python benchmarks/tinygrad_ingest.py --files DIR           # a rewrites.pkl / profile.pkl pair made elsewhere

Writes the pair once (cached under --cache by model size) with `VIZ=-1 DEV=CPU HCQ2=1`: a TinyJit'd
AdamW step of a GPT-style model (embedding, attention and MLP blocks, LayerNorm, cross-entropy), run
three times (capture, then graph replays). Then runs the real command, `python -m dashboard.app ingest
FILES --data TMP`, in a fresh process, sampling the resident memory of its process tree every 20 ms
(benchmarks/tree_rss.py), and prints the files' sizes, the traced UOps, wall and CPU seconds (on a shared
machine wall time mostly measures the other processes) and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from tree_rss import tree_rss_kb  # noqa: E402

from dashboard.demo.tinygrad_viz import run_tinygrad  # noqa: E402

TRANSFORMER = """
import os
from tinygrad import Tensor, TinyJit, nn
Tensor.manual_seed(0)
DIM, HEADS, LAYERS, SEQ, VOCAB, BATCH = (int(os.environ[k]) for k in
                                         ("DIM", "HEADS", "LAYERS", "SEQ", "VOCAB", "BATCH"))
class Block:
    def __init__(self):
        self.qkv, self.out = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.up, self.down = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)
        self.n1, self.n2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
    def __call__(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        att = q.scaled_dot_product_attention(k, v, is_causal=True).permute(0, 2, 1, 3).reshape(b, t, DIM)
        x = x + self.out(att)
        return x + self.down(self.up(self.n2(x)).gelu())
class Model:
    def __init__(self):
        self.emb, self.head = nn.Embedding(VOCAB, DIM), nn.Linear(DIM, VOCAB)
        self.blocks = [Block() for _ in range(LAYERS)]
    def __call__(self, tokens):
        x = self.emb(tokens)
        for block in self.blocks: x = block(x)
        return self.head(x)
model = Model()
opt = nn.optim.AdamW(nn.state.get_parameters(model), lr=1e-3)
tokens, targets = (Tensor.randint(BATCH, SEQ, high=VOCAB).realize() for _ in range(2))
@TinyJit
def step(tokens, targets):
    opt.zero_grad()
    loss = model(tokens).sparse_categorical_crossentropy(targets).backward()
    opt.step()
    return loss.realize()
for i in range(3): print("step", i, step(tokens, targets).item())
"""


def make_pair(cache: Path, layers: int, dim: int) -> tuple[Path, Path]:
    folder = cache / f"transformer-l{layers}-d{dim}"
    rewrites, profile = folder / "rewrites.pkl", folder / "profile.pkl"
    if not (rewrites.exists() and profile.exists()):
        started = time.perf_counter()
        sizes = {"DIM": dim, "HEADS": 4, "LAYERS": layers, "SEQ": 16, "VOCAB": 64, "BATCH": 4}
        run_tinygrad(TRANSFORMER, folder, {"DEV": "CPU", "HCQ2": "1", "TRAINING": "1",
                                           **{k: str(v) for k, v in sizes.items()}}, timeout=3600)
        print(f"wrote the pair with tinygrad in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return rewrites, profile


def ingest(files: list[Path]) -> dict[str, object]:
    """`python -m dashboard.app ingest FILES` in a fresh process: wall seconds, peak RSS of its tree, the run."""
    with tempfile.TemporaryDirectory(prefix="tinygrad-ingest-") as data:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "dashboard.app", "ingest", *map(str, files), "--data", data],
                                 cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        peak_kb = 0
        while child.poll() is None:
            peak_kb = max(peak_kb, tree_rss_kb(child.pid))
            time.sleep(0.02)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if child.returncode:
            raise SystemExit(f"ingest failed: {child.stderr.read() if child.stderr else ''}")
        [run] = Path(data, "runs").iterdir()
        info = json.loads((run / "run.json").read_text())
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(peak_kb / 1024),
            "parse_s": info["parse_seconds"],
            "rows": info["row_counts"], "warnings": info["warnings"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tinygrad-bench")
    parser.add_argument("--files", type=Path, help="a folder holding rewrites.pkl and profile.pkl to ingest")
    parser.add_argument("--runs", type=int, default=3, help="ingests, each in a fresh process (median reported)")
    args = parser.parse_args()
    rewrites, profile = ((args.files / "rewrites.pkl", args.files / "profile.pkl") if args.files
                         else make_pair(args.cache, args.layers, args.dim))
    results = [ingest([rewrites, profile]) for _ in range(args.runs)]
    walls = [r["wall_s"] for r in results]
    first = results[0]
    print(json.dumps({
        "rewrites_mb": round(rewrites.stat().st_size / 2**20, 1),
        "profile_mb": round(profile.stat().st_size / 2**20, 1),
        "traced_uops": first["rows"].get("rewrite_uops"), "wall_s": walls,
        "median_wall_s": sorted(walls)[len(walls) // 2],
        "cpu_s": [r["cpu_s"] for r in results], "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
        "parse_s": [r["parse_s"] for r in results],
        "rows": first["rows"], "warnings": first["warnings"]}, indent=1))


if __name__ == "__main__":
    main()
