"""Literals in the fingerprint stream: the *value* of a string or number, however it is spelled.

A formatter may rewrite ``'a'`` as ``"a"``, ``U'x'`` as ``'x'``, ``0XFF`` as ``0xFF``, ``1E5`` as
``1e5``, or join ``"a" "b"`` into ``"ab"``; the value stays the same, so the token is built from
the value. Tokens start with a byte no identifier can start with (``"`` str, ``'`` bytes, ``#``
number, ``%`` format spec), and string tokens are length-prefixed, so a value that contains the
stream's separator cannot make two different streams join to the same bytes. Escapes are decoded
(``"\\x41"`` is ``"A"``; black upper-cases ``\\N{...}`` names), unknown ones (``"\\d"``) stay as written.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from tree_sitter import Node

from kb_assets.core import treesitter as ts

if TYPE_CHECKING:
    from kb_assets.core.fingerprint import Walker

CLOSE = b")"
STRING, CONCAT = ts.kind_ids("string"), ts.kind_ids("concatenated_string")
_CONTENT, _INTERPOLATION = ts.kind_ids("string_content"), ts.kind_ids("interpolation")
_FORMAT_EXPRESSION, _EQUALS = ts.kind_ids("format_expression"), ts.kind_ids("=", named=False)
_TRIPLE = (b"'''", b'"""')
_QUOTES = (b"'", b'"', b"")


def string_token(body: bytes, prefix: bytes, *, formatted: bool = False) -> bytes:
    """Token for a string literal's value, from the bytes between its quotes and its prefix.

    ``formatted`` marks an f-string's literal text, where ``{{``/``}}`` stand for braces.
    """
    if b"\r" in body:  # a CRLF checkout of a triple-quoted string still means "\n"
        body = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if formatted:
        body = body.replace(b"{{", b"{").replace(b"}}", b"}")
    prefix = prefix.lower()
    is_bytes = b"b" in prefix
    if b"\\" in body and b"r" not in prefix:
        body = unescape_bytes(body) if is_bytes else unescape_str(body)
    return (b"'" if is_bytes else b'"') + b"%d:" % len(body) + body


def number_token(text: bytes, *, is_float: bool) -> bytes:
    """Token for a numeric literal's value: ints by value, floats and complexes by ``repr``."""
    if not is_float and text.isdigit() and (len(text) == 1 or text[:1] != b"0"):
        return b"#i" + text
    spelled = text.decode("ascii", "replace").replace("_", "").lower()
    try:
        if spelled.endswith("j"):
            return b"#c" + repr(complex(spelled)).encode("ascii")
        if is_float:
            return b"#f" + repr(float(spelled)).encode("ascii")
        return b"#i" + str(int(spelled.rstrip("l"), 0)).encode("ascii")
    except ValueError:  # 4,300+ digit ints, Python 2 octals: keep the (lower-cased) spelling
        return b"#?" + spelled.encode("ascii", "replace")


def on_number(w: Walker, node: Node) -> bool:
    """Integer or float node."""
    w.tokens.append(number_token(w.src[node.start_byte : node.end_byte], is_float=node.type == "float"))
    return False


def on_string(w: Walker, node: Node) -> bool:
    """A string without interpolations is one value token; anything else goes the long way.

    The value is cut from the node's own text, not from its string_start/string_end children:
    after a raw backslash tree-sitter's string_end can swallow literal text (``r'\\''``).
    """
    if node.kind_id in STRING:
        text = w.src[node.start_byte : node.end_byte]
        start = 0
        while text[start : start + 1] not in _QUOTES:
            start += 1
        prefix = text[:start]
        quote = 3 if text[start : start + 3] in _TRIPLE else 1
        body = text[start + quote : len(text) - quote]
        if not prefix and b"\\" not in body and b"\r" not in body:
            w.tokens.append(b'"%d:' % len(body) + body)
            return False
        lowered = prefix.lower()
        if (b"f" not in lowered and b"t" not in lowered) or not _has_interpolation(node):
            w.tokens.append(string_token(body, prefix, formatted=b"f" in lowered or b"t" in lowered))
            return False
    return _on_string_parts(w, node)


def _has_interpolation(node: Node) -> bool:
    return any(c.kind_id in _INTERPOLATION for c in node.children)


def _on_string_parts(w: Walker, node: Node) -> bool:
    """Implicit concatenation and f-strings: adjacent literal text is joined into one value."""
    parts = [node] if node.kind_id in STRING else [c for c in node.children if c.kind_id in STRING]
    formatted = any(c.kind_id in _INTERPOLATION for p in parts for c in p.children)
    pending: list[bytes] = []
    if formatted:
        w.tokens.append(b"(string")
    for part in parts:
        children = part.children
        head = w.src[children[0].start_byte : children[0].end_byte]
        quote = 3 if head.endswith(_TRIPLE) else 1
        prefix, body_end = head[:-quote], part.end_byte - quote
        if not any(c.kind_id in _INTERPOLATION for c in children):
            body = w.src[children[0].end_byte : body_end]
            pending.append(string_token(body, prefix, formatted=b"f" in prefix.lower()))
            continue
        for child in children[1:]:
            if child.kind_id in _CONTENT or child is children[-1]:
                body = w.src[child.start_byte : min(child.end_byte, body_end)]
                if body:
                    pending.append(string_token(body, prefix, formatted=True))
            elif child.kind_id in _INTERPOLATION:
                _flush(w.tokens, pending, drop_empty=True)
                w.subwalk(child)
    _flush(w.tokens, pending, drop_empty=formatted)
    if formatted:
        w.tokens.append(CLOSE)
    return False


def _flush(tokens: list[bytes], pending: list[bytes], *, drop_empty: bool) -> None:
    if pending:
        values = [t[t.index(b":") + 1 :] for t in pending]
        body = b"".join(values)
        if body or not drop_empty:
            tokens.append(pending[0][:1] + b"%d:" % len(body) + body)
        pending.clear()


def on_interpolation(w: Walker, node: Node) -> bool:
    """``f"{x=}"`` prints the expression too, so its ``=`` is kept."""
    debug = any(c.kind_id in _EQUALS for c in node.children)
    return w.descend(node, w.close, b"`=" if debug else None)


def on_format_specifier(w: Walker, node: Node) -> bool:
    """Keep the literal text of a format spec (not a node of its own), nested fields as ``{}``."""
    pieces, pos = [], node.start_byte
    for child in node.children:
        if child.kind_id in _FORMAT_EXPRESSION:
            pieces += [w.src[pos : child.start_byte], b"{}"]
            pos = child.end_byte
    pieces.append(w.src[pos : node.end_byte])
    spec = b"".join(pieces)
    return w.descend(node, w.close, b"%%%d:" % len(spec) + spec)


def is_plain_string(node: Node, source: bytes) -> bool:
    """A string or implicit concatenation with no f/b/t prefix (what Python takes as a docstring)."""
    parts = [node] if node.kind_id in STRING else [c for c in node.children if c.kind_id in STRING]
    for part in parts:
        head = part.child(0)
        prefix = source[head.start_byte : head.end_byte].rstrip(b"'\"").lower()
        if b"f" in prefix or b"b" in prefix or b"t" in prefix:
            return False
    return bool(parts) and (node.kind_id in STRING or node.kind_id in CONCAT)


# -- escapes: decoded by hand, since unicode_escape warns (or raises under -W error) on "\d" --
_SIMPLE = {"\n": "", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f"}
_SIMPLE |= {"n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_STR_ESCAPE = re.compile(
    r"\\(\n|[\\'\"abfnrtv]|[0-7]{1,3}|x[0-9a-fA-F]{2}|N\{[^}\n]*\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"
)
_BYTES_ESCAPE = re.compile(rb"\\(\n|[\\'\"abfnrtv]|[0-7]{1,3}|x[0-9a-fA-F]{2})")


def unescape_str(body: bytes) -> bytes:
    """UTF-8 of the value of a ``str`` literal's body (escapes decoded, lone surrogates kept)."""
    text = _STR_ESCAPE.sub(_str_escape, body.decode("utf-8", "surrogateescape"))
    return text.encode("utf-8", "surrogatepass")


def unescape_bytes(body: bytes) -> bytes:
    """The value of a ``bytes`` literal's body (``\\N``, ``\\u`` are not escapes there)."""
    return _BYTES_ESCAPE.sub(_bytes_escape, body)


def _str_escape(m: re.Match[str]) -> str:
    code = m.group(1)
    head = code[0]
    if len(code) == 1 and head in _SIMPLE:
        return _SIMPLE[head]
    if head in "xuU":
        value = int(code[1:], 16)
        return chr(value) if value <= 0x10FFFF else m.group(0)
    if head == "N":
        try:
            return unicodedata.lookup(code[2:-1])
        except KeyError:
            return m.group(0)
    return chr(int(code, 8))


def _bytes_escape(m: re.Match[bytes]) -> bytes:
    code = m.group(1)
    if len(code) == 1 and not code.isdigit():
        return _SIMPLE[code.decode("ascii")].encode("latin-1")
    value = int(code[1:], 16) if code[:1] == b"x" else int(code, 8)
    return bytes((value & 0xFF,))
