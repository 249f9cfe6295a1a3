// The daily usage chart: one stacked bar of credits per UTC day, one colour per model, drawn as SVG
// with DOM calls (never innerHTML: no value from the API is parsed as markup). No library, no CDN.
import { formatCredits } from './chart.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Series colours are CSS classes (`.series-0` ... `.series-7`): the content policy forbids inline styles. */
const SERIES = 8;

function svg(name, attributes = {}, text) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [attribute, value] of Object.entries(attributes)) element.setAttribute(attribute, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A round axis maximum above `max` (1, 2 or 5 times a power of ten). */
function niceCeiling(max) {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= max);
}

/**
 * Draw `days` (rows of GET /admin/v1/usage?groupBy=day: `{day, credits, models: [{model, credits}]}`)
 * as stacked bars, `width` CSS pixels wide; `title` names the chart for screen readers. Returns
 * `{chart, legend}` (the legend lists the models with their colours and totals).
 */
export function drawDailyChart(days, { title, width: available = 900 }) {
  const width = Math.max(300, Math.min(1100, Math.round(available)));
  const height = 260;
  const margin = { top: 12, right: 12, bottom: 34, left: 64 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const modelTotals = new Map();
  for (const day of days) for (const row of day.models) modelTotals.set(row.model, (modelTotals.get(row.model) ?? 0) + row.credits);
  const models = [...modelTotals.keys()].sort((a, b) => modelTotals.get(b) - modelTotals.get(a) || a.localeCompare(b));
  const seriesOf = (model) => `series-${models.indexOf(model) % SERIES}`;
  const top = niceCeiling(Math.max(0, ...days.map((day) => day.credits)));
  const y = (credits) => margin.top + plotHeight - (credits / top) * plotHeight;
  const slot = plotWidth / Math.max(1, days.length);
  const barWidth = Math.max(2, Math.min(28, slot * 0.7));

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'chart daily-chart', preserveAspectRatio: 'xMinYMin meet' });
  chart.append(svg('title', {}, title));
  for (const fraction of [0, 0.5, 1]) {
    const value = top * fraction;
    chart.append(
      svg('line', { x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value), class: 'chart-grid' }),
      svg('text', { x: margin.left - 6, y: y(value), 'text-anchor': 'end', 'dominant-baseline': 'middle', class: 'chart-axis' }, formatCredits(value)),
    );
  }
  const labelEvery = Math.ceil(days.length / Math.max(1, Math.floor(plotWidth / 64)));
  days.forEach((day, index) => {
    const x = margin.left + index * slot + (slot - barWidth) / 2;
    const group = svg('g', { class: 'chart-day', 'data-day': day.day });
    let base = 0;
    for (const row of [...day.models].sort((a, b) => models.indexOf(a.model) - models.indexOf(b.model))) {
      if (row.credits <= 0) continue;
      const rect = svg('rect', { x, y: y(base + row.credits), width: barWidth, height: Math.max(1, y(base) - y(base + row.credits)), class: `chart-segment ${seriesOf(row.model)}`, 'data-model': row.model });
      rect.append(svg('title', {}, `${day.day} · ${row.model}: ${formatCredits(row.credits)} credits, ${row.requests} requests`));
      group.append(rect);
      base += row.credits;
    }
    if (index % labelEvery === 0) {
      group.append(svg('text', { x: x + barWidth / 2, y: height - margin.bottom + 16, 'text-anchor': 'middle', class: 'chart-axis' }, day.day.slice(5)));
    }
    chart.append(group);
  });

  const legend = document.createElement('ul');
  legend.className = 'chart-legend';
  for (const model of models) {
    const item = document.createElement('li');
    const swatch = svg('svg', { width: 12, height: 12, 'aria-hidden': 'true' });
    swatch.append(svg('rect', { width: 12, height: 12, rx: 2, class: seriesOf(model) }));
    item.append(swatch, ` ${model}: ${formatCredits(modelTotals.get(model))} credits`);
    legend.append(item);
  }
  return { chart, legend };
}
