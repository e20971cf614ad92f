"""The alias table (`entity,alias`): `kg import aliases.csv` and `KnowledgeBase.import_file`, good and bad tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.cli import cli
from kg.errors import InputError, RelationTableError
from kg.settings import Settings
from retrieval.pipeline import KnowledgeBase

DATA = Path(__file__).parent / "data" / "anchors"


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def kb(tmp_path):
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True)
    kb.import_file(DATA / "relations.csv")
    yield kb
    kb.close()


def test_aliases_become_names_the_linker_finds_and_a_second_import_adds_nothing(kb):
    result = kb.import_file(DATA / "aliases.csv")
    assert result["kind"] == "aliases"
    assert result["summary"] == "3 alias rows: added 3 aliases, 0 already known"
    assert "缓存服务" in kb.entity("cache-service")["aliases"]
    assert kb.entity("缓存服务")["label"] == "cache-service"
    assert [e["label"] for e in kb.query("缓存服务 的容量", k=1).entities] == ["cache-service"]
    again = kb.import_file(DATA / "aliases.csv")
    assert again["summary"] == "3 alias rows: added 0 aliases, 3 already known"


def test_tables_saved_with_old_mac_line_ends_import(kb, tmp_path):
    # Excel's "CSV (Macintosh)" ends every line with a lone \r: both kinds of table read it as the \n files above.
    aliases = tmp_path / "aliases.csv"
    aliases.write_bytes((DATA / "aliases.csv").read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
    assert kb.import_file(aliases)["summary"] == "3 alias rows: added 3 aliases, 0 already known"
    assert kb.entity("缓存服务")["label"] == "cache-service"
    relations = tmp_path / "more.csv"
    relations.write_bytes(b"source,relation,target\rcache-service,dependsOn,disk-pool\r")
    assert kb.import_file(relations)["report"]["new_edges"] == 1


def test_an_alias_or_a_synonym_with_a_terminal_escape_is_refused(kb, tmp_path):
    aliases = tmp_path / "aliases.csv"
    aliases.write_text("entity,alias\ncache-service,\x1b[8m缓存\ncache-service,缓存服务\n", encoding="utf-8")
    with pytest.raises(RelationTableError) as err:
        kb.import_file(aliases)
    assert err.value.problems == ["aliases.csv:2: alias holds a terminal escape (ESC): a name is one line of plain text; "
                                  "remove it"]
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("缓存, cache\n\x1b]0;x\x07熔断, circuit breaker\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        kb.import_file(synonyms)
    assert str(err.value) == ("synonyms.txt:2: a term holds a terminal escape (ESC): a name is one line of plain text; "
                              "remove it")


def test_a_bad_alias_table_imports_nothing_and_names_every_bad_line(kb, tmp_path):
    before = (tmp_path / "kb" / "graph.ttl").read_bytes()
    with pytest.raises(RelationTableError) as err:
        kb.import_file(DATA / "aliases_bad.csv")
    assert str(err.value).splitlines()[0] == (
        "aliases_bad.csv: 3 bad row(s); nothing was imported (fix them, or use --skip-invalid to import the good rows)"
    )
    assert err.value.problems == [
        "aliases_bad.csv:2: no entity 'cache-servce' in the graph (did you mean 'cache-service'?)",
        "aliases_bad.csv:3: empty alias cell",
        "aliases_bad.csv:4: expected 2 cells (entity,alias), got 3 (quote a cell that contains a comma)",
    ]
    assert (tmp_path / "kb" / "graph.ttl").read_bytes() == before


def test_skip_invalid_imports_the_good_rows(kb, tmp_path):
    table = tmp_path / "aliases.csv"
    table.write_text("entity,alias\ndumpling,导出工具\nnobody,某人\n", encoding="utf-8")
    result = kb.import_file(table, skip_invalid=True)
    assert result["report"]["new_aliases"] == 1
    assert result["report"]["rejected"] == ["aliases.csv:3: no entity 'nobody' in the graph (import the relation table that names it first)"]
    assert "导出工具" in kb.entity("dumpling")["aliases"]


def test_kg_import_aliases_csv_from_the_command_line(tmp_path):
    data = tmp_path / "kb"
    assert kg("import", DATA / "relations.csv", "--data-dir", data).exit_code == 0
    result = kg("import", DATA / "aliases.csv", "--data-dir", data, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["report"]["new_aliases"] == 3
    shown = kg("entity", "导出工具", "--data-dir", data, "--json")
    assert json.loads(shown.stdout)["label"] == "dumpling"


def test_kg_import_of_a_bad_alias_table_exits_2_with_the_lines(tmp_path):
    data = tmp_path / "kb"
    kg("import", DATA / "relations.csv", "--data-dir", data)
    result = kg("import", DATA / "aliases_bad.csv", "--data-dir", data)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: aliases_bad.csv: 3 bad row(s); nothing was imported (fix them, or use --skip-invalid to import the good rows)",
        "  aliases_bad.csv:2: no entity 'cache-servce' in the graph (did you mean 'cache-service'?)",
        "  aliases_bad.csv:3: empty alias cell",
        "  aliases_bad.csv:4: expected 2 cells (entity,alias), got 3 (quote a cell that contains a comma)",
    ]


def test_an_alias_table_needs_its_header(kb, tmp_path):
    table = tmp_path / "names.csv"
    table.write_text("entity,alias,extra\ndumpling,导出工具,x\n", encoding="utf-8")
    # Not an alias header: read as a relation table, which says what it needs.
    with pytest.raises(RelationTableError):
        kb.import_file(table)


def test_an_alias_names_one_entity_as_in_the_relation_table(kb, tmp_path):
    """An alias another entity already has (its label or an alias), or one two rows give to two entities, is a bad row
    (the relation table's rule): a name linking two entities would send every question saying it to both."""
    kb.import_file(DATA / "aliases.csv")
    table = tmp_path / "more.csv"
    table.write_text("entity,alias\ndumpling,缓存服务\ndumpling,cache-service\ncache.ttl,TTL\ncache.capacity,TTL\n"
                     "cache.ttl,过期时间\n", encoding="utf-8")
    with pytest.raises(RelationTableError) as caught:
        kb.import_file(table)
    assert caught.value.problems == [
        "more.csv:2: alias '缓存服务' already names another entity in the graph, 'cache-service'; an alias can name "
        "only one entity",
        "more.csv:3: alias 'cache-service' already names another entity in the graph, 'cache-service'; an alias can "
        "name only one entity",
        "more.csv:5: alias 'TTL' is already given to 'cache.ttl' (line 4); an alias can name only one entity"]
    assert kb.import_file(table, skip_invalid=True)["summary"].startswith("5 alias rows: added 2 aliases")
    assert kb.entity("缓存服务")["label"] == "cache-service" and "TTL" in kb.entity("cache.ttl")["aliases"]

    # The table moves its own alias from one entity to another: not a clash with what it gave before.
    moved = tmp_path / "moved.csv"
    moved.write_text("entity,alias\ncache.ttl,有效期\n", encoding="utf-8")
    kb.import_file(moved)
    moved.write_text("entity,alias\ncache.capacity,有效期\n", encoding="utf-8")
    kb.import_file(moved)
    assert kb.entity("有效期")["label"] == "cache.capacity" and "有效期" not in kb.entity("cache.ttl")["aliases"]
