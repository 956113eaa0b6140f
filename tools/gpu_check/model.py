"""The training loop the device check profiles: a small GPT in plain torch (no torchvision, no downloads).

One training step is: copy a pinned batch of token ids to the device, forward and loss under bf16
autocast, backward, AdamW, zero_grad, and `loss.item()` (a device-to-host copy). The step ends with
`torch.cuda.synchronize()` inside the caller's step range, so every kernel of step N starts and ends
inside the `ProfilerStep#N` range on the CPU clock: the comparison can assign GPU activity to steps by
time alone, the same way for our capture and for Kineto, whatever API (runtime or driver) launched it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tools.gpu_check.wheels import installed_versions


@dataclass(frozen=True)
class Size:
    vocab: int
    dim: int
    layers: int
    heads: int
    seq: int
    batch: int


# "small" keeps an H100 busy for ~10-20 ms a step (GPU-bound, as real training is, so the capture's CPU
# cost shows only where it exceeds the GPU's time); "tiny" is for CPU runs of the check and its tests.
SIZES = {
    "small": Size(vocab=8192, dim=768, layers=6, heads=12, seq=512, batch=16),
    "tiny": Size(vocab=256, dim=32, layers=2, heads=2, seq=16, batch=2),
}


class Block(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads = size.heads
        self.ln1 = nn.LayerNorm(size.dim)
        self.qkv = nn.Linear(size.dim, 3 * size.dim)
        self.proj = nn.Linear(size.dim, size.dim)
        self.ln2 = nn.LayerNorm(size.dim)
        self.fc = nn.Linear(size.dim, 4 * size.dim)
        self.act = nn.GELU(approximate="tanh")
        self.out = nn.Linear(4 * size.dim, size.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.tokens = nn.Embedding(size.vocab, size.dim)
        self.positions = nn.Embedding(size.seq, size.dim)
        self.blocks = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.ln = nn.LayerNorm(size.dim)
        self.head = nn.Linear(size.dim, size.vocab, bias=False)
        for parameter in self.parameters():
            if parameter.dim() > 1:
                nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * size.layers))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


class Trainer:
    """The model, its optimizer and a fixed pinned batch: `step()` is one training step."""

    def __init__(self, size: Size, device: str, seed: int = 0) -> None:
        torch.manual_seed(seed)
        if size == SIZES["tiny"] and not device.startswith("cuda"):
            # A CPU run of the check: ops this small only lose time to intra-op threads (and, on a shared
            # machine, to their neighbours).
            torch.set_num_threads(1)
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.size = size
        self.model = TinyGPT(size).to(self.device)
        # foreach (the default on CUDA), not fused: the launch pattern most training scripts have.
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        ids = torch.randint(0, size.vocab, (size.batch, size.seq + 1))
        # Pinned, so the per-step copy is a real asynchronous HtoD copy as a DataLoader's would be.
        self.batch = ids.pin_memory() if self.cuda else ids

    def step(self) -> float:
        ids = self.batch.to(self.device, non_blocking=True)
        with torch.autocast(self.device.type, dtype=torch.bfloat16):
            logits = self.model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, self.size.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        value = loss.item()
        self.synchronize()
        return value

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


def device_facts(device: str) -> dict[str, Any]:
    """What the summary says about the machine the loop ran on."""
    facts: dict[str, Any] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "device": device,
                             "versions": installed_versions()}
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        facts.update(name=props.name, capability=f"{props.major}.{props.minor}",
                     memory_bytes=props.total_memory, multiprocessors=props.multi_processor_count)
    return facts
