"""Documentation as sites write it, quoted as a reader sees it: admonitions, MDX components, folded output and
shortcodes are not answer lines, a paragraph wrapped in the source is one sentence, links to other pages of the site
read as their text, bold lead-ins stay bold and introduce what follows, a lead-in comes before its command, and a
code block keeps its lines (the citation check reads a fenced block whole, a model's too). Through the pieces, the
extractive answer with its citation check, the streamed check, and the real CLI on a Markdown file."""

from __future__ import annotations

import json
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
    assert not [t for t in texts if "期望输出" in t]  # the label a page shows to unfold a block


def test_placeholders_code_and_web_links_are_left_as_written():
    assert reader_line("将 <path_to_file> 替换为 `<catalog>` 的 <b>路径</b>") == "将 <path_to_file> 替换为 `<catalog>` 的 路径"
    assert reader_line("写入 <YOUR_S3_BUCKET>，换行<br>之后") == "写入 <YOUR_S3_BUCKET>，换行 之后"
    assert reader_line("`<AnchorAlias id=\"x\" />` 是组件的写法") == "`<AnchorAlias id=\"x\" />` 是组件的写法"
    assert without_links("见 [表引擎](/reference/engines.md) 和 [官网](https://greptime.com)。![图](a.png)") == \
        "见 表引擎 和 [官网](https://greptime.com)。"
    code = passage_pieces("```\n<output-dir>/\n└── <database>/\n:::\n```")
    assert [p.kind for p in code] == ["code"] and code[0].lines == ("<output-dir>/", "└── <database>/", ":::")


def test_an_obsidian_note_is_quoted_with_its_wikilinks_as_obsidian_shows_them():
    note = ("# NAS 备份方案\n\n恢复速度大约 20 MB/s，整库 800 GB 需要半天，步骤见 [[restore-runbook|恢复手册]] 和 [[Photo workflow]]。"
            "![[b2-console.png]]\n\n- [[Router setup#WireGuard]]\n\n配置写在 `[[backup.targets]]` 表里：\n\n"
            "```toml\n[[backup.targets]]\nname = \"b2\"\n```\n\n[[backup.targets]]\n")
    texts = [p.text for p in passage_pieces(note)]
    assert "恢复速度大约 20 MB/s，整库 800 GB 需要半天，步骤见 恢复手册 和 Photo workflow。" in texts
    assert "Router setup > WireGuard" in texts and not [t for t in texts if "png" in t]
    # A TOML table header alone on its line and anything in inline code are not links.
    assert "配置写在 `[[backup.targets]]` 表里：" in texts and texts[-1] == "[[backup.targets]]"
    assert [p.lines for p in passage_pieces(note) if p.kind == "code"] == [("[[backup.targets]]", 'name = "b2"')]
    answer = extract_answer("整库恢复要多久？", [cit(1, note, "NAS 备份方案")], "zh")
    assert "[[" not in answer.split("`")[0] and "整库 800 GB 需要半天" in answer


def test_a_table_written_without_its_outer_pipes_is_not_joined_into_one_line():
    pieces = passage_pieces("端口说明如下\n组件 | 端口\n--- | ---\nfrontend | 4000\ndatanode | 3001")
    assert [p.text for p in pieces] == ["端口说明如下", "组件 | 端口", "frontend | 4000", "datanode | 3001"]


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


def test_a_long_command_is_quoted_by_its_lines_as_written():
    lines = ("greptime cli data export \\", "  --addr localhost:4000 \\", *(f"  --flag-{i} value-{i} \\" for i in range(30)),
             "  --s3-bucket <YOUR_S3_BUCKET>")
    quoted = code_excerpt(lines, lambda line: "s3" in line or "export" in line)
    assert quoted == "greptime cli data export \\\n…\n  --s3-bucket <YOUR_S3_BUCKET>"


def _docusaurus_kb(tmp_path) -> tuple[CliRunner, list[str]]:
    """The real CLI and a knowledge base of one Docusaurus page, ingested by `kg ingest`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "remote-write.md").write_text("# Prometheus 长期存储\n\n" + DOCUSAURUS, encoding="utf-8")
    runner = CliRunner()
    kb = ["--data-dir", str(tmp_path / "kb")]
    assert runner.invoke(cli, ["ingest", str(docs), *kb]).exit_code == 0
    return runner, kb


def test_kg_query_shows_each_passage_as_a_reader_sees_it(tmp_path):
    runner, kb = _docusaurus_kb(tmp_path)
    shown = runner.invoke(cli, ["query", "Prometheus Remote Write 配置", *kb])
    assert shown.exit_code == 0, shown.output
    snippet = shown.output.split("\n 1. ")[1].splitlines()[1]
    assert snippet.strip().startswith("要将 GreptimeDB 集成到 Prometheus 中，请按照以下步骤更新你的 Prometheus 配置文件：")
    for markup in ("AnchorAlias", ":::", "(/reference/", "<summary>", "{{%"):
        assert markup not in shown.output
    as_json = runner.invoke(cli, ["query", "Prometheus Remote Write 配置", "--json", *kb])
    assert "<AnchorAlias" in json.loads(as_json.output)["hits"][0]["text"]  # the passage itself is as written


def test_kg_ask_on_a_docusaurus_page_says_what_the_page_says(tmp_path):
    runner, kb = _docusaurus_kb(tmp_path)
    result = runner.invoke(cli, ["ask", "Remote Write 的 URL 中 db 参数是做什么的？", "--offline", *kb])
    assert result.exit_code == 0, result.output
    answer = result.output.split("\n\n")[0]
    assert "参数指定写入的数据库" in answer
    assert ":::" not in answer and "AnchorAlias" not in answer and "<details>" not in answer, answer


def test_a_lead_in_and_its_command_are_written_together_whichever_was_chosen_first():
    from test_extractive import TRACING

    passages = [cit(1, "`enable_otlp_tracing`：是否打开分布式追踪，默认不开启。", "配置"), cit(2, TRACING.text, "链路追踪")]
    text = extract_answer("线上不重启，怎么临时把 tracing 打开，排查完再关掉？", passages, "zh")
    lines = text.splitlines()
    for lead, command in (("启用链路追踪：", 'curl --data "true"'), ("禁用链路追踪：", 'curl --data "false"')):
        at = [i for i, line in enumerate(lines) if line.startswith(lead)]
        assert at and lines[at[0] + 1] == "```bash" and lines[at[0] + 2].startswith(command), lines


def test_the_check_reads_a_fenced_block_whole_and_cites_it_by_the_marker_after_it():
    passages = [cit(1, "启用链路追踪：\n\n```bash\ncurl --data \"true\" http://127.0.0.1:4000/debug/enable_trace\n"
                       "echo done # arr[1]\n```", "链路追踪")]
    model = "启用链路追踪，执行[1]：\n```bash\ncurl --data \"true\" http://127.0.0.1:4000/debug/enable_trace\necho done # arr[1]\n```\n[1]"
    rendered, sentences = check_answer(model, passages, 0.5, "zh")
    code = sentences[-1]
    assert code.code == "bash" and code.citations == [1] and not code.flagged and not code.removed
    assert code.text == 'curl --data "true" http://127.0.0.1:4000/debug/enable_trace\necho done # arr[1]'  # not a citation
    assert rendered.endswith("```bash\n" + code.text + "\n```\n[1]") and code.to_json()["code"] == "bash"
    # A block no marker follows is flagged like an uncited sentence; a model's block gets the passage that holds it.
    bare = check_answer("```\ncurl --data \"true\" http://127.0.0.1:4000/debug/enable_trace\n```", passages, 0.5, "zh")[1]
    assert bare[0].flagged and not bare[0].citations
    attributed = check_answer("```\ncurl --data \"true\" http://127.0.0.1:4000/debug/enable_trace\n```", passages, 0.5, "zh",
                              attribute=True)[1]
    assert attributed[0].citations == [1] and attributed[0].attributed


def test_a_streamed_answer_sends_a_code_block_whole():
    from retrieval.answer.cite import CheckedStream

    passages = [cit(1, "```\nkubectl get nodes -o wide\nkubectl describe node k8s-node-05\n```", "节点")]
    stream = CheckedStream(passages, 0.5, "zh")
    text = "查看节点：[1]\n```\nkubectl get nodes -o wide\nkubectl describe node k8s-node-05\n```\n[1]\n节点状态见上。[1]"
    sent = [stream.feed(text[i:i + 7]) for i in range(0, len(text), 7)] + [stream.flush()]
    for part in sent:  # never half a block
        assert part.count("```") % 2 == 0, sent
    assert [s.code for s in stream.sentences] == [None, "", None]
    assert stream.sentences[1].text == "kubectl get nodes -o wide\nkubectl describe node k8s-node-05"
    assert "".join(sent) == "查看节点：[1]\n```\nkubectl get nodes -o wide\nkubectl describe node k8s-node-05\n```\n[1]\n节点状态见上。[1]"


def test_a_long_streamed_block_is_read_once_a_piece_and_cut_where_open_fence_says():
    """The stream asks, at each cut point, whether the text up to it is inside a code block; one reading of the buffer
    must answer as `open_fence` on each prefix does (sloppy fences included), and a long block still comes whole."""
    import random
    import re

    from retrieval.answer import cite

    texts = [
        "查看节点：[1]\n```\nkubectl get nodes.\nkubectl describe node k8s-node-05; done.\n```\n[1]\n节点状态见上。[1]",
        "执行：```sql\nADMIN ADD_TABLE_FOLLOWER('monitor'); SELECT 1.\n```每个 Region 的读副本依赖对象存储。[1] 然后。",
        "Run this. Then:\n~~~bash\necho a. b\n\necho c!\n~~~ [2]\nAnd done. ```\nopen to the end. still.",
        "没有代码。只有句子！\n\n第二段；结束。",
        "```yaml\na: 1.\n```\n```\nb. c\n```\n[1]\nx.",
    ]
    pieces = ["执行：", "```bash", "```", "~~~", "[1]", "。", "a. ", "\n", "\n\n", "中文句子", "echo x;", "```每个 Region。",
              "```[2]", "【1】", "  ```", "````"]
    shuffled = random.Random(7)
    texts += ["".join(shuffled.choice(pieces) for _ in range(shuffled.randint(1, 30))) for _ in range(2000)]
    for text in texts:
        state = cite._FenceState(text)
        for m in re.finditer(cite._SPLIT, text):
            assert state(m.end()) == cite.open_fence(text[:m.end()]), (text, m.end())
    passages = [cit(1, "```bash\nkubectl get pods -n ns0; echo done.\n```", "pods")]
    stream = cite.CheckedStream(passages, 0.5, "zh")
    lines = "\n".join(f"kubectl get pods -n ns{i}; echo done. next {i}." for i in range(150))
    text = f"运行：\n```bash\n{lines}\n```\n[1]\n完成。[1]"
    sent = [stream.feed(text[i:i + 4]) for i in range(0, len(text), 4)] + [stream.flush()]
    assert [part.count("```") for part in sent if "```" in part] == [2]  # the block came in one piece
    assert [s.code for s in stream.sentences] == [None, "bash", None] and stream.sentences[1].text == lines


def test_kg_ask_prints_a_config_block_on_its_lines_with_no_stray_fence(tmp_path):
    runner, kb = _docusaurus_kb(tmp_path)
    result = runner.invoke(cli, ["ask", "怎么配置 Prometheus 的 Remote Write？", "--offline", *kb])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("```yaml\nremote_write:\n- url: http://localhost:4000/v1/prometheus/write?db=public\n```\n[1]\n")
    as_json = runner.invoke(cli, ["ask", "怎么配置 Prometheus 的 Remote Write？", "--offline", "--json", *kb])
    import json

    sentences = json.loads(as_json.output)["sentences"]
    assert sentences[0]["code"] == "yaml" and sentences[0]["text"].startswith("remote_write:\n- url:")


def test_a_small_models_sloppy_fences_and_wrong_number_still_give_the_block_and_its_source():
    from retrieval.answer.cite import open_fence

    passages = [cit(1, "读副本依赖对象存储。", "读副本"), cit(2, "```sql\nADMIN ADD_TABLE_FOLLOWER('monitor');\n```", "SQL")]
    model = "执行：```sql\nADMIN ADD_TABLE_FOLLOWER('monitor');\n```每个 Region 的读副本依赖对象存储。[1]"
    _, sentences = check_answer(model, passages, 0.5, "zh", attribute=True)
    assert [(s.text, s.code) for s in sentences] == [
        ("执行：", None), ("ADMIN ADD_TABLE_FOLLOWER('monitor');", "sql"), ("每个 Region 的读副本依赖对象存储。", None)]
    cited_wrong = check_answer("```sql\nADMIN ADD_TABLE_FOLLOWER('monitor');\n``` [1]", passages, 0.5, "zh", attribute=True)[1]
    assert cited_wrong[0].citations == [1, 2] and cited_wrong[0].attributed and not cited_wrong[0].flagged
    assert open_fence("执行：\n```bash\nls") and not open_fence("执行：\n```bash\nls\n```\n[1]") and not open_fence("")


def test_a_model_reads_the_passage_on_its_lines_without_the_sites_markup():
    from retrieval.answer.prompts import trim_passage

    whole = trim_passage(DOCUSAURUS, "Remote Write 怎么配置？", 1000)
    assert "要将 GreptimeDB 集成到 Prometheus 中，请按照以下步骤更新你的" in whole
    assert "```yaml\nremote_write:\n- url: http://localhost:4000/v1/prometheus/write?db=public\n```" in whole
    assert ":::" not in whole and "AnchorAlias" not in whole and "<summary>" not in whole and "{{%" not in whole
    long = DOCUSAURUS + "\n" + "\n".join(f"第 {i} 条无关的说明，讲的是别的组件。" for i in range(80))
    cut = trim_passage(long, "Remote Write 的 URL 怎么写？", 120)
    assert "remote_write:\n- url: http://localhost:4000/v1/prometheus/write?db=public" in cut and "第 50 条" not in cut
