"""The judge and answer prompts stay within PROMPT_TOKENS (estimated) whatever the passages, titles, question and
facts: every part of the prompt is counted, not only the passages' text."""

from __future__ import annotations

from retrieval.answer.llm import estimate_tokens
from retrieval.answer.prompts import PROMPT_TOKENS, answer_messages, judge_messages
from retrieval.answer.record import Citation

LONG_TITLE = "星河物流生产环境数据库主从切换与容灾演练操作手册（2024 修订版，适用于 mysql-core 与 mysql-finance）"


def _citations(n: int, chars: int) -> list[Citation]:
    body = "mysql-core 主库 db-01 故障时，按 `failover.sh --target db-02 --force` 切换，max_connections=2000。" * (chars // 70)
    return [Citation(n=i + 1, chunk_id=f"c{i}", doc_id=f"d{i}", title=LONG_TITLE, source=f"runbooks/db-{i}.md",
                     section=f"第 {i} 节 切换步骤与回滚条件（含检查清单）", lines=(1, 40), text=body) for i in range(n)]


def _size(messages: list[dict]) -> int:
    return sum(estimate_tokens(m["content"]) for m in messages)


def test_prompts_stay_within_the_bound_with_long_titles_questions_and_facts():
    question = ("mysql-core 主库挂了以后，手工切换到 db-02 的完整步骤是什么？切换前要检查哪些复制延迟指标，"
                "切换后应用的连接池 maxPoolSize 和 max_connections 要不要跟着调整？") * 2
    facts = "\n".join(f'<fact n="R{i}" source="relation table: mysql-core requiredBy service-{i}">\n'
                      f"mysql-core is required by service-{i}\n</fact>" for i in range(1, 7))
    for k in (3, 6, 8):
        citations = _citations(k, 2000)
        judge = judge_messages(question, citations)
        for language in ("zh", "en"):
            answer = answer_messages(question, citations, language, facts)
            assert _size(answer) <= PROMPT_TOKENS, (k, language, _size(answer))
        assert _size(judge) <= PROMPT_TOKENS, (k, _size(judge))
        # The passages are cut, not dropped: every passage keeps its number and some of its text.
        for c in citations:
            assert f'<passage n="{c.n}"' in judge[1]["content"]


def test_judge_and_answer_share_the_passages_so_the_server_reuses_its_cache():
    question = "mysql-core 的 max_connections 是多少？"
    citations = _citations(6, 1500)
    judge, answer = judge_messages(question, citations)[1]["content"], answer_messages(question, citations, "zh")[1]["content"]
    shared = judge[: judge.index("</question>")]
    assert answer.startswith(shared)
