"""The `kg` command line through click's runner: verbs, --json shapes, exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CROSS_DOC_GOLD, CROSS_DOC_QUERY, HIT_KEYS, copy_fixture_corpus, relative_source

from kg.cli import cli

COMMANDS = {"init", "ingest", "import", "query", "entity", "stats", "serve", "demo", "eval", "export", "ontology", "mcp", "ask", "check",
            "delete", "documents", "versions", "pack", "migrate", "llm", "embed", "store"}


def kg(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


# ---------------------------------------------------------------- help


def test_help_lists_every_command_with_its_help_text():
    result = kg("--help")
    assert result.exit_code == 0
    assert set(cli.commands) == COMMANDS
    listed = result.stdout.split("Commands:", 1)[1]
    for name, command in cli.commands.items():
        assert command.help and command.help.strip(), name
        first_words = " ".join(command.help.split()[:3])
        assert f"  {name}  " in listed or f"  {name} " in listed, name
        assert first_words in " ".join(listed.split()), name


def test_every_command_appears_in_the_readme():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [name for name in cli.commands if f"kg {name}" not in readme]
    assert missing == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_has_its_own_help(name):
    result = kg(name, "--help")
    assert result.exit_code == 0
    assert result.stdout.startswith(
        f"Usage: cli {name} "
    )  # the runner names the program after the group
    assert " ".join(cli.commands[name].help.split()[:4]) in " ".join(result.stdout.split())


def test_help_does_not_import_heavy_libraries():
    script = textwrap.dedent(
        """
        import json, sys
        from kg.cli import main
        for argv in (["kg", "--help"], ["kg", "query", "--help"], ["kg", "eval", "--help"]):
            sys.argv = argv
            try:
                main()
            except SystemExit as exit:
                assert exit.code == 0, exit.code
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"spacy", "litellm", "rdflib"})
        print(json.dumps(heavy))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# ---------------------------------------------------------------- write verbs


def test_init_import_ingest_round(tmp_path):
    docs, relations = copy_fixture_corpus(tmp_path)
    data = tmp_path / "kb"

    result = kg("init", "--data-dir", data)
    assert result.exit_code == 0
    assert (
        result.stdout == f"knowledge base ready in {data} (open {data / 'graph.ttl'} in Protégé)\n"
    )
    assert (data / "graph.ttl").is_file()

    result = kg("import", relations, "--data-dir", data, "--json")
    assert result.exit_code == 0, result.output
    imported = json.loads(result.stdout)
    assert imported["kind"] == "relations"
    assert (imported["report"]["new_entities"], imported["report"]["new_edges"]) == (11, 7)
    again = json.loads(kg("import", relations, "--data-dir", data, "--json").stdout)
    assert (again["report"]["new_entities"], again["report"]["new_edges"]) == (0, 0)

    result = kg("ingest", docs, "--data-dir", data, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["added"], report["updated"], report["unchanged"]) == (9, 0, 0)
    assert report["chunks_indexed"] >= 9

    result = kg("ingest", docs, "--data-dir", data, "--quiet")
    assert result.exit_code == 0
    assert result.stdout == "nothing changed: 9 document(s) already up to date\n"

    stats = json.loads(kg("stats", "--data-dir", data, "--json").stdout)
    assert (stats["documents"], stats["entities"], stats["edges"]) == (9, 11, 7)
    assert stats["indexed_chunks"] == stats["chunks"] == report["chunks_indexed"]


def test_ingest_creates_the_knowledge_base_and_honours_kg_data_dir(tmp_path):
    docs, _ = copy_fixture_corpus(tmp_path)
    result = kg(
        "ingest", docs / "infra", "--quiet", env={"KG_DATA_DIR": str(tmp_path / "from-env")}
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("3 new, 0 updated, 0 unchanged document(s);")
    assert (tmp_path / "from-env" / "kgrag.json").is_file()


def test_a_bad_relation_row_exits_2_and_names_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("source,relation,target\na,dependsOn,b\nc,depend_on,d\n", encoding="utf-8")
    data = tmp_path / "kb"
    kg("init", "--data-dir", data)
    graph_before = (data / "graph.ttl").read_bytes()

    result = kg("import", bad, "--data-dir", data)

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "error: bad.csv: 1 bad row; nothing was imported (fix them, or use --skip-invalid to import the good rows)\n"
        "  bad.csv:3: relation 'depend_on' is not in the ontology (did you mean 'dependsOn'?)\n"
    )
    assert (data / "graph.ttl").read_bytes() == graph_before


def test_skip_invalid_imports_the_good_rows_and_reports_the_bad_ones(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("source,relation,target\na,dependsOn,b\nc,depend_on,d\n", encoding="utf-8")
    result = kg("import", bad, "--skip-invalid", "--data-dir", tmp_path / "kb")
    assert result.exit_code == 0
    assert "rejected bad.csv:3: relation 'depend_on' is not in the ontology" in result.stderr
    assert json.loads(kg("stats", "--data-dir", tmp_path / "kb", "--json").stdout)["edges"] == 1


def test_csv_only_options_on_another_file_are_a_usage_error(tmp_path):
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("备份, backup\n", encoding="utf-8")
    result = kg("import", synonyms, "--dry-run", "--data-dir", tmp_path / "kb")
    assert result.exit_code == 2
    assert (
        "--skip-invalid, --rejects and --dry-run apply to relation tables (.csv, .xlsx) only"
        in result.stderr
    )


# ---------------------------------------------------------------- read verbs (shared knowledge base)


def test_query_json_shape(kb_dir, kb_root):
    result = kg("query", CROSS_DOC_QUERY, "--data-dir", kb_dir, "--json", "-k", "5")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"query", "mode", "entities", "hits", "followup", "timings_ms", "as_of", "as_of_from", "packs_used",
                         "out_of_scope", "routing", "meaning", "graph"}
    assert (data["query"], data["mode"]) == (CROSS_DOC_QUERY, "full")
    assert {"id", "label", "surface", "start", "end"} <= set(data["entities"][0])
    assert 0 < len(data["hits"]) <= 5
    for rank, hit in enumerate(data["hits"], start=1):
        assert set(hit) == HIT_KEYS | {"version", "page", "parent"}  # + documents' keys
        assert hit["rank"] == rank
        assert isinstance(hit["score"], float) and isinstance(hit["why"], dict) and hit["why"]
        assert isinstance(hit["lines"], list) and len(hit["lines"]) == 2
    assert CROSS_DOC_GOLD in [relative_source(h["source"], kb_root) for h in data["hits"]]


def test_query_text_output_explains_each_hit(kb_dir):
    result = kg("query", CROSS_DOC_QUERY, "--data-dir", kb_dir, "-k", "10")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"query: {CROSS_DOC_QUERY}"
    assert lines[1] == "entities: order-service (订单服务)"
    assert lines[2].startswith(" 1. ")
    assert any("why: graph #" in line and "dependsOn → mysql-core" in line for line in lines)
    assert any("why: bm25 #1 (" in line for line in lines)


def test_a_pasted_page_as_the_query_is_not_echoed_whole(kb_dir):
    pasted = ("order-service 连接池 " * 2000).strip()
    result = kg("query", pasted, "--data-dir", kb_dir, "-k", "3")
    assert result.exit_code == 0
    first = result.stdout.splitlines()[0]
    assert first.startswith("query: order-service 连接池") and first.endswith(f"… ({len(pasted):,} characters)")
    assert len(first) < 400
    assert json.loads(kg("query", pasted, "--data-dir", kb_dir, "-k", "3", "--json").stdout)["query"] == pasted


def test_query_bm25_mode_and_nothing_found(kb_dir):
    data = json.loads(
        kg("query", CROSS_DOC_QUERY, "--mode", "bm25", "--data-dir", kb_dir, "--json").stdout
    )
    assert data["mode"] == "bm25" and data["entities"] == []
    assert all(set(h["why"]) == {"bm25"} for h in data["hits"])
    result = kg("query", "qwertyuiop", "--data-dir", kb_dir)
    assert result.exit_code == 0
    assert (
        result.stdout.splitlines()[-1]
        == "nothing found: no passage matches these words or entities"
    )


def test_query_on_a_missing_data_dir_is_a_clear_error(tmp_path):
    missing = tmp_path / "no-kb"
    result = kg("query", "nginx", "--data-dir", missing)
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: no knowledge base in '{missing}': run `kg init` (or `kg ingest PATH`) first, "
        "or point --data-dir / KG_DATA_DIR at an existing one\n"
    )
    assert not missing.exists()


def test_a_bad_setting_in_the_environment_is_one_line_naming_the_variable(kb_dir):
    result = kg("query", "nginx", "--data-dir", kb_dir, env={"KG_EXPANSION_HOPS": "abc", "KG_FUSION": "max"})
    assert result.exit_code == 1
    assert result.stderr == (
        "error: KG_EXPANSION_HOPS='abc': Input should be a valid integer, unable to parse string as an integer; "
        "KG_FUSION='max': String should match pattern '^(score|rrf)$' (see the README's Configuration section)\n")


def test_a_data_dir_that_cannot_be_made_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    for command in (("init",), ("ingest", tmp_path / "notes.txt")):
        result = kg(*command, "--data-dir", tmp_path / "notes.txt" / "kb")  # a file where a folder should be
        assert result.exit_code == 1
        assert result.stderr == f"error: cannot make a knowledge base in '{tmp_path / 'notes.txt' / 'kb'}': Not a directory\n"


def test_a_synonyms_file_that_is_not_text_is_an_error_not_a_traceback(tmp_path):
    assert kg("init", "--data-dir", tmp_path / "kb").exit_code == 0
    (tmp_path / "kb" / "synonyms.txt").write_bytes(b"\xff\xfe\x00\xd8")  # UTF-16's mark, then half a character
    result = kg("query", "nginx", "--data-dir", tmp_path / "kb")
    assert result.exit_code == 2
    assert result.stderr == "error: synonyms.txt: starts as UTF-16 text but is not (byte 2); save it as UTF-8\n"


def test_an_empty_query_exits_2(kb_dir):
    result = kg("query", "  ", "--data-dir", kb_dir)
    assert result.exit_code == 2
    assert result.stderr == "error: the query is empty: ask a question or give a few words\n"


def test_stats_json(kb_dir):
    result = kg("stats", "--data-dir", kb_dir, "--json")
    assert result.exit_code == 0
    stats = json.loads(result.stdout)
    assert (stats["documents"], stats["entities"], stats["edges"]) == (9, 11, 7)
    text = kg("stats", "--data-dir", kb_dir).stdout
    assert "documents: 9" in text and "entities: 11" in text


def test_entity_json_and_text(kb_dir):
    data = json.loads(kg("entity", "order-service", "--data-dir", kb_dir, "--json").stdout)
    assert data["label"] == "order-service"
    assert {rel: [n["label"] for n in ns] for rel, ns in data["neighbours"].items()} == {
        "dependsOn": ["mysql-core"],
        "runtimeDependsOn": ["inventory-service"],
        "ownedBy": ["交易团队"],
    }
    text = kg("entity", "mysql-core", "--data-dir", kb_dir).stdout.splitlines()
    assert text[0] == "mysql-core  <https://kgrag.dev/entity/mysql-core>"
    assert "  requiredBy: order-service" in text
    assert any(line.startswith("  about it: mysql-core (") for line in text)


def test_an_unknown_entity_exits_1(kb_dir):
    result = kg("entity", "no-such-thing", "--data-dir", kb_dir)
    assert result.exit_code == 1
    assert (
        result.stderr
        == "error: no entity 'no-such-thing' (give its IRI, its exact label or an alias; `kg stats` counts entities)\n"
    )


def test_ingest_of_a_missing_path_is_a_usage_error(tmp_path):
    result = kg("ingest", tmp_path / "nowhere", "--data-dir", tmp_path / "kb")
    assert result.exit_code == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "kb").exists()
