// A SQL job's result on its page: every row (from the job's result API) in a table that sorts by any column
// (numbers as numbers, times as times, text in natural order, nulls last either way) and shows a page at a
// time; and a chart builder: an x column and one or more number columns, drawn as a line on a real time axis
// when x is a time, as bars when x is a category (or as the viewer chooses), with the page's Chart.js.
(function () {
  "use strict";
  var app = document.getElementById("sql-result-app");
  var table = document.getElementById("sql-rows");
  if (!app || !table) return;
  var columns = JSON.parse(document.getElementById("sql-columns").textContent || "[]");
  var rows = [], order = [], sortBy = -1, descending = false, page = 0, size = 50, chart = null;
  var NUMBER = /^(tinyint|smallint|int|bigint|float|double|decimal)/, TIME = /^(timestamp|date)/;
  var PALETTE = ["#2457c5", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0e7490", "#be185d", "#4d7c0f"];
  var MAX_BARS = 200;

  function isNumber(c) { return NUMBER.test(c.type); }
  function isTime(c) { return TIME.test(c.type); }
  function timeOf(v) { var t = Date.parse(v); return isNaN(t) ? null : t; }

  // The value a column sorts by: a number, a time in ms, or text; null for a null (or a text number's NaN).
  function key(c, v) {
    if (v === null || v === undefined) return null;
    if (isNumber(c)) { var n = typeof v === "number" ? v : parseFloat(v); return isNaN(n) ? null : n; }
    if (isTime(c)) return timeOf(v);
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  function compare(a, b) {
    if (a === null && b === null) return 0;
    if (a === null) return 1;   // nulls last, ascending or descending
    if (b === null) return -1;
    var d = typeof a === "string" ? collator.compare(a, b) : a - b;
    return descending ? -d : d;
  }

  function sort(i) {
    if (sortBy === i) descending = !descending; else { sortBy = i; descending = false; }
    var c = columns[i], keys = rows.map(function (r) { return key(c, r[c.name]); });
    order = rows.map(function (_, j) { return j; });
    order.sort(function (x, y) { return compare(keys[x], keys[y]) || x - y; });
    page = 0;
    draw();
  }

  function cell(c, v) {
    var td = document.createElement("td");
    if (v === null || v === undefined) { td.className = "null"; td.textContent = "null"; return td; }
    if (isNumber(c) && typeof v === "number") { td.className = "num"; td.textContent = v.toLocaleString(); return td; }
    if (isTime(c) && timeOf(v) !== null) {
      var t = document.createElement("time");
      t.dateTime = v; t.title = v;
      t.textContent = c.type === "date" ? v : new Date(timeOf(v)).toLocaleString();
      td.appendChild(t); return td;
    }
    if (typeof v === "object") { td.className = "mono small"; td.textContent = JSON.stringify(v); return td; }
    td.textContent = String(v);
    return td;
  }

  function head() {
    var tr = table.tHead.rows[0];
    columns.forEach(function (c, i) {
      var th = tr.cells[i];
      th.classList.add("sortable");
      th.innerHTML = "";
      var b = document.createElement("button");
      b.type = "button"; b.className = "sort"; b.dataset.column = c.name;
      b.title = "Sort by " + c.name + " (" + c.type + ")";
      b.appendChild(document.createTextNode(c.name + " "));
      var t = document.createElement("span"); t.className = "muted small"; t.textContent = c.type; b.appendChild(t);
      var arrow = document.createElement("span"); arrow.className = "arrow"; arrow.setAttribute("aria-hidden", "true"); b.appendChild(arrow);
      b.addEventListener("click", function () { sort(i); });
      th.appendChild(b);
      if (isNumber(c)) th.classList.add("num");
    });
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(order.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var body = document.createElement("tbody");
    order.slice(page * size, (page + 1) * size).forEach(function (j) {
      var tr = document.createElement("tr");
      columns.forEach(function (c) { tr.appendChild(cell(c, rows[j][c.name])); });
      body.appendChild(tr);
    });
    table.replaceChild(body, table.tBodies[0]);
    var ths = table.tHead.rows[0].cells;
    for (var i = 0; i < ths.length; i++) {
      if (i === sortBy) ths[i].setAttribute("aria-sort", descending ? "descending" : "ascending");
      else ths[i].removeAttribute("aria-sort");
    }
    var first = order.length ? page * size + 1 : 0, last = Math.min(order.length, (page + 1) * size);
    document.getElementById("sql-page-info").textContent =
      "Rows " + first.toLocaleString() + "–" + last.toLocaleString() + " of " + order.length.toLocaleString() + " · page " + (page + 1) + " of " + pages;
    document.getElementById("sql-prev").disabled = page === 0;
    document.getElementById("sql-next").disabled = page >= pages - 1;
    document.getElementById("sql-pager").hidden = false;
  }

  // --- the chart builder ---------------------------------------------------------------------------

  function builder() {
    var x = document.getElementById("chart-x"), ys = document.getElementById("chart-y");
    var numbers = columns.filter(isNumber);
    var firstTime = columns.filter(isTime)[0];
    var firstText = columns.filter(function (c) { return !isNumber(c) && !isTime(c); })[0];
    var defaultX = firstTime || firstText || columns[0];
    columns.forEach(function (c) {
      var o = document.createElement("option");
      o.value = c.name; o.textContent = c.name + " (" + c.type + ")"; o.selected = c === defaultX;
      x.appendChild(o);
    });
    if (!numbers.length) {
      var none = document.createElement("span"); none.className = "small muted"; none.textContent = "no number columns";
      ys.appendChild(none);
      document.getElementById("draw-chart").disabled = true;
    }
    var checked = 0;
    numbers.forEach(function (c) {
      var label = document.createElement("label"), box = document.createElement("input");
      box.type = "checkbox"; box.name = "y"; box.value = c.name;
      box.checked = c !== defaultX && checked < 1; if (box.checked) checked++;
      label.appendChild(box); label.appendChild(document.createTextNode(" " + c.name));
      ys.appendChild(label);
    });
    document.getElementById("chart-builder").addEventListener("submit", function (ev) { ev.preventDefault(); chartIt(); });
  }

  function byName(name) { return columns.filter(function (c) { return c.name === name; })[0]; }

  function chartIt() {
    var note = document.getElementById("chart-note"), box = document.querySelector(".sql-chart-box");
    var xc = byName(document.getElementById("chart-x").value);
    var yc = Array.prototype.map.call(document.querySelectorAll("#chart-y input:checked"), function (b) { return byName(b.value); });
    if (!yc.length) { note.textContent = "Choose at least one number column for Y."; return; }
    var kind = document.getElementById("chart-kind").value;
    if (kind === "auto") kind = isTime(xc) ? "line" : "bar";
    if (chart) { chart.destroy(); chart = null; }
    box.hidden = false;
    var canvas = document.getElementById("sql-chart"), said = [];
    if (isTime(xc) || (kind === "line" && isNumber(xc))) {
      // Points ordered by x; rows whose x is null are left out.
      var pts = rows.map(function (r) { return { x: isTime(xc) ? timeOf(r[xc.name]) : key(xc, r[xc.name]), r: r }; })
        .filter(function (p) { return p.x !== null; }).sort(function (a, b) { return a.x - b.x; });
      if (pts.length < rows.length) said.push((rows.length - pts.length).toLocaleString() + " rows with no " + xc.name + " left out");
      if (kind === "line" && isTime(xc) && window.KazamiCharts) {
        var times = pts.map(function (p) { return p.x; }), step = 0;
        for (var i = 1; i < times.length; i++) { var d = times[i] - times[i - 1]; if (d > 0 && (!step || d < step)) step = d; }
        chart = window.KazamiCharts.timeLine(canvas, {
          times: times, step_ms: step || 60000,
          series: yc.map(function (c) { return { label: c.name, values: pts.map(function (p) { return key(c, p.r[c.name]); }) }; })
        });
      } else {
        chart = new Chart(canvas, {
          type: kind === "bar" ? "bar" : "line",
          data: { datasets: yc.map(function (c, k) {
            return { label: c.name, borderColor: PALETTE[k % PALETTE.length], backgroundColor: PALETTE[k % PALETTE.length],
              pointRadius: pts.length > 60 ? 0 : 2.5, borderWidth: 1.8,
              data: pts.map(function (p) { return { x: p.x, y: key(c, p.r[c.name]) }; }) };
          }) },
          options: { animation: false, maintainAspectRatio: false, parsing: false,
            scales: { x: { type: "linear", ticks: isTime(xc) ? { callback: function (v) { return new Date(v).toLocaleString(); } } : {} },
              y: { beginAtZero: true } },
            plugins: { legend: { position: "bottom" } } }
        });
      }
    } else {
      // Bars in the table's current order, one per row (the first MAX_BARS).
      var shown = order.slice(0, MAX_BARS).map(function (j) { return rows[j]; });
      if (order.length > MAX_BARS) said.push("the first " + MAX_BARS + " of " + order.length.toLocaleString() + " rows, in the table's order");
      chart = new Chart(canvas, {
        type: kind === "line" ? "line" : "bar",
        data: {
          labels: shown.map(function (r) { var v = r[xc.name]; return v === null || v === undefined ? "null" : (typeof v === "object" ? JSON.stringify(v) : String(v)); }),
          datasets: yc.map(function (c, k) {
            return { label: c.name, backgroundColor: PALETTE[k % PALETTE.length], borderColor: PALETTE[k % PALETTE.length],
              data: shown.map(function (r) { return key(c, r[c.name]); }) };
          })
        },
        options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true } },
          plugins: { legend: { position: "bottom", display: yc.length > 1 } } }
      });
    }
    canvas.dataset.drawn = chart.config.type;
    note.textContent = (chart.config.type === "line" ? "Line" : "Bars") + " of " + yc.map(function (c) { return c.name; }).join(", ") +
      " by " + xc.name + (said.length ? " (" + said.join("; ") + ")" : "") + ".";
  }

  // --- wiring --------------------------------------------------------------------------------------

  document.getElementById("sql-prev").addEventListener("click", function () { page--; draw(); });
  document.getElementById("sql-next").addEventListener("click", function () { page++; draw(); });
  document.getElementById("sql-page-size").addEventListener("change", function (ev) { size = parseInt(ev.target.value, 10) || 50; page = 0; draw(); });

  fetch(app.dataset.resultUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(function (body) {
      rows = body.rows || [];
      order = rows.map(function (_, j) { return j; });
      var count = document.getElementById("sql-row-count");
      if (count) count.textContent = rows.length.toLocaleString() + (body.summary && body.summary.truncated ? " (the query had more: only these are kept)" : "");
      head();
      draw();
      builder();
      app.dataset.ready = "1";
    })
    .catch(function (e) {
      document.getElementById("chart-note").textContent = "The rows could not be loaded for sorting and charts (" + e.message + "); the first rows are shown below.";
    });
})();
