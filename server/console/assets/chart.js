// A small SVG line chart of time series: one or more series of {t, v}
// points over a fixed time window ending now, with a y axis scaled to the
// largest value, gridlines and a legend.

const NS = 'http://www.w3.org/2000/svg';
const W = 480;
const H = 150;
const PAD = { l: 52, r: 10, t: 10, b: 22 };

function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// fmt shortens a number: 1234 → 1.2k.
export function fmt(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
  if (a >= 1e3) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 10 || v === 0) return v.toFixed(0);
  return v.toFixed(1);
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// lineChart draws series [{name, cls, points: [{t, v}]}] over the last
// windowMs before nowMs into a new <svg>, labelled by title.
export function lineChart(title, series, nowMs, windowMs) {
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img' });
  const last = series.map((s) => `${s.name} ${fmt(s.points.length ? s.points[s.points.length - 1].v : 0)}`).join(', ');
  svg.setAttribute('aria-label', `${title}: now ${last}`);
  svg.appendChild(el('title', {}, `${title} (last ${Math.round(windowMs / 60000)} minutes)`));
  const from = nowMs - windowMs;
  let max = 0;
  for (const s of series) for (const p of s.points) if (p.t >= from) max = Math.max(max, p.v);
  max = niceMax(max);
  const x = (t) => PAD.l + ((t - from) / windowMs) * (W - PAD.l - PAD.r);
  const y = (v) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  for (const f of [0, 0.5, 1]) {
    const yy = y(max * f);
    svg.appendChild(el('line', { x1: PAD.l, x2: W - PAD.r, y1: yy, y2: yy, class: 'grid' }));
    svg.appendChild(el('text', { x: PAD.l - 6, y: yy + 4, 'text-anchor': 'end', class: 'axis' }, fmt(max * f)));
  }
  const minutes = Math.round(windowMs / 60000);
  svg.appendChild(el('text', { x: PAD.l, y: H - 6, class: 'axis' }, `−${minutes} min`));
  svg.appendChild(el('text', { x: W - PAD.r, y: H - 6, 'text-anchor': 'end', class: 'axis' }, 'now'));
  for (const s of series) {
    const pts = s.points.filter((p) => p.t >= from).map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
    if (pts.length === 1) pts.push(pts[0]);
    if (pts.length) svg.appendChild(el('polyline', { points: pts.join(' '), class: `series ${s.cls}` }));
  }
  return svg;
}
