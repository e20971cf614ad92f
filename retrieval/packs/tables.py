"""A pack's own relation and alias tables: `relations.csv` and `aliases.csv` (or `.xlsx`) at the root of its folder in, the edges and
aliases they state in the knowledge base's graph out; imported with the pack (`kg pack add`, `kg pack update`) and
taken out with it (`kg pack remove`, or an update whose folder no longer has the file).

They are imported as `kg import` imports a table, and the relation-table record (kg/relations/ledger.py) knows them by
their path in DATA_DIR/packs/ID: a row deleted from a pack's table takes its edge or alias with it at the next
`kg pack update`, and a pack removed takes all of them, unless another table still states them (the knowledge base's
own relations.csv, another pack's). The entities a pack's table made stay when it goes, as they do when a row is
deleted from any table; only its edges and aliases go. Rows that do not validate are skipped and said in the pack's
report, and so is a table that cannot be read at all: a pack is often someone else's work, and one bad row should not
keep its documents out.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rdflib import URIRef

from kg.errors import KgError
from kg.relations.ledger import Statements, TableLedger, key_edge, statements
from retrieval.catalog.packs import PACKS_DIR  # DATA_DIR/packs/ID holds a pack's copy

__all__ = ["PACKS_DIR", "TABLES", "pack_of_table", "packs_alone_state", "retract_tables", "sync_tables", "table_entities", "table_name"]

# File name -> the header of an empty table of its kind. Relations first: an alias names an entity a relation row made.
# A table kept in Excel (`kg/relations/sheet.py`) is read as its CSV is.
TABLES = {"relations.csv": "source,relation,target\n", "aliases.csv": "entity,alias\n",
          "relations.xlsx": "source,relation,target\n", "aliases.xlsx": "entity,alias\n"}


def pack_of_table(table: str) -> str | None:
    """The pack whose own table the record's key `table` is, or None. Known by its place, `.../packs/ID/relations.csv`:
    the record holds the path on the machine that imported it, and the data dir of another machine sharing the
    knowledge base lies elsewhere."""
    path = Path(table)
    if path.name not in TABLES or path.parent.parent.name != PACKS_DIR or not path.parent.name:
        return None
    return path.parent.name


def table_name(table: str) -> str:
    """How an answer names a table of the record (which holds a path of the importing machine): "pack ops's
    relations.csv", its file name, or the name it was uploaded under."""
    pack = pack_of_table(table)
    if pack is not None:
        return f"pack {pack}'s {Path(table).name}"
    return table.removeprefix("upload:") if table.startswith("upload:") else Path(table).name


def packs_alone_state(root: Path, edge: tuple) -> bool:
    """Do packs' own tables state `edge` and nothing else does (no table of the team's, no ontology file, no edit made
    in Protégé, which is in no table's record)?"""
    tables = statements(root).of(edge)
    return bool(tables) and all(pack_of_table(table) is not None for table in tables)


def table_entities(root: Path) -> dict[str, frozenset[str]]:
    """Entity IRI -> the packs whose own tables state an edge or an alias of it (as the record has them now)."""
    return _entities(statements(root))


@lru_cache(maxsize=4)
def _entities(record: Statements) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for table, keys in record.tables.items():
        pack = pack_of_table(table)
        if pack is None:
            continue
        for key in keys:
            for node in key_edge(key)[::2]:
                if isinstance(node, URIRef):
                    out.setdefault(str(node), set()).add(pack)
    return {iri: frozenset(packs) for iri, packs in out.items()}


def sync_tables(kb, folder: Path) -> tuple[list[dict], list[str]]:
    """Each table the pack's folder has, imported; each it had at the last import and has no more, taken out.
    Returns ({"file", "summary"} a table, notes on what was skipped)."""
    done: list[dict] = []
    notes: list[str] = []
    for name in TABLES:
        path = folder / name
        if path.is_file():
            try:
                result = kb.import_file(path, skip_invalid=True)
            except KgError as exc:
                notes.append(f"{name} not imported: {exc}")
                continue
            rejected = result.get("report", {}).get("rejected") or []
            count = rejected if isinstance(rejected, int) else len(rejected)
            if count:
                notes.append(f"{name}: {count} row(s) not imported (`kg import --dry-run {path}` says why)")
        elif _recorded(kb, path):
            result = _retract(kb, path)
        else:
            continue
        done.append({"file": name, "summary": result["summary"]})
    return done, notes


def retract_tables(kb, folder: Path) -> list[dict]:
    """The edges and aliases of every table of the pack taken out of the graph (before its folder goes)."""
    return [{"file": name, "summary": _retract(kb, folder / name)["summary"]}
            for name in TABLES if _recorded(kb, folder / name)]


def _recorded(kb, path: Path) -> bool:
    """Did the table at `path` state anything at its last import?"""
    return bool(statements(kb.root).tables.get(TableLedger.key(path)))


def _retract(kb, path: Path) -> dict:
    """Import the table empty, as itself (the record's key): the record's rule removes what it stated and nothing
    another table states. The empty table is a CSV beside it, also for a workbook's."""
    empty = path.with_name(f".empty-{path.stem}.csv")
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_text(TABLES[path.name], encoding="utf-8")
    try:
        return kb.import_file(empty, table=TableLedger.key(path))
    finally:
        empty.unlink(missing_ok=True)
