"""Regression: mention offsets drifted after every run of whitespace (a blank line, a padded table
cell), because the linker's spaCy Doc joined tokens with single spaces; surfaces then read like
"`max-connection" and table-row anchors never matched."""

from __future__ import annotations

from retrieval.graph.linking import EntityLinker


def test_offsets_and_surfaces_are_those_of_the_text_after_blank_lines_and_padding():
    linker = EntityLinker([("max-connections", "e:max"), ("存储节点", "e:node")], {"e:max": "max-connections", "e:node": "存储节点"})
    text = "下表列出参数。\n\n| 参数 |  默认值 |\n|---|---|\n| `max-connections`   |   1024 |\n\n\n存储节点 是进程。  "
    mentions = linker.link(text, strict_case=True)
    assert [(m.surface, text[m.start : m.end]) for m in mentions] == [
        ("max-connections", "max-connections"), ("存储节点", "存储节点")
    ]
    assert mentions[0].start == text.index("max-connections")
