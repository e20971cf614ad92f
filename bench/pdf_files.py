"""Notes printed to PDF: what reading the PDF instead of the Markdown costs, on a Chinese and an English set -> bench/RESULTS-pdf.md.

    python bench/pdf_files.py [--bench-dir DIR] [--work DIR]    # needs LibreOffice's soffice and the [pdf] extra
                                                                # (and Chromium, if there, for a second producer)

Many teams' documents reach them only as PDF: exported from Word or a wiki, printed from a browser. Here the same
notes are read in both forms. ops_dev_zh's 197 Markdown files, and gitlab_handbook_dev's 50 handbook pages (written
as Markdown files from the set's passages, in order), are rendered to HTML by markdown-it-py, saved as .docx and
printed to PDF by LibreOffice (`bench/word_files.py`'s conversion: headings, lists, tables and code as an office
suite prints them; kept in `--work`, converted once), and, where Chromium is installed, the same HTML printed to PDF
by headless Chromium (a browser's "Save as PDF": another producer's fonts, its bullets drawn as shapes). The HTML
itself is read too (`HTML`: the page every PDF here was made from, as a wiki or a docs site gives it). Each form's
folder is ingested with `kg ingest` and the set's questions scored at passage level as `bench/files.py` scores the
Markdown files (a hit maps to the passages of its file holding it), R@5 also on the odd and the even question ids.
Every run in its own process; no LLM, no vectors.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

import files  # noqa: E402
import word_files  # noqa: E402

SETS = ("ops_dev_zh", "gitlab_handbook_dev")
RUNS = {"kgrag full": "full", "kgrag bm25": "bm25"}


def markdown_files(root: Path, out: Path) -> Path:
    """The set's Markdown: its `docs/` folder, or for a set of passages only, each document's passages in order as
    one `.md` file named as the document (once)."""
    if (root / "docs").is_dir():
        return root / "docs"
    from retrieval.eval.datasets import read_corpus

    by_doc: dict[str, list[str]] = {}
    for passage in read_corpus(root / "corpus.jsonl"):
        by_doc.setdefault(passage.doc, []).append(passage.text)
    for doc, texts in by_doc.items():
        path = out / doc
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(texts), encoding="utf-8")
    return out


def browser() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))),
                None)


def printed_by_browser(html_root: Path, work: Path, chrome: str) -> Path:
    """work/chromium/**.pdf: each HTML page printed to PDF by headless Chromium, as a reader's "Save as PDF" does (once)."""
    out = work / "chromium"
    for html in sorted(html_root.rglob("*.html")):
        target = (out / html.relative_to(html_root)).with_suffix(".pdf")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                            f"--print-to-pdf={target}", html.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    return out


def measure_set(bench_dir: Path, work: Path, name: str) -> dict:
    root = bench_dir / name
    set_work = work if name == files.SET else work / name  # ops_dev_zh's conversion is word_files.py's
    markdown = markdown_files(root, set_work / "md")
    pdf_root = word_files.printed(word_files.convert(markdown, set_work)[0], set_work)
    forms = [("Markdown", markdown), ("HTML", set_work / "html"), ("PDF", pdf_root)]
    chrome = browser()
    if chrome:
        forms.append(("PDF by Chromium", printed_by_browser(set_work / "html", set_work, chrome)))
    from run_benchmarks import in_own_process

    runs = {}
    for run, mode in RUNS.items():
        for form, docs in forms:
            runs[f"{run}, {form}"] = in_own_process(files.measure, root, mode, {}, False, docs)
            print(f"{name}: {run}, {form}: R@5 {runs[f'{run}, {form}']['metrics']['R@5']}", file=sys.stderr)
    return {"files": sum(1 for _ in pdf_root.rglob("*.pdf")), "runs": runs}


def render(results: dict) -> str:
    lines = [
        "# Notes printed to PDF (bench/pdf_files.py)", "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with Python {platform.python_version()}: each set's "
        "Markdown files saved as .docx and printed to PDF by LibreOffice (and the same HTML printed by headless Chromium, "
        "`PDF by Chromium`), then `kg ingest` of each form's folder and the "
        "set's questions, scored at passage level as `bench/files.py` scores the Markdown files. Every run in its own "
        "process; no LLM, no vectors.", "",
        "| set | run | R@2 | R@5 | R@5 odd ids | R@5 even ids | Hit@8 | ingest s | hits unmapped |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for name, result in results.items():
        for run, r in result["runs"].items():
            m = r["metrics"]
            lines.append(f"| {name} ({result['files']} files) | {run} | {m['R@2']} | {m['R@5']} | {r['halves']['odd']['R@5']} | "
                         f"{r['halves']['even']['R@5']} | {m['Hit@8']} | {r['ingest_seconds']} | {r['unmapped']} of {r['hits']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = word_files.office_args(__doc__, "RESULTS-pdf.md")
    results = {name: measure_set(args.bench_dir, args.work, name) for name in SETS}
    args.out.write_text(render(results), encoding="utf-8")
    (args.work / "pdf-runs.json").write_text(json.dumps(results, ensure_ascii=False, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
