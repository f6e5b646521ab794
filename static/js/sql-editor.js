// The SQL page's editor: Ctrl+Enter (Cmd+Enter) runs the query; after a backquote it offers the cluster's
// topics, after `fields.` the JSON fields of the topics the query names (GET .../analytics/sql/tables/?topic=,
// fetched once per topic). A small listbox: Up/Down move, Enter or Tab take, Esc closes.
(function () {
  "use strict";
  var editor = document.getElementById("sql");
  var list = document.getElementById("sql-complete");
  if (!editor || !list) return;
  var form = editor.form;
  var topics = [];
  try { topics = JSON.parse(document.getElementById("sql-topics").textContent) || []; } catch (e) { topics = []; }
  var fieldsOf = {};  // topic -> [{path, type}] (or a pending promise)
  var items = [], active = -1, replaceFrom = 0, kind = null;
  var SIMPLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

  function namedTopics(text) {
    var found = [], re = /`((?:[^`]|``)+)`/g, m;
    while ((m = re.exec(text))) {
      var name = m[1].replace(/``/g, "`");
      if (topics.indexOf(name) >= 0 && found.indexOf(name) < 0) found.push(name);
    }
    return found;
  }

  function loadFields(topic) {
    if (fieldsOf[topic]) return Promise.resolve(fieldsOf[topic]);
    var url = editor.dataset.tablesUrl + "?topic=" + encodeURIComponent(topic);
    return fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { fields: [] }; })
      .then(function (body) { fieldsOf[topic] = body.fields || []; return fieldsOf[topic]; })
      .catch(function () { return []; });
  }

  function quotePath(path) {
    return path.split(".").map(function (p) { return SIMPLE.test(p) ? p : "`" + p.replace(/`/g, "``") + "`"; }).join(".");
  }

  function close() {
    list.hidden = true; list.innerHTML = ""; items = []; active = -1; kind = null;
    editor.setAttribute("aria-expanded", "false");
    editor.removeAttribute("aria-activedescendant");
  }

  function show(options, from, what) {
    items = options.slice(0, 50); replaceFrom = from; kind = what;
    if (!items.length) { close(); return; }
    list.innerHTML = "";
    items.forEach(function (it, i) {
      var li = document.createElement("li");
      li.id = "sql-complete-" + i; li.setAttribute("role", "option");
      var name = document.createElement("span"); name.textContent = it.label; li.appendChild(name);
      if (it.type) { var t = document.createElement("span"); t.className = "type"; t.textContent = it.type; li.appendChild(t); }
      li.addEventListener("mousedown", function (ev) { ev.preventDefault(); take(i); });
      list.appendChild(li);
    });
    list.style.top = Math.min(editor.offsetHeight, caretTop() + 22) + "px";
    list.style.left = "0.5rem";
    list.hidden = false;
    editor.setAttribute("aria-expanded", "true");
    select(0);
  }

  // The caret's line, in pixels from the editor's top (lines are of equal height in a monospace textarea).
  function caretTop() {
    var before = editor.value.slice(0, editor.selectionStart);
    var line = before.split("\n").length - 1;
    var height = parseFloat(getComputedStyle(editor).lineHeight) || 18;
    return 6 + line * height - editor.scrollTop;
  }

  function select(i) {
    var lis = list.children;
    if (!lis.length) return;
    active = (i + lis.length) % lis.length;
    for (var j = 0; j < lis.length; j++) lis[j].setAttribute("aria-selected", j === active ? "true" : "false");
    lis[active].scrollIntoView({ block: "nearest" });
    editor.setAttribute("aria-activedescendant", lis[active].id);
  }

  function take(i) {
    var it = items[i];
    if (!it) return;
    var caret = editor.selectionStart, value = editor.value, text = it.insert;
    if (kind === "topic" && value.charAt(caret) !== "`") text += "`";
    else if (kind === "topic") { caret += 1; text += "`"; }
    editor.setRangeText(text, replaceFrom, caret, "end");
    close();
    editor.focus();
  }

  function suggest() {
    var caret = editor.selectionStart;
    if (caret !== editor.selectionEnd) { close(); return; }
    var before = editor.value.slice(0, caret);
    var ticks = (before.match(/`/g) || []).length;
    var open = before.lastIndexOf("`");
    if (ticks % 2 === 1 && !/\bfields\.$/i.test(before.slice(0, open))) {
      var prefix = before.slice(open + 1).toLowerCase();
      show(topics.filter(function (t) { return t.toLowerCase().indexOf(prefix) >= 0; })
        .sort(function (a, b) { return (a.toLowerCase().indexOf(prefix) === 0 ? 0 : 1) - (b.toLowerCase().indexOf(prefix) === 0 ? 0 : 1) || a.localeCompare(b); })
        .map(function (t) { return { label: t, insert: t.replace(/`/g, "``") }; }), open + 1, "topic");
      return;
    }
    var m = /(?:^|[^\w.`])fields\.((?:[A-Za-z0-9_]+\.)*[A-Za-z0-9_]*)$/i.exec(before);
    if (!m) { close(); return; }
    var typed = m[1], from = caret - typed.length;
    var named = namedTopics(editor.value);
    if (!named.length) { close(); return; }
    Promise.all(named.map(loadFields)).then(function (lists) {
      if (editor.selectionStart !== caret) return;  // typed on meanwhile: the next input asks again
      var seen = {}, options = [];
      lists.forEach(function (fields, k) {
        fields.forEach(function (f) {
          if (seen[f.path] || f.path.toLowerCase().indexOf(typed.toLowerCase()) !== 0) return;
          seen[f.path] = true;
          options.push({ label: f.path, insert: quotePath(f.path), type: f.type + (named.length > 1 ? " · " + named[k] : "") });
        });
      });
      show(options, from, "field");
    });
  }

  editor.addEventListener("input", suggest);
  editor.addEventListener("click", close);
  editor.addEventListener("blur", function () { setTimeout(close, 150); });
  editor.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") {
      ev.preventDefault();
      var run = document.getElementById("run-sql");
      if (run && !run.disabled) form.requestSubmit(run);
      return;
    }
    if (list.hidden) {
      if ((ev.ctrlKey && ev.key === " ")) { ev.preventDefault(); suggest(); }
      return;
    }
    if (ev.key === "ArrowDown") { ev.preventDefault(); select(active + 1); }
    else if (ev.key === "ArrowUp") { ev.preventDefault(); select(active - 1); }
    else if (ev.key === "Enter" || ev.key === "Tab") { ev.preventDefault(); take(active); }
    else if (ev.key === "Escape") { ev.preventDefault(); close(); }
  });

  document.querySelectorAll("[data-insert-topic]").forEach(function (button) {
    button.addEventListener("click", function () {
      var name = "`" + button.dataset.insertTopic.replace(/`/g, "``") + "`";
      editor.focus();
      editor.setRangeText(name, editor.selectionStart, editor.selectionEnd, "end");
    });
  });
})();
