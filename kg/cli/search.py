"""Asking: `kg query` (ranked passages with why) and `kg entity`."""

from __future__ import annotations

from pathlib import Path

import click

from kg.cli.base import (
    cli,
    data_dir_option,
    echo_json,
    json_option,
    open_kb,
)


@cli.command()
@click.argument("text")
@click.option("-k", type=int, default=None, help="How many hits, 1 to 200 (default 10, KG_DEFAULT_K).")
@click.option("--mode", type=click.Choice(["full", "bm25", "graph", "dense"]), default="full", show_default=True,
              help="full = text + graph (+ meaning when vectors exist); bm25 = text only; graph = graph only; "
                   "dense = meaning only (needs `kg embed`).")
@click.option("--type", "types", multiple=True, help="Expand only to entities of this class or its subclasses (repeatable).")
@click.option("--pack", "packs", multiple=True, metavar="ID", help="Search only this knowledge pack (repeatable, at most 2).")
@click.option("--as-of", "as_of", help="Search the document versions in force on this date (YYYY-MM-DD, YYYY-MM, YYYY).")
@data_dir_option
@json_option
def query(text: str, k: int | None, mode: str, types: tuple[str, ...], as_of: str | None, packs: tuple[str, ...],
          data_dir: Path | None, as_json: bool) -> None:
    """Ranked passages for a question, each with why it was found."""
    with open_kb(data_dir) as kb:
        result = kb.query(text, k=k, mode=mode, types=list(types) or None, as_of=as_of, packs=list(packs) or None)
    if as_json:
        echo_json(result.to_json())
        return
    print_result(result)


def print_result(result, max_text: int = 160) -> None:
    ents = ", ".join(f"{e['label']}" + (f" ({e['surface']})" if e["surface"] != e["label"] else "") for e in result.entities)
    shown = result.query if len(result.query) <= max_text * 2 else (
        f"{result.query[:max_text * 2]}… ({len(result.query):,} characters)")  # a pasted page is not echoed whole
    click.echo(click.style(f"query: {shown}", bold=True))
    click.echo(f"entities: {ents or '(none linked)'}")
    if result.as_of:
        said = "the question's time words" if result.as_of_from == "question" else "--as-of"
        click.echo(f"as of {result.as_of} (from {said}): versions in force then")
    if (result.routing or {}).get("outside"):
        click.echo(f"packs: none has a basis for it ({result.routing['note']}); searched the documents outside packs")
    elif (result.routing or {}).get("fallback") and result.packs_used:
        # One line, not "pack: X (… searched every pack)" a pack: no pack was chosen; the documents outside packs were searched too.
        best = max((result.routing.get("scores") or {}).values(), default=0.0)
        click.echo(f"packs: none chosen (not sure where to look: the best pack scores {best:.2f}); searched every pack "
                   f"({', '.join(u['id'] for u in result.packs_used)}) and the documents outside them")
    else:
        for used in result.packs_used:
            click.echo(f"pack: {used['id']} ({used['why']})")
    if result.graph:
        click.echo(graph_line(result.graph))
    if result.out_of_scope:
        click.echo(result.out_of_scope)
        return
    for near in (result.meaning or {}).get("near_labels", []):
        click.echo(f"near in meaning: {near['label']} ({near['similarity']:.3f})")
    if result.followup:
        click.echo(f"second round: also searched for {', '.join(result.followup['bridge'])} (named by hit 1)")
    if not result.hits:
        click.echo("nothing found: no passage matches these words or entities")
        return
    from retrieval.answer.markup import without_links
    from retrieval.answer.structure import reader_text
    from retrieval.types import place

    for hit in result.hits:
        where = f"{hit.source}{place(hit.source, hit.lines, hit.page)}" if hit.source else hit.doc_id
        section = f" § {hit.section}" if hit.section else ""
        version = f"  ({hit.version['label']}, from {hit.version['effective_from']})" if hit.version and hit.version["effective_from"] else ""
        click.echo(f"{hit.rank:>2}. {click.style(hit.title, fg='cyan')}{section}  [{hit.score:.4f}]  {where}{version}")
        snippet = " ".join(without_links(reader_text(hit.text)).split())  # as a reader sees it: no site markup
        click.echo("    " + (snippet[:max_text] + ("…" if len(snippet) > max_text else "")))
        reasons = []
        if "bm25" in hit.why:
            reasons.append(f"bm25 #{hit.why['bm25']['rank']} ({', '.join(_words(hit.why['bm25'])[:6])})")
        if "graph" in hit.why:
            about = f" ({hit.why['graph']['about']})" if hit.why["graph"].get("about") else ""
            reasons.append(f"graph #{hit.why['graph']['rank']}: {hit.why['graph']['path']}{about}")
        if "dense" in hit.why:
            reasons.append(f"meaning #{hit.why['dense']['rank']} (similarity {hit.why['dense']['similarity']:.3f})")
        if "diversity" in hit.why:
            reasons.append(f"moved up from #{hit.why['diversity']['from']} for diversity "
                           f"(similarity to the hits above {hit.why['diversity']['similarity_above']:.3f})")
        if "hop" in hit.why:
            reasons.append(f"second search in meaning, the question with hit #1: #{hit.why['hop']['rank']} "
                           f"(similarity {hit.why['hop']['similarity']:.3f})")
        if "named" in hit.why:
            reasons.append(f"the section hit #1 names: \"{hit.why['named']['heading']}\""
                           + (f" (moved up from #{hit.why['named']['from']})" if hit.why['named']['from'] else ""))
        if "followup" in hit.why:
            reasons.append(f"second round #{hit.why['followup']['rank']} ({', '.join(_words(hit.why['followup'])[:6])})")
        click.echo("    why: " + " | ".join(reasons))
        if hit.why.get("copies"):
            copies = [c["source"] or c["title"] for c in hit.why["copies"]]
            more = f" (+{len(copies) - 3} more)" if len(copies) > 3 else ""
            click.echo(f"    same text also in: {', '.join(copies[:3])}{more}")


def graph_line(note: dict) -> str:
    """What a result says about the graph it walked (KG_GRAPH_WALK=store)."""
    if note["walked"] == "store":
        return f"graph: the SPARQL store's at {note['store']}"
    return f"graph: graph.ttl's; {note.get('problem', '')}"


@cli.command()
@click.argument("key")
@click.option("--sources", is_flag=True, help="After each neighbour, the table and line that state its edge "
              "(relations.csv:3; graph.ttl for an edge no table states).")
@data_dir_option
@json_option
def entity(key: str, sources: bool, data_dir: Path | None, as_json: bool) -> None:
    """Show an entity (by label or IRI): aliases, types, neighbours, the sections about it (strongest first), where it is mentioned."""
    with open_kb(data_dir) as kb:
        info = kb.entity(key, sources=sources)
    if as_json:
        echo_json(info)
        return
    click.echo(click.style(info["label"], bold=True) + f"  <{info['id']}>")
    click.echo(f"types: {', '.join(info['types']) or '-'}    aliases: {', '.join(info['aliases']) or '-'}")
    if info.get("graph"):
        click.echo(graph_line(info["graph"]))
    for relation, targets in sorted(info["neighbours"].items()):
        click.echo(f"  {relation}: " + ", ".join(t["label"] + (f" ({t['origin']})" if "origin" in t else "")
                                                 for t in targets))
    for doc in info["documents_about"]:
        click.echo(f"  about it: {doc['title']} ({doc['source']})")
    for sec in info.get("sections_about", []):
        where = f"{sec['title']} § {sec['section']}" if sec["section"] else sec["title"]
        click.echo(f"  section about it: {where} [{sec['chunk_id']}] {sec['strength']:.2f} ({sec['reason']})")
    for m in info["mentioned_in"]:
        click.echo(f"  mentioned in: {m['title']} [{m['chunk_id']}] x{m['mentions']}")


def _words(why: dict) -> list[str]:
    """The matched words as the text spells them (`words`; `terms` are the index's stems)."""
    return why.get("words") or why["terms"]
