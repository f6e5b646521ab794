// Charts shared by the pages: lines over a real time axis (epoch ms, labelled in the viewer's time
// zone, spaced by time rather than by sample, a gap wherever a value is null) and ranked bars.
// Exposes window.KazamiCharts; pages feed it JSON from a <script type="application/json"> element.
(function () {
  "use strict";
  var PALETTE = ["#2457c5", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0e7490", "#be185d", "#4d7c0f", "#141a26", "#9a3412"];

  function label(ms, stepMs) {
    var d = new Date(ms);
    if (stepMs >= 86400000) return d.toLocaleDateString();
    if (stepMs >= 3600000) return d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  // spec: {times: [ms], step_ms, series: [{label, values: [number|null], unit}]}
  function timeLine(canvas, spec, options) {
    options = options || {};
    var unit = spec.series.length && spec.series[0].unit;
    if (!options.yTitle && unit) options.yTitle = unit;
    var step = spec.step_ms || 60000;
    // Ticks on whole multiples of the bucket (about eight of them), not wherever the scale falls.
    var span = spec.times.length ? spec.times[spec.times.length - 1] - spec.times[0] : step;
    var tickStep = step * Math.max(1, Math.ceil(span / step / 8));
    var datasets = spec.series.map(function (s, i) {
      return {
        label: s.label, unit: s.unit || "",
        data: spec.times.map(function (t, j) { return { x: t, y: s.values[j] }; }),
        borderColor: s.color || PALETTE[i % PALETTE.length], backgroundColor: s.color || PALETTE[i % PALETTE.length],
        borderWidth: s.width || 1.8, pointRadius: spec.times.length > 60 ? 0 : 2.5, tension: 0.15,
        spanGaps: false, hidden: !!s.hidden
      };
    });
    return new Chart(canvas, {
      type: "line",
      data: { datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false, parsing: false, normalized: true,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales: {
          x: { type: "linear", ticks: { stepSize: tickStep, callback: function (v) { return label(v, step); } } },
          y: { beginAtZero: true, title: { display: !!options.yTitle, text: options.yTitle || "" } }
        },
        plugins: {
          legend: { position: "bottom" },
          tooltip: { callbacks: {
            title: function (items) { return items.length ? new Date(items[0].parsed.x).toLocaleString() : ""; },
            label: function (item) {
              var unit = item.dataset.unit ? " " + item.dataset.unit : "";
              return item.dataset.label + ": " + (item.parsed.y === null ? "no data" : item.parsed.y.toLocaleString() + unit);
            }
          } }
        }
      }
    });
  }

  // spec: {labels: [text], values: [number], unit}
  function bars(canvas, spec) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: spec.labels, datasets: [{ label: spec.unit || "", data: spec.values, backgroundColor: PALETTE[0], maxBarThickness: 28 }] },
      options: {
        animation: false, maintainAspectRatio: false, indexAxis: "y",
        scales: { x: { beginAtZero: true } },
        plugins: { legend: { display: false } }
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

  window.KazamiCharts = { timeLine: timeLine, bars: bars, stacked: stacked, withGaps: withGaps, label: label };
})();
