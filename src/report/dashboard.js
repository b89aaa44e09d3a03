'use strict';
(function () {
  const started = performance.now();
  const data = JSON.parse(document.getElementById('ic-data').textContent);
  const app = document.getElementById('app');
  const text = data.text;
  const cases = data.cases;
  const cells = data.cells;
  const ncases = cases.cell.length;
  const ncells = cells.protocol.length;
  const outcomes = data.outcomes;
  const nout = outcomes.length;
  // What the C side knows of each outcome (its outcome table, ic_result.h): row i is
  // outcome i of `outcomes`. Names a report holds beyond the table count as errors.
  const FACTS = data.outcome_facts;
  const factOf = (name) => FACTS.find((f) => f.name === name);
  // Outcomes from the most to the least severe: a cell's list shows cases in this order.
  const SEVERITY = FACTS.slice().sort((a, b) => a.rank - b.rank).map((f) => f.name);
  const markOf = (category) => (FACTS.find((f) => f.category === category) || {}).mark;
  const EM = ' \u2014 ';
  const DOT = ' \u00b7 ';
  const MARK = Object.fromEntries(FACTS.map((f) => [f.name, f.mark]));
  const SHORT = Object.fromEntries(FACTS.map((f) => [f.name, f.label]));
  // What a cell's colour says; the mark repeats it for readers who do not see colour. A
  // cell's colour is its most severe outcome's category; 'mixed', 'gap' and 'none' are the
  // page's own (passes beside unsupported cases, no cases, none left by the filters).
  const CATEGORIES = [
    ['fail', markOf('fail'), 'some cases failed, crashed or timed out'],
    ['error', markOf('error'), 'errors of interopcheck or the environment, not of the libraries'],
    ['xpass', markOf('xpass'), 'a case expected to fail passed: update the expectations'],
    ['xfail', markOf('xfail'), 'failures, all of them expected or waived'],
    ['pass', markOf('pass'), 'every case passed'],
    ['mixed', markOf('pass'), 'every supported case passed; the others are unsupported'],
    ['unsup', markOf('unsup'),
      'every case unsupported: refused as the protocol allows, or not expressible'],
    ['gap', 'n/a', 'no cases: the pair cannot exchange this way (hover or click for why)'],
    ['none', '0', 'cases, but none matches the filters'],
  ];
  const MARKS = Object.fromEntries(CATEGORIES.map((c) => [c[0], c[1]]));
  const outcomeIndex = (name) => outcomes.indexOf(name);
  // A check's status shows the mark of the outcome it resembles.
  const CHECK = MARK.pass;
  const CROSS = MARK.fail;
  const DASH = MARK.unsupported;
  const severityRank = outcomes.map((o) => {
    const r = SEVERITY.indexOf(o);
    return r < 0 ? SEVERITY.length : r;
  });
  const passIndex = outcomes.map((o, i) => (factOf(o) || {}).passed ? i : -1)
    .filter((i) => i >= 0);
  // --- small DOM helpers: every text goes in through textContent
  function el(tag, cls, content) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (content !== undefined && content !== null) {
      if (Array.isArray(content)) {
        for (const c of content) if (c !== null && c !== undefined) node.append(c);
      } else if (content instanceof Node) {
        node.append(content);
      } else {
        node.textContent = shown(String(content));
      }
    }
    return node;
  }
  // Control characters become their visible pictures (U+2400...), so that a message that
  // carries them shows where they are instead of hiding them.
  function shown(s) {
    return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (ch) =>
      String.fromCharCode(ch === '\u007f' ? 0x2421 : 0x2400 + ch.charCodeAt(0)));
  }
  const fmt = (n) => n.toLocaleString('en-US');
  function clip(s, n) {
    return s.length > n ? s.slice(0, n) + '\u2026' : s;
  }
  function longText(s) {
    const LIMIT = 4000;
    const pre = el('pre', 'text', s.length > LIMIT ? s.slice(0, LIMIT) + ' \u2026' : s);
    if (s.length <= LIMIT) return pre;
    const more = el('button', 'more', 'Show all ' + fmt(s.length) + ' characters');
    more.type = 'button';
    more.addEventListener('click', () => {
      pre.textContent = shown(s);
      more.remove();
    });
    return el('div', null, [pre, more]);
  }
  function badge(outcome, count) {
    const label = (MARK[outcome] || '?') + ' ' + (count === undefined ? outcome :
      fmt(count) + ' ' + outcome);
    return el('span', 'badge o-' + outcome, label);
  }
  // --- the cases
  const ids = new Map(data.ids.map((p) => [p[0], text[p[1]]]));
  const expectations = new Map(data.expectations.map((e) => [e[0], e]));
  function caseId(i) {
    const k = cases.cell[i];
    if (ids.has(i)) return ids.get(i);
    let id = [data.protocols[cells.protocol[k]], data.libraries[cells.producer[k]],
      data.libraries[cells.consumer[k]], data.devices[cells.device[k]],
      data.dtypes[cases.dtype[i]], data.layouts[cases.layout[i]]].join('.');
    if (cases.variant[i]) id += '.' + data.variants[cases.variant[i]];
    return id;
  }
  const cellTotal = new Int32Array(ncells);
  for (let i = 0; i < ncases; i++) cellTotal[cases.cell[i]]++;
  // Matrices: one per (protocol, device) that has cells, in table order. A merged report's
  // environments share it, side by side in each cell; lookup gives a pair's cells, one per
  // environment that has the pair.
  const merged = data.environments.length > 1;
  const groupsByKey = new Map();
  for (let k = 0; k < ncells; k++) {
    const key = cells.protocol[k] + ',' + cells.device[k];
    let g = groupsByKey.get(key);
    if (!g) {
      g = {protocol: cells.protocol[k], device: cells.device[k], cells: [], lookup: new Map(),
        total: 0};
      groupsByKey.set(key, g);
    }
    g.cells.push(k);
    const pair = cells.producer[k] + ',' + cells.consumer[k];
    if (!g.lookup.has(pair)) g.lookup.set(pair, []);
    g.lookup.get(pair).push(k);
    g.total += cellTotal[k];
  }
  for (const g of groupsByKey.values()) {
    for (const list of g.lookup.values()) list.sort((a, b) => cells.env[a] - cells.env[b]);
  }
  const groups = [...groupsByKey.values()].sort((a, b) =>
    a.protocol - b.protocol || a.device - b.device);
  // --- filters
  const FILTERS = [
    ['library', 'Library', data.libraries],
    ['producer', 'Producer', data.libraries],
    ['consumer', 'Consumer', data.libraries],
    ['protocol', 'Protocol', data.protocols],
    ['device', 'Device', data.devices],
    ['env', 'Environment', data.environments],
    ['dtype', 'Dtype', data.dtypes],
    ['layout', 'Layout', data.layouts],
    ['outcome', 'Outcome', outcomes],
    ['severity', 'Severity', data.severities],
  ];
  const filter = {library: -1, producer: -1, consumer: -1, protocol: -1, device: -1, env: -1,
    dtype: -1, layout: -1, outcome: -1, severity: -1, id: '', all: false};
  const counts = new Int32Array(ncells * nout);
  let shownTotal = 0;
  const shownByOutcome = new Int32Array(nout);
  function cellPasses(k) {
    return (filter.library < 0 || cells.producer[k] === filter.library ||
        cells.consumer[k] === filter.library) &&
      (filter.producer < 0 || cells.producer[k] === filter.producer) &&
      (filter.consumer < 0 || cells.consumer[k] === filter.consumer) &&
      (filter.protocol < 0 || cells.protocol[k] === filter.protocol) &&
      (filter.device < 0 || cells.device[k] === filter.device) &&
      (filter.env < 0 || cells.env[k] === filter.env);
  }
  function casePasses(i) {
    return (filter.dtype < 0 || cases.dtype[i] === filter.dtype) &&
      (filter.layout < 0 || cases.layout[i] === filter.layout) &&
      (filter.outcome < 0 || cases.outcome[i] === filter.outcome) &&
      (filter.severity < 0 || cases.severity[i] === filter.severity) &&
      (!filter.id || caseId(i).includes(filter.id));
  }
  const cellOk = new Uint8Array(ncells);
  function recount() {
    counts.fill(0);
    shownByOutcome.fill(0);
    shownTotal = 0;
    for (let k = 0; k < ncells; k++) cellOk[k] = cellPasses(k) ? 1 : 0;
    for (let i = 0; i < ncases; i++) {
      const k = cases.cell[i];
      if (!cellOk[k] || !casePasses(i)) continue;
      counts[k * nout + cases.outcome[i]]++;
      shownByOutcome[cases.outcome[i]]++;
      shownTotal++;
    }
  }
  const filtering = () => FILTERS.some((f) => filter[f[0]] >= 0) || filter.id !== '';
  // Counts of a cell after the filters, by outcome name.
  function cellSummary(k) {
    const byName = {};
    let total = 0;
    let passed = 0;
    for (let o = 0; o < nout; o++) {
      const n = counts[k * nout + o];
      if (!n) continue;
      byName[outcomes[o]] = n;
      total += n;
    }
    for (const o of passIndex) passed += counts[k * nout + o];
    return {byName, total, passed};
  }
  function category(s) {
    if (!s.total) return 'none';
    const worst = SEVERITY.find((o) => s.byName[o]);
    if (Object.keys(s.byName).some((o) => !factOf(o))) return 'error'; // not in the table
    const c = factOf(worst).category;
    if (c === 'unsup' && passIndex.some((i) => s.byName[outcomes[i]])) return 'mixed';
    return c;
  }
  function breakdown(s) {
    return SEVERITY.filter((o) => s.byName[o]).map((o) => fmt(s.byName[o]) + ' ' + o)
      .join(', ');
  }
  // --- the header
  const head = data.head;
  function when(iso) {
    return typeof iso === 'string' ? iso.replace('T', ' ').replace(/Z$/, ' UTC') : '?';
  }
  function seconds(s) {
    if (typeof s !== 'number') return '?';
    return s < 120 ? s.toFixed(1) + ' s' : Math.floor(s / 60) + ' min ' +
      Math.round(s % 60) + ' s';
  }
  function facts(pairs) {
    const dl = el('dl', 'facts');
    for (const [name, value] of pairs) {
      if (value === null || value === undefined || value === '') continue;
      dl.append(el('dt', null, name), el('dd', null, value));
    }
    return dl;
  }
  function devicesText(devices) {
    const list = el('div');
    for (const [name, d] of Object.entries(devices || {})) {
      const line = el('div', d.available ? null : 'unavailable');
      line.append(el('strong', null, name + ': '),
        (d.available ? 'available' : 'not available') + (d.detail ? EM + d.detail : ''));
      list.append(line);
    }
    return list;
  }
  function libraryTable(libraries) {
    const table = el('table', 'libs');
    const hr = el('tr');
    for (const h of ['library', 'version', 'status', 'exports', 'imports'])
      hr.append(el('th', null, h));
    table.append(el('thead', null, hr));
    const body = el('tbody');
    const STATUS = {loaded: 'loaded', not_installed: 'not installed', import_error: 'import error',
      import_crash: 'crashed on import', invalid_probe: 'invalid probe'};
    // Probes the run found but did not need (its filters left them out) take one line.
    const idle = (libraries || []).filter((lib) => lib.status === 'not_loaded');
    for (const lib of libraries || []) {
      if (lib.status === 'not_loaded') continue;
      const tr = el('tr');
      tr.append(el('td', 'mono', lib.name), el('td', 'mono', lib.version || '\u2014'));
      if (lib.status === 'loaded') {
        tr.append(el('td', null, 'loaded'),
          el('td', null, (lib.exports || []).join(', ') || '\u2014'),
          el('td', null, (lib.imports || []).join(', ') || '\u2014'));
      } else {
        const cell = el('td', 'err', (STATUS[lib.status] || lib.status) +
          (lib.error ? ': ' + lib.error : ''));
        cell.colSpan = 3;
        tr.append(cell);
      }
      body.append(tr);
    }
    table.append(body);
    if (!idle.length) return table;
    return el('div', null, [table, el('p', 'note', 'Not loaded, as this run did not need ' +
      'them: ' + idle.map((lib) => lib.name).join(', ') + '.')]);
  }
  function environmentBlock(tool, run, env, open, title) {
    const box = el('details', 'env');
    box.open = open;
    box.append(el('summary', null, title));
    const build = (tool && tool.build) || {};
    const platform = env.platform || {};
    const python = env.python || {};
    const filters = Object.entries((run && run.filters) || {})
      .filter((f) => f[1] && f[1].length).map((f) => f[0] + ' = ' + f[1].join(', '));
    box.append(facts([
      ['interopcheck', (tool && tool.version || '?') + ' (' + [build.build_type,
        build.compiler].filter(Boolean).join(', ') + ')'],
      ['DLPack header', build.dlpack_header_version],
      ['Platform', [platform.system, platform.release, platform.machine].filter(Boolean)
        .join(' ') + (platform.host ? ' (host ' + platform.host + ')' : '')],
      ['Python', (python.version || '?') +
        (python.executable ? EM + python.executable : '')],
      ['Devices', devicesText(env.devices)],
      ['Run', run ? when(run.started) + ', ' + seconds(run.duration_s) + ', seed ' +
        run.seed + ', ' + run.jobs + ' jobs, timeout ' + run.timeout_s + ' s' : null],
      ['Probes from', run && (run.probe_dirs || []).join(', ')],
      ['Selected', filters.length ? filters.join('; ') : 'everything (no filters)'],
    ]));
    box.append(el('h3', null, 'Libraries'), libraryTable(env.libraries));
    return box;
  }
  function renderHeader() {
    const tool = head.tool || {};
    const run = head.run || {};
    const env = head.environment || {};
    const python = env.python || {};
    const top = el('header', 'top');
    const wrap = el('div', 'wrap');
    wrap.append(el('h1', null, 'interopcheck report'));
    wrap.append(el('p', 'sub', 'interopcheck ' + (tool.version || '?') + DOT +
      (merged ? (head.environments || []).length + ' environments merged' + DOT +
        'first run ' : 'run ') + when(run.started) + DOT + seconds(run.duration_s) + DOT +
      'seed ' + run.seed + DOT + 'Python ' + (python.version || '?')));
    const totals = el('div', 'totals');
    totals.append(el('span', 'badge big', fmt(ncases) + ' cases'));
    const all = new Int32Array(nout);
    for (let i = 0; i < ncases; i++) all[cases.outcome[i]]++;
    for (const o of SEVERITY) {
      const index = outcomeIndex(o);
      if (index >= 0 && all[index]) totals.append(badge(o, all[index]));
    }
    wrap.append(totals);
    top.append(wrap);
    document.title = 'interopcheck report \u00b7 ' + when(run.started);
    return top;
  }
  function renderEnvironments() {
    const section = el('section', 'block wrap');
    if (merged && Array.isArray(head.environments)) {
      section.append(el('h2', null, 'Environments'));
      head.environments.forEach((e, n) => {
        section.append(environmentBlock(e.tool, e.run, e.environment || {}, false,
          'Environment ' + e.id));
      });
    } else {
      // closed: the page opens on the totals, the findings and the matrices
      section.append(environmentBlock(head.tool, head.run, head.environment || {}, false,
        'Environment and libraries'));
    }
    return section;
  }
  // --- filters bar
  const selects = {};
  let statusLine;
  function renderFilters() {
    const bar = el('div', 'filters');
    const form = el('form', 'wrap');
    form.setAttribute('role', 'search');
    form.addEventListener('submit', (e) => e.preventDefault());
    const usedAs = {producer: new Set(), consumer: new Set(), library: new Set(),
      severity: new Set()};
    for (let k = 0; k < ncells; k++) {
      usedAs.producer.add(cells.producer[k]);
      usedAs.consumer.add(cells.consumer[k]);
      usedAs.library.add(cells.producer[k]).add(cells.consumer[k]);
    }
    for (let i = 0; i < ncases; i++) usedAs.severity.add(cases.severity[i]);
    for (const [key, label, names] of FILTERS) {
      if (key === 'env' && !merged) continue;
      const select = el('select');
      select.name = key;
      select.append(el('option', null, 'all'));
      select.lastChild.value = '-1';
      names.forEach((name, index) => {
        if ((key === 'env' || key === 'severity') && index === 0) return;
        if (usedAs[key] && !usedAs[key].has(index)) return;
        const option = el('option', null, name);
        option.value = String(index);
        select.append(option);
      });
      select.addEventListener('change', () => {
        filter[key] = Number(select.value);
        update();
      });
      selects[key] = select;
      form.append(el('label', null, [label, select]));
    }
    const search = el('input');
    search.type = 'search';
    search.name = 'id';
    search.placeholder = 'part of a case id';
    let timer = 0;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        filter.id = search.value.trim().toLowerCase();
        update();
      }, 200);
    });
    selects.id = search;
    form.append(el('label', null, ['Case id contains', search]));
    const all = el('input');
    all.type = 'checkbox';
    all.name = 'all';
    all.addEventListener('change', () => {
      filter.all = all.checked;
      update();
    });
    selects.all = all;
    form.append(el('label', 'check', [all, 'Show libraries without cases']));
    const reset = el('button', null, 'Reset filters');
    reset.type = 'button';
    reset.addEventListener('click', () => {
      for (const [key] of FILTERS) {
        filter[key] = -1;
        if (selects[key]) selects[key].value = '-1';
      }
      filter.id = '';
      search.value = '';
      update();
    });
    form.append(reset);
    bar.append(form);
    statusLine = el('p', 'status wrap');
    statusLine.id = 'status';
    bar.append(statusLine);
    return bar;
  }
  function renderStatus() {
    const parts = [];
    for (const o of SEVERITY) {
      const index = outcomeIndex(o);
      if (index >= 0 && shownByOutcome[index])
        parts.push(fmt(shownByOutcome[index]) + ' ' + o);
    }
    statusLine.dataset.shown = String(shownTotal);
    statusLine.textContent = (filtering() ? 'Showing ' + fmt(shownTotal) + ' of ' +
      fmt(ncases) + ' cases' : 'All ' + fmt(ncases) + ' cases') +
      (parts.length ? ': ' + parts.join(', ') : '') + '.';
  }
  function renderLegend() {
    const box = el('section', 'block wrap');
    const about = 'One matrix per protocol and device: rows are producers, columns ' +
      'consumers; a cell shows passed/total (of the cases the filters leave) and its most ' +
      'severe other outcome; click it for its cases.' + (merged ? ' The environments are ' +
      'side by side: a line per environment in each cell, and \u2260 where they differ (or a ' +
      'pair is missing from one).' : '');
    const heading = el('h2', null, 'Matrices');
    heading.title = about;
    box.append(heading);
    const list = el('ul', 'legend');
    list.setAttribute('aria-label', 'Legend');
    for (const [key, mark, meaning] of CATEGORIES) {
      list.append(el('li', null, [el('span', 'swatch c-' + key, mark), meaning]));
    }
    // Closed, its marks in the summary line: the first matrix then starts on the first screen
    // (every cell's tooltip says the same in words).
    const legend = el('details', 'legend-box');
    legend.append(el('summary', null, ['Legend: ', ...CATEGORIES.map((c) =>
      el('span', 'swatch c-' + c[0], c[1]))]), el('p', 'note', about), list);
    box.append(legend);
    return box;
  }
  // --- matrices
  const matricesRoot = el('div', 'wrap');
  let selected = -1; // the cell whose cases are listed
  function groupTitle(g) {
    return data.protocols[g.protocol] + ' on ' + data.devices[g.device];
  }
  // Whether a pair's cells differ between the environments: one is missing, or their whole
  // outcome counts differ (whatever the filters leave).
  function pairDiffers(list) {
    // (index 0 of data.environments is the empty name of an unmerged report's cells)
    if (list.length !== data.environments.length - 1) return true;
    const key = (k) => Array.from(counts.subarray(k * nout, (k + 1) * nout)).join(',') + '/' +
      cellTotal[k];
    return list.some((k) => key(k) !== key(list[0]));
  }
  function cellLabel(k) {
    return data.protocols[cells.protocol[k]] + ': ' + data.libraries[cells.producer[k]] +
      ' \u2192 ' + data.libraries[cells.consumer[k]] + ' on ' +
      data.devices[cells.device[k]] +
      (merged ? ' (' + data.environments[cells.env[k]] + ')' : '');
  }
  function renderCell(k) {
    const button = el('button', 'cell');
    button.type = 'button';
    button.dataset.cell = String(k);
    button.dataset.producer = data.libraries[cells.producer[k]];
    button.dataset.consumer = data.libraries[cells.consumer[k]];
    if (merged) {
      button.dataset.env = data.environments[cells.env[k]];
      button.append(el('span', 'l0', data.environments[cells.env[k]]));
    }
    let tip;
    if (!cellTotal[k]) {
      button.classList.add('c-gap');
      button.dataset.category = 'gap';
      button.append(el('span', 'l1', 'n/a'), el('span', 'l2', 'no cases'));
      tip = cellLabel(k) + ': no cases. ' + text[cells.gap[k]];
    } else {
      const s = cellSummary(k);
      const cat = category(s);
      button.classList.add('c-' + cat);
      button.dataset.category = cat;
      button.dataset.passed = String(s.passed);
      button.dataset.total = String(s.total);
      if (!s.total) {
        button.append(el('span', 'l1', '0'), el('span', 'l2', 'no match'));
        tip = cellLabel(k) + ': none of its ' + fmt(cellTotal[k]) +
          ' cases matches the filters';
      } else {
        const worst = SEVERITY.find((o) => o !== 'pass' && s.byName[o]);
        const other = worst ? fmt(s.byName[worst]) + ' ' + SHORT[worst] : 'all pass';
        button.append(el('span', 'l1', s.passed + '/' + s.total),
          el('span', 'l2', MARKS[cat] + ' ' + other));
        tip = cellLabel(k) + ': ' + s.passed + ' of ' + s.total + ' passed (' +
          breakdown(s) + ')';
      }
    }
    button.title = shown(tip);
    button.setAttribute('aria-label', shown(tip));
    button.setAttribute('aria-pressed', k === selected ? 'true' : 'false');
    button.addEventListener('click', () => select(k === selected ? -1 : k));
    return button;
  }
  // Filters that select cases rather than cells: gaps, having no cases, never match them.
  const caseFiltering = () => filter.dtype >= 0 || filter.layout >= 0 ||
    filter.outcome >= 0 || filter.id !== '';
  function renderGroup(g) {
    const visible = g.cells.filter((k) => cellOk[k]);
    let matching = 0;
    let present = 0;
    for (const k of visible) {
      matching += cellSummary(k).total;
      present += cellTotal[k];
    }
    if (!visible.length || (caseFiltering() && !matching)) return null;
    const onlyGaps = present === 0;
    // Rows and columns: the libraries with cases here (or all of them, when asked or when
    // the matrix has nothing but gaps, whose reasons are then what it shows).
    const rows = new Set();
    const cols = new Set();
    let hiddenRows = new Set();
    let hiddenCols = new Set();
    for (const k of visible) {
      const wanted = filter.all || onlyGaps || cellSummary(k).total > 0;
      (wanted ? rows : hiddenRows).add(cells.producer[k]);
      (wanted ? cols : hiddenCols).add(cells.consumer[k]);
    }
    hiddenRows = [...hiddenRows].filter((r) => !rows.has(r));
    hiddenCols = [...hiddenCols].filter((c) => !cols.has(c));
    const order = (a, b) => a - b;
    const rowList = [...rows].sort(order);
    const colList = [...cols].sort(order);
    const section = el('section', 'matrix');
    section.dataset.protocol = data.protocols[g.protocol];
    section.dataset.device = data.devices[g.device];
    const details = el('details');
    details.open = !onlyGaps || filter.all;
    const summary = el('summary');
    let passed = 0;
    for (const k of visible) passed += cellSummary(k).passed;
    summary.append(el('h2', null, groupTitle(g)));
    summary.append(el('span', 'gsum', onlyGaps ? 'no cases: no pair of libraries ' +
      'exchanges this way here (open for the reasons)' : fmt(passed) + '/' + fmt(matching) +
      ' passed'));
    details.append(summary);
    let hiddenNote = null; // under the table, which comes first
    if (hiddenRows.length || hiddenCols.length) {
      hiddenNote = el('p', 'note', 'Hidden here, without ' + (filtering() ?
        'matching ' : '') + 'cases: ' + [hiddenRows.length ? hiddenRows.length +
        ' producer' + (hiddenRows.length > 1 ? 's' : '') : '', hiddenCols.length ?
        hiddenCols.length + ' consumer' + (hiddenCols.length > 1 ? 's' : '') : '']
        .filter(Boolean).join(' and ') +
        ' (\u201cShow libraries without cases\u201d shows them).');
    }
    const table = el('table', 'grid');
    table.setAttribute('aria-label', groupTitle(g) + ': producers by consumers');
    const hr = el('tr');
    hr.append(el('th', 'corner', 'producer \u2193 consumer \u2192'));
    for (const c of colList) {
      const th = el('th', null, el('span', null, data.libraries[c]));
      th.scope = 'col';
      hr.append(th);
    }
    table.append(el('thead', null, hr));
    const body = el('tbody');
    for (const r of rowList) {
      const tr = el('tr');
      const th = el('th', null, data.libraries[r]);
      th.scope = 'row';
      tr.append(th);
      for (const c of colList) {
        const list = g.lookup.get(r + ',' + c) || [];
        const td = el('td');
        for (const k of list) {
          if (cellOk[k]) td.append(renderCell(k));
        }
        if (merged && list.length && pairDiffers(list)) {
          td.classList.add('differs');
          const mark = el('span', 'differs', '\u2260');
          mark.title = 'differs between the environments';
          td.append(mark);
        }
        tr.append(td);
      }
      body.append(tr);
    }
    table.append(body);
    details.append(el('div', 'scroll', table));
    if (hiddenNote) details.append(hiddenNote);
    section.append(details);
    if (selected >= 0 && g.cells.includes(selected) && cellOk[selected]) {
      details.open = true;
      details.append(renderPanel(selected));
    }
    return section;
  }
  function renderMatrices() {
    matricesRoot.replaceChildren();
    let drawn = 0;
    for (const g of groups) {
      const section = renderGroup(g);
      if (section) {
        matricesRoot.append(section);
        drawn++;
      }
    }
    if (!drawn) {
      matricesRoot.append(el('p', 'note', filtering() ? 'No case matches the filters.' :
        'This report has no cases.'));
    }
  }
  // --- a cell's cases
  const PAGE = 200;
  function renderPanel(k) {
    const panel = el('div', 'panel');
    panel.id = 'panel';
    panel.tabIndex = -1;
    panel.setAttribute('role', 'region');
    panel.setAttribute('aria-label', 'Cases of ' + cellLabel(k));
    const top = el('header');
    const close = el('button', null, 'Close');
    close.type = 'button';
    close.addEventListener('click', () => select(-1));
    const link = el('a', 'permalink', 'Link');
    link.href = '#cell=' + k;
    link.title = 'A link to this cell of this report';
    top.append(el('h3', null, cellLabel(k)), link, close);
    panel.append(top);
    if (!cellTotal[k]) {
      panel.append(el('p', 'reason', 'No cases: ' + text[cells.gap[k]]));
      return panel;
    }
    const list = [];
    for (let i = 0; i < ncases; i++) {
      if (cases.cell[i] === k && casePasses(i)) list.push(i);
    }
    list.sort((a, b) => severityRank[cases.outcome[a]] - severityRank[cases.outcome[b]] ||
      cases.dtype[a] - cases.dtype[b] || cases.layout[a] - cases.layout[b] ||
      cases.variant[a] - cases.variant[b]);
    const s = cellSummary(k);
    panel.append(el('p', 'note', s.total ? fmt(s.passed) + ' of ' + fmt(s.total) +
      (filtering() ? ' matching' : '') + ' cases passed' + (breakdown(s) ? ': ' +
      breakdown(s) : '') + '. Below, failures come first; open a case for its checks.' :
      'None of its ' + fmt(cellTotal[k]) + ' cases matches the filters.'));
    panel.append(renderCauses(list));
    const ul = el('ul', 'cases');
    panel.append(ul);
    let opened = 0;
    function more(from) {
      for (const i of list.slice(from, from + PAGE)) {
        const failing = ['fail', 'crash', 'timeout', 'error', 'xpass']
          .includes(outcomes[cases.outcome[i]]);
        ul.append(el('li', null, renderCase(i, failing && opened++ < 1)));
      }
      if (list.length > from + PAGE) {
        const button = el('button', 'more', 'Show ' + fmt(Math.min(PAGE, list.length -
          from - PAGE)) + ' more of ' + fmt(list.length - from - PAGE));
        button.type = 'button';
        button.addEventListener('click', () => {
          button.parentNode.remove();
          more(from + PAGE);
        });
        ul.append(el('li', null, button));
      }
    }
    more(0);
    return panel;
  }
  // The outcomes of a cell other than pass, grouped by what they say: many cases of a cell
  // fail for one reason, and a person wants the reasons before the cases. Addresses differ
  // from case to case and would split a reason, so they are left out of the grouping.
  function renderCauses(list) {
    const byCause = new Map();
    for (const i of list) {
      const outcome = outcomes[cases.outcome[i]];
      if (outcome === 'pass') continue;
      const what = [expectedBecause(i), text[cases.rule[i]], text[cases.diagnostic[i]]]
        .filter(Boolean).join(EM).replace(/0x[0-9a-f]{5,}/gi, '0x\u2026');
      const key = cases.outcome[i] + ' ' + what;
      const cause = byCause.get(key) || {outcome, what, count: 0};
      cause.count++;
      byCause.set(key, cause);
    }
    const rank = (cause) => severityRank[outcomeIndex(cause.outcome)];
    const causes = [...byCause.values()].sort((a, b) => rank(a) - rank(b) ||
      b.count - a.count);
    const box = el('div', 'causes');
    if (!causes.length) return box;
    const SHOWN = 10;
    box.append(el('h4', null, 'By cause'));
    const table = el('table', 'causes');
    const body = el('tbody');
    for (const cause of causes.slice(0, SHOWN)) {
      const tr = el('tr');
      tr.append(el('td', null, badge(cause.outcome, cause.count)),
        el('td', 'what', clip(cause.what || '(no diagnostic)', 400)));
      body.append(tr);
    }
    table.append(body);
    box.append(table);
    if (causes.length > SHOWN) {
      box.append(el('p', 'note', 'and ' + (causes.length - SHOWN) + ' more causes, in the ' +
        'cases below'));
    }
    return box;
  }
  // An expected failure says first why it is expected: the expectations file's reason.
  function expectedBecause(i) {
    const e = expectations.get(i);
    return e ? 'expected: ' + text[e[2]] : '';
  }
  function renderCase(i, open) {
    const outcome = outcomes[cases.outcome[i]];
    const box = el('details', 'case');
    box.dataset.id = caseId(i);
    box.dataset.outcome = outcome;
    const brief = [expectedBecause(i), text[cases.rule[i]], text[cases.diagnostic[i]]]
      .filter(Boolean).join(EM);
    const summary = el('summary', null, [badge(outcome), el('code', 'id', caseId(i)),
      el('span', 'brief', clip(brief, 240))]);
    box.append(summary);
    let built = false;
    const build = () => {
      if (built) return;
      built = true;
      box.append(renderCaseBody(i));
    };
    // The body is built on the click that opens the case (before the browser opens it, so
    // it is there at once), or on any other opening, such as find-in-page.
    summary.addEventListener('click', build);
    box.addEventListener('toggle', () => {
      if (box.open) build();
    });
    if (open) {
      build();
      box.open = true;
    }
    return box;
  }
  function renderCaseBody(i) {
    const body = el('div', 'casebody');
    const kv = el('dl', 'kv');
    const add = (name, value) => {
      if (value === '' || value === null || value === undefined) return;
      kv.append(el('dt', null, name), el('dd', null, value));
    };
    add('Rule', text[cases.rule[i]]);
    if (text[cases.diagnostic[i]]) add('Diagnostic', longText(text[cases.diagnostic[i]]));
    add('Request', text[cases.request[i]] ? el('code', null, text[cases.request[i]]) : '');
    add('Export', text[cases.exported[i]] ? el('code', null, text[cases.exported[i]]) : '');
    add('Duration', cases.ms[i] ? cases.ms[i] + ' ms' : 'under 0.1 ms');
    const e = expectations.get(i);
    if (e) {
      const box = el('div', null, [el('code', null, text[e[1]]), ': ', text[e[2]],
        ' (its outcome without the expectation: ' + (outcomes[e[4]] || '?') + ')']);
      const link = text[e[3]];
      if (/^https?:\/\//.test(link)) {
        const a = el('a', null, link);
        a.href = link;
        a.rel = 'noopener noreferrer';
        box.append(' ', a);
      } else if (link) {
        box.append(' ', link);
      }
      add('Expectation', box);
    }
    body.append(kv);
    const table = el('table', 'checks');
    const hr = el('tr');
    for (const h of ['check', 'status', 'rule', 'note']) hr.append(el('th', null, h));
    table.append(el('thead', null, hr));
    const tbody = el('tbody');
    const value = cases.checks[i];
    const mask = Array.isArray(value) ? value[0] : value;
    const rows = [];
    data.checks.forEach((name, n) => {
      if (n < 31 && (mask & (1 << n))) rows.push([n, 'pass', '', '']);
    });
    if (Array.isArray(value)) {
      for (let j = 1; j + 3 < value.length; j += 4) {
        rows.push([value[j], data.statuses[value[j + 1]], text[value[j + 2]],
          text[value[j + 3]]]);
      }
    }
    rows.sort((a, b) => a[0] - b[0]);
    for (const [n, status, rule, note] of rows) {
      const tr = el('tr');
      tr.dataset.check = data.checks[n];
      tr.append(el('td', 'mono', data.checks[n]),
        el('td', 'st-' + status, (status === 'pass' ? CHECK : status === 'fail' ? CROSS :
          DASH) + ' ' + status), el('td', 'mono', rule), el('td', 'note', note));
      tbody.append(tr);
    }
    if (!rows.length) {
      const tr = el('tr');
      const td = el('td', 'note', 'No check ran: the case ended before the exchange.');
      td.colSpan = 4;
      tr.append(td);
      tbody.append(tr);
    }
    table.append(tbody);
    body.append(el('h4', null, 'Checks'), table);
    return body;
  }
  function select(k) {
    selected = k;
    renderMatrices();
    saveState();
    const panel = document.getElementById('panel');
    if (panel) {
      panel.focus({preventScroll: true});
      panel.scrollIntoView({block: 'nearest'});
    }
  }
  // --- state in the address (a link keeps its filters)
  function saveState() {
    const params = new URLSearchParams();
    for (const [key, , names] of FILTERS) {
      if (filter[key] >= 0) params.set(key, names[filter[key]]);
    }
    if (filter.id) params.set('id', filter.id);
    if (filter.all) params.set('all', '1');
    if (selected >= 0) params.set('cell', String(selected));
    if (targetFinding) params.set('finding', targetFinding);
    const hash = params.toString();
    history.replaceState(null, '', hash ? '#' + hash : location.pathname + location.search);
  }
  function loadState() {
    const params = new URLSearchParams(location.hash.slice(1));
    for (const [key, , names] of FILTERS) {
      const index = params.has(key) ? names.indexOf(params.get(key)) : -1;
      filter[key] = index;
      if (selects[key]) selects[key].value = String(index);
    }
    filter.id = params.get('id') || '';
    selects.id.value = filter.id;
    filter.all = params.get('all') === '1';
    selects.all.checked = filter.all;
    const cell = Number(params.get('cell'));
    selected = params.has('cell') && cell >= 0 && cell < ncells ? cell : -1;
    targetFinding = params.get('finding') || '';
  }
  let targetFinding = '';
  // --- findings: one row per cause, above the matrices
  function ruleLink(f) {
    if (!f.rule_link || !/^(https?|file):/.test(f.rule_link)) return f.rule;
    const a = el('a', null, f.rule);
    a.href = f.rule_link;
    return a;
  }
  function renderFindings() {
    const list = head.findings || [];
    const box = el('section', 'wrap findings');
    box.id = 'findings';
    if (!list.length) {
      box.append(el('h2', null, 'Findings'), el('p', null, 'No case failed, crashed or timed out.'));
      return box;
    }
    const bySeverity = {};
    for (const f of list) bySeverity[f.severity] = (bySeverity[f.severity] || 0) + 1;
    const title = el('h2', null, 'Findings (' + list.length + '): ' +
      Object.entries(bySeverity).map((e) => e[1] + ' ' + e[0]).join(DOT));
    box.append(title);
    // Said in tooltips, to keep the first screen for the findings themselves and the
    // matrices.
    const about = 'One entry per cause: the library at fault, the rule it broke and the ' +
      'severity; open one for its cases, an example and a reproducer to paste into the ' +
      'library\'s tracker.';
    title.title = about;
    list.forEach((f, n) => {
      const item = el('details', 'finding sev-' + f.severity);
      item.id = 'finding-' + f.id;
      const link = el('a', 'permalink', '#');
      link.href = '#finding=' + encodeURIComponent(f.id);
      link.title = 'A link to this finding';
      link.setAttribute('aria-label', 'Link to finding ' + f.id);
      const summary = el('summary', null, [
        el('span', 'sev', f.severity),
        el('span', 'count', String(f.count) + (f.count === 1 ? ' case' : ' cases')),
        el('code', 'fid', f.id),
        el('span', 'what', clip(f.diagnostic || '', 240)),
        link,
      ]);
      item.append(summary);
      const rows = [
        ['culprit', f.culprit + ' (the ' + f.side + ')'],
        ['rule', ruleLink(f)], ['check', f.check], ['example', f.example],
        ['cases', (f.cases || []).join(', ')],
      ];
      if (f.documented) rows.push(['documented', f.documented]);
      if (f.reproducer_error) rows.push(['reproducer', 'none: ' + f.reproducer_error]);
      item.append(facts(rows));
      if (f.reproducer) {
        item.append(el('h3', null, 'Reproducer'));
        item.append(el('pre', 'repro', f.reproducer));
      }
      // The first few show, so that the matrices start on the first screen; the rest wait
      // behind a button (a link to one of them shows them all).
      item.hidden = n >= FIRST_FINDINGS;
      box.append(item);
    });
    if (list.length > FIRST_FINDINGS) {
      const more = el('button', 'more', 'Show all ' + list.length + ' findings');
      more.type = 'button';
      more.id = 'more-findings';
      more.title = about;
      more.addEventListener('click', () => showAllFindings());
      box.append(more);
    }
    return box;
  }
  const FIRST_FINDINGS = 3;
  function showAllFindings() {
    for (const item of document.querySelectorAll('details.finding[hidden]')) item.hidden = false;
    const more = document.getElementById('more-findings');
    if (more) more.remove();
  }
  // A link to a finding (#finding=ID): it is shown, opened and scrolled to.
  function focusFinding() {
    if (!targetFinding) return;
    const item = document.getElementById('finding-' + targetFinding);
    if (!item) return;
    if (item.hidden) showAllFindings();
    item.open = true;
    item.scrollIntoView({block: 'start'});
  }
  function update() {
    recount();
    renderStatus();
    renderMatrices();
    saveState();
  }
  app.append(renderHeader(), renderEnvironments(), renderFindings(), renderFilters(),
    renderLegend(),
    matricesRoot);
  const footer = el('footer', 'wrap', 'Written by interopcheck ' +
    ((head.tool || {}).version || '?') + ' from the JSON report of the run. ' +
    'Case ids, rules and diagnostics are those of the report.');
  app.append(footer);
  loadState();
  recount();
  renderStatus();
  renderMatrices();
  focusFinding();
  window.addEventListener('hashchange', () => {
    loadState();
    update();
    focusFinding();
    const panel = document.getElementById('panel');
    if (panel && !targetFinding) panel.scrollIntoView({block: 'nearest'});
  });
  document.documentElement.dataset.ready = '1';
  const drawn = performance.now() - started;
  document.documentElement.dataset.renderMs = String(Math.round(drawn));
})();
