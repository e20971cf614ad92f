"""Relation-table import: a relations.csv (source,relation,target,...) and a Vocabulary in, entities and typed edges in an rdflib Graph (plus an ImportReport) out.

Reading (`check_relation_table`) checks every row and collects every problem with its line and a
fix; applying first plans all triples against the graph without touching it, then writes them in
one go, so a failed import leaves the graph as it was and a second import of the same table adds
nothing; the edges of rows deleted from the table since its last import are planned out of the graph
(kg/relations/ledger.py). The table is streamed: each row is checked and planned as it is read, so memory grows
with the graph being built, not with the table's text or rows (a second pass over the file plans
the table again only when a label used early is made an alias further down). What is written is
the contract the graph view and Protégé read:

    <entity> a owl:NamedIndividual , <class> ; rdfs:label "label" ; skos:altLabel "alias" .
    <source> <property> <target> .
    [] a owl:Axiom ; owl:annotatedSource <source> ; owl:annotatedProperty <property> ;
       owl:annotatedTarget <target> ; kg:weight "0.5"^^xsd:decimal ; rdfs:comment "note" .
"""


from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from pathlib import Path

import rdflib

from kg.errors import RelationTableError
from kg.relations.ledger import edge_key
from kg.relations.model import (
    ALIAS_SEPARATOR,
    ALLOWED_COLUMNS,
    PROBLEM_COLUMN,
    CheckedTable,
    ImportReport,
    RelationRow,
    RelationTable,
    RowProblem,
    _count,
)
from kg.relations.overlay import Overlay
from kg.relations.plan import _Plan, table_aliases
from kg.relations.read import check_relation_table, iter_relation_rows, read_relation_table
from kg.relations.source import column_key
from ontology import Vocabulary

__all__ = [
    "ALIAS_SEPARATOR",
    "ALLOWED_COLUMNS",
    "CheckedTable",
    "ImportReport",
    "RelationRow",
    "RelationTable",
    "RowProblem",
    "apply_relation_rows",
    "check_relation_table",
    "import_relation_table",
    "iter_relation_rows",
    "read_relation_table",
]


# ---------------------------------------------------------------- applying


def apply_relation_rows(
    graph: rdflib.Graph, rows: Iterable[RelationRow], vocab: Vocabulary
) -> ImportReport:
    """Write checked rows into `graph`; rows that cannot be applied are reported, the rest written."""

    rows = list(rows)
    plan = _Plan(graph, vocab, aliases=table_aliases(rows), file="")
    plan.run(rows)
    plan.commit()
    return plan.report(dry_run=False, encoding="")


def import_relation_table(
    graph: rdflib.Graph,
    path: Path,
    vocab: Vocabulary,
    *,
    skip_invalid: bool = False,
    dry_run: bool = False,
    rejects_path: Path | None = None,
    progress: Callable[[int], None] | None = None,
    apply: Callable[[Overlay], None] = Overlay.commit,
    forget: Iterable[str] = (),
    asserted: Callable[[list[str]], None] | None = None,
) -> ImportReport:
    """Read, check and import a relation table: all rows or (with problems) none, unless skip_invalid.

    `apply` is given the planned triples when the import goes ahead; by default they are added to
    `graph`. The caller that writes graph.ttl from them instead (`KnowledgeGraph.import_relations`)
    keeps them out of rdflib's store. `forget`: the edges an earlier import of this table asserted
    (kg/relations/ledger.py); those its rows no longer hold leave the graph, unless rows were skipped.
    `asserted` is given the edges the table's rows assert (as `edge_key`s) when the import goes ahead."""
    table, plan = _plan_table(graph, Path(path), vocab, progress)
    problems = sorted(table.problems + plan.rejected, key=lambda p: p.line)
    if problems and not skip_invalid:
        bad_rows = len({p.line for p in problems})
        raise RelationTableError(
            f"{table.name}: {_count(bad_rows, 'bad row')}; nothing was imported (fix them, or use "
            "--skip-invalid to import the good rows)",
            problems=[str(p) for p in problems],
        )
    keys = [edge_key(e) for e in plan.asserted]  # the table's edges and aliases as kg/relations/ledger.py records them
    plan.forget(forget, set(keys), keep=bool(problems))
    if not dry_run:
        if asserted is not None:
            asserted(keys)
        apply(plan.overlay)
        if rejects_path is not None and problems:
            _write_rejects(rejects_path, table, problems, plan.rejected_rows)
    report = plan.report(dry_run=dry_run, encoding=table.encoding)
    report.rejected = problems
    return report


def _plan_table(
    graph: rdflib.Graph, path: Path, vocab: Vocabulary, progress: Callable[[int], None] | None
) -> tuple[CheckedTable, _Plan]:
    """Check and plan in one pass over the file; a second pass only if a label turned alias later."""
    plans: list[_Plan] = []
    ticks = _Monotonic(progress) if progress is not None else None

    def new_plan(aliases: dict[str, tuple[str, int]]) -> Callable[[RelationRow], None]:
        plans.clear()  # a pass that starts over (GBK after all) drops the previous plan first
        plans.append(_Plan(graph, vocab, aliases=aliases, file=path.name, progress=ticks))
        return plans[0].add

    table = check_relation_table(path, vocab, new_sink=new_plan)
    plan = plans[0]
    if plan.resolved_before_aliased():
        plans.clear()
        del plan  # the first plan goes before the second is built: never two overlays at once
        plan = _Plan(graph, vocab, aliases=table.aliases, file=table.name, progress=ticks)
        plan.run(iter_relation_rows(table, vocab))
    else:
        plan.finish()
    return table, plan


class _Monotonic:
    """Progress that never goes back when the rows are planned a second time."""

    def __init__(self, progress: Callable[[int], None]) -> None:
        self.progress, self.high = progress, -1

    def __call__(self, done: int) -> None:
        if done > self.high:
            self.high = done
            self.progress(done)


def _write_rejects(
    path: Path, table: CheckedTable, problems: list[RowProblem], rejected_rows: dict[int, RelationRow]
) -> None:
    """The bad rows with their original columns and a `problem` column, as Excel-friendly UTF-8."""
    keep = [i for i, cell in enumerate(table.header) if column_key(cell) != PROBLEM_COLUMN]
    by_line: dict[int, list[str]] = {}
    for p in problems:
        by_line.setdefault(p.line, []).append(p.message)
    with Path(path).open("w", encoding="utf-8-sig", newline="") as f:  # BOM: Excel then reads UTF-8
        writer = csv.writer(f)
        writer.writerow([table.header[i] for i in keep] + [PROBLEM_COLUMN])
        for line, messages in sorted(by_line.items()):
            fields = table.bad_fields.get(line)
            if fields is None:  # rejected while applying: rebuild the fields from the parsed row
                fields = _row_fields(rejected_rows[line], table.header)
            fields = (fields + [""] * len(table.header))[: len(table.header)]
            writer.writerow([fields[i] for i in keep] + [f"line {line}: " + "; ".join(messages)])


def _row_fields(row: RelationRow, header: list[str]) -> list[str]:
    values = {
        "source": row.source,
        "relation": row.relation,
        "target": row.target,
        "source_type": row.source_type or "",
        "target_type": row.target_type or "",
        "source_aliases": ALIAS_SEPARATOR.join(row.source_aliases),
        "target_aliases": ALIAS_SEPARATOR.join(row.target_aliases),
        "weight": "" if row.weight is None else repr(row.weight),
        "note": row.note or "",
    }
    return [values.get(column_key(cell), "") for cell in header]
