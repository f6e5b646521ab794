// The lag history chart of a group page: total lag and each partition over a real time axis (samples
// spaced by time, a gap where sampling paused); live pushes of the group fragment add a point.
(function () {
  "use strict";
  var source = document.getElementById("lag-history");
  var canvas = document.getElementById("lag-chart");
  if (!source || !canvas || typeof Chart === "undefined" || !window.KazamiCharts) return;
  var data = JSON.parse(source.textContent);
  if (!data.times.length) document.getElementById("chart-empty").hidden = false;
  var names = Object.keys(data.partitions);
  var filled = KazamiCharts.withGaps(data.times, [data.total].concat(names.map(function (n) { return data.partitions[n]; })));
  var series = [{ label: "total", values: filled.values[0], color: KazamiCharts.ink, width: 2.5 }];
  names.forEach(function (name, i) {
    series.push({ label: name, values: filled.values[i + 1], width: 1, hidden: names.length > 12 });
  });
  var span = data.times.length > 1 ? data.times[data.times.length - 1] - data.times[0] : 60000;
  var chart = KazamiCharts.timeLine(canvas, { times: filled.times, step_ms: span > 86400000 ? 3600000 : 60000, series: series },
                                    { yTitle: "messages behind" });
  // The forecast: a dashed line from the lag now to zero when the group would catch up at its current rates
  // (the axis goes on at most one more span beyond the history; the line is cut there).
  if (data.projection) {
    var from = data.projection[0], to = data.projection[1];
    chart.data.datasets.push({
      label: "projected", data: [{ x: from[0], y: from[1] }, { x: to[0], y: to[1] }], borderColor: KazamiCharts.ink,
      borderDash: [6, 4], borderWidth: 1.5, pointRadius: 0, fill: false, yAxisID: "y", order: 0
    });
    chart.options.scales.x.max = Math.max(chart.options.scales.x.max || from[0], Math.min(to[0], from[0] + Math.max(span, 60000)));
    chart.update();
  }
  document.addEventListener("htmx:oobAfterSwap", function () {
    var el = document.getElementById("group");
    if (!el || !el.dataset.at) return;
    var at = Number(el.dataset.at);
    chart.data.datasets[0].data.push({ x: at, y: Number(el.dataset.totalLag) });
    var now = {};
    el.querySelectorAll("tr[data-tp]").forEach(function (row) {
      if (row.dataset.lag !== undefined) now[row.dataset.tp] = Number(row.dataset.lag);
    });
    for (var i = 1; i < chart.data.datasets.length; i++) {
      var label = chart.data.datasets[i].label;
      chart.data.datasets[i].data.push({ x: at, y: label in now ? now[label] : null });
    }
    chart.update();
    document.getElementById("chart-empty").hidden = true;
  });
})();
