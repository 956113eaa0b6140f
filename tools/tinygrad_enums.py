"""Write dashboard/collectors/tinygrad/enums.py: the value -> name tables of tinygrad's pickled enums.

tinygrad's VIZ pickles store an enum member as `Ops(33)`: the number, never the name, and the
numbering changes in every release. The collector never imports tinygrad, so it ships one table
per supported release, made here from each release's *source* (parsed with `ast`, never
imported: the same rule the collector follows, and a release need not run on this machine).

    python tools/tinygrad_enums.py VERSION=SITE_PACKAGES_TINYGRAD [...]
    python tools/tinygrad_enums.py 0.14.0=/work/venvs/tinygrad/lib/python3.11/site-packages/tinygrad \
        0.13.0=/work/venvs/tinygrad013/lib/python3.11/site-packages/tinygrad \
        0.12.0=/work/venvs/tinygrad012/lib/python3.11/site-packages/tinygrad

Members follow Python's rules: `auto()` is one more than the largest value so far (tinygrad's
`FastEnum` counts across all its subclasses: `Ops` is the first one, so it starts at 1, as a plain
`Enum` does), an integer literal is itself. Releases are written newest first.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# enum -> (file inside the tinygrad package, class name): where each pickled enum is defined.
ENUM_SOURCES: dict[str, str] = {
    "Ops": "uop/__init__.py",
    "AxisType": "uop/ops.py",
    "OptOps": "codegen/opt/__init__.py",
    "AddrSpace": "dtype.py",
}
OUT = Path(__file__).resolve().parents[1] / "dashboard" / "collectors" / "tinygrad" / "enums.py"


def _members(source: str, class_name: str) -> dict[int, str]:
    """value -> name of the members of `class_name` in one module's source, in declaration order."""
    tree = ast.parse(source)
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    if not found:
        raise SystemExit(f"class {class_name} not found")
    members: dict[int, str] = {}
    last = 0
    for statement in found[0].body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if not isinstance(target, ast.Name) or target.id.startswith("_"):
            continue
        value = statement.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "auto":
            number = last + 1
        elif isinstance(value, ast.Constant) and type(value.value) is int:
            number = value.value
        else:
            continue  # not a member (a helper attribute)
        members[number] = target.id
        last = max(last, number)
    return members


def tables(package: Path) -> dict[str, dict[int, str]]:
    return {enum: _members((package / relpath).read_text(), enum) for enum, relpath in ENUM_SOURCES.items()}


def _render(releases: dict[str, dict[str, dict[int, str]]]) -> str:
    lines = [
        '"""Value -> name of tinygrad\'s pickled enums per release: made by tools/tinygrad_enums.py, do not edit.',
        "",
        "A VIZ pickle stores `Ops(33)`, never `Ops.ADD`; these tables come from each release's source.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "# release -> enum -> value -> member name; newest release first.",
        "RELEASES: dict[str, dict[str, dict[int, str]]] = {",
    ]
    for version, enums in releases.items():
        lines.append(f'    "{version}": {{')
        for enum, members in enums.items():
            lines.append(f'        "{enum}": {{')
            items = [f'{value}: "{name}",' for value, name in sorted(members.items())]
            line = "           "
            for item in items:
                if len(line) + 1 + len(item) > 116:
                    lines.append(line)
                    line = "           "
                line += " " + item
            lines.append(line)
            lines.append("        },")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(arguments: list[str]) -> None:
    if not arguments:
        raise SystemExit(__doc__)
    releases: dict[str, dict[str, dict[int, str]]] = {}
    for argument in arguments:
        version, _, folder = argument.partition("=")
        releases[version] = tables(Path(folder))
    ordered = dict(sorted(releases.items(), key=lambda item: tuple(int(p) for p in item[0].split(".")), reverse=True))
    OUT.write_text(_render(ordered))
    for version, enums in ordered.items():
        print(version, {enum: len(members) for enum, members in enums.items()})


if __name__ == "__main__":
    main(sys.argv[1:])
