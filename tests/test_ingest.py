"""Files or texts -> (Document, [Chunk]): headings, line ranges, long paragraphs, stable ids, input errors."""

from __future__ import annotations

import re

import pytest

from kg.errors import InputError
from retrieval.ingest.chunking import (
    CHUNK_MAX,
    chunk_document,
    find_source_files,
    read_source_file,
    text_size,
)
from retrieval.types import SourceDocument

MARKDOWN = """\
# 订单服务手册

订单服务负责下单和取消。
超时为 800ms。

## 部署

order-service 部署在 trade 命名空间。

副本数为 6。

### 扩容

高峰期扩到 12 个副本。

```
# this is code, not a heading
kubectl scale deploy/order-service --replicas=12
```

## Rollback

Roll back with `kubectl rollout undo`.
"""


def chunks_of(
    text: str, source: str = "notes/manual.md", fmt: str = "md", title: str | None = None
):
    return chunk_document(SourceDocument(source=source, text=text, format=fmt, title=title))


def test_first_level_one_heading_is_the_title_and_headings_make_section_paths():
    doc, chunks = chunks_of(MARKDOWN)
    assert doc.title == "订单服务手册"
    assert [c.section for c in chunks] == ["", "部署", "部署 > 扩容", "Rollback"]
    assert {c.title for c in chunks} == {"订单服务手册"}
    assert doc.n_chunks == len(chunks) == 4
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3]


def test_a_heading_inside_a_code_fence_stays_text():
    _, chunks = chunks_of(MARKDOWN)
    assert "# this is code, not a heading" in chunks[2].text
    assert all("this is code" not in c.section for c in chunks)


def test_line_ranges_point_at_the_chunk_text_in_the_source():
    _, chunks = chunks_of(MARKDOWN)
    lines = MARKDOWN.split("\n")
    for chunk in chunks:
        # Paragraphs of a chunk are joined by one blank line, as they are in this source.
        assert "\n".join(lines[chunk.line_start - 1 : chunk.line_end]) == chunk.text
    assert [(c.line_start, c.line_end) for c in chunks] == [(3, 4), (8, 10), (14, 19), (23, 23)]


def test_windows_newlines_and_a_bom_keep_line_numbers():
    _, unix = chunks_of(MARKDOWN)
    _, windows = chunks_of("\ufeff" + MARKDOWN.replace("\n", "\r\n"))
    assert [(c.line_start, c.line_end, c.text) for c in windows] == [
        (c.line_start, c.line_end, c.text) for c in unix
    ]


def test_without_a_level_one_heading_the_title_is_the_file_name():
    doc, chunks = chunks_of("## Only a section\n\nbody text\n", source="runbooks/redis-failover.md")
    assert doc.title == "redis-failover"
    assert chunks[0].section == "Only a section"


def test_an_explicit_title_wins_over_the_heading():
    doc, _ = chunks_of(MARKDOWN, title="Order service")
    assert doc.title == "Order service"


def test_plain_text_has_no_headings_and_a_short_first_line_is_its_title():
    text = "Glossary\n\n# not a heading in a .txt\n\nzebrafish: the load-test environment.\n"
    doc, chunks = chunks_of(text, source="a/notes.txt", fmt="txt")
    assert doc.title == "Glossary"
    assert {c.section for c in chunks} == {""}
    assert "# not a heading in a .txt" in chunks[0].text


def test_a_one_line_text_file_is_titled_by_its_file_name():
    doc, _ = chunks_of("zebrafish is the load-test environment.", source="a/notes.txt", fmt="txt")
    assert doc.title == "notes"


def test_a_heading_keeps_a_trailing_hash_that_is_part_of_the_text():
    # CommonMark: a closing sequence of '#' must follow a space; "C#" is the heading's text.
    _, chunks = chunks_of("# Languages\n\n## 使用 C#\n\ntext\n\n## Closed ##\n\nmore\n")
    assert [c.section for c in chunks] == ["使用 C#", "Closed"]


def test_a_long_paragraph_is_split_at_sentence_ends():
    sentences = [f"第{i}句说明连接池参数 maxPoolSize 需要按照峰值并发来估算。" for i in range(60)]
    paragraph = "".join(sentences)
    assert text_size(paragraph) > CHUNK_MAX
    _, chunks = chunks_of(f"# 长文\n\n{paragraph}\n")
    assert len(chunks) >= 2
    assert "".join(c.text for c in chunks) == paragraph  # nothing lost, nothing repeated
    for chunk in chunks:
        assert text_size(chunk.text) <= CHUNK_MAX
        assert chunk.text.startswith("第") and chunk.text.endswith("。")  # cut between sentences
        # Pieces of one paragraph keep the paragraph's line range.
        assert (chunk.line_start, chunk.line_end) == (3, 3)


def test_text_after_a_long_paragraph_keeps_its_own_line_numbers():
    paragraph = "".join(f"第{i}句说明连接池参数需要按照峰值并发来估算。" for i in range(80))
    _, chunks = chunks_of(f"# 长文\n\n{paragraph}\n\n## 结论\n\n短的结尾段落。\n")
    assert (chunks[-1].section, chunks[-1].text, chunks[-1].line_start, chunks[-1].line_end) == (
        "结论",
        "短的结尾段落。",
        7,
        7,
    )


def test_a_long_english_paragraph_keeps_its_words_apart():
    paragraph = " ".join(
        f"Sentence number {i} explains how the watchdog restarts the gateway." for i in range(40)
    )
    _, chunks = chunks_of(f"# Watchdog\n\n{paragraph}\n")
    assert len(chunks) >= 2
    rejoined = " ".join(c.text for c in chunks)
    assert rejoined == paragraph
    assert all(re.match(r"Sentence number \d+ ", c.text) for c in chunks)


def test_same_input_gives_the_same_ids():
    doc1, chunks1 = chunks_of(MARKDOWN)
    doc2, chunks2 = chunks_of(MARKDOWN)
    assert doc1.doc_id == doc2.doc_id
    assert doc1.sha256 == doc2.sha256
    assert [c.chunk_id for c in chunks1] == [c.chunk_id for c in chunks2]
    assert len({c.chunk_id for c in chunks1}) == len(chunks1)


def test_ids_depend_on_source_and_content():
    doc, chunks = chunks_of(MARKDOWN)
    other_source, other_chunks = chunks_of(MARKDOWN, source="notes/copy.md")
    assert other_source.doc_id != doc.doc_id
    assert not {c.chunk_id for c in chunks} & {c.chunk_id for c in other_chunks}
    edited_doc, edited = chunks_of(MARKDOWN.replace("副本数为 6。", "副本数为 8。"))
    assert edited_doc.doc_id == doc.doc_id  # same document, new version
    assert edited_doc.sha256 != doc.sha256
    changed = [
        i for i, (a, b) in enumerate(zip(chunks, edited, strict=True)) if a.chunk_id != b.chunk_id
    ]
    assert changed == [1]  # only the chunk whose text changed gets a new id


@pytest.mark.parametrize("text", ["", "   \n\n\t\n", "\ufeff\r\n"])
def test_an_empty_document_is_an_input_error(text):
    with pytest.raises(InputError) as error:
        chunks_of(text, source="notes/empty.md")
    assert str(error.value) == "notes/empty.md: the document is empty"
    assert error.value.status == 400


def test_a_document_that_is_only_a_title_is_one_chunk():
    doc, chunks = chunks_of("# 只有标题\n")
    assert doc.title == "只有标题"
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [("只有标题", 1, 1)]


def test_unsupported_suffix_names_the_file_and_the_supported_types(tmp_path):
    sheet = tmp_path / "report.key"
    sheet.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError) as error:
        find_source_files([sheet])
    assert str(error.value) == ("report.key: unsupported file type '.key' (kgrag reads .csv, .docx, .htm, .html, .markdown, "
                                ".md, .pdf, .pptx, .text, .txt, .xlsx)")


def test_a_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as error:
        find_source_files([tmp_path / "nowhere"])
    assert str(error.value) == f"{tmp_path / 'nowhere'}: no such file or folder"


def test_gbk_file_is_read_and_an_unknown_encoding_says_how_to_fix_it(tmp_path):
    gbk = tmp_path / "旧笔记.md"
    gbk.write_bytes("# 标题\n\n内容".encode("gbk"))
    src = read_source_file(gbk)
    assert src.text.strip() == "# 标题\n\n内容"
    assert src.warnings == (f"{gbk}: read as GBK (it is not UTF-8)",)
    neither = tmp_path / "latin.md"
    neither.write_bytes(b"# x\n\n\xff\xfe")
    with pytest.raises(InputError) as error:
        read_source_file(neither)
    assert str(error.value) == f"{neither}: neither UTF-8, GBK/GB18030 nor Big5 text (byte 5); save the file as UTF-8 and ingest it again"


def _alias_bomb(levels: int) -> str:
    """YAML whose last key names 9 ** (levels + 1) strings through anchors and aliases, in a few hundred bytes."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, f"tags: *a{levels}", f"title: *a{levels}"])


def test_front_matter_with_aliases_or_deep_nesting_is_refused_not_expanded(tmp_path):
    """Nine aliases of nine aliases: eight levels took 4 GB and more than a minute before it was refused (a file in
    a shared folder must not stop the ingest or the machine); aliases are refused whatever their size, and nesting
    past 100 levels (Python's recursion limit raised a RecursionError at 5,000) too. The rest of a folder comes in."""
    (tmp_path / "bomb.md").write_text(f"---\n{_alias_bomb(4)}\n---\n# Bomb\n\ntext\n", encoding="utf-8")
    (tmp_path / "deep.md").write_text("---\ntags: " + "[" * 5000 + "]" * 5000 + "\n---\n# Deep\n\ntext\n", encoding="utf-8")
    (tmp_path / "plain.md").write_text("---\ntags: [a, b]\n---\n# Plain\n\ntext\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bomb\.md: the YAML front matter does not parse \(line 3: an alias \(\*name\)"):
        read_source_file(tmp_path / "bomb.md")
    with pytest.raises(InputError, match=r"deep\.md: .*\(line 2: more than 100 levels of nesting\)"):
        read_source_file(tmp_path / "deep.md")
    assert read_source_file(tmp_path / "plain.md").tags == ("a", "b")


def test_a_utf16_file_with_its_byte_order_mark_is_read(tmp_path):
    # Notepad's "Unicode" and Windows PowerShell's `>` write UTF-16 with a BOM, little- or big-endian.
    for name, encoding in (("notepad.txt", "utf-16"), ("le.md", "utf-16-le"), ("be.md", "utf-16-be")):
        path = tmp_path / name
        bom = "\ufeff" if encoding != "utf-16" else ""
        path.write_bytes(f"{bom}# 备份策略\r\n\r\n每晚 02:00 全量备份，保留 14 天。\r\n".encode(encoding))
        src = read_source_file(path)
        assert src.text.splitlines()[0] == "# 备份策略" and "保留 14 天" in src.text and "\ufeff" not in src.text
        assert src.warnings == (f"{path}: read as UTF-16 (it is not UTF-8)",)
    broken = tmp_path / "broken.txt"
    broken.write_bytes("\ufeffab".encode("utf-16-le") + b"\x00\xd8\x41")  # a lone surrogate half, cut short
    with pytest.raises(InputError) as error:
        read_source_file(broken)
    assert str(error.value) == f"{broken}: starts as UTF-16 text but is not (byte 6); save the file as UTF-8 and ingest it again"
    # Without a BOM, UTF-16 is not guessed (Chinese in it reads as GBK as well), but Latin text in it is told from a
    # binary file by its every other byte being NUL.
    bare = tmp_path / "bare.md"
    bare.write_bytes("# Backups\n\nEvery night at 02:00, kept 14 days.\n".encode("utf-16-le"))
    with pytest.raises(InputError) as error:
        read_source_file(bare)
    assert str(error.value) == f"{bare}: looks like UTF-16 text without a byte order mark; save the file as UTF-8 and ingest it again"
    binary = tmp_path / "blob.md"
    binary.write_bytes(b"SQLite format 3\x00" + bytes(range(1, 128)) * 4)
    with pytest.raises(InputError, match="binary content"):
        read_source_file(binary)


def test_terminal_escapes_in_a_document_never_reach_a_terminal(tmp_path):
    # A shared folder or a knowledge pack is someone else's text: clearing the screen, hiding a line or retitling the
    # window are not what its passages may do when `kg query` prints them.
    path = tmp_path / "e.md"
    path.write_text("# \x1b[2J\x1b]0;pwned\x07Ops \x1b[8mhidden\x1b[0m\n\nredis 端口 6379。\x1b[31m 警告\x1b[0m\x0c\x7f\n"
                    "第三行\n", encoding="utf-8")
    src = read_source_file(path)
    assert "\x1b" not in src.text and "\x07" not in src.text and "\x7f" not in src.text
    assert src.text.splitlines()[0] == "# Ops hidden" and "redis 端口 6379。 警告" in src.text
    assert src.text.count("\n") == 4  # every line where it was: citations' line numbers stay true
    assert src.warnings == (f"{path}: 8 terminal escape sequence(s) or control character(s) removed",)
    html = tmp_path / "e.html"
    html.write_text("<title>\x1b]0;x\x07Page</title><h1>Page</h1><p>\x9b2Jtext</p>", encoding="utf-8")
    assert "\x9b" not in read_source_file(html).text and "\x1b" not in (read_source_file(html).title or "")


def test_folders_are_walked_sorted_skipping_hidden_and_unsupported_files(tmp_path):
    for name in ["b.md", "a/c.txt", "a/d.markdown", ".git/e.md", "a/.hidden.md", "f.key", "g.MD"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x", encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in find_source_files([tmp_path])]
    assert found == ["a/c.txt", "a/d.markdown", "b.md", "g.MD"]


def test_read_source_file_strips_a_bom_and_takes_the_format_from_the_suffix(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes("\ufeffhello".encode())
    src = read_source_file(path, source="custom:notes")
    assert (src.source, src.text, src.format) == ("custom:notes", "hello", "txt")


def test_a_long_code_block_or_list_without_sentence_ends_is_cut_at_lines_with_true_line_numbers():
    """A pasted config file (2,000 lines in a code fence) and a 2,000-line list were one chunk each (45 KB and 49 KB:
    one passage for any of their words, one vector over dozens of windows); now runs of whole lines, each child
    with its own lines, the fence's opening line above every run inside it, and a line longer than a chunk cut at
    spaces, so that the document's text is all there, in order."""
    from retrieval.ingest.chunking import cut_document

    config = "".join(f'key_{i} = "value {i}"\n' for i in range(2000))
    steps = "".join(f"- step {i} do something\n" for i in range(2000))
    text = f"# Cfg\n\nSome intro.\n\n```toml\n{config}```\n\n## List\n\n{steps}\n{'word ' * 4000}\n"
    cut = cut_document(SourceDocument("/x/cfg.md", text))
    source_lines = text.split("\n")
    assert len(cut.children) > 50 and max(text_size(c.text) for c in cut.children) <= CHUNK_MAX
    for child in cut.children:
        body = child.text.removeprefix("```toml\n") if child.line_start > 5 else child.text
        first = body.split("\n")[0]
        assert first in source_lines[child.line_start - 1], (child.line_start, first)
        last = body.split("\n")[-1]
        assert last in source_lines[child.line_end - 1]
    in_fence = [c for c in cut.children if 5 < c.line_start <= 2006]
    assert in_fence and all(c.text.startswith("```toml\n") for c in in_fence)
    holding = [c for c in cut.children if c.line_start <= 1240 <= c.line_end]  # line 1240: key_1234
    assert len(holding) == 1 and 'key_1234 = "value 1234"' in holding[0].text and len(holding[0].text) < 2500
    words = [c for c in cut.children if c.line_start == c.line_end == len(source_lines) - 1]
    assert len(words) > 1 and "".join(c.text for c in words) == ("word " * 4000).rstrip()


def test_a_big5_file_is_read_as_big5_and_gbk_with_box_drawing_stays_gbk(tmp_path):
    """GB18030 reads almost any bytes: a Big5 note (Windows' "ANSI" in Taiwan and Hong Kong) came out as rare characters
    and kana ("眀叭╰参–ら贬挡衡"), indexed and answered as such. Big5 wins when GB18030 makes mostly rare characters of
    it; a GBK note whose ASCII-art table is box drawing (not letters) stays GBK."""
    big5 = tmp_path / "帳務.txt"
    text = "帳務系統每日凌晨結算。\n訂單服務的逾時時間是 800 毫秒，重新啟動請執行 systemctl restart order。\n"
    big5.write_bytes(text.encode("cp950"))
    src = read_source_file(big5)
    assert src.text.strip() == text.strip()
    assert src.warnings == (f"{big5}: read as BIG5 (it is not UTF-8)",)
    boxes = tmp_path / "表格.md"
    table = "# 端口\n\n┌──────┬──────┐\n│ 服务 │ 端口 │\n├──────┼──────┤\n│ 订单 │ 8080 │\n└──────┴──────┘\n"
    boxes.write_bytes(table.encode("gbk"))
    src = read_source_file(boxes)
    assert src.text.strip() == table.strip() and src.warnings == (f"{boxes}: read as GBK (it is not UTF-8)",)
    short = tmp_path / "短.txt"  # too few Chinese characters to tell: GB18030 as before, and the warning names it
    short.write_bytes("結算".encode("cp950"))
    assert read_source_file(short).warnings == (f"{short}: read as GBK (it is not UTF-8)",)
