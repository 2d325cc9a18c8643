// The console's page logic: tabs, the SQL editor's runs (statements go to
// the REST API: /ksql, /query-stream, /query for PRINT), the catalog and
// the queries with their charts and topologies.

import { Editor } from './editor.js';
import { split, lineCol, firstWords, isPush } from './sql.js';
import { lineChart, fmt } from './chart.js';
import { draw } from './graph.js';

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const WINDOW_MS = 15 * 60 * 1000;
const MAX_ROWS = 1000;

async function api(name) {
  const r = await fetch(`/console/api/${name}`, { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).message || r.statusText);
  return r.json();
}

// props are the properties SET in the editor: sent with every statement,
// as ksqlDB's CLI does (each REST request is a session of its own).
const props = {};

async function ksql(text) {
  const r = await fetch('/ksql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ ksql: text + ';', streamsProperties: props }),
  });
  const body = await r.json();
  if (!r.ok) throw Object.assign(new Error(body.message || r.statusText), body);
  return body;
}

function table(cols, rows, cls = '') {
  const head = cols.map((c) => `<th scope="col">${esc(c)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((v) => `<td class="${cls}">${esc(typeof v === 'object' && v !== null ? JSON.stringify(v) : v)}</td>`).join('')}</tr>`).join('');
  return `<div class="table-wrap" tabindex="0"><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

// ---------------------------------------------------------------- tabs

const tabs = ['editor', 'catalog', 'queries'];
function showTab(name) {
  if (!tabs.includes(name)) name = 'editor';
  for (const t of tabs) {
    $(`#${t}`).hidden = t !== name;
    if (t === name) $(`#tab-${t}`).setAttribute('aria-current', 'page');
    else $(`#tab-${t}`).removeAttribute('aria-current');
  }
  if (name === 'catalog') loadCatalog();
  if (name === 'queries') loadQueries();
  current = name;
}
let current = 'editor';
window.addEventListener('hashchange', () => showTab(location.hash.slice(1)));

// ---------------------------------------------------------------- editor

let running = null; // {controller, queryId}
const editor = new Editor($('.code-editor'), { onRun: runAll, onStop: stop });

async function refreshWords() {
  try { editor.setWords(await api('completions')); editor.render(); } catch { /* keep the old words */ }
}

function status(msg) { $('#run-status').textContent = msg; }

function showError(stmt, err) {
  const box = $('#error');
  let where = '';
  if (err.line) {
    // line:column within the statement → within the editor.
    const base = lineCol(editor.value, stmt.start);
    const line = base.line + err.line - 1;
    const col = err.line === 1 ? base.col + err.column - 1 : err.column;
    where = `Error at line ${line}:${col}: `;
    let off = 0;
    for (let l = 1; l < line; l++) off = editor.value.indexOf('\n', off) + 1;
    editor.markError(off + col - 1, line);
  }
  // The server's message starts with the statement's own line:column.
  const msg = (err.message || String(err)).replace(/^line \d+:\d+: /, '');
  box.textContent = where + msg;
  box.hidden = false;
}

async function runAll() {
  if (running) return;
  $('#error').hidden = true;
  const stmts = split(editor.value);
  if (!stmts.length) { status('Nothing to run.'); return; }
  $('#results').innerHTML = '';
  let changed = false;
  for (const stmt of stmts) {
    const [w1] = firstWords(stmt.text, 1);
    try {
      if (w1 === 'SELECT') await runQuery(stmt);
      else if (w1 === 'PRINT') await runPrint(stmt.text, addResult(stmt.text));
      else {
        await runStatement(stmt);
        changed = changed || ['CREATE', 'DROP', 'TERMINATE', 'INSERT'].includes(w1);
        remember(stmt.text, w1);
      }
    } catch (err) {
      showError(stmt, err);
      status('Failed.');
      break;
    }
  }
  if (changed) refreshWords();
}

// remember keeps a SET or UNSET that succeeded for the next statements.
function remember(text, verb) {
  const m = text.match(/^\s*(?:SET|UNSET)\s+'([^']+)'(?:\s*=\s*'((?:[^']|'')*)')?/i);
  if (!m) return;
  if (verb === 'SET' && m[2] !== undefined) props[m[1]] = m[2].replace(/''/g, "'");
  else if (verb === 'UNSET') delete props[m[1]];
  if (m[1] === 'auto.offset.reset' && props[m[1]]) $('#offset').value = props[m[1]];
  const n = Object.keys(props).length;
  $('#props').textContent = n ? `Session: ${Object.entries(props).map(([k, v]) => `${k}=${v}`).join(', ')}` : '';
}

function addResult(title) {
  const div = document.createElement('div');
  div.className = 'result';
  div.innerHTML = `<h3>${esc(title.length > 120 ? title.slice(0, 119) + '…' : title)}</h3><div class="body"></div>`;
  $('#results').appendChild(div);
  return $('.body', div);
}

async function runStatement(stmt) {
  status('Running…');
  const entities = await ksql(stmt.text);
  const out = addResult(stmt.text);
  for (const e of entities) out.insertAdjacentHTML('beforeend', renderEntity(e));
  status('Done.');
}

// renderEntity renders one ksqlDB entity from /ksql.
function renderEntity(e) {
  switch (e['@type']) {
    case 'currentStatus':
      return `<p>${esc(e.commandStatus.message)}</p>`;
    case 'streams': case 'tables': {
      const l = e.streams || e.tables;
      return table(['Name', 'Kafka topic', 'Key format', 'Value format', 'Windowed'], l.map((s) => [s.name, s.topic, s.keyFormat, s.valueFormat, s.isWindowed]));
    }
    case 'queries':
      return table(['Query ID', 'Status', 'Sink', 'SQL'], e.queries.map((q) => [q.id, q.state, q.sinks.join(', '), q.queryString]));
    case 'kafka_topics':
      return table(['Topic', 'Partitions'], e.topics.map((t) => [t.name, t.replicaInfo.length]));
    case 'properties':
      return table(['Property', 'Value'], e.properties.map((p) => [p.name, p.value]));
    case 'function_names':
      return table(['Function', 'Type'], e.functions.map((f) => [f.name, f.type]));
    case 'describe_function':
      return `<p>${esc(e.description)}</p>` + table(['Arguments', 'Returns'], e.functions.map((f) => [f.argumentTypes.join(', '), f.returnType]));
    case 'sourceDescription': {
      const d = e.sourceDescription;
      return `<dl class="facts"><dt>Type</dt><dd>${esc(d.type)}</dd><dt>Topic</dt><dd>${esc(d.topic)}</dd><dt>Formats</dt><dd>${esc(d.keyFormat)} / ${esc(d.valueFormat)}</dd></dl>` +
        table(['Column', 'Type'], d.fields.map((f) => [f.name + (f.type === 'KEY' ? ' (key)' : ''), f.schema ? f.schema.type : '']));
    }
    case 'queryDescription':
      return `<pre class="plan">${esc(e.queryDescription.executionPlan)}</pre>`;
    case 'table':
      return table(e.columnNames, e.rows);
  }
  return `<pre class="plan">${esc(JSON.stringify(e, null, 2))}</pre>`;
}

// readLines calls line for each line of a streamed response body.
async function readLines(resp, line) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (l) line(l);
    }
  }
  if (buf.trim()) line(buf.trim());
}

function setRunning(r) {
  running = r;
  $('#stop').disabled = !r;
  $('#run').disabled = !!r;
}

async function runQuery(stmt) {
  const push = isPush(stmt.text);
  const controller = new AbortController();
  setRunning({ controller, queryId: null });
  status(push ? 'Streaming… (Esc stops)' : 'Running…');
  const out = addResult(stmt.text);
  const qprops = push ? { ...props, 'auto.offset.reset': $('#offset').value } : { ...props };
  let resp;
  try {
    resp = await fetch('/query-stream', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/vnd.ksqlapi.delimited.v1' },
      body: JSON.stringify({ sql: stmt.text + ';', properties: qprops }),
      signal: controller.signal,
    });
    if (!resp.ok) {
      const body = await resp.json();
      throw Object.assign(new Error(body.message), body);
    }
    let cols = null;
    let tbody = null;
    let count = 0;
    let failure = null;
    await readLines(resp, (l) => {
      const v = JSON.parse(l);
      if (!cols) {
        cols = v.columnNames || [];
        running.queryId = v.queryId;
        out.innerHTML = `<p class="muted rows-count" aria-live="off">0 rows</p>` + table(cols, []);
        tbody = $('tbody', out);
        return;
      }
      if (!Array.isArray(v)) {
        if (v.message) failure = Object.assign(new Error(v.message), v);
        return;
      }
      count++;
      const tr = document.createElement('tr');
      tr.innerHTML = v.map((c) => `<td>${esc(typeof c === 'object' && c !== null ? JSON.stringify(c) : c)}</td>`).join('');
      tbody.appendChild(tr);
      if (tbody.children.length > MAX_ROWS) tbody.firstElementChild.remove();
      $('.rows-count', out).textContent = `${count} row${count === 1 ? '' : 's'}`;
    });
    if (failure) throw failure;
    const rows = `${count} row${count === 1 ? '' : 's'}`;
    status(push ? `Stopped after ${rows}.` : `${rows}.`);
  } catch (err) {
    if (err.name === 'AbortError') { status('Stopped.'); return; }
    throw err;
  } finally {
    setRunning(null);
  }
}

async function stop() {
  if (!running) return;
  const { controller, queryId } = running;
  if (queryId) {
    fetch('/close-query', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ queryId }) }).catch(() => {});
  }
  controller.abort();
}

// runPrint streams PRINT's lines into out, keeping the last 200. It ends
// when the PRINT ends or when stop (a function it returns) is called.
function startPrint(text, out) {
  const controller = new AbortController();
  out.innerHTML = '<div class="log" tabindex="0" aria-label="Records"></div>';
  const log = $('.log', out);
  const done = (async () => {
    const resp = await fetch('/query', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ksql: text + ';', streamsProperties: props }),
      signal: controller.signal,
    });
    if (!resp.ok) {
      const body = await resp.json();
      throw Object.assign(new Error(body.message), body);
    }
    await readLines(resp, (l) => {
      const div = document.createElement('div');
      div.textContent = l;
      log.appendChild(div);
      if (log.children.length > 200) log.firstElementChild.remove();
      log.scrollTop = log.scrollHeight;
    });
  })().catch((err) => { if (err.name !== 'AbortError') throw err; });
  return { stop: () => controller.abort(), done };
}

async function runPrint(text, out) {
  const p = startPrint(text, out);
  setRunning({ controller: { abort: p.stop }, queryId: null });
  status('Printing… (Esc stops)');
  try { await p.done; status('Stopped.'); } finally { setRunning(null); }
}

$('#run').addEventListener('click', runAll);
$('#stop').addEventListener('click', stop);
// Esc stops a running query from anywhere on the page (the editor handles
// its own Esc: it first closes the completion list).
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && running && e.target !== $('#sql') && !$('#confirm').open) stop();
});

// ---------------------------------------------------------------- catalog

let printing = null;

async function loadCatalog() {
  const list = $('#sources');
  try {
    const sources = await api('catalog');
    list.innerHTML = sources.length ? '' : '<p class="muted">No streams or tables yet. Create one in the SQL editor.</p>';
    for (const s of sources) {
      const card = document.createElement('div');
      card.className = 'card';
      const key = s.columns.filter((c) => c.key).map((c) => c.name).join(', ') || '(none)';
      card.innerHTML = `<h3><button type="button" class="link" data-source="${esc(s.name)}">${esc(s.name)}</button>
        <span class="badge UNKNOWN">${esc(s.kind)}</span></h3>
        <dl class="facts"><dt>Topic</dt><dd>${esc(s.topic)} (${s.partitions} partition${s.partitions === 1 ? '' : 's'})</dd>
        <dt>Key</dt><dd>${esc(key)}</dd><dt>Formats</dt><dd>key ${esc(s.keyFormat)}, value ${esc(s.valueFormat)}${s.windowType ? ', windowed ' + esc(s.windowType) : ''}</dd>
        <dt>Columns</dt><dd>${s.columns.map((c) => `${esc(c.name)} <span class="muted">${esc(c.type)}</span>`).join(', ')}</dd></dl>`;
      list.appendChild(card);
    }
  } catch (err) {
    list.innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

$('#sources').addEventListener('click', (e) => {
  const b = e.target.closest('[data-source]');
  if (b) showSource(b.dataset.source);
});

async function showSource(name) {
  if (printing) { printing.stop(); printing = null; }
  const box = $('#source-detail');
  try {
    const s = await api(`source?name=${encodeURIComponent(name)}`);
    box.innerHTML = `<div class="card"><h3>DESCRIBE EXTENDED ${esc(s.name)}</h3>${table(['Property', 'Value'], s.extended || [])}
      <div class="toolbar"><button type="button" id="print">Print topic ${esc(s.topic)}</button>
      <button type="button" id="print-stop" class="secondary" disabled>Stop printing</button></div><div id="print-out"></div></div>`;
    $('h3', box).tabIndex = -1;
    $('h3', box).focus();
    $('#print').addEventListener('click', () => {
      if (printing) printing.stop();
      printing = startPrint(`PRINT '${s.topic.replace(/'/g, "''")}' FROM BEGINNING`, $('#print-out'));
      $('#print-stop').disabled = false;
      printing.done.catch((err) => { $('#print-out').textContent = err.message; });
    });
    $('#print-stop').addEventListener('click', () => {
      if (printing) { printing.stop(); printing = null; }
      $('#print-stop').disabled = true;
    });
  } catch (err) {
    box.innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

// ---------------------------------------------------------------- queries

const openPlans = new Set();
const logs = new Map(); // query ID → {stop, entries}

async function loadQueries() {
  const box = $('#query-list');
  let qs;
  let hist;
  try {
    [qs, hist] = await Promise.all([api('queries'), api('history')]);
  } catch (err) {
    box.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    return;
  }
  if (!qs.length) { box.innerHTML = '<p class="muted">No persistent queries. CREATE STREAM … AS SELECT starts one.</p>'; return; }
  const seen = new Set();
  const now = Date.now();
  for (const q of qs) {
    seen.add(q.id);
    let card = box.querySelector(`[data-query="${CSS.escape(q.id)}"]`);
    if (!card) {
      card = document.createElement('div');
      card.className = 'card';
      card.dataset.query = q.id;
      card.innerHTML = `<h3><span class="qid">${esc(q.id)}</span> <span class="badge"></span></h3>
        <p class="state-detail"></p>
        <dl class="facts"><dt>Writes</dt><dd>${esc(q.sink || '(none)')} ${q.sinkTopic ? '(topic ' + esc(q.sinkTopic) + ')' : ''}</dd>
        <dt>Reads</dt><dd>${esc((q.sources || []).join(', '))}</dd><dt>SQL</dt><dd><code>${esc(q.sql)}</code></dd>
        <dt>Now</dt><dd class="now"></dd></dl>
        <div class="legend"><span class="in">records in/s</span><span class="out">records out/s</span><span class="lag">consumer lag</span></div>
        <div class="charts"></div>
        <div class="toolbar">
          <button type="button" class="secondary" data-act="plan" aria-expanded="false">Topology</button>
          <button type="button" class="secondary" data-act="log" aria-expanded="false">Processing log</button>
          <button type="button" class="danger" data-act="terminate">Terminate</button>
        </div>
        <div class="plan-box"></div><div class="log-box"></div>`;
      box.appendChild(card);
    }
    const st = $('.badge', card);
    st.className = `badge ${q.state}`;
    st.textContent = q.state;
    let detail = '';
    if (q.state === 'FAILED' && q.status && q.status.error) detail = `Error: ${q.status.error}`;
    $('.state-detail', card).textContent = detail;
    if (q.state === 'RESTORING' && q.latest) {
      $('.state-detail', card).innerHTML = `Restoring state: <progress max="${q.latest.restoreTotal}" value="${q.latest.restored}"></progress> ${fmt(q.latest.restored)} of ${fmt(q.latest.restoreTotal)} records`;
    }
    const l = q.latest || { inRate: 0, outRate: 0, lag: 0 };
    const s = q.status || {};
    $('.now', card).textContent = `${fmt(l.inRate)} in/s, ${fmt(l.outRate)} out/s, lag ${fmt(l.lag)}; totals ${s.recordsIn ?? 0} in, ${s.recordsOut ?? 0} out, ${s.badRecords ?? 0} bad records`;
    const pts = hist.queries[q.id] || [];
    const charts = $('.charts', card);
    charts.replaceChildren(
      lineChart(`Records per second of ${q.id}`, [
        { name: 'in', cls: 'in', points: pts.map((p) => ({ t: p.t, v: p.inRate })) },
        { name: 'out', cls: 'out', points: pts.map((p) => ({ t: p.t, v: p.outRate })) },
      ], now, WINDOW_MS),
      lineChart(`Consumer lag of ${q.id}`, [{ name: 'lag', cls: 'lag', points: pts.map((p) => ({ t: p.t, v: p.lag })) }], now, WINDOW_MS),
    );
    charts.dataset.points = String(pts.length);
    if (openPlans.has(q.id) && !$('.plan-box', card).childElementCount) showPlan(q.id, card);
  }
  for (const card of [...box.querySelectorAll('[data-query]')]) {
    if (seen.has(card.dataset.query)) continue;
    const id = card.dataset.query;
    if (logs.has(id)) { logs.get(id).stop(); logs.delete(id); }
    openPlans.delete(id);
    card.remove();
  }
}

async function showPlan(id, card) {
  const boxEl = $('.plan-box', card);
  try {
    const p = await api(`plan?id=${encodeURIComponent(id)}`);
    boxEl.innerHTML = '<div class="topology-wrap" tabindex="0"></div><details><summary>EXPLAIN text</summary><pre class="plan"></pre></details>';
    if (p.graph) $('.topology-wrap', boxEl).appendChild(draw(p.graph, `Topology of ${id}`));
    $('pre', boxEl).textContent = p.text;
  } catch (err) {
    boxEl.innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

function toggleLog(id, card) {
  const boxEl = $('.log-box', card);
  if (logs.has(id)) {
    logs.get(id).stop();
    logs.delete(id);
    boxEl.innerHTML = '';
    return false;
  }
  boxEl.innerHTML = '<h3>Latest processing log entries</h3><div class="table-holder"><p class="muted">Waiting for entries…</p></div>';
  const controller = new AbortController();
  const entries = [];
  logs.set(id, { stop: () => controller.abort() });
  (async () => {
    const resp = await fetch('/query-stream', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/vnd.ksqlapi.delimited.v1' },
      body: JSON.stringify({ sql: `SELECT TIME, TOPIC, PARTITION, \`OFFSET\`, ERROR FROM PROCESSING_LOG WHERE QUERY = '${id.replace(/'/g, "''")}' EMIT CHANGES;`, properties: { 'auto.offset.reset': 'earliest' } }),
      signal: controller.signal,
    });
    let header = null;
    await readLines(resp, (l) => {
      const v = JSON.parse(l);
      if (!header) { header = v; return; }
      if (!Array.isArray(v)) return;
      entries.push(v);
      if (entries.length > 20) entries.shift();
      $('.table-holder', boxEl).innerHTML = table(header.columnNames || [], entries.slice().reverse(), 'mono');
    });
  })().catch((err) => { if (err.name !== 'AbortError') $('.table-holder', boxEl).textContent = err.message; });
  return true;
}

$('#query-list').addEventListener('click', async (e) => {
  const b = e.target.closest('[data-act]');
  if (!b) return;
  const card = b.closest('[data-query]');
  const id = card.dataset.query;
  if (b.dataset.act === 'plan') {
    if (openPlans.has(id)) {
      openPlans.delete(id);
      $('.plan-box', card).innerHTML = '';
      b.setAttribute('aria-expanded', 'false');
    } else {
      openPlans.add(id);
      b.setAttribute('aria-expanded', 'true');
      showPlan(id, card);
    }
  } else if (b.dataset.act === 'log') {
    b.setAttribute('aria-expanded', String(toggleLog(id, card)));
  } else if (b.dataset.act === 'terminate') {
    const dlg = $('#confirm');
    $('#confirm-text').textContent = `TERMINATE ${id} stops the query for good; its sink keeps what it wrote.`;
    dlg.returnValue = '';
    dlg.showModal();
    dlg.addEventListener('close', async () => {
      if (dlg.returnValue !== 'ok') { b.focus(); return; }
      try {
        await ksql(`TERMINATE ${id}`);
        status(`${id} terminated.`);
      } catch (err) {
        alert(err.message);
      }
      loadQueries();
    }, { once: true });
  }
});

// ---------------------------------------------------------------- start

async function start() {
  refreshWords();
  showTab(location.hash.slice(1) || 'editor');
  try {
    const info = await (await fetch('/info')).json();
    const si = info.KsqlServerInfo || {};
    $('#server').textContent = [si.version, si.ksqlServiceId && `service ${si.ksqlServiceId}`].filter(Boolean).join(' · ');
  } catch { /* no info */ }
  setInterval(() => { if (current === 'queries' && !document.hidden) loadQueries(); }, 2000);
}
start();
