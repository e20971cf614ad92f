/* kgrag page, part 2: the entity panel (relations by their labels, each fact's source), documents
   (list, versions, delete, upload by drag and drop with progress), import with its errors by line,
   packs, the ontology and consistency checks, views and the language toggle. */
(function () {
  "use strict";
  var Kg = window.Kg, h = Kg.h, t = Kg.t, $ = Kg.$, F = Kg.features;

  function table(headers, rows) {
    return h("div", { "class": "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, headers.map(function (x) { return h("th", { text: x }); }))),
      h("tbody", {}, rows.map(function (r) { return h("tr", {}, r.map(function (c) { return h("td", {}, c == null ? "" : c); })); }))));
  }
  function message(box, cls, text) { box.replaceChildren(h("p", { "class": cls }, text)); }

  /* ---- the entity panel ---- */
  function closePanel() { $("#panel").hidden = true; $(".layout").classList.remove("with-panel"); }
  Kg.openEntity = async function (key) {
    var panel = $("#panel");
    panel.hidden = false; $(".layout").classList.add("with-panel");
    panel.replaceChildren(h("p", { "class": "muted" }, t("loading")));
    var res = await Kg.api("GET", "/entities/" + encodeURIComponent(key));
    var head = h("div", { "class": "panel-head" }, h("h2", {}, res.status === 200 ? res.data.label : key),
      h("button", { type: "button", "class": "small secondary", onclick: closePanel }, t("close")));
    if (res.status !== 200) { panel.replaceChildren(head, h("p", { "class": "error" }, Kg.errorText(res.data))); return; }
    var e = res.data, flat = [];
    Object.keys(e.neighbours || {}).sort().forEach(function (rel) {
      e.neighbours[rel].forEach(function (n) { flat.push({ label: n.label, relation: Kg.relLabel(rel), asserted: n.asserted }); });
    });
    panel.replaceChildren(head, h("p", { "class": "muted" }, e.id));
    panel.append(h("h3", {}, t("types")), h("p", {}, (e.types || []).map(Kg.classLabel).join(Kg.sep()) || "–"));
    panel.append(h("h3", {}, t("aliases")), h("p", {}, (e.aliases || []).join(Kg.sep()) || "–"));
    panel.append(h("h3", {}, t("neighbours")));
    // A phone shows fewer neighbours in the drawing, so that its labels stay readable; all are listed below.
    if (flat.length) panel.append(h("div", { "class": "entity-graph" }, KgGraph.star(e.label, flat, Kg.openEntity, panel.clientWidth < 500 ? 8 : 16, panel.clientWidth)));
    panel.append(h("ul", { "class": "facts" }, Object.keys(e.neighbours || {}).sort().map(function (rel) {
      return h("li", { "data-relation": rel }, h("b", { title: rel }, Kg.relLabel(rel) + ": "), e.neighbours[rel].map(function (n) {
        // The fact as asserted: this entity -rel-> n, or n -inverse-> this entity when walked backwards.
        var back = !n.asserted, asserted = rel.charAt(0) === "^" ? rel.slice(1) : back ? (Kg.inverseOf(rel) || rel) : rel;
        var src = h("button", { type: "button", "class": "link source", title: t("fact_source"), onclick: function () {
          Kg.openFact(back ? n.id : e.id, asserted, back ? e.id : n.id);
        } }, "ⓘ");
        return h("span", { "class": "fact" }, h("button", { type: "button", "class": "chip", onclick: function () { Kg.openEntity(n.label); } }, n.label), src);
      }));
    })));
    panel.append(h("div", { "class": "fact-box" }));
    if (e.sections_about) {
      panel.append(h("h3", {}, t("sections_about")), h("ul", {}, e.sections_about.map(function (s) {
        var name = s.title + (s.section ? " § " + s.section : "");
      return h("li", {}, F.outline ? h("a", { href: "#" + Kg.docHash(s.doc_id, s.chunk_id) }, name) : name, s.reason ? h("span", { "class": "muted" }, " · " + s.reason) : null);
      })));
    }
    panel.append(h("h3", {}, t("documents_about")), h("ul", {}, (e.documents_about || []).map(function (d) {
      return h("li", {}, d.title, h("span", { "class": "muted" }, " " + (d.source || "").split("/").pop()));
    })));
    panel.append(h("h3", {}, t("mentioned_in")), h("ul", {}, (e.mentioned_in || []).map(function (m) {
      return h("li", {}, m.title + " ", h("span", { "class": "muted" }, t("mentions", { n: m.mentions })));
    })));
    if (window.innerWidth < 1000) panel.scrollIntoView({ block: "start" });
  };
  /* Where a fact is written: its lines in the graph file, the relation's definition. */
  Kg.openFact = async function (source, relation, target) {
    var panel = $("#panel"), box = panel.querySelector(".fact-box");
    if (!box || panel.hidden) {
      panel.hidden = false; $(".layout").classList.add("with-panel");
      box = h("div", { "class": "fact-box" });
      panel.replaceChildren(h("div", { "class": "panel-head" }, h("h2", {}, t("fact_source")),
        h("button", { type: "button", "class": "small secondary", onclick: closePanel }, t("close"))), box);
    }
    box.replaceChildren(h("p", { "class": "muted" }, t("loading")));
    var res = await Kg.api("GET", "/graph/fact?" + new URLSearchParams({ source: source, relation: relation, target: target, lang: Kg.lang }).toString());
    if (res.status !== 200) { box.replaceChildren(h("p", { "class": "error" }, Kg.errorText(res.data))); return; }
    var f = res.data, st = f.statement;
    Kg.fill(box, h("h3", {}, t("fact_source")),
      h("p", { "class": "fact-line" }, h("b", {}, f.source.label), " —", h("span", { "class": "rel", title: f.relation }, f.relation_label), "→ ", h("b", {}, f.target.label),
        f.weight !== 1 ? h("span", { "class": "muted" }, " · " + t("weight") + " " + f.weight) : null),
      f.origin ? h("p", { "class": "origin" }, t("stated_by", { origin: f.origin })) : null,
      st ? h("p", { "class": "muted" }, t("written_in", { file: st.file, line: st.line })) : h("p", { "class": "muted" }, t("not_in_file")),
      st ? h("pre", { "class": "turtle" }, st.lines.map(function (l) {
        return h("span", { "class": l.fact ? "fact-row" : null }, String(l.n).padStart(5, " ") + "  " + l.text + "\n");
      })) : null,
      f.definition ? h("details", {}, h("summary", {}, t("relation_defined", { file: f.definition.file, line: f.definition.line })),
        h("pre", { "class": "turtle" }, f.definition.text)) : null,
      h("p", { "class": "note" }, t("fact_note")));
    if (window.innerWidth < 1000) box.scrollIntoView({ block: "start" });
  };

  /* ---- documents ---- */
  async function loadDocuments() {
    var box = $("#documents-list");
    if (!F.documents_list) { message(box, "muted", t("documents_unavailable")); return; }
    var res = await Kg.api("GET", "/documents");
    if (Kg.missing(res.status)) { F.documents_list = false; message(box, "muted", t("documents_unavailable")); return; }
    if (res.status !== 200) { message(box, "error", t("error", { message: Kg.errorText(res.data) })); return; }
    var rows = res.data.documents.map(function (d) {
      var actions = h("span", {});
      var versionsBox = h("div", {});
      if (F.document_versions && d.versions > 1) {
        actions.append(h("button", { type: "button", "class": "small secondary", onclick: function () { showVersions(d, versionsBox); } }, t("versions")), " ");
      }
      if (F.document_delete) {
        actions.append(h("button", { type: "button", "class": "small danger", onclick: function () { Kg.deleteDocument(d); } }, t("delete")));
      }
      var title = F.outline ? h("a", { href: "#" + Kg.docHash(d.doc_id) }, d.title) : d.title;
      return [h("span", {}, title, d.pack ? h("span", { "class": "muted" }, " · " + t("col_pack") + " " + d.pack) : null, versionsBox), (d.source || "").split("/").pop(), d.format || "", String(d.chunks),
        d.version ? (d.version.label || d.version.version_id) + (d.version.effective_from ? " · " + d.version.effective_from : "") : "–",
        String(d.versions == null ? 1 : d.versions), actions];
    });
    box.replaceChildren(table([t("col_title"), t("col_source"), t("col_format"), t("col_chunks"), t("col_version"), t("col_versions"), ""], rows));
  }
  async function showVersions(doc, box) {
    var res = await Kg.api("GET", "/documents/" + encodeURIComponent(doc.doc_id) + "/versions");
    if (res.status !== 200) { message(box, "muted", Kg.missing(res.status) ? t("versions_unavailable") : Kg.errorText(res.data)); return; }
    var versions = res.data.versions || res.data;
    box.replaceChildren(h("ul", {}, versions.map(function (v) {
      return h("li", {}, (v.label || v.version_id) + (v.effective_from ? " · " + t("effective") + " " + v.effective_from : "") +
        (v.effective_to ? " · " + t("until") + " " + v.effective_to : ""));
    })));
  }
  Kg.deleteDocument = async function (doc, then) {
    if (!window.confirm(t("confirm_delete", { title: doc.title }))) return;
    var res = await Kg.api("DELETE", "/documents/" + encodeURIComponent(doc.doc_id), null, { write: true });
    var log = $("#upload-log");
    log.prepend(h("li", { "class": res.status < 300 ? "ok" : "error" }, res.status < 300 ? t("deleted", { title: doc.title })
      : t("delete_failed", { title: doc.title, message: Kg.errorText(res.data) })));
    if (res.status < 300 && then) then();
    loadDocuments();
  };

  var FORMATS = { md: "md", markdown: "md", txt: "txt", text: "txt", html: "html", htm: "html", pdf: "pdf", docx: "docx", xlsx: "xlsx", pptx: "pptx", csv: "csv" };
  function readBytes(file) {  /* the file's bytes, base64 */
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(String(reader.result).split(",")[1] || ""); };
      reader.onerror = function () { reject(reader.error); };
      reader.readAsDataURL(file);
    });
  }
  /* Reads each file and POSTs /documents (its bytes as content_base64), one at a
     time, with a bar over all of them and a line per file that says what happened or why not. */
  Kg.upload = async function (files) {
    var log = $("#upload-log"), bar = $("#upload-progress"), total = files.length, failed = 0;
    bar.hidden = false; bar.max = total; bar.value = 0;
    for (var i = 0; i < total; i++) {
      var file = files[i], ext = (file.name.split(".").pop() || "").toLowerCase(), format = FORMATS[ext];
      var line = h("li", { "class": "busy", "data-file": file.name }, t("upload_busy", { name: file.name, i: i + 1, n: total }));
      log.prepend(line);
      var res;
      try {
        var body = { source: "upload:" + file.name };
        /* Every file goes as its bytes, read by the server as `kg ingest` reads it: a note saved as GBK or Big5
           decoded as such (read as text here it would be UTF-8 noise), a picture refused, a spreadsheet read. */
        body.content_base64 = await readBytes(file); body.filename = file.name;
        if (format) body.format = format;
        res = await Kg.api("POST", "/documents", body, { write: true });
      } catch (e) {
        res = { status: 0, data: { error: { message: String(e && e.message || e) } } };
      }
      var d = res.data || {};
      line.className = res.status && res.status < 300 ? "ok" : "error";
      line.textContent = res.status && res.status < 300
        ? t("uploaded", { name: file.name, added: d.added, updated: d.updated, unchanged: d.unchanged, chunks: d.chunks_indexed })
        : t("upload_failed", { name: file.name, message: Kg.errorText(d) });
      if (line.className === "error") failed++;
      bar.value = i + 1;
    }
    $("#upload-summary").textContent = t("upload_done", { n: total - failed, failed: failed });
    if (F.documents_list) loadDocuments();
    $("#home").dataset.loaded = "";
  };
  function dropZone(zone, input, onFiles) {
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (ev) { ev.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (name) { zone.addEventListener(name, function () { zone.classList.remove("over"); }); });
    zone.addEventListener("drop", function (ev) { ev.preventDefault(); onFiles(ev.dataTransfer.files); });
    input.addEventListener("change", function () { onFiles(input.files); });
  }

  /* ---- import and check ---- */
  Kg.importFile = async function (file) {
    var box = $("#import-result");
    if (!file) { message(box, "error", t("choose_file_first")); return; }
    message(box, "muted busy", t("importing", { name: file.name }));
    var form = new FormData();
    form.append("file", file, file.name);
    form.append("dry_run", $("#dry-run").checked ? "true" : "false");
    var res = await Kg.api("POST", "/import", form, { write: true });
    if (res.status === 200) { message(box, "ok", t("imported", { name: file.name, summary: res.data.summary })); return; }
    var e = (res.data && res.data.error) || {};
    box.replaceChildren(h("p", { "class": "error" }, t("import_failed", { name: file.name, message: e.message || Kg.errorText(res.data) })));
    if (e.problems && e.problems.length) {
      box.append(table([t("col_file"), t("col_line"), t("col_problem")], e.problems.map(function (p) {
        var m = /^(.*?):(\d+): ([\s\S]*)$/.exec(p);
        return m ? [m[1], m[2], m[3]] : ["", "", p];
      })));
    }
  };
  async function runCheck() {
    var box = $("#check-result");
    var res = await Kg.api("GET", "/ontology/check");
    if (res.status !== 200) { message(box, "error", Kg.missing(res.status) ? t("not_available") : Kg.errorText(res.data)); return; }
    var r = res.data;
    box.replaceChildren(h("p", { "class": r.errors ? "error" : "ok" }, r.findings.length ? t("check_result", r) : t("check_clean")));
    if (r.findings.length) {
      box.append(table([t("col_severity"), t("col_code"), t("col_subject"), t("col_message")], r.findings.map(function (f) {
        return [f.severity, f.code, f.subject, f.message];
      })));
    }
  }

  async function runConsistency() {
    var box = $("#consistency-result");
    message(box, "muted", t("loading"));
    var res = await Kg.api("GET", "/check");
    if (res.status !== 200) { message(box, "error", Kg.missing(res.status) ? t("not_available") : Kg.errorText(res.data)); return; }
    var r = res.data, counts = Object.keys(r.counts || {}).map(function (k) { return k + " " + r.counts[k]; }).join(" · ");
    Kg.fill(box, h("p", { "class": r.clean ? "ok" : "error" }, r.clean ? t("consistent") : t("inconsistent", { n: r.problems.length })),
      counts ? h("p", { "class": "muted" }, counts) : null,
      r.problems.length ? h("ul", {}, r.problems.map(function (p) { return h("li", {}, p); })) : null,
      r.problems.length ? h("p", { "class": "note" }, t("repair_hint")) : null);
  }
  async function loadPacks() {
    var box = $("#packs-list");
    if (!F.packs) { message(box, "muted", t("not_available")); return; }
    var res = await Kg.api("GET", "/packs");
    if (res.status !== 200) { message(box, "error", Kg.errorText(res.data)); return; }
    if (!res.data.packs.length) { message(box, "muted", t("no_packs")); return; }
    box.replaceChildren(h("div", { "class": "cards" }, res.data.packs.map(function (p) {
      function row(label, items) { return items && items.length ? h("p", {}, h("b", {}, label + ": "), items.join(Kg.sep())) : null; }
      return h("article", { "class": "card pack", "data-pack": p.id }, h("h3", {}, p.title || p.id, h("span", { "class": "muted" }, " · " + p.id)),
        h("p", { "class": "muted" }, t("pack_counts", { documents: p.documents, rows: p.registry_rows }) + (p.language ? " · " + p.language : "") + (p.origin ? " · " + p.origin : "")),
        row(t("covers"), p.covers), row(t("does_not_cover"), p.does_not_cover), row(t("key_terms"), p.key_terms), row(t("entry_files"), p.entry_files));
    })));
  }

  /* ---- views, language ---- */
  var VIEWS = ["search", "graph", "documents", "doc", "import"];
  function show(view) {
    VIEWS.forEach(function (name) {
      $("#view-" + name).hidden = name !== view;
      var link = document.querySelector('nav a[data-view="' + name + '"]');
      if (link) link.classList.toggle("active", name === view || (name === "documents" && view === "doc"));
    });
    $(".layout").classList.toggle("wide", view === "graph" || view === "doc");
    if (view === "documents") loadDocuments();
    if (view === "import") loadPacks();
    if (view === "graph") KgExplore.open();
    if (view === "search" && !$("#results").children.length && !Kg.chat.turns().length) { $("#home").hidden = false; Kg.loadHome(); }
  }
  function route() {
    var hash = location.hash.slice(1), params = new URLSearchParams(hash);
    if (hash.indexOf("entity=") === 0) { show("search"); Kg.openEntity(decodeURIComponent(hash.slice(7))); return; }
    if (params.get("doc")) { show("doc"); Kg.openDocument(params); return; }
    show(VIEWS.indexOf(hash) >= 0 && hash !== "doc" ? hash : "search");
  }
  function applyLanguage() {
    document.documentElement.lang = Kg.lang === "zh" ? "zh-CN" : "en";
    document.title = t("title");
    document.querySelectorAll("[data-i18n]").forEach(function (node) { node.textContent = t(node.dataset.i18n); });
    document.querySelectorAll("[data-i18n-placeholder]").forEach(function (node) { node.placeholder = t(node.dataset.i18nPlaceholder); });
    document.querySelectorAll('input[name="lang"]').forEach(function (node) { node.value = Kg.lang; });
  }
  Kg.setLanguage = function (lang) {
    Kg.lang = lang;
    document.cookie = "kg_lang=" + lang + "; path=/; max-age=31536000; samesite=lax";
    applyLanguage();
    var q = $("#q").value.trim();
    // The passages are redrawn in the new language; the conversation is not asked again.
    if (q && document.body.dataset.searched) Kg.search(q, $("#mode").value, $("#type").value, { noAnswer: true });
    if (!$("#home").hidden) Kg.loadHome();
    if (!$("#view-graph").hidden) KgExplore.redraw();
    else KgExplore.state.loaded = false;
    if (!$("#view-doc").hidden) route();
  };

  Kg.start = function () {
    $("#lang-toggle").addEventListener("click", function (ev) { ev.preventDefault(); Kg.setLanguage(Kg.lang === "zh" ? "en" : "zh"); });
    $("#token-button").addEventListener("click", function () { Kg.askToken(); });
    dropZone($("#drop"), $("#upload-input"), Kg.upload);
    dropZone($("#import-drop"), $("#import-input"), function (files) { $("#import-input").dataset.ready = "1"; Kg.pendingImport = files[0]; });
    $("#import-form").addEventListener("submit", function (ev) { ev.preventDefault(); Kg.importFile(Kg.pendingImport || $("#import-input").files[0]); });
    $("#run-check").addEventListener("click", runCheck);
    $("#run-consistency").addEventListener("click", runConsistency);
    if (!F.upload) $("#drop").replaceChildren(h("span", {}, t("not_available")));
    ["graph", "consistency", "packs"].forEach(function (name) {
      var need = { graph: F.graph, consistency: F.check, packs: F.packs }[name];
      document.querySelectorAll("[data-needs=" + name + "]").forEach(function (node) { node.hidden = !need; });
    });
    window.addEventListener("hashchange", route);
    route();
    document.body.dataset.ready = "1";
  };
})();
