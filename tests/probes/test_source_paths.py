"""Probe 2 of issue 35: a file name from an input is data, never a pattern.

A Triton log naming its kernel source `loc("/x/**.py":1:0)` made every compiler view answer "ValueError:
Invalid pattern: '**'" (the name went to `Path.rglob`), and the compiler PNG export a 502 after 63 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.ingest.pipeline import ingest_paths
from tests.collectors.triton_ir_fixtures import PY, compile_log

HOSTILE_NAMES = ["/x/**.py", "/x/[a-z].py", "/x/?.py", "/x/*", "**/*.py", "/x/{a,b}.py", "/x/../../etc/*.py"]


@pytest.fixture
def store(tmp_path: Path):
    from dashboard.layouts import server_state
    from dashboard.settings import Settings

    return server_state.configure(Settings(data_dir=tmp_path / "data", seed_demo=False))


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_a_glob_in_a_logged_source_path_is_only_a_name(store, tmp_path: Path, hostile: str) -> None:
    from dashboard.layouts.compiler_panels import panels
    from dashboard.views import compiler as compiler_view
    from dashboard.views.compiler_data import python_source

    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / "dump.txt").write_text(compile_log("add_kernel", 1024).replace(PY, hostile))
    (folder / "kernels.py").write_text("import triton\n")  # a file the pattern would have matched
    run = store.open(ingest_paths(store, [folder], name="glob"))
    assert python_source(run, hostile) is None
    out = panels(run, compiler_view.State.from_query({"compile": "0", "step": "2"}, run))
    assert "not readable here" in out["python_note"]


def test_the_copy_whose_path_matches_most_of_the_logged_path_is_shown(store, tmp_path: Path) -> None:
    from dashboard.views.compiler_data import python_source

    folder = tmp_path / "project"
    for sub, text in (("a/kernels", "# the a copy\n"), ("b/kernels", "# the b copy\n")):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "add.py").write_text(text)
    (folder / "dump.txt").write_text(compile_log("add_kernel", 1024))
    run = store.open(ingest_paths(store, [folder], name="tails"))
    assert python_source(run, "/home/me/project/b/kernels/add.py")[0] == "# the b copy"
    assert python_source(run, "/home/me/project/a/kernels/add.py")[0] == "# the a copy"
    assert python_source(run, "/elsewhere/add.py")[0] == "# the a copy"  # the name alone: the first in order
    assert python_source(run, "/home/me/project/b/kernels/missing.py") is None
