// Charts shared by the pages: lines over a real time axis (epoch ms, labelled in the viewer's time
// zone, spaced by time rather than by sample, a gap wherever a value is null) and ranked bars.
// Exposes window.KazamiCharts; pages feed it JSON from a <script type="application/json"> element.
(function () {
  "use strict";
  var PALETTE = ["#2457c5", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0e7490", "#be185d", "#4d7c0f", "#141a26", "#9a3412"];
  // Dark mode: text, grid lines and the darkest series follow the page's colours (static/css/kazami.css).
  var css = window.getComputedStyle(document.documentElement);
  var INK = css.getPropertyValue("--ink").trim() || "#1d2330";
  if (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches) {
    PALETTE = ["#8fb1ff", "#5ccf96", "#e8b35c", "#f28b8b", "#b794f4", "#4fd1c5", "#f687b3", "#9ae6b4", "#e3e8f0", "#fbd38d"];
    if (typeof Chart !== "undefined") {
      Chart.defaults.color = css.getPropertyValue("--muted").trim();
      Chart.defaults.borderColor = css.getPropertyValue("--line").trim();
    }
  }

  function label(ms, stepMs) {
    var d = new Date(ms);
    if (stepMs >= 86400000) return d.toLocaleDateString();
    if (stepMs >= 3600000) return d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  var NICE = [60000, 120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000,
              86400000, 172800000, 604800000, 2592000000];
  function niceStep(ms) {
    for (var i = 0; i < NICE.length; i++) if (NICE[i] >= ms) return NICE[i];
    return Math.ceil(ms / 86400000) * 86400000;
  }
  // Ticks at whole multiples of stepMs (in the viewer's time zone, for steps of an hour or more) between min and max.
  function roundTicks(min, max, stepMs) {
    var offset = stepMs >= 3600000 ? new Date(min).getTimezoneOffset() * 60000 : 0;
    var first = Math.ceil((min - offset) / stepMs) * stepMs + offset, ticks = [];
    for (var t = first; t <= max && ticks.length < 50; t += stepMs) ticks.push({ value: t });
    return ticks;
  }

  function number(v) { return typeof v === "number" ? v.toLocaleString() : v; }

  // spec: {times: [ms], step_ms, y_title, stacked, series: [{label, values: [number|null], unit, context}],
  // impressions: {label, values} (bars behind the lines, on an axis of their own)}. A series' context, when
  // given, is [impressions, clicks] per point, said in its tooltip.
  function timeLine(canvas, spec, options) {
    options = options || {};
    var unit = spec.series.length && spec.series[0].unit;
    var yTitle = options.yTitle || spec.y_title || unit || "";
    var step = spec.step_ms || 60000;
    // Ticks on round times (about eight of them: every 10 minutes, 3 hours, a day), not wherever the scale falls.
    var span = spec.times.length ? spec.times[spec.times.length - 1] - spec.times[0] : step;
    var tickStep = niceStep(Math.max(step, span / 8));
    var datasets = spec.series.map(function (s, i) {
      var colour = s.color || PALETTE[i % PALETTE.length];
      return {
        label: s.label, unit: s.unit || "", context: s.context || null,
        data: spec.times.map(function (t, j) { return { x: t, y: s.values[j] }; }),
        borderColor: colour, backgroundColor: spec.stacked ? colour + "99" : colour,
        borderWidth: s.width || (spec.stacked ? 1 : 1.8), pointRadius: spec.times.length > 60 ? 0 : 2.5, tension: 0.15,
        spanGaps: false, hidden: !!s.hidden, fill: spec.stacked ? (i === 0 ? "origin" : "-1") : false,
        yAxisID: "y", order: 1
      };
    });
    var scales = {
      x: { type: "linear", min: spec.times[0], max: spec.times[spec.times.length - 1],
           title: { display: true, text: "time (your time zone)" },
           afterBuildTicks: function (axis) { axis.ticks = roundTicks(axis.min, axis.max, tickStep); },
           ticks: { callback: function (v) { return label(v, step); } } },
      y: { beginAtZero: true, stacked: !!spec.stacked, title: { display: !!yTitle, text: yTitle },
           ticks: { callback: function (v) { return number(v) + (unit === "%" ? "%" : ""); } } }
    };
    if (spec.impressions) {
      datasets.push({
        type: "bar", label: spec.impressions.label, unit: "impressions", yAxisID: "y2", order: 2,
        data: spec.times.map(function (t, j) { return { x: t, y: spec.impressions.values[j] }; }),
        backgroundColor: "rgba(154, 163, 178, 0.28)", borderWidth: 0, barPercentage: 1, categoryPercentage: 0.9
      });
      scales.y2 = { position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
                    title: { display: true, text: "impressions" }, ticks: { callback: number } };
    }
    return new Chart(canvas, {
      type: "line",
      data: { datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false, parsing: false, normalized: true,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales: scales,
        plugins: {
          legend: { position: "bottom" },
          tooltip: { callbacks: {
            title: function (items) { return items.length ? new Date(items[0].parsed.x).toLocaleString() : ""; },
            label: function (item) {
              var ds = item.dataset;
              var u = ds.unit === "%" ? "%" : (ds.unit ? " " + ds.unit : "");
              if (item.parsed.y === null) return ds.label + ": no data";
              var text = ds.label + ": " + item.parsed.y.toLocaleString() + u;
              var c = ds.context && ds.context[item.dataIndex];
              if (c) text += " (" + c[1].toLocaleString() + " clicks of " + c[0].toLocaleString() + " impressions)";
              return text;
            }
          } }
        }
      }
    });
  }

  // spec: {labels: [text], values: [number], unit}
  function bars(canvas, spec) {
    var pct = spec.unit === "%";
    return new Chart(canvas, {
      type: "bar",
      data: { labels: spec.labels, datasets: [{ label: spec.unit || "", data: spec.values, backgroundColor: PALETTE[0], maxBarThickness: 28 }] },
      options: {
        animation: false, maintainAspectRatio: false, indexAxis: "y",
        scales: { x: { beginAtZero: true, title: { display: !!spec.unit, text: pct ? "CTR (%)" : spec.unit || "" },
                       ticks: { callback: function (v) { return number(v) + (pct ? "%" : ""); } } } },
        plugins: { legend: { display: false }, tooltip: { callbacks: {
          label: function (item) { return number(item.parsed.x) + (pct ? "%" : " " + (spec.unit || "")); }
        } } }
      }
    });
  }

  // spec: {labels: [text], series: [{label, values, color}]}: one bar per label, its series stacked.
  function stacked(canvas, spec) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: spec.labels, datasets: spec.series.map(function (s, i) {
        return { label: s.label, data: s.values, backgroundColor: s.color || PALETTE[i % PALETTE.length], maxBarThickness: 28 };
      }) },
      options: {
        animation: false, maintainAspectRatio: false, indexAxis: "y",
        scales: { x: { stacked: true, beginAtZero: true }, y: { stacked: true } },
        plugins: { legend: { position: "bottom" } }
      }
    });
  }

  // Points of uneven samples: a null after any interval far longer than the usual one, so a pause
  // in sampling shows as a gap instead of a straight line across it.
  function withGaps(times, values) {
    if (times.length < 3) return { times: times, values: values };
    var steps = [];
    for (var i = 1; i < times.length; i++) steps.push(times[i] - times[i - 1]);
    var sorted = steps.slice().sort(function (a, b) { return a - b; });
    var usual = sorted[Math.floor(sorted.length / 2)] || 1;
    var outTimes = [times[0]], outValues = values.map(function (v) { return [v[0]]; });
    for (var j = 1; j < times.length; j++) {
      if (times[j] - times[j - 1] > 3 * usual) {
        outTimes.push(times[j - 1] + usual);
        outValues.forEach(function (o) { o.push(null); });
      }
      outTimes.push(times[j]);
      outValues.forEach(function (o, k) { o.push(values[k][j]); });
    }
    return { times: outTimes, values: outValues };
  }

  window.KazamiCharts = { timeLine: timeLine, bars: bars, stacked: stacked, withGaps: withGaps, label: label, ink: INK };
})();
