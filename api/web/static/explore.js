/* kgrag page, part 5: the whole-graph explorer. GET /graph (the best connected entities, bounded,
   filtered by class, relation and a search) drawn with Cytoscape.js (vendored; loaded the first time
   the view opens), laid out by force on the server (GET /graph gives x, y); names of small entities appear as one
   zooms in. A node opens the entity panel; an edge opens where its fact is written. Exposes KgExplore. */
(function () {
  "use strict";
  var Kg = window.Kg, h = Kg.h, t = Kg.t, $ = Kg.$;
  var PALETTE = ["#2456c7", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#be185d", "#4d7c0f", "#475569",
    "#1d4ed8", "#9333ea", "#0f766e", "#ca8a04", "#db2777", "#64748b", "#65a30d", "#0369a1"];
  var library = null, state = { cy: null, data: null, loaded: false };

  function loadLibrary() {
    if (window.cytoscape) return Promise.resolve();
    if (!library) {
      library = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = "/web/vendor/cytoscape.min.js"; s.onload = resolve;
        s.onerror = function () { reject(new Error("cytoscape.min.js did not load")); };
        document.head.appendChild(s);
      });
    }
    return library;
  }
  function colour(types, classes) {
    var i = classes.indexOf(types[0] || "");
    return i < 0 ? "#64748b" : PALETTE[i % PALETTE.length];
  }
  function params() {
    var p = new URLSearchParams({ lang: Kg.lang, limit: $("#graph-limit").value });
    if ($("#graph-class").value) p.set("class", $("#graph-class").value);
    if ($("#graph-relation").value) p.set("relation", $("#graph-relation").value);
    if ($("#graph-q").value.trim()) p.set("q", $("#graph-q").value.trim());
    return p;
  }
  function fillSelect(select, items, anyText) {
    var chosen = select.value;
    var options = [h("option", { value: "" }, anyText)].concat(items.map(function (x) {
      return h("option", { value: x.name, selected: x.name === chosen }, x.label + (x.label !== x.name ? " (" + x.name + ")" : "") + " · " + x.count);
    }));
    select.replaceChildren.apply(select, options);  // replaceChildren() does not flatten arrays
  }

  async function draw() {
    var box = $("#graph-canvas"), info = $("#graph-info");
    info.textContent = t("loading");
    var started = performance.now();
    var drawing = loadLibrary();  // fetched and parsed while the server answers
    drawing.catch(function () { /* reported below */ });
    var res = await Kg.api("GET", "/graph?" + params().toString());
    var answered = performance.now();
    if (res.status !== 200) { info.replaceChildren(h("span", { "class": "error" }, t("error", { message: Kg.errorText(res.data) }))); return; }
    try { await drawing; } catch (e) { info.replaceChildren(h("span", { "class": "error" }, String(e.message))); return; }
    var data = res.data, classes = data.classes.map(function (c) { return c.name; });
    var relLabel = {};
    data.relations.forEach(function (r) { relLabel[r.name] = r.label; });
    // Every class and relation of the ontology, those drawn now first (with how many).
    function byCount(a, b) { return (b.count > 0) - (a.count > 0) || a.label.localeCompare(b.label); }
    fillSelect($("#graph-class"), data.classes.slice().sort(byCount), t("type_any"));
    fillSelect($("#graph-relation"), data.relations.slice().sort(byCount), t("relation_any"));
    var maxDegree = Math.max.apply(null, [1].concat(data.nodes.map(function (n) { return n.degree; })));
    var elements = data.nodes.map(function (n) {
      return { data: { id: n.id, label: n.label, degree: n.degree, colour: colour(n.types, classes), matched: n.matched ? 1 : 0,
        size: 14 + 30 * Math.sqrt(n.degree / maxDegree) }, position: { x: n.x || 0, y: n.y || 0 } };
    }).concat(data.edges.map(function (e, i) {
      return { data: { id: "e" + i, source: e.source, target: e.target, relation: e.relation, label: relLabel[e.relation] || e.relation } };
    }));
    if (state.cy) state.cy.destroy();
    state.data = data;
    var many = data.nodes.length > 150;
    state.cy = window.cytoscape({
      container: box, elements: elements, minZoom: 0.05, maxZoom: 4,
      // Hundreds of edges: straight lines, and while panning or zooming a cached picture without the edges.
      hideEdgesOnViewport: many, textureOnViewport: many, pixelRatio: many ? 1 : "auto",
      style: [
        { selector: "node", style: { "background-color": "data(colour)", width: "data(size)", height: "data(size)", label: "data(label)",
          "font-size": 12, "text-valign": "bottom", "text-margin-y": 3, color: "#1d2330", "text-outline-color": "#fff", "text-outline-width": 2,
          "min-zoomed-font-size": many ? 9 : 6, "text-max-width": "140px", "text-wrap": "ellipsis" } },
        { selector: "node.hub", style: { "min-zoomed-font-size": 0, "font-weight": "bold", "z-index": 10 } },
        { selector: "node[matched = 1]", style: { "border-width": 4, "border-color": "#ffb000", "min-zoomed-font-size": 0 } },
        { selector: "node:selected", style: { "border-width": 4, "border-color": "#1d2330" } },
        { selector: "edge", style: { width: 1.2, "line-color": "#b8c0cc", "target-arrow-color": "#b8c0cc", "target-arrow-shape": "triangle",
          "arrow-scale": 0.8, "curve-style": many ? "straight" : "bezier", label: "data(label)", "font-size": 9, color: "#2456c7", "min-zoomed-font-size": 10,
          "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8, "text-background-padding": 1 } },
        { selector: "edge:selected", style: { width: 3, "line-color": "#2456c7", "target-arrow-color": "#2456c7" } },
      ],
      // Laid out by the server (force-directed, the same drawing for the same graph): a force layout of 500
      // nodes in the page took 20 s on a busy 2-core machine.
      layout: { name: "preset", fit: true, padding: 24 },
    });
    // The best connected entities keep a readable name at any zoom; the others' names appear as one zooms in.
    var hubs = state.cy.nodes().sort(function (a, b) { return b.data("degree") - a.data("degree"); }).slice(0, Math.max(8, Math.min(30, Math.round(data.nodes.length / 5))));
    hubs.addClass("hub");
    function keepHubsReadable() {
      var size = Math.min(48, 13 / state.cy.zoom());
      state.cy.batch(function () { hubs.style("font-size", size); });
    }
    state.cy.on("zoom", keepHubsReadable);
    keepHubsReadable();
    state.cy.on("tap", "node", function (ev) { Kg.openEntity(ev.target.data("label")); });
    state.cy.on("tap", "edge", function (ev) {
      var d = ev.target.data();
      Kg.openFact(d.source, d.relation, d.target);
    });
    var matched = state.cy.nodes("[matched = 1]");
    if (matched.length) state.cy.fit(matched.closedNeighborhood(), 40);
    info.replaceChildren(t("graph_shown", { n: data.nodes.length, total: data.total_nodes, edges: data.edges.length }) +
      (data.truncated ? " " + t("graph_truncated") : ""));
    await Kg.nextPaint();
    Kg.timings.push({ kind: "graph", api_ms: answered - started, render_ms: performance.now() - answered, nodes: data.nodes.length, edges: data.edges.length });
    box.dataset.drawn = String(Number(box.dataset.drawn || 0) + 1);
  }

  /* Where the rendered node is on the page (for a real click in the tests and the bench). */
  function nodePoint(label) {
    var node = state.cy && state.cy.nodes().filter(function (n) { return n.data("label") === label; })[0];
    if (!node) return null;
    var r = $("#graph-canvas").getBoundingClientRect(), p = node.renderedPosition();
    return [r.left + p.x, r.top + p.y];
  }

  window.KgExplore = {
    open: function () { if (!state.loaded) { state.loaded = true; draw(); } },
    redraw: draw,
    nodePoint: nodePoint,
    state: state,
  };
  document.addEventListener("DOMContentLoaded", function () {
    $("#graph-form").addEventListener("submit", function (ev) { ev.preventDefault(); draw(); });
    ["#graph-class", "#graph-relation", "#graph-limit"].forEach(function (sel) { $(sel).addEventListener("change", draw); });
    // The entity panel opening beside the graph narrows it: the drawing follows its box.
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        if (!state.cy) return;
        state.cy.resize();
        var chosen = state.cy.$(":selected");  // keep the entity just clicked in view, else the whole drawing
        if (chosen.length) state.cy.center(chosen); else state.cy.fit(undefined, 24);
      }).observe($("#graph-canvas"));
    }
  });
})();
