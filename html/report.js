/* SPDX-License-Identifier: MIT */
/* report.js - draws cygprof's HTML report from the JSON block #data
 * (cli/cmd-html.c): plain DOM, no library, no network. */
'use strict';
(function () {
  var D = JSON.parse(document.getElementById('data').textContent);
  var app = document.getElementById('app');
  var SHOWN = 5000; /* rows drawn per table */

  /* A name from the program as one line, escaped as the text outputs do
   * (common/textesc.h): \n \t \r \\, \xHH for the other controls, C1
   * controls as their two UTF-8 bytes; bytes that were not UTF-8 arrive as
   * U+FFFD (the JSON). */
  function vis(s) {
    return String(s).replace(/[\\\x00-\x1f\x7f-\x9f]/g, function (c) {
      var k = c.charCodeAt(0), h = function (x) { return (x < 16 ? '0' : '') + x.toString(16); };
      if (c === '\\') return '\\\\';
      if (c === '\n') return '\\n';
      if (c === '\t') return '\\t';
      if (c === '\r') return '\\r';
      return k >= 0x80 ? '\\xc2\\x' + h(k) : '\\x' + h(k);
    });
  }
  function esc(s) {
    return vis(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;');
  }
  function ns(v) {
    if (v < 1e3) return v + ' ns';
    if (v < 1e6) return (v / 1e3).toFixed(3) + ' us';
    if (v < 1e9) return (v / 1e6).toFixed(3) + ' ms';
    return (v / 1e9).toFixed(3) + ' s';
  }
  function bytes(v) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, a = Math.abs(v);
    while (a >= 1024 && i < u.length - 1) { a /= 1024; i++; }
    return (v < 0 ? '-' : '') + (i ? a.toFixed(1) : a) + ' ' + u[i];
  }
  function pct(a, b) { return b ? (100 * a / b).toFixed(2) + '%' : '-'; }
  function unit(u) { return u === 'bytes' ? bytes : u === 'ns' ? ns : String; }
  function add(html) { var d = document.createElement('div'); d.innerHTML = html; app.appendChild(d); return d; }
  function $(id) { return document.getElementById(id); }

  /* A sortable table: cols [{t: title, f: format, n: numeric}], rows of
   * values (row.key is the function a click picks). */
  function Table(id, cols, rows, sortCol, onPick) {
    this.id = id; this.cols = cols; this.rows = rows; this.sc = sortCol; this.desc = true;
    this.onPick = onPick; this.chosen = null;
  }
  Table.prototype.html = function () {
    return '<div class="scroll"><table id="' + this.id + '"></table></div><div class="note" id="' +
      this.id + '-note"></div>';
  };
  Table.prototype.draw = function () {
    var t = $(this.id), self = this, c = this.cols, sc = this.sc, dir = this.desc ? -1 : 1;
    if (!t) return;
    this.rows.sort(function (a, b) {
      var x = a[sc], y = b[sc];
      if (x < y) return -dir;
      if (x > y) return dir;
      return 0;
    });
    var h = ['<thead><tr>'];
    c.forEach(function (col, i) {
      h.push('<th data-col="' + i + '" class="' + (col.n ? 'num ' : '') +
        (i === sc ? (self.desc ? 'sorted-desc' : 'sorted-asc') : '') + '">' + esc(col.t) + '</th>');
    });
    h.push('</tr></thead><tbody>');
    var n = Math.min(this.rows.length, SHOWN);
    for (var r = 0; r < n; r++) {
      var row = this.rows[r];
      h.push('<tr' + (this.onPick ? ' class="pick' + (row.key === this.chosen ? ' chosen' : '') +
        '" data-row="' + r + '"' : '') + '>');
      for (var i = 0; i < c.length; i++)
        h.push('<td class="' + (c[i].n ? 'num" data-v="' + row[i] : 'name') + '">' +
          esc(c[i].f ? c[i].f(row[i], row) : row[i]) + '</td>');
      h.push('</tr>');
    }
    h.push('</tbody>');
    t.innerHTML = h.join('');
    $(this.id + '-note').textContent = this.rows.length > n ?
      'showing the first ' + n + ' of ' + this.rows.length + ' rows' : '';
    t.onclick = function (e) {
      var th = e.target.closest('th'), tr = e.target.closest('tr');
      if (th) {
        var k = +th.getAttribute('data-col');
        self.desc = k === self.sc ? !self.desc : !!c[k].n;
        self.sc = k;
        self.draw();
      } else if (tr && self.onPick && tr.hasAttribute('data-row')) {
        self.onPick(self.rows[+tr.getAttribute('data-row')].key);
      }
    };
  };

  /* ---- navigation and info --------------------------------------------------- */
  var M = D.meta || {}, P = D.samples, MEM = D.memory, CNT = D.counters;
  var nav = ['<h1>cygprof report: ' + esc(M.command || D.file) + '</h1><nav>',
    '<a href="#s-info">info</a><a href="#s-flame">flame graph</a>'];
  if (MEM) nav.push('<a href="#s-memflame">allocations</a>');
  nav.push('<a href="#s-flat">flat profile</a><a href="#s-graph">call graph</a>');
  if (MEM) nav.push('<a href="#s-memory">memory</a>');
  if (CNT && CNT.length) nav.push('<a href="#s-counters">counters</a>');
  if (P) nav.push('<a href="#s-samples">samples</a>');
  nav.push('</nav>');
  app.innerHTML = nav.join('');

  function infoSection() {
    var h = ['<h2 id="s-info">Capture</h2><table id="meta"><tbody>'];
    h.push('<tr><td>file</td><td>' + esc(D.file) + '</td></tr>');
    Object.keys(M).forEach(function (k) {
      var v = k === 'duration_ns' ? ns(+M[k]) : M[k];
      h.push('<tr><td>' + esc(k) + '</td><td>' + esc(v) + '</td></tr>');
    });
    h.push('<tr><td>cygprof</td><td>' + esc(D.version) + '</td></tr></tbody></table>');
    h.push('<h3>Processes</h3><table id="procs"><thead><tr><th>pid</th><th>ppid</th><th>start</th>' +
      '<th>end</th><th>how it ended</th><th>command</th></tr></thead><tbody>');
    D.procs.forEach(function (p) {
      h.push('<tr><td class="num">' + p.pid + '</td><td class="num">' + p.ppid + '</td><td class="num">' +
        ns(p.start_ns) + '</td><td class="num">' + ns(p.end_ns) + '</td><td>' + esc(p.end) +
        '</td><td>' + esc(p.command) + '</td></tr>');
    });
    h.push('</tbody></table><h3>Threads</h3><table id="threads"><thead><tr><th>pid</th><th>tid</th>' +
      '<th>name</th><th>calls</th><th>start</th><th>end</th><th>lost events</th></tr></thead><tbody>');
    D.threads.forEach(function (t) {
      h.push('<tr><td class="num">' + t.pid + '</td><td class="num">' + t.tid + '</td><td>' +
        esc(t.name + t.note) + '</td><td class="num">' + t.calls + '</td><td class="num">' +
        ns(t.start_ns) + '</td><td class="num">' + ns(t.end_ns) + '</td><td class="num">' + t.lost +
        '</td></tr>');
    });
    h.push('</tbody></table><h3>Limits</h3><table id="limits"><tbody>');
    var L = D.limits || {};
    Object.keys(L).forEach(function (k) {
      h.push('<tr><td>' + esc(k) + '</td><td>' + esc(L[k] === null ? '-' : L[k]) + '</td></tr>');
    });
    h.push('</tbody></table>');
    if (L.complete === false)
      h.push('<p class="note">The recording was interrupted: the figures are partial.</p>');
    add(h.join(''));
  }

  /* ---- flame graphs ------------------------------------------------------------ */
  /* tree: {name[], value[] (inclusive), self[], count[], parent[]}; node 0 the root. */
  function Flame(id, tree, fmt, countName) {
    var n = tree.name.length, kids = [], depth = new Array(n), i;
    for (i = 0; i < n; i++) kids.push([]);
    depth[0] = 0;
    for (i = 1; i < n; i++) { kids[tree.parent[i]].push(i); depth[i] = depth[tree.parent[i]] + 1; }
    kids.forEach(function (k) { k.sort(function (a, b) { return tree.value[b] - tree.value[a]; }); });
    this.id = id; this.t = tree; this.kids = kids; this.depth = depth; this.fmt = fmt;
    this.countName = countName; this.zoom = 0; this.re = null;
  }
  Flame.prototype.html = function () {
    return '<div class="tools">search: <input id="' + this.id + '-search" placeholder="regular expression">' +
      ' <span id="' + this.id + '-match"></span> <button id="' + this.id + '-reset">reset zoom</button>' +
      ' <span class="note">click a frame to zoom</span></div><div class="flame" id="' + this.id + '"></div>';
  };
  Flame.prototype.bind = function () {
    var self = this;
    $(this.id + '-search').oninput = function () { self.search(this.value); };
    $(this.id + '-reset').onclick = function () { self.zoom = 0; self.draw(); };
    $(this.id).onclick = function (e) {
      var k = e.target.getAttribute('data-n');
      if (k !== null) { self.zoom = +k; self.draw(); }
    };
    this.draw();
  };
  Flame.prototype.search = function (text) {
    var re = null;
    if (text) {
      try { re = new RegExp(text); } catch (e) { re = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')); }
    }
    this.re = re;
    this.draw();
    var t = this.t, m = 0;
    if (re) { /* the matched nodes without a matched ancestor */
      var stack = [[0, false]];
      while (stack.length) {
        var top = stack.pop(), k = top[0], hit = top[1];
        if (!hit && k && re.test(t.name[k])) { m += t.value[k]; hit = true; }
        if (!hit) this.kids[k].forEach(function (c) { stack.push([c, false]); });
      }
    }
    $(this.id + '-match').textContent = re ? 'matched: ' + pct(m, t.value[0]) : '';
  };
  Flame.prototype.draw = function () {
    var box = $(this.id), t = this.t, W = box.clientWidth || 1000, self = this, h = [], maxd = 0;
    var z = this.zoom, zv = t.value[z] || 1, re = this.re;
    function label(k) {
      return t.name[k] + ': ' + self.fmt(t.value[k]) + ' (' + pct(t.value[k], t.value[0]) + '), self ' +
        self.fmt(t.self[k]) + (t.count ? ', ' + t.count[k] + ' ' + self.countName : '');
    }
    function rect(k, x, w, d, cls) {
      if (d > maxd) maxd = d;
      h.push('<div data-n="' + k + '" class="' + cls + (re && k && re.test(t.name[k]) ? ' match' : '') +
        (t.name[k] === '(other)' ? ' other' : '') + '" title="' + esc(label(k)) + '" style="left:' +
        x.toFixed(1) + 'px;width:' + w.toFixed(1) + 'px;top:' + d * 16 + 'px;background:' +
        color(t.name[k]) + '">' + (w > 30 ? esc(t.name[k]) : '') + '</div>');
    }
    for (var a = t.parent[z], anc = []; z && a >= 0; a = t.parent[a]) anc.push(a);
    anc.reverse().forEach(function (k) { rect(k, 0, W, self.depth[k], 'anc'); });
    var stack = [[z, 0]];
    while (stack.length) {
      var top = stack.pop(), k = top[0], x = top[1], w = W * t.value[k] / zv;
      rect(k, x, w, this.depth[k], '');
      var cx = x;
      this.kids[k].forEach(function (c) {
        var cw = W * t.value[c] / zv;
        if (cw >= 1) stack.push([c, cx]);
        cx += cw;
      });
      var sw = W * t.self[k] / zv;
      if (sw >= 1 && this.kids[k].length) {
        if (this.depth[k] + 1 > maxd) maxd = this.depth[k] + 1;
        h.push('<div class="self" title="self ' + esc(this.fmt(t.self[k])) + ' of ' + esc(t.name[k]) +
          '" style="left:' + cx.toFixed(1) + 'px;width:' + sw.toFixed(1) + 'px;top:' +
          (this.depth[k] + 1) * 16 + 'px">' + (sw > 30 ? 'self' : '') + '</div>');
      }
    }
    box.style.height = (maxd + 1) * 16 + 'px';
    box.innerHTML = h.join('');
  };
  var colors = new Map();
  function color(name) {
    var c = colors.get(name);
    if (c === undefined) colors.set(name, c = hue(name));
    return c;
  }
  function hue(name) {
    var hsh = 0;
    for (var i = 0; i < name.length; i++) hsh = (hsh * 31 + name.charCodeAt(i)) | 0;
    return 'hsl(' + (10 + Math.abs(hsh) % 45) + ',80%,' + (58 + Math.abs(hsh >> 8) % 14) + '%)';
  }

  function timeFlame() {
    var T = D.tree, F = D.fns, n = T.fn.length, byCalls = !T.total[0];
    var tree = { name: [], value: [], self: [], count: T.calls, parent: T.parent };
    for (var i = 0; i < n; i++) {
      tree.name.push(i === 0 ? 'all' : T.fn[i] < 0 ? '(other)' : F[T.fn[i]][0]);
      tree.value.push(byCalls ? 0 : T.total[i]);
      tree.self.push(byCalls ? 0 : T.self[i]);
    }
    if (byCalls) { /* no times recorded: widths are calls */
      for (i = n - 1; i > 0; i--) { tree.value[i] += T.calls[i]; tree.self[i] += T.calls[i]; }
      for (i = n - 1; i > 0; i--) { tree.value[T.parent[i]] += tree.value[i]; }
    }
    var f = new Flame('flame', tree, byCalls ? String : ns, 'calls');
    var note = 'All threads\' call paths merged; widths are ' + (byCalls ? 'calls (no times recorded)' :
      M.time === 'sampled' ? 'inclusive sampled time (perf samples on CPU plus off-CPU intervals)' : 'inclusive time') + ', the grey blocks self time. ' + T.paths + ' call paths';
    if (T.merged) note += '; ' + T.merged + ' paths under ' + (T.cut * 100) + '% of the time are merged into "(other)"';
    add('<h2 id="s-flame">Flame graph of time</h2><p class="note" id="flame-note">' + esc(note) + '.</p>' + f.html());
    f.bind();
    /* report.html#search=RE opens with the search done */
    var m = /^#search=(.*)$/.exec(location.hash);
    if (m) {
      $('flame-search').value = decodeURIComponent(m[1]);
      f.search($('flame-search').value);
    }
  }

  function memFlame() {
    var tree = { name: ['all'], value: [0], self: [0], count: [0], parent: [-1] }, index = new Map();
    var nf = MEM.fns.length + 1;
    function child(p, fn) { /* fn -1: "(other)" */
      var key = p * nf + fn + 1, k = index.get(key);
      if (k === undefined) {
        k = tree.name.length;
        index.set(key, k);
        tree.name.push(fn < 0 ? '(other)' : MEM.fns[fn][0]);
        tree.value.push(0); tree.self.push(0); tree.count.push(0); tree.parent.push(p);
      }
      return k;
    }
    MEM.stacks.forEach(function (s) {
      var k = 0, fr = s[4];
      tree.value[0] += s[0]; tree.count[0] += s[1];
      for (var i = 0; i < fr.length; i++) {
        k = child(k, fr[i]);
        tree.value[k] += s[0]; tree.count[k] += s[1];
      }
      tree.self[k] += s[0];
    });
    if (MEM.other[0]) {
      var k = child(0, -1);
      tree.value[k] += MEM.other[0]; tree.self[k] += MEM.other[0]; tree.value[0] += MEM.other[0];
    }
    var f = new Flame('memflame', tree, bytes, 'allocations');
    add('<h2 id="s-memflame">Flame graph of allocations</h2><p class="note">Allocated bytes per allocation stack, ' +
      MEM.nstacks + ' stacks' + (MEM.other[0] ? ' (the heaviest ' + MEM.stacks.length + ' shown, the rest in "(other)")' : '') +
      '.</p>' + f.html());
    f.bind();
  }

  /* ---- flat profile and call graph ---------------------------------------------- */
  var total = D.total_self_ns, F = D.fns, graph;
  /* record --time=sampled: exact calls, no times; with --sample the times
   * are the samples' (profile_load()) */
  var sampledTimes = M.time === 'sampled' && !!P && total > 0;
  var noTimes = M.time === 'sampled' && !sampledTimes;
  var tns = noTimes ? function () { return '-'; } : ns;
  function flatSection() {
    var cols = [{ t: 'function' }, { t: 'calls', n: 1 }, { t: 'self', n: 1, f: tns },
      { t: '% self', n: 1, f: function (v) { return pct(v, total); } }, { t: 'total', n: 1, f: tns },
      { t: 'recursive calls', n: 1 }];
    if (P) cols.push({ t: 'samples', n: 1 }, { t: 'sampled', n: 1, f: ns }, { t: 'off-CPU', n: 1, f: ns });
    var rows = [];
    F.forEach(function (f, i) {
      if (!f[1] && !(P && (f[6] || f[8]))) return;
      var r = [f[0], f[1], f[2], f[2], f[3], f[4]];
      if (P) r.push(f[6], f[7], f[8]);
      r.key = i;
      rows.push(r);
    });
    var t = new Table('flat', cols, rows, noTimes ? 1 : 2, function (k) { pickFn(k); location.hash = '#s-graph'; });
    add('<h2 id="s-flat">Flat profile</h2><p class="note">' +
      (sampledTimes ? 'Exact calls and sampled times (perf samples on CPU plus off-CPU intervals)' : 'Exact calls and times') +
      ' of every function, merged by ' +
      'name over threads and processes' + (P ? ', with the perf samples charged to each' : '') +
      '. Click a heading to sort, a row for its callers and callees.</p>' + t.html());
    t.draw();
  }
  function graphSection() {
    var names = F.map(function (f, i) { return [f[0], i]; }).filter(function (x) { return F[x[1]][1]; });
    names.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
    var opts = names.map(function (x) { return '<option value="' + x[1] + '">' + esc(x[0]) + '</option>'; });
    var cols = function (who) {
      return [{ t: who }, { t: 'calls', n: 1 }, { t: 'self', n: 1, f: tns }, { t: 'children', n: 1, f: tns }];
    };
    var cr = new Table('callers', cols('caller'), [], 1, pickFn);
    var ce = new Table('callees', cols('callee'), [], 1, pickFn);
    add('<h2 id="s-graph">Call graph</h2><p>function: <select id="graph-fn">' + opts.join('') +
      '</select> <span id="graph-self"></span></p><h3>Callers</h3>' + cr.html() + '<h3>Callees</h3>' + ce.html());
    graph = { cr: cr, ce: ce };
    $('graph-fn').onchange = function () { pickFn(+this.value); };
    var top = F.map(function (f, i) { return i; }).filter(function (i) { return F[i][1]; })
      .sort(function (a, b) { return F[b][3] - F[a][3]; });
    if (top.length) pickFn(top[0]);
  }
  function pickFn(k) {
    if (k < 0) return; /* <spontaneous> */
    var cr = [], ce = [];
    D.arcs.forEach(function (a) {
      if (a[1] === k) { var r = [F[a[0]][0], a[2], a[3], a[4]]; r.key = a[0]; cr.push(r); }
      if (a[0] === k) { var s = [F[a[1]][0], a[2], a[3], a[4]]; s.key = a[1]; ce.push(s); }
    });
    if (F[k][5]) { var r = ['<spontaneous>', F[k][5], 0, 0]; r.key = -1; cr.push(r); }
    graph.cr.rows = cr; graph.ce.rows = ce;
    graph.cr.draw(); graph.ce.draw();
    $('graph-fn').value = String(k);
    $('graph-self').textContent = vis(F[k][0]) + ': ' + F[k][1] + ' calls, self ' + tns(F[k][2]) + ', total ' + tns(F[k][3]);
  }

  /* ---- memory ---------------------------------------------------------------------- */
  var mem;
  function memorySection() {
    var cols = [{ t: 'function' }, { t: 'self allocated', n: 1, f: bytes }, { t: 'self allocations', n: 1 },
      { t: 'total allocated', n: 1, f: bytes }, { t: 'total allocations', n: 1 },
      { t: 'self leaked', n: 1, f: bytes }, { t: 'total leaked', n: 1, f: bytes },
      { t: 'self temporary', n: 1 }];
    var rows = MEM.fns.map(function (f, i) {
      var r = [f[0], f[2], f[1], f[4], f[3], f[5], f[6], f[7]]; r.key = i; return r;
    });
    var rcols = function (who) {
      return [{ t: who }, { t: 'allocated', n: 1, f: bytes }, { t: 'allocations', n: 1 },
        { t: 'leaked', n: 1, f: bytes }, { t: 'stacks', n: 1 }];
    };
    mem = { t: new Table('memfns', cols, rows, 3, memPick), cr: new Table('memcallers', rcols('caller'), [], 1, memPick),
      ce: new Table('memcallees', rcols('callee'), [], 1, memPick) };
    add('<h2 id="s-memory">Memory</h2><p>' + MEM.allocations + ' allocations, ' + bytes(MEM.allocated_bytes) +
      ' allocated; peak ' + bytes(MEM.peak_bytes) + ' live at ' + ns(MEM.peak_ns) + '; ' + MEM.leaked_allocations +
      ' blocks (' + bytes(MEM.leaked_bytes) + ') never freed; ' + MEM.temporary + ' temporary allocations.</p>' +
      '<p class="note">Self: the stacks whose innermost frame is the function; total: the stacks through it. ' +
      'Click a row for its callers and callees.</p>' + mem.t.html() +
      '<p id="mem-fn"></p><h3>Callers</h3>' + mem.cr.html() + '<h3>Callees</h3>' + mem.ce.html());
    mem.t.draw();
    if (rows.length) memPick(rows[0].key);
  }
  function memPick(k) {
    if (k < 0) return;
    var cr = {}, ce = {};
    function bump(map, fn, s) {
      var r = map[fn] || (map[fn] = [fn < 0 ? '(allocation site)' : MEM.fns[fn][0], 0, 0, 0, 0]);
      r.key = fn; r[1] += s[0]; r[2] += s[1]; r[3] += s[2]; r[4]++;
    }
    MEM.stacks.forEach(function (s) {
      var fr = s[4], seenR = {}, seenE = {};
      for (var i = 0; i < fr.length; i++) {
        if (fr[i] !== k || (i > 0 && fr[i - 1] === k)) continue;
        var j = i;
        while (j + 1 < fr.length && fr[j + 1] === k) j++;
        var caller = i > 0 ? fr[i - 1] : null, callee = j + 1 < fr.length ? fr[j + 1] : -1;
        if (caller !== null && !seenR[caller]) { seenR[caller] = 1; bump(cr, caller, s); }
        if (!seenE[callee]) { seenE[callee] = 1; bump(ce, callee, s); }
      }
    });
    mem.cr.rows = Object.keys(cr).map(function (x) { return cr[x]; });
    mem.ce.rows = Object.keys(ce).map(function (x) { return ce[x]; });
    mem.t.chosen = k;
    mem.t.draw(); mem.cr.draw(); mem.ce.draw();
    $('mem-fn').textContent = 'function: ' + vis(MEM.fns[k][0]);
  }

  /* ---- counters -------------------------------------------------------------------- */
  function countersSection() {
    var h = ['<h2 id="s-counters">Counters and live heap over time</h2><p class="note">Each point the largest ' +
      'value of its interval; time from the capture start.</p>'], pid = null, dur = D.duration_ns || 1;
    var W = 420, H = 110;
    CNT.forEach(function (s) {
      if (s.pid !== pid) { pid = s.pid; h.push('<h3>' + (pid ? 'process ' + pid : 'system') + '</h3>'); }
      var lo = 0, hi = 0, f = unit(s.unit), pts = [];
      s.v.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
      var span = hi - lo || 1, tmax = Math.max(dur, s.t.length ? s.t[s.t.length - 1] : 0);
      for (var i = 0; i < s.t.length; i++)
        pts.push((40 + (W - 50) * s.t[i] / tmax).toFixed(1) + ',' + (H - 15 - (H - 30) * (s.v[i] - lo) / span).toFixed(1));
      h.push('<div class="chart" data-counter="' + esc(s.name) + '" data-pid="' + s.pid + '" data-max="' + hi +
        '"><svg width="' + W + '" height="' + H +
        '" viewBox="0 0 ' + W + ' ' + H + '"><text x="4" y="11">' + esc(s.name) + ' (max ' + esc(f(hi)) +
        ')</text><text x="4" y="' + (H - 3) + '">0</text><text x="' + (W - 60) + '" y="' + (H - 3) + '">' +
        esc(ns(tmax)) + '</text><polyline points="' + pts.join(' ') + '"/></svg></div>');
    });
    add(h.join(''));
  }

  /* ---- samples --------------------------------------------------------------------- */
  function samplesSection() {
    var cols = [{ t: 'function' }, { t: 'object' }, { t: 'called from' }, { t: 'samples', n: 1 },
      { t: 'sampled', n: 1, f: ns }, { t: 'off-CPU', n: 1, f: ns }];
    var rows = P.leaves.map(function (l) {
      return [l[0] + (l[3] ? ' (kernel)' : ''), l[1].replace(/.*\//, ''), l[2] < 0 ? '-' : F[l[2]][0], l[4], l[5], l[6]];
    });
    var t = new Table('leaves', cols, rows, 3, null);
    add('<h2 id="s-samples">Samples</h2><p>' + P.samples + ' samples, ' + ns(P.sampled_ns) + ' on CPU; ' +
      P.offcpu_n + ' off-CPU intervals, ' + ns(P.offcpu_ns) + ' off CPU' + (P.imported ? ' (imported from perf)' : '') +
      '.</p><p>Profiler overhead: ' + (P.overhead ? P.overhead.samples : 0) + ' samples (' +
      (P.samples && P.overhead ? (100 * P.overhead.samples / P.samples).toFixed(2) : '0.00') +
      '%) in cygprof\'s runtime, charged to no function. The flat profile shows each function\'s samples beside its exact counts.</p>' +
      '<h3>Uninstrumented functions found by samples</h3>' + t.html());
    t.draw();
  }

  infoSection();
  timeFlame();
  if (MEM) memFlame();
  flatSection();
  graphSection();
  if (MEM) memorySection();
  if (CNT && CNT.length) countersSection();
  if (P) samplesSection();
  /* report.html#selftest clicks through the controls once (the tests):
   * every heading twice, the first rows, the flame frames, the searches */
  if (location.hash === '#selftest') {
    var acts = 0;
    var click = function (e) { if (e) { e.dispatchEvent(new MouseEvent('click', { bubbles: true })); acts++; } };
    ['flat', 'callers', 'callees', 'memfns', 'memcallers', 'memcallees', 'leaves'].forEach(function (id) {
      for (var i = 0; $(id) && i < $(id).querySelectorAll('th').length; i++) {
        click($(id).querySelectorAll('th')[i]);
        click($(id).querySelectorAll('th')[i]);
      }
      for (i = 0; $(id) && i < 3; i++) click($(id).querySelectorAll('tbody tr')[i]);
    });
    ['flame', 'memflame'].forEach(function (id) {
      if (!$(id)) return;
      click($(id).querySelectorAll('div[data-n]')[2]);
      click($(id).querySelectorAll('div[data-n]')[0]);
      click($(id + '-reset'));
      $(id + '-search').value = 'a|(';
      $(id + '-search').dispatchEvent(new Event('input'));
      $(id + '-search').value = 'main';
      $(id + '-search').dispatchEvent(new Event('input'));
      acts += 2;
    });
    document.body.setAttribute('data-selftest', String(acts));
  }
  document.body.setAttribute('data-rendered', '1');
  /* milliseconds from the start of the navigation to the drawn page */
  document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));
})();
