"""Benchmark folder (corpus.jsonl, questions.jsonl, optional relations.csv / ontology) in -> a `Dataset` of `Passage`s and answer-free `Question`s out.

The folder contract is the one of the shared benchmark sets (see their README):

    corpus.jsonl      one passage a line: {"id", "title", "text", "doc"?}
    questions.jsonl   one question a line: {"id", "question", "type", "gold_ids", ...}
    relations.csv     optional relation table (source,relation,target)
    aliases.csv       optional alias table (entity,alias)
    *.ttl|*.owl|*.rdf optional ontology

Question lines carry answer fields (`answer`, `gold_titles`, `supporting_facts`,
`evidences`, ...). Only `id`, `question`, `type` and `gold_ids` are kept: everything else is
dropped while reading, so no answer can leak into the system under test.

Both readers are strict: a malformed line raises `QuestionSetError` naming the file (not
its full path), the line number and what to fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg.errors import InputError, QuestionSetError

__all__ = [
    "Dataset",
    "Passage",
    "Question",
    "load_dataset",
    "read_corpus",
    "read_questions",
]

CORPUS_FILE = "corpus.jsonl"
QUESTIONS_FILE = "questions.jsonl"
RELATIONS_FILE = "relations.csv"
ALIASES_FILE = "aliases.csv"
ONTOLOGY_SUFFIXES = (".ttl", ".owl", ".rdf")
DEFAULT_TYPE = "all"


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    doc: str = ""  # the document this passage is a section of ("" = the passage is a document)


@dataclass(frozen=True)
class Question:
    # Deliberately only these four fields: the gold ids are for scoring, the rest of a
    # question line (answers, supporting facts, gold titles) must never reach retrieval.
    id: str
    question: str
    type: str
    gold_ids: tuple[str, ...]


@dataclass
class Dataset:
    name: str
    root: Path
    passages: list[Passage]
    questions: list[Question]
    relations_path: Path | None = None
    aliases_path: Path | None = None
    ontology_path: Path | None = None
    # Ids of questions left out because their gold list was empty (only with drop_empty_gold).
    dropped_question_ids: list[str] = field(default_factory=list)


def read_corpus(path: Path | str) -> list[Passage]:
    """Read corpus.jsonl: one `{"id", "title", "text"}` object a line; `title` may be absent."""
    path = Path(path)
    passages: list[Passage] = []
    first_line: dict[str, int] = {}
    for lineno, obj in _json_lines(path):
        where = f"{path.name}:{lineno}"
        pid = _required_string(obj, "id", where, "the passage id")
        text = obj.get("text")
        if not isinstance(text, str):
            raise QuestionSetError(
                f'{where}: missing "text" (the passage text, a string)'
                if text is None
                else f'{where}: "text" must be a string, got {_json_type(text)}'
            )
        title = obj.get("title", "")
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise QuestionSetError(f'{where}: "title" must be a string, got {_json_type(title)}')
        doc = obj.get("doc") or ""
        if not isinstance(doc, str):
            raise QuestionSetError(f'{where}: "doc" must be a string (the document the passage belongs to), got {_json_type(doc)}')
        _check_unique(pid, lineno, first_line, where)
        passages.append(Passage(id=pid, title=title, text=text, doc=doc))
    return passages


def read_questions(path: Path | str, *, drop_empty_gold: bool = False) -> list[Question]:
    """Read questions.jsonl, keeping only id, question, type (default "all") and gold_ids.

    With `drop_empty_gold`, a question whose `gold_ids` is an empty list is skipped instead
    of being an error (one shared set has such a line; its SOURCE.md says to filter them).
    """
    numbered, _ = _read_numbered_questions(Path(path), drop_empty_gold=drop_empty_gold)
    return [q for _, q in numbered]


def load_dataset(
    root: Path | str, limit: int | None = None, *, drop_empty_gold: bool = False
) -> Dataset:
    """Load a benchmark folder; `limit` keeps the first N questions (all passages stay)."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(
            f"benchmark folder not found: {root} — pass a folder holding "
            f"{CORPUS_FILE} and {QUESTIONS_FILE}"
        )
    for needed in (CORPUS_FILE, QUESTIONS_FILE):
        if not (root / needed).is_file():
            raise InputError(
                f"{root.name}: no {needed} — a benchmark folder needs {CORPUS_FILE} "
                f"(one passage a line) and {QUESTIONS_FILE} (one question a line)"
            )
    if limit is not None and limit < 1:
        raise InputError(f"limit must be a positive number of questions, got {limit}")

    passages = read_corpus(root / CORPUS_FILE)
    known = {p.id for p in passages}
    numbered, dropped = _read_numbered_questions(
        root / QUESTIONS_FILE, drop_empty_gold=drop_empty_gold
    )
    # A gold id that is not in the corpus can never be retrieved and would silently lower
    # every recall number, so it is an error, not a zero.
    for lineno, q in numbered:
        for gid in q.gold_ids:
            if gid not in known:
                raise QuestionSetError(
                    f'{QUESTIONS_FILE}:{lineno}: gold id "{gid}" is not in {CORPUS_FILE} — '
                    "gold_ids must name passage ids of this folder's corpus"
                )
    questions = [q for _, q in numbered]
    if limit is not None:
        questions = questions[:limit]

    relations = root / RELATIONS_FILE
    return Dataset(
        name=root.name,
        root=root,
        passages=passages,
        questions=questions,
        relations_path=relations if relations.is_file() else None,
        aliases_path=root / ALIASES_FILE if (root / ALIASES_FILE).is_file() else None,
        ontology_path=_find_ontology(root),
        dropped_question_ids=dropped,
    )


def _read_numbered_questions(
    path: Path, *, drop_empty_gold: bool
) -> tuple[list[tuple[int, Question]], list[str]]:
    """Return ((line number, question) for each kept line, ids dropped for an empty gold list)."""
    out: list[tuple[int, Question]] = []
    dropped: list[str] = []
    first_line: dict[str, int] = {}
    for lineno, obj in _json_lines(path):
        where = f"{path.name}:{lineno}"
        qid = _required_string(obj, "id", where, "the question id")
        text = _required_string(obj, "question", where, "the question text")
        qtype = obj.get("type", DEFAULT_TYPE)
        if qtype is None:
            qtype = DEFAULT_TYPE
        if not isinstance(qtype, str) or not qtype.strip():
            raise QuestionSetError(
                f'{where}: "type" must be a non-empty string (or left out), got {_json_type(qtype)}'
            )
        gold = _gold_ids(obj, where)
        _check_unique(qid, lineno, first_line, where)
        if not gold:
            if drop_empty_gold:
                dropped.append(qid)
                continue
            raise QuestionSetError(
                f'{where}: "gold_ids" is empty — list at least one passage or document id'
            )
        out.append((lineno, Question(id=qid, question=text, type=qtype, gold_ids=gold)))
    return out, dropped


def _gold_ids(obj: dict[str, Any], where: str) -> tuple[str, ...]:
    if "gold_ids" not in obj:
        raise QuestionSetError(f'{where}: missing "gold_ids" (a list of passage or document ids)')
    gold = obj["gold_ids"]
    if not isinstance(gold, list):
        raise QuestionSetError(
            f'{where}: "gold_ids" must be a list of passage or document ids, got {_json_type(gold)}'
        )
    for i, gid in enumerate(gold):
        if not isinstance(gid, str) or not gid:
            raise QuestionSetError(
                f'{where}: "gold_ids" item {i + 1} must be a non-empty string (a passage id), '
                f"got {_json_type(gid)}"
            )
    # Order kept, repeats removed: a gold passage listed twice must not count twice in R@k.
    return tuple(dict.fromkeys(gold))


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; UTF-8 with or without a BOM."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path.name} not found in {path.parent.name or '.'}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # Split on bytes so an encoding error can still be reported with its line number.
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise QuestionSetError(
                f"{path.name}:{lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}) — save the file as UTF-8"
            ) from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionSetError(
                f"{path.name}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno}) — "
                "each line must be one JSON object"
            ) from None
        if not isinstance(obj, dict):
            raise QuestionSetError(
                f"{path.name}:{lineno}: expected a JSON object, got {_json_type(obj)} — "
                "each line must be one JSON object"
            )
        yield lineno, obj


def _required_string(obj: dict[str, Any], key: str, where: str, what: str) -> str:
    if key not in obj:
        raise QuestionSetError(f'{where}: missing "{key}" ({what}, a string)')
    value = obj[key]
    if not isinstance(value, str) or not value.strip():
        raise QuestionSetError(
            f'{where}: "{key}" must be a non-empty string ({what}), got {_json_type(value)}'
        )
    return value


def _check_unique(item_id: str, lineno: int, first_line: dict[str, int], where: str) -> None:
    if item_id in first_line:
        raise QuestionSetError(
            f'{where}: duplicate id "{item_id}" (first on line {first_line[item_id]}) — '
            "ids must be unique"
        )
    first_line[item_id] = lineno


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else f'the string "{value}"'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _find_ontology(root: Path) -> Path | None:
    found = sorted(
        p for p in root.iterdir() if p.is_file() and p.suffix.lower() in ONTOLOGY_SUFFIXES
    )
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise InputError(
            f"{root.name}: more than one ontology file ({names}) — keep one .ttl/.owl/.rdf file"
        )
    return found[0] if found else None
