"""Regression: a configuration table aligned by a formatter anchored none of its keys.

The table-row rule looked for the end of the first cell within 12 characters of the key, and
formatters pad every cell to the widest row (`| \`num_topics\`               |`); a reference that
writes the key with its section (`wal.num_topics`, where the relation table says num_topics) was
not read as defining it either. The benchmark passages had their padding collapsed, so only the
real files (bench/files.py) showed it: 35 table-row anchors on ops_dev_zh's files, 67 after.
"""

from __future__ import annotations

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase

DOC = """# 配置参考

## Metasrv 配置

| 配置项                     | 说明                                                     |
|----------------------------|----------------------------------------------------------|
| `broker_endpoints`         | Kafka broker 的地址列表。                                  |
| `num_topics`               | 用于存储 WAL 的 Kafka topic 数量。                          |
| `replication_factor`       | 每个 topic 的副本数量。                                    |

## 参考

| 键                            | 类型    | 默认值 | 描述        |
| ----------------------------- | ------- | ------ | ----------- |
| `wal.create_topic_timeout`    | String  | `30s`  | 创建 topic 的超时时间 |
"""
RELATIONS = """source,relation,target
Remote WAL,configuredBy,num_topics
Remote WAL,configuredBy,create_topic_timeout
Remote WAL,dependsOn,Kafka
"""


def test_padded_and_qualified_first_cells_define_their_keys(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "remote-wal.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "relations.csv").write_text(RELATIONS, encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.import_file(tmp_path / "relations.csv")
        kb.ingest_paths([tmp_path / "docs"])
        num_topics = kb.entity("num_topics")["sections_about"]
        assert [(s["section"], s["reason"]) for s in num_topics] == [("Metasrv 配置", "table row defines num_topics")]
        timeout = kb.entity("create_topic_timeout")["sections_about"]
        assert [(s["section"], s["reason"]) for s in timeout] == [("参考", "table row defines create_topic_timeout")]
        # The key reached from the component lands on its row's section and says why.
        hits = kb.query("Remote WAL 的 topic 数量配置项", k=5).hits
        about = {h.section: h.why.get("graph", {}).get("about") for h in hits}
        assert about.get("Metasrv 配置") == "table row defines num_topics"
