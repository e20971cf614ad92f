/* kgrag: small SVG drawings, hand-written (no library): a graph hit's path as nodes and typed
   arrows, and an entity with its neighbours as a star. Exposes window.KgGraph. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var FONT = 13, PAD = 10, H = 28;

  function el(name, attrs, text) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text != null) node.textContent = text;
    return node;
  }
  function textWidth(text, size) {
    var w = 0;
    for (var i = 0; i < text.length; i++) w += text.charCodeAt(i) > 0x2e80 ? size : size * 0.6;
    return w;
  }
  function clip(text, max) { return text.length > max ? text.slice(0, max - 1) + "…" : text; }
  function svgRoot(width, height, label) {
    var svg = el("svg", { "class": "graph", viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": label });
    svg.setAttribute("width", width);
    var defs = el("defs");
    var marker = el("marker", { id: "kg-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#5d6677" }));
    defs.appendChild(marker); svg.appendChild(defs);
    return svg;
  }
  function node(x, y, label, cls, onClick, maxChars) {
    var text = clip(label, maxChars || 22), w = textWidth(text, FONT) + 2 * PAD;
    var g = el("g", { "class": "node " + (cls || ""), transform: "translate(" + (x - w / 2) + "," + (y - H / 2) + ")" });
    g.appendChild(el("title", {}, label));
    g.appendChild(el("rect", { width: w, height: H, rx: 8 }));
    g.appendChild(el("text", { x: w / 2, y: H / 2 + FONT / 2 - 2, "text-anchor": "middle" }, text));
    g.dataset.label = label;
    if (onClick) g.addEventListener("click", function () { onClick(label); });
    return { g: g, w: w };
  }
  function edge(x1, y1, x2, y2, label, cls) {
    var g = el("g", { "class": "edge " + (cls || "") });
    g.appendChild(el("line", { x1: x1, y1: y1, x2: x2, y2: y2, "marker-end": "url(#kg-arrow)" }));
    var t = el("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 5, "text-anchor": "middle" }, label);
    g.dataset.relation = label;
    g.appendChild(t);
    return g;
  }

  /* nodes: [A, B, ...], relations: [r1, ...] (A -r1-> B ...), end: the passage's box label.
     Laid out left to right when it fits `maxWidth`, else top to bottom. */
  function path(nodes, relations, end, maxWidth, onClick) {
    var labels = nodes.concat([end]);
    var widths = labels.map(function (l) { return textWidth(clip(l, 22), FONT) + 2 * PAD; });
    var gaps = relations.concat([""]).map(function (r) { return Math.max(56, textWidth(r, 11) + 20); });
    var total = widths.reduce(function (a, b) { return a + b; }, 0) + gaps.reduce(function (a, b) { return a + b; }, 0) + 8;
    var svg, x, i;
    if (total <= maxWidth) {
      svg = svgRoot(total, H + 24, labels.join(" → "));
      x = 4;
      for (i = 0; i < labels.length; i++) {
        var n = node(x + widths[i] / 2, 12 + H / 2, labels[i], i === labels.length - 1 ? "end" : (i === 0 ? "center" : ""), i < nodes.length ? onClick : null);
        svg.appendChild(n.g);
        if (i < labels.length - 1) svg.appendChild(edge(x + widths[i] + 2, 12 + H / 2, x + widths[i] + gaps[i] - 2, 12 + H / 2, relations[i] || "", i < relations.length ? "" : "inferred"));
        x += widths[i] + gaps[i];
      }
    } else {
      var step = H + 34, width = Math.min(maxWidth, Math.max.apply(null, widths) + 150);
      svg = svgRoot(width, labels.length * step - 34 + 8, labels.join(" → "));
      for (i = 0; i < labels.length; i++) {
        var cy = 4 + H / 2 + i * step, cx = Math.max.apply(null, widths) / 2 + 4;
        svg.appendChild(node(cx, cy, labels[i], i === labels.length - 1 ? "end" : (i === 0 ? "center" : ""), i < nodes.length ? onClick : null).g);
        if (i < labels.length - 1) {
          var g = edge(cx, cy + H / 2 + 2, cx, cy + step - H / 2 - 2, "", i < relations.length ? "" : "inferred");
          var t = g.querySelector("text");
          t.textContent = relations[i] || ""; t.setAttribute("x", cx + 8); t.setAttribute("y", cy + step / 2 + 4); t.setAttribute("text-anchor", "start");
          g.dataset.relation = relations[i] || "";
          svg.appendChild(g);
        }
      }
    }
    return svg;
  }

  /* center: a label; neighbours: [{label, relation, asserted}] drawn around it (at most `limit`). */
  function star(center, neighbours, onClick, limit, maxWidth) {
    var shown = neighbours.slice(0, limit || 16), n = shown.length, narrow = (maxWidth || 1000) < 500;
    // An ellipse wider than tall (labels are wide); every other neighbour a little further in
    // when there are many, so that neighbouring boxes do not overlap. Narrow: shorter labels,
    // a tighter drawing, so that it is scaled down less.
    var chars = narrow ? 12 : 22;
    var R = narrow ? 115 : n <= 4 ? 110 : n <= 8 ? 150 : 200, RX = R * 1.3, W = 2 * RX + (narrow ? 130 : 200), Hh = 2 * R + 70;
    var svg = svgRoot(W, Hh, center), cx = W / 2, cy = Hh / 2;
    shown.forEach(function (nb, i) {
      var a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
      var f = n > 8 && i % 2 ? 0.78 : 1, x = cx + RX * f * Math.cos(a), y = cy + R * f * Math.sin(a);
      var ex = cx + (x - cx) * 0.8, ey = cy + (y - cy) * 0.8, sx = cx + (x - cx) * 0.16, sy = cy + (y - cy) * 0.16;
      var line = edge(sx, sy, ex, ey, nb.relation, nb.asserted === false ? "inferred" : ""), label = line.querySelector("text");
      // The relation name near the neighbour's end, so that labels of close edges do not overlap.
      label.setAttribute("x", cx + (x - cx) * 0.6); label.setAttribute("y", cy + (y - cy) * 0.6 - 4);
      svg.appendChild(line);
      svg.appendChild(node(x, y, nb.label, "", onClick, chars).g);
    });
    svg.appendChild(node(cx, cy, center, "center", null, narrow ? 16 : 22).g);
    return svg;
  }

  window.KgGraph = { path: path, star: star, textWidth: textWidth };
})();
