"""Answering: `kg ask` (a cited answer, streamed on a terminal) and the answer half of `kg eval --answers`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kg.cli.base import Progress, cli, data_dir_option, echo_json, json_option, open_kb

__all__ = ["eval_answers", "print_answer"]


@cli.command()
@click.argument("question")
@click.option("-k", type=int, default=None, help="Passages numbered and given to the answer (default 6, KG_ANSWER_PASSAGES).")
@click.option("--mode", type=click.Choice(["full", "bm25", "graph"]), default="full", show_default=True,
              help="full = text + graph; bm25 = text only; graph = graph only.")
@click.option("--offline", is_flag=True, help="Do not call the model even when KG_LLM_MODEL is set (rules path).")
@data_dir_option
@json_option
def ask(question: str, k: int | None, mode: str, offline: bool, data_dir: Path | None, as_json: bool) -> None:
    """Answer a question from the knowledge base, every sentence cited [n].

    \b
    With KG_LLM_MODEL set, a model judges whether the passages suffice (at most
    two rounds of search) and writes the answer; without one, or when it is down,
    the answer is made of the passages' best sentences. Citations are checked
    after generation: numbers that name no passage are removed, weakly supported
    sentences are flagged (!). Nothing found: "知识库中暂无相关信息" /
    "No relevant information in the knowledge base".
    """
    with open_kb(data_dir) as kb:
        llm = None if offline else "settings"
        if as_json:
            echo_json(kb.ask(question, k=k, mode=mode, llm=llm).to_json())
            return
        live = sys.stdout.isatty()
        answer = None
        for kind, value in kb.ask(question, k=k, mode=mode, llm=llm, stream=True):
            if kind == "delta" and live:
                click.echo(value, nl=False)
            elif kind == "answer":
                answer = value
    if live:
        click.echo()
    print_answer(answer, streamed=live)


def print_answer(answer, streamed: bool = False) -> None:
    """The checked answer (unless it was just streamed unchanged), flagged sentences, the sources and the path."""
    changed = answer.removed_citations or any(s.flagged for s in answer.sentences)
    if not streamed or changed:
        if streamed:
            click.echo(click.style("checked:", bold=True))
        lead, tail = answer.framing()  # "nothing found; the closest passages say …" is what the flagged lines are
        if lead:
            click.echo(lead)
        for s in answer.sentences:
            marks = "".join([f"[{k}]" for k in s.facts] + [f"[{n}]" for n in s.citations])
            flag = click.style(" (!) weakly supported", fg="yellow") if s.flagged else ""
            if s.code is not None:  # a command or config block, on lines of its own as it can be copied
                click.echo(s.written())
                if marks or flag:
                    click.echo(f"{marks}{flag}".strip())
            else:
                click.echo(f"{s.text}{marks}{flag}")
        if tail:
            click.echo(tail)
        if not answer.sentences:
            click.echo(answer.answer)
    if answer.removed_citations:
        numbers = ", ".join(f"[{n}]" for n in dict.fromkeys(answer.removed_citations))
        click.echo(click.style(f"removed citation(s) {numbers}: no such passage", fg="yellow"))
    sources = answer.sources_text()
    if sources:
        click.echo(click.style("\nsources:", bold=True))
        click.echo(sources)
    rounds = " → ".join(f"round {r.round}: {r.query!r} (+{r.hits_added})" for r in answer.rounds)
    click.echo(click.style(f"\n{answer.path} path: {answer.path_reason}", dim=True))
    if rounds:
        click.echo(click.style(rounds, dim=True))


def eval_answers(target: Path, kb_dir: Path | None, limit: int | None, unanswerable: Path | None,
                 json_out: Path | None, quiet: bool) -> None:
    """`kg eval --answers`: answer metrics on a benchmark folder, or on an existing knowledge base and its questions."""
    from retrieval.answer.session import client_for
    from retrieval.eval.answers import (
        evaluate_answers,
        evaluate_answers_dataset,
        format_answers_table,
        read_answer_questions,
    )

    extra = read_answer_questions(unanswerable) if unanswerable else []
    silent = quiet or json_out == Path("-")
    if kb_dir is not None:
        questions = read_answer_questions(target)[:limit] + extra
        with open_kb(kb_dir) as kb, Progress(len(questions), "answering", silent) as bar:
            summary = evaluate_answers(kb, questions, llm=client_for(kb.settings), progress=bar, name=target.name)
    else:
        if not target.is_dir():
            raise click.BadParameter("give a benchmark folder, or use --kb DATA_DIR QUESTIONS.jsonl", param_hint="TARGET")
        from kg.cli.base import settings_for

        settings = settings_for(None)
        if not silent:
            click.echo(f"building a knowledge base from {target.name} ...", err=True)
        from retrieval.eval.datasets import QUESTIONS_FILE

        n = len(read_answer_questions(target / QUESTIONS_FILE)[:limit]) + len(extra)
        with Progress(n, "answering", silent) as bar:
            summary = evaluate_answers_dataset(target, settings=settings, limit=limit, llm=client_for(settings),
                                               extra_questions=extra, progress=bar)
    if json_out == Path("-"):
        echo_json(summary)
        return
    click.echo(format_answers_table({summary["dataset"] or target.name: summary}))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        click.echo(f"results written to {json_out}")
