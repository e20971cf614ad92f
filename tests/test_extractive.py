"""The extractive (no-LLM) answer's selection rules on small runbook-like passages: a passage's structural units
(`retrieval.answer.structure`), what comes along with a matched sentence, the greedy cover of the question's key terms,
steps, values, the budget; every answer then goes through the same citation check as any answer."""

from __future__ import annotations

import textwrap

from retrieval.answer import extractive
from retrieval.answer.cite import check_answer
from retrieval.answer.extractive import MAX_CHARS, MAX_LINES, extract_answer
from retrieval.answer.record import Citation
from retrieval.answer.structure import passage_pieces


def cit(n: int, text: str, section: str = "", title: str = "doc") -> Citation:
    return Citation(n, f"c{n}", f"d{n}", title, f"docs/{title}.md", section, (1, 20), textwrap.dedent(text).strip())


def answer(question: str, citations: list[Citation], language: str = "zh") -> tuple[str, list]:
    text = extract_answer(question, citations, language)
    rendered, sentences = check_answer(text, citations, 0.5, language)
    # Whatever the rules pick, it is the passages' own text: cited, supported, never flagged.
    assert sentences and all(s.citations and not s.flagged and s.support >= 0.9 for s in sentences), sentences
    return rendered, sentences


TRACING = cit(1, """
    ## 动态链路追踪控制

    GreptimeDB 提供了通过 HTTP API 在运行时动态启用或禁用链路追踪的功能，无需重启服务器。

    启用链路追踪：

    ```bash
    curl --data "true" http://127.0.0.1:4000/debug/enable_trace
    ```

    禁用链路追踪：

    ```bash
    curl --data "false" http://127.0.0.1:4000/debug/enable_trace
    ```
    """)

PARAMS = cit(2, """
    | 参数 | 默认值 | 说明 |
    |---|---|---|
    | `heartbeat_interval` | 15s | 心跳上报周期 |
    | `wdt_timeout` | 30s | 硬件看门狗超时；主循环超过该时间未喂狗即硬复位 |
    | `mqtt_publish_timeout` | 5s | 单次 MQTT 发布等待上限 |
    """, section="参数表", title="lora-02")

FAILOVER = cit(3, """
    1. 在 orchestrator 界面确认 db-01 状态为 `DeadMaster`，记录当前时间。
    2. 在 db-02 执行：
       ```sql
       STOP REPLICA; RESET REPLICA ALL;
       ```
    3. 将 VIP 10.20.1.100 漂移到 db-02。
    4. 将 db-03 改为从 db-02 复制。
    """, section="计划外切换步骤", title="mysql-failover")

TOPOLOGY = cit(4, """
    | 主机 | 角色 | 说明 |
    |---|---|---|
    | db-01 | 主库 | 写地址 `mysql-core-w:3306` |
    | db-02 | 半同步从库 | 候选主库，切换时数据最完整 |
    | db-03 | 异步从库 | 报表只读 |
    """, section="拓扑与地址", title="mysql-core")


def test_pieces_know_their_list_item_table_heading_and_lead_in():
    pieces = passage_pieces(textwrap.dedent("""
        ## 调整规则
        升级前执行：
        1. 先看连接数；再看慢 SQL。
        2. 单 Pod 的 maxPoolSize 不超过线程数的 1/4。
        | 参数 | 默认值 |
        |---|---|
        | threshold | 30s |
        """))
    assert [(p.kind, p.text) for p in pieces] == [
        ("heading", "调整规则"), ("text", "升级前执行："), ("item", "先看连接数；"), ("item", "再看慢 SQL。"),
        ("item", "单 Pod 的 maxPoolSize 不超过线程数的 1/4。"), ("header", "参数 | 默认值"), ("row", "threshold | 30s")]
    assert pieces[1].lead and not pieces[2].lead
    assert pieces[2].item == pieces[3].item != pieces[4].item and pieces[2].block == pieces[4].block
    assert pieces[2].ordered and all(p.heading == "调整规则" for p in pieces[1:])
    assert pieces[5].block == pieces[6].block != pieces[2].block


def test_a_passage_cut_inside_a_code_block_starts_with_code():
    pieces = passage_pieces('ttl = "30d"\nenable = true\n```\n\n默认情况下，日志文件位于 logs 目录。')
    assert [(p.kind, p.text) for p in pieces] == [("code", 'ttl = "30d"\nenable = true'), ("text", "默认情况下，日志文件位于 logs 目录。")]


def test_a_lead_in_ending_in_a_colon_brings_the_command_it_introduces():
    rendered, sentences = answer("线上不重启，怎么临时把链路追踪打开？", [TRACING])
    assert "启用链路追踪：" in rendered
    assert 'curl --data "true" http://127.0.0.1:4000/debug/enable_trace' in rendered


def test_the_following_command_counts_as_a_lead_in():
    text = cit(1, """
        当最新版本的 Operator 发布时，您可以通过运行以下命令来升级 Operator。

        ```bash
        helm repo update greptime
        ```
        """)
    rendered, _ = answer("Operator 怎么升级到新版本？", [text])
    assert "helm repo update greptime" in rendered


def test_a_table_row_comes_with_its_header():
    rendered, sentences = answer("wdt_timeout 默认是多少？", [PARAMS])
    lines = [s.text for s in sentences]
    # Each cell under its column's name: "30s" says nothing without "默认值"; the header line is not quoted again.
    assert lines[0].startswith("参数：`wdt_timeout`，默认值：30s，说明：硬件看门狗超时"), lines
    assert not any("参数 | 默认值 | 说明" in line for line in lines)
    # The cell's "；" is where the check cuts a sentence: both halves carry the citation.
    assert all(s.citations == [2] for s in sentences)
    extractive.LABELLED_ROWS = False
    try:  # as quoted before: the header line, then the row
        plain = [s.text for s in answer("wdt_timeout 默认是多少？", [PARAMS])[1]]
    finally:
        extractive.LABELLED_ROWS = True
    assert "参数 | 默认值 | 说明" in plain[0] and any("`wdt_timeout` | 30s | 硬件看门狗超时" in line for line in plain)


def test_a_row_is_labelled_only_when_its_header_fits_it():
    assert extractive._labelled("Key | Value", "a | 1", "en") == "Key: a, Value: 1"
    assert extractive._labelled("键 | 值", "a | 1", "zh") == "键：a，值：1"
    assert extractive._labelled(" | 说明", "x | 用途", "zh") == "x，说明：用途"  # a nameless column: the cell alone
    assert extractive._labelled("键 | 值 | 说明", "a | 1", "zh") == ""  # cells that do not line up: as written
    assert extractive._labelled(None, "a | 1", "zh") == "" and extractive._labelled("键", "a", "zh") == ""
    # A cell of sentences before the last cell: the citation check would cut the labelled row after it and leave
    # "，Required：Optional" alone, unsupported by the passage (ops_dev_zh's migrate_region table): as written instead.
    row = "`replay_timeout` | 回放数据的超时时间。省略时默认 300 秒。 | Optional | "
    assert extractive._labelled("Option | Description | Required | ", row, "zh") == ""
    assert extractive._labelled("Option | Required | Description", "`t` | Optional | 超时。默认 300 秒。", "zh") == (
        "Option：`t`，Required：Optional，Description：超时。默认 300 秒。")


def test_a_line_of_bars_alone_is_no_piece_and_its_table_rows_still_answer():
    # A handbook's channel table whose first line lost its header cells: the matching row used to come with an
    # empty "header" and `kg ask` failed with an IndexError.
    channels = cit(1, """
        ## Slack channels

                     |
        | `#payroll`  | For questions pertaining to payroll |
        | `#security` | Security questions and reports |
        """, title="chat")
    assert all(p.text.strip() for p in passage_pieces(channels.text))
    rendered, _ = answer("Which Slack channel is for payroll questions?", [channels], "en")
    assert "`#payroll` | For questions pertaining to payroll" in rendered


def test_a_list_item_is_kept_whole():
    item = cit(1, """
        - 下单接口的 P99 目标 < 300ms。
        - Tomcat 最大工作线程 200，`accept-count` 100；HikariCP 连接池上限 40。
        """)
    rendered, _ = answer("HikariCP 连接池上限是多少？", [item])
    assert "Tomcat 最大工作线程 200，`accept-count` 100；[1]HikariCP 连接池上限 40。[1]" in rendered


def test_a_steps_question_gets_the_procedure_in_order_not_the_best_matching_table():
    rendered, sentences = answer("mysql-core 主库挂了，手工切换到 db-02 的步骤是什么？", [TOPOLOGY, FAILOVER])
    texts = [s.text for s in sentences]
    assert texts[0].startswith("在 orchestrator 界面确认 db-01 状态为 `DeadMaster`")
    assert "STOP REPLICA; RESET REPLICA ALL;" in texts and "将 db-03 改为从 db-02 复制。" == texts[4]
    assert all(s.citations == [3] for s in sentences[:5])  # the whole procedure first; the table only after it
    # (the row naming 主库 comes after the steps: the question's words the list leaves out)
    assert [s.citations for s in sentences[5:]] in ([], [[4]])


def test_a_steps_question_without_a_matching_procedure_keeps_the_lead_in_and_code():
    config = cit(2, """
        - `dir`: log 输出目录。
        - `level`: log 输出的日志等级，默认等级为 `info`。
        - `enable_otlp_tracing`：是否打开分布式追踪，默认不开启。
        """)
    rendered, _ = answer("线上不重启，怎么临时把链路追踪打开？", [config, TRACING])
    assert 'curl --data "true"' in rendered


def test_a_value_question_prefers_the_sentence_stating_the_value():
    text = cit(1, """
        慢查询日志帮助您发现和修复慢查询，慢查询默认记录到系统表。
        默认情况下，慢查询记录到系统表 `greptime_private.slow_queries`，阈值为 `30s`，TTL 为 `30d`。
        """)
    _, sentences = answer("慢查询默认记录到哪张系统表？", [text])
    assert sentences[0].text.startswith("默认情况下，慢查询记录到系统表 `greptime_private.slow_queries`")


def test_a_long_code_block_is_quoted_by_its_matching_lines_and_the_value_after_a_comment():
    config = "\n".join(["```toml", "[slow_query]", "## 是否启用慢查询日志。", "enable = true"]
                       + [f"## 无关选项 {i} 的说明，写得很长很长很长很长很长很长。\nopt_{i} = {i}" for i in range(8)]
                       + ["## 慢查询的阈值。", 'threshold = "30s"', "```"])
    rendered, _ = answer("慢查询的阈值默认是多少？", [cit(1, config)])
    assert 'threshold = "30s"' in rendered and "opt_3" not in rendered and "…" in rendered


def test_units_are_chosen_to_cover_the_questions_key_terms_across_passages():
    heartbeat = cit(1, "心跳周期为 15 秒，平台连续 3 次未收到即判定网关离线。", title="heartbeat")
    watchdog = cit(2, "看门狗超时为 30 秒，主循环卡死时硬复位网关。", title="watchdog")
    noise = cit(3, "心跳报文经 MQTT 发布，报文格式见附录。", title="mqtt")
    _, sentences = answer("网关的心跳周期和看门狗超时分别是多少？", [heartbeat, noise, watchdog])
    cited = {n for s in sentences for n in s.citations}
    assert {1, 2} <= cited


def test_the_answer_stays_within_its_budget():
    many = cit(1, "\n".join(f"- 网关参数 p{i} 的默认值为 {i} 秒，超时后网关重连并记录日志。" for i in range(30)))
    rendered, _ = answer("网关参数的默认值是多少？", [many])
    text = extract_answer("网关参数的默认值是多少？", [many], "zh")
    assert len(text.splitlines()) <= MAX_LINES
    assert sum(len(line) for line in text.splitlines()) <= MAX_CHARS + 4 * MAX_LINES  # markers and full stops added


def test_english_lead_in_and_command():
    runbook = cit(1, """
        ## Renewing the wildcard certificate
        Deploy to edge-02 first, then reload nginx:
        ```
        nginx -t && nginx -s reload
        ```
        """, section="Renewing the wildcard certificate")
    rendered, _ = answer("How do I reload nginx after renewing the wildcard certificate?", [runbook], "en")
    assert "nginx -t && nginx -s reload" in rendered


def test_a_quoted_shell_command_keeps_its_lines_a_reader_can_copy():
    """A command written over lines with `\\` came back as `restore \\ --store-addrs …。` on one line, where the
    backslash escapes the space after it, and with a full stop glued to its end: it is quoted fenced, line by line."""
    restore = cit(1, """
        从本地备份文件恢复元数据到 etcd：

        ```bash
        greptime cli meta snapshot restore \\
          --store-addrs 127.0.0.1:2379 \\
          --backend etcd-store
        ```
        """)
    rendered, sentences = answer("怎么从本地备份文件恢复元数据到 etcd？", [restore])
    assert "从本地备份文件恢复元数据到 etcd：[1]\n```bash\ngreptime cli meta snapshot restore \\\n  --store-addrs 127.0.0.1:2379 " \
           "\\\n  --backend etcd-store\n```\n[1]" in rendered, rendered
    assert [s.code for s in sentences] == [None, "bash"] and "etcd-store。" not in rendered


def test_a_steps_question_asking_something_else_too_gets_the_list_and_the_rest():
    steps = cit(1, """
        ## 灰度步骤

        使用 Argo Rollouts 分三步：

        1. 流量 10%，观察 15 分钟。
        2. 流量 50%，观察 15 分钟。
        3. 流量 100%，观察 30 分钟后关闭发布单。
        """, section="灰度步骤", title="发布与灰度流程")
    rollback = cit(2, """
        任一步骤错误率比基线高 0.5 个百分点或 P99 高 30%，立即执行 `kubectl argo rollouts abort`，回滚到上一版本。
        """, section="回滚", title="发布与灰度流程")
    rendered, sentences = answer("生产发布的灰度步骤和回滚条件是什么？", [steps, rollback])
    texts = [s.text for s in sentences]
    assert texts[0] == "使用 Argo Rollouts 分三步：" and "流量 100%，观察 30 分钟后关闭发布单。" in texts  # the list, in order
    assert any("kubectl argo rollouts abort" in t for t in texts) and sentences[-1].citations == [2]  # and the rest


def test_a_question_asking_for_a_name_gets_the_heading_the_description_sits_under():
    principle = cit(1, """
        - **Ensure a great experience by default** - the product should work perfectly right out of the box for most users.
        - Prefer well-considered choices based on current best practices; avoid unnecessary configuration.
        """, section="How we follow our Principles > Convention over Configuration", title="product-principles", )
    question = "What is the name of the principle that says the product should work out of the box with well-considered choices?"
    rendered, sentences = answer(question, [principle], language="en")
    assert sentences[0].text.startswith("How we follow our Principles › Convention over Configuration") and sentences[0].citations == [1]
    # Asked for what the principle says, not its name, the answer is the sentences alone.
    _, plain = answer("What should the product do out of the box for most users?", [principle], language="en")
    assert "Convention over Configuration" not in " ".join(s.text for s in plain)
