// Spend panels of the dashboard: the daily chart (one key or all, by model), the month's top keys (and
// teams and members, when keys belong to teams),
// and the request log (filters, a table of the first records, a CSV download of the whole range).
import { fetchRequestLog, usageOverDays } from './api.js';
import { formatCount, formatCredits } from './chart.js';
import { drawDailyChart } from './daily-chart.js';
import { $, el } from './dom.js';

/** Records shown in the log table; the CSV download has them all. */
const LOG_TABLE_ROWS = 200;

const day = (ms) => new Date(ms).toISOString().slice(0, 10);
/**
 * The whole of `month` (`YYYY-MM`) as a day range: its first and last day. Not clipped to the browser's
 * today: the month is the gateway's (its clock's), which may be a month the browser has left.
 */
const monthRange = (month) => {
  const [year, number] = month.split('-').map(Number);
  return { from: `${month}-01`, to: day(Date.UTC(year, number, 0)) };
};
/** A share of a cap as a percentage: whole percents, or 2 significant digits under 1 %. */
const formatShare = (share) => (share > 0 && share < 0.01 ? `${Number((share * 100).toPrecision(2))} %` : `${Math.round(share * 100)} %`);

let attempt;
let keys = [];

/** Keep the key pickers of the spend panels in step with the keys table. */
export function updateSpendKeys(list) {
  keys = list;
  for (const select of [$('#daily-key'), $('#log-key')]) {
    const chosen = select.value;
    select.replaceChildren(el('option', { value: '' }, 'All keys'), ...keys.map((key) => el('option', { value: key.id }, `${key.name}${key.last4 ? ` (…${key.last4})` : ''}`)));
    if (keys.some((key) => key.id === chosen)) select.value = chosen;
  }
}

async function showDaily(event) {
  event?.preventDefault();
  const region = $('#daily-error');
  const params = { from: $('#daily-from').value, to: $('#daily-to').value, keyId: $('#daily-key').value, groupBy: 'day' };
  if (!params.from || !params.to) return region.replaceChildren('Choose the first and the last day.');
  const usage = await attempt(region, () => usageOverDays(params));
  if (!usage) return;
  const who = params.keyId ? keys.find((key) => key.id === params.keyId)?.name ?? params.keyId : 'all keys';
  const result = $('#daily-result');
  const { chart, legend } = drawDailyChart(usage.rows, { title: `Credits per day by model for ${who}, ${usage.from} to ${usage.to}`, width: result.clientWidth });
  result.replaceChildren(
    el('p', { class: 'usage-summary' }, `${params.keyId ? who : 'All keys'}: ${formatCredits(usage.totals.credits)} credits, ${formatCount(usage.totals.requests)} ${usage.totals.requests === 1 ? 'request' : 'requests'} from ${usage.from} to ${usage.to} (UTC).`),
    chart, legend,
  );
}

async function showTopKeys(month) {
  const usage = await attempt($('#daily-error'), () => usageOverDays({ ...monthRange(month), groupBy: 'key' }));
  if (!usage) return;
  const target = $('#top-keys');
  if (usage.rows.length === 0) return target.replaceChildren(el('p', { class: 'hint' }, `No usage in ${month} yet.`));
  const head = el('tr', {}, ...['Key', 'Requests', 'Credits', 'Share of cap'].map((label) => el('th', { scope: 'col' }, label)));
  const rows = usage.rows.slice(0, 10).map((row) => el('tr', {},
    el('th', { scope: 'row', 'data-label': 'Key' }, row.keyName),
    el('td', { 'data-label': 'Requests' }, formatCount(row.requests)),
    el('td', { 'data-label': 'Credits' }, formatCredits(row.credits)),
    el('td', { 'data-label': 'Share of cap' }, row.monthlyCreditCap ? formatShare(row.credits / row.monthlyCreditCap) : 'no cap')));
  target.replaceChildren(el('table', { class: 'usage-table', id: 'top-keys-table' }, el('caption', {}, `Top keys in ${month} (UTC), by credits`), el('thead', {}, head), el('tbody', {}, ...rows)));
}

/** The month's spend per team and per member of each team (GET /admin/v1/usage?groupBy=team and user), when teams are in use. */
async function showTeams(month) {
  const [teams, members] = await Promise.all(['team', 'user'].map((groupBy) => attempt($('#daily-error'), () => usageOverDays({ ...monthRange(month), groupBy }))));
  const target = $('#top-teams');
  const teamRows = (teams?.rows ?? []).filter((row) => row.teamId !== null);
  $('#top-teams-title').hidden = teamRows.length === 0;
  if (teamRows.length === 0) return target.replaceChildren();
  const share = (spent, cap) => (cap ? formatShare(spent / cap) : 'no cap');
  const table = (id, caption, labels, rows) => el('table', { class: 'usage-table', id },
    el('caption', {}, caption), el('thead', {}, el('tr', {}, ...labels.map((label) => el('th', { scope: 'col' }, label)))), el('tbody', {}, ...rows));
  const cells = (labels, values) => values.map((value, i) => (i === 0 ? el('th', { scope: 'row', 'data-label': labels[0] }, value) : el('td', { 'data-label': labels[i] }, value)));
  const teamLabels = ['Team', 'Members', 'Requests', 'Credits', 'Share of team cap'];
  const memberLabels = ['Member', 'Team', 'Requests', 'Credits', 'Share of member cap'];
  target.replaceChildren(
    table('top-teams-table', `Teams in ${month} (UTC), by credits`, teamLabels, teamRows.map((row) => el('tr', {}, ...cells(teamLabels, [
      row.teamName ?? row.teamId, formatCount(row.members), formatCount(row.requests), formatCredits(row.credits), share(row.monthSpend, row.monthlyCreditCap)])))),
    table('top-members-table', `Members in ${month} (UTC), by credits`, memberLabels, (members?.rows ?? []).filter((row) => row.userId !== null && row.teamId !== null)
      .map((row) => el('tr', {}, ...cells(memberLabels, [
        row.userId, row.teamId, formatCount(row.requests), formatCredits(row.credits), share(row.monthSpend, row.memberMonthlyCreditCap)])))),
  );
}

function logParams(format) {
  return {
    from: $('#log-from').value, to: $('#log-to').value, keyId: $('#log-key').value, status: $('#log-status').value.trim(),
    sessionId: $('#log-session').value.trim(), format,
  };
}

/** Read NDJSON records from `response` until `limit` are in; the rest of the stream is cancelled. */
async function readRecords(response, limit) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const records = [];
  let tail = '';
  let more = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = (tail + decoder.decode(value, { stream: true })).split('\n');
    tail = lines.pop();
    for (const line of lines) if (line) records.push(JSON.parse(line));
    if (records.length > limit) {
      more = true;
      await reader.cancel();
      break;
    }
  }
  return { records: records.slice(0, limit), more };
}

async function showLog(event) {
  event?.preventDefault();
  const region = $('#log-error');
  const response = await attempt(region, () => fetchRequestLog(logParams('ndjson')));
  if (!response) return;
  const { records, more } = await readRecords(response, LOG_TABLE_ROWS);
  const columns = [['Time (UTC)', (r) => r.time.replace('T', ' ').slice(0, 19)], ['Key', (r) => r.keyId ?? ''], ['Route', (r) => r.route],
    ['Model', (r) => r.model ?? ''], ['Status', (r) => String(r.status)], ['Stop reason', (r) => r.stopReason ?? ''],
    ['Input', (r) => formatCount(r.inputTokens + r.cacheCreationInputTokens + r.cacheReadInputTokens)], ['Output', (r) => formatCount(r.outputTokens)],
    ['Credits', (r) => formatCredits(r.credits)], ['First byte', (r) => (r.firstByteMs === null ? '' : `${Math.round(r.firstByteMs)} ms`)],
    ['Duration', (r) => `${Math.round(r.durationMs)} ms`], ['Streamed', (r) => (r.streamed ? 'yes' : '')], ['Aborted', (r) => (r.clientAborted ? 'yes' : '')],
    ['Session', (r) => r.sessionId ?? ''], ['Agent', (r) => r.agentId ?? ''],
    // Why it failed: the error the client got, and the upstream attempts once one failed (wrapped, not widened).
    ['Error', (r) => (r.errorType ? `${r.errorType}: ${r.errorMessage ?? ''}` : ''), 'reason'], ['Upstream attempts', (r) => r.upstreamAttempts ?? '', 'reason']];
  $('#log-status-line').textContent = records.length === 0 ? 'No requests match.' : `${records.length}${more ? '+' : ''} requests${more ? ` (the first ${LOG_TABLE_ROWS} shown; the CSV has them all)` : ''}.`;
  if (records.length === 0) return $('#log-result').replaceChildren();
  $('#log-result').replaceChildren(el('table', { class: 'log-table', id: 'log-table' },
    el('caption', { class: 'visually-hidden' }, 'Request log'),
    el('thead', {}, el('tr', {}, ...columns.map(([label]) => el('th', { scope: 'col' }, label)))),
    el('tbody', {}, ...records.map((record) => el('tr', { 'data-request-id': record.requestId }, ...columns.map(([label, cell, kind]) => el('td', { 'data-label': label, ...(kind ? { class: kind } : {}) }, cell(record))))))));
}

async function downloadCsv() {
  const region = $('#log-error');
  const params = logParams('csv');
  const response = await attempt(region, () => fetchRequestLog(params));
  if (!response) return;
  const url = URL.createObjectURL(await response.blob());
  const link = el('a', { href: url, download: `requests-${params.from}-${params.to}.csv`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  $('#log-status-line').textContent = 'CSV downloaded.';
}

/**
 * Wire the spend panels. `run(region, action)` is the dashboard's API call wrapper (errors shown in
 * `region`, a refused token signs out); `month` is the current UTC month.
 */
export function initSpend(run) {
  attempt = run;
  const today = Date.now();
  for (const [from, to] of [['#daily-from', '#daily-to'], ['#log-from', '#log-to']]) {
    if (!$(to).value) $(to).value = day(today);
    if (!$(from).value) $(from).value = day(today - (from === '#daily-from' ? 29 : 0) * 86_400_000);
  }
  $('#daily-form').addEventListener('submit', showDaily);
  $('#log-form').addEventListener('submit', showLog);
  $('#log-csv').addEventListener('click', () => void downloadCsv());
}

/** Refresh the spend panels after the keys were (re)loaded. */
export async function refreshSpend(month) {
  await Promise.all([showDaily(), showTopKeys(month), showTeams(month)]);
}
