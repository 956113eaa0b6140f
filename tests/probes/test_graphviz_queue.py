"""Probe 3 of issue 35: Graphviz as a denial of service.

Every graph of a many-graph DOT file was a new `dot` run of the whole file, cached per worker: 12
concurrent requests for different graphs stalled `/health` for up to 60 s. A `dot` whose worker was
killed ran on as an orphan for more than 100 s, past its 30 s limit.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.team_server import REPO_ROOT, team_server

NEEDS_DOT = pytest.mark.skipif(subprocess.run(["which", "dot"], capture_output=True).returncode != 0,
                               reason="Graphviz (dot) is not installed")


def random_graphs(count: int, nodes: int, edges: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(f"digraph g{g} {{\n" + "".join(f"  n{rng.randrange(nodes)} -> n{rng.randrange(nodes)};\n"
                                                 for _ in range(edges)) + "}\n" for g in range(count))


def descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        for task in os.listdir(f"/proc/{parent}/task") if os.path.isdir(f"/proc/{parent}/task") else []:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            found += [int(child) for child in children]
            pending += [int(child) for child in children]
    return found


def command_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def dot_processes() -> set[int]:
    return {int(pid) for pid in os.listdir("/proc") if pid.isdigit() and command_name(int(pid)) == "dot"}


@NEEDS_DOT
def test_a_dot_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    slow = tmp_path / "slow.dot"
    slow.write_text(random_graphs(1, 200, 2500))  # minutes of layout
    drawer = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from dashboard.figures.graphviz_svg import draw; "
                               "draw(Path(sys.argv[1]).read_text())", str(slow)],
        cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        deadline = time.monotonic() + 60
        dots: list[int] = []
        while not dots and time.monotonic() < deadline:
            dots = [pid for pid in descendants(drawer.pid) if command_name(pid) == "dot"]
            time.sleep(0.1)
        assert dots, "no dot process started"
        drawer.send_signal(signal.SIGKILL)  # the worker is killed: the out-of-memory killer, kill -9, a timeout
        drawer.wait()
        deadline = time.monotonic() + 5
        while any(running(pid) for pid in dots) and time.monotonic() < deadline:
            time.sleep(0.1)
        orphans = [pid for pid in dots if running(pid)]
        for pid in orphans:  # never leave one behind, whatever the outcome
            os.kill(pid, signal.SIGKILL)
        assert not orphans, f"dot ran on after its worker was killed: {orphans}"
    finally:
        if drawer.poll() is None:
            drawer.kill()


@NEEDS_DOT
def test_a_flood_of_graph_requests_is_one_dot_run_and_the_server_keeps_answering(tmp_path: Path) -> None:
    data = tmp_path / "data"
    inputs = tmp_path / "many.dot"
    inputs.write_text(random_graphs(12, 45, 220))  # ~4 s of layout for the file, each request for one graph
    store = RunStore(data)
    run = store.open(ingest_paths(store, [inputs], name="flood"))
    groups = [graph["group"] for graph in run.info.metadata["triton_ws"]["plain_graphs"]]
    assert len(groups) == 12
    before = dot_processes()
    with team_server(data, tmp_path, workers=2, threads=4) as server:
        with ThreadPoolExecutor(max_workers=8) as warm:  # each worker's first page sets Dash up: not measured
            list(warm.map(lambda _: server.get("/_dash-dependencies", timeout=300), range(8)))
        worst_health, most_dots, seen_dots, page_waits = 0.0, 0, set(), []
        stop = threading.Event()

        def watch() -> None:
            nonlocal worst_health, most_dots
            while not stop.is_set():
                started = time.perf_counter()
                status, _ = server.get("/health", timeout=60)
                worst_health = max(worst_health, time.perf_counter() - started)
                assert status == 200
                dots = dot_processes() - before
                seen_dots.update(dots)
                most_dots = max(most_dots, len(dots))
                time.sleep(0.1)

        def graph(group: str) -> tuple[int, float]:
            started = time.perf_counter()
            status, _ = server.get(f"/runs/{run.id}/graph.svg?group={urllib.parse.quote(group)}", timeout=120)
            return status, time.perf_counter() - started

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with ThreadPoolExecutor(max_workers=12) as pool:
                flood = [pool.submit(graph, group) for group in groups]
                time.sleep(1.0)
                for _ in range(3):  # other users meanwhile: a page's dependencies
                    started = time.perf_counter()
                    assert server.get("/_dash-dependencies", timeout=120)[0] == 200
                    page_waits.append(time.perf_counter() - started)
                answers = [future.result() for future in flood]
        finally:
            stop.set()
            watcher.join()
        statuses = sorted(status for status, _ in answers)
        assert set(statuses) <= {200, 503}, (statuses, server.log.read_text()[-4000:])
        # Whoever was told "busy" gets the graph on the next try, from the drawing kept on disk.
        for group in groups:
            status, seconds = graph(group)
            assert status == 200 and seconds < 5, (group, status, seconds)
    assert worst_health < 1.0, f"/health took {worst_health:.2f} s during the flood"
    assert most_dots <= 2, f"{most_dots} dot processes at once"
    assert len(seen_dots) == 1, f"{len(seen_dots)} dot runs for one file"
    assert max(page_waits) < 5.0, f"a page request waited {max(page_waits):.1f} s behind the graphs"
    assert not list((data / "runs").glob("*/.cache"))  # the drawings are kept beside the runs, not in them
