/* kgrag page, part 1: shared helpers (text, DOM, the JSON API with the token) and the search:
   hits rendered as Markdown with the matched words marked, why in words, graph paths drawn.
   Exposes window.Kg for chat.js (the conversation), panels.js, docs.js and explore.js. */
(function () {
  "use strict";
  var boot = JSON.parse(document.getElementById("kg-boot").textContent);
  var Kg = { lang: boot.lang, features: boot.features, timings: [] };
  window.Kg = Kg;

  Kg.t = function (key, vars) {
    var text = (boot.messages[Kg.lang] || boot.messages.en)[key];
    if (text == null) text = key;
    return text.replace(/\{(\w+)\}/g, function (all, name) { return vars && vars[name] != null ? vars[name] : all; });
  };
  /* h("p", {class: "x", onclick: fn}, child, "text", [more]) */
  Kg.h = function (tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v == null || v === false) return;
      if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : v);
    });
    (function add(items) {
      items.forEach(function (c) {
        if (c == null || c === false) return;
        if (Array.isArray(c)) add(c);
        else node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
      });
    })(Array.prototype.slice.call(arguments, 2));
    return node;
  };
  var h = Kg.h, t = Kg.t;
  Kg.$ = function (sel) { return document.querySelector(sel); };
  /* box.replaceChildren(...) without the nulls of parts not shown (the DOM would write them as "null"). */
  Kg.fill = function (box) {
    box.replaceChildren.apply(box, Array.prototype.slice.call(arguments, 1).filter(function (c) { return c != null && c !== false; }));
    return box;
  };
  Kg.sep = function () { return Kg.lang === "zh" ? "、" : ", "; };

  /* ---- the API; writes carry the token (asked for once per tab when the server has one) ---- */
  function askToken(errorText) {
    var dialog = Kg.$("#token-dialog"), input = Kg.$("#token-input"), err = Kg.$("#token-error");
    err.hidden = !errorText; err.textContent = errorText || "";
    input.value = "";
    return new Promise(function (resolve) {
      dialog.addEventListener("close", function done() {
        dialog.removeEventListener("close", done);
        var token = dialog.returnValue === "ok" ? input.value.trim() : "";
        if (token) sessionStorage.setItem("kg-token", token);
        resolve(token || null);
      });
      dialog.showModal();
      input.focus();
    });
  }
  Kg.askToken = askToken;

  /* -> {status, data}; data is the JSON body (errors: {error: {type, message, problems}}). */
  Kg.api = async function (method, path, body, opts) {
    opts = opts || {};
    var token = sessionStorage.getItem("kg-token");
    if (opts.write && Kg.features.token && !token) {
      token = await askToken();
      if (!token) return { status: 401, data: { error: { type: "AuthError", message: t("token_missing") } } };
    }
    var headers = { Accept: "application/json" };
    if (body != null && !(body instanceof FormData)) headers["Content-Type"] = "application/json";
    if (opts.write && token) headers.Authorization = "Bearer " + Kg.headerBytes(token);
    var res = await fetch(path, { method: method, headers: headers,
      body: body == null ? undefined : body instanceof FormData ? body : JSON.stringify(body) });
    var data = null;
    try { data = await res.json(); } catch (e) { data = { error: { type: "HTTPError", message: res.status + " " + res.statusText } }; }
    if (res.status === 401 && opts.write && !opts.retried) {
      sessionStorage.removeItem("kg-token");
      var again = await askToken(t("token_wrong"));
      if (!again) return { status: 401, data: data };
      return Kg.api(method, path, body, Object.assign({}, opts, { retried: true }));
    }
    return { status: res.status, data: data };
  };
  /* A header value is bytes: a token in any script is sent as its UTF-8 bytes (which the server
     compares as sent); fetch() itself refuses characters above U+00FF with a TypeError. */
  Kg.headerBytes = function (text) {
    return Array.from(new TextEncoder().encode(text), function (b) { return String.fromCharCode(b); }).join("");
  };
  Kg.errorText = function (data) {
    var e = (data && data.error) || {};
    var text = e.message || (data && data.detail) || "?";
    return e.problems && e.problems.length ? text + " (" + e.problems.join("; ") + ")" : text;
  };
  Kg.missing = function (status) { return status === 404 || status === 405; };

  /* ---- words and marks ---- */
  /* Each index term as the passage writes it ("redi" -> "Redis"). */
  Kg.shownTerms = function (text, terms) {
    var shown = [];
    terms.forEach(function (term) {
      if (!term.trim()) return;
      var m = new RegExp(KgMd.termRegex(term), "i").exec(text), word = m ? m[0] : term;
      if (!shown.some(function (w) { return w.toLowerCase() === word.toLowerCase(); })) shown.push(word);
    });
    return shown;
  };
  /* A passage's Markdown, rendered safely, with the matched words marked; long ones folded. */
  Kg.markdown = function (text, terms, fold) {
    var box = KgMd.render(text, terms, { className: "text" });
    if (!fold || text.length < 600) return box;
    box.classList.add("folded");
    var more = h("button", { type: "button", "class": "link more", onclick: function () {
      box.classList.toggle("folded"); more.textContent = t(box.classList.contains("folded") ? "more" : "less");
    } }, t("more"));
    return h("div", {}, box, more);
  };
  Kg.relLabel = function (name) {
    var vocab = (boot.vocab || {})[Kg.lang] || {}, rels = vocab.relations || {};
    if (name && name.charAt(0) === "^") return "← " + (rels[name.slice(1)] || name.slice(1));
    return rels[name] || name;
  };
  Kg.classLabel = function (name) { return (((boot.vocab || {})[Kg.lang] || {}).classes || {})[name] || name; };
  /* "order-service dependsOn redis-cluster" -> [source, relation, target], the relation found among the ontology's names. */
  Kg.splitTriple = function (triple) {
    var names = Object.keys((((boot.vocab || {}).en) || {}).relations || {});
    for (var i = 0; i < names.length; i++) {
      var at = triple.indexOf(" " + names[i] + " ");
      if (at > 0) return [triple.slice(0, at), names[i], triple.slice(at + names[i].length + 2)];
    }
    return null;
  };
  Kg.inverseOf = function (name) { return (((boot.vocab || {}).inverse) || {})[name]; };
  Kg.pathSteps = function (path) {
    var parts = path.replace(/^query:/, "").split("→").map(function (s) { return s.trim(); });
    var end = parts[parts.length - 1] === "document about it" ? "about" : "mention";
    var steps = parts.length > 1 ? parts.slice(0, -1) : parts;
    return { nodes: steps.filter(function (_, i) { return i % 2 === 0; }), relations: steps.filter(function (_, i) { return i % 2 === 1; }), end: end };
  };
  Kg.whyWords = function (why, text) {
    var words = [];
    if (why.bm25) words.push(t("why_bm25", { terms: Kg.shownTerms(text || "", why.bm25.terms).join(Kg.sep()), rank: why.bm25.rank }));
    if (why.graph) {
      var g = why.graph, s = Kg.pathSteps(g.path || "");
      var first = s.nodes[0] || g.entity, reached = s.nodes[s.nodes.length - 1] || g.entity;
      words.push(t("why_graph", { entity: first, rank: g.rank }) + (Kg.lang === "zh" ? "；" : "; ") +
        t(g.via === "about" ? "why_graph_about" : "why_graph_mention", { entity: reached }));
      if (g.about) words.push(t("why_about", { about: g.about }));
    }
    if (why.dense) words.push(t("why_dense", { rank: why.dense.rank, similarity: why.dense.similarity.toFixed(3) }));
    if (why.diversity) words.push(t("why_diversity", { from: why.diversity.from, similarity: why.diversity.similarity_above.toFixed(3) }));
    if (why.hop) words.push(t("why_hop", { rank: why.hop.rank, similarity: why.hop.similarity.toFixed(3) }));
    if (why.named) words.push(t("why_named", { heading: why.named.heading }));
    if (why.followup) words.push(t("why_followup", { terms: Kg.shownTerms(text || "", why.followup.terms).join(Kg.sep()), rank: why.followup.rank }));
    if (why.copies && why.copies.length) words.push(t("why_copies", { sources: why.copies.map(function (c) {
      return (c.source || c.title).split("/").pop().replace(/^(?:api:)?(?:upload:)?/, ""); }).join(Kg.sep()) }));
    return words;
  };

  /* A passage opened in place: document, version, effective date, section, page/lines, text. */
  /* Where a hit is, as the file's own program shows it (retrieval/types.py `place`): lines of a text file, a PDF's
     page, a deck's slide, a sheet's row; nothing for Word and HTML, whose section says where. */
  var UNITS = { pdf: "page", pptx: "slide", xlsx: "row", csv: "row" };
  function suffixOf(name) { var dot = name.lastIndexOf("."); return dot > 0 ? name.slice(dot + 1).toLowerCase() : ""; }
  Kg.unit = function (source) { return UNITS[suffixOf((source || "").split("/").pop())] || "page"; };  /* what `page` counts */
  Kg.place = function (source, lines, page) {
    var name = (source || "").split("/").pop(), suffix = suffixOf(name);
    if (page != null && UNITS[suffix]) return name + " · " + t(UNITS[suffix]) + " " + page;
    if (UNITS[suffix] || suffix === "docx" || suffix === "html" || suffix === "htm" || !lines) return name;
    return name + ":" + lines[0] + "–" + lines[1];
  };
  Kg.passage = function (c) {
    var dl = h("dl");
    function row(label, value) { if (value != null && value !== "") dl.append(h("dt", { text: label }), h("dd", { text: String(value) })); }
    var v = c.version;
    row(t("document"), c.title + (c.source ? " (" + c.source.split("/").pop() + ")" : ""));
    if (v) {
      row(t("version"), v.label || v.version_id);
      row(t("effective"), v.effective_from);
      row(t("until"), v.effective_to);
    }
    row(t("section"), c.section);
    var where = [];
    if (c.page != null) where.push(t(Kg.unit(c.source)) + " " + c.page);
    if (c.lines) where.push(t("lines") + " " + c.lines[0] + "–" + c.lines[1]);
    row(t(Kg.unit(c.source)) + " / " + t("lines"), where.join(", "));
    var box = h("div", { "class": "passage", "data-chunk": c.chunk_id }, dl, Kg.markdown(c.text, c.terms || [], false));
    if (Kg.features.outline && c.doc_id) {
      box.append(h("a", { "class": "small open-doc", href: "#" + Kg.docHash(c.doc_id, c.chunk_id, v && v.version_id) }, t("open_in_document")));
    }
    if (c.parent && c.parent.text && c.parent.text !== c.text) {
      box.append(h("details", {}, h("summary", { text: t("context") }), h("p", { "class": "parent", text: c.parent.text })));
    }
    return box;
  };

  Kg.docHash = function (docId, chunkId, versionId) {
    var p = new URLSearchParams({ doc: docId });
    if (chunkId) p.set("chunk", chunkId);
    if (versionId) p.set("v", versionId);
    return p.toString();
  };

  /* ---- search ---- */
  function entityChip(label) {
    return h("button", { type: "button", "class": "chip", onclick: function () { Kg.openEntity(label); } }, label);
  }
  function renderHit(hit) {
    var why = hit.why || {}, terms = [].concat((why.bm25 || {}).terms || [], (why.followup || {}).terms || []);
    var li = h("li", { "class": "hit", "data-chunk": hit.chunk_id });
    var open = h("button", { type: "button", "class": "small secondary open-passage" }, t("show_passage"));
    li.append(
      h("div", { "class": "hit-head" }, h("span", { "class": "rank" }, hit.rank), h("strong", {}, hit.title),
        hit.section ? h("span", { "class": "section" }, "§ " + hit.section) : null,
        hit.version && hit.version.label ? h("span", { "class": "section" }, hit.version.label) : null,
        h("span", { "class": "where" }, hit.source ? Kg.place(hit.source, hit.lines, hit.page) : hit.doc_id), open),
      Kg.markdown(hit.text, terms, true),
      h("ul", { "class": "why", "aria-label": t("why") }, Kg.whyWords(why, [hit.title, hit.section, hit.text].join("\n")).map(function (w) { return h("li", { text: w }); })));
    if (why.graph) {
      var s = Kg.pathSteps(why.graph.path || "");
      var width = Math.max(260, (Kg.$("#results").clientWidth || 600) - 30);
      var svg = KgGraph.path(s.nodes, s.relations.map(Kg.relLabel), t(s.end === "about" ? "end_about" : "end_mention"), width, Kg.openEntity);
      li.append(h("div", { "class": "graph-path", title: t("graph_path") }, svg));
    }
    var card = null;
    open.addEventListener("click", function () {
      if (card) { card.remove(); card = null; open.textContent = t("show_passage"); return; }
      card = Kg.passage(Object.assign({ terms: terms }, hit)); li.append(card); open.textContent = t("hide_passage");
    });
    return li;
  }
  Kg.renderResult = function (result) {
    var box = Kg.$("#results");
    box.replaceChildren();
    box.append(h("p", { "class": "entities" }, h("span", {}, t("entities_named") + ":"),
      result.entities.length ? result.entities.map(function (e) { return entityChip(e.label); }) : h("span", { "class": "muted" }, t("none_linked"))));
    if (result.followup) box.append(h("p", { "class": "note" }, t("followup_note", { bridge: result.followup.bridge.join(Kg.sep()) })));
    if (result.as_of) box.append(h("p", { "class": "note" }, t("as_of") + " " + result.as_of));
    if (result.graph) box.append(h("p", { "class": "note graph-walk" }, result.graph.walked === "store"
      ? t("graph_store", { store: result.graph.store }) : t("graph_local", { problem: result.graph.problem || "" })));
    var ids = (result.packs_used || []).map(function (p) { return p.id; });
    if (result.routing && result.routing.outside) {  // no pack has a basis for it: the documents outside packs were searched
      box.append(h("p", { "class": "note packs-outside" }, t("packs_outside", { why: result.routing.note })));
    } else if (ids.length && result.routing && result.routing.fallback) {  // no pack chosen: every pack and the documents outside packs
      var best = Math.max.apply(null, Object.values(result.routing.scores || {}).concat([0]));
      box.append(h("p", { "class": "note packs-fallback" }, t("packs_fallback", { best: best.toFixed(2), packs: ids.join(Kg.sep()) })));
    } else if (ids.length) box.append(h("p", { "class": "note" }, t("col_pack") + ": " + result.packs_used.map(function (p) { return p.id + (p.why ? " (" + p.why + ")" : ""); }).join(Kg.sep())));
    if (!result.hits.length) { box.append(h("p", { "class": "empty" }, t("no_hits"))); return; }
    box.append(h("p", { "class": "muted" }, t("hits", { n: result.hits.length })));
    box.append(h("ol", { "class": "hits" }, result.hits.map(renderHit)));
  };

  Kg.nextPaint = function () {
    return new Promise(function (resolve) { requestAnimationFrame(function () { setTimeout(resolve, 0); }); });
  };
  var latest = 0;
  /* The passages for a question (POST /query) and, with answers on, the answer streamed into the
     conversation (chat.js). `retrieval` is the text searched: the question, or with the one before
     it when the server does not take a conversation's history. */
  Kg.search = async function (q, mode, type, opts) {
    opts = opts || {};
    var mine = ++latest;  // an answer to an older search that arrives late is dropped
    Kg.searching = mine;
    var withAnswer = Kg.features.ask && Kg.$("#with-answer").checked && !opts.noAnswer;
    var asOf = Kg.$("#as-of"), as_of = asOf && asOf.value ? asOf.value : null;
    var turn = withAnswer ? Kg.chat.begin(q, { mode: mode, as_of: as_of, followup: opts.followup }) : null;
    var retrieval = turn ? turn.retrieval : q;
    var body = { query: retrieval, mode: mode, types: type ? [type] : null };
    if (as_of) body.as_of = as_of;
    Kg.$("#results").setAttribute("aria-busy", "true");
    Kg.$("#home").hidden = true;
    var params = { q: q, mode: mode, type: type || "" };
    if (as_of) params.as_of = as_of;
    history.replaceState(null, "", "/?" + new URLSearchParams(params).toString() + (location.hash.indexOf("#search") === 0 ? "" : location.hash));
    var started = performance.now();
    var answering = turn ? Kg.chat.run(turn, function () { return mine === latest; }) : null;
    var res = await Kg.api("POST", "/query", body);
    var answered = performance.now();
    if (mine !== latest) return;
    if (res.status !== 200) Kg.$("#results").replaceChildren(h("p", { "class": "error" }, t("error", { message: Kg.errorText(res.data) })));
    else Kg.renderResult(res.data);
    await Kg.nextPaint();
    Kg.timings.push({ kind: "query", api_ms: answered - started, render_ms: performance.now() - answered });
    Kg.$("#results").removeAttribute("aria-busy");
    if (answering) {
      var got = await answering;
      if (mine !== latest) return;
      await Kg.nextPaint();
      if (got) Kg.timings.push({ kind: "ask", api_ms: got.api_ms, first_delta_ms: got.first_delta_ms, render_ms: performance.now() - got.done });
    }
    document.body.dataset.searched = String(Kg.timings.length);
  };

  document.addEventListener("DOMContentLoaded", function () {
    Kg.$("#search-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var q = Kg.$("#q").value.trim();
      if (q) Kg.search(q, Kg.$("#mode").value, Kg.$("#type").value);
    });
    Kg.chat.restore();
    if (boot.result) {
      Kg.renderResult(boot.result);  // the server's rendering, redrawn with graphs and buttons
      Kg.$("#home").hidden = true;
      if (Kg.features.ask && Kg.$("#with-answer").checked && !Kg.chat.has(boot.result.query)) {
        Kg.search(boot.result.query, Kg.$("#mode").value, Kg.$("#type").value);
      } else document.body.dataset.searched = String(Kg.timings.length);  // its answer is the conversation's last turn
    }
    Kg.start();
  });
})();
