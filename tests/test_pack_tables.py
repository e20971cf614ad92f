"""A pack's own relation and alias tables (`retrieval.packs.tables`): `kg pack add` imports the `relations.csv` and
`aliases.csv` at the root of its folder, `kg pack update` follows their edits (a deleted row's edge goes, a table no
longer there takes its edges along), `kg pack remove` takes them out, and an edge another table also states stays.
Through the real CLI (its human output too), with `kg check` after each step."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import make_settings

from kg.cli import cli
from retrieval.pipeline import KnowledgeBase

DOCS = {
    "gateway.md": "# edge-gateway\n\nThe edge-gateway forwards requests to the quota-service. 它的超时是 3 秒。\n",
    "quota.md": "# quota-service\n\nThe quota-service keeps per-tenant limits in the limits-db.\n",
}
RELATIONS = """source,relation,target,source_type,target_type
edge-gateway,dependsOn,quota-service,Service,Service
quota-service,dependsOn,limits-db,Service,Database
quota-service,ownedBy,team-quota,Service,Team
"""
ALIASES = "entity,alias\nquota-service,配额服务\n"


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def write_pack(folder: Path, relations: str | None = RELATIONS, aliases: str | None = ALIASES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    for name, text in (("relations.csv", relations), ("aliases.csv", aliases)):
        if text is None:
            (folder / name).unlink(missing_ok=True)
        else:
            (folder / name).write_text(text, encoding="utf-8")
    (folder / "PACK.md").write_text("# Quota platform\n\n## Covers\n- edge-gateway, quota-service\n", encoding="utf-8")
    return folder


def neighbours(root: Path, label: str) -> dict[str, list[str]]:
    with KnowledgeBase(make_settings(root)) as kb:
        found = kb.entity(label)
        return {rel: sorted(n["label"] for n in ns) for rel, ns in found["neighbours"].items()} | {
            "aliases": sorted(found["aliases"])}


def checked(root: Path) -> None:
    out = kg("check", "--data-dir", root)
    assert out.exit_code == 0, out.output


def test_a_packs_tables_come_and_go_with_it(tmp_path):
    root = tmp_path / "kb"
    source = write_pack(tmp_path / "src" / "quota")
    added = kg("pack", "add", "quota", source, "--data-dir", root, "-q")
    assert added.exit_code == 0, added.output
    lines = added.stdout.splitlines()
    assert lines[0].startswith("pack 'quota' added: 2 document(s)")
    assert "  relations.csv: imported 3 rows: 4 new entities, 3 new edges, 0 already present" in lines
    assert any(line.startswith("  aliases.csv: ") for line in lines)
    assert neighbours(root, "quota-service") == {"dependsOn": ["limits-db"], "ownedBy": ["team-quota"],
                                                 "requiredBy": ["edge-gateway"], "aliases": ["配额服务"]}
    with KnowledgeBase(make_settings(root)) as kb:  # the pack's alias links questions; its tables are no documents
        assert "quota-service" in [e["label"] for e in kb.query("配额服务 的限额存在哪里？").to_json()["entities"]]
        assert sorted(Path(d.source).name for d in kb.store.documents()) == ["gateway.md", "quota.md"]
    checked(root)

    # The team's own table states one of the pack's edges too: that one stays when the pack's goes.
    own = tmp_path / "relations.csv"
    own.write_text("source,relation,target\nedge-gateway,dependsOn,quota-service\n", encoding="utf-8")
    assert kg("import", own, "--data-dir", root, "-q").exit_code == 0

    # An update: a row deleted from the pack's table, its alias table gone from the pack.
    write_pack(source, RELATIONS.replace("quota-service,ownedBy,team-quota,Service,Team\n", ""), aliases=None)
    updated = json.loads(kg("pack", "update", "quota", "--data-dir", root, "--json").stdout)
    assert [t["file"] for t in updated["tables"]] == ["relations.csv", "aliases.csv"]
    assert neighbours(root, "quota-service") == {"dependsOn": ["limits-db"], "requiredBy": ["edge-gateway"],
                                                 "aliases": []}
    checked(root)

    removed = kg("pack", "remove", "quota", "--data-dir", root)
    assert removed.exit_code == 0, removed.output
    assert "  relations.csv: " in removed.stdout
    # The entities stay; the pack's edges are gone but the one the team's table states too.
    assert neighbours(root, "quota-service") == {"requiredBy": ["edge-gateway"], "aliases": []}
    assert neighbours(root, "limits-db") == {"aliases": []}
    assert not (root / "packs" / "quota").exists()
    checked(root)


def test_a_bad_row_or_table_is_said_and_the_pack_still_comes_in(tmp_path):
    root = tmp_path / "kb"
    bad_row = RELATIONS + "quota-service,dependsOn\n"  # a row without a target
    source = write_pack(tmp_path / "src" / "quota", bad_row, aliases="name,other name\nx,y\n")
    added = kg("pack", "add", "quota", source, "--data-dir", root, "--json")
    assert added.exit_code == 0, added.output
    report = json.loads(added.stdout)
    assert report["documents"] == 2 and [t["file"] for t in report["tables"]] == ["relations.csv"]
    notes = " | ".join(report["notes"])
    assert "relations.csv: 1 row(s) not imported" in notes
    assert "aliases.csv not imported: " in notes
    assert neighbours(root, "quota-service")["dependsOn"] == ["limits-db"]
    checked(root)


def test_a_packs_table_is_known_by_its_place_in_any_data_dir(tmp_path):
    """The relation-table record names a table by its path on the machine that imported it; the store's layout
    (`store_sync.pack_owned`) must find a pack's table in the record another machine's data dir wrote."""
    from kg.relations.ledger import TableLedger, edge_key
    from ontology import KG, entity_iri
    from retrieval.store_sync import pack_owned

    edge = (entity_iri("quota-service"), KG.dependsOn, entity_iri("limits-db"))
    other = (entity_iri("quota-service"), KG.dependsOn, entity_iri("redis-cluster"))
    third = (entity_iri("quota-service"), KG.ownedBy, entity_iri("team-quota"))
    ledger = TableLedger(tmp_path)
    ledger.record("/srv/elsewhere/kb/packs/quota/relations.csv", [edge_key(edge), edge_key(other)])
    ledger.record("/srv/elsewhere/kb/packs/quota/notes.csv", [edge_key(third)])  # not a pack table's name
    ledger.record(str(tmp_path / "relations.csv"), [edge_key(other)])  # the team's table states this one too
    (tmp_path / "relations.csv").write_text("source,relation,target\n", encoding="utf-8")
    assert pack_owned(tmp_path) == {edge: "pack:quota"}


def test_an_entity_only_a_packs_table_names_routes_there_and_its_facts_cite_that_table(tmp_path):
    """billing-gw is in the pack's relations.csv and in none of its documents: the question about it goes to that
    pack (not "no basis"), reaches the section about what the table says it depends on, and the answer's fact names
    the pack's table. When the row goes, so does the routing it gave."""
    root = tmp_path / "kb"
    source = write_pack(tmp_path / "src" / "quota", RELATIONS + "billing-gw,dependsOn,quota-service,Service,Service\n")
    assert kg("pack", "add", "quota", source, "--data-dir", root, "-q").exit_code == 0
    other = tmp_path / "src" / "duty"
    other.mkdir()
    (other / "duty.md").write_text("# 排班\n\n值班表每周一更新，负责人是运维组。\n", encoding="utf-8")
    assert kg("pack", "add", "duty", other, "--data-dir", root, "-q").exit_code == 0
    question = "billing-gw 依赖什么？"

    found = kg("query", question, "--data-dir", root)
    assert found.exit_code == 0, found.output
    assert "pack: quota (its own table names billing-gw)" in found.stdout
    assert "no basis" not in found.stdout and "quota.md" in found.stdout
    answer = kg("ask", question, "--data-dir", root)
    assert "billing-gw 依赖：quota-service。[R1]" in answer.stdout
    assert "[R1] pack quota's relations.csv:5: billing-gw dependsOn quota-service" in answer.stdout

    with_row = (tmp_path / "src" / "quota" / "relations.csv").read_text(encoding="utf-8")
    write_pack(source)  # the row deleted: the entity stays, nothing states it any more
    assert kg("pack", "update", "quota", "--data-dir", root, "-q").exit_code == 0
    assert "no basis" in kg("query", question, "--data-dir", root).stdout

    # Stated again, and mentioned by a document outside the packs: the table is not the one place that names it.
    write_pack(source, with_row)
    assert kg("pack", "update", "quota", "--data-dir", root, "-q").exit_code == 0
    note = tmp_path / "notes" / "billing.md"
    note.parent.mkdir()
    note.write_text("# 计费网关\n\nbilling-gw 是计费网关，超时 5 秒。\n", encoding="utf-8")
    assert kg("ingest", note.parent, "--data-dir", root, "-q").exit_code == 0
    routed = kg("query", question, "--data-dir", root).stdout
    assert "its own table names" not in routed and "billing.md" in routed
    checked(root)


def test_a_packs_table_cannot_claim_the_teams_entity_but_the_teams_table_can(tmp_path):
    """`order-service documentedIn pack:vendor` decides where its questions are searched when the team's table says
    it; in the vendor pack's own relations.csv (someone else's work) it does not: the team's notes about order-service
    (outside every pack) would never be searched for them again."""
    root = tmp_path / "kb"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "order.md").write_text("# order-service\n\norder-service 依赖 mysql-core，超时 3 秒。\n", encoding="utf-8")
    assert kg("ingest", notes, "--data-dir", root, "-q").exit_code == 0
    vendor = tmp_path / "src" / "vendor"
    vendor.mkdir(parents=True)
    (vendor / "gw.md").write_text("# 网关\n\n厂商网关的限流阈值是 500。\n", encoding="utf-8")
    (vendor / "relations.csv").write_text("source,relation,target\norder-service,documentedIn,pack:vendor\n",
                                          encoding="utf-8")
    own = tmp_path / "relations.csv"
    own.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n", encoding="utf-8")
    assert kg("import", own, "--data-dir", root, "-q").exit_code == 0
    assert kg("pack", "add", "vendor", vendor, "--data-dir", root, "-q").exit_code == 0
    question = "order-service 的超时是多少？"

    found = kg("query", question, "--data-dir", root).stdout
    assert "documentedIn pack:vendor" not in found and "order.md" in found

    own.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n"
                   "order-service,documentedIn,pack:vendor\n", encoding="utf-8")
    assert kg("import", own, "--data-dir", root, "-q").exit_code == 0
    assert "pack: vendor (order-service documentedIn pack:vendor)" in kg("query", question, "--data-dir", root).stdout
    checked(root)


def test_a_packs_table_kept_in_excel_comes_and_goes_with_it(tmp_path):
    """A pack whose relation table is a workbook: imported with it (not indexed as a document), its rows cited by the
    row Excel shows, a deleted row's edge gone at the update, all of its edges gone with the pack."""
    from office_files import sheet_rows, write_workbook

    root = tmp_path / "kb"
    source = write_pack(tmp_path / "src" / "quota", relations=None, aliases=None)
    header = ("source", "relation", "target")
    rows = [("edge-gateway", "dependsOn", "quota-service"), ("quota-service", "dependsOn", "limits-db")]
    write_workbook(source / "relations.xlsx", [("依赖", "visible", sheet_rows(("配额平台依赖表",), header, *rows))])
    added = kg("pack", "add", "quota", source, "--data-dir", root, "--json")
    report = json.loads(added.stdout)
    assert report["documents"] == 2 and [t["file"] for t in report["tables"]] == ["relations.xlsx"], report
    assert report["tables"][0]["summary"].startswith("imported 2 rows"), report
    sources = kg("entity", "quota-service", "--data-dir", root, "--sources").stdout
    assert "limits-db (pack quota's relations.xlsx:4)" in sources, sources  # row 4: under a title and the header
    checked(root)

    write_workbook(source / "relations.xlsx", [("依赖", "visible", sheet_rows(("配额平台依赖表",), header, rows[0]))])
    assert kg("pack", "update", "quota", "--data-dir", root, "-q").exit_code == 0
    assert neighbours(root, "quota-service") == {"requiredBy": ["edge-gateway"], "aliases": []}
    checked(root)

    removed = kg("pack", "remove", "quota", "--data-dir", root)
    assert removed.exit_code == 0 and "  relations.xlsx: " in removed.stdout, removed.output
    assert neighbours(root, "quota-service") == {"aliases": []}
    checked(root)
