"""A grammar of the Graphviz DOT language, parsed with lark (LALR).

The parser knows DOT, nothing about Triton: it turns text into a neutral
`DotGraph` (graph attributes, clusters with their member nodes, nodes with
attributes, edges with attributes; the model and its assembly are in `graph`).
The warp-specialization semantics live in
`triton_ws.semantics`. Keeping the layers apart makes harmless layout changes
(attribute order, blank lines, a re-save by another tool) irrelevant to the
planner interpretation, and lets each layer be tested on its own.

Speed: pydot needs ~0.8 s for an 11 KB planner dump. lark's own lexer spends
~9 µs per token on a slow core, so the lexical layer is one compiled regex run
by `re.finditer` (C speed) feeding lark's LALR parser, and an attribute list
`[k=v, ...]` is one token whose pairs a second regex splits (attribute lists
are a regular language). Statement separators `;` are optional in DOT, so the
lexer drops them. That brings an 11 KB dump to a few milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from dashboard.collectors.dot.graph import Assembler, DotGraph, DotSyntaxError
from dashboard.collectors.dot.lazy_regex import LazyPattern

if TYPE_CHECKING:
    from lark import Lark
    from lark.exceptions import UnexpectedInput

# lark itself is imported on the first parse (`_parser`): ~20-30 ms that every ingest, of any format, paid
# when the registry imported the collectors to sniff the inputs.

_GRAMMAR = r"""
start: graph+
graph: STRICT? (GRAPH | DIGRAPH) ID? LBRACE stmts? _RBRACE
stmts: stmts? (attr_assign | attr_stmt | node_stmt | edge_stmt | subgraph)
attr_assign: ID _EQUAL ID
attr_stmt: (GRAPH | NODE | EDGE) ATTRS
node_stmt: ID ATTRS?
edge_stmt: (ID | subgraph) (EDGEOP (ID | subgraph))+ ATTRS?
subgraph: (SUBGRAPH ID?)? LBRACE stmts? _RBRACE
%declare STRICT GRAPH DIGRAPH NODE EDGE SUBGRAPH EDGEOP ID ATTRS LBRACE _RBRACE _EQUAL
"""

# Linear time on any input (a hostile upload must not pin a worker): every repetition is possessive
# (`*+`, `++`) or atomic (`(?>...)`), and the alternatives inside a loop start with different characters,
# so a failed match never re-splits what a loop already consumed. With plain `*` an unclosed `[xxxx...`
# took time x4 per two characters (issue 14).
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_HTML = r"<(?:[^<>]++|<[^<>]*+>)*+>"  # HTML labels: text and tags (<TD>, <B>...) inside one <...>
_NUMERAL = r"-?(?:\.[0-9]++|[0-9]++(?:\.[0-9]*+)?+)"
_NAME = r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_.\u0080-\uffff]*+"
_ANY_ID = rf"(?>{_STRING}(?:\s*+\+\s*+{_STRING})*+|{_HTML}|{_NUMERAL}|{_NAME})"

# A port (`node:port:compass`) only steers where an edge touches a node's box: the lexer drops it.
_PORT = rf"(?:\s*+:\s*+(?>{_STRING}|{_NAME}|{_NUMERAL}))*+"
_TOKEN = LazyPattern(
    "|".join(
        [
            r"(?P<SKIP>(?:[ \t\r\n\f;]++|//[^\n]*+|(?>/\*[\s\S]*?\*/)|(?m:^#[^\n]*+))++)",
            rf"(?P<ATTRS>(?:\[(?:[^\]\"<]++|{_STRING}|{_HTML})*+\]\s*+)++)",
            rf"(?P<STRING>{_STRING}(?:\s*+\+\s*+{_STRING})*+){_PORT}",
            rf"(?P<HTML>{_HTML})",
            r"(?P<EDGEOP>->|--)",
            rf"(?P<NUMERAL>{_NUMERAL}){_PORT}",
            rf"(?P<NAME>{_NAME}){_PORT}",
            r"(?P<PUNCT>[{}=])",
            r"(?P<BAD>.)",
        ]
    ),
    re.S,
)
# One separator between pairs: `\s*+(?:[,;]\s*+)?+`, never two adjacent `\s*` that could share the blanks.
# re.S as in the lexer: a quoted string may continue on the next line after a backslash.
_ATTR_LIST = LazyPattern(rf"(?:\[\s*+(?:{_ANY_ID}\s*+=\s*+{_ANY_ID}\s*+(?:[,;]\s*+)?+)*+\]\s*+)++", re.S)
_ATTR_PAIR = LazyPattern(rf"({_ANY_ID})\s*+=\s*+({_ANY_ID})", re.S)
_ATTR_STEP = LazyPattern(rf"(?P<sep>[\s,;\[\]]++)|(?P<pair>{_ANY_ID}\s*+=\s*+{_ANY_ID})|(?P<bad>.)", re.S)
_STRING_PART = re.compile(_STRING, re.S)
_KEYWORDS = {"strict": "STRICT", "graph": "GRAPH", "digraph": "DIGRAPH", "node": "NODE", "edge": "EDGE",
             "subgraph": "SUBGRAPH"}
_PUNCT = {"{": "LBRACE", "}": "_RBRACE", "=": "_EQUAL"}
_ID_KINDS = frozenset(("STRING", "HTML", "NUMERAL"))
# Subgraphs are assembled recursively (a few frames per level); a cap keeps a hostile `{{{{...` a syntax
# error instead of a RecursionError. Real graphs nest clusters a handful of levels deep.
MAX_NESTING = 100


_ESCAPE = re.compile(r'\\(["\\nlr\n])')
# A backslash before a line break continues the string on the next line (the C convention DOT follows).
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "l": "\n", "r": "\n", "\n": ""}


def unescape(value: str) -> str:
    """A DOT string's text: `\\"` becomes `"`, the label escapes `\\n \\l \\r` newlines, backslash-newline nothing."""
    if "\\" not in value:
        return value
    return _ESCAPE.sub(lambda match: _ESCAPES[match.group(1)], value)


def id_text(raw: str) -> str:
    """The text of a DOT identifier: quoted strings unquoted, unescaped and `+`-joined."""
    if raw.startswith('"'):
        return "".join(unescape(part[1:-1]) for part in _STRING_PART.findall(raw))
    return raw  # names, numerals and HTML labels (kept whole, as Graphviz tools report them)


def _attrs(token: _Tok) -> dict[str, str]:
    """The name=value pairs of one or more `[...]` lists (validated whole, then split)."""
    value = token.value
    if _ATTR_LIST.fullmatch(value) is None:
        for step in _ATTR_STEP.finditer(value):
            if step.lastgroup == "bad":
                line = token.line + value.count("\n", 0, step.start())
                raise DotSyntaxError(line, f"malformed attribute list near {value[step.start():][:30]!r} "
                                           "(expected name=value pairs)")
    return {
        (id_text(key) if key[0] == '"' else key): (id_text(text) if text[0] == '"' else text)
        for key, text in _ATTR_PAIR.findall(value)
    }


_BAD_CHAR_HINTS = {
    '"': "an unterminated quoted string",
    "[": "an unterminated attribute list",
    "<": "an unterminated HTML label",
}


class _Tok(NamedTuple):
    """A token as lark's LALR loop needs it (type, value, positions), at the cost of a tuple."""

    type: str
    value: str
    start_pos: int
    line: int
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    end_pos: int = 0


def _tokens(text: str) -> Iterator[_Tok]:
    """One compiled regex over the whole text; lark only sees the meaningful tokens."""
    line, last, depth = 1, 0, 0
    count = text.count
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "SKIP":
            continue
        start = match.start()
        line += count("\n", last, start)
        last = start
        value = match.group(kind)  # type: ignore[arg-type]
        if kind == "NAME":
            kind = _KEYWORDS.get(value.lower(), "ID")
        elif kind in _ID_KINDS:
            kind = "ID"
        elif kind == "PUNCT":
            kind = _PUNCT[value]
            depth += (kind == "LBRACE") - (kind == "_RBRACE")
            if depth > MAX_NESTING:
                raise DotSyntaxError(line, f"braces nested more than {MAX_NESTING} deep")
        elif kind == "BAD":
            hint = _BAD_CHAR_HINTS.get(value)
            what = f"unexpected character {value!r}" + (f" ({hint}?)" if hint else "")
            raise DotSyntaxError(line, what)
        yield _Tok(kind, value, start, line)  # type: ignore[arg-type]


# --- parse callbacks: LALR calls these on each reduction, so no parse tree is built -----------------
# Statements become small tuples: ("node", id, attrs, line), ("edge", ends, attrs),
# ("subgraph", name, stmts, line), ("defaults", kind, attrs), ("assign", key, value, line).


class _Build:
    def stmts(self, children: list) -> list:
        # Left recursion: `stmts stmt` extends the list built so far, one append per statement.
        if len(children) == 2:
            children[0].append(children[1])
            return children[0]
        return children

    def attr_assign(self, children: list[_Tok]) -> tuple:
        return ("assign", id_text(children[0].value), id_text(children[1].value), children[0].line)

    def attr_stmt(self, children: list[_Tok]) -> tuple:
        return ("defaults", children[0].value.lower(), _attrs(children[1]))

    def node_stmt(self, children: list[_Tok]) -> tuple:
        name = children[0]
        return ("node", id_text(name.value), _attrs(children[1]) if len(children) > 1 else {}, name.line)

    def edge_stmt(self, children: list) -> tuple:
        ends, attrs = [], {}
        for part in children:
            if isinstance(part, _Tok):
                if part.type == "ID":
                    ends.append(("id", id_text(part.value), part.line))
                elif part.type == "ATTRS":
                    attrs = _attrs(part)
            else:
                ends.append(part)  # a subgraph: the edge touches every node it holds
        return ("edge", ends, attrs)

    def subgraph(self, children: list) -> tuple:
        name, line = None, 0
        for part in children:
            if isinstance(part, _Tok):
                line = line or part.line
                if part.type == "ID":
                    name = id_text(part.value)
        return ("subgraph", name, next((p for p in children if isinstance(p, list)), []), line)

    def graph(self, children: list) -> tuple:
        tokens = [p for p in children if isinstance(p, _Tok)]
        kind = next(t for t in tokens if t.type in ("GRAPH", "DIGRAPH"))
        name = next((id_text(t.value) for t in tokens if t.type == "ID"), "")
        stmts = next((p for p in children if isinstance(p, list)), [])
        return (kind.type == "DIGRAPH", any(t.type == "STRICT" for t in tokens), name, stmts, kind.line)

    def start(self, children: list) -> list[tuple]:
        return children


@cache
def _parser() -> Lark:  # built on first use: ~0.1-0.3 s that every ingest (any format) paid at import
    from lark import Lark
    from lark.lexer import Lexer

    class _DotLexer(Lexer):
        def __init__(self, lexer_conf: object) -> None:
            pass

        def lex(self, text: str) -> Iterator[_Tok]:  # type: ignore[override]
            return _tokens(text)

    return Lark(_GRAMMAR, parser="lalr", lexer=_DotLexer, transformer=_Build())


def _syntax_error(text: str, exc: UnexpectedInput, line_offset: int) -> DotSyntaxError:
    from lark.exceptions import UnexpectedToken

    last_line = text.count("\n") + 1 + line_offset
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        token = exc.token
        message = f"unexpected {token.value[:40]!r}"
        if "DIGRAPH" in exc.expected and "$END" in exc.expected:
            message += " after the graph was closed (one `}` too many earlier?)"
        return DotSyntaxError(token.line + line_offset, message)
    # Running out of input inside a graph: braces do not balance or the file was cut short.
    return DotSyntaxError(last_line, "the graph ends before it is closed (unbalanced braces or a truncated file)")


def parse_dot(text: str, line_offset: int = 0) -> list[DotGraph]:
    """Every graph in a DOT text. `line_offset` shifts reported lines (for a block cut from a log).

    Raises DotSyntaxError with the (shifted) line of the first problem.
    """
    parser = _parser()
    from lark.exceptions import UnexpectedInput  # loaded by `_parser`

    try:
        parsed = parser.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, line_offset) from None
    except DotSyntaxError as exc:
        raise DotSyntaxError((exc.line or 0) + line_offset or None, exc.message) from None
    graphs = []
    for directed, strict, name, stmts, line in parsed:
        graph = DotGraph(name=name, directed=directed, strict=strict, line=line + line_offset)
        Assembler(graph, line_offset).walk(stmts, None, {}, {})
        graphs.append(graph)
    return graphs
