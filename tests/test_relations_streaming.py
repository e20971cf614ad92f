"""The relation table is read lazily, row by row: problems in its first lines are found while the rest
is still being written, encodings are detected as a whole-file decode did, and a table edited between
its check and its import is refused. Real files and FIFOs, the real reader and plan."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import rdflib

from kg.errors import RelationTableError
from kg.relations import (
    check_relation_table,
    import_relation_table,
    iter_relation_rows,
    read_relation_table,
)
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, load_rdf

HEADER = "source,relation,target,source_type,target_type\n"

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))


class _Feeder(threading.Thread):
    """Writes `head` into a FIFO, then keeps it open (the rest of a huge file still to come) until
    `release` is set or `hold` seconds pass; `released` says which happened."""

    def __init__(self, path: Path, head: bytes, hold: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.path, self.head, self.hold = path, head, hold
        self.release = threading.Event()
        self.released: bool | None = None

    def run(self) -> None:
        with self.path.open("wb") as fh:
            fh.write(self.head)
            fh.flush()
            self.released = self.release.wait(self.hold)
            try:
                fh.write(b"a,dependsOn,b,Service,Service\n" * 1000)
            except BrokenPipeError:  # the reader has stopped reading: what a lazy reader does
                pass


def _read_while_fed(tmp_path: Path, head: bytes, read) -> tuple[BaseException | None, _Feeder]:
    fifo = tmp_path / "relations.csv"
    os.mkfifo(fifo)
    feeder = _Feeder(fifo, head)
    feeder.start()
    error = None
    try:
        read(fifo)
    except RelationTableError as e:
        error = e
    feeder.release.set()
    feeder.join(60)
    return error, feeder


@needs_fifo
def test_a_bad_header_is_reported_before_the_rest_of_the_file_is_read(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    graph = rdflib.Graph()
    error, feeder = _read_while_fed(
        tmp_path, b"source;relation;target\n", lambda p: import_relation_table(graph, p, vocab)
    )
    assert str(error).startswith("relations.csv: missing required columns 'source', 'relation', 'target'")
    # The reader gave up while the writer was still holding the rest back; reading the whole file
    # first (the old reader) only returns once the writer gives up and closes it.
    assert feeder.released is True
    assert len(graph) == 0


@needs_fifo
def test_an_unsplittable_line_3_stops_the_reading_there(vocab: Vocabulary, tmp_path: Path) -> None:
    huge_field = '"' + "x" * 200_000 + '"'
    head = (HEADER + "a,dependsOn,b,Service,Service\n" + f"c,dependsOn,{huge_field},,\n").encode()
    error, feeder = _read_while_fed(tmp_path, head, lambda p: read_relation_table(p, vocab))
    assert str(error) == (
        "relations.csv:3: cannot split this line into fields (field larger than field limit (131072))"
    )
    assert feeder.released is True


def test_gbk_found_far_down_the_file_restarts_the_reading_in_gbk(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    lines = [f"svc-{i},dependsOn,svc-{i + 1},Service,Service" for i in range(3000)]
    lines.append("订单服务,dependsOn,缓存集群,Service,Cache")
    path = tmp_path / "relations.csv"
    path.write_bytes((HEADER + "\n".join(lines) + "\n").encode("gbk"))
    graph = rdflib.Graph()
    report = import_relation_table(graph, path, vocab)
    assert (report.rows, report.new_edges, report.encoding) == (3001, 3001, "gbk")
    labels = {str(o) for o in graph.objects(None, rdflib.RDFS.label)}
    assert {"订单服务", "缓存集群", "svc-0", "svc-3000"} <= labels
    rows = read_relation_table(path, vocab).rows
    assert (rows[-1].line, rows[-1].source) == (3002, "订单服务")


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_undecodable_byte_far_down_is_named_with_its_offset(
    vocab: Vocabulary, tmp_path: Path, bom: bytes
) -> None:
    body = (HEADER + "a,dependsOn,b,Service,Service\n" * 2000).encode() + b"c,dependsOn,\xff\xfe,,\n"
    path = tmp_path / "relations.csv"
    path.write_bytes(bom + body)
    offset = body.index(b"\xff")
    with pytest.raises(RelationTableError) as caught:
        check_relation_table(path, vocab)
    # The offset counts from after a BOM, as it always did.
    assert str(caught.value) == (
        f"relations.csv: the file is neither UTF-8, GBK nor Big5 (byte 0xff at offset {offset}); "
        'in Excel use File > Save As... > "CSV UTF-8 (Comma delimited) (*.csv)"'
    )


def test_lone_carriage_returns_end_lines(vocab: Vocabulary, tmp_path: Path) -> None:
    path = tmp_path / "relations.csv"
    path.write_bytes(b"source,relation,target\ra,dependsOn,b\r\rc,dependsOn,d\r\ne,dependsOn,f")
    table = read_relation_table(path, vocab)
    assert [(r.line, r.source, r.target) for r in table.rows] == [
        (2, "a", "b"),
        (4, "c", "d"),
        (5, "e", "f"),
    ]


def test_a_table_edited_between_its_check_and_its_rows_is_refused(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    path = tmp_path / "relations.csv"
    path.write_text(HEADER + "a,dependsOn,b,Service,Service\n", encoding="utf-8")
    table = check_relation_table(path, vocab)
    assert (table.rows, table.problems) == (1, [])
    path.write_text(HEADER + "a,dependsOn,b,Service,Service\nc,bogus,d,,\n", encoding="utf-8")
    with pytest.raises(RelationTableError) as caught:
        list(iter_relation_rows(table, vocab))
    assert str(caught.value) == (
        "relations.csv: the file changed while it was being imported; nothing was imported: "
        "import it again once it is saved"
    )


def test_duplicates_and_conflicts_are_found_across_a_long_table(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    """The checker keeps a hash of each row, not the row: distinct rows of one edge stay distinct."""
    lines = [f"svc-{i},dependsOn,svc-{i + 1},Service,Service,,,," for i in range(5000)]
    lines += [
        "svc-7,dependsOn,svc-8,Service,Service,s7,,,",  # same edge, another alias: a new row
        "svc-7,dependsOn,svc-8,Service,Service,s7,,,",  # ... and its duplicate
        "x,dependsOn,y,Service,Service,,,0.5,",
        "x,dependsOn,y,Service,Service,,,0.7,",  # weight conflicts with the line above
        "svc-4999,dependsOn,svc-5000,Service,Service,,,,",  # duplicate of the last generated row
    ]
    path = tmp_path / "relations.csv"
    header = "source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note\n"
    path.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    table = check_relation_table(path, vocab)
    assert [str(p) for p in table.problems] == [
        "relations.csv:5003: duplicate of line 5002; delete one of the two rows",
        "relations.csv:5005: line 5004 has the same source, relation and target with weight '0.5'; "
        "keep one of the two rows",
        "relations.csv:5006: duplicate of line 5001; delete one of the two rows",
    ]
    assert table.rows == 5002


def test_a_label_made_an_alias_further_down_is_planned_again_with_the_whole_table(
    vocab: Vocabulary, tmp_path: Path
) -> None:
    """Rows are planned as they are checked; 'PG' is planned as an entity of its own on line 2
    and only line 5003 says it is PostgreSQL's alias: the table is planned again, progress goes on."""
    filler = [f"svc-{i},dependsOn,svc-{i + 1},Service,Service,,,," for i in range(5000)]
    path = tmp_path / "relations.csv"
    header = "source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note\n"
    path.write_text(
        header + "order-service,dependsOn,PG,,,,,,\n" + "\n".join(filler)
        + "\nPostgreSQL,dependsOn,disk,Database,,PG,,,\n",
        encoding="utf-8",
    )
    graph = rdflib.Graph()
    ticks: list[int] = []
    report = import_relation_table(graph, path, vocab, progress=ticks.append)
    assert (ENT["order-service"], KG.dependsOn, ENT.PostgreSQL) in graph
    assert (ENT.PG, None, None) not in graph and (None, None, ENT.PG) not in graph
    assert (report.rows, report.new_entities) == (5002, 5004)
    assert ticks == [5000, 5002]
