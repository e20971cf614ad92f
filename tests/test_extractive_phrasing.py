"""The extractive answer when documentation words the answer differently from the question: other wordings of a
key word (common verbs, the knowledge base's synonyms), why / yes-no questions answered by a reason or a verdict,
"how do I" answered by the command, link-only pointers, and the passage about the thing the best sentence names."""

from __future__ import annotations

import textwrap

from retrieval.answer.cite import check_answer
from retrieval.answer.extractive import extract_answer
from retrieval.answer.phrasing import alternatives, asks_how_it_works, asks_why, asks_yes_no, cue_of
from retrieval.answer.record import Citation


def cit(n: int, text: str, title: str = "doc", section: str = "") -> Citation:
    return Citation(n, f"c{n}", f"d{n}", title, f"docs/{title}.md", section, (1, 20), textwrap.dedent(text).strip())


def answer(question: str, citations: list[Citation], language: str = "zh", synonyms=()) -> str:
    text = extract_answer(question, citations, language, synonyms)
    rendered, sentences = check_answer(text, citations, 0.5, language)
    assert sentences and all(s.citations and not s.flagged for s in sentences), sentences
    return rendered


MAINTENANCE_WHEN = cit(1, """
    ## 何时使用维护模式

    手工升级前，必须先开启 metasrv 的维护模式。
    维护模式开启后，metasrv 暂停集群的自动调度。
    升级完成后，等待所有组件恢复健康，再退出维护模式。
    """, title="集群维护模式")

MAINTENANCE_HOW = cit(2, """
    ## 启用维护模式

    发送 POST 请求到 `/admin/maintenance/enable` 端点：

    ```bash
    curl -X POST 'http://localhost:4000/admin/maintenance/enable'
    ```
    """, title="管理维护模式")


def test_a_verb_written_another_way_counts_and_how_do_i_brings_the_command():
    # 打开 in the question, 启用 in the runbook: the sentence with the endpoint and its curl command are the answer.
    text = answer("手工升级集群前，怎么打开 metasrv 的维护模式？", [MAINTENANCE_WHEN, MAINTENANCE_HOW])
    assert "curl -X POST 'http://localhost:4000/admin/maintenance/enable'" in text
    assert text.splitlines()[0].startswith("手工升级前，必须先开启 metasrv 的维护模式")


def test_how_it_works_is_not_a_procedure():
    assert asks_how_it_works("一条没带过滤条件的 SELECT 在分布式集群里是怎么执行的？")
    assert asks_how_it_works("How does the scheduler handle a failed job?")
    assert not asks_how_it_works("怎么打开 metasrv 的维护模式？")
    assert not asks_how_it_works("How do I renew the certificate?")


def test_the_knowledge_base_synonyms_give_a_word_its_other_wordings():
    assert alternatives(["连接池"], [["连接池", "connection pool", "DB pool"]]) == {"连接池": ("connection pool", "db pool")}
    assert "启用" in alternatives(["打开"])["打开"]
    passages = [
        cit(1, "订单服务的熔断阈值为错误率 50%，窗口 10 秒。\n订单服务部署在 k8s 的 prod 命名空间。", title="订单服务"),
        cit(2, "Hikari 的 maximumPoolSize 为 20，connectionTimeout 为 3 秒。", title="数据库访问"),
    ]
    question = "订单服务的连接池上限是多少？"
    # Without the table nothing says 连接池; with it, the sentence about the pool is found.
    assert "maximumPoolSize" not in answer(question, passages)
    assert "maximumPoolSize 为 20" in answer(question, passages, synonyms=[["连接池", "maximumPoolSize", "connection pool"]])


EVENTS = cit(1, """
    `events` 表保存 GreptimeDB 运行期间产生的事件，帮助运维人员检查 DDL 变更。
    单机部署记录本地 DDL Procedure 事件。
    分布式部署还可以记录 Metasrv 的运维事件。
    该表会在首次记录事件时自动创建。
    事件由后台异步写入，通常每 5 秒刷新一次，因此刚完成的操作可能不会立即出现。
    """, title="事件")


def test_a_why_question_gets_the_sentence_giving_the_reason():
    assert asks_why("为什么刚做完的 DDL 在 events 表里一时查不到？") and cue_of("为什么 x") is not None
    text = answer("为什么刚做完的 DDL 在 events 表里一时查不到？", [EVENTS])
    assert "通常每 5 秒刷新一次" in text


RECOVERY = cit(1, """
    ## 恢复模式

    恢复模式用于在元数据损坏后修复集群。
    通过 POST 请求到 `/admin/recovery/enable` 启用恢复模式。
    启用后 Datanode 启动时会放宽部分检查。
    元数据修复完成后应尽快禁用恢复模式。
    它只是 set-next-id 接口的前置条件，真正阻止元数据变更的是暂停 Procedure Manager。
    """, title="恢复模式")


def test_a_yes_no_question_gets_the_sentence_giving_the_verdict():
    assert asks_yes_no("开了恢复模式是不是就能挡住别人建表删表？") and asks_yes_no("Does the pool grow by itself?")
    assert not asks_yes_no("手工切换到 db-02 的步骤是什么？")  # 什么 ends in 么 and is no yes/no question
    tables = cit(2, """
        建表删表可以通过 SQL 完成，也可以通过 HTTP API 完成。
        建表时可以指定分区规则和 TTL 策略。
        删表会同时删除表的全部数据，操作前请先备份。
        建表删表都会记录 DDL 事件。
        """, title="表的基本操作")
    text = answer("开了恢复模式是不是就能挡住别人建表删表？", [RECOVERY, tables])
    assert "真正阻止元数据变更的是暂停 Procedure Manager" in text


def test_a_sentence_that_only_links_elsewhere_is_a_pointer():
    passages = [cit(1, """
        DDL 事件记录的各个字段和查询示例请参阅[DDL 事件记录的字段](/monitoring/events/ddl-events.md)。
        每条 DDL 事件记录带有操作的表名、语句和执行状态。
        """, title="事件")]
    text = answer("DDL 事件记录有什么字段？", passages)
    assert text.splitlines()[0].startswith("每条 DDL 事件记录带有操作的表名、语句和执行状态")


def test_the_answer_goes_on_in_the_passage_about_what_the_best_sentence_names():
    passages = [
        cit(1, "A Day of Roses in August is a 1927 German silent film directed by Max Mack. "
               "The film takes place in August 1914. The film's art direction was by Kurt Richter.",
            title="A Day of Roses in August"),
        cit(2, "August Rush is a 2007 film directed by Kirsten Sheridan. The film was shot in New York.", title="August Rush"),
        cit(3, "Roses in the Snow is a 1917 silent film directed by a German film director in August.", title="Roses in the Snow"),
        cit(4, "Max Mack (1884–1973) was a German screenwriter. Born as Moritz Myrthenzweig in Halberstadt, "
               "he later emigrated to the United Kingdom.", title="Max Mack"),
    ]
    text = answer("Where was the director of film A Day Of Roses In August born?", passages, language="en")
    assert "Halberstadt" in text


def test_a_question_about_now_prefers_the_value_that_holds_now():
    passages = [
        cit(1, "- 支付服务的回调幂等依赖缓存键 `pay:cb:{id}`，当时参数 `pay.idempotent.ttl=600`（10 分钟）。\n"
               "- 重试到达时键已过期，被当作新回调处理。", title="2025-01-14 重复入账复盘"),
        cit(2, "- `redis-cluster`：幂等键 `pay:cb:{id}`，过期时间由参数 `pay.idempotent.ttl` 控制，当前 86400 秒（24 小时）。\n"
               "- 订单库：`pay_db`。", title="payment-service"),
    ]
    text = answer("支付回调幂等键 pay.idempotent.ttl 现在设为多少？", passages)
    assert text.splitlines()[0].startswith("`redis-cluster`：幂等键")



CONSENSUS = cit(1, """
    ## 分布式共识

    如你所见，Metasrv 依赖于分布式共识，因为：

    1. 首先，Metasrv 必须选举一个 leader，数据节点只向 leader 发送心跳，便于基于全局信息进行调度。
    2. 其次，Metasrv 必须为数据节点提供选举 API，以选举“写入”和“只读”节点。
    3. 最后，`Metadata`、`Schema` 和其他数据必须在 Metasrv 上可靠且一致地存储。

    对于 Metasrv 的第一个版本，我们选择 Etcd 作为共识算法组件。
    """, title="Metasrv")


def test_a_why_question_gets_the_whole_list_of_reasons():
    text = answer("metasrv 为什么要搞 leader 选举？", [CONSENSUS])
    assert "因为：" in text
    assert "选举 API" in text and "可靠且一致地存储" in text  # the second and third reasons, not only the first


def test_a_picture_or_a_pointer_is_not_brought_along():
    passages = [cit(1, """
        如果某个查询没有任何过滤器，则将其视为全表扫描。
        全表扫描按 region 拆成子查询，子查询在 datanode 中执行，frontend 合并结果。
        下面这张图片总结了分布式查询的执行过程：

        ![Distributed Querying](/distributed-querying.png)

        部署方式请参考 [在 Kubernetes 上部署](/deploy/kubernetes.md)。
        """, title="分布式查询")]
    text = answer("没有过滤条件的分布式查询怎么执行全表扫描？", passages)
    assert "子查询在 datanode 中执行" in text
    assert "distributed-querying.png" not in text and "kubernetes.md" not in text
