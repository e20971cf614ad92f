"""Measuring: `kg demo` (build and query the bundled demo, with its self-check) and `kg eval`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kg.cli.base import (
    DEMO_DIR,
    Progress,
    cli,
    echo_json,
    open_kb,
    quiet_option,
)
from kg.cli.search import print_result

DEMO_QUESTIONS = [
    "LORA-02 的看门狗超时阈值是多少？",
    "数据库连接池和线程池配置有关系吗",
    "what breaks if redis-cluster goes down?",
    "nginx 超时应该怎么调整？",
]


@cli.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".kgrag-demo"),
              show_default=True, help="Where to build the demo knowledge base.")
@click.option("-k", type=int, default=5, show_default=True, help="Hits shown per question.")
@quiet_option
def demo(data_dir: Path, k: int, quiet: bool) -> None:
    """Build the bundled demo knowledge base, answer a few questions, and run its self-check."""
    with open_kb(data_dir, create=True) as kb:
        build_demo(kb, quiet)
        for question in DEMO_QUESTIONS:
            click.echo()
            print_result(kb.query(question, k=k))
        from retrieval.eval.evaluate import evaluate_kb, format_self_check

        click.echo("\nself-check on the demo question set (Hit@k and R@k by question kind, text only vs full):")
        summaries = {m: evaluate_kb(kb, DEMO_DIR / "questions.jsonl", mode=m, ks=(1, 5)) for m in ("bm25", "full")}
        click.echo(format_self_check(summaries))
    click.echo(f"\nThe demo knowledge base is in {data_dir}; try: kg query --data-dir {data_dir} \"订单服务依赖哪些组件？\"\n"
               f"and kg serve --data-dir {data_dir} for the web page (http://127.0.0.1:8000/) and the API (/docs)")


def build_demo(kb, quiet: bool) -> None:
    """The demo's relation table, synonyms and documents into `kb` (`kg demo`, and `kg serve --demo` when it is missing)."""
    docs = sorted((DEMO_DIR / "docs").rglob("*.*"))
    click.echo(kb.import_file(DEMO_DIR / "relations.csv")["summary"])
    click.echo(kb.import_file(DEMO_DIR / "synonyms.txt")["summary"])
    with Progress(len(docs), "ingesting demo documents", quiet) as bar:
        click.echo(kb.ingest_paths([DEMO_DIR / "docs"], progress=bar).summary())


def _parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(v) for v in value.split(",") if v.strip()}))
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a comma-separated list of numbers, e.g. 1,2,5,10") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter("give positive cut-offs, e.g. 1,2,5,10")
    return ks


@cli.command(name="eval")
@click.argument("target", type=click.Path(exists=True, path_type=Path))
@click.option("--kb", "kb_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Evaluate an existing knowledge base; TARGET is then its questions.jsonl.")
@click.option("--k", "ks", default="1,2,5,10", show_default=True, help="Cut-offs for R@k, AR@k, Hit@k.")
@click.option("--mode", type=click.Choice(["full", "bm25", "graph", "dense"]), default="full", show_default=True)
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the results as JSON to this file ('-' for stdout).")
@click.option("--by-type/--no-by-type", default=True, show_default=True, help="One table row per question type.")
@click.option("--answers", is_flag=True, help="Measure answers instead (kg ask on every question with a reference `answer`).")
@click.option("--unanswerable", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="With --answers: questions the knowledge base cannot answer (they expect the no-hit fallback).")
@quiet_option
def eval_(target: Path, kb_dir: Path | None, ks: str, mode: str, limit: int | None, json_out: Path | None,
          by_type: bool, answers: bool, unanswerable: Path | None, quiet: bool) -> None:
    """Measure retrieval: R@k, AR@k, Hit@k, MRR, latency.

    \b
    kg eval DATASET_DIR            a benchmark folder (corpus.jsonl, questions.jsonl,
                                   optional relations.csv / ontology): builds a fresh
                                   knowledge base in a temporary folder and asks every question
    kg eval --kb DATA_DIR QUESTIONS.jsonl
                                   your own self-check set on an existing knowledge base;
                                   gold_ids are document ids or source paths
    kg eval --answers [--kb DATA_DIR] TARGET [--unanswerable FILE]
                                   answers: reference answer kept in the cited sentences
                                   vs in the top-5 passages, citation checks, no-hit fallback
    """
    if answers:
        from kg.cli.ask import eval_answers

        return eval_answers(target, kb_dir, limit, unanswerable, json_out, quiet)
    from retrieval.eval.evaluate import evaluate_dataset, evaluate_kb
    from retrieval.eval.metrics import format_table

    cutoffs = _parse_ks(ks)
    if kb_dir is not None:
        from retrieval.eval.datasets import read_questions

        n = len(read_questions(target)) if limit is None else limit
        with open_kb(kb_dir) as kb, Progress(n, f"asking ({mode})", quiet or json_out == Path("-")) as bar:
            summary = evaluate_kb(kb, target, mode=mode, ks=cutoffs, progress=bar)
    else:
        if not target.is_dir():
            raise click.BadParameter("give a benchmark folder, or use --kb DATA_DIR QUESTIONS.jsonl", param_hint="TARGET")
        from retrieval.eval.datasets import load_dataset

        n = len(load_dataset(target, limit, drop_empty_gold=True).questions)
        silent = quiet or json_out == Path("-")
        if not silent:
            click.echo(f"building a knowledge base from {target.name} ...", err=True)
        with Progress(n, f"asking ({mode})", silent) as bar:
            summary = evaluate_dataset(
                target, mode=mode, ks=cutoffs, limit=limit, progress=bar,
                on_ingested=None if silent else lambda s: click.echo(f"ingested in {s:.1f} s", err=True),
            )
    if json_out == Path("-"):
        echo_json(summary)
        return
    click.echo(format_table({f"{summary['dataset']} ({mode})": summary}, cutoffs, by_type=by_type))
    if "ingest_seconds" in summary:
        click.echo(f"ingest: {summary['ingest_seconds']} s")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        click.echo(f"results written to {json_out}")


