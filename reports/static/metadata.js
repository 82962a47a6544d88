// KRaft runs only (reports/interactive.py adds this script and its data): under the lanes, the
// metadata log (committed high watermark, quorum leaders, each broker's applied offset) and
// each broker's records behind it, on the lanes' time axis. timeline.js announces every redraw
// with an "epochsim-view" event (the window in µs and the lanes' left edge and width), so
// zooming and panning the lanes moves these plots too. Hovering them reads out, at that time,
// the high watermark and each broker's offset and lag. window.epochsimMetadata exposes the
// state for tests.
(function () {
  "use strict";
  var M = JSON.parse(document.getElementById("epochsim-metadata").textContent);
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                 "#bcbd22"];
  var LOG_H = 150, LAG_H = 90, GAP = 26, TOP = 18;
  var canvas = document.getElementById("metadata-lanes"), ctx = canvas.getContext("2d");
  var readout = document.getElementById("metadata-readout");
  var brokers = Object.keys(M.applied);
  var view = null, drawn = 0, text = "";
  var hwMax = Math.max.apply(null, M.high_watermark.map(function (p) { return p[1]; }).concat([1]));
  var lagMax = 1;
  brokers.forEach(function (b) {
    M.lag[b].forEach(function (p) { if (p[1] !== null && p[1] > lagMax) lagMax = p[1]; });
  });

  function color(b) { return PALETTE[brokers.indexOf(b) % PALETTE.length]; }
  function X(t) { return view.left + (t - view.v0) / (view.v1 - view.v0) * view.width; }
  function at(series, t) {  // the value in force at t (undefined before the first point)
    var lo = 0, hi = series.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (series[mid][0] <= t) lo = mid + 1; else hi = mid; }
    return lo ? series[lo - 1][1] : undefined;
  }

  function steps(series, y0, h, max, stroke, width) {
    // a step line of `series` in the band [y0, y0 + h], broken where a value is null
    var Y = function (v) { return y0 + h - v / max * h; };
    ctx.strokeStyle = stroke; ctx.lineWidth = width; ctx.beginPath();
    var start = at(series, view.v0), pen = false, lastY = null;
    if (start !== undefined && start !== null) { ctx.moveTo(X(view.v0), Y(start)); pen = true; lastY = Y(start); }
    for (var k = 0; k < series.length; k++) {
      var t = series[k][0], v = series[k][1];
      if (t <= view.v0) continue;
      if (t > view.v1) break;
      if (pen) ctx.lineTo(X(t), lastY);
      if (v === null) { pen = false; continue; }
      if (pen) ctx.lineTo(X(t), Y(v)); else ctx.moveTo(X(t), Y(v));
      pen = true; lastY = Y(v);
    }
    if (pen) ctx.lineTo(X(Math.min(view.v1, M.end_us)), lastY);
    ctx.stroke();
    drawn++;
  }

  function frame(y0, h, label, max) {
    ctx.fillStyle = "#222"; ctx.font = "12px sans-serif"; ctx.textAlign = "left";
    ctx.fillText(label, view.left, y0 - 5);
    ctx.fillStyle = "#e5e5e5"; ctx.fillRect(view.left, y0 + h, view.width, 1);
    ctx.fillStyle = "#777"; ctx.font = "11px sans-serif"; ctx.textAlign = "right";
    ctx.fillText(String(max), view.left - 6, y0 + 9); ctx.fillText("0", view.left - 6, y0 + h);
  }

  function draw() {
    if (!view) return;
    var dpr = window.devicePixelRatio || 1, h = TOP + LOG_H + GAP + LAG_H + 6;
    canvas.style.height = h + "px";
    canvas.width = Math.round(canvas.clientWidth * dpr); canvas.height = Math.round(h * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, canvas.clientWidth, h);
    drawn = 0;
    var lagY = TOP + LOG_H + GAP;
    frame(TOP, LOG_H, "metadata log: committed high watermark (grey) and each broker's applied offset", hwMax);
    frame(lagY, LAG_H, "records each broker is behind the committed high watermark", lagMax);
    ctx.save();
    ctx.beginPath(); ctx.rect(view.left, 0, view.width + 1, h); ctx.clip();
    M.leaders.forEach(function (q, k) {  // [voter, epoch, start, end]
      if (q[3] < view.v0 || q[2] > view.v1) return;
      var a = Math.max(X(q[2]), view.left), b = Math.min(X(q[3]), view.left + view.width);
      ctx.fillStyle = "#c6dbef"; ctx.fillRect(a, TOP, b - a, 12);
      ctx.fillStyle = "#08306b"; ctx.font = "10px sans-serif"; ctx.textAlign = "center";
      ctx.fillText(q[0] + " leads \u00b7 epoch " + q[1], (a + b) / 2, TOP + 10);
      if (k) { ctx.fillStyle = "#555"; ctx.fillRect(X(q[2]), TOP, 1, LOG_H); }
    });
    steps(M.high_watermark, TOP + 14, LOG_H - 14, hwMax, "rgba(34,34,34,0.35)", 4);
    brokers.forEach(function (b) {
      steps(M.applied[b], TOP + 14, LOG_H - 14, hwMax, color(b), 1.5);
      steps(M.lag[b], lagY, LAG_H, lagMax, color(b), 1.5);
    });
    ctx.restore();
  }

  function readAt(t) {
    var parts = ["at " + (t / 1e6).toFixed(6) + "s: high watermark " + at(M.high_watermark, t)];
    brokers.forEach(function (b) {
      var off = at(M.applied[b], t), lag = at(M.lag[b], t);
      if (off === undefined) parts.push(b + " not started");
      else if (off === null) parts.push(b + " down");
      else parts.push(b + " " + off + (lag ? " (" + lag + " behind)" : " (current)"));
    });
    return parts.join(" \u00b7 ");
  }

  document.addEventListener("epochsim-view", function (e) { view = e.detail; draw(); });
  canvas.addEventListener("mousemove", function (e) {
    if (!view) return;
    var r = canvas.getBoundingClientRect(), x = e.clientX - r.left;
    if (x < view.left || x > view.left + view.width) return;
    text = readAt(view.v0 + (x - view.left) / view.width * (view.v1 - view.v0));
    readout.textContent = text;
  });
  document.getElementById("metadata-legend").innerHTML = brokers.map(function (b) {
    return "<span><i style=\"background:" + color(b) + "\"></i>" + b + "</span>";
  }).join("") + "<span><i style=\"background:rgba(34,34,34,.35)\"></i>committed high watermark</span>";

  window.epochsimMetadata = {
    state: function () {
      return {v0: view && view.v0, v1: view && view.v1, drawn: drawn, brokers: brokers,
              readout: text};
    },
    readAt: readAt
  };
})();
