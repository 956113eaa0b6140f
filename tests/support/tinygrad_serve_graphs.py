"""tinygrad's own replay of rewrite steps (VIZ's graphs), as JSON: what the replay tests compare with.

Run as a script by an interpreter that has tinygrad (never imported by the project or its tests):

    python tests/support/tinygrad_serve_graphs.py REWRITES CONTEXT:STEP ...

For each step it calls what tinygrad's VIZ server calls for `/graph-rewrites?ctx=C&step=S`
(`viz/serve.py: get_full_rewrite`, every graph of the step: the input, then one per match) and prints
per graph: each UOp as (op, number of sources) sorted, which of them VIZ folds into their users'
labels (CONSTs and their broadcasts) as a count, and the ops of the nodes it highlights as changed.
"""

from __future__ import annotations

import json
import sys


def main(rewrites_path: str, steps: list[str]) -> None:
    # The graphs are what is compared, not their texts: serve's Python rendering of each whole graph
    # (`pystr`, for its text panel) and of every INDEX in a label (`UOp.render`, which simplifies the
    # expression first) cost nearly all of its time (229 s for one 53-match step of the shared sample)
    # and are left out. The nodes, edges, folding and highlighting are serve's own code.
    # The rest of each label past its op's name (ranges, shapes, wrapped args, an INDEX's rendered
    # expression and ranges) is never read either: serve's label helpers are stubbed in its module,
    # and the `sum` that opens an INDEX's label lines raises, so `uop_to_json`'s own `except` ends that
    # label there (it costs a toposort of every INDEX source: about half of what was left). Which
    # nodes a graph has, their sources, `exclude` and `change` are computed before and apart from
    # the label text, by the same code.
    import contextlib

    from tinygrad.uop.ops import RewriteTrace, UOp
    from tinygrad.viz import serve as viz

    viz.pystr = lambda uop: ""
    UOp.render = lambda self, *args, **kwargs: ""
    for helper in ("multirange_str", "range_str", "shape_to_str", "mask_to_str", "word_wrap"):
        setattr(viz, helper, lambda *args, **kwargs: "")
    viz.soft_err = lambda fn=None: contextlib.suppress(Exception)  # only ever guards label parts here

    def index_label_left_out(*args: object) -> int:
        raise LookupError("an INDEX label's expression is not compared")

    viz.sum = index_label_left_out
    data = viz.VizData(viz.load_pickle(rewrites_path, default=RewriteTrace([], [], {})))
    viz.load_rewrites(data)
    out: dict[str, list[dict]] = {}
    for key in steps:
        context, step = (int(part) for part in key.split(":"))
        graphs = []
        for shown in viz.get_full_rewrite(data, data.trace.rewrites[context][step]):
            graph = shown["graph"]
            nodes = sorted([node["label"].split("\n", 1)[0], len(node["src"])] for node in graph.values())
            changed = sorted(graph[node]["label"].split("\n", 1)[0] for node in shown["change"] or [])
            graphs.append({"nodes": nodes, "changed": changed,
                           "excluded": sum(1 for node in graph.values() if node["exclude"])})
        out[key] = graphs
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
