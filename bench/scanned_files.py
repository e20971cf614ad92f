"""ops_dev_zh's notes printed to PDF and scanned: what OCR reads back of them, and what it costs -> bench/RESULTS-scanned.md.

    python bench/scanned_files.py [--bench-dir DIR] [--work DIR] [--dpi 200] [--sample 20]
    # needs LibreOffice's soffice (Debian: libreoffice-writer-nogui), the [pdf] extra and Tesseract
    # (Debian: tesseract-ocr tesseract-ocr-chi-sim)

The 197 .docx files of `bench/word_files.py` (markdown-it-py's HTML of each Markdown file, saved as Word by
LibreOffice) are printed to PDF by LibreOffice, and each page of those rendered at `--dpi` (200 by default: an office
scanner's "document" setting) in grayscale into a new PDF of images: a scan, no text layer. All are kept in `--work`
(made once). A sample of the scans (every n-th file, `--sample` files) is read as `kg ingest` reads it (OCR by
Tesseract chi_sim+eng through PyMuPDF) and compared with the printed PDF's own text layer read the same way: the share
of its characters OCR gives back in order (difflib, white space and Markdown marks aside), the share of its words
(jieba, two characters or more) found in the OCR text (what a search needs), and the CPU seconds a page. With
`--retrieval`, each form's whole folder is also ingested and the 80 questions scored as `bench/files.py` scores them.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

import files  # noqa: E402
import word_files  # noqa: E402


def scanned(pdf_root: Path, work: Path, dpi: int) -> tuple[Path, int]:
    """work/scan-DPI/**.pdf: every page an image of the printed page, no text layer (once); and the pages."""
    import pymupdf

    out, pages = work / f"scan-{dpi}", 0
    for pdf in sorted(pdf_root.rglob("*.pdf")):
        target = out / pdf.relative_to(pdf_root)
        with pymupdf.open(pdf) as doc:
            pages += doc.page_count
            if target.exists():
                continue
            scan = pymupdf.open()
            for page in doc:
                image = scan.new_page(width=page.rect.width, height=page.rect.height)
                image.insert_image(image.rect, pixmap=page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY))
            target.parent.mkdir(parents=True, exist_ok=True)
            scan.save(target, deflate=True)
    return out, pages


def compare(scan_root: Path, pdf_root: Path, sample: int) -> list[dict]:
    """Each sampled scan read by OCR beside its printed PDF's text layer."""
    import difflib

    import jieba

    from retrieval.ingest.ocr import Ocr
    from retrieval.ingest.readers import read_source_file

    scans = sorted(scan_root.rglob("*.pdf"))
    picked = scans[:: max(1, len(scans) // sample)][:sample]
    rows = []
    for scan in picked:
        started = time.process_time()
        read = read_source_file(scan, ocr=Ocr("chi_sim+eng"))
        seconds = time.process_time() - started
        truth = read_source_file(pdf_root / scan.relative_to(scan_root))
        a, b = _plain(truth.text), _plain(read.text)
        words = {w for w in jieba.lcut(truth.text) if len(w.strip()) >= 2 and not w.strip().startswith(("#", "|", "-"))}
        rows.append({"file": scan.relative_to(scan_root).as_posix(), "pages": max(read.line_pages or (1,)),
                     "cpu_s": round(seconds, 2),
                     "chars": round(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() * 100, 1),
                     "words": round(100 * sum(_plain(w) in b for w in words) / max(1, len(words)), 1)})
        print(rows[-1], file=sys.stderr)
    return rows


def _plain(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace() and ch not in "#|-*`")


def render(rows: list[dict], pages: int, dpi: int) -> str:
    n = len(rows)
    total_pages, total_s = sum(r["pages"] for r in rows), sum(r["cpu_s"] for r in rows)
    per_page = sorted(r["cpu_s"] / r["pages"] for r in rows)
    lines = [
        "# ops_dev_zh printed to PDF and scanned: what OCR reads back (bench/scanned_files.py)", "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with Python {platform.python_version()}, "
        f"{os.cpu_count()} cores (shared; CPU time): `bench/word_files.py`'s 197 .docx printed to PDF by LibreOffice "
        f"({pages} pages), each page rendered at {dpi} dpi in grayscale into a PDF of images (a scan). {n} of the scans "
        f"(every n-th file, {total_pages} pages) read as `kg ingest` reads them (Tesseract chi_sim+eng through PyMuPDF) "
        "and compared with the printed PDF's text layer read the same way.", "",
        "| | mean | worst file | best file |", "|---|--:|--:|--:|",
        f"| characters given back in order (difflib ratio, %) | {sum(r['chars'] for r in rows) / n:.1f} | "
        f"{min(r['chars'] for r in rows)} | {max(r['chars'] for r in rows)} |",
        f"| words of the text layer found (jieba, 2+ characters, %) | {sum(r['words'] for r in rows) / n:.1f} | "
        f"{min(r['words'] for r in rows)} | {max(r['words'] for r in rows)} |",
        f"| CPU seconds a page | {total_s / total_pages:.2f} | {per_page[-1]:.2f} | {per_page[0]:.2f} |", "",
        "| file | pages | CPU s | characters % | words % |", "|---|--:|--:|--:|--:|"]
    lines += [f"| {r['file']} | {r['pages']} | {r['cpu_s']} | {r['chars']} | {r['words']} |" for r in rows]
    return "\n".join(lines) + "\n"


def retrieval(root: Path, forms: dict[str, Path | None]) -> dict:
    """`kg ingest` of each form's folder (`kgrag full`) and the 80 questions scored as `bench/files.py` scores them."""
    from run_benchmarks import in_own_process

    runs = {}
    for name, docs in forms.items():
        started = time.perf_counter()
        runs[name] = in_own_process(files.measure, root, "full", {}, False, docs)
        print(f"{name}: R@5 {runs[name]['metrics']['R@5']} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return runs


def retrieval_table(runs: dict) -> list[str]:
    return ["", "## Retrieval over the whole set (`--retrieval`)", "",
            "Each form's folder ingested with `kg ingest` (`kgrag full`; the scans read by OCR), the 80 questions scored "
            "at passage level as `bench/files.py` scores the Markdown files. One process a form.", "",
            *word_files.run_rows(runs, "form")]


def _options(parser) -> None:
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--retrieval", action="store_true",
                        help="also ingest every form whole and score the questions (the scans: ~1 h of OCR on 2 cores)")


def main() -> None:
    args = word_files.office_args(__doc__, "RESULTS-scanned.md", _options)
    from retrieval.ingest.ocr import ocr_languages

    if ocr_languages("auto", "chi_sim+eng") != "chi_sim+eng":
        sys.exit("needs Tesseract with chi_sim and eng (Debian: apt-get install tesseract-ocr tesseract-ocr-chi-sim)")
    root = args.bench_dir / files.SET
    docx_root, _ = word_files.convert(root / "docs", args.work)
    pdf_root = word_files.printed(docx_root, args.work)
    scan_root, pages = scanned(pdf_root, args.work, args.dpi)
    rows = compare(scan_root, pdf_root, args.sample)
    text = render(rows, pages, args.dpi)
    if args.retrieval:
        runs = retrieval(root, {"Markdown": None, "PDF (text layer)": pdf_root, "scanned PDF (OCR)": scan_root})
        text += "\n".join(retrieval_table(runs)) + "\n"
        (args.work / f"scanned-retrieval-{args.dpi}.json").write_text(json.dumps(runs, ensure_ascii=False, indent=1))
    args.out.write_text(text, encoding="utf-8")
    (args.work / f"scanned-{args.dpi}.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
