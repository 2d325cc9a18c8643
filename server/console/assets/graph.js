// Draws a query's topology (engine.Graph: sub-topologies of processor
// nodes, stores with their changelogs, the topics between them) as an SVG
// with a layered layout (see layout), each sub-topology framed.

const NS = 'http://www.w3.org/2000/svg';
const NODE_W = 200;
const NODE_H = 44;
const GAP_X = 36;
const GAP_Y = 44;
const MARGIN = 24;

function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

// vertices returns the drawable vertices and edges of a graph.
export function build(graph) {
  const vs = new Map(); // key → {key, kind, label, sub, detail, cls}
  const edges = []; // [from, to, dashed]
  const add = (key, v) => { if (!vs.has(key)) vs.set(key, { key, ...v }); return key; };
  const stores = new Map((graph.stores || []).map((s) => [s.name, s]));
  for (const st of graph.subTopologies || []) {
    for (const n of st.nodes) {
      const key = `n${n.id}`;
      add(key, { kind: n.kind, label: n.name, sub: st.id, detail: n.detail, cls: 'node' });
      for (const i of n.inputs) edges.push([`n${i}`, key, false]);
      if (n.readsTopic) {
        const t = add(`t:${n.readsTopic}`, { kind: n.repartition ? 'repartition topic' : 'topic', label: n.readsTopic, sub: -1, detail: n.readsTopic, cls: n.repartition ? 'topic repartition' : 'topic' });
        edges.push([t, key, false]);
      }
      if (n.writesTopic) {
        const t = add(`t:${n.writesTopic}`, { kind: n.repartition ? 'repartition topic' : 'topic', label: n.writesTopic, sub: -1, detail: n.writesTopic, cls: n.repartition ? 'topic repartition' : 'topic' });
        edges.push([key, t, false]);
      }
      for (const s of n.stores) {
        const spec = stores.get(s) || { name: s, kind: '', changelog: '' };
        const k = add(`s:${s}`, { kind: `${spec.kind} store`, label: s, sub: st.id, detail: `store ${s} (${spec.kind}), changelog: ${spec.changelog}`, cls: 'store', changelog: spec.changelog });
        edges.push([key, k, true]);
      }
    }
  }
  return { vs, edges };
}

// layout places the vertices: it sets layer, x and y on each. Layers
// come from the longest path to a vertex. Each sub-topology gets a band of
// columns as wide as its widest layer, to the right of the bands of the
// sub-topologies that share layers with it, so that frames never overlap;
// within a band, a layer's vertices are ordered by the mean column of
// their predecessors. Topics sit at the mean column of their neighbours,
// moved right until they collide with nothing.
export function layout({ vs, edges }) {
  const preds = new Map([...vs.keys()].map((k) => [k, []]));
  const succs = new Map([...vs.keys()].map((k) => [k, []]));
  for (const [a, b] of edges) {
    if (vs.has(a) && vs.has(b)) { preds.get(b).push(a); succs.get(a).push(b); }
  }
  const layer = new Map();
  const depth = (k, seen = new Set()) => {
    if (layer.has(k)) return layer.get(k);
    if (seen.has(k)) return 0;
    seen.add(k);
    let d = 0;
    for (const p of preds.get(k)) d = Math.max(d, depth(p, seen) + 1);
    layer.set(k, d);
    return d;
  };
  for (const k of vs.keys()) depth(k);
  for (const [k, d] of layer) vs.get(k).layer = d;

  // Sub-topology bands.
  const subs = new Map(); // id → {min, max, perLayer: Map(layer → [keys])}
  for (const v of vs.values()) {
    if (v.sub < 0) continue;
    const s = subs.get(v.sub) || { min: Infinity, max: -Infinity, perLayer: new Map() };
    s.min = Math.min(s.min, v.layer); s.max = Math.max(s.max, v.layer);
    if (!s.perLayer.has(v.layer)) s.perLayer.set(v.layer, []);
    s.perLayer.get(v.layer).push(v.key);
    subs.set(v.sub, s);
  }
  const placed = [];
  const col = new Map();
  for (const id of [...subs.keys()].sort((a, b) => a - b)) {
    const s = subs.get(id);
    s.width = Math.max(...[...s.perLayer.values()].map((l) => l.length));
    s.start = 0;
    for (const o of placed) {
      if (o.min <= s.max && s.min <= o.max) s.start = Math.max(s.start, o.start + o.width);
    }
    placed.push(s);
    const layers = [...s.perLayer.keys()].sort((a, b) => a - b);
    const place = (l) => {
      const keys = s.perLayer.get(l);
      keys.forEach((k, i) => col.set(k, s.start + (s.width - keys.length) / 2 + i));
    };
    layers.forEach(place);
    for (let sweep = 0; sweep < 2; sweep++) {
      for (const l of layers) {
        const mean = (k) => {
          const ps = preds.get(k).filter((p) => col.has(p));
          return ps.length ? ps.reduce((sum, p) => sum + col.get(p), 0) / ps.length : col.get(k);
        };
        s.perLayer.get(l).sort((a, b) => mean(a) - mean(b));
        place(l);
      }
    }
  }
  // Topics, in layer order so that a topic's predecessors have columns.
  const topics = [...vs.values()].filter((v) => v.sub < 0).sort((a, b) => a.layer - b.layer);
  for (const t of topics) {
    const near = [...preds.get(t.key), ...succs.get(t.key)].filter((k) => col.has(k));
    let c = near.length ? near.reduce((sum, k) => sum + col.get(k), 0) / near.length : 0;
    const taken = [...vs.values()].filter((v) => v !== t && v.layer === t.layer && col.has(v.key)).map((v) => col.get(v.key));
    for (let moved = true; moved;) {
      moved = false;
      for (const o of taken) {
        if (Math.abs(o - c) < 1) { c = o + 1; moved = true; }
      }
    }
    col.set(t.key, c);
  }
  const min = Math.min(...col.values());
  let widest = 0;
  let deepest = 0;
  for (const v of vs.values()) {
    const c = col.get(v.key) - min;
    widest = Math.max(widest, c + 1);
    deepest = Math.max(deepest, v.layer + 1);
    v.x = MARGIN + c * (NODE_W + GAP_X);
    v.y = MARGIN + 20 + v.layer * (NODE_H + GAP_Y);
  }
  return {
    width: MARGIN * 2 + widest * (NODE_W + GAP_X) - GAP_X + 20,
    height: MARGIN * 2 + 20 + deepest * (NODE_H + GAP_Y) - GAP_Y,
  };
}

// draw returns an <svg> of the topology graph.
export function draw(graph, title) {
  const g = build(graph);
  const size = layout(g);
  const svg = el('svg', { viewBox: `0 0 ${size.width} ${size.height}`, class: 'topology', role: 'img', width: size.width, height: size.height });
  svg.appendChild(el('title', {}, title));
  const defs = el('defs', {});
  const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.appendChild(el('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  // Sub-topology frames.
  const subs = new Map();
  for (const v of g.vs.values()) {
    if (v.sub < 0) continue;
    const b = subs.get(v.sub) || { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
    b.x1 = Math.min(b.x1, v.x); b.y1 = Math.min(b.y1, v.y);
    b.x2 = Math.max(b.x2, v.x + NODE_W); b.y2 = Math.max(b.y2, v.y + NODE_H);
    subs.set(v.sub, b);
  }
  for (const [id, b] of subs) {
    svg.appendChild(el('rect', { x: b.x1 - 10, y: b.y1 - 22, width: b.x2 - b.x1 + 20, height: b.y2 - b.y1 + 32, rx: 8, class: 'subtopology' }));
    // Right-aligned: the edges run down the middle of the nodes.
    svg.appendChild(el('text', { x: b.x2 + 4, y: b.y1 - 8, 'text-anchor': 'end', class: 'sublabel' }, `Sub-topology ${id}`));
  }
  for (const [a, b, dashed] of g.edges) {
    const va = g.vs.get(a);
    const vb = g.vs.get(b);
    if (!va || !vb) continue;
    const x1 = va.x + NODE_W / 2;
    const y1 = va.y + NODE_H;
    const x2 = vb.x + NODE_W / 2;
    const y2 = vb.y;
    const my = (y1 + y2) / 2;
    svg.appendChild(el('path', { d: `M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2}`, class: dashed ? 'edge store-edge' : 'edge', 'marker-end': 'url(#arrow)' }));
  }
  for (const v of g.vs.values()) {
    const grp = el('g', { class: `vertex ${v.cls}`, tabindex: '0', 'aria-label': `${v.kind} ${v.label}: ${v.detail}` });
    grp.appendChild(el('title', {}, v.detail));
    const shape = v.cls.startsWith('topic')
      ? el('rect', { x: v.x, y: v.y, width: NODE_W, height: NODE_H, rx: NODE_H / 2 })
      : el('rect', { x: v.x, y: v.y, width: NODE_W, height: NODE_H, rx: v.cls === 'store' ? 2 : 6 });
    grp.appendChild(shape);
    grp.appendChild(el('text', { x: v.x + NODE_W / 2, y: v.y + 18, 'text-anchor': 'middle', class: 'vkind' }, clip(v.kind, 30)));
    const second = v.cls === 'store' && v.changelog ? `${v.label} → ${v.changelog}` : v.label;
    grp.appendChild(el('text', { x: v.x + NODE_W / 2, y: v.y + 35, 'text-anchor': 'middle', class: 'vlabel' }, clip(second, 30)));
    svg.appendChild(grp);
  }
  return svg;
}
