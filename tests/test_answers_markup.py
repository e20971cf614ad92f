"""Documentation as sites write it, quoted as a reader sees it: admonitions, MDX components, folded output and
shortcodes are not answer lines, a paragraph wrapped in the source is one sentence, links to other pages of the site
read as their text, bold lead-ins stay bold and introduce what follows. Through the pieces, the extractive answer
with its citation check, and the real CLI on a Markdown file."""

from __future__ import annotations

import textwrap

from click.testing import CliRunner

from kg.cli import cli
from retrieval.answer.cite import check_answer
from retrieval.answer.extractive import extract_answer
from retrieval.answer.markup import reader_line, without_links
from retrieval.answer.record import Citation
from retrieval.answer.structure import code_excerpt, passage_pieces

DOCUSAURUS = textwrap.dedent("""\
    ## 配置 Remote Write

    <AnchorAlias id="remote-write-configuration" />

    要将 GreptimeDB 集成到 Prometheus 中，
    请按照以下步骤更新你的 [Prometheus 配置文件](/reference/prometheus.md)：

    ```yaml
    remote_write:
    - url: http://localhost:4000/v1/prometheus/write?db=public
    ```

    :::tip 注意
    Remote Write 的 URL 中 `db` 参数指定写入的数据库，默认写入 `public`。
    :::

    <details>
    <summary>期望输出</summary>

    {{% panel header="**Remote Write**" %}}
    """)


def cit(n: int, text: str, title: str = "doc") -> Citation:
    return Citation(n, f"c{n}", f"d{n}", title, f"docs/{title}.md", "", (1, 20), text)


def test_markup_lines_are_not_pieces_and_wrapped_lines_are_one():
    pieces = passage_pieces(DOCUSAURUS)
    texts = [p.text for p in pieces]
    assert not [t for t in texts if ":::" in t or "AnchorAlias" in t or "{{%" in t or "<details>" in t or "<summary>" in t]
    # The two source lines of one sentence are one piece, and it still introduces the code block after it.
    wrapped = next(p for p in pieces if p.text.startswith("要将 GreptimeDB"))
    assert wrapped.text == "要将 GreptimeDB 集成到 Prometheus 中，请按照以下步骤更新你的 Prometheus 配置文件：" and wrapped.lead
    assert pieces[wrapped.position + 1].kind == "code"
    assert "Remote Write 的 URL 中 `db` 参数指定写入的数据库，默认写入 `public`。" in texts
    assert "期望输出" in texts  # what a folded block is called stays, its tags go


def test_placeholders_code_and_web_links_are_left_as_written():
    assert reader_line("将 <path_to_file> 替换为 `<catalog>` 的 <b>路径</b>") == "将 <path_to_file> 替换为 `<catalog>` 的 路径"
    assert reader_line("写入 <YOUR_S3_BUCKET>，换行<br>之后") == "写入 <YOUR_S3_BUCKET>，换行 之后"
    assert reader_line("`<AnchorAlias id=\"x\" />` 是组件的写法") == "`<AnchorAlias id=\"x\" />` 是组件的写法"
    assert without_links("见 [表引擎](/reference/engines.md) 和 [官网](https://greptime.com)。![图](a.png)") == \
        "见 表引擎 和 [官网](https://greptime.com)。"
    code = passage_pieces("```\n<output-dir>/\n└── <database>/\n:::\n```")
    assert [p.kind for p in code] == ["code"] and code[0].lines == ("<output-dir>/", "└── <database>/", ":::")


def test_an_english_paragraph_wrapped_at_eighty_columns_is_read_whole():
    text = "Managers attend calibration meetings in which ratings are\ndiscussed to minimize bias.  \nA hard break ends it.\n" \
           "- an item that goes on\n  on the next line\n- **Bold item**: second"
    assert [(p.kind, p.text) for p in passage_pieces(text)] == [
        ("text", "Managers attend calibration meetings in which ratings are discussed to minimize bias."),
        ("text", "A hard break ends it."),
        ("item", "an item that goes on on the next line"),
        ("item", "**Bold item**: second"),
    ]


def test_the_answer_quotes_no_markup_and_no_half_sentence():
    passages = [cit(1, DOCUSAURUS, "prometheus")]
    text = extract_answer("怎么配置 Prometheus 的 Remote Write 写入 GreptimeDB？", passages, "zh")
    rendered, sentences = check_answer(text, passages, 0.5, "zh")
    assert "要将 GreptimeDB 集成到 Prometheus 中，请按照以下步骤更新你的 Prometheus 配置文件：" in rendered
    assert "remote_write:" in rendered
    for noise in (":::", "AnchorAlias", "{{%", "/reference/prometheus.md", "，。", "<summary>"):
        assert noise not in rendered, (noise, rendered)
    assert sentences and not [s for s in sentences if s.flagged]


def test_a_bold_lead_in_keeps_its_bold_and_introduces_its_list():
    passages = [cit(1, "**组件：**\n\n- **Node Exporter**：从每个节点导出硬件指标。\n- **Grafana**：提供仪表板。", "组件")]
    pieces = passage_pieces(passages[0].text)
    assert pieces[0].text == "**组件：**" and pieces[0].lead and pieces[1].text == "**Node Exporter**：从每个节点导出硬件指标。"
    rendered, _ = check_answer(extract_answer("Node Exporter 组件导出什么指标？", passages, "zh"), passages, 0.5, "zh")
    assert "**Node Exporter**：从每个节点导出硬件指标。" in rendered and "**组件：**。" not in rendered


def test_a_long_command_quoted_by_its_lines_has_no_line_continuations():
    lines = ("greptime cli data export \\", "  --addr localhost:4000 \\", *(f"  --flag-{i} value-{i} \\" for i in range(30)),
             "  --s3-bucket <YOUR_S3_BUCKET>")
    quoted = code_excerpt(tuple(line.strip() for line in lines), lambda line: "s3" in line or "export" in line)
    assert quoted.startswith("greptime cli data export …") and "--s3-bucket <YOUR_S3_BUCKET>" in quoted
    assert "\\" not in quoted


def test_kg_ask_on_a_docusaurus_page_says_what_the_page_says(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "remote-write.md").write_text("# Prometheus 长期存储\n\n" + DOCUSAURUS, encoding="utf-8")
    runner = CliRunner()
    kb = ["--data-dir", str(tmp_path / "kb")]
    assert runner.invoke(cli, ["ingest", str(docs), *kb]).exit_code == 0
    result = runner.invoke(cli, ["ask", "Remote Write 的 URL 中 db 参数是做什么的？", "--offline", *kb])
    assert result.exit_code == 0, result.output
    answer = result.output.split("\n\n")[0]
    assert "参数指定写入的数据库" in answer
    assert ":::" not in answer and "AnchorAlias" not in answer and "<details>" not in answer, answer


TRACING = """GreptimeDB 提供了通过 HTTP API 在运行时动态启用或禁用链路追踪的功能，无需重启服务器。

启用链路追踪：

```bash
curl --data "true" http://127.0.0.1:4000/debug/enable_trace
# 输出: trace enabled
```

禁用链路追踪：

```bash
curl --data "false" http://127.0.0.1:4000/debug/enable_trace
# 输出: trace disabled
```

这对于排查生产环境问题或临时启用追踪进行调试非常有用。"""


def test_a_lead_in_chosen_after_its_command_is_written_before_it():
    passages = [cit(1, "`enable_otlp_tracing`：是否打开分布式追踪，默认不开启。", "配置"), cit(2, TRACING, "链路追踪")]
    text = extract_answer("线上不重启，怎么临时把 tracing 打开，排查完再关掉？", passages, "zh")
    lines = text.splitlines()
    for lead, command in (("启用链路追踪：", 'curl --data "true"'), ("禁用链路追踪：", 'curl --data "false"')):
        at = [i for i, line in enumerate(lines) if line.startswith(lead)]
        assert at and lines[at[0] + 1].startswith(command), lines
