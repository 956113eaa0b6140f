"""The readable form of a compare report (compare_report.build_report): one block per section."""

from __future__ import annotations

from typing import Any

from dashboard.analysis.units import format_bytes, format_ns

TOP_ROWS = 15


def _signed_ns(value: float | None) -> str:
    if value is None:
        return "–"
    return ("+" if value >= 0 else "−") + format_ns(abs(value))


def _signed_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    return ("+" if value >= 0 else "−") + format_bytes(abs(value))


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _kernels(section: dict[str, Any]) -> list[str]:
    change = section["change"]
    lines = [f"kernels: A {format_ns(section['total_a_ns'])} · B {format_ns(section['total_b_ns'])} · "
             f"B − A {_signed_ns(section['delta_ns'])}" + (f" ({change:+.1%})" if change is not None else ""),
             f"  {len(section['only_a'])} only in A, {len(section['only_b'])} only in B, "
             f"{len(section['renamed'])} renamed (matched by demangled base name and template arguments)"]
    for row in section["rows"][:TOP_ROWS]:
        lines.append(f"  {_signed_ns(row['delta_ns']):>12}  {row['presence']:<10} {row['label']}")
    for match in section["renamed"]:
        lines.append(f"  renamed: {match['group_a']}  →  {match['group_b']}  ({match['match']})")
    return lines


def _passes(section: dict[str, Any]) -> list[str]:
    lines = [f"passes (summed kernel time): step time A {format_ns(section['step_a_ns'])} · "
             f"B {format_ns(section['step_b_ns'])} · B − A {_signed_ns(section['step_delta_ns'])}",
             f"  (step time from A: {section['step_source_a']}; B: {section['step_source_b']})"]
    for row in section["rows"]:
        rates = "".join(f" · TFLOP/s {side} {row[f'tflops_{side}']:.1f}" for side in ("a", "b")
                        if row[f"tflops_{side}"] is not None)
        lines.append(f"  {row['pass']:<13} A {format_ns(row['time_a_ns']):>10} · B {format_ns(row['time_b_ns']):>10}"
                     f" · B − A {_signed_ns(row['delta_ns'])}{rates}")
    return lines


def _busy(section: dict[str, Any]) -> list[str]:
    a, b = section["a"], section["b"]
    return [f"GPU busy (union of kernel and copy intervals / span): A {_share(a['busy_share'])} of "
            f"{format_ns(a['span_ns'])} · B {_share(b['busy_share'])} of {format_ns(b['span_ns'])} · idle A "
            f"{format_ns(a['idle_ns'])} · B {format_ns(b['idle_ns'])}"]


def _layers(section: dict[str, Any]) -> list[str]:
    lines = ["layers (median runtime per layer and pass, B − A):"]
    moved = sorted((r for r in section["rows"] if r["delta_ns"] is not None), key=lambda r: -abs(r["delta_ns"]))
    for row in moved[:TOP_ROWS]:
        lines.append(f"  {_signed_ns(row['delta_ns']):>12}  {row['layer']} · {row['pass']}")
    return lines


def _memory(section: dict[str, Any]) -> list[str]:
    alignment = section["alignment"]
    lines = [f"memory (bytes per bank, peak = highest snapshot; culprit = the op before it): ops aligned "
             f"{alignment['method']}: {alignment['matched']} matched, {alignment['only_a']} only in A, "
             f"{alignment['only_b']} only in B"]
    for buffer_type, row in section.items():
        if buffer_type in ("alignment", "first_divergence"):
            continue
        culprits = " · ".join(f"{side.upper()} after op {row[f'peak_op_{side}']['op_index']} "
                              f"({row[f'peak_op_{side}']['op_type']})" for side in ("a", "b")
                              if (row[f"peak_op_{side}"] or {}).get("op_index") is not None)
        lines.append(f"  {buffer_type:<9} peak A {format_bytes(row['peak_a_bytes_per_bank']):>10} · "
                     f"B {format_bytes(row['peak_b_bytes_per_bank']):>10} · "
                     f"B − A {_signed_bytes(row['delta_bytes_per_bank'])} · {culprits}")
    parted = section["first_divergence"]
    lines.append("  the curves never part" if parted is None else
                 f"  curves part at aligned op {parted['position']} ({parted['buffer_type']}: A op "
                 f"{parted['op_index_a']} {parted['op_type_a']}, B op {parted['op_index_b']} {parted['op_type_b']})")
    return lines


def _change(value: float | None) -> str:
    return "" if value is None else f" ({value:+.1%})"


def _cuda_memory(section: dict[str, Any]) -> list[str]:
    lines = [f"device memory, allocator events (rank {section['rank_a']} of A against rank {section['rank_b']} of B; "
             "peak allocated = highest allocated, culprit = the op or Python frame holding the most live bytes there; "
             "peak reserved = highest reserved):"]
    for row in section["devices"]:
        culprits = " · ".join(f"culprit {side.upper()} {row[f'culprit_{side}']} "
                              f"({format_bytes(row[f'culprit_bytes_{side}'])})"
                              for side in ("a", "b") if row[f"culprit_{side}"] is not None)
        lines.append(f"  {row['device']:<8} peak allocated A {format_bytes(row['peak_allocated_a']):>10} · "
                     f"B {format_bytes(row['peak_allocated_b']):>10} · B − A {_signed_bytes(row['allocated_delta'])}"
                     f"{_change(row['allocated_change'])}" + (f" · {culprits}" if culprits else ""))
        lines.append(f"  {'':<8} peak reserved  A {format_bytes(row['peak_reserved_a']):>10} · "
                     f"B {format_bytes(row['peak_reserved_b']):>10} · B − A {_signed_bytes(row['reserved_delta'])}"
                     f"{_change(row['reserved_change'])}")
    return lines


def _planner(section: dict[str, Any]) -> list[str]:
    if "group_a" not in section:
        return ["planner: a side has no dump group"]
    lines = [f"planner: {section['group_a']} (A) against {section['group_b']} (B): buffers "
             f"{section['buffer_changes']} · channels {section['channel_changes']}"]
    for peak in section["peaks"]:
        lines.append(f"  peak {peak['memory']} ({peak['unit']}): A {peak['peak_a']} · B {peak['peak_b']} · "
                     f"B − A {peak['delta']}")
    for row in section["buffers"]:
        lines.append(f"  {row['change']:<8} {row['memory']} {row['name']}: [{row['start_op_a']}-{row['end_op_a']}) → "
                     f"[{row['start_op_b']}-{row['end_op_b']})")
    return lines


def _compiler(section: dict[str, Any] | None) -> list[str]:
    if section is None:
        return ["compiler: a side has no compile"]
    lines = [f"compiler: A #{section['compile_a']} {section['kernel_a']} ({section['steps_a']} steps) against "
             f"B #{section['compile_b']} {section['kernel_b']} ({section['steps_b']} steps): {section['aligned']} "
             f"passes aligned, IR differs at {section['differing']}",
             f"  only in A: {', '.join(section['only_a']) or 'none'} · "
             f"only in B: {', '.join(section['only_b']) or 'none'}"]
    first = section["first_difference"]
    lines.append("  the IR never differs at a pass both ran" if first is None else
                 f"  first differing pass: {first['pass_name']} ({first['stage']}, {first['kind']}) at step "
                 f"{first['step_a']} of A, {first['step_b']} of B")
    diff = section["diff"]
    if diff is not None:
        lines.append(f"  {diff['pass_name']}: lines A {diff['lines_a']} · B {diff['lines_b']} · ops A {diff['ops_a']} "
                     f"· B {diff['ops_b']} · diff −{diff['removed']} / +{diff['added']} lines")
    changed = [f"{field} {values['a']} → {values['b']}" for field, values in section["metadata"].items()
               if values["a"] != values["b"]]
    lines.append(f"  metadata: {', '.join(changed) or 'no change'}")
    return lines


def _rewrites(section: dict[str, Any]) -> list[str]:
    counts, first = section["counts"], section["first_difference"]
    lines = [f"tinygrad rewrites: contexts A {counts['contexts_a']} · B {counts['contexts_b']}, aligned by name: "
             f"{counts['both']} in both ({counts['differing']} differ), {counts['only_a']} only in A, "
             f"{counts['only_b']} only in B"]
    lines.append("  every context both hold rewrote the same graphs" if first is None else
                 f"  first difference: {first['name']}, step {first['step_name']!r} ({first['reason']}) at step "
                 f"{first['step_a']} of A context {first['context_a']}, {first['step_b']} of B context "
                 f"{first['context_b']}")
    timed = [row for row in section["contexts"] if row["kernel_delta_ns"] is not None]
    for row in sorted(timed, key=lambda row: -abs(row["kernel_delta_ns"]))[:10]:
        lines.append(f"  kernel {row['name']}: A {row['kernel_ns_a']:,} ns · B {row['kernel_ns_b']:,} ns · "
                     f"B − A {_signed_ns(row['kernel_delta_ns'])}")
    return lines


_FORMATS = {"kernels": _kernels, "passes": _passes, "gpu_busy": _busy, "layers": _layers, "memory": _memory,
            "cuda_memory": _cuda_memory, "planner": _planner, "compiler": _compiler, "rewrites": _rewrites}


def format_report(report: dict[str, Any]) -> str:
    lines = [f"A = {report['a']}", f"B = {report['b']}",
             f"shared evidence: {', '.join(report['shared_evidence']) or 'none'}"]
    for name, render in _FORMATS.items():
        if name in report:
            lines += ["", *render(report[name])]
    return "\n".join(lines)
