// The interactive timeline of one epochsim trace (reports/interactive.py writes the page).
// One lane per node; each event a tick coloured by what it is. Only the events in view are
// visited when drawing (binary search on each lane's time-sorted list, at most one tick per
// pixel and colour), and the events list renders only the rows in view, so a trace of
// 100,000 events stays fast. window.epochsimTimeline exposes the state for tests.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("epochsim-data").textContent);
  var E = D.events, N = E.length;
  var LANE_H = 30, LEFT = 110, AXIS_H = 22, ROW_H = 20, PICK_PX = 6;

  // -- what an event is: its colour class ---------------------------------------------------
  var CLASSES = [
    {name: "data plane (fetch, produce, replication)", color: "#b5b5b5", y: 19, h: 7},
    {name: "control message", color: "#4e79a7", y: 6, h: 12},
    {name: "state change", color: "#6a3d9a", y: 3, h: 22},
    {name: "fault", color: "#e6550d", y: 1, h: 27},
    {name: "ack", color: "#2ca02c", y: 12, h: 8},
    {name: "retry / drop / error", color: "#ff7f0e", y: 2, h: 12},
    {name: "failed", color: "#d62728", y: 2, h: 24}
  ];
  var DATA_MSGS = {Fetch: 1, FetchResponse: 1, Produce: 1, ProduceResponse: 1};
  var DATA_KINDS = {batch: 1, batch_grown: 1, hw: 1, replicate: 1, append: 1,
                    produce_result: 1, log_start: 1, consume: 1};
  var FAULT_KINDS = {fault: 1, fault_outcome: 1, crash: 1, restart: 1, halt: 1,
                     log_dir_failure: 1, upgrade: 1, unhealed: 1, unsettled: 1};
  var RETRY_KINDS = {produce_error: 1, drop: 1, fetch_error: 1, metadata_rejected: 1,
                     dup_append: 1, disconnect: 1, stale_controller: 1};

  var T = new Float64Array(N), LANE = new Int32Array(N), CLS = new Uint8Array(N);
  var TPS = new Array(N), MSG = new Array(N);
  var nodeIndex = {}, lanes = D.nodes.map(function (n, i) { nodeIndex[n] = i; return []; });
  var sendOf = {}, deliverOf = {}, held = {}, partitions = {};
  var seqIndex = {};

  function tpsOf(ev) {
    var out = [];
    if (typeof ev.tp === "string") out.push(ev.tp);
    ["batches", "parts", "changes", "hws"].forEach(function (key) {
      var items = ev[key];
      if (!Array.isArray(items)) return;
      items.forEach(function (it) {
        if (Array.isArray(it) && typeof it[0] === "string") out.push(it[0]);
        else if (it && typeof it.tp === "string") out.push(it.tp);
      });
    });
    return out.length ? out : null;
  }

  function classOf(ev, msg) {
    var k = ev.kind;
    if (k === "ack") return 4;
    if (k === "produce_failed") return 6;
    if (FAULT_KINDS[k]) return 3;
    if (RETRY_KINDS[k]) return 5;
    if (DATA_KINDS[k]) return 0;
    if (k === "send" || k === "deliver" || k === "hold" || k === "stall")
      return msg && DATA_MSGS[msg] ? 0 : 1;
    return 2;
  }

  for (var i = 0; i < N; i++) {
    var ev = E[i];
    seqIndex[ev.seq] = i;
    T[i] = ev.t;
    var li = nodeIndex[ev.node === undefined ? "-" : String(ev.node)];
    LANE[i] = li === undefined ? 0 : li;
    lanes[LANE[i]].push(i);
    var msg = ev.msg;
    if (ev.kind === "send") sendOf[ev.mid] = i;
    if ((ev.kind === "deliver" || ev.kind === "hold" || ev.kind === "stall") &&
        sendOf[ev.mid] !== undefined) {
      msg = E[sendOf[ev.mid]].msg;
      if (ev.kind === "deliver" && deliverOf[ev.mid] === undefined) deliverOf[ev.mid] = i;
      else if (ev.kind !== "deliver") held[ev.mid] = true;
    }
    MSG[i] = msg;
    TPS[i] = tpsOf(ev) || (ev.mid !== undefined && sendOf[ev.mid] !== undefined ?
                           TPS[sendOf[ev.mid]] : null);
    if (TPS[i]) TPS[i].forEach(function (tp) { partitions[tp] = 1; });
    CLS[i] = classOf(ev, msg);
  }
  var WITNESS = {};
  D.violations.forEach(function (v, k) {
    v.seqs.forEach(function (s) {
      var j = seqIndex[s];
      if (j !== undefined) (WITNESS[j] = WITNESS[j] || []).push(v.invariant);
    });
    v.index = k;
  });
  var END = Math.max(D.end_us, N ? T[N - 1] : 1, 1);

  // -- state -----------------------------------------------------------------------------
  var S = {v0: 0, v1: END, hiddenNodes: {}, tp: "", dataPlane: true, selected: -1,
           violation: -1, hover: -1, visible: [], list: []};
  var $ = function (id) { return document.getElementById(id); };
  var canvas = $("lanes"), ctx = canvas.getContext("2d"), tip = $("tip");
  var listEl = $("list"), spacer = $("list-spacer");

  function shown(i) {
    if (S.hiddenNodes[D.nodes[LANE[i]]]) return false;
    if (!S.dataPlane && CLS[i] === 0) return false;
    if (S.tp && TPS[i] && TPS[i].indexOf(S.tp) < 0) return false;
    return true;
  }

  function visibleLanes() {
    return D.nodes.map(function (_, k) { return k; })
      .filter(function (k) { return !S.hiddenNodes[D.nodes[k]]; });
  }

  // -- geometry --------------------------------------------------------------------------
  function width() { return canvas.clientWidth - LEFT - 12; }
  function X(t) { return LEFT + (t - S.v0) / (S.v1 - S.v0) * width(); }
  function tAt(x) { return S.v0 + (x - LEFT) / width() * (S.v1 - S.v0); }
  function laneY(row) { return AXIS_H + row * LANE_H; }
  function lowerBound(arr, t) {  // first k with T[arr[k]] >= t
    var lo = 0, hi = arr.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (T[arr[mid]] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function fmt(t) { return (t / 1e6).toFixed(t % 1000 === 0 ? 3 : 6) + "s"; }

  // -- drawing ---------------------------------------------------------------------------
  function resize() {
    var dpr = window.devicePixelRatio || 1;
    var h = AXIS_H + S.visible.length * LANE_H + 4;
    canvas.style.height = h + "px";
    canvas.width = Math.round(canvas.clientWidth * dpr);
    canvas.height = Math.round(h * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function niceStep(span, count) {
    var raw = span / count, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function drawAxis(h) {
    var step = niceStep(S.v1 - S.v0, Math.max(2, width() / 110));
    var digits = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / 1e6))));
    ctx.fillStyle = "#333"; ctx.font = "11px sans-serif"; ctx.textAlign = "center";
    for (var t = Math.ceil(S.v0 / step) * step; t <= S.v1; t += step) {
      var x = X(t);
      ctx.fillRect(x, AXIS_H - 5, 1, 5);
      ctx.fillText((t / 1e6).toFixed(digits) + "s", x, AXIS_H - 8);
      ctx.fillStyle = "#eee"; ctx.fillRect(x, AXIS_H, 1, h - AXIS_H); ctx.fillStyle = "#333";
    }
  }

  function downWindows(k) {  // crash -> restart of this node, shaded in its lane
    var out = [], arr = lanes[k], start = null;
    for (var j = 0; j < arr.length; j++) {
      var kind = E[arr[j]].kind;
      if (kind === "crash" && start === null) start = T[arr[j]];
      if (kind === "restart" && start !== null) { out.push([start, T[arr[j]]]); start = null; }
    }
    if (start !== null) out.push([start, END]);
    return out;
  }
  var DOWN = D.nodes.map(function (_, k) { return downWindows(k); });

  function draw() {
    var h = AXIS_H + S.visible.length * LANE_H + 4, w = canvas.clientWidth;
    ctx.clearRect(0, 0, w, h);
    drawAxis(h);
    ctx.save();
    ctx.beginPath(); ctx.rect(LEFT, 0, width() + 1, h); ctx.clip();
    S.visible.forEach(function (k, row) {
      var y = laneY(row);
      if (row % 2) { ctx.fillStyle = "#fafafa"; ctx.fillRect(LEFT, y, width(), LANE_H); }
      ctx.fillStyle = "rgba(158,158,158,0.35)";
      DOWN[k].forEach(function (d) {
        if (d[1] >= S.v0 && d[0] <= S.v1) ctx.fillRect(X(d[0]), y, X(d[1]) - X(d[0]), LANE_H);
      });
    });
    var drawn = drawMessages();
    S.visible.forEach(function (k, row) { drawLane(k, laneY(row)); });
    drawWitnesses();
    ctx.restore();
    S.visible.forEach(function (k, row) {
      ctx.fillStyle = "#222"; ctx.font = "12px sans-serif"; ctx.textAlign = "right";
      ctx.fillText(D.nodes[k], LEFT - 8, laneY(row) + LANE_H / 2 + 4);
      ctx.fillStyle = "#e5e5e5"; ctx.fillRect(0, laneY(row) + LANE_H - 1, w, 1);
    });
    $("window").textContent = fmt(Math.round(S.v0)) + " \u2013 " + fmt(Math.round(S.v1));
    S.messagesDrawn = drawn;
    // plots that share this time axis (a KRaft run's metadata log, static/metadata.js) follow
    document.dispatchEvent(new CustomEvent("epochsim-view",
      {detail: {v0: S.v0, v1: S.v1, left: LEFT, width: width()}}));
  }

  function drawLane(k, y) {
    var arr = lanes[k], lo = lowerBound(arr, S.v0), last = [-1, -1, -1, -1, -1, -1, -1];
    for (var j = lo; j < arr.length; j++) {
      var i = arr[j];
      if (T[i] > S.v1) break;
      if (!shown(i)) continue;
      var c = CLS[i], px = Math.floor(X(T[i]));
      if (last[c] === px) continue;  // one tick per pixel and colour: the rest would overprint
      last[c] = px;
      var cl = CLASSES[c];
      ctx.fillStyle = cl.color;
      ctx.fillRect(px, y + cl.y, c === 0 ? 1 : 2, cl.h);
    }
  }

  function drawMessages() {
    // send -> deliver lines, only when few enough to read
    var rows = {}, sends = [];
    S.visible.forEach(function (k, row) { rows[k] = row; });
    S.visible.forEach(function (k) {
      var arr = lanes[k];
      for (var j = lowerBound(arr, S.v0); j < arr.length && T[arr[j]] <= S.v1; j++) {
        var i = arr[j], ev = E[i];
        if (ev.kind === "send" && deliverOf[ev.mid] !== undefined && shown(i)) sends.push(i);
        if (ev.kind === "deliver" && sendOf[ev.mid] !== undefined &&
            T[sendOf[ev.mid]] < S.v0 && shown(i)) sends.push(sendOf[ev.mid]);
      }
    });
    if (sends.length > 600) return 0;
    var n = 0;
    sends.forEach(function (i) {
      var j = deliverOf[E[i].mid], a = rows[LANE[i]], b = rows[LANE[j]];
      if (a === undefined || b === undefined) return;
      var isHeld = held[E[i].mid];
      ctx.strokeStyle = isHeld ? "#6a3d9a" : CLS[i] === 0 ? "rgba(150,150,150,0.6)" : "#4e79a7";
      ctx.lineWidth = isHeld ? 1.6 : 0.8;
      ctx.setLineDash(isHeld ? [5, 3] : []);
      ctx.beginPath();
      ctx.moveTo(X(T[i]), laneY(a) + LANE_H / 2);
      ctx.lineTo(X(T[j]), laneY(b) + LANE_H / 2);
      ctx.stroke();
      n++;
    });
    ctx.setLineDash([]);
    return n;
  }

  function star(x, y, r) {
    ctx.beginPath();
    for (var p = 0; p < 10; p++) {
      var a = Math.PI / 2 + p * Math.PI / 5, rr = p % 2 ? r * 0.45 : r;
      ctx.lineTo(x + rr * Math.cos(a), y - rr * Math.sin(a));
    }
    ctx.closePath(); ctx.fill(); ctx.stroke();
  }

  function drawWitnesses() {
    var rows = {};
    S.visible.forEach(function (k, row) { rows[k] = row; });
    D.violations.forEach(function (v) {
      var t = v.t_us;
      if (t >= S.v0 && t <= S.v1) {
        ctx.fillStyle = "rgba(214,39,40,0.7)";
        ctx.fillRect(X(t), AXIS_H, 1, S.visible.length * LANE_H);
      }
    });
    ctx.strokeStyle = "white"; ctx.lineWidth = 1;
    Object.keys(WITNESS).forEach(function (key) {
      var i = +key, row = rows[LANE[i]];
      if (row === undefined || T[i] < S.v0 || T[i] > S.v1 || !shown(i)) return;
      var active = S.violation >= 0 && WITNESS[i].indexOf(D.violations[S.violation].invariant) >= 0;
      ctx.fillStyle = "#d62728";
      star(X(T[i]), laneY(row) + LANE_H / 2, active ? 10 : 7);
    });
    [S.selected, S.hover].forEach(function (i, n) {
      var row = i >= 0 ? rows[LANE[i]] : undefined;
      if (row === undefined) return;
      ctx.strokeStyle = n ? "#000" : "#1f77b4"; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.arc(X(T[i]) + 1, laneY(row) + LANE_H / 2, 7, 0, 2 * Math.PI);
      ctx.stroke();
    });
  }

  // -- picking and the tooltip -----------------------------------------------------------
  function pick(x, y) {
    var row = Math.floor((y - AXIS_H) / LANE_H);
    if (row < 0 || row >= S.visible.length || x < LEFT) return -1;
    var arr = lanes[S.visible[row]], t = tAt(x), per = (S.v1 - S.v0) / width();
    var best = -1, bestD = PICK_PX + 1;
    for (var j = lowerBound(arr, t - PICK_PX * per); j < arr.length; j++) {
      var i = arr[j], d = Math.abs(X(T[i]) - x);
      if (T[i] > t + PICK_PX * per) break;
      if (!shown(i)) continue;
      // the nearest wins; among equals, a witness, then the rarer kinds over the data plane
      var rank = d - (WITNESS[i] ? 3 : 0) - (CLS[i] === 0 ? 0 : 1);
      if (rank < bestD) { bestD = rank; best = i; }
    }
    return best;
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"}[c];
    });
  }

  function fieldsHtml(i) {
    var ev = E[i], rows = [["seq", ev.seq], ["time", fmt(ev.t)], ["node", ev.node],
                             ["kind", ev.kind]];
    if (MSG[i] && ev.msg === undefined) rows.push(["message", MSG[i]]);
    Object.keys(ev).forEach(function (key) {
      if (["seq", "t", "node", "kind"].indexOf(key) >= 0) return;
      var text = typeof ev[key] === "string" ? ev[key] : JSON.stringify(ev[key]);
      rows.push([key, text.length > 300 ? text.slice(0, 300) + "\u2026" : text]);
    });
    var html = "<table>" + rows.map(function (r) {
      return "<tr><td>" + esc(r[0]) + "</td><td>" + esc(r[1]) + "</td></tr>";
    }).join("") + "</table>";
    if (WITNESS[i]) html += "<div class=\"witness\">witness of " + esc(WITNESS[i].join(", ")) + "</div>";
    return html;
  }

  function showTip(i, x, y) {
    if (i < 0) { tip.hidden = true; return; }
    tip.innerHTML = fieldsHtml(i);
    tip.hidden = false;
    var cw = canvas.clientWidth, tw = tip.offsetWidth;
    tip.style.left = Math.max(0, Math.min(x + 14, cw - tw - 4)) + "px";
    tip.style.top = (y + 16) + "px";
  }

  // -- zoom and pan ----------------------------------------------------------------------
  function setView(v0, v1) {
    var span = Math.max(10, Math.min(END, v1 - v0));
    v0 = Math.max(0, Math.min(v0, END - span));
    S.v0 = v0; S.v1 = v0 + span;
    draw();
  }
  function zoomAt(t, factor) { setView(t - (t - S.v0) * factor, t + (S.v1 - t) * factor); }

  var drag = null;
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = canvas.getBoundingClientRect();
    zoomAt(tAt(e.clientX - r.left), Math.exp(e.deltaY * 0.0015));
  }, {passive: false});
  canvas.addEventListener("mousedown", function (e) {
    drag = {x: e.clientX, v0: S.v0, v1: S.v1, moved: false};
    canvas.classList.add("dragging");
  });
  window.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var wasClick = !drag.moved;
    drag = null; canvas.classList.remove("dragging");
    if (wasClick && e.target === canvas) {
      var r = canvas.getBoundingClientRect(), i = pick(e.clientX - r.left, e.clientY - r.top);
      if (i >= 0) select(i, true);
    }
  });
  canvas.addEventListener("mousemove", function (e) {
    var r = canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    if (drag) {
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        var dt = dx / width() * (drag.v1 - drag.v0);
        setView(drag.v0 - dt, drag.v1 - dt);
        return;
      }
    }
    var i = pick(x, y);
    if (i !== S.hover) { S.hover = i; draw(); }
    showTip(i, x, y);
  });
  canvas.addEventListener("mouseleave", function () {
    S.hover = -1; tip.hidden = true; draw();
  });
  document.addEventListener("keydown", function (e) {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    var mid = (S.v0 + S.v1) / 2, span = S.v1 - S.v0;
    if (e.key === "+" || e.key === "=") zoomAt(mid, 0.5);
    else if (e.key === "-") zoomAt(mid, 2);
    else if (e.key === "0") setView(0, END);
    else if (e.key === "ArrowLeft") setView(S.v0 - span / 4, S.v1 - span / 4);
    else if (e.key === "ArrowRight") setView(S.v0 + span / 4, S.v1 + span / 4);
  });
  $("zoom-in").onclick = function () { zoomAt((S.v0 + S.v1) / 2, 0.5); };
  $("zoom-out").onclick = function () { zoomAt((S.v0 + S.v1) / 2, 2); };
  $("zoom-reset").onclick = function () { setView(0, END); };

  // -- filters ---------------------------------------------------------------------------
  function refilter() {
    S.visible = visibleLanes();
    var list = [];
    for (var i = 0; i < N; i++) if (shown(i)) list.push(i);
    S.list = list;
    spacer.style.height = (list.length * ROW_H) + "px";
    $("shown").textContent = list.length.toLocaleString("en") + " of " +
      N.toLocaleString("en") + " events shown";
    $("list-count").textContent = "(" + list.length.toLocaleString("en") + ")";
    resize(); draw(); renderList();
  }

  D.nodes.forEach(function (node) {
    var label = document.createElement("label"), box = document.createElement("input");
    box.type = "checkbox"; box.checked = true; box.dataset.node = node;
    box.id = "node-" + node;
    box.onchange = function () {
      if (box.checked) delete S.hiddenNodes[node]; else S.hiddenNodes[node] = true;
      refilter();
    };
    label.appendChild(box); label.appendChild(document.createTextNode(" " + node));
    $("node-filters").appendChild(label);
  });
  Object.keys(partitions).sort(function (a, b) {
    var ta = a.replace(/-(\d+)$/, ""), tb = b.replace(/-(\d+)$/, "");
    if (ta !== tb) return ta < tb ? -1 : 1;
    return (+a.split("-").pop()) - (+b.split("-").pop());
  }).forEach(function (tp) {
    var o = document.createElement("option"); o.value = tp; o.textContent = tp;
    $("partition").appendChild(o);
  });
  $("partition").onchange = function () { S.tp = this.value; refilter(); };
  $("data-plane").onchange = function () { S.dataPlane = this.checked; refilter(); };

  // -- the events list (only the rows in view exist) -------------------------------------
  function summary(ev) {
    var parts = [];
    Object.keys(ev).forEach(function (key) {
      if (["seq", "t", "node", "kind"].indexOf(key) >= 0) return;
      var v = typeof ev[key] === "string" ? ev[key] : JSON.stringify(ev[key]);
      parts.push(key + "=" + (v.length > 80 ? v.slice(0, 80) + "\u2026" : v));
    });
    return parts.join(" ");
  }
  var rowPool = [];
  function renderList() {
    var first = Math.max(0, Math.floor(listEl.scrollTop / ROW_H) - 5);
    var count = Math.ceil(listEl.clientHeight / ROW_H) + 10;
    var want = Math.min(count, Math.max(0, S.list.length - first));
    while (rowPool.length < want) {
      var div = document.createElement("div"); div.className = "row";
      for (var c = 0; c < 5; c++) div.appendChild(document.createElement("span"));
      div.onclick = function () { select(+this.dataset.index, false); };
      listEl.appendChild(div); rowPool.push(div);
    }
    rowPool.forEach(function (div, n) {
      if (n >= want) { div.style.display = "none"; return; }
      var i = S.list[first + n], ev = E[i];
      div.style.display = ""; div.style.top = ((first + n) * ROW_H) + "px";
      div.dataset.index = i; div.dataset.seq = ev.seq;
      div.className = "row" + (WITNESS[i] ? " witness" : "") + (i === S.selected ? " selected" : "");
      var cells = div.childNodes;
      cells[0].textContent = ev.seq; cells[1].textContent = fmt(ev.t);
      cells[2].textContent = ev.node; cells[3].textContent = ev.kind + (MSG[i] ? " " + MSG[i] : "");
      cells[4].textContent = (WITNESS[i] ? "\u2605 " + WITNESS[i].join(", ") + ": " : "") + summary(ev);
    });
  }
  listEl.addEventListener("scroll", renderList);

  function listRow(i) {  // the row of event i in the filtered list, or -1
    var lo = 0, hi = S.list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (S.list[mid] < i) lo = mid + 1; else hi = mid; }
    return S.list[lo] === i ? lo : -1;
  }
  function scrollListTo(i) {
    var row = listRow(i);
    if (row >= 0) listEl.scrollTop = Math.max(0, row * ROW_H - ROW_H);
    renderList();
  }

  function select(i, fromChart) {
    S.selected = i;
    if (fromChart) scrollListTo(i);
    else if (T[i] < S.v0 || T[i] > S.v1) {
      var half = (S.v1 - S.v0) / 2;
      setView(T[i] - half, T[i] + half);
    }
    draw(); renderList();
  }

  // -- violations: jump to the events that caused them ---------------------------------
  function showViolation(k) {
    var v = D.violations[k];
    var idx = v.seqs.map(function (s) { return seqIndex[s]; })
                    .filter(function (i) { return i !== undefined; }).sort(function (a, b) { return a - b; });
    S.violation = k;
    // the witnesses must be on screen: show their nodes and partitions again if filtered out
    var changed = false;
    idx.forEach(function (i) {
      var node = D.nodes[LANE[i]];
      if (S.hiddenNodes[node]) { delete S.hiddenNodes[node]; $("node-" + node).checked = true; changed = true; }
      if (S.tp && TPS[i] && TPS[i].indexOf(S.tp) < 0) { S.tp = ""; $("partition").value = ""; changed = true; }
      if (!S.dataPlane && CLS[i] === 0) { S.dataPlane = true; $("data-plane").checked = true; changed = true; }
    });
    if (changed) refilter();
    Array.prototype.forEach.call(document.querySelectorAll("#violations button"), function (b, n) {
      b.classList.toggle("active", n === k);
    });
    if (idx.length) {
      var lo = T[idx[0]], hi = idx.reduce(function (m, i) { return Math.max(m, T[i]); }, lo);
      var pad = Math.max((hi - lo) * 0.6, 1500);
      S.selected = idx[idx.length - 1];
      setView(lo - pad, hi + pad);
      scrollListTo(idx[0]);
      listEl.scrollIntoView({block: "nearest"});
    } else {
      setView(v.t_us - 5000, v.t_us + 5000);
    }
    draw(); renderList();
  }

  // -- page furniture --------------------------------------------------------------------
  $("title").textContent = D.scenario + " \u00b7 seed " + D.seed + " \u00b7 profile " + D.profile;
  $("status").textContent = D.status + " \u00b7 " + N.toLocaleString("en") + " events, " + fmt(END);
  $("status").className = D.violations.length ? "bad" : "ok";
  $("note").textContent = D.note || "";
  var firsts = {};
  D.violations.forEach(function (v, k) {
    var b = document.createElement("button");
    b.textContent = "VIOLATION " + v.invariant + " at " + fmt(v.t_us) + ": " + v.message +
      " (" + v.seqs.length + " witness events)";
    b.dataset.invariant = v.invariant;
    b.onclick = function () { showViolation(k); };
    if (!firsts[v.invariant] || D.violations.length <= 20) $("violations").appendChild(b);
    firsts[v.invariant] = true;
  });
  $("legend").innerHTML = CLASSES.map(function (c) {
    return "<span><i style=\"background:" + c.color + "\"></i>" + esc(c.name) + "</span>";
  }).join("") + "<span><i style=\"background:#d62728\"></i>\u2605 violation witness</span>" +
    "<span><i style=\"background:rgba(158,158,158,.5)\"></i>node down</span>" +
    "<span><i style=\"background:#6a3d9a\"></i>- - message held by the network</span>";

  window.addEventListener("resize", function () { resize(); draw(); });
  refilter();

  // for tests and the curious: state, and where an event is on the screen
  window.epochsimTimeline = {
    ready: true,
    readyMs: performance.now(),
    events: N,
    state: function () {
      var first = Math.floor(listEl.scrollTop / ROW_H), rows = Math.floor(listEl.clientHeight / ROW_H);
      return {v0: S.v0, v1: S.v1, lanes: S.visible.map(function (k) { return D.nodes[k]; }),
              shown: S.list.length, violation: S.violation, selected: S.selected >= 0 ? E[S.selected].seq : null,
              tip: tip.hidden ? "" : tip.textContent, messagesDrawn: S.messagesDrawn,
              listSeqsInView: S.list.slice(first, first + rows).map(function (i) { return E[i].seq; }),
              listNodes: Object.keys(S.list.reduce(function (m, i) { m[E[i].node] = 1; return m; }, {}))};
    },
    eventPoint: function (seq) {  // viewport coordinates of an event's tick, or null
      var i = seqIndex[seq], row = S.visible.indexOf(LANE[i]);
      if (i === undefined || row < 0 || T[i] < S.v0 || T[i] > S.v1) return null;
      var r = canvas.getBoundingClientRect();
      return {x: r.left + X(T[i]) + 1, y: r.top + laneY(row) + LANE_H / 2};
    },
    setView: setView
  };
})();
