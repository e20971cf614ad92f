"""Answer quality and cost with a model in the loop (`python bench/answers.py --llm BASE_URL`): per question and per set, for no model and each model run.

Per question: the reference's key spans in the cited sentences, cited sentences supported by their passages, invented
citation numbers (removed by the check) and any that reached the user (must be 0), the no-hit answer on unanswerable
questions, rounds, wall time, model calls and prompt / generated tokens (as the server counted them). Relation
questions (bench/relation_questions.jsonl, over the demo's and ops_dev_zh's relation tables): the answer names every
entity the table relates to the asked entity along the asked relation, and each in a sentence citing a graph fact [Rn].
Each run's summary is kept in bench/RESULTS-answers-model.json under its label, so runs of different models (done at
different times: a 1.5B model on 2 CPU cores is slow) come together in one table in RESULTS-answers.md.
"""

from __future__ import annotations

import csv
import json
import os
import re
import statistics
import time
from pathlib import Path

from retrieval.eval.answers import answer_in

INVERSE = {"requiredBy": "dependsOn", "hasPart": "partOf", "hosts": "runsOn", "owns": "ownedBy", "configures": "configuredBy"}
_MARK = re.compile(r"\[(\d{1,3})\]")


def expected_entities(relations_csv: Path, entity: str, relation: str, then: str | None = None) -> list[str]:
    """What the relation table relates to `entity` along `relation` (an inverse read backwards), from the CSV itself;
    with `then`, what it relates along `then` to those (a question along two relations, bench/relation_chains.jsonl)."""
    with relations_csv.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    if relation in INVERSE:
        found = sorted({r["source"] for r in rows if r["relation"] == INVERSE[relation] and r["target"] == entity})
    else:
        found = sorted({r["target"] for r in rows if r["relation"] == relation and r["source"] == entity})
    if then is None:
        return found
    return sorted({x for reached in found for x in expected_entities(relations_csv, reached, then)})


SERVER_PID: int | None = None  # the local model server's process, when the run started one: its CPU per question


def listening_pid(base_url: str) -> int | None:
    """The process listening at a loopback base URL's port (a `kg llm serve` started apart from the bench), whose CPU
    is then the model's cost per question; None for another host, a port nobody listens on, a process of another
    user, or where there is no Linux /proc."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1") or not parts.port:
        return None
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == parts.port:  # 0A: LISTEN
                sockets.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").iterdir() if sockets else ():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in sockets for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def server_cpu_seconds() -> float | None:
    """User + system CPU seconds of the model server so far (Linux /proc), or None when there is none to read."""
    if SERVER_PID is None:
        return None
    try:
        fields = Path(f"/proc/{SERVER_PID}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ask_row(kb, question: str, llm_factory, threshold: float) -> tuple[dict, object]:
    cpu_before = server_cpu_seconds()
    started = time.perf_counter()
    answer = kb.ask(question, llm=llm_factory())
    ms = (time.perf_counter() - started) * 1e3
    cpu_after = server_cpu_seconds()
    calls = answer.llm_usage
    existing = {c.n for c in answer.citations}
    cited = [s for s in answer.sentences if s.citations or s.facts]
    row = {
        "found": answer.found, "path": answer.path, "rounds": len(answer.rounds), "ms": round(ms),
        "calls": len(calls), "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
        "completion_tokens": sum(c["completion_tokens"] for c in calls),
        "max_prompt_tokens": max((c["prompt_tokens"] for c in calls), default=0),
        "removed": len(answer.removed_citations),
        "invented_shown": sum(1 for n in _MARK.findall(answer.answer) if int(n) not in existing),
        "cited_sentences": len(cited), "supported": sum(1 for s in cited if not s.flagged and s.support >= threshold),
    }
    if cpu_before is not None and cpu_after is not None:
        row["server_cpu_s"] = round(cpu_after - cpu_before, 2)
    return row, answer


def run_questions(kb, questions, llm_factory, label: str, log=print) -> list[dict]:
    rows = []
    threshold = kb.settings.citation_support
    for q in questions:
        row, answer = ask_row(kb, q.question, llm_factory, threshold)
        cited = "\n".join(s.text for s in answer.sentences if s.citations or s.facts)
        row.update(id=q.id, unanswerable=q.unanswerable)
        if q.answer is not None and not q.unanswerable:
            row["in_cited"] = bool(answer.found and answer_in(q.answer, cited))
            # Where the answer sends the reader: the passages (and graph facts) its sentences cite. A short answer
            # ("30s") that leaves out the reference's names can be right and still miss `in_cited`; this says
            # whether the evidence it points at holds the reference.
            numbers = {n for s in answer.sentences for n in s.citations}
            keys = {k for s in answer.sentences for k in s.facts}
            evidence = [c.text for c in answer.citations if c.n in numbers]
            evidence += [f.text() for f in answer.facts if f.key in keys]
            row["in_cited_passages"] = bool(answer.found and answer_in(q.answer, "\n".join(evidence)))
        row["answer"] = answer.answer
        rows.append(row)
        log(f"{label} {q.id}: {row['path']} found={row['found']} in_cited={row.get('in_cited')} "
            f"in_cited_passages={row.get('in_cited_passages')} {row['ms']} ms "
            f"calls={row['calls']} prompt={row['prompt_tokens']} gen={row['completion_tokens']} rounds={row['rounds']} "
            f"invented_shown={row['invented_shown']} removed={row['removed']} | {answer.path_reason[:160]} | "
            f"{' '.join(answer.answer.split())[:200]}")
    return rows


def run_relations(kb, questions: list[dict], relations_csv: Path, llm_factory, label: str, log=print) -> list[dict]:
    rows = []
    threshold = kb.settings.citation_support
    lines = relations_csv.read_text(encoding="utf-8-sig").splitlines()
    for q in questions:
        want = expected_entities(relations_csv, q["entity"], q["relation"], q.get("then"))
        # the row of each expected entity names it and the entity it was reached from (the question's, or one step on)
        ends = expected_entities(relations_csv, q["entity"], q["relation"]) if q.get("then") else [q["entity"]]
        row, answer = ask_row(kb, q["question"], llm_factory, threshold)
        text = answer.answer.lower()
        by_fact = {s_key for s in answer.sentences for s_key in s.facts}
        facts = [f for f in answer.facts if f.key in by_fact]
        named = [e for e in want if e.lower() in text]
        cited = [e for e in want if any(e in f.others for f in facts)
                 and any(e.lower() in s.text.lower() and s.facts for s in answer.sentences)]
        # ... and the fact's source gives the line of the table's row that relates the two (`relations.csv:N`)
        on_row = [e for e in cited if any(_names_row(f, e, end, lines) for f in facts for end in ends)]
        row.update(id=q["id"], expected=want, named=len(named), cited_to_row=len(cited), cited_to_line=len(on_row),
                   cited_all_lines=bool(want) and len(on_row) == len(want),
                   names_all=bool(want) and len(named) == len(want), cited_all=bool(want) and len(cited) == len(want))
        rows.append(row)
        log(f"{label} {q['id']}: {len(named)}/{len(want)} named, {len(cited)} cited to a row, {row['ms']} ms")
    return rows


def _names_row(fact, other: str, entity: str, lines: list[str]) -> bool:
    """Does `fact` cite, for its triple with `other`, the line of a row naming `other` and `entity`?"""
    for triple, origin in zip(fact.triples, fact.origins, strict=False):
        # "Region Balancer dependsOn Region Migration": a label may have spaces, so its end is matched, not a word
        match = re.fullmatch(r"(?:.*, )?relations\.csv:(\d+)", origin)
        if (triple.startswith(other + " ") or triple.endswith(" " + other)) and match and int(match.group(1)) <= len(lines):
            cells = next(csv.reader([lines[int(match.group(1)) - 1]]))
            if {other, entity} <= set(cells[:3]):
                return True
    return False


def _pct(num: int, den: int):
    return round(100 * num / den, 1) if den else None


def summarize(rows: list[dict]) -> dict:
    answerable = [r for r in rows if not r.get("unanswerable") and "in_cited" in r]
    unanswerable = [r for r in rows if r.get("unanswerable")]
    relations = [r for r in rows if "names_all" in r]
    ms = sorted(r["ms"] for r in rows) or [0]
    cited = sum(r["cited_sentences"] for r in rows)
    return {
        "questions": len(rows),
        "in_cited_pct": _pct(sum(r["in_cited"] for r in answerable), len(answerable)),
        "in_cited_passages_pct": _pct(sum(r.get("in_cited_passages", False) for r in answerable), len(answerable)),
        "supported_pct": _pct(sum(r["supported"] for r in rows), cited),
        "invented_removed": sum(r["removed"] for r in rows),
        "invented_shown": sum(r["invented_shown"] for r in rows),
        "nohit_unanswerable": f"{sum(not r['found'] for r in unanswerable)}/{len(unanswerable)}" if unanswerable else "-",
        "relations_all_named": f"{sum(r['names_all'] for r in relations)}/{len(relations)}" if relations else "-",
        "relations_all_cited": f"{sum(r['cited_all'] for r in relations)}/{len(relations)}" if relations else "-",
        "relations_all_lines": (f"{sum(r.get('cited_all_lines', False) for r in relations)}/{len(relations)}"
                                if relations else "-"),
        "llm_path": sum(r["path"] == "llm" for r in rows),
        "max_rounds": max((r["rounds"] for r in rows), default=0),
        "calls_per_q": round(statistics.mean(r["calls"] for r in rows), 2) if rows else 0,
        "max_calls": max((r["calls"] for r in rows), default=0),
        "prompt_tokens_per_q": round(statistics.mean(r["prompt_tokens"] for r in rows)) if rows else 0,
        "max_prompt_tokens_per_call": max((r["max_prompt_tokens"] for r in rows), default=0),
        "completion_tokens_per_q": round(statistics.mean(r["completion_tokens"] for r in rows)) if rows else 0,
        "p50_s": round(statistics.median(ms) / 1e3, 1), "max_s": round(ms[-1] / 1e3, 1),
        "server_cpu_p50_s": round(statistics.median(cpus), 1) if (cpus := [r["server_cpu_s"] for r in rows if "server_cpu_s" in r]) else "-",
    }


COLUMNS = [("questions", "q"), ("in_cited_pct", "ref in cited %"), ("in_cited_passages_pct", "ref in cited passages %"),
           ("supported_pct", "cited supported %"),
           ("invented_removed", "invented (removed)"), ("invented_shown", "invented shown"),
           ("nohit_unanswerable", "no-hit unanswerable"), ("relations_all_named", "relations: all named"),
           ("relations_all_cited", "relations: all cited to a fact"), ("relations_all_lines", "… to the row's line"), ("llm_path", "llm path"), ("max_rounds", "max rounds"),
           ("calls_per_q", "calls/q"), ("max_calls", "max calls"), ("prompt_tokens_per_q", "prompt tok/q"),
           ("max_prompt_tokens_per_call", "max prompt tok/call"), ("completion_tokens_per_q", "gen tok/q"),
           ("p50_s", "p50 s"), ("max_s", "max s"), ("server_cpu_p50_s", "server CPU s/q p50")]


def table(results: dict) -> str:
    """results: {label: {part: summary}} -> one Markdown table."""
    head = "| model | part | " + " | ".join(h for _, h in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for label, parts in results.items():
        for part, s in parts.items():
            if part.startswith("_") or not s.get("questions"):  # a run of the relation questions alone
                continue
            lines.append(f"| {label} | {part} | " + " | ".join(str(s.get(k, "-")) for k, _ in COLUMNS) + " |")
    return "\n".join(lines)


def save(json_path: Path, label: str, parts: dict, note: str) -> dict:
    results = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    # A run over some sets adds to what an earlier run of the same label measured on others.
    earlier = results.get(label, {})
    notes = [n for n in (earlier.get("_note"), note) if n] if set(parts) - set(earlier) else [note]
    results[label] = {**{k: v for k, v in earlier.items() if k != "_note"}, **parts, "_note": "; then ".join(dict.fromkeys(notes))}
    json_path.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return results
