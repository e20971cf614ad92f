/* kgrag page, part 1: shared helpers (text, DOM, the JSON API with the token) and the search:
   hits with highlighted terms, why in words, graph paths drawn, the answer with citations.
   Hand-written, no library; exposes window.Kg for panels.js. */
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
    if (opts.write && token) headers.Authorization = "Bearer " + token;
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
  Kg.errorText = function (data) {
    var e = (data && data.error) || {};
    return e.message || (data && data.detail) || "?";
  };
  Kg.missing = function (status) { return status === 404 || status === 405; };

  /* ---- words and marks ---- */
  function termRegex(term) {
    var esc = term.replace(/[.*+?^${}()|[\]\\\-]/g, "\\$&");
    // Index terms are stemmed ("redi"): mark the word the stem begins, at most 4 letters longer.
    return /^[\w.\-]+$/.test(term) ? "(?<![A-Za-z0-9_])" + esc + "[A-Za-z]{0,4}(?![A-Za-z0-9_])" : esc;
  }
  /* Each index term as the passage writes it ("redi" -> "Redis"). */
  Kg.shownTerms = function (text, terms) {
    var shown = [];
    terms.forEach(function (term) {
      if (!term.trim()) return;
      var m = new RegExp(termRegex(term), "i").exec(text), word = m ? m[0] : term;
      if (!shown.some(function (w) { return w.toLowerCase() === word.toLowerCase(); })) shown.push(word);
    });
    return shown;
  };
  Kg.highlight = function (text, terms) {
    var alts = terms.filter(function (x) { return x && x.trim(); })
      .sort(function (a, b) { return b.length - a.length; }).map(termRegex);
    var p = h("p", { "class": "text" });
    if (!alts.length) { p.textContent = text; return p; }
    var re = new RegExp(alts.join("|"), "gi"), last = 0, m;
    while ((m = re.exec(text))) {
      if (!m[0]) { re.lastIndex++; continue; }
      p.appendChild(document.createTextNode(text.slice(last, m.index)));
      p.appendChild(h("mark", { text: m[0] }));
      last = m.index + m[0].length;
    }
    p.appendChild(document.createTextNode(text.slice(last)));
    return p;
  };
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
    if (why.followup) words.push(t("why_followup", { terms: Kg.shownTerms(text || "", why.followup.terms).join(Kg.sep()), rank: why.followup.rank }));
    return words;
  };

  /* A passage opened in place: document, version, effective date, section, page/lines, text. */
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
    if (c.page != null) where.push(t("page") + " " + c.page);
    if (c.lines) where.push(t("lines") + " " + c.lines[0] + "–" + c.lines[1]);
    row(t("page") + " / " + t("lines"), where.join(", "));
    var box = h("div", { "class": "passage", "data-chunk": c.chunk_id }, dl, h("p", { "class": "text", text: c.text }));
    if (c.parent && c.parent.text && c.parent.text !== c.text) {
      box.append(h("details", {}, h("summary", { text: t("context") }), h("p", { "class": "parent", text: c.parent.text })));
    }
    return box;
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
        h("span", { "class": "where" }, (hit.source || hit.doc_id).split("/").pop() + ":" + hit.lines[0] + "–" + hit.lines[1]), open),
      Kg.highlight(hit.text.length > 420 ? hit.text.slice(0, 420) + "…" : hit.text, terms),
      h("ul", { "class": "why", "aria-label": t("why") }, Kg.whyWords(why, [hit.title, hit.section, hit.text].join("\n")).map(function (w) { return h("li", { text: w }); })));
    if (why.graph) {
      var s = Kg.pathSteps(why.graph.path || "");
      var width = Math.max(260, (Kg.$("#results").clientWidth || 600) - 30);
      var svg = KgGraph.path(s.nodes, s.relations, t(s.end === "about" ? "end_about" : "end_mention"), width, Kg.openEntity);
      li.append(h("div", { "class": "graph-path", title: t("graph_path") }, svg));
    }
    var card = null;
    open.addEventListener("click", function () {
      if (card) { card.remove(); card = null; open.textContent = t("show_passage"); return; }
      card = Kg.passage(hit); li.append(card); open.textContent = t("hide_passage");
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
    if (result.packs_used && result.packs_used.length) box.append(h("p", { "class": "note" }, t("col_pack") + ": " + result.packs_used.map(function (p) { return p.id + (p.why ? " (" + p.why + ")" : ""); }).join(Kg.sep())));
    if (!result.hits.length) { box.append(h("p", { "class": "empty" }, t("no_hits"))); return; }
    box.append(h("p", { "class": "muted" }, t("hits", { n: result.hits.length })));
    box.append(h("ol", { "class": "hits" }, result.hits.map(renderHit)));
  };

  Kg.renderAnswer = function (ans) {
    var box = Kg.$("#answer");
    box.hidden = false;
    box.replaceChildren(h("h2", {}, t("answer")));
    var byN = {};
    (ans.citations || []).forEach(function (c) { byN[c.n] = c; });
    var byR = {};
    (ans.facts || []).forEach(function (f) { byR[f.key] = f; });
    var opened = h("div", { "class": "opened" });
    function cite(n) {
      return h("button", { type: "button", "class": "cite", "data-n": n, onclick: function () {
        var shown = opened.querySelector('[data-cite="' + n + '"]');
        if (shown) { shown.remove(); return; }
        if (!byN[n]) return;
        var card = Kg.passage(byN[n]); card.dataset.cite = n;
        card.prepend(h("strong", {}, "[" + n + "] "));
        opened.append(card);
      } }, String(n));
    }
    var text = h("p", { "class": "answer-text" });
    if (!ans.found) text.append(h("span", { "class": "muted" }, t("no_answer") + " "));
    if (ans.sentences && ans.sentences.length) {
      ans.sentences.forEach(function (s) {
        var sentence = h("span", { "class": "sentence" + (s.flagged ? " flagged" : ""), title: s.flagged ? t("unsupported") : null },
          s.text.replace(/\s*\[\d+\]/g, ""));
        var facts = (s.facts || []).map(function (k) {  // a graph fact [R1]: its source is in the list below
          return h("span", { "class": "cite fact", title: (byR[k] || {}).source || "" }, k);
        });
        text.append.apply(text, [sentence].concat(facts, (s.citations || []).map(cite), [" "]));  // append() does not flatten arrays
      });
    } else {
      (ans.answer || "").split(/(\[\d+\])/).forEach(function (part) {
        var m = /^\[(\d+)\]$/.exec(part);
        text.append(m ? cite(Number(m[1])) : document.createTextNode(part));
      });
    }
    box.append(text, opened);
    if (ans.facts && ans.facts.length) {
      box.append(h("ul", { "class": "facts" }, ans.facts.map(function (f) { return h("li", {}, "[" + f.key + "] " + f.source); })));
    }
    if (ans.citations && ans.citations.length) {
      box.append(h("details", { "class": "sources" }, h("summary", {}, t("citations")),
        h("ol", {}, ans.citations.map(function (c) { return h("li", { value: c.n }, c.title + (c.section ? " § " + c.section : "")); }))));
    }
    box.append(h("p", { "class": "note" }, t(ans.path === "llm" ? "answer_path_llm" : "answer_path_rules") + (ans.path_reason ? " · " + ans.path_reason : "")));
  };

  function nextPaint() {
    return new Promise(function (resolve) { requestAnimationFrame(function () { setTimeout(resolve, 0); }); });
  }
  var latest = 0;
  Kg.search = async function (q, mode, type) {
    var mine = ++latest;  // an answer to an older search that arrives late is dropped
    var withAnswer = Kg.features.ask && Kg.$("#with-answer").checked;
    var body = { query: q, mode: mode, types: type ? [type] : null }, asOf = Kg.$("#as-of");
    if (asOf && asOf.value) body.as_of = asOf.value;
    Kg.$("#results").setAttribute("aria-busy", "true");
    Kg.$("#answer").hidden = true;
    var params = { q: q, mode: mode, type: type || "" };
    if (body.as_of) params.as_of = body.as_of;
    history.replaceState(null, "", "/?" + new URLSearchParams(params).toString() + location.hash);
    var started = performance.now();
    var asking = withAnswer ? Kg.api("POST", "/ask", Object.assign({ question: q, mode: mode }, body.as_of ? { as_of: body.as_of } : {})) : null;
    var res = await Kg.api("POST", "/query", body);
    var answered = performance.now();
    if (mine !== latest) return;
    if (res.status !== 200) Kg.$("#results").replaceChildren(h("p", { "class": "error" }, t("error", { message: Kg.errorText(res.data) })));
    else Kg.renderResult(res.data);
    await nextPaint();
    Kg.timings.push({ kind: "query", api_ms: answered - started, render_ms: performance.now() - answered });
    Kg.$("#results").removeAttribute("aria-busy");
    if (asking) {
      var ans = await asking, got = performance.now();
      if (mine !== latest) return;
      if (Kg.missing(ans.status)) { Kg.features.ask = false; Kg.$("#answer-toggle").hidden = true; }
      else if (ans.status !== 200) { var box = Kg.$("#answer"); box.hidden = false; box.replaceChildren(h("p", { "class": "error" }, t("error", { message: Kg.errorText(ans.data) }))); }
      else Kg.renderAnswer(ans.data);
      await nextPaint();
      Kg.timings.push({ kind: "ask", api_ms: got - started, render_ms: performance.now() - got });
    }
    document.body.dataset.searched = String(Kg.timings.length);
  };

  document.addEventListener("DOMContentLoaded", function () {
    Kg.$("#search-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var q = Kg.$("#q").value.trim();
      if (q) Kg.search(q, Kg.$("#mode").value, Kg.$("#type").value);
    });
    if (boot.result) {
      Kg.renderResult(boot.result);  // the server's rendering, redrawn with graphs and buttons
      if (Kg.features.ask && Kg.$("#with-answer").checked) Kg.search(boot.result.query, Kg.$("#mode").value, Kg.$("#type").value);
    }
    Kg.start();
  });
})();
