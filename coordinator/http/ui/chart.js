// Entropy and varentropy of every committed step, one panel each, with the decision matrix's
// thresholds (docs/ARCHITECTURE.md §4.2, as the job's policy sets them) drawn across, and a strip below
// coloured by the strategy each step took. The y axes are log(1 + x): the thresholds that
// matter sit at 0.1 and at 3–5 while a varentropy can reach hundreds. Hover shows the step's
// card; a click brings its token into view.

import {strategyColor} from './tree_view.js';

const SVG = 'http://www.w3.org/2000/svg';
const PANEL = 110;
const STRIP = 10;
const GAP = 18;
const LEFT = 46;
// The labels' column, right of the plot: as wide as the longest label (about 6.5 px a character
// at the chart's 10 px font), at least MIN_RIGHT; labels at neighbouring thresholds are pushed apart
// to LABEL_GAP.
const MIN_RIGHT = 64;
const LABEL_CHAR = 6.5;
const LABEL_GAP = 12;

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

const warp = (v) => Math.log10(1 + Math.max(0, v));

// Threshold lines of one metric: equal values share a line and a label.
function thresholdLines(thresholds, keys) {
  const byValue = new Map();
  for (const [key, label] of keys) {
    const value = thresholds[key];
    if (value === undefined || value === null) continue;
    byValue.set(value, [...(byValue.get(value) || []), label]);
  }
  return [...byValue].map(([value, labels]) => ({value, label: `${labels.join('/')} ${round(value)}`}));
}

// A threshold as a reader wants it: three significant digits, no float32 residue (2.8173 → 2.82,
// 0.30000001 → 0.3).
export function round(value) {
  return String(Number(Number(value).toPrecision(3)));
}

// The labels' y positions, top to bottom, at least LABEL_GAP apart and inside [top, bottom].
export function spreadLabels(ys, top, bottom) {
  const order = ys.map((y, i) => [y, i]).sort((a, b) => a[0] - b[0]);
  const placed = new Array(ys.length);
  let next = top;
  for (const [y, i] of order) {
    placed[i] = Math.max(y, next);
    next = placed[i] + LABEL_GAP;
  }
  // Labels pushed past the bottom move back up, each keeping its gap to the one below.
  let limit = bottom;
  for (const [, i] of order.reverse()) {
    placed[i] = Math.min(placed[i], limit);
    limit = placed[i] - LABEL_GAP;
  }
  return placed;
}

const H_KEYS = [['lelv_entropy', 'LELV'], ['hehv_entropy', 'HEHV'], ['helv_entropy', 'HELV'], ['lehv_entropy', 'LEHV']];
const V_KEYS = [['lelv_varentropy', 'LELV'], ['helv_varentropy', 'HELV'], ['lehv_varentropy', 'LEHV'], ['hehv_varentropy', 'HEHV']];

export class Chart {
  constructor(container, {onHover, onLeave, onPick}) {
    this.container = container;
    this.onHover = onHover;
    this.onLeave = onLeave;
    this.onPick = onPick;
  }

  // `steps`: the committed nodes after the prompt, in order; `thresholds`: the job's policy's.
  render(steps, thresholds) {
    const width = Math.max(480, this.container.clientWidth || 800);
    const panels = [
      {key: 'entropy', label: 'H (bits)', lines: thresholdLines(thresholds || {}, H_KEYS), top: GAP / 2},
      {key: 'varentropy', label: 'V', lines: thresholdLines(thresholds || {}, V_KEYS), top: GAP * 1.5 + PANEL},
    ];
    const longest = Math.max(0, ...panels.flatMap((p) => p.lines.map((l) => l.label.length)));
    const plot = width - LEFT - Math.max(MIN_RIGHT, 8 + longest * LABEL_CHAR);
    const height = 2 * PANEL + STRIP + 3 * GAP;
    const root = svg('svg', {width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart-svg'});
    if (!steps.length) {
      this.container.replaceChildren(root);
      return;
    }
    const dx = steps.length > 1 ? plot / (steps.length - 1) : 0;
    const x = (i) => LEFT + i * dx;
    for (const panel of panels) this.panel_(root, panel, steps, x, plot);
    this.strip_(root, steps, x, dx, 2 * PANEL + 2.5 * GAP);
    this.pointer_(root, steps, x, dx, height);
    this.container.replaceChildren(root);
  }

  panel_(root, {key, label, lines, top}, steps, x, plot) {
    const values = steps.map((n) => n.metrics[key]);
    const finite = values.filter((v) => v !== null && Number.isFinite(v));
    const max = Math.max(1, ...finite, ...lines.map((l) => l.value));
    const y = (v) => top + PANEL - (warp(v) / warp(max)) * PANEL;
    const g = svg('g', {class: `panel-${key}`});
    g.append(svg('rect', {x: LEFT, y: top, width: plot, height: PANEL, class: 'plot-bg'}));
    for (const tick of [0, 0.1, 1, 3, 10, 30, 100, 300, 1000].filter((t) => t <= max)) {
      const t = svg('text', {x: LEFT - 4, y: y(tick) + 3, class: 'tick'});
      t.textContent = String(tick);
      g.append(t);
    }
    const name = svg('text', {x: 4, y: top + 10, class: 'axis-label'});
    name.textContent = label;
    g.append(name);
    const labelYs = spreadLabels(lines.map((l) => y(l.value) + 3), top + 8, top + PANEL + 3);
    lines.forEach((line, i) => {
      g.append(svg('line', {x1: LEFT, x2: LEFT + plot, y1: y(line.value), y2: y(line.value), class: 'threshold'}));
      const t = svg('text', {x: LEFT + plot + 4, y: labelYs[i], class: 'threshold-label'});
      t.textContent = line.label;
      g.append(t);
    });
    let d = '';
    values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      d += `${d && values[i - 1] !== null ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    g.append(svg('path', {d, class: `series series-${key}`}));
    root.append(g);
  }

  // One path per strategy, of one-step-wide bars: a few elements whatever the job's length.
  strip_(root, steps, x, dx, top) {
    const paths = new Map();
    const w = Math.max(1, dx);
    steps.forEach((n, i) => {
      paths.set(n.strategy, (paths.get(n.strategy) || '') + `M${(x(i) - w / 2).toFixed(1)},${top}h${w.toFixed(1)}v${STRIP}h${(-w).toFixed(1)}z`);
    });
    const g = svg('g', {class: 'strategy-strip'});
    for (const [strategy, d] of paths) {
      const p = svg('path', {d, fill: strategyColor(strategy)});
      p.dataset.strategy = strategy;
      g.append(p);
    }
    root.append(g);
  }

  pointer_(root, steps, x, dx, height) {
    const cursor = svg('line', {y1: 0, y2: height, class: 'cursor', visibility: 'hidden'});
    const overlay = svg('rect', {x: LEFT - Math.max(dx, 4) / 2, y: 0, width: (x(steps.length - 1) - LEFT) + Math.max(dx, 4), height, class: 'overlay'});
    const index = (e) => {
      const box = root.getBoundingClientRect();
      const i = dx > 0 ? Math.round((e.clientX - box.left - LEFT) / dx) : 0;
      return Math.min(steps.length - 1, Math.max(0, i));
    };
    overlay.addEventListener('mousemove', (e) => {
      const i = index(e);
      cursor.setAttribute('x1', x(i));
      cursor.setAttribute('x2', x(i));
      cursor.setAttribute('visibility', 'visible');
      this.onHover(steps[i].id, e.clientX, e.clientY);
    });
    overlay.addEventListener('mouseleave', () => {
      cursor.setAttribute('visibility', 'hidden');
      this.onLeave();
    });
    overlay.addEventListener('click', (e) => this.onPick(steps[index(e)].id));
    root.append(cursor, overlay);
  }
}
