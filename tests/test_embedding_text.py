"""The text a unit is embedded as, and the RAG baseline's chunks: pure, deterministic, location-free."""

from __future__ import annotations

import itertools

from kb_assets.core.chunks import MAX_LINES, chunk_id, chunk_lines, chunk_source
from kb_assets.core.embedding_text import (
    MAX_GROUNDING,
    MAX_LIST_ITEMS,
    TEXT_VERSION,
    GroundingName,
    render_value,
    unit_text,
    vector_model_id,
    words,
)

ROUTE = {
    "app": "shop.main.app",
    "handler": "shop.routers.users.create_user",
    "method": "POST",
    "name": "create_user",
    "path": "/api/v1/users/",
    "response_model": "shop.schemas.User",
    "router": "shop.routers.users.router",
    "status_code": 201,
    "tags": ["users"],
}
GROUNDING = [
    GroundingName("shop/schemas.py", "shop.schemas.User", "response_model"),
    GroundingName("shop/routers/users.py", "shop.routers.users.create_user", "handler"),
]


def test_unit_text_names_kind_key_payload_and_grounding_in_plain_words() -> None:
    """Identifiers are followed by their plain words, telling fields come first, grounding last."""
    text = unit_text("api_route", "api:POST /api/v1/users/", ROUTE, GROUNDING)
    lines = text.splitlines()
    assert lines[0] == "api route api:POST /api/v1/users/"
    assert lines[1:4] == [
        "method: POST",
        "path: /api/v1/users/",
        "handler: shop.routers.users.create_user (create user)",
    ]
    assert "response model: shop.schemas.User (user)" in lines
    assert lines[-1] == (
        "grounded on shop/routers/users.py: shop.routers.users.create_user (handler); "
        "shop/schemas.py: shop.schemas.User (response_model)"
    )


def test_unit_text_is_a_function_of_identity_only() -> None:
    """Grounding order, duplicate edges and location fields (``lines``) change nothing."""
    first = unit_text("api_route", "api:POST /api/v1/users/", ROUTE, GROUNDING)
    shuffled = unit_text(
        "api_route",
        "api:POST /api/v1/users/",
        {**ROUTE, "lines": [3, 4]},
        [*reversed(GROUNDING), GROUNDING[0]],
    )
    assert first == shuffled
    other = unit_text("api_route", "api:POST /api/v1/users/", {**ROUTE, "status_code": 200}, GROUNDING)
    assert other != first


def test_long_values_are_cut_with_counts() -> None:
    """Long lists say how many were left out; grounding beyond MAX_GROUNDING is counted too."""
    many = [f"pkg.mod{i}" for i in range(MAX_LIST_ITEMS + 3)]
    assert render_value(many).endswith(", +3 more")
    edges = [GroundingName(f"f{i:02}.py", f"m{i}", "import") for i in range(MAX_GROUNDING + 2)]
    assert unit_text("import_edge", "import:a->b", {"importer": "a"}, edges).endswith("; +2 more")
    assert words("shop.schemas.UserCreate") == "user create"
    assert words("HTTPError") == "http error"


def test_stored_model_ids_name_the_text_rule() -> None:
    """A vector is stored under model and text rule, so a new rendering is a new id."""
    assert vector_model_id("m") == f"m#text-v{TEXT_VERSION}"


def test_chunks_are_top_level_definitions_and_statement_runs() -> None:
    """Each definition (decorators included) is a chunk; module statements between them are grouped."""
    source = b"import os\nX = 1\n\n\n@decorate\ndef f():\n    return 1\n\n\nclass C:\n    y = 2\n\nZ = 3\n"
    assert chunk_lines(source) == [(1, 2), (5, 7), (10, 11), (13, 13)]
    chunks = chunk_source(source)
    assert chunks[1].content == "@decorate\ndef f():\n    return 1"
    assert chunk_lines(source) == chunk_lines(source)  # deterministic


def test_long_definitions_are_cut_at_statement_boundaries() -> None:
    """A function longer than MAX_LINES is cut where a statement of its body starts, never inside one."""
    body = "".join(f"    x{i} = (\n        {i}\n    )\n" for i in range(40))  # 3-line statements
    source = f"def long():\n{body}".encode()
    pieces = chunk_lines(source)
    assert len(pieces) > 1
    assert pieces[0][0] == 1
    assert pieces[-1][1] == 121
    for (_, end), (start, _) in itertools.pairwise(pieces):
        assert start == end + 1
        assert (start - 2) % 3 == 0  # a body statement starts there
    assert all(e - s + 1 <= MAX_LINES for s, e in pieces)


def test_binary_and_undecodable_blobs_give_no_chunks() -> None:
    """Only UTF-8 text is chunked; ids name chunker version, blob, lines and model."""
    assert chunk_lines(b"\x00\x01binary") == []
    assert chunk_lines(b"caf\xe9 = 1\n") == []
    assert chunk_lines(b"") == []
    a = chunk_id("b" * 40, 1, 2, "m1")
    assert a == chunk_id("b" * 40, 1, 2, "m1")
    assert len({a, chunk_id("b" * 40, 1, 3, "m1"), chunk_id("b" * 40, 1, 2, "m2")}) == 3
