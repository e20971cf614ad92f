"""ops_dev_zh's notes as Word documents: the same 197 files saved as .docx by LibreOffice, ingested with `kg ingest`, scored as `bench/files.py` scores the Markdown -> bench/RESULTS-word.md.

    python bench/word_files.py [--bench-dir DIR] [--work DIR]    # needs LibreOffice's `soffice` (Debian: libreoffice-writer-nogui)

Each Markdown file (its front matter's title kept as the document's title, the rest of the front matter left out, as a
Word document has none) is rendered to HTML by markdown-it-py and converted by LibreOffice (`soffice --headless
--convert-to docx`), which writes headings as Word's "Heading N" styles, lists through numbering.xml and tables as
Word tables: a .docx as an office suite saves it. The .docx files are kept in `--work` (converted once). The
questions and the passage-level scoring are `bench/files.py`'s (a hit maps to the passages of its file holding it),
so the Word rows read against the Markdown rows of the same run: what reading Word instead of Markdown costs.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

import files  # noqa: E402

RUNS = {"kgrag full": ("full", {}), "kgrag bm25": ("bm25", {}), "fts5": ("fts5", {})}
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_MDX = re.compile(r"^(?:import |export |<[A-Z][^>]*/?>\s*$|</[A-Z][^>]*>\s*$)", re.M)


def to_html(markdown: str) -> str:
    from markdown_it import MarkdownIt

    title = ""
    front = _FRONT.match(markdown)
    if front:
        found = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", front.group(1), re.M)
        title = found.group(1) if found else ""
        markdown = markdown[front.end():]
    markdown = _MDX.sub("", markdown)
    body = MarkdownIt("commonmark").enable("table").render(markdown)
    return f'<html><head><meta charset="utf-8"><title>{title}</title></head><body>{body}</body></html>'


def convert(docs: Path, work: Path) -> tuple[Path, float]:
    """docs/**.md -> work/docx/**.docx (once); the seconds LibreOffice took this time."""
    out = work / "docx"
    todo = [md for md in sorted(docs.rglob("*.md")) if not (out / md.relative_to(docs)).with_suffix(".docx").exists()]
    started = time.perf_counter()
    for folder in sorted({md.parent for md in todo}):
        html_dir = work / "html" / folder.relative_to(docs)
        html_dir.mkdir(parents=True, exist_ok=True)
        batch = []
        for md in (m for m in todo if m.parent == folder):
            html = html_dir / (md.stem + ".html")
            html.write_text(to_html(md.read_text(encoding="utf-8")), encoding="utf-8")
            batch.append(str(html))
        target = out / folder.relative_to(docs)
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["soffice", "--headless", "--convert-to", "docx:MS Word 2007 XML", "--outdir", str(target), *batch],
                       check=True, capture_output=True, timeout=1800)
    return out, time.perf_counter() - started


def printed(docx_root: Path, work: Path) -> Path:
    """work/pdf/**.pdf from the .docx files (once)."""
    out = work / "pdf"
    for folder in sorted({d.parent for d in docx_root.rglob("*.docx")}):
        target = out / folder.relative_to(docx_root)
        todo = [str(d) for d in sorted(folder.glob("*.docx")) if not (target / (d.stem + ".pdf")).exists()]
        if todo:
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(target), *todo],
                           check=True, capture_output=True, timeout=1800)
    return out


def run_rows(runs: dict, first: str = "run") -> list[str]:
    """`files.measure` runs as a Markdown table: R@2, R@5, Hit@8, the two kinds' rows, ingest seconds, unmapped hits."""
    head = [first, "R@2", "R@5", "Hit@8", "cross_doc R@5", "procedure Hit@8", "ingest s", "hits unmapped"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, run in runs.items():
        m, kinds = run["metrics"], run["by_type"]
        lines.append(f"| {name} | {m['R@2']} | {m['R@5']} | {m['Hit@8']} | {kinds['cross_doc']['metrics']['R@5']} | "
                     f"{kinds['procedure']['metrics']['Hit@8']} | {run['ingest_seconds']} | {run['unmapped']} of {run['hits']} |")
    return lines


def render(runs: dict, converted: int, convert_s: float) -> str:
    lines = [
        "# ops_dev_zh as Word documents (bench/word_files.py)", "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with Python {platform.python_version()}: "
        f"{converted} files saved as .docx by LibreOffice (`soffice --headless --convert-to docx`, from markdown-it-py's "
        f"HTML of each Markdown file; {convert_s:.0f} s this run, 0 when already converted), then `kg ingest` of the folder "
        "and the 80 questions, scored at passage level as `bench/files.py` scores the Markdown files (a hit maps to the "
        "passages of its file that hold it). Both forms in one run, each in its own process; no LLM, no vectors.", "",
        *run_rows(runs)]
    return "\n".join(lines) + "\n"


def office_args(description: str, results: str, more=None) -> argparse.Namespace:
    """The arguments of a benchmark over the set's notes as office files (`--bench-dir`, `--work`, `--out` and what
    `more` adds to the parser); LibreOffice's soffice is checked for."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=REPO_ROOT.parent / "shared" / "bench")
    parser.add_argument("--work", type=Path, default=REPO_ROOT / "bench" / "out" / "word")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / results)
    if more is not None:
        more(parser)
    args = parser.parse_args()
    if not shutil.which("soffice"):
        sys.exit("needs LibreOffice's soffice (Debian: apt-get install libreoffice-writer-nogui)")
    return args


def main() -> None:
    args = office_args(__doc__, "RESULTS-word.md")
    root = args.bench_dir / files.SET
    docx_root, convert_s = convert(root / "docs", args.work)
    converted = sum(1 for _ in docx_root.rglob("*.docx"))
    from run_benchmarks import in_own_process

    runs = {}
    for name, (mode, overrides) in RUNS.items():
        for form, docs in (("Markdown", None), ("Word", docx_root)):
            runs[f"{name}, {form}"] = in_own_process(files.measure, root, mode, overrides, False, docs)
            print(f"{name}, {form}: R@5 {runs[f'{name}, {form}']['metrics']['R@5']}", file=sys.stderr)
    args.out.write_text(render(runs, converted, convert_s), encoding="utf-8")
    (args.work / "runs.json").write_text(json.dumps(runs, ensure_ascii=False, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
