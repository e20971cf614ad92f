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


def test_kg_entity_sources_names_the_table_and_line_of_each_edge(tmp_path):
    """`kg entity X --sources` (the real CLI, its human output): each neighbour with the table and line that state its
    edge, an edge from an RDF file with that file's name; without the flag, as before."""
    from click.testing import CliRunner

    from kg.cli import cli

    def kg(*args):
        return CliRunner().invoke(cli, [*map(str, args), "--data-dir", str(tmp_path / "kb")], catch_exceptions=False)

    table = tmp_path / "deps.csv"
    table.write_text("source,relation,target,source_aliases\norder-service,dependsOn,mysql-core,订单服务\n"
                     "订单服务,依赖,redis-cluster,\norder-service,ownedBy,交易组,\n", encoding="utf-8")
    assert kg("import", table).exit_code == 0
    extra = tmp_path / "extra.ttl"
    extra.write_text("@prefix kg: <https://kgrag.dev/ontology#> .\n@prefix ent: <https://kgrag.dev/entity/> .\n"
                     "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
                     "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                     "ent:k8s-prod a owl:NamedIndividual ; rdfs:label \"k8s-prod\" .\n"
                     "ent:order-service kg:runsOn ent:k8s-prod .\n", encoding="utf-8")
    assert kg("import", extra).exit_code == 0
    shown = kg("entity", "order-service", "--sources")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    # the second row names order-service by the alias the first gave it, and the relation by its label
    assert "  dependsOn: mysql-core (deps.csv:2), redis-cluster (deps.csv:3)" in lines
    assert "  ownedBy: 交易组 (deps.csv:4)" in lines
    assert "  runsOn: k8s-prod (extra.ttl)" in lines
    assert "  dependsOn: mysql-core, redis-cluster" in kg("entity", "order-service").stdout.splitlines()


def test_lines_are_counted_as_the_import_counts_them(tmp_path):
    """The rows are found by the csv module over the whole decoded file, not through the import's reader: a BOM, blank
    lines before the header, a quoted note over two lines, CR-LF and lone-CR line ends must give the line numbers the
    import's reader (`TableSource.rows`) gives those rows."""
    from kg.relations.source import TableSource

    table = ("\r\n\r\nsource,relation,target,note\r\n"
             'order-service,dependsOn,mysql-core,"two\r\nlines"\r\n'
             "payment-service,dependsOn,redis-cluster,\r"
             "order-service,ownedBy,交易组,\n")
    path = tmp_path / "relations.csv"
    path.write_bytes(b"\xef\xbb\xbf" + table.encode("utf-8"))
    with TableSource(path) as source:
        expected = [line for line, _ in source.rows()]
    assert expected == [4, 6, 7]
    asked = [wanted("order-service", "dependsOn", "mysql-core"), wanted("payment-service", "dependsOn", "redis-cluster"),
             wanted("order-service", "ownedBy", "交易组")]
    assert row_lines(path, vocab(), asked) == expected
