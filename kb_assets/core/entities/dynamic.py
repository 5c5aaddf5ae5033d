"""File-local facts of the ``entities`` extractor: models built at run time, which no class statement
shows, and classes that only a script run defines.

``{"dynamic": [{"line", "callee", "text"}...], "main_classes": [span ordinal...]}`` (keys left out
when empty; None when both are).

``create_model(...)`` (pydantic), ``make_dataclass(...)``, ``attr.make_class(...)`` and
``dataclass(SomeClass)`` called as a function (not as a decorator) anywhere in a file, with
their line, callee as written and source text. Resolution later keeps those whose callee is the
framework's (or a bare name that cannot be resolved, as when it is imported inside a function; not
``editor.create_model(...)`` on some object) and records each as a ``dynamic_model`` gap. A bytes
prefilter skips the tree for files that cannot contain one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON, SpanKind
from kb_assets.core.symbols.values import dotted_name

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

DYNAMIC_CALLEES = ("create_model", "make_dataclass", "make_class", "dataclass")
_TEXT_CHARS = 160


def collect_entity_facts(source: ParsedSource) -> JSON:
    """Run-time model construction sites and script-only classes of one blob (None: neither)."""
    dynamic = collect_dynamic_models(source)
    main = main_block_classes(source)
    facts: dict[str, JSON] = {}
    if dynamic:
        facts["dynamic"] = dynamic
    if main:
        facts["main_classes"] = main
    return facts or None


def main_block_classes(source: ParsedSource) -> list[int]:
    """Span ordinals of the classes defined under a module-level ``if __name__ == "__main__":``,
    which never exist when the module is imported."""
    if b"__main__" not in source.source:
        return []
    blocks = [
        (n.start_byte, n.end_byte)
        for n in source.root.named_children
        if n.type == "if_statement" and _is_main_test(source, n.child_by_field_name("condition"))
    ]
    return [
        i
        for i, (span, node) in enumerate(zip(source.spans, source.span_nodes, strict=True))
        if span.kind is SpanKind.CLASS and any(a <= node.start_byte < b for a, b in blocks)
    ]


def _is_main_test(source: ParsedSource, condition: Node | None) -> bool:
    text = source.text(condition).replace("'", '"').replace(" ", "") if condition is not None else ""
    return text in ('__name__=="__main__"', '"__main__"==__name__')


def collect_dynamic_models(source: ParsedSource) -> list[JSON]:
    """Every call that builds a model class at run time (see the module docstring)."""
    found: dict[int, JSON] = {}
    for needle in DYNAMIC_CALLEES:
        raw = needle.encode()
        start = source.source.find(raw)
        while start >= 0:
            call = _call_at(source, start, start + len(raw))
            if call is not None and call.start_byte not in found:
                found[call.start_byte] = {
                    "line": call.start_point[0] + 1,
                    "callee": dotted_name(source, call.child_by_field_name("function")),
                    "text": source.text(call).split("\n", 1)[0][:_TEXT_CHARS],
                }
            start = source.source.find(raw, start + len(raw))
    return [found[k] for k in sorted(found)]


def _call_at(source: ParsedSource, start: int, end: int) -> Node | None:
    """The call whose callee ends with the identifier at ``start:end``, if it is a dynamic model."""
    node = source.root.descendant_for_byte_range(start, end)
    if node is None or node.type != "identifier" or (node.start_byte, node.end_byte) != (start, end):
        return None
    callee = node
    if callee.parent is not None and callee.parent.type == "attribute":
        if callee.parent.child_by_field_name("attribute") != callee:
            return None
        callee = callee.parent
    call = callee.parent
    if call is None or call.type != "call" or call.child_by_field_name("function") != callee:
        return None
    if source.text(node) == "dataclass" and not _builds_from_class(call):
        return None
    return call


def _builds_from_class(call: Node) -> bool:
    """``dataclass(Cls)`` as a plain call: a positional argument, and not the decorator itself."""
    if call.parent is not None and call.parent.type == "decorator":
        return False
    arguments = call.child_by_field_name("arguments")
    args = arguments.named_children if arguments is not None else []
    return any(a.type not in ("keyword_argument", "comment") for a in args)
