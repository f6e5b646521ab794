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
