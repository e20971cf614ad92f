/* kgrag page: Markdown of documents and answers -> safe DOM. marked renders, DOMPurify keeps only
   harmless HTML (no script, no event handlers, no forms, no styles, no images from elsewhere), tables
   get a scrolling wrapper, matched words are marked in the text. Exposes window.KgMd. */
(function () {
  "use strict";
  var PURIFY = {
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "svg", "math"],
    FORBID_ATTR: ["style", "class", "id"],
  };
  var ready = typeof window.marked !== "undefined" && typeof window.DOMPurify !== "undefined";
  if (ready) {
    // A document's picture on another host would be a request at run time (and a tracking pixel): its alt text is shown instead.
    window.DOMPurify.addHook("uponSanitizeElement", function (node, data) {
      if (data.tagName === "img") {
        var src = node.getAttribute("src") || "";
        if (/^[a-z][a-z0-9+.\-]*:/i.test(src) || src.indexOf("//") === 0) {
          node.replaceWith(document.createTextNode(node.getAttribute("alt") ? "[" + node.getAttribute("alt") + "]" : ""));
        }
      }
    });
    window.DOMPurify.addHook("afterSanitizeAttributes", function (node) {
      if (node.tagName === "A") { node.setAttribute("target", "_blank"); node.setAttribute("rel", "noopener noreferrer"); }
    });
  }
  var escapeHtml = function (s) { return s.replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; }); };

  /* Docusaurus / VuePress admonitions (":::tip 注意" … ":::") as the callout a reader sees on the site: a quote under
     its title, not the fence lines as text. Code blocks are left as they are. */
  function admonitions(text) {
    var out = [], depth = 0, code = false;
    text.split("\n").forEach(function (line) {
      if (/^\s*(```|~~~)/.test(line)) code = !code;
      var m = code ? null : /^\s*:{3,}\s*([\w-]*)\s*(.*?)\s*$/.exec(line);
      if (m && (m[1] || m[2])) { depth++; out.push(prefix() + "**" + (m[2] || m[1]) + "**", prefix()); return; }
      if (m && depth) { depth--; out.push(""); return; }
      out.push(prefix() + line);
    });
    function prefix() { return depth ? new Array(depth + 1).join("> ") : ""; }
    return out.join("\n");
  }

  function toHtml(text, inline) {
    if (!inline && text.indexOf(":::") >= 0) text = admonitions(text);
    if (!ready) return escapeHtml(text).replace(/\n/g, "<br>");
    var html = inline ? window.marked.parseInline(text, { gfm: true }) : window.marked.parse(text, { gfm: true, breaks: true });
    return window.DOMPurify.sanitize(html, PURIFY);
  }

  function termRegex(term) {
    var esc = term.replace(/[.*+?^${}()|[\]\\\-]/g, "\\$&");
    // Index terms are stemmed ("redi"): mark the word the stem begins, at most 4 letters longer.
    return /^[\w.\-]+$/.test(term) ? "(?<![A-Za-z0-9_])" + esc + "[A-Za-z]{0,4}(?![A-Za-z0-9_])" : esc;
  }

  /* Wraps each match of `terms` in the text nodes under `root` in <mark>. */
  function highlightIn(root, terms) {
    var alts = (terms || []).filter(function (x) { return x && x.trim(); })
      .sort(function (a, b) { return b.length - a.length; }).map(termRegex);
    if (!alts.length) return root;
    var re = new RegExp(alts.join("|"), "gi");
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), nodes = [], n;
    while ((n = walker.nextNode())) if (n.nodeValue.trim() && !(n.parentNode.closest && n.parentNode.closest("mark"))) nodes.push(n);
    nodes.forEach(function (node) {
      var text = node.nodeValue, last = 0, m, frag = document.createDocumentFragment(), found = false;
      re.lastIndex = 0;
      while ((m = re.exec(text))) {
        if (!m[0]) { re.lastIndex++; continue; }
        found = true;
        frag.appendChild(document.createTextNode(text.slice(last, m.index)));
        var mark = document.createElement("mark"); mark.textContent = m[0]; frag.appendChild(mark);
        last = m.index + m[0].length;
      }
      if (!found) return;
      frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    });
    return root;
  }

  /* Markdown -> a <div class="md"> (or <span> when inline), tables wrapped to scroll, terms marked. */
  function render(text, terms, opts) {
    opts = opts || {};
    var box = document.createElement(opts.inline ? "span" : "div");
    box.className = "md" + (opts.className ? " " + opts.className : "");
    box.innerHTML = toHtml(text || "", opts.inline);
    box.querySelectorAll("table").forEach(function (table) {
      var wrap = document.createElement("div"); wrap.className = "table-wrap";
      table.parentNode.insertBefore(wrap, table); wrap.appendChild(table);
    });
    return highlightIn(box, terms);
  }

  /* Citation marks "[3]" (a passage) and "[R1]" (a graph fact) in rendered text, outside code -> what
     `make(3)` or `make("R1")` returns (a button). */
  function citations(root, make) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), nodes = [], n;
    while ((n = walker.nextNode())) if (/\[R?\d+\]/.test(n.nodeValue) && !n.parentNode.closest("code, pre")) nodes.push(n);
    nodes.forEach(function (node) {
      var frag = document.createDocumentFragment();
      node.nodeValue.split(/(\[R?\d+\])/).forEach(function (part) {
        var m = /^\[(R?)(\d+)\]$/.exec(part);
        frag.appendChild(m ? make(m[1] ? "R" + m[2] : Number(m[2])) : document.createTextNode(part));
      });
      node.parentNode.replaceChild(frag, node);
    });
    return root;
  }

  window.KgMd = { render: render, highlightIn: highlightIn, citations: citations, termRegex: termRegex, ready: ready };
})();
