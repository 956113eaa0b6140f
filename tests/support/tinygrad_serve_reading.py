"""tinygrad's own reading of a pair of VIZ files, as JSON: the reference the collector's tests compare with.

Run as a script by an interpreter that has tinygrad (never imported by the project or its tests):

    python tests/support/tinygrad_serve_reading.py REWRITES PROFILE

It calls what tinygrad's VIZ server and CLI call (`viz/serve.py`: `load_rewrites` for the
contexts, `get_profile` for the timeline, `viz/cli.py`: `decode_profile` to read that back), and
prints, per context, its name and the counts of its real steps (serve adds pseudo steps such as
"View Source") and matches; per timeline row, each event's name (ANSI colours stripped), duration
(a float32, as serve encodes it), FLOPS and B/s mem where serve computes them; per memory row,
its peak and how many allocs and frees serve lists (a buffer never freed gets a free at the end);
and per device the alloc / free / exec points in the events tinygrad unpickled (serve's list cannot
tell a real free from one it adds at the end).
"""

from __future__ import annotations

import json
import sys


def main(rewrites_path: str, profile_path: str) -> None:
    from tinygrad.helpers import ProfilePointEvent, ansistrip
    from tinygrad.uop.ops import RewriteTrace
    from tinygrad.viz import serve as viz
    from tinygrad.viz.cli import decode_profile

    data = viz.VizData(viz.load_pickle(rewrites_path, default=RewriteTrace([], [], {})))
    viz.load_rewrites(data)
    contexts = []
    for context in data.ctxs:
        real = [step for step in context["steps"] if step["query"].startswith("/graph-rewrites")]
        contexts.append({"name": ansistrip(context["name"]), "steps": len(real),
                         "matches": sum(step["match_count"] for step in real),
                         "step_names": [step["name"] for step in real]})
    events = viz.load_pickle(profile_path, default=[])
    points: dict[str, dict[str, int]] = {}
    for event in events:
        if isinstance(event, ProfilePointEvent):
            counts = points.setdefault(event.device, {})
            counts[event.name] = counts.get(event.name, 0) + 1
    encoded = viz.get_profile(data, events)
    rows: dict[str, list[dict]] = {}
    memory: dict[str, dict] = {}
    peak = 0
    if encoded is not None:
        profile = decode_profile(encoded)
        peak = profile["peak"]
        for row, layout in profile["layout"].items():
            if layout["event_type"] == 0:
                rows[row] = [{"name": ansistrip(event["name"]), "dur": event["dur"],
                              "flops": event["fmt"].get("FLOPS"), "mem": event["fmt"].get("B/s mem")}
                             for event in layout["events"]]
            else:
                kinds = [event["event"] for event in layout["events"]]
                memory[row.removesuffix(" Memory")] = {"peak": layout["peak"], "allocs": kinds.count("alloc"),
                                                      "frees": kinds.count("free")}
    json.dump({"contexts": contexts, "rows": rows, "memory": memory, "peak": peak, "points": points}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
