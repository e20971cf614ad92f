"""Finding the row of a relation table that states an edge (`kg.relations.lines`), which an answer's graph fact cites
as `relations.csv:LINE`: by either end's label or alias and the relation's name or label, in UTF-8 or GBK."""

from __future__ import annotations

from kg.relations.lines import WantedEdge, row_lines
from ontology import BASE_ONTOLOGY_PATH, Vocabulary, load_rdf

TABLE = """source,relation,target,weight
order-service,dependsOn,mysql-core,0.9

订单服务,依赖,redis-cluster,
"payment-service",relies on,"redis-cluster",0.7
order-service,ownedBy,交易组,
"""


def vocab() -> Vocabulary:
    return Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))


def wanted(source: str, relation: str, target: str, *aliases: str) -> WantedEdge:
    return WantedEdge(frozenset({source, *aliases}), relation, frozenset({target}))


def test_each_edge_is_found_on_its_row_by_label_alias_or_relation_label(tmp_path):
    path = tmp_path / "relations.csv"
    path.write_text(TABLE, encoding="utf-8")
    asked = [wanted("order-service", "dependsOn", "mysql-core"),
             wanted("order-service", "dependsOn", "redis-cluster", "订单服务"),  # the row names it by its alias
             wanted("payment-service", "dependsOn", "redis-cluster"),  # the relation by one of its labels
             wanted("order-service", "ownedBy", "交易组"),
             wanted("order-service", "ownedBy", "mysql-core"),  # no such row
             wanted("payment-service", "ownedBy", "redis-cluster")]  # both ends on a row, another relation
    assert row_lines(path, vocab(), asked) == [2, 4, 5, 6, None, None]


def test_a_gbk_table_is_read_and_a_missing_or_broken_one_gives_no_line(tmp_path):
    path = tmp_path / "relations.csv"
    path.write_bytes(TABLE.encode("gbk"))
    assert row_lines(path, vocab(), [wanted("order-service", "ownedBy", "交易组")]) == [6]
    assert row_lines(tmp_path / "gone.csv", vocab(), [wanted("order-service", "ownedBy", "交易组")]) == [None]
    path.write_text("not,a,relation table\n1,2,3\n", encoding="utf-8")
    assert row_lines(path, vocab(), [wanted("order-service", "ownedBy", "交易组")]) == [None]
