"""Knowledge packs end to end: PACK.md cards, the hand-edited REGISTRY.md, `kg pack add` from a folder and from a
local git repository, routing with and without an LLM (litellm's mock_response), the two-pack cap, out-of-scope
answers, round two, and `packs_used` in the CLI and the API."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURE_DOCS, FIXTURE_RELATIONS, kg_in_new_process, make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.cli import cli
from kg.errors import InputError, NotFoundError
from ontology import entity_iri
from retrieval.packs import NO_BASIS, next_pack, parse_card
from retrieval.packs.registry import parse_registry
from retrieval.pipeline import KnowledgeBase

OPS_CARD = """\
---
id: ops
title: 订单平台运维笔记
covers: [order-service, payment-service, redis-cluster, mysql-core, nginx]
does not cover: [移动端 App]
key terms: [order-service, redis-cluster, 订单服务]
---
"""
GARDEN_CARD = """\
# Garden notes

## Covers
- growing tomatoes
- compost

## Does not cover
- lawn mower repair

## Key terms
tomato, compost, seedling

## Language
en
"""
GARDEN_DOCS = {
    "tomatoes.md": "# Tomatoes\n\nTomato seedlings need 8 hours of sun. Stake tomato plants when they reach 30 cm.\n",
    "compost.md": "# Compost\n\nTurn the compost pile weekly; keep it as damp as a wrung-out sponge.\n",
}
BREAD_DOCS = {"sourdough.md": "# Sourdough\n\nFeed the sourdough starter with equal weights of flour and water.\n"}


def write_pack(folder: Path, docs: dict[str, str], card: str | None = None) -> Path:
    folder.mkdir(parents=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    if card is not None:
        (folder / "PACK.md").write_text(card, encoding="utf-8")
    return folder


def ops_pack(root: Path) -> Path:
    folder = root / "src" / "ops"
    shutil.copytree(FIXTURE_DOCS, folder)
    (folder / "PACK.md").write_text(OPS_CARD, encoding="utf-8")
    return folder


@pytest.fixture
def packed(tmp_path):
    """A knowledge base with two packs: the fixture corpus as `ops` (with its relation table) and `garden`."""
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    kb.import_file(FIXTURE_RELATIONS)
    kb.packs.add("ops", str(ops_pack(tmp_path)))
    kb.packs.add("garden", str(write_pack(tmp_path / "src" / "garden", GARDEN_DOCS, GARDEN_CARD)))
    try:
        yield kb
    finally:
        kb.close()


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# ---------------------------------------------------------------- cards and the registry


def test_a_card_with_yaml_aliases_is_refused_not_expanded():
    card = '---\nid: x\nbase: &b ["lol", "lol", "lol"]\ncovers: [*b, *b, *b]\n---\n# X\n'
    with pytest.raises(InputError, match=r"PACK\.md:4: .*an alias \(\*name\)"):
        parse_card(card, default_id="x")


def test_a_card_reads_from_front_matter_or_sections():
    front = parse_card(OPS_CARD, default_id="x")
    assert (front.id, front.title) == ("ops", "订单平台运维笔记")
    assert front.covers == ("order-service", "payment-service", "redis-cluster", "mysql-core", "nginx")
    assert front.does_not_cover == ("移动端 App",)
    sections = parse_card(GARDEN_CARD, default_id="garden")
    assert sections.to_json() == {
        "id": "garden", "title": "Garden notes", "covers": ["growing tomatoes", "compost"],
        "does_not_cover": ["lawn mower repair"], "entry_files": [], "key_terms": ["tomato", "compost", "seedling"],
        "language": "en",
    }


def test_a_bad_card_says_where_and_how_to_fix_it():
    with pytest.raises(InputError, match=r"PACK.md:3: the front matter is not valid YAML"):
        parse_card("---\nid: a\ncovers: [unclosed\n---\n", default_id="a")
    with pytest.raises(InputError, match="'no way' is not a usable pack id"):
        parse_card("---\nid: no way\n---\n", default_id="a")


def test_the_registry_is_a_table_a_person_edits():
    rows = parse_registry(textwrap.dedent("""\
        # Our packs

        Some prose the parser must leave alone.

        | Pack | When | Examples |
        |---|:--|---|
        | garden | growing vegetables | when do I stake tomatoes?; 番茄怎么搭架 <br> compost smell |
        | `ops` | order platform incidents | |

        | not | a registry |
        |---|---|
        | x | y |
        """))
    assert [(r.pack, r.intent, r.examples, r.line) for r in rows] == [
        ("garden", "growing vegetables", ("when do I stake tomatoes?", "番茄怎么搭架", "compost smell"), 7),
        ("ops", "order platform incidents", (), 8),
    ]


# ---------------------------------------------------------------- kg pack add / list / update / remove


def test_pack_add_copies_ingests_registers_and_types_the_pack(packed, tmp_path):
    root = tmp_path / "kb"
    assert (root / "packs" / "garden" / "tomatoes.md").is_file()
    db = sqlite3.connect(root / "kb.sqlite")
    by_pack = dict(db.execute("SELECT pack, COUNT(*) FROM documents GROUP BY pack"))
    assert by_pack == {"ops": 9, "garden": 2}  # the card itself is not a document
    assert db.execute("SELECT COUNT(*) FROM documents WHERE source LIKE '%PACK.md'").fetchone()[0] == 0
    entity = packed.entity("pack:garden")
    assert entity["id"] == str(entity_iri("pack:garden")) and entity["types"] == ["Pack"]
    registry = (root / "REGISTRY.md").read_text(encoding="utf-8")
    assert "| garden | Garden notes: growing tomatoes; compost |  |" in registry
    listed = json.loads(kg("pack", "list", "--data-dir", root, "--json").stdout)
    assert [(p["id"], p["documents"], p["registry_rows"]) for p in listed["packs"]] == [("garden", 2, 1), ("ops", 9, 1)]
    with pytest.raises(InputError, match="pack 'garden' already exists .*`kg pack update garden`"):
        packed.packs.add("garden", str(tmp_path / "src" / "garden"))


def test_a_failed_add_leaves_nothing_behind(tmp_path):
    empty = write_pack(tmp_path / "empty", {}, "# Nothing here\n")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        with pytest.raises(InputError, match="the pack 'empty' has no Markdown or text files besides PACK.md"):
            kb.packs.add("empty", str(empty))
        assert not (tmp_path / "kb" / "packs" / "empty").exists()
        assert kb.packs.ids() == [] and not (tmp_path / "kb" / "REGISTRY.md").exists()
        with pytest.raises(InputError, match="nowhere: no such folder"):
            kb.packs.add("x", str(tmp_path / "nowhere"))


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_pack_add_clones_a_git_repository_and_update_pulls_it(tmp_path):
    repo = write_pack(tmp_path / "repo", BREAD_DOCS, "# Bread\n\n## Covers\n- sourdough\n")
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "first", cwd=repo)
    root = tmp_path / "kb"
    out = kg("pack", "add", "bread", repo.as_uri(), "--data-dir", root, "-q")
    assert out.exit_code == 0, out.output
    assert out.stdout.startswith("pack 'bread' added: 1 document(s)")
    assert (root / "packs" / "bread" / ".git").is_dir()
    (repo / "levain.md").write_text("# Levain\n\nA levain is a portion of starter built for one bake.\n", encoding="utf-8")
    (repo / "sourdough.md").unlink()
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "second", cwd=repo)
    updated = json.loads(kg("pack", "update", "bread", "--data-dir", root, "--json").stdout)
    assert (updated["documents"], updated["removed_documents"], updated["ingest"]["added"]) == (1, 1, 1)
    with KnowledgeBase(make_settings(root)) as kb:
        assert [Path(d.source).name for d in kb.store.documents()] == ["levain.md"]
        hits = kb.query("levain starter").hits
        assert [h.title for h in hits] == ["Levain"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_a_git_packs_credentials_are_never_printed_listed_or_served(tmp_path):
    """`https://oauth2:TOKEN@host/pack.git` is how a private GitLab pack is cloned without a credential helper. The
    token was printed by `kg pack add` and `kg pack list`, returned by GET /packs (and drawn on the page), and put in
    error messages; it is shown as `***` everywhere now, and kept only where `kg pack update` needs it (packs.json,
    and git's own .git/config of the clone, both in the data dir). Cloned over real smart HTTP (git http-backend)."""
    from git_http import git_http_server

    repo = write_pack(tmp_path / "served" / "bread.git", BREAD_DOCS, "# Bread\n\n## Covers\n- sourdough\n")
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "first", cwd=repo)
    root, secret = tmp_path / "kb", "glpat-SECRET123"
    with git_http_server(tmp_path / "served") as port:
        url = f"http://oauth2:{secret}@127.0.0.1:{port}/bread.git"
        shown = f"http://***@127.0.0.1:{port}/bread.git"
        added = kg("pack", "add", "bread", url, "--data-dir", root, "--json")
        assert added.exit_code == 0, added.output
        assert json.loads(added.stdout)["origin"] == shown
        listed = kg("pack", "list", "--data-dir", root)
        assert f"from: {shown}" in listed.stdout
        again = kg("pack", "add", "bread", url, "--data-dir", root)
        assert again.exit_code == 2 and f"already exists (from {shown})" in again.output
        updated = kg("pack", "update", "bread", "--data-dir", root, "--json")
        assert updated.exit_code == 0 and json.loads(updated.stdout)["origin"] == shown
        with TestClient(create_app(make_settings(root))) as client:
            served = client.get("/packs")
        assert served.status_code == 200 and shown in served.text
        missing = kg("pack", "add", "other", f"http://oauth2:{secret}@127.0.0.1:{port}/nothing.git", "--data-dir", root)
        assert missing.exit_code == 2 and "git could not fetch http://***@127.0.0.1" in missing.output
        for out in (added.output, listed.output, again.output, updated.output, served.text, missing.output):
            assert secret not in out
    assert json.loads((root / "packs.json").read_text(encoding="utf-8"))["bread"]["origin"] == url  # for update


def test_pack_remove_drops_documents_registry_rows_and_the_entity(packed, tmp_path):
    report = packed.packs.remove("garden")
    assert report.removed_documents == 2
    assert "garden" not in (tmp_path / "kb" / "REGISTRY.md").read_text(encoding="utf-8")
    assert not (tmp_path / "kb" / "packs" / "garden").exists()
    assert packed.packs.ids() == ["ops"]
    gone = packed.query("tomato seedlings sun")  # no document holds these words any more
    assert gone.hits == [] and all(u["id"] == "ops" for u in gone.packs_used)
    with pytest.raises(NotFoundError, match="no entity 'pack:garden'"):
        packed.entity("pack:garden")
    with pytest.raises(NotFoundError, match=r"no pack 'garden' \(known: ops; `kg pack list`\)"):
        packed.packs.remove("garden")


def test_pack_add_and_remove_are_each_one_journaled_write(packed):
    # Each runs inside KnowledgeBase.add_pack / remove_pack (@writes): the ingest, the entity and
    # the documents' pack all land in one commit (one generation), not one per inner write.
    from retrieval.catalog import commit

    before = commit.generation(packed.store.db)
    packed.packs.add("bread", str(write_pack(packed.root.parent / "src" / "bread", BREAD_DOCS)))
    assert commit.generation(packed.store.db) == before + 1
    assert not commit.pending_journal(packed.root)
    packed.packs.remove("bread")
    assert commit.generation(packed.store.db) == before + 2
    assert [Path(d.source).name for d in packed.store.documents() if "sourdough" in d.source] == []


# ---------------------------------------------------------------- routing without an LLM


def test_routing_picks_the_pack_of_the_question_and_searches_only_there(packed):
    result = packed.query("When should I stake tomato seedlings?")
    assert [u["id"] for u in result.packs_used] == ["garden"]
    assert "card covers 'tomato'" in result.packs_used[0]["why"]
    assert {Path(h.source).parent.name for h in result.hits} == {"garden"}
    zh = packed.query("订单服务依赖哪些组件？")
    assert zh.packs_used[0]["id"] == "ops" and "entity order-service is documented here" in zh.packs_used[0]["why"]
    assert all("/packs/ops/" in h.source.replace("\\", "/") for h in zh.hits)


def test_forcing_a_pack_and_the_two_pack_cap(packed):
    forced = packed.query("redis-cluster", packs=["garden"])
    assert forced.packs_used == [{"id": "garden", "why": "asked for (--pack)"}] and forced.hits == []
    with pytest.raises(NotFoundError, match="no pack 'lawn' \\(known: garden, ops\\)"):
        packed.query("x", packs=["lawn"])
    packed.packs.add("bread", str(write_pack(packed.root.parent / "src" / "bread", BREAD_DOCS)))
    with pytest.raises(InputError, match="at most 2 packs are searched in one round, got 3"):
        packed.query("x", packs=["garden", "ops", "bread"])


def test_a_hand_edited_registry_row_routes_questions(packed):
    question = "番茄什么时候搭架子？"  # Chinese: no word of the English garden pack matches it
    before = packed.query(question)
    assert "garden" not in [u["id"] for u in before.packs_used]
    registry = packed.root / "REGISTRY.md"
    text = registry.read_text(encoding="utf-8")
    registry.write_text(text + "| garden | 种番茄、堆肥 | 番茄什么时候搭架子？; 堆肥多久翻一次？ |\n", encoding="utf-8")
    after = packed.query(question)
    assert after.packs_used[0]["id"] == "garden"
    assert after.packs_used[0]["why"].startswith(f"registry row (line {len(text.splitlines()) + 1}) '种番茄、堆肥'")
    # Saved again by an editor on a Chinese Windows (GBK): read the same.
    registry.write_bytes(registry.read_text(encoding="utf-8").encode("gbk"))
    assert packed.query(question).packs_used[0]["id"] == "garden"


def test_out_of_scope_questions_get_no_basis_and_no_hits(packed):
    excluded = packed.query("How do I do lawn mower repair?")
    assert excluded.hits == [] and excluded.packs_used == []
    assert excluded.out_of_scope == f"{NO_BASIS}: pack 'garden' does not cover 'lawn mower repair'"
    unknown = packed.query("What is the boiling point of ethanol?")
    assert unknown.hits == [] and unknown.out_of_scope.startswith(NO_BASIS + ": ")
    in_scope = packed.query("How often do I turn the compost pile?")
    assert in_scope.out_of_scope is None and in_scope.hits[0].title == "Compost"


def test_round_two_opens_one_other_pack(packed):
    from retrieval.packs.scope import route_query

    routing, _ = route_query(packed, "When should I stake tomato seedlings?", [], [("tomato", 1.0), ("seedl", 1.0)],
                             [], None)
    assert routing.pack_ids() == ["garden"]
    second = next_pack(routing, "When should I stake tomato seedlings?")
    assert second.pack_ids() == ["garden", "ops"] and second.round == 2
    assert second.chosen[1].why.startswith("round two: round one was not enough")
    assert next_pack(second) is None  # two rounds at most
    assert len(packed.query("stake tomatoes", packs=second.pack_ids()).packs_used) == 2


def test_a_knowledge_base_without_packs_is_unchanged(kb):
    data = kb.query("订单服务依赖哪些组件？").to_json()
    assert (data["packs_used"], data["out_of_scope"], data["routing"]) == ([], None, None)
    assert data["hits"]


# ---------------------------------------------------------------- routing with an LLM (litellm mock_response)


def _llm_kb(packed, reply: str) -> KnowledgeBase:
    packed.close()
    settings = make_settings(packed.root, llm_model="openai/router-test", llm_mock_response=reply, route_with_model=True)
    return KnowledgeBase(settings)


def test_an_llm_chooses_among_the_registry_rows(packed):
    reply = json.dumps({"packs": [{"id": "ops", "why": "tomatoes are not its topic"}]})
    with _llm_kb(packed, reply) as kb:
        result = kb.query("When should I stake tomato seedlings?")
    assert result.packs_used == [{"id": "ops", "why": "chosen by the model: tomatoes are not its topic"}]
    assert result.routing["path"] == "llm"


def test_an_llm_that_asks_for_more_packs_still_gets_two(packed):
    packed.packs.add("bread", str(write_pack(packed.root.parent / "src" / "bread", BREAD_DOCS)))
    reply = json.dumps({"packs": [{"id": p, "why": "all of them"} for p in ("bread", "garden", "ops", "nope")]})
    with _llm_kb(packed, reply) as kb:
        result = kb.query("sourdough")
    assert [u["id"] for u in result.packs_used] == ["bread", "garden"]
    assert result.routing["note"] == "the model asked for 3 packs; searched the first 2; ignored unknown pack(s) nope"


def test_an_llm_that_finds_no_pack_answers_out_of_scope_and_one_that_also_names_a_pack_searches_it(packed):
    # The rules send this question to the garden pack; only the model's verdict makes it out of scope.
    question = "When should I stake tomato seedlings?"
    with _llm_kb(packed, json.dumps({"packs": [], "out_of_scope": True})) as kb:
        refused = kb.query(question)
    assert refused.hits == [] and refused.packs_used == []
    assert refused.out_of_scope == f"{NO_BASIS}: the model found no pack for it"
    assert refused.routing["path"] == "llm"
    # A reply that names a pack is searched even when it also says out of scope: a pack to check beats a refusal.
    with _llm_kb(packed, json.dumps({"packs": [{"id": "garden", "why": "seedlings"}], "out_of_scope": True})) as kb:
        searched = kb.query(question)
    assert searched.out_of_scope is None and searched.hits
    assert [u["id"] for u in searched.packs_used] == ["garden"]


def test_an_unusable_llm_reply_falls_back_to_the_rules(packed):
    with _llm_kb(packed, "I think the garden one?") as kb:
        result = kb.query("When should I stake tomato seedlings?")
    assert [u["id"] for u in result.packs_used] == ["garden"]
    assert result.routing["path"] == "rules"
    assert result.routing["note"] == "the model gave no usable choice: the rules decided"


# ---------------------------------------------------------------- packs_used in the CLI and the API


def test_packs_used_in_cli_output(packed, tmp_path):
    packed.close()
    root = str(tmp_path / "kb")
    data = json.loads(kg_in_new_process("query", "When should I stake tomato seedlings?", "--data-dir", root, "--json",
                                        cwd=tmp_path))
    assert [u["id"] for u in data["packs_used"]] == ["garden"]
    text = kg_in_new_process("query", "redis-cluster 宕机", "--pack", "ops", "--data-dir", root, cwd=tmp_path)
    assert "pack: ops (asked for (--pack))" in text.splitlines()
    oos = kg_in_new_process("query", "How do I do lawn mower repair?", "--data-dir", root, cwd=tmp_path)
    assert f"{NO_BASIS}: pack 'garden' does not cover 'lawn mower repair'" in oos.splitlines()


def test_the_fallback_is_one_line_that_names_no_pack_as_chosen(tmp_path):
    """Not sure which pack: every pack and the documents outside packs are searched. The CLI said so a pack at a time
    ("pack: vendor (… searched every pack)"), which read as if the vendor's pack had been chosen for a hit from the
    user's own notes."""
    vendor = write_pack(tmp_path / "vendor", {"gw.md": "# vendor-gw configuration\n\nThe key `upstream.timeout_ms` defaults to 1500.\n"},
                        "---\nid: vendor\ntitle: Vendor gateway manual\ncovers:\n  - vendor-gw configuration\n---\n# Vendor gateway manual\n")
    notes = write_pack(tmp_path / "notes", {"backup.md": "# MySQL 备份策略\n\nmysql-core 每天 02:00 做全量备份，保留 7 天。\n"})
    root = ["--data-dir", tmp_path / "kb"]
    assert kg("ingest", notes, *root).exit_code == 0 and kg("pack", "add", "vendor", vendor, *root).exit_code == 0
    lines = kg("query", "mysql-core 备份保留几天", *root).stdout.splitlines()
    assert lines[2] == ("packs: none chosen (not sure where to look: the best pack scores 0.00); searched every pack (vendor) "
                        "and the documents outside them")
    assert not any(line.startswith("pack: ") for line in lines) and "MySQL 备份策略" in lines[3]
    assert "pack: vendor (" in kg("query", "vendor-gw upstream timeout", *root).stdout  # a pack chosen: as before


def test_a_question_no_pack_has_a_basis_for_searches_the_documents_outside_packs(tmp_path):
    """Adding a vendor's pack must not hide the user's own notes: a question whose common words the small knowledge
    base never uses (happens, too, high) is out of scope for every pack, and was answered "no basis" with no hits
    although the notes hold the answer. Without documents outside packs it stays out of scope."""
    vendor = write_pack(tmp_path / "vendor", {"gw.md": "# vendor-gw configuration\n\nThe key `upstream.timeout_ms` defaults to 1500.\n"},
                        "---\nid: vendor\ntitle: Vendor gateway manual\ncovers:\n  - vendor-gw configuration\n---\n# Vendor gateway manual\n")
    notes = write_pack(tmp_path / "notes", {"runbook.md": "# Payment gateway runbook\n\n## Timeouts\n\nIf p99 latency to the bank "
                                                          "exceeds 3 s, page the payments team and switch to the backup channel.\n"})
    question = "What happens if latency to the bank is too high?"
    alone = ["--data-dir", tmp_path / "alone"]
    assert kg("pack", "add", "vendor", vendor, *alone).exit_code == 0
    record = json.loads(kg("query", question, "--json", *alone).stdout)
    assert record["out_of_scope"].startswith(NO_BASIS) and record["hits"] == [] and not record["routing"]["outside"]

    root = ["--data-dir", tmp_path / "kb"]
    assert kg("ingest", notes, *root).exit_code == 0 and kg("pack", "add", "vendor", vendor, *root).exit_code == 0
    record = json.loads(kg("query", question, "--json", *root).stdout)
    assert record["out_of_scope"] is None and record["packs_used"] == [] and record["routing"]["outside"] is True
    assert record["routing"]["note"].startswith("the words any pack holds carry only")
    assert {h["title"] for h in record["hits"]} == {"Payment gateway runbook"}  # the pack's documents are not searched
    lines = kg("query", question, *root).stdout.splitlines()
    assert lines[2].startswith("packs: none has a basis for it (the words any pack holds carry only") and lines[2].endswith(
        "); searched the documents outside packs")
    asked = json.loads(kg("ask", question, "--json", "--offline", *root).stdout)
    assert asked["citations"] and asked["citations"][0]["title"] == "Payment gateway runbook"


def test_packs_used_in_api_output(packed, tmp_path):
    packed.close()
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        routed = client.post("/query", json={"query": "When should I stake tomato seedlings?"}).json()
        assert [u["id"] for u in routed["packs_used"]] == ["garden"] and routed["routing"]["path"] == "rules"
        forced = client.post("/query", json={"query": "redis-cluster", "packs": ["ops"]}).json()
        assert forced["packs_used"] == [{"id": "ops", "why": "asked for (--pack)"}]
        too_many = client.post("/query", json={"query": "x", "packs": ["a", "b", "c"]})
        assert too_many.status_code == 422
        unknown = client.post("/query", json={"query": "x", "packs": ["lawn"]})
        assert unknown.status_code == 404 and "no pack 'lawn'" in unknown.json()["error"]["message"]


def test_expansion_inside_packs_counts_only_their_mentions(packed):
    from retrieval.catalog.packs import PackStore

    order = str(entity_iri("order-service"))
    assert packed.store.mention_count(order) > 0
    garden, ops = PackStore(packed.store, ["garden"]), PackStore(packed.store, ["ops"])
    assert garden.mention_count(order) == 0 and garden.chunks_mentioning(order) == [] and garden.about_chunks(order) == []
    assert ops.mention_count(order) == packed.store.mention_count(order)
    assert garden.stats()["chunks"] == 2 and ops.stats()["chunks"] == packed.store.stats()["chunks"] - 2


def test_registry_writes_keep_what_a_person_wrote(tmp_path):
    from retrieval.packs import Registry

    path = tmp_path / "REGISTRY.md"
    path.write_text("# Ours\n\nKeep this line.\n\n| pack | intent |\n|---|---|\n| a | first |\n\nTrailing notes.\n",
                    encoding="utf-8")
    registry = Registry(tmp_path)
    assert registry.add_row("b", "second | with a pipe", ("q1", "q2")) is True
    assert registry.add_row("b", "again") is False  # one row per pack from `kg pack add`; more are the person's
    assert path.read_text(encoding="utf-8") == (
        "# Ours\n\nKeep this line.\n\n| pack | intent |\n|---|---|\n| a | first |\n"
        "| b | second \\| with a pipe | q1; q2 |\n\nTrailing notes.\n")
    assert [(r.pack, r.intent) for r in registry.rows] == [("a", "first"), ("b", "second | with a pipe")]
    assert registry.remove_pack("a") == 1
    assert "| a | first |" not in path.read_text(encoding="utf-8") and "Trailing notes." in path.read_text(encoding="utf-8")


def test_a_relation_table_can_point_an_entity_at_a_pack(packed, tmp_path):
    table = tmp_path / "documented.csv"
    table.write_text("source,relation,target\nnginx,documentedIn,pack:garden\n", encoding="utf-8")
    report = packed.import_file(table)
    assert report["report"]["new_entities"] == 0  # pack:garden is the pack's own entity, not a new one
    neighbours = packed.entity("nginx")["neighbours"]
    assert neighbours["documentedIn"] == [{"id": str(entity_iri("pack:garden")), "label": "pack:garden", "asserted": True}]
    result = packed.query("nginx 的超时怎么配置？")
    garden = [u for u in result.packs_used if u["id"] == "garden"]
    assert garden == [{"id": "garden", "why": "nginx documentedIn pack:garden"}]  # next to ops, whose documents say so
