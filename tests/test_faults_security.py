"""Security: SQL is never built from strings, hostile input through MCP and the CLI changes
nothing, the documented read-only role serves but cannot write, API keys never reach output,
logs or the store, and the servers bind to loopback by default.

Covered elsewhere (cited in the README's Reliability table): the MCP server's own connections are
read-only (``tests/test_mcp_serving.py::test_the_servers_connections_cannot_write``,
``tests/test_store_embedded.py::test_read_only_store_rejects_writes``); ``kb introspect`` runs in
a network-blocked sandbox (``tests/test_api_oracle.py::test_sandbox_blocks_network`` and
``test_sandbox_writes_nothing_outside_its_temp_dir``); ``kb ui`` refuses connections on a
non-loopback address (``tests/test_ui.py``).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from kb_assets.cli.main import build_parser
from kb_assets.cli.ui import ui_command
from kb_mcp.answers.resources import overview
from kb_mcp.context import open_context
from kb_resources.settings import Settings
from kb_resources.store.target import parse_store_url
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv

if TYPE_CHECKING:
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kb_assets", "kb_resources", "kb_mcp", "kb_gates", "migrations")
_SQL_CALLS = {"text", "execute", "exec_driver_sql", "executemany", "scalar", "scalars"}

HOSTILE = [
    "'; DROP TABLE artifact; --",
    "x' OR '1'='1",
    '"; DELETE FROM snapshot_entry; --',
    "%s %(x)s {0} :sha $1 ?",
    "\\'; SELECT pg_sleep(5); --",
    "import:*",
    "%",
    "_",
    "a\x00b",
    "\u202e\U0001f600\x1b[2J",
    "x" * 5000,
]


LEAKS = ("Traceback", "psycopg", "sqlalchemy", "syntax error at", "LINE 1:", "DETAIL:", "sqlalche.me")
"""Signs of a database error reaching the model (hostile input itself may be echoed back)."""


def _sql_built_from_strings(path: Path) -> list[str]:
    """Calls like ``sa.text(f"...")``/``execute("..." % x)``/``execute("...".format(x))``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _SQL_CALLS:
            continue
        arg = node.args[0]
        formatted = isinstance(arg, ast.JoinedStr) or (
            isinstance(arg, ast.BinOp) and isinstance(arg.op, (ast.Mod, ast.Add))
        )
        formatted = formatted or (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute)
            and arg.func.attr == "format"
            and isinstance(arg.func.value, ast.Constant)
        )
        if formatted:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_sql_is_never_built_by_string_formatting() -> None:
    """Every statement is a constant with bound parameters, a SQLAlchemy construct, or psycopg's
    ``sql.SQL(...).format(sql.Identifier(...))`` composition; none is an f-string, ``%`` or
    ``str.format`` result (the scan finds them: it is checked against a planted example)."""
    planted = ROOT / "tests" / "__planted_sql.py"
    try:
        planted.write_text('import sqlalchemy as sa\nq = sa.text(f"SELECT {x}")\n')
        assert _sql_built_from_strings(planted) == ["tests/__planted_sql.py:2"]
    finally:
        planted.unlink()
    offenders = [
        hit for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
        for hit in _sql_built_from_strings(path)
    ]  # fmt: skip
    assert offenders == []


def _table_counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(parse_store_url(url))
    try:
        with engine.connect() as conn:
            tables = sa.inspect(conn).get_table_names()
            return {t: int(conn.scalar(sa.text(f'SELECT count(*) FROM "{t}"')) or 0) for t in tables}
    finally:
        engine.dispose()


def _calls(value: str, sha: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "get_knowledge", {"target": value}
    yield "get_knowledge", {"target": "shop.orders", "sha": value}
    yield "find_provenance", {"file": value, "line": 1}
    yield "search_knowledge", {"query": value}
    yield "list_knowledge", {"kind": value, "prefix": value}
    yield "list_knowledge", {"cursor": value}
    yield "diff_knowledge", {"base": value, "head": sha}


def test_hostile_strings_through_mcp_and_the_cli_change_nothing(shop: IndexedShop) -> None:
    """SQL-looking, format-string, NUL, escape and oversized strings as every MCP tool argument and
    as CLI targets: answers or one clear error each, never a database error, and every table keeps
    exactly its rows."""
    before = _table_counts(shop.env.db_url)
    head = shop.shas[-1]
    for value, (tool, args) in itertools.product(HOSTILE, list(_calls("{}", head))):
        arguments = {k: (value if v == "{}" else v) for k, v in args.items()}
        result = shop.call(tool, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        for leak in LEAKS:
            assert leak not in text, (tool, arguments, text[:300])
    for value in (v for v in HOSTILE if "\x00" not in v):  # no argv can hold a NUL byte
        for args in (
            ("export", shop.repo, "--kind", value),
            ("show", shop.repo, "--kind", value),
            ("export", shop.repo, "--sha", value),
            ("spans", shop.repo, "--sha", value),
            ("diff", shop.repo, value, head),
        ):
            res = shop.env.kb(*args)
            assert res.code in (0, 2), (args, res.stderr)
            assert "internal error" not in res.stderr
            assert len(res.stderr.strip().splitlines()) <= 1, res.stderr
    assert _table_counts(shop.env.db_url) == before


READ_ONLY_ROLE = """
CREATE ROLE {role} LOGIN;
GRANT CONNECT ON DATABASE {database} TO {role};
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {role};
ALTER ROLE {role} SET default_transaction_read_only = on;
"""
"""The README's recipe for an external server (``{role}``/``{database}`` filled in)."""


def test_the_documented_read_only_role_serves_mcp_but_cannot_write(shop: IndexedShop) -> None:
    """The MCP server runs as the README's read-only role; a write fails for lack of privilege
    even after the session turns read-only transactions off (which the role's default alone
    would not prevent)."""
    admin = sa.create_engine(parse_store_url(shop.env.db_url), isolation_level="AUTOCOMMIT")
    database = str(parse_store_url(shop.env.db_url).database)
    role = f"kb_reader_{database}"
    try:
        with admin.connect() as conn:
            for statement in READ_ONLY_ROLE.format(role=role, database=database).strip().splitlines():
                conn.execute(sa.text(statement))
        reader_url = parse_store_url(shop.env.db_url).set(username=role)
        url = reader_url.render_as_string(hide_password=False)
        settings = Settings(kb_home=shop.env.home, dagster_home=shop.env.home / "dagster", db_url=url)
        context = open_context(shop.repo, settings)
        try:
            assert overview(context)["newest_indexed"] == shop.shas[-1]
            with context.store.engine.connect() as conn:
                conn.execute(sa.text("SET transaction_read_only = off"))
                with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
                    conn.execute(sa.text("DELETE FROM snapshot_part"))
        finally:
            context.close()
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP OWNED BY "{role}"'))
            conn.execute(sa.text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


FAKE_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-0123456789-kbsecret",
    "OPENAI_API_KEY": "sk-fake-openai-9876543210-kbsecret",
    "VOYAGE_API_KEY": "pa-fake-voyage-5555-kbsecret",
    "KB_LLM_API_KEY": "fake-llm-key-7777-kbsecret",
    "KB_EMBED_API_KEY": "fake-embed-key-8888-kbsecret",
    "HF_TOKEN": "hf_fakefakefake_kbsecret",
}


def _dump_database(url: str) -> str:
    """Every row of every table, in every schema of the database, as JSON text."""
    engine = sa.create_engine(parse_store_url(url))
    listing = sa.text(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
    )
    parts = []
    try:
        with engine.connect() as conn:
            for schema, table in conn.execute(listing).all():
                quoted = f'"{schema}"."{table}"'
                parts += [
                    str(row[0]) for row in conn.execute(sa.text(f"SELECT row_to_json(t) FROM {quoted} t"))
                ]
    finally:
        engine.dispose()
    return "\n".join(parts)


@pytest.mark.slow
def test_api_keys_never_reach_output_logs_or_the_store(kb_env: KbEnv, tmp_path: Path) -> None:
    """With API keys in the environment, a real ``kb index`` (oracles included), then export, show,
    status and a failing command; no key appears on stdout or stderr, in any file under KB_HOME (Dagster's
    storage and logs included) or in any row of the database (Dagster's tables included)."""
    repo = init_repo(tmp_path / "repo")
    files = {"pkg/__init__.py": "", "pkg/a.py": "import os\nfrom pkg import b\n", "pkg/b.py": ""}
    commit_tree(repo, files, "one")
    kb_env.extra.update(FAKE_KEYS)
    indexed = kb_env.kb_process("index", repo, "--verify")  # a real process: every byte it writes
    assert indexed.code == 0, indexed.stderr
    outputs = [indexed.stdout, indexed.stderr]
    commands = [("export", repo), ("show", repo), ("status", repo, "--json"), ("index", repo, "--sha", "no")]
    for args in commands:
        res = kb_env.kb(*args)
        outputs += [res.stdout, res.stderr]
    stored = [p.read_bytes().decode("utf-8", "replace") for p in kb_env.home.rglob("*") if p.is_file()]
    haystack = "\n".join([*outputs, *stored, _dump_database(kb_env.db_url)])
    assert "kbsecret" not in haystack
    assert "import:pkg.a->pkg.b" in haystack  # the haystack really holds what was indexed


def test_servers_bind_to_loopback_by_default() -> None:
    """``kb ui`` passes 127.0.0.1 to ``dagster dev`` unless ``--host`` says otherwise, and
    ``kb serve --http`` listens on loopback only (end to end: ``tests/test_ui.py``)."""
    args = build_parser().parse_args(["ui", "."])
    command = ui_command(args.host, args.port)
    assert command[command.index("-h") + 1] == "127.0.0.1"
    custom = build_parser().parse_args(["ui", ".", "--host", "0.0.0.0"])
    assert custom.host == "0.0.0.0"
    from kb_mcp import cli as mcp_cli

    assert mcp_cli.LOOPBACK == "127.0.0.1"
