"""Pack routing by a real model: llama.cpp's server and SmolLM2-135M on 127.0.0.1 (tests/local_llm.py), reached as a
user configures it (KG_LLM_MODEL=openai/…, KG_LLM_BASE_URL, no key). SmolLM2 is a plumbing model: the assertions are
on mechanics (the model is asked, its reply parses, it names a pack that exists), never on whether it chose well."""

from __future__ import annotations

import pytest
from conftest import make_settings
from local_llm import local_llm  # noqa: F401 - the session fixture

CARD = "---\nid: {id}\ntitle: {title}\ncovers:\n  - {covers}\n---\n# {title}\n"


@pytest.fixture(scope="module")
def two_packs(tmp_path_factory):
    from retrieval.pipeline import KnowledgeBase

    root = tmp_path_factory.mktemp("packs-real")
    for pack, title, text in (("vendor", "Vendor gateway manual", "The key `upstream.timeout_ms` defaults to 1500."),
                              ("garden", "Garden notes", "Stake tomato seedlings when they are 30 cm tall.")):
        folder = root / "src" / pack
        folder.mkdir(parents=True)
        (folder / "PACK.md").write_text(CARD.format(id=pack, title=title, covers=title.lower()), encoding="utf-8")
        (folder / "notes.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
        with KnowledgeBase(make_settings(root / "kb"), create=True) as kb:
            kb.packs.add(pack, str(folder))
    return root / "kb"


def test_a_local_server_without_a_key_routes_the_question(two_packs, local_llm, monkeypatch):  # noqa: F811
    """The router asked litellm without a key, which the OpenAI client refuses before any request: with
    KG_LLM_MODEL set to a local server, routing never reached the model and the rules decided every time."""
    from retrieval.answer.llm import load_litellm
    from retrieval.packs.llm import choose_packs
    from retrieval.packs.scope import llm_router
    from retrieval.pipeline import KnowledgeBase

    litellm, asked = load_litellm(), []
    real = litellm.completion
    monkeypatch.setattr(litellm, "completion", lambda **kw: asked.append(kw) or real(**kw))  # the real call, recorded

    settings = make_settings(two_packs, llm_model="openai/smollm2", llm_base_url=local_llm.base_url, llm_timeout=300,
                             route_with_model=True)
    assert llm_router(make_settings(two_packs, llm_model="openai/smollm2", llm_base_url=local_llm.base_url)) is None  # opt-in
    router = llm_router(settings)
    assert router is not None and router.api_key == "not-needed"
    with KnowledgeBase(settings) as kb:
        result = kb.query("What is the default of upstream.timeout_ms?")
        routing = result.routing
        assert routing["path"] == "llm", routing["note"]  # asked, and its reply (JSON of the schema) parsed
        assert {p["id"] for p in routing["packs_used"]} <= {"vendor", "garden"}
        assert all(p["why"].startswith("chosen by the model") for p in routing["packs_used"])
        chosen = choose_packs(router, "When do I stake tomatoes?", kb.packs.cards(), kb.packs.registry.rows, {})
    assert chosen is not None and chosen.path == "llm" and 1 <= len(chosen.chosen) <= 2
    # Each request bounded and schema-shaped: asked with json_object alone, SmolLM2 wrote `{"id": "vendor;title;title;…`
    # to its context limit, on every routed query.
    assert len(asked) == 2 and all(kw["max_tokens"] <= 200 for kw in asked)
    assert all(kw["response_format"]["json_schema"]["schema"]["properties"]["packs"]["items"]["properties"]["id"]["enum"]
               == ["garden", "vendor"] for kw in asked)
