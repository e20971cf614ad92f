"""Chunks in, the text index written by this kgrag's recipe out: the write path's index step (`index_chunks`), the recipe record, and writing the index again (every chunk, the chunks holding newly taught words) or merging its segments.

The write path (retrieval/write_path.py) indexes what an ingest adds through `index_chunks`; `kg check
--repair` (retrieval/consistency.py), `kg migrate` and an import that taught jieba new words come here
to write the index again. Each runs inside `KnowledgeBase.writing()`; what writes the index again
commits it before it records what it did (the recipe, the taught words), so a crash in between only
repeats the work.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from retrieval.catalog import commit
from retrieval.index.analysis import (
    normalize_text,
    taught_words,
    traditional_characters,
    vocabulary_version,
)
from retrieval.ingest.readers import path_words
from retrieval.types import Chunk

__all__ = [
    "INDEX_RECIPE", "RECIPES", "RECIPE_STATE", "holds_traditional", "index_chunks", "index_recipe", "optimize_index", "reindex_all",
    "stamp_recipe", "sync_index_words",
]

Progress = Callable[[int], None]

# What the write path puts in the text index, numbered, so that an index written by an older
# kgrag is noticed (`kg check`) and rebuilt (`kg check --repair`) instead of silently searched
# with less: 1 = a chunk's heading path; 2 = the heading path and its file's path words; 3 = those, with traditional
# Chinese characters read as simplified and, in text written in them, Taiwan's words with the mainland's beside them
# (`fold_traditional`, `_regional_words`): text without traditional characters is indexed as by recipe 2.
INDEX_RECIPE = 3
RECIPE_STATE = "index_recipe"
RECIPES = {1: "heading paths only", 2: "heading paths and the words of each file's path",
           3: "heading paths and the words of each file's path, traditional Chinese characters read as simplified and "
              "Taiwan's words with the mainland's"}
_FOLDED_STATE = "recipe_2_has_traditional"  # kb_state: a recipe-2 catalog was looked through and holds some


def index_chunks(kb, chunks: Sequence[Chunk], sources: dict[str, str] | None = None) -> int:
    """Chunks into the text index with the words of their documents' file paths (`sources`: doc id ->
    source, read from the catalog when not given). Every write to the index goes through here, so a
    chunk indexed again (repair, new words) is indexed as it was the first time."""
    if sources is None:
        sources = kb.store.doc_sources([c.doc_id for c in chunks])
    return kb.index.add_chunks(chunks, {doc: path_words(source) for doc, source in sources.items()})


def index_recipe(kb) -> int:
    """The recipe the text index was written with: recorded at the first write of a data dir;
    a data dir from before the record holds chunks written by recipe 1."""
    recorded = commit.get_state(kb.store.db, RECIPE_STATE)
    if recorded is not None:
        return int(recorded)
    return 1 if kb.store.has_chunks() else INDEX_RECIPE


def stamp_recipe(kb) -> None:
    """At the start of a write: an empty data dir is written by this recipe from its first chunk; an index of recipe 2
    is one of recipe 3 when its catalog holds no traditional Chinese character (reading them as simplified changes
    none of its terms), looked at once (the first write after the upgrade)."""
    db = kb.store.db
    recorded = commit.get_state(db, RECIPE_STATE)
    if recorded is None and not kb.store.has_chunks():
        with kb.store.transaction():
            commit.set_state(db, RECIPE_STATE, str(INDEX_RECIPE))
    elif recorded == "2" and commit.get_state(db, _FOLDED_STATE) is None:
        with kb.store.transaction():
            commit.set_state(db, *((_FOLDED_STATE, "1") if holds_traditional(db) else (RECIPE_STATE, "3")))


def holds_traditional(db) -> bool:
    """Whether any chunk's text or heading path, or any document's title or path, has a traditional Chinese character
    that `fold_traditional` reads as a simplified one."""
    pattern = traditional_characters()
    if pattern is None:
        return False
    return any(pattern.search(row[0] or "") or pattern.search(row[1] or "") for sql in (
        "SELECT text, section FROM chunks", "SELECT title, source FROM documents") for row in db.execute(sql))


def reindex_all(kb, progress: Progress | None = None) -> int:
    """Every chunk of the catalog (the truth) into a text index written anew by this recipe (it
    replaces the old one at its commit, orphans gone); the recipe is recorded after the index
    commits, so a crash in between only repeats the work."""
    kb.index.upgrade_schema()
    chunks, done = kb.store.iter_chunks(), 0
    while batch := list(itertools.islice(chunks, 2000)):
        done += index_chunks(kb, batch)
        if progress:
            progress(len(batch))
    kb.index.prepare(replace_all=True)  # the whole index written while queries read the old one
    with kb.readers.exclusive():
        kb.index.commit(replace_all=True)
    kb.commits.mark("reindex", "index")
    with kb.store.transaction():
        commit.set_state(kb.store.db, RECIPE_STATE, str(INDEX_RECIPE))
    return done


def optimize_index(kb) -> int:
    """Merge the text index's segments into one (`kg check --repair --optimize`): the segments before, 0 for
    a backend without segments. Queries go on reading the old segments while the new one is written."""
    merge = getattr(kb.index, "optimize", None)
    if merge is None:
        return 0
    before = merge()
    if before > 1:
        with kb.readers.exclusive():
            kb.index.commit()
        kb.commits.mark("optimize", "index")
    return before


def sync_index_words(kb) -> int:
    """Re-index the chunks that contain a word jieba was taught after they were indexed.

    A label added after its documents were ingested (`kg import relations.csv` after `kg
    ingest`) cuts the question's 熔断降级 whole while the index holds 熔断 + 降级, so BM25 never
    matched it. Chunks are found with one Aho-Corasick pass; nothing else is re-indexed. The
    index commits before the words are recorded, so a crash in between only repeats the work.
    """
    view = kb.graph.view
    kb.linker  # noqa: B018 - teaches jieba this knowledge base's labels and synonyms
    # The view itself, not its id: a rebuilt view may reuse a freed one's address.
    state = (vocabulary_version(), view, len(kb.synonyms))
    last = kb._index_words_synced
    if last is not None and last[1] is view and last[::2] == state[::2]:
        return 0  # nothing taught and no graph change since the last sync: skip the work per ingest
    current = taught_words([s for s, _ in view.surfaces()] + kb.synonyms.words())
    new = current - kb.store.index_words()
    kb._index_words_synced = state
    if not new:
        return 0
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for word in new:
        automaton.add_word(word, word)
    automaton.make_automaton()
    stale = [c for c in kb.store.iter_chunks()
             if next(automaton.iter(normalize_text(f"{c.title}\n{c.section}\n{c.text}")), None) is not None]
    if stale:
        index_chunks(kb, stale)
        kb.index.prepare()
        with kb.readers.exclusive():
            kb.index.commit()
        kb.commits.mark("reindex", "index")
    with kb.store.transaction():
        kb.store.add_index_words(new)
    return len(stale)
