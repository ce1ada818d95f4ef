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
        h.push('<td class="' + (c[i].n ? 'num" data-v="' + row[i] : 'name" title="' + esc(row[i])) + '">' +
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

  /* ---- the page's frame: header, summary, views, details ---------------------- */
  var M = D.meta || {}, P = D.samples, MEM = D.memory, CNT = D.counters, TLD = D.timeline;
  var F = D.fns, total = D.total_self_ns;
  /* record --time=sampled: exact calls, no times; with --sample the times
   * are the samples' (profile_load()) */
  var sampledTimes = M.time === 'sampled' && total > 0 && (!!P || /CPU samples/.test(M.times_note || ''));
  var noTimes = M.time === 'sampled' && !sampledTimes;
  var tns = noTimes ? function () { return '-'; } : ns;
  /* a duration for people: three significant digits */
  function hns(v) {
    v = +v;
    if (v < 1e3) return v + ' ns';
    var u = v < 1e6 ? [1e3, 'us'] : v < 1e9 ? [1e6, 'ms'] : v < 6e10 ? [1e9, 's'] : [6e10, 'min'];
    var x = v / u[0];
    return (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0)) + ' ' + u[1];
  }
  function num(v) { return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  /* "1 call", "40 calls" */
  function count(n, word) { return num(n) + ' ' + word + (n === 1 ? '' : 's'); }
  /* the views above the fold: [id, title]; the keys 1.. pick them */
  var VIEWS = [['flame', 'Flame graph'], ['sandwich', 'Sandwich']];
  if (TLD) VIEWS.push(['timeline', 'Timeline']);
  if (MEM) VIEWS.push(['memflame', 'Memory']);
  if (CNT && CNT.length) VIEWS.push(['counters', 'Counters']);
  var nav = ['<header><h1>' + esc(M.command || D.file) + '</h1><div id="tabs">'];
  VIEWS.forEach(function (v, i) {
    nav.push('<button class="tab" data-view="' + v[0] + '" title="key ' + (i + 1) + '">' + esc(v[1]) + '</button>');
  });
  nav.push('</div><nav><a href="#s-flat">flat profile</a><a href="#s-graph">call graph</a>');
  if (MEM) nav.push('<a href="#s-memory">memory tables</a>');
  if (P) nav.push('<a href="#s-samples">samples</a>');
  nav.push('<a href="#s-info">capture</a><button id="help-btn" title="keyboard shortcuts (?)">?</button></nav></header>');
  nav.push('<div id="help" hidden><b>Keyboard</b><table><tbody>' +
    '<tr><td>/</td><td>search the current view (a regular expression)</td></tr>' +
    '<tr><td>Enter</td><td>in the search: open the sandwich of the heaviest match</td></tr>' +
    '<tr><td>Esc</td><td>clear the search, reset the zoom, close this help</td></tr>' +
    '<tr><td>1 to ' + VIEWS.length + '</td><td>' + VIEWS.map(function (v) { return esc(v[1]); }).join(', ') + '</td></tr>' +
    '<tr><td>&larr; &rarr;</td><td>the previous or next view</td></tr>' +
    '<tr><td>s</td><td>the sandwich of the selected function (click a frame or a row to select)</td></tr>' +
    '<tr><td>i</td><td>flame graphs: inverted (bottom-up) or top-down</td></tr>' +
    '<tr><td>l</td><td>flame graphs: left-heavy (heaviest first) or by name</td></tr>' +
    '<tr><td>x</td><td>flame graphs: collapse or expand the single-child chains</td></tr>' +
    '<tr><td>c</td><td>flame graphs: colour by object, by self share, by name</td></tr>' +
    (TLD ? '<tr><td>w s, + -</td><td>timeline: zoom in, out (or the mouse wheel)</td></tr>' +
      '<tr><td>a d</td><td>timeline: pan left, right (or drag)</td></tr>' +
      '<tr><td>0</td><td>timeline: the whole recording</td></tr>' : '') +
    '<tr><td>?</td><td>show or hide this help</td></tr></tbody></table></div>');
  app.innerHTML = nav.join('');

  /* Labels for the capture's metadata and limits: what the page shows
   * instead of the internal keys. */
  var LABELS = {
    command: 'Command', start_time: 'Started', duration_ns: 'Duration', mode: 'Recorded',
    clock: 'Clock', time: 'Times', filters: 'Filters', drop_mode: 'When the ring is full',
    hostname: 'Host', kernel: 'Kernel', machine: 'Machine', tsc_hz: 'TSC frequency',
    instruments: 'Instruments', sample_event: 'Sample event', sample_hz: 'Sample rate (Hz)',
    sample_lost: 'Lost samples', complete: 'Complete', in_progress: 'Still being written',
    lost: 'Lost timeline events', overflow: 'Calls past the depth limit',
    sig_lost: 'Lost events (signal handlers)', mem_lost: 'Lost memory events',
    unpaired: 'Exits without an entry', shm_full: 'Ring full stalls (allocations refused)',
    damaged: 'Damaged', ended: 'Ended early', checkpoint_ns: 'Last checkpoint'
  };
  function label(k) {
    if (LABELS[k]) return LABELS[k];
    var t = k.replace(/_ns$/, '').replace(/_/g, ' ');
    return t.charAt(0).toUpperCase() + t.slice(1);
  }
  function metaValue(k, v) {
    if (v === null || v === undefined) return '-';
    if (v === true) return 'yes';
    if (v === false) return 'no';
    if (/_ns$/.test(k)) return hns(+v);
    return v;
  }

  function summarySection() {
    var calls = 0, h = [], holds = [], L = D.limits || {};
    D.threads.forEach(function (t) { calls += t.calls; });
    holds.push('<span class="chip">' + count(calls, 'call') + '</span>');
    if (TLD) holds.push('<span class="chip">timeline</span>');
    if (MEM) holds.push('<span class="chip">memory: ' + count(MEM.allocations, 'allocation') + ', ' + bytes(MEM.allocated_bytes) + '</span>');
    if (P) holds.push('<span class="chip">samples: ' + num(P.samples) + '</span>');
    if (CNT && CNT.length) holds.push('<span class="chip">counters: ' + CNT.length + '</span>');
    var warn = [];
    ['lost', 'sig_lost', 'mem_lost', 'overflow', 'shm_full'].forEach(function (k) {
      if (L[k]) warn.push(label(k) + ': ' + num(L[k]));
    });
    if (L.complete === false) warn.push('the recording was interrupted: the figures are partial');
    var procs = D.procs.length;
    h.push('<section id="summary"><div class="facts"><table><tbody>' +
      '<tr><td>Command</td><td id="sum-command">' + esc(M.command || D.file) + '</td></tr>' +
      '<tr><td>Duration</td><td id="sum-duration">' + hns(D.duration_ns) + ' <span class="note" title="cygprof\'s start and the program\'s loading included">wall clock, ' +
      'the whole recording</span></td></tr>' +
      '<tr><td>Threads</td><td id="sum-threads">' + D.threads.length + (procs > 1 ? ' in ' + procs + ' processes' : '') + '</td></tr>' +
      '<tr><td>Holds</td><td id="sum-holds">' + holds.join(' ') + '</td></tr>' +
      (MEM ? '<tr><td>Memory</td><td id="sum-memory">peak ' + bytes(MEM.peak_bytes) + ' at ' + hns(MEM.peak_ns) + '; ' +
        bytes(MEM.leaked_bytes) + ' leaked in ' + count(MEM.leaked_allocations, 'block') + '</td></tr>' : '') +
      (warn.length ? '<tr><td>Limits hit</td><td class="warn">' + esc(warn.join('; ')) + '</td></tr>' : '') +
      '</tbody></table></div>' + timeBox() + '<div class="top"><table id="top5"><thead><tr><th>Top functions by self time</th>' +
      '<th class="num">self</th><th class="num">%</th><th class="num">calls</th></tr></thead><tbody>');
    var top = F.map(function (f, i) { return i; }).filter(function (i) { return F[i][1] || F[i][2]; });
    top.sort(function (a, b) { return noTimes ? F[b][1] - F[a][1] : F[b][2] - F[a][2]; });
    top.slice(0, 5).forEach(function (i) {
      h.push('<tr class="pick" data-fn="' + i + '"><td class="name" title="' + esc(F[i][0]) + '">' + esc(F[i][0]) + '</td><td class="num">' +
        tns(F[i][2]) + '</td><td class="num">' + (noTimes ? '-' : pct(F[i][2], total)) + '</td><td class="num">' +
        num(F[i][1]) + '</td></tr>');
    });
    h.push('</tbody></table></div></section>');
    add(h.join(''));
    $('top5').onclick = function (e) {
      var tr = e.target.closest('tr[data-fn]');
      if (tr) { select(+tr.getAttribute('data-fn')); openSandwich(); }
    };
  }

  /* Why the duration and the self-time total differ: the threads' wall time
   * split into the time in instrumented functions (what the tables and flame
   * graph share), what the time model took out (waiting for a CPU, the
   * hooks' cost) and the rest, outside instrumented code (D.wall,
   * cli/cmd-html.c's write_wall()). */
  function timeBox() {
    var W = D.wall;
    if (!W || noTimes) return '';
    var th = W.threads_ns || 1, rows = [], fnsWait = W.wait_ns, hooks = W.hooks_ns;
    var rest = W.threads_ns - W.in_fns_ns - fnsWait - hooks;
    function row(id, label, v, note, why, cls) {
      rows.push('<tr id="' + id + '" data-v="' + v + '" title="' + esc(why) + '"><td>' + label + '</td><td class="num">' +
        hns(Math.max(0, v)) + '</td><td class="bar"><i class="' + cls + '" style="width:' +
        Math.max(0, Math.min(100, 100 * v / th)).toFixed(1) + '%"></i></td><td class="note">' + note + '</td></tr>');
    }
    row('wall-threads', W.threads > 1 ? 'Threads\' wall time (' + W.threads + ', summed)' : 'The thread\'s wall time', W.threads_ns,
      'start to end', 'From each thread\'s start to its end' + (W.threads > 1 ? ', summed over the threads' : '') +
      '; the duration above also has cygprof\'s start and the program\'s loading', 'all');
    row('wall-fns', 'in instrumented functions', W.in_fns_ns, 'the total the % divide' +
      (W.switches && W.blocked_ns ? ', ' + hns(W.blocked_ns) + ' blocked' : ''),
      'The sum of every function\'s self time: the total of the tables, the flame graph and every % share' +
      (W.sampled ? ' (sampled)' : '') + (W.switches ? '; blocked time (sleep, I/O, locks) is in it: ' + hns(W.blocked_ns) : ''), 'fns');
    if (W.switches) row('wall-wait', 'waiting for a CPU', fnsWait, 'taken out',
      'Preempted, runnable, while a function ran: not the program\'s work, taken out of the functions\' times', 'out');
    if (hooks) row('wall-hooks', 'the profiler\'s hooks', hooks, num(W.calls) + ' \u00d7 ' + W.hook_pair_ns.toFixed(1) + ' ns, taken out',
      'About the calls times one enter/exit pair of the hooks as calibrated at the start: their cost, taken out of the functions\' times', 'out');
    row('wall-rest', 'outside instrumented functions', rest, 'start-up, exit',
      (rest < 0 ? 'The estimates above overlap. ' : '') + 'Before the first instrumented call (the loader, constructors, ' +
      'uninstrumented code before main) and after the last one returned (exit, destructors)', 'rest');
    return '<div class="time"><table id="sum-time"><thead><tr><th colspan="4">Where the wall time went</th></tr></thead><tbody>' +
      rows.join('') + '</tbody></table></div>';
  }

  function infoSection() {
    var h = ['<h2 id="s-info">Capture</h2><table id="meta"><tbody>'];
    h.push('<tr><td>File</td><td>' + esc(D.file) + '</td></tr>');
    Object.keys(M).forEach(function (k) {
      h.push('<tr><td>' + esc(label(k)) + '</td><td>' + esc(metaValue(k, M[k])) + '</td></tr>');
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
      h.push('<tr><td>' + esc(label(k)) + '</td><td>' + esc(metaValue(k, L[k])) + '</td></tr>');
    });
    h.push('</tbody></table>');
    if (L.complete === false)
      h.push('<p class="note">The recording was interrupted: the figures are partial.</p>');
    add(h.join(''));
  }

  /* ---- flame graphs ------------------------------------------------------------ */
  /* tree: {name[], value[] (inclusive), self[], count[], parent[], fn[] (the
   * function a frame is, or -1)}; node 0 the root.  o.tools: the search and
   * zoom bar; o.pick(fn): a click picks the frame's function (else zoom);
   * o.modes: the layout and colour controls (keys i, l, x, c) acting on
   * o.state, which outlives the Flame (the memory graph makes a new one per
   * kind). */
  function Flame(id, tree, fmt, countName, o) {
    this.id = id; this.base = tree; this.inv = null; this.fmt = fmt;
    this.countName = countName; this.zoom = 0; this.re = null; this.o = o || { tools: true };
    this.st = this.o.state || { inverted: false, heavy: true, chains: !!this.o.modes, colour: 'name' };
    this.open = new Set(); /* the chains expanded one by one (their first node) */
    this.layout();
  }
  /* the tree drawn (top-down or inverted) and its children in the order asked */
  Flame.prototype.layout = function () {
    var tree = this.st.inverted ? (this.inv || (this.inv = invertTree(this.base))) : this.base;
    var n = tree.name.length, kids = [], depth = new Array(n), i, heavy = this.st.heavy;
    for (i = 0; i < n; i++) kids.push([]);
    depth[0] = 0;
    for (i = 1; i < n; i++) { kids[tree.parent[i]].push(i); depth[i] = depth[tree.parent[i]] + 1; }
    /* left-heavy: the heaviest child first; else by name, as flamegraph.pl
     * draws them (the same frames in the same place from one run to the next) */
    kids.forEach(function (k) {
      k.sort(heavy ? function (a, b) { return tree.value[b] - tree.value[a] || a - b; }
        : function (a, b) { return tree.name[a] < tree.name[b] ? -1 : tree.name[a] > tree.name[b] ? 1 : a - b; });
    });
    this.t = tree; this.kids = kids; this.depth = depth;
    if (this.zoom >= n) this.zoom = 0;
    this.maxSelf = 0;
    for (i = 1; i < n; i++) if (tree.self[i] > this.maxSelf) this.maxSelf = tree.self[i];
  };
  /* Bottom-up: each function where time was spent (its self) on the first
   * row, its callers under it, their callers under them; widths self time. */
  function invertTree(T) {
    var t = { name: ['all'], value: [0], self: [0], count: [0], parent: [-1], fn: [-1], inverted: true }, idx = new Map();
    for (var k = 1; k < T.name.length; k++) {
      var v = T.self[k];
      if (!v) continue;
      t.value[0] += v; t.count[0] += T.count ? T.count[k] : 0;
      for (var a = k, cur = 0; a > 0; a = T.parent[a]) {
        var key = cur + '\u0000' + T.name[a], c = idx.get(key);
        if (c === undefined) {
          c = t.name.length; idx.set(key, c);
          t.name.push(T.name[a]); t.fn.push(T.fn[a]); t.value.push(0); t.self.push(0); t.count.push(0); t.parent.push(cur);
        }
        t.value[c] += v; t.count[c] += T.count ? T.count[k] : 0;
        cur = c;
      }
    }
    if (!T.count) t.count = null;
    return t;
  }
  Flame.prototype.html = function () {
    var id = this.id;
    return (this.o.tools ? '<div class="tools">search: <input id="' + id + '-search" placeholder="regular expression (/)">' +
      ' <span id="' + id + '-match"></span> <button id="' + id + '-reset">reset zoom</button>' +
      ' <span class="note">click a frame to zoom and select it; Enter in the search opens the sandwich</span></div>' : '') +
      (this.o.modes ? '<div class="tools modes" id="' + id + '-modes">' +
        '<span class="seg" title="key i"><button data-m="inverted" data-v="0">top-down</button><button data-m="inverted" data-v="1">inverted (bottom-up)</button></span> ' +
        '<span class="seg" title="key l"><button data-m="heavy" data-v="1">left-heavy</button><button data-m="heavy" data-v="0">by name</button></span> ' +
        '<span class="seg" title="key x: single-child chains"><button data-m="chains" data-v="1">chains collapsed</button><button data-m="chains" data-v="0">expanded</button></span> ' +
        '<label title="key c">colour: <select id="' + id + '-colour"><option value="object">by object (library)</option>' +
        '<option value="self">by self share</option><option value="name">by name</option></select></label>' +
        ' <span class="note">keys i, l, x, c</span></div><div class="legend" id="' + id + '-legend"></div>' : '') +
      '<div class="flame" id="' + id + '"></div>';
  };
  /* a mode changed (a button, a key): the layout again, drawn */
  Flame.prototype.set = function (m, v) {
    var st = this.st;
    if (m === 'colour') st.colour = v;
    else if (m === 'cycle') st.colour = COLOURS[(COLOURS.indexOf(st.colour) + 1) % COLOURS.length];
    else {
      st[m] = v === undefined ? !st[m] : !!v;
      if (m === 'chains') this.open.clear();
      if (m === 'inverted') this.zoom = 0;
      this.layout();
    }
    this.draw();
  };
  Flame.prototype.bind = function () {
    var self = this;
    if (this.o.tools) {
      $(this.id + '-search').oninput = function () { self.search(this.value); };
      $(this.id + '-search').onkeydown = function (e) {
        if (e.key === 'Enter' && self.re) {
          var best = -1, bv = -1, t = self.t;
          for (var k = 1; k < t.name.length; k++)
            if (t.fn[k] >= 0 && self.re.test(t.name[k]) && t.value[k] > bv) { bv = t.value[k]; best = t.fn[k]; }
          if (best >= 0 && self.o.enter) self.o.enter(best);
        }
      };
      $(this.id + '-reset').onclick = function () { self.zoom = 0; self.draw(); };
    }
    if (this.o.modes) {
      $(this.id + '-modes').onclick = function (e) {
        var b = e.target.closest('button[data-m]');
        if (b) self.set(b.getAttribute('data-m'), b.getAttribute('data-v') === '1');
      };
      $(this.id + '-colour').onchange = function () { self.set('colour', this.value); };
    }
    $(this.id).onclick = function (e) {
      var ch = e.target.getAttribute('data-chain');
      if (ch !== null) { /* a collapsed chain: show its frames */
        if (ch === 'anc') self.ancOpen = true;
        else (self.chainFrom(+ch) || []).forEach(function (n) { self.open.add(n); });
        self.draw();
        return;
      }
      var k = e.target.getAttribute('data-n');
      if (k === null) return;
      k = +k;
      if (self.o.pick) { if (self.t.fn[k] >= 0) self.o.pick(self.t.fn[k]); return; }
      self.zoom = k; self.ancOpen = false; self.draw();
      if (self.o.select && self.t.fn[k] >= 0) self.o.select(self.t.fn[k]);
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
    if (this.o.tools) $(this.id + '-match').textContent = re ? 'matched: ' + pct(m, t.value[0]) : '';
  };
  /* A frame that only passes its time on: one child has at least 99% of it
   * (so the row below looks the same; its self time and any other callee,
   * often a merged "(other)", are under 1% together).  CHAIN_MIN of them in
   * a row are drawn as one row until expanded. */
  var CHAIN_MIN = 3;
  Flame.prototype.heavyKid = function (k) {
    var c = this.kids[k], t = this.t, b = c[0];
    for (var i = 1; i < c.length; i++) if (t.value[c[i]] > t.value[b]) b = c[i];
    return b;
  };
  Flame.prototype.passes = function (k) {
    return this.kids[k].length > 0 && this.t.value[this.heavyKid(k)] >= 0.99 * this.t.value[k];
  };
  Flame.prototype.chainFrom = function (k) {
    var run = [k], self = this;
    /* inverted: the first row is the functions themselves, never folded */
    /* the root stays a frame of its own (the whole, on hover) */
    if (!k || !this.st.chains || this.open.has(k) || !this.passes(k) || (this.t.inverted && this.depth[k] === 1)) return null;
    while (this.passes(run[run.length - 1]) && this.passes(this.heavyKid(run[run.length - 1])))
      run.push(this.heavyKid(run[run.length - 1]));
    if (run.length < CHAIN_MIN) return null;
    run.hidden = run.some(function (n) { return self.kids[n].length > 1; });
    return run;
  };
  Flame.prototype.draw = function () {
    var box = $(this.id), t = this.t, W = box.clientWidth || 1000, self = this, h = [], maxd = 0;
    var z = this.zoom, zv = t.value[z] || 1, re = this.re, chains = 0;
    function title(k) {
      return t.name[k] + ': ' + self.fmt(t.value[k]) + ' (' + pct(t.value[k], t.value[0]) + '), ' +
        (t.inverted ? 'self time below it' : 'self ' + self.fmt(t.self[k])) +
        (t.count ? ', ' + t.count[k] + ' ' + (t.inverted ? 'calls of the function at the top' : self.countName) : '');
    }
    function rect(k, x, w, d, cls) {
      if (d > maxd) maxd = d;
      h.push('<div data-n="' + k + '" data-p="' + t.parent[k] + '" data-v="' + t.value[k] + '" class="' + cls + (re && k && re.test(t.name[k]) ? ' match' : '') +
        (t.name[k] === '(other)' ? ' other' : '') + '" title="' + esc(title(k)) + '" style="left:' +
        x.toFixed(1) + 'px;width:' + w.toFixed(1) + 'px;top:' + d * 16 + 'px;background:' +
        self.colour(k) + '">' + (w > 30 ? esc(t.name[k]) : '') + '</div>');
    }
    /* a run of frames as one row: its first and last names, how many */
    function chainRow(run, key, x, w, d, cls) {
      var names = run.map(function (k) { return t.name[k]; }), hit = re && names.some(function (s) { return re.test(s); });
      if (d > maxd) maxd = d;
      chains++;
      var label = names[0] + ' \u2192 \u2026 \u2192 ' + names[names.length - 1] + ' (' + names.length + ' frames)';
      h.push('<div data-chain="' + key + '" data-frames="' + names.length + '" class="chain ' + cls + (hit ? ' match' : '') +
        '" title="' + esc(names.length + ' frames, each passing its time on to the next' +
          (run.hidden ? ' (their other callees, under 1% together, are drawn when expanded)' : '') +
          ' (click or x to expand): ' + names.join(' \u2192 ')) +
        '" style="left:' + x.toFixed(1) + 'px;width:' + w.toFixed(1) + 'px;top:' + d * 16 + 'px">' +
        (w > 30 ? esc(label) : '') + '</div>');
    }
    for (var a = t.parent[z], anc = []; z && a >= 0; a = t.parent[a]) anc.push(a);
    anc.reverse();
    var row0 = anc.length;
    if (anc.length >= CHAIN_MIN && this.st.chains && !this.ancOpen) {
      chainRow(anc, 'anc', 0, W, 0, 'anc');
      row0 = 1;
    } else {
      anc.forEach(function (k, i) { rect(k, 0, W, i, 'anc'); });
    }
    var stack = [[z, 0, row0]];
    while (stack.length) {
      var top = stack.pop(), k = top[0], x = top[1], d = top[2], w = W * t.value[k] / zv;
      var run = this.chainFrom(k);
      if (run) {
        chainRow(run, k, x, w, d, '');
        stack.push([this.heavyKid(run[run.length - 1]), x, d + 1]);
        continue;
      }
      rect(k, x, w, d, '');
      var cx = x;
      var pend = [];
      this.kids[k].forEach(function (c) {
        var cw = W * t.value[c] / zv;
        if (cw >= 1) pend.push([c, cx, d + 1]);
        cx += cw;
      });
      for (var i = pend.length; i-- > 0;) stack.push(pend[i]);
      var sw = W * t.self[k] / zv;
      if (sw >= 1 && this.kids[k].length) {
        if (d + 1 > maxd) maxd = d + 1;
        h.push('<div class="self" title="self ' + esc(this.fmt(t.self[k])) + ' of ' + esc(t.name[k]) +
          '" style="left:' + cx.toFixed(1) + 'px;width:' + sw.toFixed(1) + 'px;top:' +
          (d + 1) * 16 + 'px">' + (sw > 30 ? 'self' : '') + '</div>');
      }
    }
    box.style.height = (maxd + 1) * 16 + 'px';
    box.innerHTML = h.join('');
    box.setAttribute('data-chains', String(chains));
    if (this.o.modes) this.showModes();
  };
  /* the controls and the legend say what is shown */
  Flame.prototype.showModes = function () {
    var st = this.st, box = $(this.id), t = this.t;
    box.setAttribute('data-layout', st.inverted ? 'inverted' : 'top-down');
    box.setAttribute('data-order', st.heavy ? 'left-heavy' : 'by-name');
    box.setAttribute('data-collapse', st.chains ? 'collapsed' : 'expanded');
    box.setAttribute('data-colour', st.colour);
    Array.prototype.forEach.call($(this.id + '-modes').querySelectorAll('button[data-m]'), function (b) {
      b.classList.toggle('on', !!st[b.getAttribute('data-m')] === (b.getAttribute('data-v') === '1'));
    });
    $(this.id + '-colour').value = st.colour;
    var h = [];
    if (st.colour === 'object') {
      var seen = {}, other = 0;
      for (var k = 1; k < t.name.length; k++) if (objOf(t.name[k]) >= 0) seen[objOf(t.name[k])] = 1;
      var objs = Object.keys(seen).map(Number).sort(function (a, b) { return objRank[a] - objRank[b]; });
      h.push('Colour by object: ');
      objs.forEach(function (ob, i) {
        if (i < OBJ_COLOURS.length) h.push('<span class="key" data-object="' + esc(D.objects[ob]) + '"><i style="background:' + objColour(ob) + '"></i>' + esc(D.objects[ob]) + '</span>');
        else other++;
      });
      if (other) h.push('<span class="key"><i style="background:#c8c8c8"></i>' + other + ' more objects</span>');
      if (!objs.length) h.push('no object known');
      h.push('<span class="key"><i style="background:#bbb"></i>no function (all, other)</span>');
    } else if (st.colour === 'self') {
      h.push('Colour by self share (what the frame spent itself, of the whole): <span class="key"><i style="background:' + heat(0) + '"></i>0%</span>' +
        '<i class="ramp"></i><span class="key"><i style="background:' + heat(1) + '"></i>' + pct(this.maxSelf, t.value[0]) + ' (the most)</span>');
    } else {
      h.push('Colour by name: a hash of the name (the same function, the same colour everywhere; no other meaning).');
    }
    $(this.id + '-legend').innerHTML = h.join(' ');
    $(this.id + '-legend').setAttribute('data-colour', st.colour);
  };
  var COLOURS = ['object', 'self', 'name'];
  Flame.prototype.colour = function (k) {
    var t = this.t, name = t.name[k];
    if (this.st.colour === 'object') {
      var ob = objOf(name);
      return ob < 0 ? '#bbb' : objColour(ob);
    }
    if (this.st.colour === 'self') return k ? heat(this.maxSelf ? t.self[k] / this.maxSelf : 0) : '#bbb';
    return color(name);
  };
  /* self share 0..1 (of the largest frame's): pale yellow to deep red */
  function heat(f) {
    f = Math.sqrt(Math.max(0, Math.min(1, f)));
    return 'hsl(' + Math.round(52 - 52 * f) + ',90%,' + Math.round(86 - 38 * f) + '%)';
  }
  /* the objects' colours: distinct hues, in the order of D.objects' time */
  var OBJ_COLOURS = ['#f0a050', '#6fa8dc', '#93c47d', '#c27ba0', '#e6c84f', '#76c5c0', '#e06666', '#a08ad8'];
  var objRank = (function () {
    var tot = (D.objects || []).map(function () { return 0; }), fo = D.fn_obj || [];
    F.forEach(function (f, i) { if (fo[i] >= 0) tot[fo[i]] += f[2] || f[1]; });
    var order = tot.map(function (v, i) { return i; }).sort(function (a, b) { return tot[b] - tot[a] || a - b; });
    var r = [];
    order.forEach(function (ob, i) { r[ob] = i; });
    return r;
  })();
  function objColour(ob) { var r = objRank[ob]; return r < OBJ_COLOURS.length ? OBJ_COLOURS[r] : '#c8c8c8'; }
  var objByName = new Map();
  F.forEach(function (f, i) { if (D.fn_obj && D.fn_obj[i] >= 0) objByName.set(f[0], D.fn_obj[i]); });
  function objOf(name) { var o = objByName.get(name); return o === undefined ? -1 : o; }
  /* the default colours: by object when the time is in two objects or more */
  function defaultColour() {
    var seen = {};
    F.forEach(function (f, i) { if (f[1] && D.fn_obj && D.fn_obj[i] >= 0) seen[D.fn_obj[i]] = 1; });
    return Object.keys(seen).length > 1 ? 'object' : 'self';
  }
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
  function view(id, html) { return add('<section class="view" id="v-' + id + '" hidden>' + html + '</section>'); }

  /* the merged call-path tree of D.tree, in the flame graphs' form */
  var T = D.tree, byCalls = !T.total[0], fmtT = byCalls ? String : ns;
  var PT = (function () {
    var n = T.fn.length, tree = { name: [], value: [], self: [], count: T.calls, parent: T.parent, fn: [] };
    for (var i = 0; i < n; i++) {
      tree.name.push(i === 0 ? 'all' : T.fn[i] < 0 ? '(other)' : F[T.fn[i]][0]);
      tree.fn.push(i === 0 ? -1 : T.fn[i]);
      tree.value.push(byCalls ? 0 : T.total[i]);
      tree.self.push(byCalls ? 0 : T.self[i]);
    }
    if (byCalls) { /* no times recorded: widths are calls */
      for (i = n - 1; i > 0; i--) { tree.value[i] += T.calls[i]; tree.self[i] += T.calls[i]; }
      for (i = n - 1; i > 0; i--) { tree.value[T.parent[i]] += tree.value[i]; }
    }
    return tree;
  })();

  /* the selected function (a click on a frame or a row) */
  var selected = -1;
  function select(k) {
    if (k < 0 || !F[k]) return;
    selected = k;
    var e = $('selected');
    if (e) e.innerHTML = 'selected: <b>' + esc(F[k][0]) + '</b>, ' + num(F[k][1]) + ' calls, self ' + esc(tns(F[k][2])) +
      ', total ' + esc(tns(F[k][3])) + ' <button id="sel-sandwich">sandwich (s)</button>';
    if ($('sel-sandwich')) $('sel-sandwich').onclick = function () { openSandwich(); };
  }

  var flame;
  function timeFlame() {
    flame = new Flame('flame', PT, fmtT, 'calls', { tools: true, modes: true, select: select,
      state: { inverted: false, heavy: true, chains: true, colour: defaultColour() },
      enter: function (k) { select(k); openSandwich(); } });
    var note = 'All threads\' call paths merged; widths are ' + (byCalls ? 'calls (no times recorded)' :
      M.time === 'sampled' ? 'inclusive sampled time (perf samples on CPU plus off-CPU intervals)' : 'inclusive time') +
      ', the grey blocks self time (inverted: widths are self time, each function on the first row, its callers below it); ' +
      'a run of ' + CHAIN_MIN + ' or more frames that each only call the next is one row until clicked. ' + T.paths + ' call paths';
    if (T.merged) note += '; ' + T.merged + ' paths under ' + (T.cut * 100) + '% of the time are merged into "(other)"';
    view('flame', '<p class="note" id="flame-note">' + esc(note) + '.</p>' + flame.html() + '<p id="selected" class="sel"></p>');
    flame.bind();
    /* report.html#search=RE opens with the search done */
    var m = /^#search=(.*)$/.exec(location.hash);
    if (m) {
      $('flame-search').value = decodeURIComponent(m[1]);
      flame.search($('flame-search').value);
    }
  }

  /* ---- sandwich: a function's callers and callees merged -------------------------- */
  var sw = null;
  function sandwichView() {
    var names = F.map(function (f, i) { return [f[0], i]; }).filter(function (x) { return F[x[1]][1]; });
    names.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
    var cols = function (who) {
      return [{ t: who }, { t: 'calls', n: 1 }, { t: 'time', n: 1, f: tns }];
    };
    sw = { cr: new Table('sw-callers', cols('caller'), [], 1, function (k) { sandwich(k); }),
      ce: new Table('sw-callees', cols('callee'), [], 1, function (k) { sandwich(k); }) };
    view('sandwich', '<div class="tools">function: <input id="sw-fn" list="sw-names" placeholder="a name (/), Enter">' +
      '<datalist id="sw-names">' + names.map(function (x) { return '<option value="' + esc(x[0]) + '">'; }).join('') +
      '</datalist> <span id="sw-title"></span></div>' +
      '<p class="note">The function\'s callers merged over every call path (down to the threads\' roots) and its callees merged; ' +
      'the tables hold the exact calls of each direct caller and callee. Click a frame or a row to move there.</p>' +
      '<div class="swgrid"><div><h3>Callers</h3>' + sw.cr.html() + '<div class="flame" id="sw-up"></div></div>' +
      '<div><h3>Callees</h3>' + sw.ce.html() + '<div class="flame" id="sw-down"></div></div></div>');
    $('sw-fn').onkeydown = function (e) {
      if (e.key !== 'Enter') return;
      var v = this.value, k = -1;
      for (var i = 0; i < F.length; i++) if (F[i][0] === v && F[i][1]) { k = i; break; }
      if (k < 0) {
        var re;
        try { re = new RegExp(v); } catch (x) { re = null; }
        var bv = -1;
        for (i = 0; re && i < F.length; i++) if (F[i][1] && re.test(F[i][0]) && F[i][3] >= bv) { bv = F[i][3]; k = i; }
      }
      if (k >= 0) { sandwich(k); this.blur(); }
    };
  }
  function sandwich(k) {
    if (k < 0 || !F[k]) return;
    select(k);
    latencyDraw(k);
    sw.fn = k;
    var n = PT.name.length, i, p;
    /* the outermost nodes of k: no ancestor of the same function */
    var outer = [];
    for (i = 1; i < n; i++) {
      if (PT.fn[i] !== k) continue;
      for (p = PT.parent[i]; p > 0 && PT.fn[p] !== k; p = PT.parent[p]);
      if (p <= 0) outer.push(i);
    }
    function mk(rootName) { return { name: [rootName], value: [0], self: [0], count: [0], parent: [-1], fn: [k], idx: new Map() }; }
    function child(t, par, node) {
      var key = par + ':' + PT.name[node], c = t.idx.get(key);
      if (c === undefined) {
        c = t.name.length; t.idx.set(key, c);
        t.name.push(PT.name[node]); t.fn.push(PT.fn[node]); t.value.push(0); t.self.push(0); t.count.push(0); t.parent.push(par);
      }
      return c;
    }
    var up = mk(F[k][0]), down = mk(F[k][0]);
    var kids = [];
    for (i = 0; i < n; i++) kids.push([]);
    for (i = 1; i < n; i++) kids[PT.parent[i]].push(i);
    outer.forEach(function (o) {
      var v = PT.value[o], c = PT.count[o];
      up.value[0] += v; up.count[0] += c;
      var cur = 0;
      for (var a = PT.parent[o]; a > 0; a = PT.parent[a]) {
        cur = child(up, cur, a);
        up.value[cur] += v; up.count[cur] += c;
      }
      up.self[cur] += v; /* called from the thread's root */
      down.value[0] += v; down.count[0] += c; down.self[0] += PT.self[o];
      var st = [[o, 0]];
      while (st.length) {
        var t = st.pop();
        kids[t[0]].forEach(function (ch) {
          var m = child(down, t[1], ch);
          down.value[m] += PT.value[ch]; down.self[m] += PT.self[ch]; down.count[m] += PT.count[ch];
          st.push([ch, m]);
        });
      }
    });
    var fu = new Flame('sw-up', up, fmtT, 'calls', { pick: sandwich });
    var fd = new Flame('sw-down', down, fmtT, 'calls', { pick: sandwich });
    fu.bind(); fd.bind();
    /* the direct callers and callees: exact, from the arcs */
    var cr = [], ce = [];
    D.arcs.forEach(function (a) {
      if (a[1] === k && a[0] !== k) { var r = [F[a[0]][0], a[2], a[3] + a[4]]; r.key = a[0]; cr.push(r); }
      if (a[0] === k && a[1] !== k) { var s = [F[a[1]][0], a[2], a[3] + a[4]]; s.key = a[1]; ce.push(s); }
    });
    if (F[k][5]) { var r = ['<spontaneous>', F[k][5], 0]; r.key = -1; cr.push(r); }
    sw.cr.rows = cr; sw.ce.rows = ce;
    sw.cr.draw(); sw.ce.draw();
    $('sw-fn').value = F[k][0];
    $('sw-title').textContent = vis(F[k][0]) + ': ' + count(F[k][1], 'call') +
      (F[k][4] ? ' (' + num(F[k][4]) + ' recursive)' : '') + ', self ' + tns(F[k][2]) + ', total ' + tns(F[k][3]) +
      (noTimes ? '' : ' (' + pct(F[k][3], PT.value[0]) + ')');
    $('v-sandwich').setAttribute('data-fn', String(k));
  }
  function openSandwich() {
    if (selected < 0) return;
    show('sandwich');
    sandwich(selected);
  }

  /* ---- latency: the distribution of a function's call durations, beside the sandwich */
  /* D.latency.fns[k] = [calls, min, mean, p50, p90, p99, p99.9, max, first, bins]: the
   * hooks' histograms of the function's calls (inclusive time per call), bins of a
   * quarter of a power of two of ns from 2^(first/4) */
  var LAT = D.latency;
  function latencyPanel() {
    var sec = $('v-sandwich');
    if (!sec) return;
    var d = document.createElement('div');
    d.id = 'sw-lat';
    d.className = 'lat';
    d.innerHTML = LAT ? '<h3>Latency</h3><p class="note">No function selected.</p>' :
      '<h3>Latency</h3><p class="note">This capture has no latency data (recorded before cygprof kept ' +
      'latency histograms, or with --time=sampled).</p>';
    sec.appendChild(d);
  }
  function latencyDraw(k) {
    var d = $('sw-lat');
    if (!d || !LAT) return;
    var L = LAT.fns[k];
    if (!L) {
      d.innerHTML = '<h3>Latency</h3><p class="note">' + esc(F[k][0]) + ': no calls with a duration.</p>';
      return;
    }
    var bins = L[9], first = L[8], top = 0, i;
    for (i = 0; i < bins.length; i++) if (bins[i] > top) top = bins[i];
    var W = 100 / Math.max(bins.length, 1), h = [];
    for (i = 0; i < bins.length; i++) {
      var lo = Math.round(Math.pow(2, (first + i) / 4)), hi = Math.round(Math.pow(2, (first + i + 1) / 4));
      var tail = lo >= L[5] ? ' tail' : '';
      h.push('<div class="latbar' + tail + '" style="left:' + (i * W).toFixed(3) + '%;width:' + W.toFixed(3) +
        '%;height:' + (top ? 100 * bins[i] / top : 0).toFixed(1) + '%" title="' + esc(ns(lo) + ' to ' + ns(hi) + ': ' +
        num(Math.round(bins[i])) + ' calls') + '"></div>');
    }
    var st = [['calls', num(L[0])], ['min', ns(L[1])], ['mean', ns(L[2])], ['p50', ns(L[3])], ['p90', ns(L[4])],
      ['p99', ns(L[5])], ['p99.9', ns(L[6])], ['max', ns(L[7])]];
    d.innerHTML = '<h3>Latency of ' + esc(F[k][0]) + '</h3><table class="latst"><tr>' +
      st.map(function (x) { return '<th>' + x[0] + '</th>'; }).join('') + '</tr><tr>' +
      st.map(function (x) { return '<td>' + esc(x[1]) + '</td>'; }).join('') + '</tr></table>' +
      '<div class="lathist">' + h.join('') + '</div><div class="lataxis"><span>' + esc(ns(Math.round(Math.pow(2, first / 4)))) +
      '</span><span>' + esc(ns(Math.round(Math.pow(2, (first + bins.length) / 4)))) + '</span></div>' +
      '<p class="note">Inclusive wall time per call (waiting for a CPU included), log scale (4 bins per power ' +
      'of two); from p99 on in red. From the hooks\' histograms (within 6.25%); min and max exact.</p>';
  }

  /* ---- timeline: the threads' waits for the collector ---------------------------- */
  /* TLD.waits = {thread, start, dur}: where a thread waited for cygprof's collector (its
   * ring was full), drawn over its lane's head in red: that time is in the calls that
   * span it here, not in the hooks' figures */
  var WAIT_NAME = '[cygprof: waiting for the collector]';
  function tlWaits(g, L, top, t0, span, W) {
    var WT = TLD && TLD.waits;
    if (!WT || !WT.start.length) return;
    if (!$('tl-waits') && $('v-timeline')) { /* the legend, once */
      var tot = 0;
      for (var k = 0; k < WT.dur.length; k++) tot += WT.dur[k];
      var p = document.createElement('p');
      p.id = 'tl-waits';
      p.className = 'note';
      p.innerHTML = '<span class="tlwait"></span> ' + esc(WAIT_NAME) + ': ' + num(WT.start.length) +
        ' time' + (WT.start.length === 1 ? '' : 's') + ', ' + esc(hns(tot)) + ' (a full ring); the calls that span ' +
        'it hold that time here, the profile\'s figures do not.';
      $('v-timeline').appendChild(p);
    }
    var h = Math.max(3, Math.round(LANE_HEAD * 0.3));
    for (var i = 0; i < WT.start.length; i++) {
      if (WT.thread[i] !== L.th) continue;
      var s = WT.start[i], e = s + WT.dur[i];
      if (e < t0 || s > t0 + span) continue;
      var x0 = Math.max(0, (s - t0) / span * W), x1 = Math.min(W, (e - t0) / span * W);
      if (x1 - x0 < 1) x1 = x0 + 1;
      g.fillStyle = '#c0392b';
      g.fillRect(x0, top + LANE_HEAD - h, x1 - x0, h);
    }
  }

  /* ---- memory flame graph: allocated, leaked or live at the peak ------------------ */
  var MEMKINDS = [['allocated', 0, 1, 'Allocated bytes'], ['leaked', 2, 3, 'Leaked bytes (never freed)'],
    ['peak', 5, -1, 'Bytes live at the peak']];
  var memKind = 2, memF = null, memState = null;
  function memTree(kind) {
    var K = MEMKINDS[kind], vi = K[1], ci = K[2];
    var tree = { name: ['all'], value: [0], self: [0], count: [0], parent: [-1], fn: [-1] }, index = new Map();
    var nf = MEM.fns.length + 1;
    function child(p, fn) { /* fn -1: "(other)" */
      var key = p * nf + fn + 1, k = index.get(key);
      if (k === undefined) {
        k = tree.name.length;
        index.set(key, k);
        tree.name.push(fn < 0 ? '(other)' : MEM.fns[fn][0]);
        tree.fn.push(-1);
        tree.value.push(0); tree.self.push(0); tree.count.push(0); tree.parent.push(p);
      }
      return k;
    }
    MEM.stacks.forEach(function (s) {
      var k = 0, fr = s[4], v = s[vi] || 0, c = ci < 0 ? 0 : s[ci];
      if (!v) return;
      tree.value[0] += v; tree.count[0] += c;
      for (var i = 0; i < fr.length; i++) {
        k = child(k, fr[i]);
        tree.value[k] += v; tree.count[k] += c;
      }
      tree.self[k] += v;
    });
    var ov = MEM.other[vi === 5 ? 3 : vi === 2 ? 2 : 0];
    if (ov) {
      var k = child(0, -1);
      tree.value[k] += ov; tree.self[k] += ov; tree.value[0] += ov;
    }
    if (ci < 0) tree.count = null;
    return tree;
  }
  function memFlameDraw() {
    var K = MEMKINDS[memKind];
    memState = memState || { inverted: false, heavy: true, chains: true, colour: defaultColour() };
    memF = new Flame('memflame', memTree(memKind), bytes, K[2] === 1 ? 'allocations' : 'blocks', { tools: true, modes: true, state: memState });
    $('memflame-box').innerHTML = memF.html();
    memF.bind();
    $('v-memflame').setAttribute('data-kind', K[0]);
    var tot = [MEM.allocated_bytes, MEM.leaked_bytes, MEM.peak_bytes][memKind];
    $('memflame-total').textContent = K[3] + ': ' + bytes(tot) + ' (' + num(tot) + ' bytes)' +
      (memKind === 2 ? ' at ' + hns(MEM.peak_ns) : '') + '.';
  }
  /* What heaptrack shows first: the peak and the leaks, and who holds them
   * (the allocating functions: self), beside each other above the graph. */
  function memHead() {
    function top5(id, title, col, cnt) {
      var rows = MEM.fns.map(function (f, i) { return [f[col], i]; }).filter(function (r) { return r[0] > 0; })
        .sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; }).slice(0, 5);
      var h = ['<table id="' + id + '" class="top5"><thead><tr><th>' + esc(title) + '</th><th class="num">bytes</th>' +
        (cnt ? '<th class="num">' + esc(cnt[1]) + '</th>' : '') + '</tr></thead><tbody>'];
      rows.forEach(function (r) {
        h.push('<tr><td class="name" title="' + esc(MEM.fns[r[1]][0]) + '">' + esc(MEM.fns[r[1]][0]) + '</td><td class="num" data-v="' + r[0] + '">' +
          bytes(r[0]) + '</td>' + (cnt ? '<td class="num">' + num(MEM.fns[r[1]][cnt[0]]) + '</td>' : '') + '</tr>');
      });
      if (!rows.length) h.push('<tr><td class="note">none</td><td></td></tr>');
      return h.join('') + '</tbody></table>';
    }
    return '<div class="memhead" id="memhead"><p id="mem-peak-leak"><b>Peak:</b> ' + bytes(MEM.peak_bytes) + ' live at ' + hns(MEM.peak_ns) +
      ' &nbsp; <b>Leaked:</b> ' + bytes(MEM.leaked_bytes) + ' in ' + count(MEM.leaked_allocations, 'block') +
      ' &nbsp; <b>Allocated:</b> ' + bytes(MEM.allocated_bytes) + ' in ' + count(MEM.allocations, 'allocation') + '</p>' +
      '<div class="memtops">' + top5('mem-peak5', 'At the peak (allocated by)', 9, null) +
      top5('mem-leak5', 'Leaked (allocated by)', 5, null) + '</div></div>';
  }
  function memFlame() {
    view('memflame', '<div class="tools">show: ' + MEMKINDS.map(function (k, i) {
      return '<label><input type="radio" name="memkind" value="' + i + '"' + (i === memKind ? ' checked' : '') + '> ' + k[0] + '</label>';
    }).join(' ') + ' <span id="memflame-total"></span></div>' + memHead() + '<p class="note">Bytes per allocation stack, ' +
      MEM.nstacks + ' stacks' + (MEM.other[0] ? ' (the heaviest ' + MEM.stacks.length + ' drawn, the rest in "(other)")' : '') +
      '; the figures are those of cygprof memory.</p><div id="memflame-box"></div>');
    Array.prototype.forEach.call(document.querySelectorAll('input[name=memkind]'), function (r) {
      r.onchange = function () { memKind = +this.value; memFlameDraw(); };
    });
    memFlameDraw();
  }

  /* ---- flat profile and call graph ---------------------------------------------- */
  var graph;
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
    var t = new Table('flat', cols, rows, noTimes ? 1 : 2, function (k) { pickFn(k); select(k); openSandwich(); window.scrollTo(0, 0); });
    add('<h2 id="s-flat">Flat profile</h2><p class="note">' +
      (sampledTimes ? 'Exact calls and sampled times' + (P ? ' (perf samples on CPU plus off-CPU intervals)' : '') : 'Exact calls and times') +
      ' of every function, merged by ' +
      'name over threads and processes' + (P ? ', with the perf samples charged to each' : '') +
      '. ' + (M.times_note ? 'Times are ' + esc(M.times_note) + '. ' : '') +
      'Click a heading to sort, a row for its sandwich (and its call graph below).</p>' + t.html());
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

  /* ---- memory tables ---------------------------------------------------------------- */
  var mem;
  function memorySection() {
    var cols = [{ t: 'function' }, { t: 'self allocated', n: 1, f: bytes }, { t: 'self allocations', n: 1 },
      { t: 'total allocated', n: 1, f: bytes }, { t: 'total allocations', n: 1 },
      { t: 'self leaked', n: 1, f: bytes }, { t: 'total leaked', n: 1, f: bytes },
      { t: 'total at peak', n: 1, f: bytes }, { t: 'self temporary', n: 1 }];
    var rows = MEM.fns.map(function (f, i) {
      var r = [f[0], f[2], f[1], f[4], f[3], f[5], f[6], f[10], f[7]]; r.key = i; return r;
    });
    var rcols = function (who) {
      return [{ t: who }, { t: 'allocated', n: 1, f: bytes }, { t: 'allocations', n: 1 },
        { t: 'leaked', n: 1, f: bytes }, { t: 'stacks', n: 1 }];
    };
    mem = { t: new Table('memfns', cols, rows, 3, memPick), cr: new Table('memcallers', rcols('caller'), [], 1, memPick),
      ce: new Table('memcallees', rcols('callee'), [], 1, memPick) };
    add('<h2 id="s-memory">Memory</h2><p>' + count(MEM.allocations, 'allocation') + ', ' + bytes(MEM.allocated_bytes) +
      ' allocated; peak ' + bytes(MEM.peak_bytes) + ' live at ' + hns(MEM.peak_ns) + '; ' + count(MEM.leaked_allocations, 'block') +
      ' (' + bytes(MEM.leaked_bytes) + ') never freed; ' + count(MEM.temporary, 'temporary allocation') + '.</p>' +
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

  /* ---- timeline: per-thread lanes of calls, zoom and pan ---------------------------- */
  var tl = null;
  function timelineView() {
    var n = TLD.start.length, lanes = [], i, end = D.duration_ns || 0;
    for (i = 0; i < n; i++) {
      var th = TLD.thread[i], L = lanes.length ? lanes[lanes.length - 1] : null;
      if (!L || L.th !== th) lanes.push(L = { th: th, lo: i, hi: i, maxd: 0 });
      L.hi = i + 1;
      if (TLD.depth[i] > L.maxd) L.maxd = TLD.depth[i];
      if (TLD.start[i] + TLD.dur[i] > end) end = TLD.start[i] + TLD.dur[i];
    }
    tl = { lanes: lanes, t0: 0, t1: end || 1, end: end || 1, rows: 14 };
    /* it opens on the calls: from the first one's start to the last one's end */
    var first = Infinity, last = 0;
    for (i = 0; i < n; i++) {
      if (TLD.start[i] < first) first = TLD.start[i];
      if (TLD.start[i] + TLD.dur[i] > last) last = TLD.start[i] + TLD.dur[i];
    }
    if (n && last > first) {
      var pad = (last - first) / 50;
      tl.t0 = Math.max(0, first - pad); tl.t1 = Math.min(tl.end, last + pad);
    }
    var limited = TLD.kept < TLD.calls;
    view('timeline', '<div class="tools"><button id="tl-in" title="w, +, wheel">zoom in</button> <button id="tl-out" title="s, -">zoom out</button> ' +
      '<button id="tl-left" title="a">&larr;</button> <button id="tl-right" title="d">&rarr;</button> ' +
      '<button id="tl-all" title="0">whole recording</button> <span id="tl-range"></span></div>' +
      '<p class="note" id="tl-note">' + (limited ? 'Limited: the longest ' + num(TLD.kept) + ' of ' + num(TLD.calls) +
        ' calls are shown (every caller of a shown call is shown too). ' : 'All ' + num(TLD.calls) + ' calls of the timeline. ') +
      'One lane per thread, callers above their callees; the mouse wheel zooms, a drag pans, a click selects.</p>' +
      '<div id="tl-box"><canvas id="tl-canvas"></canvas><div id="tl-tip" hidden></div></div>' +
      '<h3>Calls in view</h3><div class="scroll"><table id="tl-fns"></table></div>');
    var cv = $('tl-canvas'), drag = null;
    $('tl-in').onclick = function () { tlZoom(0.5, 0.5); };
    $('tl-out').onclick = function () { tlZoom(2, 0.5); };
    $('tl-left').onclick = function () { tlPan(-0.25); };
    $('tl-right').onclick = function () { tlPan(0.25); };
    $('tl-all').onclick = function () { tl.t0 = 0; tl.t1 = tl.end; tlDraw(); };
    cv.onwheel = function (e) {
      e.preventDefault();
      var r = cv.getBoundingClientRect();
      tlZoom(e.deltaY > 0 ? 1.25 : 0.8, (e.clientX - r.left) / r.width);
    };
    cv.onmousedown = function (e) { drag = { x: e.clientX, t0: tl.t0, t1: tl.t1, moved: false }; };
    window.addEventListener('mouseup', function (e) {
      if (drag && !drag.moved) { var s = tlHit(e); if (s >= 0 && TLD.fn[s] >= 0) select(TLD.fn[s]); }
      drag = null;
    });
    cv.onmousemove = function (e) {
      if (drag) {
        var dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        var dt = -dx / cv.clientWidth * (drag.t1 - drag.t0);
        tlSet(drag.t0 + dt, drag.t1 + dt);
        return;
      }
      var s = tlHit(e), tip = $('tl-tip');
      if (s < 0) { tip.hidden = true; return; }
      tip.hidden = false;
      tip.textContent = (TLD.fn[s] >= 0 ? vis(F[TLD.fn[s]][0]) : '?') + ': ' + hns(TLD.dur[s]) + ' at ' + hns(TLD.start[s]);
      var r = $('tl-box').getBoundingClientRect();
      tip.style.left = Math.min(e.clientX - r.left + 12, r.width - 200) + 'px';
      tip.style.top = (e.clientY - r.top + 12) + 'px';
    };
    cv.onmouseleave = function () { $('tl-tip').hidden = true; };
    tlDraw();
  }
  function tlSet(a, b) {
    var w = b - a;
    if (w < 100) { var m = (a + b) / 2; a = m - 50; b = m + 50; w = 100; } /* 100 ns across at most */
    if (w > tl.end) { a = 0; b = tl.end; }
    if (a < 0) { b -= a; a = 0; }
    if (b > tl.end) { a -= b - tl.end; b = tl.end; }
    tl.t0 = Math.max(0, a); tl.t1 = b;
    tlDraw();
  }
  function tlZoom(f, at) {
    var w = tl.t1 - tl.t0, c = tl.t0 + at * w;
    tlSet(c - at * w * f, c + (1 - at) * w * f);
  }
  function tlPan(f) { var w = tl.t1 - tl.t0; tlSet(tl.t0 + f * w, tl.t1 + f * w); }
  var LANE_HEAD = 18, AXIS = 18;
  /* the slice under the mouse, or -1 */
  function tlHit(e) {
    var cv = $('tl-canvas'), r = cv.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    var t = tl.t0 + x / r.width * (tl.t1 - tl.t0), top = AXIS;
    for (var l = 0; l < tl.lanes.length; l++) {
      var L = tl.lanes[l], h = LANE_HEAD + (L.maxd + 1) * tl.rows;
      if (y >= top + LANE_HEAD && y < top + h) {
        var d = Math.floor((y - top - LANE_HEAD) / tl.rows);
        for (var i = L.lo; i < L.hi; i++)
          if (TLD.depth[i] === d && TLD.start[i] <= t && TLD.start[i] + TLD.dur[i] >= t) return i;
        return -1;
      }
      top += h;
    }
    return -1;
  }
  function tlDraw() {
    var cv = $('tl-canvas'), W = cv.parentNode.clientWidth || 1000, H = 0, l, i;
    tl.lanes.forEach(function (L) { H += LANE_HEAD + (L.maxd + 1) * tl.rows; });
    H += AXIS;
    cv.width = W; cv.height = H; cv.style.height = H + 'px';
    var g = cv.getContext('2d'), t0 = tl.t0, span = tl.t1 - tl.t0, top = AXIS, per = new Map();
    g.font = '11px monospace'; g.textBaseline = 'middle';
    /* the time axis: about 8 round ticks, time from the capture's start */
    var raw = span / 8, p10 = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p10;
    var step = (m < 2 ? 2 : m < 5 ? 5 : 10) * p10;
    g.strokeStyle = '#ccc'; g.fillStyle = '#555';
    for (var tk = Math.ceil(t0 / step) * step; tk <= t0 + span; tk += step) {
      var tx = (tk - t0) / span * W;
      g.beginPath(); g.moveTo(tx + 0.5, AXIS - 5); g.lineTo(tx + 0.5, H); g.stroke();
      g.fillText(hns(Math.round(tk)), tx + 3, AXIS / 2 - 1);
    }
    for (l = 0; l < tl.lanes.length; l++) {
      var L = tl.lanes[l], th = D.threads[L.th] || {};
      g.fillStyle = '#f0f0f0'; g.fillRect(0, top, W, LANE_HEAD);
      g.fillStyle = '#333';
      g.fillText('thread ' + th.tid + (th.name ? ' ' + th.name : '') + ' (pid ' + th.pid + ')', 4, top + LANE_HEAD / 2);
      var filled = {};
      for (i = L.lo; i < L.hi; i++) {
        var s = TLD.start[i], e = s + TLD.dur[i];
        if (e < t0 || s > t0 + span) continue;
        var fn = TLD.fn[i], a = per.get(fn) || [0, 0];
        a[0]++; a[1] += Math.min(e, t0 + span) - Math.max(s, t0); per.set(fn, a);
        var x0 = (s - t0) / span * W, x1 = (e - t0) / span * W, y = top + LANE_HEAD + TLD.depth[i] * tl.rows;
        if (x0 < 0) x0 = 0;
        if (x1 > W) x1 = W;
        var name = fn >= 0 ? F[fn][0] : '?';
        if (x1 - x0 < 1) { /* one pixel per depth and column */
          var key = TLD.depth[i] * 65536 + Math.floor(x0);
          if (filled[key]) continue;
          filled[key] = 1;
          x1 = x0 + 1;
        }
        g.fillStyle = color(name);
        g.fillRect(x0, y, x1 - x0, tl.rows - 1);
        if (x1 - x0 > 40) {
          g.fillStyle = '#000';
          g.save(); g.beginPath(); g.rect(x0, y, x1 - x0, tl.rows); g.clip();
          g.fillText(vis(name), x0 + 2, y + tl.rows / 2);
          g.restore();
        }
      }
      tlWaits(g, L, top, t0, span, W);
      top += LANE_HEAD + (L.maxd + 1) * tl.rows;
    }
    $('tl-range').textContent = 'from ' + hns(Math.round(t0)) + ' to ' + hns(Math.round(t0 + span)) + ' (' + hns(Math.round(span)) + ')';
    var rows = [];
    per.forEach(function (a, fn) { rows.push([fn, a[0], a[1]]); });
    rows.sort(function (a, b) { return b[2] - a[2]; });
    var h = ['<thead><tr><th>function</th><th class="num">calls</th><th class="num">time in view</th></tr></thead><tbody>'];
    rows.slice(0, 200).forEach(function (r) {
      h.push('<tr class="pick" data-fn="' + r[0] + '"><td class="name">' + esc(r[0] >= 0 ? F[r[0]][0] : '?') +
        '</td><td class="num" data-v="' + r[1] + '">' + num(r[1]) + '</td><td class="num" data-v="' + Math.round(r[2]) + '">' +
        hns(Math.round(r[2])) + '</td></tr>');
    });
    $('tl-fns').innerHTML = h.join('') + '</tbody>';
    $('tl-fns').onclick = function (e) {
      var tr = e.target.closest('tr[data-fn]');
      if (tr && +tr.getAttribute('data-fn') >= 0) { select(+tr.getAttribute('data-fn')); openSandwich(); }
    };
  }

  /* ---- counters: one panel per process and unit, each with its own scale -------------- */
  var SERIES = ['#1565c0', '#c62828', '#2e7d32', '#ef6c00', '#6a1b9a', '#00838f', '#5d4037', '#ad1457'];
  function countersView() {
    var h = ['<p class="note">One panel per process and unit, each with its own scale (a log scale when its series are more ' +
      'than 100 times apart); each point the largest value of its interval; time from the capture start.</p>'];
    var dur = D.duration_ns || 1, W = 600, groups = [], gi = {};
    CNT.forEach(function (s) {
      var key = s.pid + '/' + s.unit;
      if (gi[key] === undefined) { gi[key] = groups.length; groups.push({ pid: s.pid, unit: s.unit, s: [] }); }
      groups[gi[key]].s.push(s);
    });
    groups.forEach(function (gr) {
      var f = unit(gr.unit), hi = 0, small = 0, tmax = dur;
      gr.s.forEach(function (s) {
        var m = 0;
        s.v.forEach(function (v) { if (v > m) m = v; });
        s.max = m;
        if (m > hi) hi = m;
        if (m && (!small || m < small)) small = m;
        if (s.t.length && s.t[s.t.length - 1] > tmax) tmax = s.t[s.t.length - 1];
      });
      /* a log scale's steps: powers of 32 for bytes (1 MiB, 32 MiB, 1 GiB:
       * round in the binary units they are written in), else of 10 */
      var logy = small > 0 && hi / small > 100, lo = 0, step = gr.unit === 'bytes' ? 32 : 10;
      if (logy) {
        var lg = function (v) { return Math.log(v) / Math.log(step); };
        lo = Math.pow(step, Math.floor(lg(small)) - (step === 10 ? 1 : 0));
        hi = Math.pow(step, Math.ceil(lg(hi)));
      }
      if (hi <= lo) hi = lo + 1;
      var X0 = 70, Y0 = 22, PW = W - X0 - 10, PH = 112, H = Y0 + PH + 20 + 14 * Math.ceil(gr.s.length / 2);
      function fy(v) {
        var fr = logy ? (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo);
        return (Y0 + PH - fr * PH).toFixed(1);
      }
      var svg = ['<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">',
        '<text x="4" y="13" class="ptitle">' + esc((gr.pid ? 'process ' + gr.pid : 'system') + ': ' + gr.unit + (logy ? ', log scale' : '')) + '</text>'];
      var ticks = logy ? [] : [lo, (lo + hi) / 2, hi];
      if (!logy && f(Math.round(ticks[1])) === f(Math.round(hi))) ticks.splice(1, 1); /* 0, 1, 1 */
      if (logy) for (var v = lo; v <= hi * 1.01; v *= step) ticks.push(v);
      ticks.forEach(function (v) {
        svg.push('<line class="grid" x1="' + X0 + '" x2="' + (X0 + PW) + '" y1="' + fy(v) + '" y2="' + fy(v) + '"/>' +
          '<text x="' + (X0 - 4) + '" y="' + fy(v) + '" text-anchor="end" dominant-baseline="middle">' + esc(f(Math.round(v))) + '</text>');
      });
      svg.push('<text x="' + X0 + '" y="' + (Y0 + PH + 12) + '">0</text><text x="' + (X0 + PW) + '" y="' + (Y0 + PH + 12) +
        '" text-anchor="end">' + esc(hns(tmax)) + '</text>');
      gr.s.forEach(function (s, k) {
        var pts = [];
        for (var i = 0; i < s.t.length; i++) pts.push((X0 + PW * s.t[i] / tmax).toFixed(1) + ',' + fy(s.v[i]));
        var c = SERIES[k % SERIES.length];
        svg.push('<polyline data-counter="' + esc(s.name) + '" data-pid="' + s.pid + '" data-max="' + s.max +
          '" style="stroke:' + c + '" points="' + pts.join(' ') + '"/>');
        svg.push('<text x="' + (X0 + (k % 2) * 260) + '" y="' + (Y0 + PH + 28 + Math.floor(k / 2) * 14) + '" style="fill:' + c + '">' +
          esc(s.name + ' (max ' + f(s.max) + ')') + '</text>');
      });
      svg.push('</svg>');
      h.push('<div class="chart" data-pid="' + gr.pid + '" data-unit="' + esc(gr.unit) + '" data-scale="' + (logy ? 'log' : 'linear') + '">' + svg.join('') + '</div>');
    });
    view('counters', h.join(''));
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

  /* ---- views and keys ----------------------------------------------------------------- */
  var current = null;
  function show(id) {
    if (!$('v-' + id)) return;
    current = id;
    VIEWS.forEach(function (v) {
      $('v-' + v[0]).hidden = v[0] !== id;
      document.querySelector('.tab[data-view="' + v[0] + '"]').classList.toggle('on', v[0] === id);
    });
    document.body.setAttribute('data-view', id);
    if (id === 'flame') flame.draw();
    if (id === 'memflame' && memF) memF.draw();
    if (id === 'timeline') tlDraw();
    if (id === 'sandwich' && sw.fn === undefined) sandwich(selected >= 0 ? selected : topFn());
  }
  function topFn() {
    var best = 0;
    for (var i = 0; i < F.length; i++) if (F[i][3] > F[best][3] || (!F[best][1] && F[i][1])) best = i;
    return best;
  }
  function searchBox() {
    return current === 'memflame' ? $('memflame-search') : current === 'sandwich' ? $('sw-fn') : $('flame-search');
  }
  document.addEventListener('keydown', function (e) {
    var inInput = /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName);
    if (e.key === 'Escape') {
      $('help').hidden = true;
      if (inInput) {
        e.target.value = '';
        e.target.dispatchEvent(new Event('input'));
        e.target.blur();
      } else if (current === 'flame') { flame.zoom = 0; flame.draw(); } else if (current === 'memflame' && memF) { memF.zoom = 0; memF.draw(); } else if (current === 'timeline') { tl.t0 = 0; tl.t1 = tl.end; tlDraw(); }
      return;
    }
    if (inInput || e.ctrlKey || e.metaKey || e.altKey) return;
    var k = e.key, vi = VIEWS.map(function (v) { return v[0]; }).indexOf(current);
    if (k === '/') {
      e.preventDefault();
      if (current !== 'flame' && current !== 'memflame' && current !== 'sandwich') show('flame');
      searchBox().focus();
    } else if (k === '?') {
      $('help').hidden = !$('help').hidden;
    } else if (/^[1-9]$/.test(k) && +k <= VIEWS.length) {
      show(VIEWS[+k - 1][0]);
    } else if (k === 'ArrowRight' || k === 'ArrowLeft') {
      e.preventDefault();
      show(VIEWS[(vi + (k === 'ArrowRight' ? 1 : VIEWS.length - 1)) % VIEWS.length][0]);
    } else if ((current === 'flame' || current === 'memflame') && /^[ilxc]$/.test(k)) {
      var fl = current === 'flame' ? flame : memF;
      if (fl) fl.set(k === 'i' ? 'inverted' : k === 'l' ? 'heavy' : k === 'x' ? 'chains' : 'cycle');
    } else if (k === 's' && current !== 'timeline') {
      if (selected >= 0) openSandwich();
    } else if (current === 'timeline') {
      if (k === 'w' || k === '+' || k === '=') tlZoom(0.5, 0.5);
      else if (k === 's' || k === '-') tlZoom(2, 0.5);
      else if (k === 'a') tlPan(-0.25);
      else if (k === 'd') tlPan(0.25);
      else if (k === '0') tlSet(0, tl.end);
    }
  });
  $('help-btn').onclick = function () { $('help').hidden = !$('help').hidden; };
  $('tabs').onclick = function (e) {
    var b = e.target.closest('.tab');
    if (b) show(b.getAttribute('data-view'));
  };
  window.addEventListener('resize', function () { if (current) show(current); });

  summarySection();
  add('<div id="views"></div>');
  timeFlame();
  sandwichView();
  latencyPanel();
  if (TLD) timelineView();
  if (MEM) memFlame();
  if (CNT && CNT.length) countersView();
  add('<div id="details"></div>');
  flatSection();
  graphSection();
  if (MEM) memorySection();
  if (P) samplesSection();
  infoSection();
  /* a --memory capture opens on its peak, leaks and memory flame graph */
  show(MEM ? 'memflame' : 'flame');
  /* report.html#view=NAME opens on that view, #sandwich=NAME on a function's sandwich */
  var hv = /^#view=(\w+)$/.exec(location.hash), hs = /^#sandwich=(.*)$/.exec(location.hash);
  if (hv) show(hv[1]);
  if (hs) {
    var want = decodeURIComponent(hs[1]);
    for (var i = 0; i < F.length; i++) if (F[i][0] === want) { select(i); openSandwich(); break; }
  }
  /* report.html#selftest clicks through the controls once (the tests):
   * every heading twice, the first rows, the flame frames, the searches,
   * the views and the keys */
  if (location.hash === '#selftest') {
    var acts = 0;
    var click = function (e) { if (e) { e.dispatchEvent(new MouseEvent('click', { bubbles: true })); acts++; } };
    var key = function (k) { document.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true })); acts++; };
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
      $(id + '-search').dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
      acts += 3;
    });
    Array.prototype.forEach.call(document.querySelectorAll('input[name=memkind]'), function (r) {
      r.checked = true; r.dispatchEvent(new Event('change')); acts++;
    });
    ['flame', 'memflame'].forEach(function (id) {
      if (!$(id)) return;
      show(id);
      Array.prototype.forEach.call($(id + '-modes').querySelectorAll('button[data-m]'), click);
      ['i', 'l', 'x', 'c', 'c', 'c', 'x', 'l', 'i'].forEach(key);
      click($(id).querySelector('div[data-chain]'));
      $(id + '-colour').value = 'name'; $(id + '-colour').dispatchEvent(new Event('change')); acts++;
    });
    show('flame');
    click(document.querySelectorAll('#sw-up div[data-n]')[1]);
    click(document.querySelectorAll('#sw-down div[data-n]')[1]);
    click(document.querySelectorAll('#top5 tr[data-fn]')[0]);
    ['?', '?', '1', '2', '3', '4', '5', 'ArrowRight', 'ArrowLeft', 's', 'w', 'a', 'd', '0', '-', 'Escape', '1', '/'].forEach(key);
    if (TLD) {
      show('timeline');
      ['tl-in', 'tl-out', 'tl-left', 'tl-right', 'tl-all'].forEach(function (id) { click($(id)); });
      for (var z = 0; z < 60; z++) tlZoom(0.5, 0.3);
      tlPan(-3); tlPan(3);
      tlSet(0, tl.end);
    }
    show('flame');
    document.body.setAttribute('data-selftest', String(acts));
  }
  document.body.setAttribute('data-rendered', '1');
  /* milliseconds from the start of the navigation to the drawn page */
  document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));
})();
