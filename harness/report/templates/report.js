(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("kp-data").textContent);
  var S = D.strings;
  var SVG = "http://www.w3.org/2000/svg";
  var table = document.getElementById("matrix");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var colHeads = Array.prototype.slice.call(table.tHead.rows[1].cells);
  var groupHeads = Array.prototype.slice.call(table.tHead.rows[0].querySelectorAll("th.grp"));
  var ncols = colHeads.length;
  var current = null;   // the open cell's button in the matrix
  var currentN = -1;    // the open cell
  var opener = null;    // what opened it: focus goes back there after Esc
  var groupIndex = null, groupOn = null;  // the group filter: its cells as {n: true}
  var listMode = false;
  var SEVERITIES = ["high", "medium", "low", "info"];
  var LEDGER = {"effect-duplicated": 1, "effect-repeated": 1, "idempotency-key-changed": 1};
  var rowCells = rows.map(function (tr) {
    return Array.prototype.map.call(tr.querySelectorAll("button[data-c]"), function (b) { return +b.dataset.c; });
  });
  var listTable = document.getElementById("list");
  var listBody = listTable ? listTable.tBodies[0] : null;
  var listRows = listBody ? Array.prototype.slice.call(listBody.rows) : [];

  function $(id) { return document.getElementById(id); }
  function str(i) { return i === null || i === undefined ? "" : S[i]; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function known(verdict) { return Object.prototype.hasOwnProperty.call(D.verdicts, verdict) ? verdict : "unknown"; }
  // One time format everywhere (killpoint.values.durations): "54 ms", "1.2 s", "12 min 3 s".
  function duration(t) {
    t = Math.max(+t || 0, 0);
    if (Math.round(t * 1000) < 1000) return Math.round(t * 1000) + " ms";
    if (Math.round(t * 10) / 10 < 60) return (Math.round(t * 10) / 10).toFixed(1) + " s";
    var whole = Math.round(t), minutes = Math.floor(whole / 60);
    if (minutes < 60) return minutes + " min " + (whole % 60) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }
  function count(n, noun) { return n + " " + (n === 1 ? noun : noun + "s"); }
  function offset(t) { return (t < 0 ? "-" : "+") + duration(Math.abs(t)); }
  function has(o, k) { return o !== undefined && o !== null && Object.prototype.hasOwnProperty.call(o, k); }
  function shownNow(e) { return !!e && e.offsetParent !== null; }

  // -- filters ------------------------------------------------------------------------------
  function applyFilters() {
    var only = $("f-unexp").checked;
    var mode = $("f-mode").value, runtime = $("f-runtime").value, store = $("f-store").value;
    var q = $("f-search").value.trim().toLowerCase();
    var used = [], i, shown = 0, unexp = 0;
    for (i = 0; i < ncols; i++) used.push(false);
    function keep(d) {
      return (!mode || d.mode === mode) && (!runtime || d.runtime === runtime) &&
        (!store || d.store === store) && (!q || d.scenario.toLowerCase().indexOf(q) >= 0);
    }
    rows.forEach(function (tr, r) {
      var d = tr.dataset;
      var ok = keep(d) && (!only || +d.unexp > 0) &&
        (!groupOn || rowCells[r].some(function (n) { return groupOn[n]; }));
      tr.hidden = !ok;
      if (!ok) return;
      shown++;
      if (!groupOn) unexp += +d.unexp;
      if (tr.classList.contains("wide")) return;
      for (var j = 0; j < ncols; j++) {
        var td = tr.cells[j + 1], b = td.firstChild;
        var inGroup = !!(groupOn && b && groupOn[+b.dataset.c]);
        td.classList.toggle("ing", inGroup);
        if (inGroup) unexp++;
        if (b && (!only || td.classList.contains("x")) && (!groupOn || inGroup)) used[j] = true;
        if (!b && !only && !groupOn && td.classList.contains("nr")) used[j] = true;  // planned, not run
      }
    });
    var listed = 0;
    listRows.forEach(function (tr) {
      var ok = keep(tr.dataset) && (!groupOn || groupOn[+tr.dataset.n]);
      tr.hidden = !ok;
      if (ok) listed++;
    });
    if (listTable) {
      listTable.hidden = listed === 0;
      $("list-empty").hidden = listed > 0;
    }
    var visible = 0;
    for (i = 0; i < ncols; i++) {
      colHeads[i].hidden = !used[i];
      if (used[i]) visible++;
    }
    rows.forEach(function (tr) {
      if (tr.hidden) return;
      if (tr.classList.contains("wide")) { tr.cells[1].colSpan = Math.max(visible, 1); return; }
      for (var j = 0; j < ncols; j++) tr.cells[j + 1].hidden = !used[j];
    });
    var start = 0;
    groupHeads.forEach(function (th) {
      var span = +th.dataset.span, n = 0;
      for (var j = start; j < start + span; j++) if (used[j]) n++;
      start += span;
      th.hidden = n === 0;
      if (n) th.colSpan = n;
    });
    var before = null;
    rows.forEach(function (tr) {
      if (tr.hidden) return;
      var key = tr.dataset.runtime + "\n" + tr.dataset.scenario;
      tr.classList.toggle("ss", key !== before);
      before = key;
    });
    table.classList.toggle("only-x", only);
    table.classList.toggle("grp-on", !!groupOn);
    $("f-count").textContent = shown + " of " + count(rows.length, "row") +
      (groupOn ? ", " + count(unexp, "cell") + " of the group" :
        only ? "" : ", " + unexp + " unexpected cell" + (unexp === 1 ? "" : "s")) +
      (visible < ncols ? ", " + visible + " of " + count(ncols, "column") : "");
    $("empty").hidden = shown > 0;
  }
  ["f-unexp", "f-mode", "f-runtime", "f-store", "f-search"].forEach(function (id) {
    $(id).addEventListener(id === "f-search" ? "input" : "change", applyFilters);
  });

  // -- timeline -----------------------------------------------------------------------------
  // Events are [t, text, kind, lane] (harness/values/timeline.py): a lane is one of the shared
  // ones below or a worker's own, named after it; "\u0001" keeps the two apart here.
  var SHARED = ["tools", "store", "faults", "harness"];
  function laneOf(lane) {
    lane = String(lane || "harness");
    return SHARED.indexOf(lane) >= 0 ? lane : "\u0001" + lane;
  }

  function marker(kind, x, y) {
    var g = sv("g", {"class": "mk k-" + kind, transform: "translate(" + x.toFixed(1) + "," + y + ")"});
    if (kind === "kill") {
      g.appendChild(sv("path", {d: "M-4,-4L4,4M4,-4L-4,4"}));
    } else if (kind === "store") {
      g.appendChild(sv("path", {d: "M0,-5L5,0L0,5L-5,0Z"}));
    } else if (kind === "start") {
      g.appendChild(sv("path", {d: "M-3,-5L4,0L-3,5Z"}));
    } else if (kind === "end") {
      g.appendChild(sv("rect", {x: -4, y: -4, width: 8, height: 8}));
    } else if (kind === "fault" || kind === "pause" || kind === "wake") {
      g.appendChild(sv("path", {d: "M0,-5L5,4L-5,4Z"}));
    } else {
      g.appendChild(sv("circle", {r: kind === "tool" ? 3 : 3.5}));
    }
    return g;
  }

  function drawTimeline(c) {
    var svg = $("d-svg"), list = $("d-events");
    clear(svg); clear(list);
    // [milliseconds on the cell's clock, text, kind (an index into D.kinds), lane]
    var events = c.timeline.map(function (e, i) {
      return {i: i, t: e[0] / 1000, text: str(e[1]), kind: String(D.kinds[e[2]] || "other"), lane: laneOf(str(e[3]))};
    });
    $("d-timeline").hidden = events.length === 0;
    $("d-no-timeline").hidden = events.length > 0;
    if (!events.length) return;
    var used = [];
    events.forEach(function (e) { if (e.lane.charAt(0) === "\u0001" && used.indexOf(e.lane) < 0) used.push(e.lane); });
    ["tools", "store", "faults", "harness"].forEach(function (lane) {
      if (events.some(function (e) { return e.lane === lane; })) used.push(lane);
    });
    var W = 560, L = 70, R = 14, TOP = 6, LANE = 19, H = TOP + used.length * LANE + 24;
    // One clock: zero is the cell's start; what a row's traced worker did before it is
    // drawn left of zero, never on a clock of its own.
    var tmax = Math.max.apply(null, events.map(function (e) { return e.t; }));
    var tmin = Math.min(0, Math.min.apply(null, events.map(function (e) { return e.t; })));
    if (!(tmax > tmin)) tmax = tmin + 1;
    function X(t) { return L + (W - L - R) * ((t - tmin) / (tmax - tmin)); }
    function Y(lane) { return TOP + used.indexOf(lane) * LANE + LANE / 2; }
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("height", H);
    used.forEach(function (lane, n) {
      if (n % 2 === 0) svg.appendChild(sv("rect", {"class": "lane", x: L, y: TOP + n * LANE, width: W - L - R, height: LANE}));
      var label = sv("text", {"class": "lane-label", x: L - 8, y: Y(lane) + 4, "text-anchor": "end"});
      label.textContent = lane.replace("\u0001", "");
      svg.appendChild(label);
    });
    // process lifetimes: from its start to its kill, end or fault; pauses drawn over them
    var open = {}, paused = {}, pauses = [];
    function bar(cls, lane, from, to) {
      return sv("rect", {"class": cls, x: X(from), y: Y(lane) - 3, width: Math.max(X(to) - X(from), 2), height: 6, rx: 3});
    }
    events.forEach(function (e) {
      if (e.lane.charAt(0) !== "\u0001") return;
      if (e.kind === "start") { open[e.lane] = e.t; return; }
      if (e.kind === "pause") { paused[e.lane] = e.t; return; }
      if (e.kind === "wake") {
        if (paused[e.lane] !== undefined) pauses.push(bar("life paused", e.lane, paused[e.lane], e.t));
        delete paused[e.lane];
        return;
      }
      if (open[e.lane] !== undefined && ["kill", "end", "fault"].indexOf(e.kind) >= 0) {
        svg.appendChild(bar("life" + (e.kind === "kill" ? " killed" : ""), e.lane, open[e.lane], e.t));
        delete open[e.lane];
      }
    });
    Object.keys(open).forEach(function (lane) { svg.appendChild(bar("life open", lane, open[lane], tmax)); });
    Object.keys(paused).forEach(function (lane) { pauses.push(bar("life paused", lane, paused[lane], tmax)); });
    pauses.forEach(function (p) { svg.appendChild(p); });
    var axisY = TOP + used.length * LANE + 4;
    svg.appendChild(sv("line", {"class": "axis", x1: L, x2: W - R, y1: axisY, y2: axisY}));
    [0, 0.5, 1].forEach(function (f) {
      var x = L + (W - L - R) * f;
      svg.appendChild(sv("line", {"class": "axis", x1: x, x2: x, y1: axisY, y2: axisY + 4}));
      var t = sv("text", {"class": "tick", x: x, y: axisY + 15, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle"});
      t.textContent = offset(tmin + (tmax - tmin) * f);
      svg.appendChild(t);
    });
    var marks = events.map(function (e) {
      var g = marker(e.kind, X(e.t), Y(e.lane));
      var title = sv("title", {});
      title.textContent = offset(e.t) + "  " + e.text;
      g.appendChild(title);
      svg.appendChild(g);
      return g;
    });
    events.forEach(function (e, n) {
      var tr = el("tr", "k-" + e.kind);
      tr.appendChild(el("td", "t", offset(e.t)));
      var k = el("td", "dot");
      var s = document.createElementNS(SVG, "svg");
      s.setAttribute("viewBox", "-6 -6 12 12"); s.setAttribute("width", "12"); s.setAttribute("height", "12");
      s.appendChild(marker(e.kind, 0, 0));
      k.appendChild(s);
      tr.appendChild(k);
      tr.appendChild(el("td", "ev", e.text));
      tr.addEventListener("mouseenter", function () { marks[n].classList.add("hot"); });
      tr.addEventListener("mouseleave", function () { marks[n].classList.remove("hot"); });
      list.appendChild(tr);
      if (c.omitted && n === Math.floor(events.length / 2) - 1) {
        var gap = el("tr", "gap");
        var td = el("td", "", "… " + count(c.omitted, "event") + " left out (the JSON has them all)");
        td.colSpan = 3;
        gap.appendChild(td);
        list.appendChild(gap);
      }
    });
  }

  // -- the detail panel ---------------------------------------------------------------------
  function fill(id, text, empty) {
    var node = $(id);
    node.textContent = text || empty || "";
    node.classList.toggle("none", !text);
  }

  function openCell(n, from) {
    var c = D.cells[n];
    if (!c) return;
    currentN = n;
    var v = known(c.verdict);
    var low = !!c.low;
    var chip = $("d-verdict");
    chip.className = "chip v-" + v + (c.expected ? " e" : " x");
    chip.textContent = (D.verdicts[v] || "•") + " " + c.verdict;
    var exp = $("d-expected");
    exp.className = "chip " + (c.expected ? "exp" : c.accepted ? "acc" : low ? "lowc" : "unexp");
    exp.textContent = c.expected ? "expected" : c.accepted ? "accepted" : low ? "unexpected, low severity only: not failing" : "unexpected";
    $("d-title").textContent = c.schedule.join(" + ");
    // A cell that made no crash is named by its row; its id (links, replay) stays as it is.
    $("d-id").textContent = str(has(c, "shown") ? c.shown : c.id);
    $("d-detail").textContent = str(c.detail);
    $("d-detail").hidden = !str(c.detail);
    var dups = c.duplicates || 0, bound = c.bound || 0;
    $("d-dups").textContent = dups + " (bound " + bound + (dups > bound ? ", " + (dups - bound) + " beyond it" : "") + ")";
    $("d-dups").classList.toggle("bad", dups > bound);
    $("d-seconds").textContent = duration(c.seconds);
    $("d-exits").textContent = c.exit_codes.length ? c.exit_codes.map(function (x) { return x === null ? "none" : x; }).join(", ") : "none";
    $("d-kept-row").hidden = !has(c, "kept");
    $("d-kept").textContent = str(c.kept);

    var sched = $("d-schedule");
    clear(sched);
    c.schedule.forEach(function (p, i) {
      var li = el("li");
      li.appendChild(el("code", "", p));
      var says = str(c.says[i]);
      if (says) li.appendChild(el("span", "says", " — " + says));
      sched.appendChild(li);
    });
    // The sides each finding compared, each pair once: never only the cell's last
    // comparison beside a verdict another comparison decided.
    $("d-compared").textContent = c.compared.length
      ? "Sides compared: " + c.compared.map(function (p) {
          return "\u201c" + p[0] + "\u201d (what should be) with \u201c" + p[1] + "\u201d (what is), for " + p[2].join(", ");
        }).join("; ") + "."
      : "No finding compared two sides.";

    drawTimeline(c);

    var fl = $("d-findings"), ledger = $("d-ledger"), repeats = 0;
    clear(fl);
    clear(ledger);
    c.findings.forEach(function (f) {
      var sev = SEVERITIES.indexOf(f.s) >= 0 ? f.s : "unknown";
      var li = el("li", "finding sev-" + sev + (f.x ? " allowed" : "") + (has(f, "a") ? " acc" : ""));
      var head = el("div", "f-head");
      head.appendChild(el("code", "f-kind", f.k));
      head.appendChild(el("span", "sev sev-" + sev, f.s));
      if (f.x) head.appendChild(el("span", "muted", "allowed here"));
      if (has(f, "a")) head.appendChild(el("span", "chip acc", "accepted"));
      li.appendChild(head);
      li.appendChild(el("div", "f-sentence", str(f.t)));
      var where = str(f.p) + (has(f, "tool") ? "  (tool " + str(f.tool) + ")" : "");
      if (where) li.appendChild(el("div", "f-where mono", where));
      if (has(f, "a")) li.appendChild(el("div", "f-accepted", "Accepted: " + str(f.a)));
      if (has(f, "ev") || has(f, "ex") || has(f, "ac")) {
        var box = el("details", "f-evidence");
        box.appendChild(el("summary", "", "evidence"));
        if (has(f, "ex") || has(f, "ac")) {
          var two = el("div", "sides");
          var named = f.sd || c.sides;
          [[named[0], "ex", "b"], [named[1], "ac", "a"]].forEach(function (side) {
            var d = el("div", side[2]);
            d.appendChild(el("h4", "", side[0]));
            d.appendChild(el("pre", "box", has(f, side[1]) ? str(f[side[1]]) : "—"));
            two.appendChild(d);
          });
          box.appendChild(two);
        }
        if (has(f, "ev")) box.appendChild(el("pre", "box ev", str(f.ev)));
        li.appendChild(box);
      }
      fl.appendChild(li);
      if (LEDGER[f.k] && has(f, "ev")) {
        repeats++;
        var part = el("div", "ledger-part" + (f.x ? " allowed" : ""));
        part.appendChild(el("p", "", str(f.t)));
        part.appendChild(el("pre", "box", str(f.ev)));
        ledger.appendChild(part);
      }
    });
    $("d-no-findings").hidden = c.findings.length > 0;
    $("d-findings-more").hidden = !c.findings_more;
    $("d-findings-more").textContent = c.findings_more ? "… and " + c.findings_more + " more (the JSON has them all)" : "";
    $("d-ledger-box").hidden = repeats === 0;

    var whole = $("d-whole-table").tBodies[0], leaves = c.whole || [], more = c.whole_more || 0;
    clear(whole);
    $("d-whole").hidden = leaves.length === 0;
    $("d-whole").open = false;
    $("d-whole-title").textContent = "The whole-session difference (" + c.sides[0] + " with " + c.sides[1] + "): " + (leaves.length + more) + " place" + (leaves.length + more === 1 ? "" : "s");
    $("d-whole-b").textContent = c.sides[0];
    $("d-whole-a").textContent = c.sides[1];
    leaves.forEach(function (w) {
      var tr = el("tr");
      tr.appendChild(el("td", "mono", str(w[0])));
      tr.appendChild(el("td", "mono", str(w[1])));
      tr.appendChild(el("td", "mono", str(w[2])));
      whole.appendChild(tr);
    });
    $("d-whole-more").hidden = !more;
    $("d-whole-more").textContent = more ? "… and " + more + " more (the JSON has them all)" : "";
    var diffSides = (c.diff && c.diff.sides) || c.sides;
    $("d-side-b").textContent = diffSides[0];
    $("d-side-a").textContent = diffSides[1];
    $("d-diff").hidden = !c.diff;
    $("d-no-diff").hidden = !!c.diff;
    if (c.diff) {
      $("d-path").textContent = str(c.diff.path);
      $("d-base").textContent = str(c.diff.baseline);
      $("d-actual").textContent = str(c.diff.actual);
    } else {
      $("d-no-diff").textContent = v === "ok" ? "None: nothing was found beyond what the mode allows." : "The finding that set the verdict has no values to set side by side; its sentence says what it found.";
    }

    var st = $("d-store");
    clear(st);
    if (!c.store) {
      st.appendChild(el("p", "none", "Not recorded for this cell."));
    } else {
      st.appendChild(el("p", "", c.store.checkpoints + " checkpoint" + (c.store.checkpoints === 1 ? "" : "s") + " in the store; " +
        c.store.runs.length + " run" + (c.store.runs.length === 1 ? "" : "s") + "."));
      if (c.store.runs.length) {
        var keys = [];
        c.store.runs.forEach(function (r) { Object.keys(r).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var t = el("table", "grid"), head = el("tr");
        keys.forEach(function (k) { head.appendChild(el("th", "", k.replace(/_/g, " "))); });
        t.appendChild(el("thead")).appendChild(head);
        var tb = el("tbody");
        c.store.runs.forEach(function (r) {
          var tr = el("tr");
          keys.forEach(function (k) { tr.appendChild(el("td", "", r[k] === undefined ? "" : r[k])); });
          tb.appendChild(tr);
        });
        t.appendChild(tb);
        st.appendChild(t);
      }
      if (c.store.cut) {
        var model = str(c.store.cut.model) || "synced";
        st.appendChild(el("p", "", model === "synced"
          ? "The power cut left each file as of its last sync: " + c.store.cut.synced +
            " bytes kept, " + c.store.cut.lost + " lost."
          : "The power cut (" + model + ") left each file as of its last sync, plus the " +
            "unsynced operations the model kept: " + c.store.cut.synced + " bytes in the image, " +
            c.store.cut.lost + " lost."));
        if ((c.store.cut.landed || []).length) {
          var ul = el("ul");
          c.store.cut.landed.forEach(function (i) { ul.appendChild(el("li", "", str(i))); });
          st.appendChild(ul);
        }
        var ct = el("table", "grid"), ch = el("tr");
        ["file", "entry", "synced bytes", "lost bytes", "live bytes", "syncs", "torn bytes"].forEach(function (k) { ch.appendChild(el("th", "", k)); });
        ct.appendChild(el("thead")).appendChild(ch);
        var cb = el("tbody");
        c.store.cut.files.forEach(function (f) {
          var tr = el("tr");
          tr.appendChild(el("td", "", str(f[0])));
          f.slice(1).forEach(function (v) { tr.appendChild(el("td", "", v === null ? "" : v)); });
          cb.appendChild(tr);
        });
        ct.appendChild(cb);
        st.appendChild(ct);
      }
    }

    fill("d-stderr", str(c.stderr), "(empty)");
    $("d-stderr-note").hidden = !c.stderr_full;
    $("d-stderr-note").textContent = c.stderr_full ? "The last " + str(c.stderr).length + " of " + c.stderr_full + " characters; the JSON has all of it." : "";
    $("d-replay").textContent = str(c.replay);
    $("d-copy").textContent = "Copy";

    if (current) current.classList.remove("sel");
    current = body.querySelector('button[data-c="' + n + '"]');
    if (current) current.classList.add("sel");
    listRows.forEach(function (tr) { tr.classList.toggle("sel", +tr.dataset.n === n); });
    opener = from || (shownNow(current) ? current : listButton(n)) || current;
    if (window.history && history.replaceState) {
      try { history.replaceState(null, "", "#" + encodeURIComponent(str(c.id))); } catch (e) { /* file: may refuse */ }
    }
    var panel = $("detail");
    panel.hidden = false;
    panel.scrollTop = 0;
    document.body.classList.add("open");
    // The panel takes its column beside the matrix: keep the cell in sight.
    if (opener && opener.scrollIntoView) opener.scrollIntoView({block: "nearest", inline: "nearest"});
    $("d-close").focus({preventScroll: true});
  }

  function listButton(n) {
    return listBody ? listBody.querySelector('button[data-c="' + n + '"]') : null;
  }

  function closeCell() {
    $("detail").hidden = true;
    if (window.history && history.replaceState) {
      try { history.replaceState(null, "", location.pathname + location.search); } catch (e) { /* file: may refuse */ }
    }
    document.body.classList.remove("open");
    if (current) current.classList.remove("sel");
    var back = shownNow(opener) ? opener : shownNow(current) ? current : listButton(currentN);
    if (back) back.focus({preventScroll: true});
  }

  // -- next and previous cell ---------------------------------------------------------------
  function navigable() {
    if (listMode) {
      return listRows.filter(function (tr) { return !tr.hidden; }).map(function (tr) { return tr.querySelector("button[data-c]"); });
    }
    var only = $("f-unexp").checked, out = [];
    rows.forEach(function (tr) {
      if (tr.hidden || tr.classList.contains("wide")) return;
      for (var j = 0; j < ncols; j++) {
        var td = tr.cells[j + 1], b = td.firstChild;
        if (!b || td.hidden || (only && !td.classList.contains("x")) || (groupOn && !td.classList.contains("ing"))) continue;
        out.push(b);
      }
    });
    return out;
  }

  function step(by) {
    var list = navigable();
    if (!list.length) return;
    var at = -1;
    var focused = document.activeElement;
    for (var i = 0; i < list.length; i++) {
      if ((currentN >= 0 && !$("detail").hidden) ? +list[i].dataset.c === currentN : list[i] === focused) { at = i; break; }
    }
    var next = at < 0 ? (by > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, at + by));
    if (!$("detail").hidden) openCell(+list[next].dataset.c, list[next]);
    else { list[next].focus(); list[next].scrollIntoView({block: "nearest", inline: "nearest"}); }
  }

  // -- group filter, views, sorting ---------------------------------------------------------
  function setGroup(g) {
    groupIndex = g === null || g === groupIndex ? null : g;
    groupOn = null;
    if (groupIndex !== null) {
      groupOn = {};
      (D.groups[groupIndex] || []).forEach(function (n) { groupOn[n] = true; });
    }
    Array.prototype.forEach.call(document.querySelectorAll("button.g-filter"), function (b) {
      b.setAttribute("aria-pressed", String(+b.dataset.g === groupIndex));
    });
    Array.prototype.forEach.call(document.querySelectorAll("li.group"), function (li) {
      li.classList.toggle("on", +li.dataset.g === groupIndex);
    });
    $("f-group-on").hidden = groupIndex === null;
    var key = groupIndex === null ? null : document.querySelector('li.group[data-g="' + groupIndex + '"] .g-key code');
    $("f-group").textContent = key ? key.textContent : "";
    applyFilters();
  }

  function setView(list) {
    listMode = list;
    $("matrix-wrap").hidden = list;
    $("list-wrap").hidden = !list;
    $("v-matrix").setAttribute("aria-pressed", String(!list));
    $("v-list").setAttribute("aria-pressed", String(list));
  }

  var sortKey = "rank", sortDir = 1;
  function sortList(key) {
    if (!listBody) return;
    sortDir = key === sortKey ? -sortDir : 1;
    sortKey = key;
    var keyed = listRows.map(function (tr, i) {
      var d = tr.dataset;
      return {tr: tr, i: i, rank: +d.rank, v: key === "rank" ? +d.rank : String(d[key] || "").toLowerCase()};
    });
    keyed.sort(function (a, b) {
      if (a.v < b.v) return -sortDir;
      if (a.v > b.v) return sortDir;
      return (a.rank - b.rank) || (a.i - b.i);
    });
    keyed.forEach(function (k) { listBody.appendChild(k.tr); });
    Array.prototype.forEach.call(listTable.tHead.rows[0].cells, function (th) {
      var b = th.querySelector("button.sort");
      if (b && b.dataset.sort === key) th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    });
    listRows = keyed.map(function (k) { return k.tr; });
  }

  function copy(text, button) {
    function done(ok) {
      button.textContent = ok ? "Copied" : "Select and copy";
      window.setTimeout(function () { button.textContent = "Copy"; }, 1600);
    }
    function fallback() {
      var ta = el("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.style.position = "fixed";
      ta.style.opacity = "0";
      document.body.appendChild(ta);
      ta.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(ta);
      done(ok);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
    } else {
      fallback();
    }
  }

  // One listener for every button that opens a cell, filters by a group, copies or sorts.
  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!t || !t.closest) return;
    var b = t.closest("button[data-c]");
    if (b) { openCell(+b.dataset.c, b); return; }
    var g = t.closest("button.g-filter");
    if (g) { setGroup(+g.dataset.g); return; }
    var cp = t.closest("button[data-copy]");
    if (cp) { copy(cp.previousElementSibling.textContent, cp); return; }
    var so = t.closest("button.sort");
    if (so) sortList(so.dataset.sort);
  });
  $("d-close").addEventListener("click", closeCell);
  $("f-group-clear").addEventListener("click", function () { setGroup(null); });
  $("v-matrix").addEventListener("click", function () { setView(false); });
  $("v-list").addEventListener("click", function () { setView(true); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") {
      if (!$("detail").hidden) { ev.preventDefault(); closeCell(); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    var onCell = t && t.matches && (t.matches("button[data-c]") || t === $("d-close"));
    if (ev.key === "j" || (onCell && ev.key === "ArrowRight")) { ev.preventDefault(); step(1); }
    else if (ev.key === "k" || (onCell && ev.key === "ArrowLeft")) { ev.preventDefault(); step(-1); }
  });
  $("d-copy").addEventListener("click", function () { copy($("d-replay").textContent, $("d-copy")); });
  $("copy-command").addEventListener("click", function () { copy($("command").textContent, $("copy-command")); });

  applyFilters();
  // A link to one cell: report.html#<cell id>
  if (location.hash.length > 1) {
    var wanted;
    try { wanted = decodeURIComponent(location.hash.slice(1)); } catch (e) { wanted = ""; }
    for (var n = 0; n < D.cells.length; n++) if (str(D.cells[n].id) === wanted) { openCell(n); break; }
  }
  document.documentElement.classList.add("js");
  window.killpointReport = {open: openCell, close: closeCell, filter: applyFilters, group: setGroup, list: setView, sort: sortList, duration: duration, cells: D.cells.length, ready: performance.now()};
})();
