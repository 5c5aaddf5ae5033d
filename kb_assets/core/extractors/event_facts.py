"""File-local facts for event handlers, cached per blob: what the ``symbols`` facts do not hold.

The shared ``symbols`` facts already carry every decorator of module-level functions and of
methods of classes that are not inside a function; this collector adds only what they lack, in
one pass over the statements that hold a candidate word (found by byte offset; expressions are
never walked, and a blob without any such word is skipped outright)::

    {"defs":   [D...],   # decorated definitions inside function bodies with a candidate decorator
     "calls":  [C...],   # candidate registration calls and assignments, anywhere
     "locals": {"create_app": {"app": "FastAPI", "settings": null}}}   # see below

    D = {"span", "scope", "decorators": [V...], "owner"?, "owner_span"?}
    C = {"form": "listen" | "add_event_handler" | "constructor" | "lifespan_context" | "validator_call",
         "callee", "args": [A...], "kwargs": {name: A}, "span", "scope", "line",
         "in_function"?, "bound"?, "decorator"?, "owner"?, "owner_span"?}

``scope`` is the qualified name of the def/class body holding the statement ("" at module level);
``owner`` is the class whose body directly holds a method (with its span ordinal). A ``C``'s
``span`` is the statement's own span when it has one (``app = FastAPI(...)``), else the innermost
enclosing scope span (a module-level call grounds on the module). ``bound`` is the variable a
constructor call is assigned to. ``validator_call`` is a validator applied by call in a class body
(``check = field_validator("a")(shared_check)``): ``decorator`` is the inner call's summary and
``owner``/``owner_span`` the class. ``V`` is a ``values.summarize`` summary; ``A`` is an argument
as written (``event_values``: a name, a string, a lambda, a list, or quoted text). ``locals`` maps
each function whose body holds a recorded definition or call to the names it binds: parameters
and plain assignments (``null``), the callee of a call assigned to the name (``app = FastAPI()``
→ ``"FastAPI"``), and imports (``{"from": "..m", "attr": "x"}``, ``{"import": "a.b"}``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from kb_assets.core.extractors.event_values import argument, last_name
from kb_assets.core.models import JSON
from kb_assets.core.symbols.collect import statements
from kb_assets.core.symbols.import_bindings import import_bindings
from kb_assets.core.symbols.values import MAX_ITEMS, dotted_name, summarize, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

MARKERS = (
    b"validator",
    b"on_event",
    b"listen",
    b"add_event_handler",
    b"lifespan",
    b"on_startup",
    b"on_shutdown",
)
"""Bytes one of which every file with a candidate contains (the cheap prefilter)."""

CANDIDATE = re.compile(rb"validator|on_event|listen|add_event_handler|lifespan|on_startup|on_shutdown")
"""Where a candidate can lie (a superset: statements without one are never looked at)."""

VALIDATOR_NAMES = frozenset({"field_validator", "model_validator", "validator", "root_validator"})
DECORATOR_NAMES = VALIDATOR_NAMES | {"on_event", "listens_for"}
CALL_FORMS = {"listen": "listen", "add_event_handler": "add_event_handler"}
CONSTRUCTOR_KEYWORDS = frozenset({"lifespan", "on_startup", "on_shutdown"})
LIFESPAN_ATTRIBUTE = "lifespan_context"
_IMPORTS = frozenset({"import_statement", "import_from_statement"})


def collect_events(source: ParsedSource) -> JSON:
    """The event-handler facts of one blob (None when it cannot hold a candidate)."""
    if not any(marker in source.source for marker in MARKERS):
        return None
    offsets = [m.start() for m in CANDIDATE.finditer(source.source)]
    walk = _Walk(source, offsets)
    walk.block(source.root, "", ())
    if not walk.defs and not walk.calls:
        return None
    wanted = {f for record in walk.defs + walk.calls for f in record.pop("_functions")}
    scopes = {name: names for name, names in walk.locals.items() if name in wanted}
    return {"defs": walk.defs, "calls": walk.calls, "locals": scopes}


class _Walk:
    """One pass over the statements of a file, tracking the enclosing def/class bodies."""

    def __init__(self, source: ParsedSource, offsets: list[int]) -> None:
        self.src, self.offsets = source, offsets
        self.ordinals = {(n.start_byte, n.end_byte): i for i, n in enumerate(source.span_nodes)}
        self.defs: list[JSON] = []
        self.calls: list[JSON] = []
        self.locals: dict[str, dict[str, JSON]] = {}

    def span(self, node: Node) -> int:
        """The ordinal of the span marked at ``node`` (else the innermost enclosing scope span)."""
        found = self.ordinals.get((node.start_byte, node.end_byte))
        return found if found is not None else self.src.innermost_span(node)

    def block(
        self, container: Node, scope: str, functions: tuple[str, ...], owner: int | None = None
    ) -> None:
        """The statements of a module, class or function body (``functions``: enclosing defs) that
        hold a candidate; in a function body, every assignment too (its locals)."""
        local = functions[-1] if functions and functions[-1] == scope else None
        for stmt, _ in statements(self.src, container, type_checking=False):
            if stmt.type in _IMPORTS or not self.holds_candidate(stmt):
                if local is not None:
                    self.local(stmt, local)
            elif stmt.type == "expression_statement":
                self.expression(stmt, scope, functions, owner)
            else:
                self.definition(stmt, scope, functions, owner)

    def holds_candidate(self, node: Node) -> bool:
        """Whether a candidate offset lies inside ``node``."""
        i = bisect_left(self.offsets, node.start_byte)
        return i < len(self.offsets) and self.offsets[i] < node.end_byte

    def local(self, stmt: Node, function: str) -> None:
        """Record the names an import or a plain assignment binds in a function body."""
        if stmt.type in _IMPORTS:
            for b in import_bindings(self.src, stmt, 0):
                if b["kind"] == "from":
                    self.locals[function][b["name"]] = {"from": b["module"], "attr": b["attr"]}
                elif b["kind"] == "import":
                    self.locals[function][b["name"]] = {"import": b["module"]}
            return
        expr = stmt.named_child(0) if stmt.named_child_count else None
        if expr is None or expr.type != "assignment":
            return
        left, right = expr.child_by_field_name("left"), unwrap(expr.child_by_field_name("right"))
        if left is not None and left.type == "identifier":
            call = right if right is not None and right.type == "call" else None
            callee = dotted_name(self.src, call.child_by_field_name("function")) if call is not None else None
            self.locals[function][self.src.text(left)] = callee

    def definition(self, stmt: Node, scope: str, functions: tuple[str, ...], owner: int | None) -> None:
        """A (decorated) def or class: record candidate decorators, then walk its body."""
        node = stmt.child_by_field_name("definition") if stmt.type == "decorated_definition" else stmt
        name = node.child_by_field_name("name") if node is not None else None
        body = node.child_by_field_name("body") if node is not None else None
        if node is None or name is None or body is None:
            return
        qualname = f"{scope}.{self.src.text(name)}" if scope else self.src.text(name)
        if stmt.type == "decorated_definition" and functions:
            self.decorated(stmt, scope, functions, owner)
        if node.type == "class_definition":
            self.block(body, qualname, functions, self.span(stmt))
            return
        self.locals[qualname] = self.parameters(node)
        self.block(body, qualname, (*functions, qualname))

    def decorated(self, stmt: Node, scope: str, functions: tuple[str, ...], owner: int | None) -> None:
        """Record a definition inside a function body when one of its decorators is a candidate."""
        decorators = [d.named_child(0) for d in stmt.named_children if d.type == "decorator"]
        if not any(last_name(self.src, d) in DECORATOR_NAMES for d in decorators):
            return
        record: dict[str, JSON] = {"span": self.span(stmt), "scope": scope, "_functions": functions}
        record["decorators"] = [summarize(self.src, d) for d in decorators]
        if owner is not None:
            record |= {"owner": scope, "owner_span": owner}
        self.defs.append(record)

    def parameters(self, function: Node) -> dict[str, JSON]:
        """The names a function's parameters bind (all unknown values)."""
        params = function.child_by_field_name("parameters")
        names: dict[str, JSON] = {}
        for param in params.named_children if params is not None else []:
            ident = param if param.type == "identifier" else param.child_by_field_name("name")
            if ident is None and param.named_child_count:
                ident = param.named_child(0)  # *args, **kwargs
            if ident is not None and ident.type == "identifier":
                names[self.src.text(ident)] = None
        return names

    def expression(self, stmt: Node, scope: str, functions: tuple[str, ...], owner: int | None) -> None:
        """A call statement or an assignment: candidate registrations and function locals."""
        expr = stmt.named_child(0) if stmt.named_child_count else None
        if expr is None:
            return
        if expr.type == "call":
            self.call(expr, stmt, scope, functions, None)
            return
        if expr.type != "assignment":
            return
        left, right = expr.child_by_field_name("left"), unwrap(expr.child_by_field_name("right"))
        bound = self.src.text(left) if left is not None and left.type == "identifier" else None
        if functions and functions[-1] == scope:
            self.local(stmt, scope)
        target = dotted_name(self.src, left)
        if target is not None and target.endswith(f".{LIFESPAN_ATTRIBUTE}"):
            record = {"form": "lifespan_context", "callee": target, "args": [argument(self.src, right)]}
            self.add(record | {"kwargs": {}}, stmt, scope, functions)
        elif right is not None and right.type == "call" and owner is not None:
            self.reused_validator(right, stmt, scope, functions, owner)
        if right is not None and right.type == "call":
            self.call(right, stmt, scope, functions, bound)

    def reused_validator(
        self, call: Node, stmt: Node, scope: str, functions: tuple[str, ...], owner: int
    ) -> None:
        """``check = field_validator("a")(shared_check)`` in a class body: a validator applied by call."""
        inner = unwrap(call.child_by_field_name("function"))
        arguments = call.child_by_field_name("arguments")
        if inner is None or inner.type != "call" or last_name(self.src, inner) not in VALIDATOR_NAMES:
            return
        args = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
        if len(args) != 1:
            return
        callee = dotted_name(self.src, unwrap(inner.child_by_field_name("function")))
        record: dict[str, JSON] = {
            "form": "validator_call",
            "callee": callee,
            "decorator": summarize(self.src, inner),
        }
        record |= {"args": [argument(self.src, args[0])], "kwargs": {}, "owner": scope, "owner_span": owner}
        self.add(record, stmt, scope, functions)

    def call(self, call: Node, stmt: Node, scope: str, functions: tuple[str, ...], bound: str | None) -> None:
        """Record a call when its name or keywords make it a candidate registration."""
        callee = dotted_name(self.src, unwrap(call.child_by_field_name("function")))
        arguments = call.child_by_field_name("arguments")
        if callee is None or arguments is None or arguments.type != "argument_list":
            return
        form = CALL_FORMS.get(callee.rsplit(".", 1)[-1])
        keywords = {
            self.src.text(key): a.child_by_field_name("value")
            for a in arguments.named_children
            if a.type == "keyword_argument" and (key := a.child_by_field_name("name")) is not None
        }
        if form is None and not CONSTRUCTOR_KEYWORDS & set(keywords):
            return
        positional = [a for a in arguments.named_children if a.type not in ("keyword_argument", "comment")]
        args = [argument(self.src, a) for a in positional[:MAX_ITEMS]]
        kwargs = {k: argument(self.src, v) for k, v in sorted(keywords.items())[:MAX_ITEMS]}
        record = {"form": form or "constructor", "callee": callee, "args": args, "kwargs": kwargs}
        if form is None and bound is not None:
            record["bound"] = bound
        self.add(record, stmt, scope, functions)

    def add(self, record: dict[str, JSON], stmt: Node, scope: str, functions: tuple[str, ...]) -> None:
        """Append one call record, placed at its statement."""
        record |= {"span": self.span(stmt), "scope": scope, "line": stmt.start_point[0] + 1}
        record |= {"in_function": True} if functions else {}
        record["_functions"] = functions
        self.calls.append(record)
