"""The UOp graph replay's parts on graphs built here: interning, substitute (with and without the live graph),
the printer's form, VIZ's folding, the node bound and the left-to-right layout. (Graph by graph against
tinygrad's own replay: test_uop_replay_serve.py.)"""

from __future__ import annotations

import random

import polars as pl
import pytest

from dashboard.analysis.uop_graph import LiveGraph, NodePool, RewriteError, UOpColumns, substitute, toposort
from dashboard.analysis.uop_replay import StepReplay, StepSpec
from dashboard.analysis.uop_shown import shown_graph
from dashboard.analysis.uop_text import linear_text, uop_text
from dashboard.figures.uop_graph import layout, uop_graph_elements


def leaf(pool: NodePool, arg: str, op: str = "PARAM") -> int:
    return pool.node(op, "dtypes.float", (), arg, None)


def test_equal_fields_are_one_node_as_in_tinygrads_uop_cache() -> None:
    pool = NodePool()
    a, b = leaf(pool, "a"), leaf(pool, "b")
    assert pool.node("ADD", "dtypes.float", (a, b), None, None) == pool.node("ADD", "dtypes.float", (a, b), None, None)
    assert pool.node("ADD", "dtypes.float", (a, b), None, "t") != pool.node("ADD", "dtypes.float", (a, b), None, None)


def test_a_table_read_by_trace_number_with_a_damaged_row_standing_alone() -> None:
    frame = pl.DataFrame({"trace": [10, 11, 12, 13], "op": ["CONST", "CONST", "ADD", "MUL"],
                          "dtype": ["dtypes.int"] * 4, "arg": ["1", "2", None, None],
                          "src": [[], [], [10, 11], [13, 12]], "tag": [None] * 4},
                         schema_overrides={"src": pl.List(pl.Int64)})
    table, pool = UOpColumns(frame), NodePool()
    add = pool.from_trace(table, 12)
    assert pool.op[add] == "ADD" and [pool.arg[s] for s in pool.src[add]] == ["1", "2"]
    damaged = pool.from_trace(table, 13)  # names itself as a source: a cycle tinygrad can never write
    assert pool.src[damaged] == () and "damaged" in (pool.arg[damaged] or "")
    missing = pool.from_trace(table, 99)
    assert pool.op[missing] == "MISSING"


def test_unified_follows_replacements_to_a_fixed_point_and_walk_takes_them_as_they_are() -> None:
    pool = NodePool()
    a, b, c = leaf(pool, "a"), leaf(pool, "b"), leaf(pool, "c")
    inner = pool.node("NEG", "dtypes.float", (a,), None, None)
    root = pool.node("SINK", "dtypes.void", (inner,), None, None)
    neg_b = pool.node("NEG", "dtypes.float", (b,), None, None)
    replaces = {a: b, neg_b: c}  # a -> b makes NEG(b), which is itself replaced by c
    unified = substitute(pool, root, replaces)
    assert pool.src[unified] == (c,)
    walked = substitute(pool, root, replaces, walk=True)
    assert pool.src[walked] == (neg_b,)  # one pass: the rebuilt NEG(b) is not visited again
    with pytest.raises(RewriteError):
        substitute(pool, root, {a: b, b: a})


def test_call_bodies_are_not_entered_unless_asked() -> None:
    pool = NodePool()
    a, b = leaf(pool, "a"), leaf(pool, "b")
    body = pool.node("SINK", "dtypes.void", (a,), None, None)
    call = pool.node("CALL", "dtypes.void", (body, a), None, None)
    root = pool.node("SINK", "dtypes.void", (call,), None, None)
    kept = substitute(pool, root, {a: b})
    assert pool.src[pool.src[kept][0]] == (body, b)
    entered = substitute(pool, root, {a: b}, enter_calls=True)
    assert pool.src[pool.src[pool.src[entered][0]][0]] == (b,)


def random_graph(pool: NodePool, rng: random.Random, size: int) -> list[int]:
    nodes = [leaf(pool, f"p{i}") for i in range(4)]
    for index in range(size):
        sources = tuple(rng.choice(nodes) for _ in range(rng.randint(1, 3)))
        nodes.append(pool.node(rng.choice(["ADD", "MUL", "MAX", "CALL"]), "dtypes.float", sources, str(index % 3),
                               None))
    return nodes


@pytest.mark.parametrize("seed", range(12))
def test_the_live_graph_shortcut_gives_exactly_the_full_walks_graphs(seed: int) -> None:
    rng = random.Random(seed)
    pool = NodePool()
    nodes = random_graph(pool, rng, 120)
    root = pool.node("SINK", "dtypes.void", tuple(nodes[-5:]), None, None)
    walk, bottom_up, enter_calls = rng.random() < 0.3, rng.random() < 0.3, rng.random() < 0.5
    full, fast = root, root
    live = LiveGraph(pool, root)
    replaces: dict[int, int] = {}
    for _ in range(25):
        present = toposort(pool, fast)
        before = rng.choice(present)
        after = pool.node("NEG", pool.dtype[before], (rng.choice(nodes),), str(rng.random()), None) \
            if rng.random() < 0.6 else rng.choice(nodes[:30])
        replaces[before] = after
        try:
            expected = substitute(pool, root if bottom_up else full, replaces, walk, enter_calls)
        except RewriteError:
            with pytest.raises(RewriteError):
                substitute(pool, root if bottom_up else fast, replaces, walk, enter_calls, live)
            return
        got = substitute(pool, root if bottom_up else fast, replaces, walk, enter_calls, live)
        assert got == expected
        if not bottom_up:
            full, fast = expected, got
            live.replace_root(got)
            assert set(live.users) == set(toposort(pool, got))  # the live graph is exactly the new graph


def test_the_printer_writes_tinygrads_form_naming_shared_nodes() -> None:
    pool = NodePool()
    x = pool.node("CONST", "dtypes.float", (), "2.0", None)
    add = pool.node("ADD", "dtypes.float", (x, x), None, None)
    root = pool.node("SINK", "dtypes.void", (add,), None, "1")
    assert uop_text(pool, root) == (
        "UOp(Ops.SINK, dtypes.void, arg=None, tag=1, src=(\n"
        "  UOp(Ops.ADD, dtypes.float, arg=None, src=(\n"
        "    x1:=UOp(Ops.CONST, dtypes.float, arg=2.0, src=()),\n"
        "    x1,)),))")
    assert uop_text(pool, x) == "UOp(Ops.CONST, dtypes.float, arg=2.0, src=())"
    chain = x
    for index in range(50):
        chain = pool.node("NEG", "dtypes.float", (chain,), str(index), None)
    text = uop_text(pool, chain, max_lines=10)
    assert len(text.splitlines()) == 11 and text.endswith("(the text stops at 10 lines)")
    linear = pool.node("LINEAR", "dtypes.void", (x, add), None, None)
    assert linear_text(pool, linear).splitlines()[1].split() == ["1", "Ops.ADD", ":", "dtypes.float", "['2.0',",
                                                                  "'2.0']", "None"]


def test_consts_fold_into_their_users_and_the_bound_keeps_the_change_and_the_root() -> None:
    pool = NodePool()
    one = pool.node("CONST", "dtypes.float", (), "1.0", None)
    chain = leaf(pool, "start")
    for index in range(400):
        chain = pool.node("ADD", "dtypes.float", (chain, one), str(index), None)
    root = pool.node("SINK", "dtypes.void", (chain,), None, None)
    deep = toposort(pool, root)[5]  # near the far end of the chain
    shown = shown_graph(pool, root, {deep}, limit=50)
    assert shown.drawable == 402 and shown.folded == 1 and len(shown.nodes) == 50 and shown.hidden == 352
    assert root in shown.nodes and deep in shown.nodes and shown.changed == {deep}
    assert shown.cut and all(node in shown.nodes for node in shown.cut)
    assert "CONST1 1" in shown.labels[chain]  # the folded source, as VIZ writes it
    positions = layout(shown)
    assert all(positions[source][0] < positions[user][0] for source, user, _ in shown.edges)
    elements = uop_graph_elements(shown)
    classes = {element["data"]["id"]: element.get("classes", "") for element in elements}
    assert "changed" in classes[f"u{deep}"] and "uop" in classes[f"u{root}"]


def test_a_step_replay_stops_at_a_rewrite_error_as_serve_does() -> None:
    frame = pl.DataFrame({"trace": [0, 1, 2, 3], "op": ["PARAM", "PARAM", "NEG", "SINK"],
                          "dtype": ["dtypes.float"] * 3 + ["dtypes.void"], "arg": ["a", "b", None, None],
                          "src": [[], [], [0], [2]], "tag": [None] * 4}, schema_overrides={"src": pl.List(pl.Int64)})
    replay = StepReplay(UOpColumns(frame), StepSpec(sink=3, matches=((0, 1), (1, 0), (0, 1))))
    assert replay.graph_count() == 3  # the input, the first match, the failing second: the third is never shown
    assert replay.change(2) is not None and "infinite loop" in (replay.change(2).error or "")
    assert replay.diff(1)[:2] == ["--- before", "+++ after"]
