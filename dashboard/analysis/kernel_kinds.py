"""What a GPU kernel is: compute, communication (and which family) or memory. One list, used everywhere.

The breakdown (/insights, `report`), the findings and the timeline's colours
all call these, so one kernel is one kind on every page.

Communication, checked in this order (the first family that matches names it):

| family | matched by |
|---|---|
| NCCL | `nccl` in the name (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_…`) |
| RCCL | `rccl` in the name (AMD's port mostly keeps NCCL's kernel names, which read NCCL) |
| DeepEP | `deep_ep` / `deepep` (expert-parallel dispatch / combine: `deep_ep::intranode::dispatch`) |
| NVSHMEM | `nvshmem` in the name (`nvshmemi_…`, NVSHMEM-based all-to-all) |
| symmetric-memory all-reduce | `multimem` (NVLink SHARP), `one_shot_all_reduce`, `two_shot_all_reduce`, vLLM's |
|  | `cross_device_reduce_1stage` / `_2stage` |
| collective by name | `all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all` / `all2all`, `sendrecv`, any case |
| launched by a collective | its launching op (`op` column): `nccl:*`, `c10d::*`, `record_param_comms`, `gloo:*` |

memory: a kernel named `Memcpy…` / `Memset…` (and every row of the memcpy
table); compute: every other kernel. A name family wins over memory; memory by
name wins over the launching op (a copy launched inside a collective op is a
copy).
"""

from __future__ import annotations

import polars as pl

COMPUTE, COMMUNICATION, MEMORY = "compute", "communication", "memory"
KINDS = (COMPUTE, COMMUNICATION, MEMORY)

# (family, case-insensitive regex on the kernel name), most specific first.
COMMUNICATION_FAMILIES: tuple[tuple[str, str], ...] = (
    ("RCCL", r"rccl"),
    ("NCCL", r"nccl"),
    ("DeepEP", r"deep_?ep"),
    ("NVSHMEM", r"nvshmem"),
    ("symmetric-memory all-reduce", r"multimem|one_?shot_?all_?reduce|two_?shot_?all_?reduce|cross_device_reduce"),
    # Not inside a word (`small_gather_kernel` is compute): the collective's name starts the name or follows a
    # non-letter (`ncclKernel_AllGather`, `void all_to_all_kernel`).
    ("collective by name", r"(?:^|[^a-z])(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|all2all|send_?recv)"),
)
LAUNCHED_BY_COLLECTIVE = "launched by a collective op"
COLLECTIVE_OP_PATTERN = r"^(?:nccl:|c10d::|record_param_comms|gloo:)"
MEMORY_KERNEL_PATTERN = r"(?i)^(?:memcpy|memset)"
COMMUNICATION_DEFINITION = (
    "communication = NCCL / RCCL / DeepEP / NVSHMEM kernels, multimem and one-/two-shot all-reduce, kernels "
    "named all_reduce / all_gather / reduce_scatter / all_to_all / sendrecv, and kernels launched by an "
    "nccl:* / c10d::* / record_param_comms op")


def communication_family(name: pl.Expr | None = None, op: pl.Expr | None = None) -> pl.Expr:
    """The communication family of a kernel (COMMUNICATION_FAMILIES, then LAUNCHED_BY_COLLECTIVE); null if none."""
    name = (pl.col("name") if name is None else name).fill_null("")
    family: pl.Expr = pl.lit(None, pl.String)
    if op is not None:
        family = pl.when(op.fill_null("").str.contains(COLLECTIVE_OP_PATTERN)
                         & ~name.str.contains(MEMORY_KERNEL_PATTERN)).then(pl.lit(LAUNCHED_BY_COLLECTIVE))
    for label, pattern in reversed(COMMUNICATION_FAMILIES):
        family = pl.when(name.str.contains(f"(?i){pattern}")).then(pl.lit(label)).otherwise(family)
    return family


def kernel_kind(name: pl.Expr | None = None, op: pl.Expr | None = None) -> pl.Expr:
    """compute / communication / memory of a kernel by its name (and its launching op, when given)."""
    name = (pl.col("name") if name is None else name).fill_null("")
    return (pl.when(communication_family(name, op).is_not_null()).then(pl.lit(COMMUNICATION))
            .when(name.str.contains(MEMORY_KERNEL_PATTERN)).then(pl.lit(MEMORY))
            .otherwise(pl.lit(COMPUTE)))


def with_kernel_kinds(kernels: pl.DataFrame) -> pl.DataFrame:
    """`kernels` with `kind` and `family` columns (kernel_kind, communication_family), classified once per
    distinct name and per distinct op; the op is used when the frame has an `op` column."""
    # Two joins on one key each (a few hundred names, a few dozen ops): a join on (name, op) pairs of string
    # columns is several times slower over a million kernels.
    names = kernels.select(pl.col("name").unique()).with_columns(
        kernel_kind(pl.col("name")).alias("kind"), communication_family(pl.col("name")).alias("family"))
    frame = kernels.drop("kind", "family", strict=False).join(names, on="name", how="left", nulls_equal=True)
    if "op" not in kernels.columns:
        return frame
    ops = kernels.select(pl.col("op").unique()).with_columns(
        pl.col("op").fill_null("").str.contains(COLLECTIVE_OP_PATTERN).alias("_collective_op"))
    if not ops.get_column("_collective_op").any():
        return frame
    launched = pl.col("_collective_op").fill_null(False) & (pl.col("kind") == COMPUTE)
    return frame.join(ops, on="op", how="left", nulls_equal=True).with_columns(
        pl.when(launched).then(pl.lit(COMMUNICATION)).otherwise(pl.col("kind")).alias("kind"),
        pl.when(launched).then(pl.lit(LAUNCHED_BY_COLLECTIVE)).otherwise(pl.col("family")).alias("family"),
    ).drop("_collective_op")


def kind_of(name: str, op: str | None = None) -> str:
    """The kind of one kernel (for a caller holding a name, e.g. a chart colouring one kernel)."""
    return str(pl.select(kernel_kind(pl.lit(name, pl.String), pl.lit(op, pl.String))).item())


def family_of(name: str, op: str | None = None) -> str | None:
    """The communication family of one kernel, None for compute and memory kernels."""
    return pl.select(communication_family(pl.lit(name, pl.String), pl.lit(op, pl.String))).item()


# HTA's own rules (hta.utils.utils, HolisticTraceAnalysis 0.5): communication = `^nccl.*Kernel`; its compute
# time is the union of kernels NOT matching `(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)` (re.match).
# Used only for the "HTA's scope" numbers, so they reproduce HTA's exactly.
HTA_NON_COMPUTE_PATTERN = r"^(?:nccl.*Kernel|.*Memcpy|Memset|.*Sync)"
HTA_COMMUNICATION_PATTERN = r"^nccl.*Kernel"


def hta_kernel_kind(name: pl.Expr | None = None) -> pl.Expr:
    """compute / communication / memory as HTA's temporal breakdown splits them (non-compute = the rest)."""
    name = (pl.col("name") if name is None else name).fill_null("")
    return (pl.when(name.str.contains(HTA_COMMUNICATION_PATTERN)).then(pl.lit(COMMUNICATION))
            .when(name.str.contains(HTA_NON_COMPUTE_PATTERN)).then(pl.lit(MEMORY))
            .otherwise(pl.lit(COMPUTE)))
