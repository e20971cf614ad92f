/* kgrag page, part 2: the entity panel, documents (list, versions, delete, upload by drag and
   drop), import with its errors by line, the ontology check, views and the language toggle. */
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
      e.neighbours[rel].forEach(function (n) { flat.push({ label: n.label, relation: rel, asserted: n.asserted }); });
    });
    panel.replaceChildren(head, h("p", { "class": "muted" }, e.id));
    panel.append(h("h3", {}, t("types")), h("p", {}, (e.types || []).join(Kg.sep()) || "–"));
    panel.append(h("h3", {}, t("aliases")), h("p", {}, (e.aliases || []).join(Kg.sep()) || "–"));
    panel.append(h("h3", {}, t("neighbours")));
    // A phone shows fewer neighbours in the drawing, so that its labels stay readable; all are listed below.
    if (flat.length) panel.append(h("div", { "class": "entity-graph" }, KgGraph.star(e.label, flat, Kg.openEntity, panel.clientWidth < 500 ? 8 : 16, panel.clientWidth)));
    panel.append(h("ul", {}, Object.keys(e.neighbours || {}).sort().map(function (rel) {
      return h("li", {}, h("b", {}, rel + ": "), e.neighbours[rel].map(function (n) {
        return h("button", { type: "button", "class": "chip", onclick: function () { Kg.openEntity(n.label); } }, n.label);
      }));
    })));
    if (e.sections_about) {
      panel.append(h("h3", {}, t("sections_about")), h("ul", {}, e.sections_about.map(function (s) {
        return h("li", {}, s.title + (s.section ? " § " + s.section : ""), s.reason ? h("span", { "class": "muted" }, " · " + s.reason) : null);
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
        actions.append(h("button", { type: "button", "class": "small danger", onclick: function () { deleteDocument(d); } }, t("delete")));
      }
      return [h("span", {}, d.title, d.pack ? h("span", { "class": "muted" }, " · " + t("col_pack") + " " + d.pack) : null, versionsBox), (d.source || "").split("/").pop(), d.format || "", String(d.chunks),
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
  async function deleteDocument(doc) {
    if (!window.confirm(t("confirm_delete", { title: doc.title }))) return;
    var res = await Kg.api("DELETE", "/documents/" + encodeURIComponent(doc.doc_id), null, { write: true });
    var log = $("#upload-log");
    log.prepend(h("li", { "class": res.status < 300 ? "ok" : "error" }, res.status < 300 ? t("deleted", { title: doc.title }) : Kg.errorText(res.data)));
    loadDocuments();
  }

  var FORMATS = { md: "md", markdown: "md", txt: "txt", text: "txt", html: "html", htm: "html", pdf: "pdf" };
  function readFile(file, binary) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(binary ? String(reader.result).split(",")[1] : reader.result); };
      reader.onerror = function () { reject(reader.error); };
      if (binary) reader.readAsDataURL(file); else reader.readAsText(file);
    });
  }
  /* Reads each file and POSTs /documents: text formats as text, PDF as content_base64. */
  Kg.upload = async function (files) {
    var log = $("#upload-log");
    for (var i = 0; i < files.length; i++) {
      var file = files[i], ext = (file.name.split(".").pop() || "").toLowerCase(), format = FORMATS[ext] || "txt";
      var body = { source: "upload:" + file.name, format: format };
      if (format === "pdf") { body.content_base64 = await readFile(file, true); body.filename = file.name; }
      else body.text = await readFile(file, false);
      var res = await Kg.api("POST", "/documents", body, { write: true });
      var d = res.data || {};
      log.prepend(h("li", { "class": res.status < 300 ? "ok" : "error", "data-file": file.name }, res.status < 300
        ? t("uploaded", { name: file.name, added: d.added, updated: d.updated, unchanged: d.unchanged, chunks: d.chunks_indexed })
        : t("upload_failed", { name: file.name, message: Kg.errorText(d) + ((d.error && d.error.problems) ? " (" + d.error.problems.join("; ") + ")" : "") })));
    }
    if (F.documents_list) loadDocuments();
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
    if (!file) return;
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

  /* ---- views, language ---- */
  function show(view) {
    ["search", "documents", "import"].forEach(function (name) {
      $("#view-" + name).hidden = name !== view;
      var link = document.querySelector('nav a[data-view="' + name + '"]');
      if (link) link.classList.toggle("active", name === view);
    });
    if (view === "documents") loadDocuments();
  }
  function route() {
    var hash = location.hash.slice(1);
    if (hash.indexOf("entity=") === 0) { show("search"); Kg.openEntity(decodeURIComponent(hash.slice(7))); return; }
    show(hash === "documents" || hash === "import" ? hash : "search");
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
    if (q && document.body.dataset.searched) Kg.search(q, $("#mode").value, $("#type").value);
  };

  Kg.start = function () {
    $("#lang-toggle").addEventListener("click", function (ev) { ev.preventDefault(); Kg.setLanguage(Kg.lang === "zh" ? "en" : "zh"); });
    $("#token-button").addEventListener("click", function () { Kg.askToken(); });
    dropZone($("#drop"), $("#upload-input"), Kg.upload);
    dropZone($("#import-drop"), $("#import-input"), function (files) { $("#import-input").dataset.ready = "1"; Kg.pendingImport = files[0]; });
    $("#import-form").addEventListener("submit", function (ev) { ev.preventDefault(); Kg.importFile(Kg.pendingImport || $("#import-input").files[0]); });
    $("#run-check").addEventListener("click", runCheck);
    if (!F.upload) $("#drop").replaceChildren(h("span", {}, t("not_available")));
    window.addEventListener("hashchange", route);
    route();
    document.body.dataset.ready = "1";
  };
})();
