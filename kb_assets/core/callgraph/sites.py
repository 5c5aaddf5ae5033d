"""Call-site details the collector keeps beyond the callee: arguments, decorators, ``__main__`` guards.

Arguments are kept only when they are names (``run(handler)``, ``run(cb=self.on_done)``): those are
the ones that can carry a first-party function into the callee. A decorator is a call too — ``@d``
calls ``d`` with the decorated definition when the enclosing scope executes the ``def`` — so each
becomes a site of the enclosing scope whose only argument is that definition (``#<scope>``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kb_assets.core import treesitter as ts
from kb_assets.core.callgraph.exprs import callee_text, expr_text
from kb_assets.core.models import JSON

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.callgraph.skeleton import Skeleton
    from kb_assets.core.spans import ParsedSource

_NAMES = ts.kind_ids("identifier", "attribute")
_KEYWORD, _COMMENT = ts.kind_ids("keyword_argument"), ts.kind_ids("comment")
_STOP = ts.kind_ids("list_splat", "dictionary_splat")
_ARGUMENT_LIST = ts.kind_ids("argument_list")
_CONSTANTS = frozenset({b"None", b"True", b"False"})
_SIMPLE = re.compile(rb"[ \t\r\n\w.,=*]*")
_DOTTED = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MODE_CHARS = frozenset("rwxabt+U")
_MAIN = frozenset({'__name__=="__main__"', '"__main__"==__name__'})


def call_extra(source: ParsedSource, arguments: Node, expr: str) -> dict[str, JSON]:
    """Name arguments (positional ``a``, keyword ``k``) and an ``open`` mode literal of one call."""
    if arguments.kind_id not in _ARGUMENT_LIST:
        return {}
    raw = source.source[arguments.start_byte + 1 : arguments.end_byte - 1]
    if not raw or raw.isspace():
        return {}
    simple = _SIMPLE.fullmatch(raw) is not None
    extra = _simple_arguments(raw) if simple else _arguments(source, arguments)
    if expr.endswith("open"):
        mode = _open_mode(source, arguments.named_children, method="." in expr)
        if mode is not None:
            extra["mode"] = mode
    return extra


def _simple_arguments(raw: bytes) -> dict[str, JSON]:
    """Arguments made only of names, numbers, ``=`` and stars, split without touching the tree."""
    positional: list[JSON] = []
    keywords: dict[str, JSON] = {}
    for raw_token in raw.split(b","):
        token = raw_token.strip()
        if not token:
            continue
        if token.startswith(b"*"):
            break
        name, eq, value = token.partition(b"=")
        if eq:
            value = value.strip()
            if _DOTTED.fullmatch(value):
                keywords[name.strip().decode("ascii")] = value.decode("ascii")
        else:
            named = _DOTTED.fullmatch(token) is not None and token not in _CONSTANTS
            positional.append(token.decode("ascii") if named else None)
    return _packed(positional, keywords)


def _arguments(source: ParsedSource, arguments: Node) -> dict[str, JSON]:
    """The same, read from the tree (strings, calls or nesting among the arguments)."""
    positional: list[JSON] = []
    keywords: dict[str, JSON] = {}
    for arg in arguments.named_children:
        kid = arg.kind_id
        if kid in _NAMES:
            positional.append(callee_text(source, arg))
        elif kid in _KEYWORD:
            value = arg.child_by_field_name("value")
            name = arg.child_by_field_name("name")
            if name is not None and value is not None and value.kind_id in _NAMES:
                text = callee_text(source, value)
                if text is not None:
                    keywords[source.text(name)] = text
        elif kid in _STOP:
            break
        elif kid not in _COMMENT:
            positional.append(None)
    return _packed(positional, keywords)


def _packed(positional: list[JSON], keywords: dict[str, JSON]) -> dict[str, JSON]:
    while positional and positional[-1] is None:
        positional.pop()
    extra: dict[str, JSON] = {}
    if positional:
        extra["a"] = positional
    if keywords:
        extra["k"] = keywords
    return extra


def _literal(source: ParsedSource, node: Node) -> str | None:
    """The value of a plain string literal (no f-string), else None."""
    if node.type != "string" or any(c.type == "interpolation" for c in node.children):
        return None
    return source.text(node).lstrip("rRbBuU").strip("'\"")


def _open_mode(source: ParsedSource, children: list[Node], *, method: bool) -> str | None:
    """``open(path, "w")``'s mode: the ``mode=`` keyword, else the second argument (the first for
    ``Path.open("w")``)."""
    for arg in children:
        if arg.type == "keyword_argument":
            name = arg.child_by_field_name("name")
            value = arg.child_by_field_name("value")
            if name is not None and value is not None and source.text(name) == "mode":
                return _literal(source, value)
    positional = [c for c in children if c.type not in ("keyword_argument", "comment")]
    index = 0 if method else 1
    candidate = _literal(source, positional[index]) if len(positional) > index else None
    return candidate if candidate and set(candidate) <= _MODE_CHARS else None


def decorator_sites(sk: Skeleton) -> None:
    """Add each decorator application as a call site of the scope that executes the definition."""
    for index in range(1, len(sk.scopes)):
        parent = int(sk.scopes[index]["up"])
        for decorator in sk.decorators[index]:
            expr = expr_text(sk.src, decorator.named_child(0)) if decorator.named_child_count else None
            if expr is None:
                continue
            line = decorator.start_point[0] + 1
            site: list[JSON] = [expr, sk.offset(parent, line), {"d": 1, "a": [f"#{index}"]}]
            sk.scopes[parent].setdefault("calls", []).append(site)


def main_guards(source: ParsedSource) -> list[tuple[int, int]]:
    """Byte ranges of module-level ``if __name__ == "__main__":`` bodies."""
    ranges: list[tuple[int, int]] = []
    if b"__main__" not in source.source:
        return ranges
    for child in source.root.named_children:
        if child.type != "if_statement":
            continue
        condition = child.child_by_field_name("condition")
        consequence = child.child_by_field_name("consequence")
        if condition is None or consequence is None:
            continue
        text = "".join(source.text(condition).split()).replace("'", '"')
        if text in _MAIN:
            ranges.append((consequence.start_byte, consequence.end_byte))
    return ranges
