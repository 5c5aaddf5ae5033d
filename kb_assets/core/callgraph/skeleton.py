"""The scope skeleton of one file: module, class and function scopes, nested as Python nests them.

Built from the query's definition matches: each class/function gives a scope with its body's byte
range, tied to its span by the definition's first byte; ``Skeleton.at(byte)`` bisects to the
innermost *body* containing a position. Decorators, default values and base classes lie outside
the body, so they belong to the enclosing scope, exactly where Python evaluates them. Function
scopes also record their parameters (in order, ``*args``/``**kw`` prefixed, a bare ``*`` kept),
parameter and return annotations and the decorator word that changes how the first parameter binds.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.exprs import expr_text, type_text
from kb_assets.core.models import JSON, SpanKind

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

Match = dict[str, list["Node"]]

_SIMPLE_PARAMS = re.compile(rb"[\w\s,*]*")
_PARAM_NAMED = frozenset({"default_parameter", "typed_default_parameter"})
_SPLATS = {"list_splat_pattern": "*", "dictionary_splat_pattern": "**"}
_FLAGS = {"classmethod": "cm", "staticmethod": "sm", "property": "prop", "cached_property": "prop"}


class Skeleton:
    """Scopes of one file (index 0 is the module) plus the bisection index over their bodies."""

    def __init__(
        self, source: ParsedSource, definitions: Sequence[Match], decorators: Sequence[Match]
    ) -> None:
        self.src = source
        self.scopes: list[dict[str, JSON]] = [{"s": 0, "k": "m"}]
        self.lines: list[int] = [1]
        self.starts: list[int] = [0]
        self.ends: list[int] = [len(source.source) + 1]
        self.parents: list[int] = [-1]
        self.decorators: list[list[Node]] = [[]]
        self.decorated: dict[int, list[Node]] = {}
        for match in decorators:
            self.decorated.setdefault(match["decorated"][0].start_byte, []).append(match["decorator"][0])
        ordinals = _ordinals(source)
        for match in sorted(definitions, key=lambda m: m["body"][0].start_byte):
            node = match["function"][0] if "function" in match else match["class"][0]
            ordinal = ordinals.get(node.start_byte)
            if ordinal is not None:
                self._add(ordinal, node, match)

    def at(self, byte: int) -> int:
        """Index of the innermost scope whose body contains ``byte`` (the module at worst)."""
        i = bisect_right(self.starts, byte) - 1
        while i > 0 and self.ends[i] <= byte:
            i = self.parents[i]
        return max(i, 0)

    def offset(self, scope: int, line: int) -> int:
        """A line as an offset from the scope span's first line."""
        return line - self.lines[scope]

    def _add(self, ordinal: int, node: Node, match: Match) -> None:
        body = match["body"][0]
        parent = self.at(node.start_byte)
        index = len(self.scopes)
        record: dict[str, JSON] = {"s": ordinal, "k": "f" if "function" in match else "c", "up": parent}
        self.scopes[parent].setdefault("defs", {})[self.src.text(match["name"][0])] = index
        decorators = self.decorated.get(node.start_byte, [])
        if "function" in match:
            record |= self._function(node, match["params"][0], decorators)
        else:
            record["bases"] = _bases(self.src, node)
        self.scopes.append(record)
        self.lines.append(self.src.spans[ordinal].start_line)
        self.starts.append(body.start_byte)
        self.ends.append(body.end_byte)
        self.parents.append(parent)
        self.decorators.append(decorators)

    def _function(self, node: Node, plist: Node, decorators: list[Node]) -> dict[str, JSON]:
        """Parameters, annotations and binding-relevant decorator word of a function."""
        raw = self.src.source[plist.start_byte + 1 : plist.end_byte - 1]
        ann: dict[str, str] = {}
        if _SIMPLE_PARAMS.fullmatch(raw):
            params = [p.decode("utf-8").replace(" ", "") for p in (t.strip() for t in raw.split(b",")) if p]
        else:
            params = []
            for p in plist.named_children:
                name, annotation = _parameter(self.src, p)
                if name is None:
                    continue
                params.append(name)
                typed = type_text(self.src, annotation) if annotation is not None else None
                if typed is not None:
                    ann[name.lstrip("*")] = typed
        out: dict[str, JSON] = {"params": params}
        if ann:
            out["ann"] = ann
        rt = type_text(self.src, node.child_by_field_name("return_type"))
        if rt is not None:
            out["rt"] = rt
        for d in decorators:
            word = self.src.text(d).lstrip("@").split("(", 1)[0].strip().rsplit(".", 1)[-1]
            flag = _FLAGS.get(word, "prop" if word in ("setter", "getter", "deleter") else None)
            if flag is not None:
                out["flag"] = flag
        return out


def _ordinals(source: ParsedSource) -> dict[int, int]:
    """First byte of each class/function *definition* node → its span ordinal."""
    found: dict[int, int] = {}
    for ordinal, span in enumerate(source.spans):
        if span.kind is SpanKind.CLASS or span.kind is SpanKind.FUNCTION:
            node: Node | None = source.span_nodes[ordinal]
            if node is not None and node.type == "decorated_definition":
                node = node.child_by_field_name("definition")
            if node is not None:
                found[node.start_byte] = ordinal
    return found


def _parameter(source: ParsedSource, p: Node) -> tuple[str | None, Node | None]:  # noqa: PLR0911 - one per node type
    """(name with ``*``/``**`` prefix, annotation node) of one parameter node."""
    if p.type == "identifier":
        return source.text(p), None
    if p.type == "keyword_separator":
        return "*", None
    if p.type in _SPLATS:
        inner = p.named_child(0) if p.named_child_count else None
        return (_SPLATS[p.type] + source.text(inner)) if inner is not None else _SPLATS[p.type], None
    if p.type in _PARAM_NAMED:
        name = p.child_by_field_name("name")
        return (source.text(name) if name is not None else None), p.child_by_field_name("type")
    if p.type == "typed_parameter":
        inner = p.named_child(0) if p.named_child_count else None
        if inner is None:
            return None, None
        prefix = _SPLATS.get(inner.type, "")
        ident = inner.named_child(0) if prefix and inner.named_child_count else inner
        return (prefix + source.text(ident)) if ident is not None else None, p.child_by_field_name("type")
    return None, None


def _bases(source: ParsedSource, definition: Node) -> list[JSON]:
    """Positional superclasses as expression strings (``Generic[T]`` as ``Generic``; null: unknown)."""
    arguments = definition.child_by_field_name("superclasses")
    out: list[JSON] = []
    for arg in arguments.named_children if arguments is not None else []:
        if arg.type in ("keyword_argument", "comment"):
            continue
        node = arg.child_by_field_name("value") if arg.type == "subscript" else arg
        out.append(None if arg.type in ("list_splat", "dictionary_splat") else expr_text(source, node))
    return out
