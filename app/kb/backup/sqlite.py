"""SQLite backups: the online backup API out of the live database, and back into it.

Raw ``sqlite3`` connections, because SQLAlchemy does not expose SQLite's online backup API.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from app.kb.backup.common import BackupError, Contents, fsync, partial, read_contents
from app.kb.backup.verify import Schema, check_rows, sqlite_schema

#: byte of an SQLite ``-shm`` file every connection to a WAL database holds a shared lock on (the
#: "DMS" lock of https://www.sqlite.org/walformat.html)
SHM_DMS_BYTE = 128


def _sqlite_connect(path: Path, mode: str) -> sqlite3.Connection:
    """An ``sqlite3`` connection to an existing file (``mode`` ``ro`` or ``rw``: never created)."""
    return sqlite3.connect(f"file:{quote(str(path), safe='/')}?mode={mode}", uri=True, timeout=30)


def _sqlite_contents(conn: sqlite3.Connection) -> Contents:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return read_contents(lambda sql: conn.execute(sql).fetchone(), tables)


def sqlite_in_use(path: Path) -> bool:
    """Whether another process has the SQLite database at ``path`` open.

    Every connection to a WAL database holds a shared lock on one byte of its ``-shm`` file while it
    is open; if an exclusive lock on that byte cannot be had, another process holds it. (Call it
    while this process has no connection to the database: closing any descriptor of a file drops all
    of a process's POSIX locks on it.)
    """
    try:
        fd = os.open(f"{path}-shm", os.O_RDWR)
    except FileNotFoundError:  # no WAL index: no connection in WAL mode
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS_BYTE)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, SHM_DMS_BYTE)
        return False
    finally:
        os.close(fd)


def sqlite_backup(source: Path, out: Path) -> Contents:
    """Copy the live database ``source`` into a new file ``out`` in one read transaction."""
    tmp = partial(out, "partial")
    try:
        with contextlib.closing(_sqlite_connect(source, "rw")) as src, contextlib.closing(sqlite3.connect(tmp)) as dst:
            src.backup(dst)  # all pages in one step: one consistent snapshot, writers carry on (WAL)
            dst.execute("PRAGMA journal_mode=DELETE")  # a file that stands alone, without -wal
            check = dst.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise BackupError(f"the copy does not pass SQLite's quick_check: {check}")
            found = _sqlite_contents(dst)
        fsync(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return found


def sqlite_check_file(path: Path) -> Contents:
    """The contents of an SQLite backup file, refused unless it is sound and a compute-advisor database."""
    try:
        with contextlib.closing(_sqlite_connect(path, "ro")) as conn:
            check = conn.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise BackupError(f"{path} does not pass SQLite's quick_check: {check}")
            found = _sqlite_contents(conn)
    except sqlite3.Error as exc:
        raise BackupError(f"{path} cannot be read as an SQLite database: {exc}") from exc
    if found.revision is None:
        raise BackupError(f"{path} is not a compute-advisor backup: it has no migration revision (alembic_version)")
    return found


def sqlite_stage(source: Path, target: Path) -> Path:
    """A copy of the backup ``source`` next to the database ``target`` (the same directory, so that it can
    be renamed into place), standing alone (rollback journal). The database is not touched."""
    if not target.parent.is_dir():
        raise BackupError(f"the directory of the database, {target.parent}, does not exist")
    tmp = partial(target, "restoring")
    try:
        with contextlib.closing(_sqlite_connect(source, "ro")) as src, contextlib.closing(sqlite3.connect(tmp)) as dst:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def sqlite_staged_schema(path: Path) -> Schema:
    """The objects of the SQLite database at ``path`` (``app.kb.backup.verify.sqlite_schema``)."""
    with contextlib.closing(_sqlite_connect(path, "ro")) as conn:
        return sqlite_schema(conn)


def sqlite_check_staged_rows(path: Path) -> None:
    """Refuse rows the service never writes (``app.kb.backup.verify.check_rows``), and foreign keys that
    point nowhere."""
    with contextlib.closing(_sqlite_connect(path, "ro")) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        check_rows(lambda sql: conn.execute(sql).fetchall(), tables)
        dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
        if dangling:
            raise BackupError(f"the backup holds rows whose foreign keys point nowhere: {dangling[:5]}")


def sqlite_settle(path: Path) -> None:
    """Make the staged file stand alone again (the service's connections turned WAL on) and durable."""
    with contextlib.closing(_sqlite_connect(path, "rw")) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise BackupError(f"the staged copy does not pass SQLite's quick_check: {check}")
    fsync(path)


def sqlite_swap(staged: Path, target: Path) -> tuple[Path, ...]:
    """Put the verified staged file ``staged`` in place of the database ``target``; the ``-wal``/``-shm``
    files moved aside.

    An existing database is overwritten through SQLite (the backup API: all pages in one write
    transaction on it), so connections that have it open see the restored data once it is committed,
    and its ``-wal``/``-shm`` stay paired with it. A missing one gets the staged file renamed into place;
    ``-wal``/``-shm`` files left at the path by a database no longer there are first moved aside, so that
    the new file is not paired with them.
    """
    if target.exists():
        with (
            contextlib.closing(_sqlite_connect(staged, "ro")) as src,
            contextlib.closing(_sqlite_connect(target, "rw")) as dst,
        ):
            src.backup(dst)
        staged.unlink(missing_ok=True)
        return ()
    moved: list[Path] = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for suffix in ("-wal", "-shm"):
        orphan = Path(f"{target}{suffix}")
        if orphan.exists():
            aside = orphan.with_name(f"{orphan.name}.orphaned-{stamp}")
            os.replace(orphan, aside)
            moved.append(aside)
    os.replace(staged, target)
    return tuple(moved)
