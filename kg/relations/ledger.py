"""Which edges and aliases each imported table asserted: the data dir's `relation-tables.json` in, those a table's rows no longer hold out.

A relation table is maintained: rows are added, changed and deleted. An import adds what the table
holds; without a record of what it held before, a deleted row's edge would stay in the graph for
ever. The ledger keeps, per table (its resolved path; an upload: its file name), the edges and
aliases its last import asserted (an alias table's aliases too; an RDF file's triples: kg/rdf_merge.py). The next import of that table
removes those it asserted then and holds no more, unless another table still asserts them (a table
whose file is not there, renamed, moved or on another machine, asserts nothing while it is not: its
record is kept, and counts again when the file is back). An edge made anywhere else (Protégé, an
ontology import, a table imported before the ledger existed) is in no table's record and is never
removed by an import.

The record is written around graph.ttl (`around`) so that a process killed between the two never
loses an edge to remove: first the union of the old and new keys (before graph.ttl changes), then the
new keys alone (after). A record that names an edge the graph no longer has costs nothing: removing
it again is a no-op.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rdflib import Literal, URIRef

from kg.files import replace_file
from kg.relations.sheet import SHEET_SUFFIXES

__all__ = ["LEDGER_FILE", "Statements", "TableLedger", "edge_key", "key_edge", "statements"]

LEDGER_FILE = "relation-tables.json"
_FORMAT = 1
_SEP = "\x1f"  # between an edge's three IRIs: one string an edge, not three (100k rows: 100k strings)
TEMP_PREFIX = ".relation-tables-"


def edge_key(edge: tuple) -> str:
    """An edge, or an alias (`skos:altLabel` "name": a literal object is written after a `"`, which no IRI starts with)."""
    s, p, o = edge
    return _SEP.join((str(s), str(p), f'"{o}' if isinstance(o, Literal) else str(o)))


def key_edge(key: str) -> tuple:
    s, p, o = key.split(_SEP)
    return URIRef(s), URIRef(p), Literal(o[1:]) if o.startswith('"') else URIRef(o)


def _is_rdf(table: str) -> bool:
    """A record of an RDF file (an ontology), not of a table: tables are .csv files or workbooks (relations or aliases),
    by path or uploaded."""
    return not table.lower().endswith((".csv", *SHEET_SUFFIXES))


def _still_there(table: str) -> bool:
    """A table known by its path asserts while its file is there; an upload (`upload:NAME`) until it is uploaded again."""
    return table.startswith("upload:") or Path(table).is_file()


class TableLedger:
    """The record in `data_dir`; read once an import, written twice (see the module's docstring)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LEDGER_FILE
        self._tables: dict[str, list[str]] | None = None
        self._unreadable = False

    @staticmethod
    def key(table: Path) -> str:
        """A table is its file: the same file imported from another folder is the same table."""
        return str(Path(table).resolve())

    @property
    def unreadable(self) -> bool:
        """True when the record exists but cannot be read (an import then removes nothing, and starts it anew)."""
        _ = self.tables
        return self._unreadable

    @property
    def tables(self) -> dict[str, list[str]]:
        if self._tables is None:
            self._tables = {}
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                return self._tables
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict) and data.get("format") == _FORMAT and isinstance(data.get("tables"), dict):
                self._tables = data["tables"]
            else:  # cut short by hand, another format: only means no edge is removed
                self._unreadable = True
        return self._tables

    def only_in(self, table: str) -> list[str]:
        """The edges (`edge_key`s) `table` asserted at its last import that no other table asserts. An RDF file's
        record (kg/rdf_merge.py) protects what another RDF file drops, never a table's deleted row: the graph exported
        as Turtle and imported back holds every edge, and would otherwise keep a row deleted from its table for ever."""
        return _only_in(self.tables, table)

    def record(self, table: str, keys: list[str], *, keep_old: bool = False) -> None:
        """`table` asserts the edges `keys` now (with `keep_old`, also what it asserted before); the file is
        written only when that changes what it holds."""
        old = self.tables.get(table)
        if keep_old and old:
            keys = list(dict.fromkeys([*old, *keys]))
        if old is not None and len(old) == len(keys) and set(old) == set(keys):
            return
        self.tables[table] = keys
        self._write()

    def around(self, table: str, keys: list[str], change: Callable[[], None] | None, *, keep_old: bool = False) -> None:
        """Record that `table` asserts `keys`, around `change` (writing graph.ttl; None: nothing to write): the old
        and new keys before it, the new alone after (with `keep_old`, the old stay: rows were skipped)."""
        if change is not None:
            self.record(table, keys, keep_old=True)
            change()
        self.record(table, keys, keep_old=keep_old)

    def _write(self) -> None:
        data = json.dumps({"format": _FORMAT, "tables": self.tables}, ensure_ascii=False).encode("utf-8")
        replace_file(self.path, data, TEMP_PREFIX, ".json")


def _only_in(tables: dict[str, list[str]], table: str) -> list[str]:
    mine = tables.get(table, [])
    if not mine or len(tables) == 1:
        return mine
    rdf = _is_rdf(table)
    others = {k for name, keys in tables.items()
              if name != table and _still_there(name) and (rdf or not _is_rdf(name)) for k in keys}
    return [k for k in mine if k not in others]


class Statements:
    """Which tables state an edge or an alias: the record as it was read once (see `statements`)."""

    def __init__(self, tables: dict[str, list[str]]) -> None:
        self.tables = tables
        self._sets: dict[str, frozenset[str]] = {}

    def of(self, edge: tuple) -> list[str]:
        """The tables (record keys: a path, `upload:NAME`, an RDF file) whose last import stated `edge`."""
        key = edge_key(edge)
        return [table for table in self.tables if key in self._keys(table)]

    def only_in(self, table: str) -> list[str]:
        """`TableLedger.only_in`, on the record as read."""
        return _only_in(self.tables, table)

    def _keys(self, table: str) -> frozenset[str]:
        keys = self._sets.get(table)
        if keys is None:
            keys = self._sets[table] = frozenset(self.tables[table])
        return keys


_READ: dict[Path, tuple[tuple[int, ...] | None, Statements]] = {}


def statements(data_dir: Path) -> Statements:
    """The record of `data_dir`, read again only when its file changed: a query server asks it for each answer that
    cites the graph's facts, and a 100k-row table's record is megabytes of JSON."""
    path = Path(data_dir) / LEDGER_FILE
    try:
        st = path.stat()
        stamp: tuple[int, ...] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    cached = _READ.get(path)
    if cached is None or cached[0] != stamp:
        cached = _READ[path] = (stamp, Statements(TableLedger(data_dir).tables if stamp else {}))
    return cached[1]
