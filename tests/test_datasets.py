"""Reading benchmark folders: answer fields never get through, malformed lines are named exactly."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from kg.errors import InputError, QuestionSetError
from retrieval.eval.datasets import (
    Passage,
    Question,
    load_dataset,
    read_corpus,
    read_questions,
)

REPO_ROOT = Path(__file__).resolve().parents[1]

CORPUS_LINES = [
    '{"id": "p1", "title": "Charles Mathew", "text": "Charles Mathew was an actor."}',
    '{"id": "p2", "title": "James Charles Mathew", "text": "He was buried in Cork."}',
    '{"id": "p3", "title": "长城", "text": "长城是中国古代的军事防御工程。"}',
]
QUESTION_LINE = (
    '{"id": "q1", "question": "Where was the place of burial of Charles Mathew\'s father?", '
    '"answer": "Cork", "type": "compositional", "gold_ids": ["p1", "p2"], '
    '"gold_titles": ["Charles Mathew", "James Charles Mathew"], '
    '"supporting_facts": [["Charles Mathew", 2]], "evidences": [["a", "father", "b"]]}'
)


def _write(path: Path, lines: list[str], bom: bool = False) -> Path:
    data = "\n".join(lines) + "\n"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode("utf-8"))
    return path


def _bench(tmp_path: Path, questions: list[str], corpus: list[str] = CORPUS_LINES) -> Path:
    root = tmp_path / "tiny_dev"
    root.mkdir()
    _write(root / "corpus.jsonl", corpus)
    _write(root / "questions.jsonl", questions)
    return root


def _message(path: Path, lines: list[str]) -> str:
    with pytest.raises(QuestionSetError) as info:
        read_questions(_write(path, lines))
    message = str(info.value)
    assert str(path.parent) not in message  # file name only, never the full path
    return message


# --- what gets through ---------------------------------------------------------------------


def test_question_keeps_only_four_fields():
    assert [f.name for f in dataclasses.fields(Question)] == ["id", "question", "type", "gold_ids"]


def test_answer_fields_are_dropped(tmp_path):
    (question,) = read_questions(_write(tmp_path / "questions.jsonl", [QUESTION_LINE]))
    assert question == Question(
        id="q1",
        question="Where was the place of burial of Charles Mathew's father?",
        type="compositional",
        gold_ids=("p1", "p2"),
    )
    assert "Cork" not in repr(question)
    assert not hasattr(question, "answer") and not hasattr(question, "gold_titles")


def test_type_defaults_to_all_and_blank_lines_are_skipped(tmp_path):
    lines = ["", '{"id": "q1", "question": "Who?", "gold_ids": ["p1"]}', "   ", ""]
    (question,) = read_questions(_write(tmp_path / "questions.jsonl", lines))
    assert question.type == "all"


def test_byte_order_mark_is_handled(tmp_path):
    questions = read_questions(_write(tmp_path / "questions.jsonl", [QUESTION_LINE], bom=True))
    assert [q.id for q in questions] == ["q1"]
    passages = read_corpus(_write(tmp_path / "corpus.jsonl", CORPUS_LINES, bom=True))
    assert passages[0] == Passage("p1", "Charles Mathew", "Charles Mathew was an actor.")
    assert passages[2].title == "长城"


def test_crlf_line_ends(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_bytes((QUESTION_LINE + "\r\n").encode("utf-8"))
    assert read_questions(path)[0].gold_ids == ("p1", "p2")


def test_repeated_gold_id_counts_once(tmp_path):
    lines = ['{"id": "q1", "question": "Who?", "gold_ids": ["p1", "p2", "p1"]}']
    assert read_questions(_write(tmp_path / "questions.jsonl", lines))[0].gold_ids == ("p1", "p2")


def test_corpus_title_may_be_absent(tmp_path):
    (passage,) = read_corpus(_write(tmp_path / "corpus.jsonl", ['{"id": "n1", "text": "新闻"}']))
    assert passage == Passage("n1", "", "新闻")


# --- malformed lines: exact messages --------------------------------------------------------


def test_bad_json_names_line_and_column(tmp_path):
    lines = [QUESTION_LINE, '{"id": "q2" "question": "Who?", "gold_ids": ["p1"]}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        "questions.jsonl:2: not valid JSON (Expecting ',' delimiter at column 13) — "
        "each line must be one JSON object"
    )


def test_missing_gold_ids_counts_blank_lines(tmp_path):
    lines = [QUESTION_LINE, "", '{"id": "q3", "question": "Who?", "answer": "x"}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:3: missing "gold_ids" (a list of passage or document ids)'
    )


def test_empty_gold_list(tmp_path):
    lines = ['{"id": "q1", "question": "Who?", "gold_ids": []}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:1: "gold_ids" is empty — list at least one passage or document id'
    )


def test_gold_ids_not_a_list(tmp_path):
    lines = ['{"id": "q1", "question": "Who?", "gold_ids": "p1"}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:1: "gold_ids" must be a list of passage or document ids, '
        'got the string "p1"'
    )


def test_gold_id_not_a_string(tmp_path):
    lines = ['{"id": "q1", "question": "Who?", "gold_ids": ["p1", 7]}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:1: "gold_ids" item 2 must be a non-empty string (a passage id), '
        "got the number 7"
    )


def test_duplicate_question_id(tmp_path):
    lines = [QUESTION_LINE, '{"id": "q2", "question": "Who?", "gold_ids": ["p1"]}', QUESTION_LINE]
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:3: duplicate id "q1" (first on line 1) — ids must be unique'
    )


def test_missing_question_text(tmp_path):
    lines = ['{"id": "q1", "gold_ids": ["p1"]}']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        'questions.jsonl:1: missing "question" (the question text, a string)'
    )


def test_line_that_is_not_an_object(tmp_path):
    lines = ['["q1", "Who?"]']
    assert _message(tmp_path / "questions.jsonl", lines) == (
        "questions.jsonl:1: expected a JSON object, got a list — each line must be one JSON object"
    )


def test_not_utf8(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_bytes(QUESTION_LINE.encode() + b"\n" + '{"id": "é"}'.encode("latin-1") + b"\n")
    with pytest.raises(QuestionSetError) as info:
        read_questions(path)
    assert str(info.value) == (
        "questions.jsonl:2: not UTF-8 (byte 0xe9 at column 9) — save the file as UTF-8"
    )


def test_corpus_duplicate_and_missing_text(tmp_path):
    with pytest.raises(QuestionSetError) as info:
        read_corpus(_write(tmp_path / "corpus.jsonl", [*CORPUS_LINES, CORPUS_LINES[1]]))
    assert str(info.value) == (
        'corpus.jsonl:4: duplicate id "p2" (first on line 2) — ids must be unique'
    )
    with pytest.raises(QuestionSetError) as info:
        read_corpus(_write(tmp_path / "corpus.jsonl", ['{"id": "p1", "title": "T"}']))
    assert str(info.value) == 'corpus.jsonl:1: missing "text" (the passage text, a string)'


def test_question_set_error_is_an_input_error():
    assert issubclass(QuestionSetError, InputError)
    assert QuestionSetError("x").status == 400


# --- whole folders --------------------------------------------------------------------------


def test_load_dataset(tmp_path):
    root = _bench(
        tmp_path, [QUESTION_LINE, '{"id": "q2", "question": "长城?", "gold_ids": ["p3"]}']
    )
    dataset = load_dataset(root)
    assert dataset.name == "tiny_dev"
    assert dataset.root == root
    assert [p.id for p in dataset.passages] == ["p1", "p2", "p3"]
    assert [q.id for q in dataset.questions] == ["q1", "q2"]
    assert dataset.relations_path is None and dataset.ontology_path is None

    assert [q.id for q in load_dataset(root, limit=1).questions] == ["q1"]
    assert len(load_dataset(root, limit=1).passages) == 3

    (root / "relations.csv").write_text("source,relation,target\n", "utf-8")
    (root / "onto.ttl").write_text("", "utf-8")
    dataset = load_dataset(root)
    assert dataset.relations_path == root / "relations.csv"
    assert dataset.ontology_path == root / "onto.ttl"


def test_two_ontologies_are_ambiguous(tmp_path):
    root = _bench(tmp_path, [QUESTION_LINE])
    (root / "a.ttl").write_text("", "utf-8")
    (root / "b.owl").write_text("", "utf-8")
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert str(info.value) == (
        "tiny_dev: more than one ontology file (a.ttl, b.owl) — keep one .ttl/.owl/.rdf file"
    )


def test_gold_id_must_be_in_the_corpus(tmp_path):
    root = _bench(tmp_path, [QUESTION_LINE, '{"id": "q2", "question": "?", "gold_ids": ["p9"]}'])
    with pytest.raises(QuestionSetError) as info:
        load_dataset(root)
    assert str(info.value) == (
        'questions.jsonl:2: gold id "p9" is not in corpus.jsonl — '
        "gold_ids must name passage ids of this folder's corpus"
    )


def test_drop_empty_gold_skips_and_records(tmp_path):
    root = _bench(tmp_path, ['{"id": "q0", "question": "?", "gold_ids": []}', QUESTION_LINE])
    with pytest.raises(QuestionSetError, match='"gold_ids" is empty'):
        load_dataset(root)
    dataset = load_dataset(root, drop_empty_gold=True)
    assert [q.id for q in dataset.questions] == ["q1"]
    assert dataset.dropped_question_ids == ["q0"]


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(InputError) as info:
        load_dataset(tmp_path / "nope")
    assert str(info.value).startswith("benchmark folder not found: ")
    assert type(info.value) is InputError

    (tmp_path / "half").mkdir()
    _write(tmp_path / "half" / "corpus.jsonl", CORPUS_LINES)
    with pytest.raises(InputError) as info:
        load_dataset(tmp_path / "half")
    assert str(info.value) == (
        "half: no questions.jsonl — a benchmark folder needs corpus.jsonl "
        "(one passage a line) and questions.jsonl (one question a line)"
    )


def test_limit_must_be_positive(tmp_path):
    root = _bench(tmp_path, [QUESTION_LINE])
    with pytest.raises(InputError, match="limit must be a positive number of questions, got 0"):
        load_dataset(root, limit=0)


# --- the shared benchmark sets, when present --------------------------------------------------

# (passages, questions) from the shared bench README; gitlab has one empty-gold line to skip.
SHARED_SETS = {
    "2wiki_dev": (3306, 464),
    "musique_train100": (1890, 100),
    "hotpotqa_train100": (994, 100),
    "gitlab_handbook_dev": (835, 68),
    "domainrag_zh_dev": (2556, 93),
    "rgb_zh_dev": (10585, 213),
}
SHARED_BENCH = Path(os.environ.get("KGRAG_BENCH", REPO_ROOT.parent / "shared" / "bench"))


@pytest.mark.parametrize("name", sorted(SHARED_SETS))
def test_shared_sets_load(name):
    root = SHARED_BENCH / name
    if not (root / "questions.jsonl").is_file():
        pytest.skip(f"shared benchmark {name} not here (set KGRAG_BENCH to its folder)")
    dataset = load_dataset(root, drop_empty_gold=True)
    assert (len(dataset.passages), len(dataset.questions)) == SHARED_SETS[name]
    has_relations = name in {"2wiki_dev", "musique_train100", "hotpotqa_train100"}
    assert (dataset.relations_path is not None) == has_relations
