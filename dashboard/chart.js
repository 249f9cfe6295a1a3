// Formatting and the usage chart: a small hand-drawn SVG bar chart, one bar per model, built with
// DOM calls (never innerHTML, so no value from the API is ever parsed as markup).

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Credits for display: small amounts keep 3 significant digits, larger ones 2 decimals. */
export function formatCredits(credits) {
  if (credits === 0) return '0';
  if (Math.abs(credits) < 1) return String(Number(credits.toPrecision(3)));
  return credits.toLocaleString('en', { maximumFractionDigits: 2 });
}

/** Whole numbers with thousands separators. */
export function formatCount(count) {
  return count.toLocaleString('en');
}

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [attribute, value] of Object.entries(attributes)) element.setAttribute(attribute, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * A horizontal bar chart of `rows` (`{label, value}`), values formatted with `format`, drawn for
 * `width` CSS pixels (it still scales with its container); `title` names it for screen readers.
 */
export function drawBarChart(rows, { title, format, width: available = 640 }) {
  // Drawn at the width it is shown at (at most 720), so its text stays legible on a narrow screen.
  const width = Math.max(280, Math.min(720, Math.round(available)));
  const labelWidth = Math.min(170, Math.round(width * 0.42));
  const valueWidth = 80;
  const barHeight = 26;
  const gap = 10;
  const height = rows.length * (barHeight + gap) + gap;
  const max = Math.max(...rows.map((row) => row.value), 0);
  const svg = svgElement('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'chart', preserveAspectRatio: 'xMinYMin meet' });
  svg.append(svgElement('title', {}, title));
  rows.forEach((row, index) => {
    const y = gap + index * (barHeight + gap);
    const barSpace = width - labelWidth - valueWidth;
    const barWidth = max > 0 ? Math.max(2, (row.value / max) * barSpace) : 2;
    const group = svgElement('g', {});
    group.append(
      svgElement('text', { x: labelWidth - 8, y: y + barHeight / 2, 'text-anchor': 'end', 'dominant-baseline': 'middle', class: 'chart-label' }, row.label),
      svgElement('rect', { x: labelWidth, y, width: barWidth, height: barHeight, rx: 3, class: 'chart-bar' }),
      svgElement('text', { x: labelWidth + barWidth + 6, y: y + barHeight / 2, 'dominant-baseline': 'middle', class: 'chart-value' }, format(row.value)),
    );
    group.append(svgElement('title', {}, `${row.label}: ${format(row.value)}`));
    svg.append(group);
  });
  return svg;
}
