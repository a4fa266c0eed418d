"""What a restore checks in a staged copy of a backup before the database is touched.

- **Schema**: every object of the staged copy against those the migrations create at the backup's
  revision, in an empty staging database migrated with Alembic. SQLite: ``sqlite_master`` (tables,
  indexes, views, triggers, virtual tables — each with the SQL that made it, so columns and
  constraints are compared too) and ``PRAGMA table_xinfo``/``index_xinfo``/``foreign_key_list`` (a table's
  constraints and foreign keys in any order: Alembic's batch operations declare them in no fixed one).
  PostgreSQL: ``pg_catalog`` (relations of every kind, columns, indexes, constraints, triggers,
  rules, policies, functions, types, schemas, extensions, event triggers). Anything missing, extra
  or different is a refusal that names it.
- **Rows**: API keys stored as the service stores them (a SHA-256 hex digest, a ``ca_`` prefix,
  known scopes; ``app.kb.keys``), audit events readable (a known action, a time, a JSON detail;
  ``app.kb.audit``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from app.core.vocab import AUDIT_ACTIONS, SCOPES
from app.kb.backup.common import BackupError
from app.kb.keys import KEY_PREFIX

#: one object of a schema, as a refusal names it ("table api_keys", "trigger plant on recommendations"),
#: and what must be equal about it
Schema = dict[str, str]

#: tables SQLite keeps for itself, which ``ANALYZE`` (or ``PRAGMA optimize``) may add at any time
SQLITE_STATISTICS = ("sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SPACES = re.compile(r"\s+")


def _normalised(sql: str | None) -> str:
    """The SQL that made an object, spaces collapsed; for a table, its columns and constraints sorted
    (Alembic's batch operations on SQLite write a table's constraints in no fixed order)."""
    said = _SPACES.sub(" ", sql or "").strip()
    if not said.upper().startswith("CREATE TABLE") or "(" not in said or not said.endswith(")"):
        return said
    head, body = said[: said.index("(")], said[said.index("(") + 1 : -1]
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(body):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`[":
            quote = "]" if ch == "[" else ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return f"{head.strip()} ({', '.join(sorted(parts))})"


def _foreign_keys(rows: Iterable[Sequence[Any]]) -> str:
    """A table's foreign keys as ``PRAGMA foreign_key_list`` reports them, sorted: the numbers it gives them
    follow the order the table's SQL declares them in, which Alembic's batch operations do not fix — the same
    migration declares a table's two foreign keys in either order from one run to the next."""
    keys: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:  # (id, seq, table, from, to, on_update, on_delete, match)
        keys.setdefault(row[0], []).append(tuple(row))
    said = [
        (parts[0][2], *parts[0][5:], tuple((seq, source, target) for _, seq, _, source, target, *_ in sorted(parts)))
        for parts in keys.values()
    ]
    return repr(sorted(said, key=repr))


def sqlite_schema(conn: sqlite3.Connection) -> Schema:
    """Every object of an SQLite database with the SQL that made it, and each table's and index's
    columns as SQLite's PRAGMAs report them."""
    found: Schema = {}
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    for kind, name, table, sql in rows:
        if name in SQLITE_STATISTICS:
            continue
        where = "" if kind == "table" or name == table else f" on {table}"
        key = f"{kind} {name}{where}"
        found[key] = _normalised(sql)
        quoted = '"' + str(name).replace('"', '""') + '"'
        if kind == "table":
            found[f"columns of {key}"] = repr(conn.execute(f"PRAGMA table_xinfo({quoted})").fetchall())
            found[f"foreign keys of {key}"] = _foreign_keys(conn.execute(f"PRAGMA foreign_key_list({quoted})"))
        elif kind == "index":
            found[f"columns of {key}"] = repr(conn.execute(f"PRAGMA index_xinfo({quoted})").fetchall())
    return found


#: the schemas of the system itself, whose objects are not the backup's
_PG_USER = (
    "NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
    "AND {col} NOT LIKE 'pg_temp%' AND {col} NOT LIKE 'pg_toast_temp%'"
)


def _pg_name(schema: str, name: str) -> str:
    """An object's name as a refusal says it: bare in ``public``, qualified elsewhere."""
    return f"CASE WHEN {schema} = 'public' THEN {name} ELSE {schema} || '.' || {name} END"


_RELKINDS = (
    "CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view' "
    "WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' "
    "WHEN 'c' THEN 'composite type' ELSE 'relation ' || c.relkind::text END"
)
_REL = _pg_name("n.nspname", "c.relname")
_FROM_REL = "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
_USER_REL = f"n.nspname {_PG_USER.format(col='n.nspname')}"
#: queries of (object, definition) rows: every object of a PostgreSQL database outside the system's own
#: schemas, named as a refusal says it ("table t", "trigger plant on recommendations")
PG_CATALOG: tuple[str, ...] = (
    f"SELECT 'schema ' || nspname, '' FROM pg_namespace WHERE nspname {_PG_USER.format(col='nspname')}",
    f"SELECT {_RELKINDS} || ' ' || {_REL}, c.relpersistence::text {_FROM_REL} "
    f"WHERE {_USER_REL} AND c.relkind NOT IN ('i', 'I', 't')",
    f"SELECT 'column ' || {_REL} || '.' || a.attname, "
    "format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END "
    "|| coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') || ' #' || a.attnum "
    f"FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    f"WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind NOT IN ('i', 'I', 't', 'S') AND {_USER_REL}",
    f"SELECT 'index ' || indexname || ' on ' || {_pg_name('schemaname', 'tablename')}, indexdef FROM pg_indexes "
    f"WHERE schemaname {_PG_USER.format(col='schemaname')}",
    f"SELECT 'constraint ' || co.conname || ' on ' || coalesce({_REL}, '-'), pg_get_constraintdef(co.oid) "
    "FROM pg_constraint co JOIN pg_namespace cn ON cn.oid = co.connamespace "
    "LEFT JOIN pg_class c ON c.oid = co.conrelid LEFT JOIN pg_namespace n ON n.oid = c.relnamespace "
    f"WHERE cn.nspname {_PG_USER.format(col='cn.nspname')}",
    f"SELECT 'trigger ' || t.tgname || ' on ' || {_REL}, pg_get_triggerdef(t.oid) FROM pg_trigger t "
    f"JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal",
    "SELECT 'event trigger ' || evtname, evtevent FROM pg_event_trigger",
    f"SELECT 'rule ' || rulename || ' on ' || {_pg_name('schemaname', 'tablename')}, definition FROM pg_rules "
    f"WHERE schemaname {_PG_USER.format(col='schemaname')}",
    f"SELECT 'policy ' || policyname || ' on ' || {_pg_name('schemaname', 'tablename')}, coalesce(qual, '') "
    "FROM pg_policies",
    f"SELECT 'function ' || {_pg_name('n.nspname', 'p.proname')} || '(' "
    "|| pg_get_function_identity_arguments(p.oid) || ')', p.prokind::text "
    f"FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {_USER_REL}",
    f"SELECT 'type ' || {_pg_name('n.nspname', 't.typname')}, t.typtype::text FROM pg_type t "
    f"JOIN pg_namespace n ON n.oid = t.typnamespace WHERE {_USER_REL} AND t.typrelid = 0 AND t.typelem = 0",
    "SELECT 'extension ' || extname, extversion FROM pg_extension",
)


def pg_schema(conn: Connection) -> Schema:
    """Every object of a PostgreSQL database, from ``pg_catalog``."""
    found: Schema = {}
    for query in PG_CATALOG:
        for name, definition in conn.execute(text(query)).all():
            found[str(name)] = str(definition)
    return found


def _owners(key: str) -> set[str]:
    """What an object belongs to: "columns of table t", "column t.c", "index i on t" -> "table t" (or view)."""
    for detail in ("columns of ", "foreign keys of "):
        if key.startswith(detail):
            return {key.removeprefix(detail)}
    kind = key.split(" ", 1)[0]
    if kind == "column":
        owner = key.removeprefix("column ").rsplit(".", 1)[0]
    elif " on " in key and kind in ("index", "trigger", "constraint", "rule", "policy"):
        owner = key.rsplit(" on ", 1)[1]
    else:
        return set()
    return {f"table {owner}", f"view {owner}", f"partitioned table {owner}", f"materialized view {owner}"}


#: the order a refusal names objects in: what a reader looks for first
_KINDS = ("table", "schema", "view", "materialized", "trigger", "event", "rule", "policy", "function", "index")


def _order(key: str) -> tuple[int, str]:
    kind = key.split(" ", 1)[0]
    return (_KINDS.index(kind) if kind in _KINDS else len(_KINDS), key)


def compare(found: Schema, expected: Schema, revision: str) -> None:
    """Refuse a staged copy whose objects are not exactly those the migrations create at ``revision``."""
    gone, added = set(expected) - set(found), set(found) - set(expected)
    # what belongs to a missing or extra table or index goes without saying
    missing = sorted((k for k in gone if not _owners(k) & gone), key=_order)
    extra = sorted((k for k in added if not _owners(k) & added), key=_order)
    different = sorted((k for k in set(found) & set(expected) if found[k] != expected[k]), key=_order)
    if not (missing or extra or different):
        return
    said = [f"missing {k}" for k in missing] + [f"extra {k}" for k in extra] + [f"different {k}" for k in different]
    shown = "; ".join(said[:20]) + (f"; and {len(said) - 20} more" if len(said) > 20 else "")
    raise BackupError(
        f"the backup does not match the schema the migrations create at its revision {revision}: {shown}. "
        "A backup holds exactly what compute-advisor's migrations made: restore one written by `compute-advisor backup`"
    )


Query = Callable[[str], Sequence[Sequence[Any]]]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def check_rows(query: Query, tables: Iterable[str]) -> None:
    """Refuse API keys not stored as the service stores them and audit events that cannot be read."""
    tables = set(tables)
    problems: list[str] = []
    if "api_keys" in tables:
        for key_id, prefix, key_hash, scopes in query("SELECT id, key_prefix, key_hash, scopes FROM api_keys"):
            if not (isinstance(key_hash, str) and _SHA256.match(key_hash)):
                problems.append(f"API key {key_id} is not stored as a SHA-256 hash")
                continue
            try:
                granted = _json(scopes)
            except ValueError:
                granted = None
            if not (isinstance(prefix, str) and prefix.startswith(KEY_PREFIX)):
                problems.append(f"API key {key_id} has no {KEY_PREFIX} prefix")
            elif not (isinstance(granted, list) and granted and set(granted) <= set(SCOPES)):
                problems.append(f"API key {key_id} has scopes no release grants ({scopes!r})")
    if "audit_events" in tables:
        for event_id, action, at, detail in query("SELECT id, action, at, detail FROM audit_events"):
            try:
                if action not in AUDIT_ACTIONS:
                    raise ValueError(f"unknown action {action!r}")
                if not isinstance(at, dt.datetime):
                    dt.datetime.fromisoformat(str(at))
                if detail is not None and not isinstance(_json(detail), dict):
                    raise ValueError("its detail is not a JSON object")
            except ValueError as exc:
                problems.append(f"audit event {event_id} cannot be read: {exc}")
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise BackupError(f"the backup holds rows the service never writes: {shown}")
