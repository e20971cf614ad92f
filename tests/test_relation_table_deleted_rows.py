"""A maintained relation table: a row deleted from it takes its edge out of the graph at the next import.

Before, an import only added, and a deleted row's edge stayed for ever. Now the data dir's
relation-tables.json records what each table asserted (kg/relations/ledger.py). The real CLI (human
output and --json), real rdflib graphs on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rdflib
from click.testing import CliRunner
from rdflib import OWL, RDF

from kg.cli import cli
from kg.store import KnowledgeGraph

HEADER = "source,relation,target,source_type,target_type,weight,note\n"
ROWS = [
    "order-service,dependsOn,mysql-core,Service,Database,1.0,order_db\n",
    "order-service,dependsOn,redis-cluster,Service,Cache,0.9,detail cache\n",
    "user-service,dependsOn,mysql-core,Service,Database,,\n",
]


def kg(*args) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def _neighbours(kb: Path, label: str) -> str:
    return kg("entity", label, "--data-dir", kb)


def _axioms_about(kb: Path, target: str) -> int:
    graph = rdflib.Graph().parse(kb / "graph.ttl")
    return sum(target in str(graph.value(ax, OWL.annotatedTarget)) for ax in graph.subjects(RDF.type, OWL.Axiom))


def test_a_deleted_row_leaves_the_graph_with_its_weight_and_note(tmp_path):
    kb, table = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    assert kg("import", table, "--data-dir", kb).startswith("imported 3 rows")
    assert "redis-cluster" in _neighbours(kb, "order-service") and _axioms_about(kb, "redis-cluster") == 1

    _write(table, [ROWS[0], ROWS[2]])
    dry = kg("import", table, "--dry-run", "--data-dir", kb)
    assert "1 edge would be removed (its row is gone from the table)" in dry, dry
    assert "redis-cluster" in _neighbours(kb, "order-service")  # a dry run changes nothing

    done = json.loads(kg("import", table, "--json", "--data-dir", kb))
    assert done["report"]["removed_edges"] == 1, done
    shown = _neighbours(kb, "order-service")
    assert "redis-cluster" not in shown and "mysql-core" in shown
    assert _axioms_about(kb, "redis-cluster") == 0 and _axioms_about(kb, "mysql-core") == 1
    assert kg("import", table, "--data-dir", kb).startswith("nothing changed: all 2 rows")
    assert kg("check", "--data-dir", kb).startswith("clean:")


def test_an_edge_another_table_still_holds_stays(tmp_path):
    kb = tmp_path / "kb"
    first = _write(tmp_path / "a.csv", ROWS)
    second = _write(tmp_path / "b.csv", [ROWS[1]])  # the redis edge in both tables
    kg("import", first, "--data-dir", kb)
    kg("import", second, "--data-dir", kb)
    _write(first, [ROWS[0]])
    out = kg("import", first, "--data-dir", kb)
    assert "1 edge removed" in out, out  # user-service's; b.csv still holds order-service -> redis-cluster
    assert "redis-cluster" in _neighbours(kb, "order-service")
    assert "mysql-core" not in _neighbours(kb, "user-service")
    _write(second, [])  # a table emptied: its edges go, as its rows did
    assert kg("import", second, "--data-dir", kb) == (
        "nothing to import: the table has no rows; 1 edge removed (its row is gone from the table)\n")
    assert "redis-cluster" not in _neighbours(kb, "order-service")


def test_an_edge_made_elsewhere_or_before_the_record_is_never_removed(tmp_path):
    kb, table = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    kg("import", table, "--data-dir", kb)
    (kb / "relation-tables.json").unlink()  # a knowledge base whose table was imported before the record existed
    _write(table, [ROWS[0], ROWS[2]])
    assert "removed" not in kg("import", table, "--data-dir", kb)
    assert "redis-cluster" in _neighbours(kb, "order-service")
    _write(table, [ROWS[0]])  # recorded now: the next deletion takes its edge
    assert "1 edge removed" in kg("import", table, "--data-dir", kb)
    assert "mysql-core" not in _neighbours(kb, "user-service")


def test_an_import_that_skips_bad_rows_removes_nothing_and_says_so(tmp_path):
    kb, table = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    kg("import", table, "--data-dir", kb)
    # The redis row now names a relation the ontology lacks: skipped, and its old edge is not taken for deleted.
    _write(table, [ROWS[0], ROWS[1].replace("dependsOn", "dependson_typo"), ])
    out = kg("import", table, "--skip-invalid", "--data-dir", kb)
    assert "2 edges whose rows are gone from the table kept: an import that skips bad rows removes nothing" in out, out
    assert "redis-cluster" in _neighbours(kb, "order-service") and "mysql-core" in _neighbours(kb, "user-service")
    _write(table, [ROWS[0], ROWS[1]])  # fixed: user-service's row is the only one gone
    out = kg("import", table, "--data-dir", kb)
    assert "1 edge removed" in out, out
    assert "redis-cluster" in _neighbours(kb, "order-service")
    assert "mysql-core" not in _neighbours(kb, "user-service")


def test_a_write_of_graph_ttl_that_fails_leaves_a_record_that_still_removes_the_edge(tmp_path, monkeypatch):
    kb, table = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    kg("import", table, "--data-dir", kb)
    _write(table, [ROWS[0], ROWS[2]])

    def fail(self, overlay):
        raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(KnowledgeGraph, "_save_import", fail)
        with pytest.raises(OSError):
            KnowledgeGraph(kb).import_relations(table)
    assert "redis-cluster" in _neighbours(kb, "order-service")  # graph.ttl as it was
    assert "1 edge removed" in kg("import", table, "--data-dir", kb)
    assert "redis-cluster" not in _neighbours(kb, "order-service")


def test_an_upload_is_known_by_its_file_name(tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        def upload(rows: list[str], name: str = "relations.csv") -> dict:
            response = client.post("/import", files={"file": (name, HEADER + "".join(rows), "text/csv")})
            assert response.status_code == 200, response.text
            return response.json()

        assert upload(ROWS)["report"]["new_edges"] == 3
        assert upload([ROWS[0], ROWS[2]])["report"]["removed_edges"] == 1  # the same name: the same table
        assert upload([ROWS[0]], name="other.csv")["report"]["removed_edges"] == 0  # another table
        neighbours = client.get("/entities/order-service").json()
    shown = json.dumps(neighbours, ensure_ascii=False)
    assert "mysql-core" in shown and "redis-cluster" not in shown


def test_a_renamed_table_is_a_new_table_and_the_old_name_holds_nothing(tmp_path):
    kb, old = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    kg("import", old, "--data-dir", kb)
    new = old.rename(tmp_path / "relations-2026.csv")
    assert kg("import", new, "--data-dir", kb).startswith("nothing changed")
    _write(new, [ROWS[0], ROWS[2]])
    assert "1 edge removed" in kg("import", new, "--data-dir", kb)  # the gone file's record does not hold it
    assert "redis-cluster" not in _neighbours(kb, "order-service")
    # The old name's record is kept (its file may only be elsewhere for now) and counts again once it is back.
    recorded = json.loads((kb / "relation-tables.json").read_text(encoding="utf-8"))["tables"]
    assert sorted(recorded) == sorted([str(old.resolve()), str(new.resolve())])
    _write(old, ROWS)  # back: what it held at its last import protects again
    _write(new, [ROWS[0]])
    out = kg("import", new, "--data-dir", kb)
    assert out.startswith("nothing changed") and "removed" not in out, out
    assert "mysql-core" in _neighbours(kb, "user-service")


def test_an_unreadable_record_is_noted_and_rebuilt_by_the_next_import(tmp_path):
    kb, table = tmp_path / "kb", _write(tmp_path / "relations.csv", ROWS)
    kg("import", table, "--data-dir", kb)
    (kb / "relation-tables.json").write_text("{cut short", encoding="utf-8")
    checked = kg("check", "--data-dir", kb)
    assert checked.startswith("clean:") and "relation-tables.json cannot be read" in checked, checked
    _write(table, [ROWS[0], ROWS[2]])
    assert "removed" not in kg("import", table, "--data-dir", kb)  # nothing known to remove
    assert "cannot be read" not in kg("check", "--data-dir", kb)
    _write(table, [ROWS[0]])
    assert "1 edge removed" in kg("import", table, "--data-dir", kb)


def test_an_alias_deleted_from_a_table_leaves_the_entity_unless_another_table_names_it(tmp_path):
    kb, table, aliases = tmp_path / "kb", tmp_path / "relations.csv", tmp_path / "aliases.csv"
    table.write_text("source,relation,target,source_aliases\norder-service,dependsOn,mysql-core,订单服务|order svc\n",
                     encoding="utf-8")
    aliases.write_text("entity,alias\norder-service,下单服务\norder-service,订单服务\n", encoding="utf-8")
    kg("import", table, "--data-dir", kb)
    kg("import", aliases, "--data-dir", kb)
    table.write_text("source,relation,target,source_aliases\norder-service,dependsOn,mysql-core,\n", encoding="utf-8")
    out = kg("import", table, "--data-dir", kb)
    assert "1 alias removed (gone from the table)" in out, out  # order svc; 订单服务 is still in aliases.csv
    shown = _neighbours(kb, "order-service").splitlines()[1]
    assert "order svc" not in shown and "订单服务" in shown and "下单服务" in shown, shown
    aliases.write_text("entity,alias\norder-service,下单服务\n", encoding="utf-8")
    dry = json.loads(kg("import", aliases, "--dry-run", "--json", "--data-dir", kb))
    assert dry["report"]["removed_aliases"] == 1 and "订单服务" in _neighbours(kb, "order-service")
    assert "1 removed (gone from the table)" in kg("import", aliases, "--data-dir", kb)
    shown = _neighbours(kb, "order-service").splitlines()[1]
    assert "订单服务" not in shown and "下单服务" in shown, shown
