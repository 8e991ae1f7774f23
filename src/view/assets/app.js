// bench view: one page app over data files (data/<path>.js, each a bench.put(path, json)
// call) loaded by script tags, so it works from bench's server and from disk (file://).
// Routes are URL fragments (#/, #/task/<t>, #/pair/<t>/<team>/<rep>), each a stable link.
(function () {
  'use strict';
  var cache = {}, waiting = {};
  var bench = window.bench = {
    put: function (path, data) {
      cache[path] = data;
      var w = waiting[path];
      delete waiting[path];
      (w || []).forEach(function (f) { f.ok(data); });
    }
  };
  var PAGE_ROWS = 100;
  // '' for the experiment, 'b/' for the other one of a comparison (`bench view --compare`).
  var PRE = '';

  // The name encoding of src/view/ids.rs: [A-Za-z0-9._-] kept, every other byte ~xx.
  function enc(s) {
    var bytes = new TextEncoder().encode(String(s)), out = '';
    for (var i = 0; i < bytes.length; i++) {
      var b = bytes[i], c = String.fromCharCode(b);
      if (/[A-Za-z0-9._-]/.test(c)) out += c; else out += '~' + (b < 16 ? '0' : '') + b.toString(16);
    }
    if (out === '.' || out === '..') out = out.replace(/\./g, '~2e');
    return out;
  }
  function dec(s) {
    var bytes = [];
    for (var i = 0; i < s.length; i++) {
      if (s[i] === '~') { bytes.push(parseInt(s.substr(i + 1, 2), 16)); i += 2; } else bytes.push(s.charCodeAt(i));
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  }
  bench.enc = enc; bench.dec = dec;

  // `fresh`: read the data again (the live document, while an apply runs), not from the cache.
  function load(path, fresh) {
    path = PRE + path;
    if (fresh && !waiting[path]) delete cache[path];
    return new Promise(function (ok, fail) {
      if (Object.prototype.hasOwnProperty.call(cache, path)) return ok(cache[path]);
      var first = !waiting[path];
      (waiting[path] = waiting[path] || []).push({ ok: ok, fail: fail });
      if (!first) return;
      var s = document.createElement('script');
      s.src = 'data/' + path + '.js' + (fresh ? '?t=' + Date.now() : '');
      s.onload = function () { s.remove(); };
      s.onerror = function () {
        s.remove();
        var w = waiting[path]; delete waiting[path];
        (w || []).forEach(function (f) { f.fail(new Error('no data at ' + path)); });
      };
      document.head.appendChild(s);
    });
  }

  // --- DOM helpers -------------------------------------------------------------------------
  function h(tag, attrs) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      var v = attrs[k];
      if (v == null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'html') e.innerHTML = v;
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) c.forEach(function (x) { add(e, x); });
    else e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function main() { return document.getElementById('main'); }
  function setPage(title, crumbs) {
    document.title = title + ' · bench view';
    var c = document.getElementById('crumbs'); c.textContent = '';
    (crumbs || []).forEach(function (x) { add(c, [' › ', x]); });
  }
  function usd(x) { return x == null ? '—' : '$' + (x < 0.01 && x > 0 ? x.toFixed(4) : x.toFixed(2)); }
  function secs(x) { return x == null ? '—' : (x >= 100 ? x.toFixed(0) : x.toFixed(1)) + ' s'; }
  function pct(x) { return x == null ? '—' : (100 * x).toFixed(1) + '%'; }
  function num(x) { return x == null ? '—' : String(x); }
  function outcome(o, href) {
    var cls = 'o o-' + String(o).replace(/ /g, '-');
    return href ? h('a', { class: cls, href: href, text: o }) : h('span', { class: cls, text: o });
  }
  function pairHref(task, team, rep) { return '#/' + PRE + 'pair/' + enc(task) + '/' + enc(team) + '/' + rep; }
  function taskHref(task) { return '#/' + PRE + 'task/' + enc(task); }
  function kv(rows) {
    var dl = h('dl', { class: 'kv' });
    rows.forEach(function (r) { if (r[1] !== undefined) add(dl, [h('dt', { text: r[0] }), h('dd', {}, r[1] == null ? '—' : r[1])]); });
    return dl;
  }
  function table(cols, rows, opts) {
    opts = opts || {};
    var t = h('table', { class: opts.cls || null, id: opts.id || null });
    var tr = h('tr');
    cols.forEach(function (c, i) {
      var th = h('th', { class: (c.num ? 'num ' : '') + (opts.onSort ? 'sortable' : ''), text: c.label, 'data-key': c.key });
      if (opts.sort && opts.sort.key === c.key) th.classList.add(opts.sort.desc ? 'sorted-desc' : 'sorted-asc');
      if (opts.onSort) th.addEventListener('click', function () { opts.onSort(c.key); });
      tr.appendChild(th);
      void i;
    });
    t.appendChild(h('thead', {}, tr));
    var body = h('tbody');
    rows.forEach(function (r) { body.appendChild(r); });
    t.appendChild(body);
    return t;
  }
  function parseHash() {
    var hsh = location.hash.replace(/^#/, '') || '/';
    var q = hsh.indexOf('?'), query = {};
    if (q >= 0) {
      hsh.slice(q + 1).split('&').forEach(function (kvp) {
        if (!kvp) return;
        var i = kvp.indexOf('=');
        query[decodeURIComponent(i < 0 ? kvp : kvp.slice(0, i))] = i < 0 ? '' : decodeURIComponent(kvp.slice(i + 1));
      });
      hsh = hsh.slice(0, q);
    }
    return { parts: hsh.split('/').filter(Boolean), query: query };
  }
  function queryString(q) {
    var s = Object.keys(q).filter(function (k) { return q[k] !== '' && q[k] != null; }).sort()
      .map(function (k) { return encodeURIComponent(k) + '=' + encodeURIComponent(q[k]); }).join('&');
    return s ? '?' + s : '';
  }

  // --- the experiment ----------------------------------------------------------------------
  function teamsTable(doc) {
    var base = doc.baseline;
    var rows = doc.teams.map(function (t) {
      var vs = t.vs_baseline;
      return h('tr', {},
        h('td', {}, h('a', { href: '#/' + PRE + queryString({ team: t.name }), text: t.name })),
        h('td', { class: 'num', text: t.resolved + ' / ' + t.tasks }),
        h('td', { class: 'num', text: pct(t.rate) }),
        h('td', { class: 'num', text: pct(t.ci_low) + ' – ' + pct(t.ci_high) }),
        h('td', { class: 'num', text: num(t.errored) }),
        h('td', { class: 'num', text: num(t.timed_out) }),
        h('td', { class: 'num', text: num(t.not_run) }),
        h('td', { class: 'num', text: usd(t.cost && t.cost.mean_usd) }),
        h('td', { class: 'num', text: usd(t.cost && t.cost.per_resolved_usd) }),
        h('td', { class: 'num', text: secs(t.wall_time_median_s) }),
        h('td', { class: 'num', text: vs ? ((vs.rate_diff >= 0 ? '+' : '') + (100 * vs.rate_diff).toFixed(1) + ' pts, p=' + vs.p_holm.toPrecision(2)) : (t.name === base ? 'baseline' : '—') }));
    });
    return table([
      { label: 'team' }, { label: 'resolved', num: 1 }, { label: 'rate', num: 1 }, { label: '95% CI', num: 1 },
      { label: 'errored', num: 1 }, { label: 'timed out', num: 1 }, { label: 'not run', num: 1 },
      { label: 'mean cost', num: 1 }, { label: 'cost / resolved', num: 1 }, { label: 'median time', num: 1 },
      { label: 'vs ' + (base || 'baseline'), num: 1 }], rows, { id: 'teams' });
  }
  function chart(doc) {
    var teams = doc.teams, W = 520, row = 22, left = 120, H = teams.length * row + 24;
    var ns = 'http://www.w3.org/2000/svg';
    function s(tag, a) { var e = document.createElementNS(ns, tag); for (var k in a) e.setAttribute(k, a[k]); return e; }
    var svg = s('svg', { class: 'chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'resolve rate per team with 95% intervals' });
    var x = function (v) { return left + v * (W - left - 56); };
    teams.forEach(function (t, i) {
      var y = 4 + i * row;
      var label = s('text', { x: left - 6, y: y + 14, 'text-anchor': 'end' }); label.textContent = t.name; svg.appendChild(label);
      svg.appendChild(s('rect', { x: left, y: y + 3, width: Math.max(0, x(t.rate) - left), height: 14, fill: '#7aa7d9' }));
      svg.appendChild(s('line', { x1: x(t.ci_low), x2: x(t.ci_high), y1: y + 10, y2: y + 10, stroke: '#20262e', 'stroke-width': 1.5 }));
      var v = s('text', { x: x(t.ci_high) + 4, y: y + 14 }); v.textContent = pct(t.rate); svg.appendChild(v);
    });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      var tk = s('text', { x: x(v), y: H - 4, 'text-anchor': 'middle', fill: '#687080' }); tk.textContent = (v * 100) + '%'; svg.appendChild(tk);
    });
    return svg;
  }
  function groupTable(title, groups, teams) {
    var keys = Object.keys(groups || {}).sort();
    if (!keys.length) return null;
    var rows = keys.map(function (k) {
      return h('tr', {}, h('td', { text: k }), teams.map(function (t) {
        var g = groups[k][t.name];
        return h('td', { class: 'num', text: g ? g.resolved + '/' + g.tasks + ' (' + pct(g.rate) + ')' : '—' });
      }));
    });
    return h('details', {}, h('summary', { text: title + ' (' + keys.length + ')' }),
      table([{ label: title }].concat(teams.map(function (t) { return { label: t.name, num: 1 }; })), rows));
  }

  // The task x team grid: a row per task, a column per team, a mark per replicate that opens
  // its pair (a pair still running in a live apply has no page yet: its mark is not a link).
  var MARKS = { resolved: '✓', unresolved: '✗', partial: '◐', 'timed out': 'T', errored: '!', 'not run': '·' };
  function gridView(g, linked) {
    if (!g || !g.tasks.length) return h('p', { class: 'muted', id: 'grid', text: 'no pairs yet' });
    var rows = g.tasks.map(function (t, i) {
      return h('tr', { 'data-task': t }, h('th', { class: 'gtask' }, linked ? h('a', { href: taskHref(t), text: t }) : t),
        g.teams.map(function (team, j) {
          return h('td', { class: 'gcell', 'data-team': team }, g.cells[i][j].map(function (c) {
            var o = c[1], final = linked && MARKS[o] !== undefined;
            return h(final ? 'a' : 'span', { class: 'g o o-' + o.replace(/ /g, '-'), 'data-outcome': o, 'data-replicate': c[0],
              href: final ? pairHref(t, team, c[0]) : null, title: t + ' · ' + team + ' #' + c[0] + ': ' + o, text: MARKS[o] || '…' });
          }));
        }));
    });
    var cols = [{ label: 'task' }].concat(g.teams.map(function (t) { return { label: t }; }));
    return h('div', { class: 'grid-box' }, table(cols, rows, { id: 'grid', cls: 'grid' }),
      h('p', { class: 'muted small' }, Object.keys(MARKS).map(function (k) { return [h('span', { class: 'o o-' + k.replace(/ /g, '-'), text: MARKS[k] }), ' ' + k + '  ']; }), linked ? null : '…  running'));
  }

  var COLS = [
    { key: 'task', label: 'task' }, { key: 'team', label: 'team' }, { key: 'replicate', label: 'rep', num: 1 },
    { key: 'outcome', label: 'outcome' }, { key: 'cost_usd', label: 'cost', num: 1 },
    { key: 'wall_time_s', label: 'time', num: 1 }, { key: 'repo', label: 'repository' },
    { key: 'language', label: 'language' }, { key: 'flags', label: 'audit flags' }];
  var FILTERS = [['team', 'team'], ['repo', 'repository'], ['language', 'language'], ['outcome', 'outcome'], ['flag', 'audit flag']];

  // The pairs table's rows for `query` (its filters and sort), in its order; `ci` maps a
  // column name to its index in a row.
  var LIST_KEYS = ['team', 'repo', 'language', 'outcome', 'flag', 'task', 'sort', 'desc'];
  function listQuery(query) {
    var q = {};
    LIST_KEYS.forEach(function (k) { if (query[k]) q[k] = query[k]; });
    return q;
  }
  function sortOf(query) { return { key: query.sort || 'task', desc: query.desc === '1' }; }
  function columns(x) { var ci = {}; x.columns.forEach(function (c, i) { ci[c] = i; }); return ci; }
  function listed(x, query) {
    var ci = columns(x);
    var rows = x.pairs.filter(function (p) {
      if (query.team && p[ci.team] !== query.team) return false;
      if (query.repo && (p[ci.repo] || '—') !== query.repo) return false;
      if (query.language && (p[ci.language] || '—') !== query.language) return false;
      if (query.outcome && p[ci.outcome] !== query.outcome) return false;
      if (query.flag === 'any' && !p[ci.flags].length) return false;
      if (query.flag === 'none' && p[ci.flags].length) return false;
      if (query.flag && query.flag !== 'any' && query.flag !== 'none' && p[ci.flags].indexOf(query.flag) < 0) return false;
      if (query.task && String(p[ci.task]).toLowerCase().indexOf(query.task.toLowerCase()) < 0) return false;
      return true;
    });
    var sort = sortOf(query), si = ci[sort.key];
    rows.sort(function (a, b) {
      var u = a[si], v = b[si];
      if (Array.isArray(u)) { u = u.length; v = v.length; }
      var c = u == null ? (v == null ? 0 : 1) : v == null ? -1 : u < v ? -1 : u > v ? 1 : 0;
      if (c === 0) c = a[ci.task] < b[ci.task] ? -1 : a[ci.task] > b[ci.task] ? 1 : a[ci.team] < b[ci.team] ? -1 : a[ci.team] > b[ci.team] ? 1 : a[ci.replicate] - b[ci.replicate];
      return sort.desc ? -c : c;
    });
    return rows;
  }
  // A table row that opens `href` when clicked anywhere but on another link.
  function rowLink(tr, href) {
    tr.setAttribute('data-href', href);
    tr.addEventListener('click', function (e) {
      if (e.target.closest('a, button, input, select')) return;
      location.hash = href;
    });
    return tr;
  }

  // --- a running apply ---------------------------------------------------------------------
  // Served, the experiment page polls `live` (the store's event log of the last apply): while
  // an apply runs it shows its progress and its pairs as they end, and when it finishes the
  // report the store then holds. From disk (a static export) it shows what was exported.
  var SERVED = /^https?:$/.test(location.protocol);
  var poll = { timer: null, shown: null, reloaded: {} };
  function onExperiment() { var r = parseHash(); return !r.parts.length; }
  function watch(x, liveShown) {
    clearTimeout(poll.timer);
    if (!SERVED || PRE) return;
    poll.timer = setTimeout(function () {
      if (!onExperiment()) return;
      load('live', true).then(function (l) {
        if (!onExperiment()) return;
        if (l.state === 'finished' && l.run_id && l.run_id !== x.run && !poll.reloaded[l.run_id]) {
          // The apply finished: its report (opened again by the server) replaces every page.
          poll.reloaded[l.run_id] = 1;
          Object.keys(cache).forEach(function (k) { delete cache[k]; });
          return route();
        }
        if (liveShown ? JSON.stringify(l) !== poll.shown : l.state === 'running') return route();
        watch(x, liveShown);
      }, function () { watch(x, liveShown); });
    }, liveShown ? 1000 : 3000);
  }
  function progressTable(stages) {
    var rows = stages.map(function (st) {
      var frac = st.total ? Math.min(1, st.done / st.total) : 1;
      return h('tr', { 'data-stage': st.stage, 'data-done': st.done, 'data-total': st.total },
        h('td', { text: st.stage }), h('td', { class: 'muted', text: st.kind }),
        h('td', { class: 'num', text: st.done + ' / ' + (st.estimated ? '≤ ' : '') + st.total }),
        h('td', {}, h('span', { class: 'bar' }, h('span', { style: 'width:' + (100 * frac).toFixed(1) + '%' }))),
        h('td', { class: 'num', text: st.running ? st.running + ' running' : '' }),
        h('td', { class: 'num fail', text: st.failed ? st.failed + ' failed' : '' }));
    });
    return table([{ label: 'stage' }, { label: 'kind' }, { label: 'ended', num: 1 }, { label: '' }, { label: 'now', num: 1 }, { label: '', num: 1 }], rows, { id: 'progress' });
  }
  function liveView(x, l, query) {
    setPage(x.name, []);
    var m = main(); m.textContent = '';
    var run = 'apply ' + l.run_id;
    var said = {
      none: 'no apply has logged its progress yet: bench apply writes it to the store as it runs, and this page then follows it',
      running: run + ' is running',
      stopped: run + ' stopped before its end (killed?): bench apply again resumes it',
      finished: run + ' finished (' + l.status + ')' + (x.has_report ? '' : ' without a report'),
      error: 'the event log cannot be read: ' + l.error
    }[l.state] || l.state;
    // An unreadable log has neither stages nor pairs.
    var pairs = l.pairs || [], stages = l.stages || [];
    var known = pairs.filter(function (p) { return MARKS[p[3]] !== undefined; }).length;
    var pages = Math.max(1, Math.ceil(pairs.length / PAGE_ROWS));
    var page = Math.min(pages - 1, Math.max(0, parseInt(query.page || '0', 10) || 0));
    var rows = pairs.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS).map(function (p) {
      return h('tr', { class: 'pair', 'data-outcome': p[3], 'data-team': p[1] }, h('td', { text: p[0] }), h('td', { text: p[1] }),
        h('td', { class: 'num', text: p[2] }), h('td', {}, h('span', { class: 'o o-' + p[3].replace(/ /g, '-'), text: p[3] })));
    });
    add(m, [h('h1', { text: x.name }), x.description ? h('p', { text: x.description }) : null,
      h('p', { id: 'live-state', class: 'live live-' + l.state, 'data-state': l.state }, said,
        h('span', { class: 'muted small', text: SERVED ? (l.state === 'running' ? ' · this page follows it' : '') : ' · as it was when this export was written' })),
      l.error && l.state !== 'error' ? h('p', { class: 'fail', text: l.error }) : null,
      x.tasks_note ? h('p', { class: 'muted small', text: x.tasks_note }) : null,
      stages.length ? [h('h2', { text: 'Progress' }), progressTable(stages)] : null,
      h('div', { class: 'side' },
        h('section', {}, h('h2', { text: 'Outcomes by task and team' }), gridView(l.grid, false)),
        h('section', { class: 'pairs-box' }, h('h2', { text: 'Pairs' }),
          h('p', { class: 'muted', id: 'live-count', text: known + ' of ' + pairs.length + ' pairs known so far have an outcome' }),
          pager(page, pages, function (k) { location.hash = '#/' + queryString({ page: k ? String(k) : '' }); }),
          table([{ label: 'task' }, { label: 'team' }, { label: 'rep', num: 1 }, { label: 'outcome' }], rows, { id: 'live-pairs' })))]);
  }

  function experiment(query) {
    // `live` first: when it tells of an apply that finished since the server opened the
    // experiment, the server opens it again before it answers, and `experiment` is the new one.
    var first = PRE ? Promise.resolve(null) : load('live', SERVED).catch(function () { return null; });
    return first.then(function (live) {
      return load('experiment').then(function (x) { return [x, live]; });
    }).then(function (r) {
      var x = r[0], live = r[1];
      if (live && (live.state === 'running' || !x.has_report)) {
        liveView(x, live, query);
        poll.shown = JSON.stringify(live);
        return watch(x, true);
      }
      watch(x, false);
      var doc = x.document, ci = columns(x);
      setPage(x.name, []);
      var m = main(); m.textContent = '';
      add(m, [h('h1', { text: x.name }), x.description ? h('p', { text: x.description }) : null,
        kv([['manifest', x.manifest], ['store', x.store], ['report', x.report_out], ['bench', doc.bench_version],
          ['backend', doc.backend], ['datasets', doc.datasets.join(', ')],
          ['network', Object.keys(x.network).sort().map(function (k) { return k + ': ' + x.network[k]; }).join('; ')],
          ['gold', doc.gold.valid.length + ' valid, ' + doc.gold.invalid.length + ' invalid, ' + doc.gold.errored.length + ' errored of ' + doc.gold.tasks]]),
        x.tasks_note ? h('p', { class: 'muted small', text: x.tasks_note }) : null,
        x.compare ? h('p', {}, h('a', { id: 'compare-link', href: '#/compare', text: 'compared with ' + x.compare + ': changed outcomes first' })) : null,
        h('h2', { text: 'Teams' }), teamsTable(doc), chart(doc),
        groupTable('language', doc.by_language, doc.teams), groupTable('repository', doc.by_repo, doc.teams)]);
      // Filters.
      var values = { team: {}, repo: {}, language: {}, outcome: {}, flag: {} };
      x.pairs.forEach(function (p) {
        values.team[p[ci.team]] = 1; values.repo[p[ci.repo] || '—'] = 1; values.language[p[ci.language] || '—'] = 1;
        values.outcome[p[ci.outcome]] = 1; p[ci.flags].forEach(function (f) { values.flag[f] = 1; });
      });
      values.flag['any'] = 1; values.flag['none'] = 1;
      var bar = h('div', { class: 'filters' });
      function go(changes) {
        var q = Object.assign({}, query, changes);
        location.hash = '#/' + PRE + queryString(q);
      }
      FILTERS.forEach(function (f) {
        var sel = h('select', { id: 'f-' + f[0], onchange: function () { var c = {}; c[f[0]] = sel.value; c.page = ''; go(c); } },
          h('option', { value: '', text: 'all' }),
          Object.keys(values[f[0]]).sort().map(function (v) { return h('option', { value: v, text: v }); }));
        sel.value = query[f[0]] || '';
        add(bar, h('label', {}, f[1], sel));
      });
      var search = h('input', { id: 'f-task', type: 'search', placeholder: 'task contains…', value: query.task || '',
        onchange: function () { go({ task: search.value, page: '' }); } });
      add(bar, h('label', {}, 'task', search));
      var pbox = h('section', { class: 'pairs-box' });
      add(m, h('div', { class: 'side' }, h('section', {}, h('h2', { text: 'Outcomes by task and team' }), gridView(x.grid, true)), pbox));
      add(pbox, [h('h2', { text: 'Pairs' }), bar]);
      // Filter, sort, page.
      var sort = sortOf(query), rows = listed(x, query), list = listQuery(query);
      var pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
      var page = Math.min(pages - 1, Math.max(0, parseInt(query.page || '0', 10) || 0));
      var shown = rows.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS).map(function (p) {
        var href = pairHref(p[ci.task], p[ci.team], p[ci.replicate]) + queryString(list);
        return rowLink(h('tr', { class: 'pair', 'data-outcome': p[ci.outcome], 'data-team': p[ci.team] },
          h('td', {}, h('a', { class: 'task', href: taskHref(p[ci.task]), text: p[ci.task] })),
          h('td', { text: p[ci.team] }), h('td', { class: 'num', text: p[ci.replicate] }),
          h('td', {}, outcome(p[ci.outcome], href)),
          h('td', { class: 'num', text: usd(p[ci.cost_usd]) }), h('td', { class: 'num', text: secs(p[ci.wall_time_s]) }),
          h('td', { text: p[ci.repo] || '—' }), h('td', { text: p[ci.language] || '—' }),
          h('td', {}, p[ci.flags].map(function (f) { return h('span', { class: 'flag', text: f }); }))), href);
      });
      add(pbox, [h('p', { class: 'muted', id: 'count', text: rows.length + ' of ' + x.pairs.length + ' pairs' }),
        pager(page, pages, function (k) { go({ page: k ? String(k) : '' }); }),
        table(COLS, shown, {
          id: 'pairs', sort: sort, onSort: function (k) {
            go({ sort: k === 'task' ? '' : k, desc: sort.key === k && !sort.desc ? '1' : '', page: '' });
          }
        })]);
    });
  }
  function pager(page, pages, to) {
    if (pages <= 1) return null;
    return h('div', { class: 'pager' },
      h('button', { disabled: page === 0 || null, class: 'prev', onclick: function () { to(page - 1); }, text: '‹ prev' }),
      h('span', { class: 'muted', text: 'page ' + (page + 1) + ' of ' + pages }),
      h('button', { disabled: page + 1 >= pages || null, class: 'next', onclick: function () { to(page + 1); }, text: 'next ›' }));
  }

  // --- a task ------------------------------------------------------------------------------
  function task(t) {
    return Promise.all([load('task/' + enc(t)), load('experiment')]).then(function (r) {
      var x = r[0], exp = r[1];
      setPage(t, [h('a', { href: '#/' + PRE, text: exp.name }), t]);
      var m = main(); m.textContent = '';
      var rows = x.pairs.map(function (p) {
        return rowLink(h('tr', { class: 'pair', 'data-team': p.team },
          h('td', { text: p.team }), h('td', { class: 'num', text: p.replicate }),
          h('td', {}, outcome(p.outcome, pairHref(t, p.team, p.replicate)), p.reason ? h('div', { class: 'small muted', text: p.reason }) : null),
          h('td', { class: 'num', text: usd(p.cost_usd) }), h('td', { class: 'num', text: secs(p.wall_time_s) }),
          h('td', { class: 'num', text: p.input_tokens == null ? '—' : p.input_tokens + ' / ' + p.output_tokens }),
          h('td', { class: 'num', text: p.flags ? p.flags + ' flags' : '' })), pairHref(t, p.team, p.replicate));
      });
      add(m, [h('h1', { text: t }),
        kv([['repository', x.repo], ['language', x.language], ['created', x.created_at],
          ['gold patch', x.gold === true ? 'resolves (valid)' : x.gold === false ? 'does not resolve (invalid)' : x.gold === null ? 'errored' : 'not checked']]),
        h('h2', { text: 'Teams' }),
        table([{ label: 'team' }, { label: 'rep', num: 1 }, { label: 'outcome' }, { label: 'cost', num: 1 },
          { label: 'time', num: 1 }, { label: 'tokens in / out', num: 1 }, { label: 'audit', num: 1 }], rows, { id: 'task-pairs' }),
        h('h2', { text: 'Statement' }),
        x.statement != null ? h('pre', { id: 'statement', text: x.statement }) : h('p', { class: 'muted', text: x.tasks_note || 'not available' }),
        x.fail_to_pass ? [h('h2', { text: 'Tests' }), h('h3', { text: 'FAIL_TO_PASS (' + x.fail_to_pass.length + ')' }),
          h('pre', { text: x.fail_to_pass.join('\n') || '—' }),
          h('h3', { text: 'PASS_TO_PASS (' + x.pass_to_pass.length + ')' }), h('pre', { text: x.pass_to_pass.join('\n') || '—' })] : null]);
    });
  }

  // --- a pair ------------------------------------------------------------------------------
  function diffView(d) {
    if (!d || !d.files.length) return h('p', { class: 'muted', text: 'empty patch' });
    var box = h('div', { class: 'diff' });
    add(box, h('p', { class: 'muted' }, d.files.length + (d.files.length === 1 ? ' file, ' : ' files, ') + d.bytes + ' bytes', d.truncated ? ' (cut: the raw patch has the rest)' : ''));
    d.files.forEach(function (f) {
      var name = f.old && f.new && f.old !== f.new ? f.old + ' → ' + f.new : (f.new || f.old || '?');
      var t = h('table');
      f.hunks.forEach(function (hk) {
        t.appendChild(h('tr', { class: 'hunk' }, h('td', { class: 'ln' }), h('td', { class: 'ln' }), h('td', { text: hk.header })));
        hk.lines.forEach(function (l) {
          var cls = l.kind === '+' ? 'add' : l.kind === '-' ? 'del' : l.kind === ' ' ? 'ctx' : 'note';
          t.appendChild(h('tr', { class: cls }, h('td', { class: 'ln', text: l.old == null ? '' : l.old }),
            h('td', { class: 'ln', text: l.new == null ? '' : l.new }), h('td', { class: 'code', html: l.html })));
        });
      });
      add(box, h('div', { class: 'file' }, h('div', { class: 'fname' }, name, ' ',
        h('span', { class: 'muted small', text: f.status + ' +' + f.added + ' −' + f.removed })), t));
    });
    return box;
  }
  function blobView(digest, pages, startPage, id) {
    var box = h('div', { class: 'blob', id: id || null });
    function show(k) {
      load('blob/' + digest + '/' + k).then(function (p) {
        box.textContent = '';
        add(box, [pager(p.page, p.pages, show),
          h('div', { class: 'muted small', text: 'bytes ' + p.start + '–' + p.end + ' of ' + p.total }),
          h('pre', { class: 'log', text: p.text })]);
      }, function (e) { box.textContent = String(e.message); });
    }
    show(startPage || 0);
    void pages;
    return box;
  }
  function stepView(s) {
    var meta = h('div', { class: 'meta' }, h('b', { text: s.kind.replace('_', ' ') }), s.role ? h('span', { text: s.role }) : null,
      s.tool ? h('span', { class: 'tool', text: s.tool }) : null, s.call_id ? h('span', { text: '#' + s.call_id }) : null,
      s.timestamp ? h('span', { text: s.timestamp }) : null,
      s.usage ? h('span', { text: 'tokens ' + s.usage.input + ' in (' + s.usage.cached_input + ' cached) / ' + s.usage.output + ' out' }) : null,
      s.cost_usd != null ? h('span', { text: usd(s.cost_usd) }) : null, s.model ? h('span', { text: s.model }) : null,
      s.exit_code != null ? h('span', { text: 'exit ' + s.exit_code }) : null, s.is_error ? h('span', { class: 'fail', text: 'error' }) : null);
    var body = [];
    if (s.arguments != null) body.push(h('pre', { class: 'args', text: typeof s.arguments === 'string' ? s.arguments : JSON.stringify(s.arguments, null, 2) }));
    if (s.text) body.push(h('pre', { text: s.text + (s.truncated ? '\n[… cut: see the raw output]' : '') }));
    return h('div', { class: 'step ' + s.kind + (s.role ? ' r-' + s.role : '') }, meta, body);
  }
  function runView(t, i, r) {
    var box = h('div', { class: 'run', 'data-role': r.role });
    var steps = h('div', { class: 'steps' });
    function show(k) {
      load('traj/' + t.digest + '/' + i + '/' + k).then(function (p) {
        steps.textContent = '';
        add(steps, [pager(p.page, p.pages, show), p.steps.map(stepView)]);
        if (!p.steps.length) add(steps, h('p', { class: 'muted', text: 'no steps' }));
      });
    }
    var raw = null;
    add(box, [h('h3', {}, r.role + ': ' + (r.agent || '?') + ' ', h('span', { class: 'muted small', text: r.format + ', ' + r.steps + ' steps, tokens ' + r.tokens.input + ' in / ' + r.tokens.output + ' out' + (r.cost_usd != null ? ', ' + usd(r.cost_usd) : '') })),
      h('button', { class: 'raw', onclick: function () {
        if (raw) { raw.remove(); raw = null; return; }
        raw = blobView(t.digest, t.raw_pages, Math.floor(r.raw_start / (256 * 1024)));
        box.insertBefore(raw, steps);
      }, text: 'raw output' }),
      r.files.length ? h('div', { class: 'muted small', text: 'files: ' + r.files.map(function (f) { return f.path + ' (' + f.bytes + ' B)'; }).join(', ') }) : null,
      r.left_out.length ? h('div', { class: 'muted small', text: 'caches left out: ' + r.left_out.length }) : null,
      steps]);
    show(0);
    return box;
  }
  function testsTable(tests) {
    if (!tests.length) return h('p', { class: 'muted', text: 'no tests recorded' });
    var rows = tests.map(function (t) {
      return h('tr', { class: 'test ' + (t.ok ? 'ok' : 'bad') }, h('td', { text: t.kind }), h('td', { class: 'name', text: t.name }),
        h('td', { text: t.expected }), h('td', { class: t.got === 'pass' ? 'pass' : t.got === 'missing' ? 'missing' : 'fail', text: t.got }));
    });
    return table([{ label: 'list' }, { label: 'test' }, { label: 'expected' }, { label: 'got' }], rows, { id: 'tests', cls: 'tests' });
  }
  // The previous and next failure (a pair not resolved) in the pairs table the pair was
  // opened from (its filters and sort ride in the pair's URL), else in the whole table.
  function failureNav(exp, t, team, rep, query) {
    var ci = columns(exp), list = listQuery(query), rows = listed(exp, list);
    function at(rs) {
      for (var k = 0; k < rs.length; k++) if (rs[k][ci.task] === t && rs[k][ci.team] === team && rs[k][ci.replicate] === rep) return k;
      return -1;
    }
    var i = at(rows);
    if (i < 0) { list = {}; rows = listed(exp, list); i = at(rows); }
    var keep = queryString(Object.assign({}, list, query.tab ? { tab: query.tab } : {}));
    function failed(p) { return p[ci.outcome] !== 'resolved'; }
    function find(step) {
      for (var k = i + step; i >= 0 && k >= 0 && k < rows.length; k += step) if (failed(rows[k])) return rows[k];
      return null;
    }
    function link(p, id, label) {
      if (!p) return h('span', { class: 'muted', id: id, text: label });
      return h('a', { id: id, href: pairHref(p[ci.task], p[ci.team], p[ci.replicate]) + keep, text: label,
        title: p[ci.task] + ' · ' + p[ci.team] + ' #' + p[ci.replicate] + ': ' + p[ci.outcome] });
    }
    return h('p', { class: 'failure-nav' }, link(find(-1), 'prev-failure', '‹ previous failure'), ' · ',
      link(find(1), 'next-failure', 'next failure ›'),
      h('span', { class: 'muted small', text: '  ' + rows.filter(failed).length + ' of ' + rows.length + ' pairs not resolved' + (Object.keys(list).length ? ' in this list' : '') }));
  }
  function pair(t, team, rep, query) {
    return Promise.all([load('pair/' + enc(t) + '/' + enc(team) + '/' + rep), load('experiment')]).then(function (r) {
      var x = r[0], exp = r[1];
      setPage(t + ' · ' + team, [h('a', { href: '#/' + PRE, text: exp.name }), h('a', { href: taskHref(t), text: t }), team + ' #' + rep]);
      var m = main(); m.textContent = '';
      var s = x.solve && x.solve.output && x.solve.output.solve, g = x.grade && x.grade.output;
      var list = queryString(listQuery(query));
      add(m, [h('h1', {}, t, ' · ', team, ' · ', outcome(x.outcome)), failureNav(exp, t, team, rep, query),
        h('p', {}, 'other teams: ', x.teams.filter(function (o) { return o !== team; }).map(function (o) {
          return [h('a', { href: pairHref(t, o, rep) + list, text: o }), ' '];
        }), x.replicates.length > 1 ? [' · replicates: ', x.replicates.map(function (k) { return [h('a', { href: pairHref(t, team, k) + list, text: '#' + k }), ' ']; })] : null),
        kv([['outcome', outcome(x.outcome)], ['reason', x.reason || undefined], ['cost', usd(x.cost_usd)], ['time', secs(x.wall_time_s)],
          ['repository', x.repo], ['language', x.language],
          ['solve', s ? ('exit ' + num(s.exit_code) + (s.timed_out ? ', timed out' : '') + (s.solve_error ? ', ' + s.solve_error : '') + (s.redacted ? ', scrubbed' : '') + ', ' + s.patch_bytes + ' patch bytes') : '—'],
          ['network', Object.keys(x.network).sort().map(function (k) { return k + ': ' + x.network[k]; }).join('; ')],
          ['artifacts', x.artifact_dir]]),
        x.runs.length ? [h('h2', { text: 'Agent runs' }), table([{ label: 'role' }, { label: 'harness' }, { label: 'model' }, { label: 'tokens in / out', num: 1 }, { label: 'cost', num: 1 }, { label: 'basis' }],
          x.runs.map(function (u) {
            return h('tr', {}, h('td', { text: u.role }), h('td', { text: u.harness }), h('td', { text: u.model || '—' }),
              h('td', { class: 'num', text: u.tokens ? u.tokens.input + ' / ' + u.tokens.output : '—' }), h('td', { class: 'num', text: usd(u.cost_usd) }), h('td', { text: u.cost_basis + (u.timed_out ? ', timed out' : '') }));
          }))] : null,
        x.attempts ? [h('h2', { text: 'Attempts' }), table([{ label: 'attempt', num: 1 }, { label: 'outcome' }, { label: 'deadline', num: 1 }, { label: 'run by' }],
          x.attempts.slice().reverse().map(function (a) {
            return h('tr', { id: 'attempt-' + a.attempt }, h('td', { class: 'num', text: String(a.attempt) }),
              h('td', { text: a.outcome || x.outcome + ' (counts)' }), h('td', { class: 'num', text: secs(a.deadline_s) }),
              h('td', { text: a.selected_by ? '--rerun ' + a.selected_by + ' (' + a.run_id + ')' : 'the first apply' }));
          }))] : null]);
      var tabs = [['grading', 'Grading'], ['diff', 'Diff'], ['trajectory', 'Trajectory'], ['logs', 'Logs']];
      var cur = query.tab || 'grading';
      var bar = h('div', { class: 'tabs' });
      tabs.forEach(function (tb) {
        add(bar, h('button', { class: tb[0] === cur ? 'on' : null, id: 'tab-' + tb[0], onclick: function () {
          location.hash = pairHref(t, team, rep) + queryString(Object.assign(listQuery(query), { tab: tb[0] === 'grading' ? '' : tb[0] }));
        }, text: tb[1] }));
      });
      add(m, bar);
      var pane = h('div', { id: 'pane-' + cur });
      add(m, pane);
      if (cur === 'grading') {
        if (!g) add(pane, h('p', { class: 'muted', text: 'not graded' }));
        else {
          var c = g.confirm;
          add(pane, [kv([['resolved', String(g.resolved)], ['patch applied', String(g.patch_applied)], ['empty patch', String(g.empty_patch)],
            ['timed out', String(g.timed_out)], ['test exit code', num(g.test_exit_code)], ['resolution', g.resolution || undefined],
            ['history check', g.history_check], ['confirm check', c ? ('in sandbox ' + c.in_sandbox + ', clean ' + c.clean.join(', ') + (c.disagreement ? ' (disagreement: majority counts)' : '')) : 'not run'],
            ['reward', g.reward ? JSON.stringify(g.reward) : undefined], ['verifier', g.verifier || undefined],
            ['grading time', (g.duration_ms / 1000).toFixed(1) + ' s']]),
          h('h2', { text: 'Tests' }), testsTable(x.tests),
          h('h2', { text: 'Audit flags' }),
          x.flags.length ? h('ul', { id: 'flags' }, x.flags.map(function (f) { return h('li', {}, h('span', { class: 'flag', text: f.reason }), ' ', f.path); })) : h('p', { class: 'muted', text: 'none' })]);
          var log = (x.grade.blobs || []).filter(function (b) { return b.name === 'log'; })[0];
          if (log) add(pane, [h('h2', { text: 'Grading log' }), blobView(log.digest, log.pages, 0, 'grading-log')]);
        }
      } else if (cur === 'diff') {
        add(pane, [diffView(x.diff), x.patch ? h('button', { class: 'raw', onclick: function (e) { e.target.replaceWith(blobView(x.patch, 1, 0)); }, text: 'raw patch' }) : null]);
      } else if (cur === 'trajectory') {
        if (!x.trajectory) add(pane, h('p', { class: 'muted', text: 'no trajectory' }));
        else load('traj/' + x.trajectory).then(function (tr) {
          if (!tr.runs.length) add(pane, h('p', { class: 'muted', text: 'empty trajectory' }));
          tr.runs.forEach(function (run, i) { add(pane, runView(tr, i, run)); });
        });
      } else {
        [['solve', x.solve], ['grade', x.grade]].forEach(function (sg) {
          if (!sg[1]) return;
          add(pane, h('h2', { text: sg[0] + ' (' + sg[1].address + ')' }));
          sg[1].blobs.forEach(function (b) {
            var holder = h('div');
            add(pane, [h('div', {}, h('button', { class: 'blob-open', onclick: function () { holder.textContent = ''; add(holder, blobView(b.digest, b.pages, 0)); }, text: b.name }),
              ' ', h('span', { class: 'muted small', text: (b.bytes == null ? 'missing' : b.bytes + ' bytes') + ' · ' + b.digest.slice(0, 12) })), holder]);
          });
        });
      }
    });
  }

  // --- two experiments ---------------------------------------------------------------------
  function compare(query) {
    return load('compare').then(function (x) {
      setPage('compare', [h('a', { href: '#/', text: x.a.name }), 'compared with ' + x.b.name]);
      var m = main(); m.textContent = '';
      var teams = x.teams.map(function (t) {
        var d = t.a && t.b ? t.b.rate - t.a.rate : null;
        return h('tr', {}, h('td', { text: t.name }),
          h('td', { class: 'num', text: t.a ? t.a.resolved + ' / ' + t.a.tasks + ' (' + pct(t.a.rate) + ')' : '—' }),
          h('td', { class: 'num', text: t.b ? t.b.resolved + ' / ' + t.b.tasks + ' (' + pct(t.b.rate) + ')' : '—' }),
          h('td', { class: 'num', text: d == null ? '—' : (d >= 0 ? '+' : '') + (100 * d).toFixed(1) + ' pts' }));
      });
      var rows = x.pairs.filter(function (p) { return query.changed !== '1' || p[5]; });
      var pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
      var page = Math.min(pages - 1, Math.max(0, parseInt(query.page || '0', 10) || 0));
      function go(c) { location.hash = '#/compare' + queryString(Object.assign({}, query, c)); }
      var shown = rows.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS).map(function (p) {
        var ha = p[3] ? '#/pair/' + enc(p[0]) + '/' + enc(p[1]) + '/' + p[2] : null;
        var hb = p[4] ? '#/b/pair/' + enc(p[0]) + '/' + enc(p[1]) + '/' + p[2] : null;
        return h('tr', { class: 'pair' + (p[5] ? ' changed' : '') }, h('td', { text: p[0] }), h('td', { text: p[1] }),
          h('td', { class: 'num', text: p[2] }), h('td', {}, p[3] ? outcome(p[3], ha) : '—'), h('td', {}, p[4] ? outcome(p[4], hb) : '—'),
          h('td', { text: p[5] ? 'changed' : '' }));
      });
      var only = h('input', { type: 'checkbox', id: 'f-changed', checked: query.changed === '1' || null, onchange: function () { go({ changed: only.checked ? '1' : '', page: '' }); } });
      add(m, [h('h1', {}, x.a.name, ' → ', x.b.name),
        kv([['A', x.a.manifest], ['B', x.b.manifest], ['changed', x.changed + ' of ' + x.pairs.length + ' pairs']]),
        h('h2', { text: 'Teams' }),
        table([{ label: 'team' }, { label: 'A: ' + x.a.name, num: 1 }, { label: 'B: ' + x.b.name, num: 1 }, { label: 'B − A', num: 1 }], teams, { id: 'compare-teams' }),
        h('h2', { text: 'Pairs, changed outcomes first' }), h('div', { class: 'filters' }, h('label', {}, only, 'changed only')),
        pager(page, pages, function (k) { go({ page: k ? String(k) : '' }); }),
        table([{ label: 'task' }, { label: 'team' }, { label: 'rep', num: 1 }, { label: 'A' }, { label: 'B' }, { label: '' }], shown, { id: 'compare-pairs' })]);
    });
  }

  // --- routing -----------------------------------------------------------------------------
  var shownPath = null;
  function route() {
    var r = parseHash(), p = r.parts, done;
    PRE = '';
    if (p[0] === 'b') { PRE = 'b/'; p = p.slice(1); }
    if (!p.length) done = experiment(r.query);
    else if (p[0] === 'compare' && p.length === 1 && !PRE) done = compare(r.query);
    else if (p[0] === 'task' && p.length === 2) done = task(dec(p[1]));
    else if (p[0] === 'pair' && p.length === 4) done = pair(dec(p[1]), dec(p[2]), parseInt(p[3], 10), r.query);
    else done = Promise.reject(new Error('no page at ' + location.hash));
    // A new page opens at its top; a new tab, filter or sort of the same page keeps its place.
    var path = location.hash.split('?')[0];
    done.then(function () {
      if (path !== shownPath) window.scrollTo(0, 0);
      shownPath = path;
      document.body.setAttribute('data-ready-ms', String(performance.now()));
      document.body.setAttribute('data-ready', location.hash || '#/');
    }, function (e) {
      var m = main(); m.textContent = '';
      add(m, h('p', { class: 'fail', id: 'error', text: String(e.message || e) }));
      document.body.setAttribute('data-ready', 'error');
    });
  }
  window.addEventListener('hashchange', function () { document.body.removeAttribute('data-ready'); route(); });
  route();
})();
