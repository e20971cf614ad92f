/* kgrag page, part 4: the home block (counts, example questions from the knowledge base, the
   documents added last) and the document viewer: a version's sections and passages as Markdown,
   the entities each passage is about, other versions with their effective dates, delete. */
(function () {
  "use strict";
  var Kg = window.Kg, h = Kg.h, t = Kg.t, $ = Kg.$;

  function when(seconds) {
    if (!seconds) return "";
    var d = new Date(typeof seconds === "number" ? seconds * 1000 : seconds);
    return isNaN(d) ? String(seconds) : d.toISOString().slice(0, 16).replace("T", " ");
  }

  Kg.loadHome = async function () {
    var box = $("#home");
    if (!Kg.features.overview || box.dataset.loaded === Kg.lang) return;
    var res = await Kg.api("GET", "/overview?lang=" + Kg.lang);
    if (res.status !== 200) { box.replaceChildren(h("p", { "class": "muted" }, Kg.errorText(res.data))); return; }
    var o = res.data, s = o.stats;
    box.dataset.loaded = Kg.lang;
    Kg.fill(box, 
      h("div", { "class": "counts" }, [["documents", s.documents], ["chunks", s.chunks], ["entities", s.entities], ["edges", s.edges]].map(function (c) {
        return h("div", { "class": "count", "data-count": c[0] }, h("b", {}, String(c[1] == null ? "–" : c[1])), h("span", {}, t("count_" + c[0])));
      })),
      o.examples.length ? h("div", { "class": "examples" }, h("h3", {}, t("examples")), o.examples.map(function (q) {
        return h("button", { type: "button", "class": "chip example", onclick: function () {
          $("#q").value = q; Kg.search(q, $("#mode").value, $("#type").value);
        } }, q);
      })) : null,
      o.recent.length ? h("div", { "class": "recent" }, h("h3", {}, t("recent")), h("ul", {}, o.recent.map(function (d) {
        return h("li", {}, Kg.features.outline ? h("a", { href: "#" + Kg.docHash(d.doc_id) }, d.title) : d.title,
          h("span", { "class": "muted" }, " · " + (d.source || "").split("/").pop() + " · " + when(d.ingested_at)));
      }))) : null);
  };

  /* #doc=ID&chunk=CID&v=VID: the viewer, scrolled to the passage when one is named. */
  Kg.openDocument = async function (params) {
    var box = $("#doc-view"), docId = params.get("doc"), chunk = params.get("chunk"), version = params.get("v");
    box.replaceChildren(h("p", { "class": "muted" }, t("loading")));
    var path = "/documents/" + encodeURIComponent(docId) + "/outline?lang=" + Kg.lang + (version ? "&version=" + encodeURIComponent(version) : "");
    var res = await Kg.api("GET", path);
    if (res.status !== 200) { box.replaceChildren(h("p", { "class": "error" }, t("error", { message: Kg.errorText(res.data) }))); return; }
    var o = res.data, doc = o.document, versions = doc.version_history || [];
    var select = h("select", { id: "doc-version", "aria-label": t("version") }, versions.map(function (v) {
      return h("option", { value: v.version_id, selected: v.version_id === o.version_id },
        (v.label || v.version_id) + (v.effective_from ? " · " + t("effective") + " " + v.effective_from : "") +
        (v.effective_to ? " · " + t("until") + " " + v.effective_to : "") + (v.in_force ? " · " + t("in_force") : ""));
    }));
    select.addEventListener("change", function () { location.hash = Kg.docHash(doc.doc_id, null, select.value); });
    var del = Kg.features.document_delete ? h("button", { type: "button", "class": "small danger", onclick: function () {
      Kg.deleteDocument(doc, function () { location.hash = "documents"; });
    } }, t("delete")) : null;
    var toc = h("ol", { "class": "toc" }, o.sections.map(function (s) {
      return h("li", {}, h("a", { href: "#" + Kg.docHash(doc.doc_id, s.chunks[0], o.version_id) }, s.section || doc.title));
    }));
    var body = h("div", { "class": "doc-body" });
    o.chunks.forEach(function (c, i) {
      if (i === 0 || c.section !== o.chunks[i - 1].section) body.append(h("h3", { "class": "doc-section" }, c.section || doc.title));
      var about = c.about.length ? h("p", { "class": "about" }, h("span", { "class": "muted" }, t("about") + ": "), c.about.map(function (a) {
        return h("button", { type: "button", "class": "chip", title: a.reason + " (" + a.strength + ")", onclick: function () { Kg.openEntity(a.label); } }, a.label);
      })) : null;
      var named = c.mentions.filter(function (m) { return !c.about.some(function (a) { return a.id === m.id; }); });
      var mentions = named.length ? h("p", { "class": "about" }, h("span", { "class": "muted" }, t("mentions_here") + ": "), named.slice(0, 12).map(function (m) {
        return h("button", { type: "button", "class": "chip quiet", onclick: function () { Kg.openEntity(m.label); } }, m.label);
      })) : null;
      body.append(h("section", { "class": "chunk" + (c.chunk_id === chunk ? " target" : ""), "data-chunk": c.chunk_id },
        h("div", { "class": "chunk-head muted" }, "#" + (c.ordinal + 1) + " · " + t("lines") + " " + c.lines[0] + "–" + c.lines[1] + (c.page != null ? " · " + t(Kg.unit(doc.source)) + " " + c.page : "")),
        KgMd.render(c.text, [], { className: "text" }), about, mentions));
    });
    box.replaceChildren(
      h("div", { "class": "doc-head" }, h("h2", {}, doc.title), del),
      h("p", { "class": "muted doc-source" }, (doc.source || "") + (doc.pack ? " · " + t("col_pack") + " " + doc.pack : "") + " · " + t("chunks_n", { n: o.chunks.length })),
      h("label", { "class": "doc-version" }, t("versions") + " (" + versions.length + ") ", select),
      h("div", { "class": "doc-layout" }, h("nav", { "class": "doc-toc", "aria-label": t("sections") }, h("h3", {}, t("sections")), toc), body));
    var target = chunk && box.querySelector('.chunk[data-chunk="' + chunk + '"]');
    if (target) target.scrollIntoView({ block: "start" });
    else window.scrollTo(0, 0);
    document.body.dataset.docShown = doc.doc_id + ":" + o.version_id + ":" + (chunk || "");
  };
})();
