/* kgrag page, part 3: the conversation. Each question is a turn: its answer streamed from POST /ask
   (Server-Sent Events: round, delta, answer, error) and drawn as Markdown as it grows, then with its
   citations that open their passages, copy with sources, and how the loop found it (path, rounds).
   The turns are kept in this browser (localStorage) until cleared; follow-ups send the last turns
   as `history` where the server takes it. Exposes Kg.chat and Kg.renderAnswer. */
(function () {
  "use strict";
  var Kg = window.Kg, h = Kg.h, t = Kg.t;
  var KEY = "kg-conversation", KEEP = 20, HISTORY = 3;
  var turns = [];

  function load() { try { return JSON.parse(localStorage.getItem(KEY) || "[]"); } catch (e) { return []; } }
  function save() { try { localStorage.setItem(KEY, JSON.stringify(turns.slice(-KEEP))); } catch (e) { /* private mode: kept for this page only */ } }
  function thread() { return Kg.$("#thread"); }
  function show() { Kg.$("#answer").hidden = !thread().children.length; }

  function turnElement(question, note) {
    var body = h("div", { "class": "answer-body" });
    var el = h("article", { "class": "turn" }, h("p", { "class": "question" }, h("span", { "class": "who" }, t("you")), question),
      note ? h("p", { "class": "note" }, note) : null, body);
    thread().append(el);
    show();
    return { el: el, body: body };
  }

  /* "[n] title § section (file:lines)" lines after the answer: what "copy" puts on the clipboard. */
  function copyText(ans) {
    var lines = [ans.question || "", "", (ans.answer || "").trim()];
    if (ans.citations && ans.citations.length) {
      lines.push("", t("citations") + ":");
      ans.citations.forEach(function (c) {
        lines.push("[" + c.n + "] " + c.title + (c.section ? " § " + c.section : "") +
          " (" + (c.source ? Kg.place(c.source, c.lines, c.page) : c.doc_id || "") + ")" +
          (c.placed ? " — " + c.placed : ""));
      });
    }
    (ans.facts || []).forEach(function (f) { lines.push("[" + f.key + "] " + f.source); });
    return lines.join("\n");
  }
  async function copy(text, button) {
    Kg.lastCopied = text;
    try { await navigator.clipboard.writeText(text); } catch (e) {
      var area = h("textarea", {}); area.value = text; document.body.append(area); area.select();
      try { document.execCommand("copy"); } catch (e2) { /* the text stays in Kg.lastCopied */ }
      area.remove();
    }
    button.textContent = t("copied");
    setTimeout(function () { button.textContent = t("copy"); }, 1500);
  }

  function roundsView(ans, rounds) {
    var list = (ans && ans.rounds && ans.rounds.length ? ans.rounds : rounds) || [];
    var box = h("details", { "class": "loop" }, h("summary", {}, t("how_found", { n: list.length })));
    box.append(h("p", { "class": "note" }, t(ans && ans.path === "llm" ? "answer_path_llm" : "answer_path_rules") +
      (ans && ans.path_reason ? " · " + ans.path_reason : "")));
    box.append(h("ol", { "class": "rounds" }, list.map(function (r) {
      var v = r.verdict || {};
      return h("li", {}, h("b", {}, t("round", { n: r.round })), " ", h("q", {}, r.query || ""),
        (r.entities && r.entities.length) ? " · " + t("entities_named") + ": " + r.entities.join(Kg.sep()) : "",
        " · " + t("hits_added", { n: r.hits_added == null ? "?" : r.hits_added }),
        " · " + (v.sufficient ? t("sufficient") : t("insufficient")) + (v.by ? " (" + v.by + ")" : ""),
        v.missing && v.missing.length ? " · " + t("missing") + ": " + v.missing.join(Kg.sep()) : "",
        v.followup ? " · " + t("followup") + ": " + v.followup : "", r.ms != null ? " · " + Math.round(r.ms) + " ms" : "");
    })));
    return box;
  }

  /* The answer's words before its first sentence and after its last, which are no sentences of it ("(The sources are
     in Chinese; quoted as written.)", the length-limit note): drawn around the sentences (`Answer.framing` in Python). */
  /* How a sentence's words stand in the answer text: a code block with its fences. */
  function written(s) { return typeof s.code === "string" ? "```" + s.code + "\n" + s.text + "\n```" : s.text; }

  function framing(ans) {
    var all = ans.answer || "", s = ans.sentences, end = written(s[s.length - 1]);
    var first = all.indexOf(written(s[0])), last = all.lastIndexOf(end);
    if (first < 0 || last < 0) return ["", ""];
    return [all.slice(0, first).trim(), all.slice(last + end.length).replace(/^(\s*\[R?\d+\])+/, "").trim()];
  }

  /* The final answer record drawn into `into` (a turn's body; a new turn when not given). */
  Kg.renderAnswer = function (ans, into, rounds) {
    var box = into || turnElement(ans.question || "").body;
    var byN = {};
    (ans.citations || []).forEach(function (c) { byN[c.n] = c; });
    var byR = {};
    (ans.facts || []).forEach(function (f) { byR[f.key] = f; });
    var opened = h("div", { "class": "opened" });
    function cite(n) {
      if (typeof n === "string") return factButton(n);
      return h("button", { type: "button", "class": "cite", "data-n": n, title: byN[n] ? byN[n].title : null, onclick: function () {
        var shown = opened.querySelector('[data-cite="' + n + '"]');
        if (shown) { shown.remove(); return; }
        if (!byN[n]) return;
        var card = Kg.passage(byN[n]); card.dataset.cite = n;
        card.prepend(h("strong", {}, "[" + n + "] "));
        opened.append(card);
      } }, String(n));
    }
    /* [R1]: a graph fact; opened, its sentence in the UI's language and each triple with where it is written. */
    function factButton(key) {
      return h("button", { type: "button", "class": "cite fact", "data-fact": key, title: byR[key] ? byR[key].source : null, onclick: function () {
        var shown = opened.querySelector('[data-fact-card="' + key + '"]');
        if (shown) { shown.remove(); return; }
        var f = byR[key];
        if (!f) return;
        var card = h("div", { "class": "passage fact-card", "data-fact-card": key }, h("strong", {}, "[" + key + "] "),
          (f.text && (f.text[Kg.lang] || f.text.en)) || f.source,
          h("ul", {}, (f.triples || []).map(function (triple, i) {
            var parts = Kg.splitTriple(triple);
            var shown = parts ? parts[0] + " —" + Kg.relLabel(parts[1]) + "→ " + parts[2] : triple;
            var origin = (f.origins || [])[i];
            return h("li", { title: triple }, shown, origin ? h("span", { "class": "muted origin" }, " (" + origin + ")") : null,
              parts ? h("button", { type: "button", "class": "link source", title: t("fact_source"), onclick: function () {
                Kg.openFact(parts[0], parts[1], parts[2]);
              } }, " ⓘ") : null);
          })));
        opened.append(card);
      } }, key);
    }
    // A code block is a sentence of its own (`code` set): drawn as a block, its lines as written, cited like the rest.
    var coded = (ans.sentences || []).some(function (s) { return typeof s.code === "string"; });
    var text, frame = ["", ""], blocks = !coded && /(^|\n)\s*(\||[-*+] |\d+\. |```|#{1,6} |> )/.test(ans.answer || "");
    if (ans.sentences && ans.sentences.length && !blocks) {
      frame = framing(ans);
      text = h("div", { "class": "answer-text" });
      ans.sentences.forEach(function (s) {
        var sentence = typeof s.code === "string"
          ? h("pre", { "class": "sentence code" + (s.flagged ? " flagged" : "") }, h("code", {}, s.text))
          : KgMd.render(s.text.replace(/\s*\[R?\d+\]/g, ""), [], { inline: true, className: "sentence" + (s.flagged ? " flagged" : "") });
        if (s.flagged) sentence.title = t("unsupported");
        text.append.apply(text, [sentence].concat((s.facts || []).map(factButton), (s.citations || []).map(cite), [" "]));  // append() does not flatten arrays
      });
    } else {
      text = KgMd.citations(KgMd.render(ans.answer || "", [], { className: "answer-text" }), cite);
    }
    var copyButton = h("button", { type: "button", "class": "small secondary copy" }, t("copy"));
    copyButton.addEventListener("click", function () { copy(copyText(ans), copyButton); });
    box.replaceChildren();
    if (!ans.found) box.append(h("p", { "class": "muted" }, t("no_answer")));
    else if (frame[0]) box.append(h("p", { "class": "note answer-lead" }, frame[0]));
    box.append(text);
    if (frame[1]) box.append(h("p", { "class": "note answer-tail" }, frame[1]));
    box.append(opened);
    if (ans.facts && ans.facts.length) {
      box.append(h("details", { "class": "sources facts-used" }, h("summary", {}, t("facts_used") + " (" + ans.facts.length + ")"),
        h("ul", {}, ans.facts.map(function (f) { return h("li", {}, "[" + f.key + "] " + f.source); }))));
    }
    if (ans.citations && ans.citations.length) {
      box.append(h("details", { "class": "sources" }, h("summary", {}, t("citations") + " (" + ans.citations.length + ")"),
        h("ol", {}, ans.citations.map(function (c) {
          // A passage the ranking did not place among the answer's (the lead of a page about a named entity) says why it is there.
          return h("li", { value: c.n }, c.title + (c.section ? " § " + c.section : ""), " ",
            c.placed ? h("span", { "class": "placed" }, "— " + c.placed) : null, c.placed ? " " : null,
            Kg.features.outline && c.doc_id ? h("a", { href: "#" + Kg.docHash(c.doc_id, c.chunk_id, c.version && c.version.version_id) }, t("open_in_document")) : null);
        }))));
    }
    box.append(h("div", { "class": "turn-actions" }, copyButton), roundsView(ans, rounds));
    return box;
  };

  function readEvents(buffer, onEvent) {
    var parts = buffer.split(/\r?\n\r?\n/), rest = parts.pop();
    parts.forEach(function (block) {
      var kind = "message", data = [];
      block.split(/\r?\n/).forEach(function (line) {
        if (line.indexOf("event:") === 0) kind = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
      });
      if (data.length) onEvent(kind, JSON.parse(data.join("\n")));
    });
    return rest;
  }

  Kg.chat = {
    has: function (question) { return turns.length > 0 && turns[turns.length - 1].question === question; },
    copyText: copyText,
    turns: function () { return turns.slice(); },
    restore: function () {
      turns = load();
      thread().replaceChildren();
      turns.forEach(function (turn) { Kg.renderAnswer(turn.record, turnElement(turn.question, turn.note).body); });
      show();
    },
    clear: function () {
      turns = []; save(); thread().replaceChildren(); show();
    },
    /* A new turn: what is searched, and the history sent with it. */
    begin: function (question, opts) {
      var before = opts && opts.followup ? turns.slice(-HISTORY) : [], note = null, retrieval = question;
      if (before.length) retrieval = before[before.length - 1].question + "\n" + question;  // the passages shown for a follow-up
      // A server that answers one question at a time is asked the follow-up with the question before it.
      if (before.length && !Kg.features.ask_history) note = t("asked_with_previous");
      var view = turnElement(question, note);
      view.body.append(h("p", { "class": "muted streaming-note" }, t("thinking")));
      view.el.scrollIntoView({ block: "nearest" });
      return { question: question, retrieval: retrieval, note: note, history: before, opts: opts || {}, el: view.el, body: view.body };
    },
    /* Streams the answer into the turn; -> {api_ms, first_delta_ms, done} once the record is drawn. */
    run: async function (turn, current) {
      var asked = turn.history.length && Kg.features.ask_history ? turn.question : turn.retrieval;
      var body = Object.assign({ question: asked, mode: turn.opts.mode || "full", stream: true },
        turn.opts.as_of ? { as_of: turn.opts.as_of } : {});
      if (Kg.features.ask_history && turn.history.length) {
        body.history = [];
        // POST /ask takes messages of at most 4,000 characters (a question's bound); an answer's start is context enough.
        turn.history.forEach(function (x) { body.history.push({ role: "user", content: x.question }, { role: "assistant", content: (x.record.answer || "").slice(0, 4000) }); });
      }
      var started = performance.now(), first = null, text = "", rounds = [], record = null, failure = null, pending = false;
      var live = h("div", { "class": "md answer-text streaming" }), status = h("p", { "class": "muted streaming-note" }, t("thinking"));
      function draw() {
        pending = false;
        if (record || !current()) return;
        live.replaceWith(live = KgMd.render(text, [], { className: "answer-text streaming" }));
      }
      turn.body.replaceChildren(status, live);
      try {
        var res = null;
        for (var attempt = 0; attempt < 2; attempt++) {
          // A server that spends a paid model's tokens may want the API token for /ask too (KG_ASK_REQUIRES_TOKEN).
          var headers = { "Content-Type": "application/json", Accept: "text/event-stream" }, token = sessionStorage.getItem("kg-token");
          if (token) headers.Authorization = "Bearer " + Kg.headerBytes(token);
          res = await fetch("/ask", { method: "POST", body: JSON.stringify(body), headers: headers });
          if (res.status !== 401 || attempt) break;
          sessionStorage.removeItem("kg-token");
          if (!(await Kg.askToken(token ? t("token_wrong") : null))) break;
        }
        if (!res.ok) {
          var data = null;
          try { data = await res.json(); } catch (e) { data = { error: { message: res.status + " " + res.statusText } }; }
          if (Kg.missing(res.status)) { Kg.features.ask = false; Kg.$("#answer-toggle").hidden = true; }
          failure = Kg.errorText(data);
        } else if ((res.headers.get("content-type") || "").indexOf("text/event-stream") < 0) {
          record = await res.json();  // a server that does not stream answers with the record
        } else {
          var reader = res.body.getReader(), decoder = new TextDecoder(), buffer = "";
          for (;;) {
            var step = await reader.read();
            if (step.done) break;
            buffer = readEvents(buffer + decoder.decode(step.value, { stream: true }), function (kind, value) {
              if (kind === "round") { rounds.push(value); status.textContent = t("round_live", { n: value.round, hits: value.hits_added }); }
              else if (kind === "delta") {
                if (first === null) first = performance.now() - started;
                text += value.text || "";
                turn.el.dataset.deltas = String(Number(turn.el.dataset.deltas || 0) + 1);
                if (!pending) { pending = true; requestAnimationFrame(draw); }
              } else if (kind === "answer") record = value;
              else if (kind === "error") failure = value.message || JSON.stringify(value);
            });
          }
        }
      } catch (e) {
        failure = String(e && e.message || e);
      }
      var got = performance.now();
      if (!current()) return null;
      if (record) {
        Kg.renderAnswer(record, turn.body, rounds);
        turns.push({ question: turn.question, note: turn.note, record: record });
        save();
      } else {
        turn.body.replaceChildren(h("p", { "class": "error" }, t("error", { message: failure || t("no_answer") })));
      }
      return { api_ms: got - started, first_delta_ms: first, done: got };
    },
  };

  document.addEventListener("DOMContentLoaded", function () {
    Kg.$("#clear-conversation").addEventListener("click", function () { Kg.chat.clear(); });
    Kg.$("#followup-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var q = Kg.$("#followup-q").value.trim();
      if (!q) return;
      Kg.$("#followup-q").value = "";
      Kg.$("#q").value = q;
      Kg.search(q, Kg.$("#mode").value, Kg.$("#type").value, { followup: true });
    });
  });
})();
