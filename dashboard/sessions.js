// Sessions panel of the dashboard: the agent sessions of one UTC day (one key or all), each with its
// requests, tokens, credits and duration (GET /admin/v1/usage?groupBy=session); "Requests" shows a
// session's requests in the request log panel.
import { usageOverDays } from './api.js';
import { formatCount, formatCredits } from './chart.js';
import { $, el } from './dom.js';

/** Sessions listed in the table (the highest by credits). */
const SESSION_TABLE_ROWS = 200;

let attempt;
let keys = [];

/** A duration in ms as `1 h 02 min`, `3 min 05 s` or `12 s`. */
export function formatDuration(ms) {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(seconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** Keep the key picker of the panel in step with the keys table. */
export function updateSessionKeys(list) {
  keys = list;
  const select = $('#sessions-key');
  const chosen = select.value;
  select.replaceChildren(el('option', { value: '' }, 'All keys'), ...keys.map((key) => el('option', { value: key.id }, `${key.name}${key.last4 ? ` (…${key.last4})` : ''}`)));
  if (keys.some((key) => key.id === chosen)) select.value = chosen;
}

/** Show the session's requests in the request log panel (its day, its key, its id). */
function showRequests(row, dayValue) {
  $('#log-from').value = dayValue;
  $('#log-to').value = dayValue;
  $('#log-key').value = row.keyId ?? '';
  $('#log-session').value = row.sessionId ?? '';
  $('#log-form').requestSubmit();
  $('#request-log').scrollIntoView();
}

async function showSessions(event) {
  event?.preventDefault();
  const region = $('#sessions-error');
  const dayValue = $('#sessions-day').value;
  if (!dayValue) return region.replaceChildren('Choose a day.');
  const keyId = $('#sessions-key').value;
  const usage = await attempt(region, () => usageOverDays({ from: dayValue, to: dayValue, keyId, groupBy: 'session' }));
  if (!usage) return;
  const sessions = usage.rows.filter((row) => row.sessionId !== null);
  const unlabelled = usage.rows.filter((row) => row.sessionId === null).reduce((sum, row) => sum + row.requests, 0);
  const keyName = (id) => keys.find((key) => key.id === id)?.name ?? id ?? '';
  $('#sessions-status').textContent = `${sessions.length} ${sessions.length === 1 ? 'session' : 'sessions'} on ${dayValue} (UTC)`
    + (unlabelled > 0 ? `; ${formatCount(unlabelled)} ${unlabelled === 1 ? 'request' : 'requests'} sent no session id.` : '.');
  if (sessions.length === 0) return $('#sessions-result').replaceChildren();
  const columns = [['Session', (r) => r.sessionId], ['Key', (r) => keyName(r.keyId)], ['Agents', (r) => (r.agentIds.length ? r.agentIds.join(', ') : '')],
    ['Requests', (r) => formatCount(r.requests)], ['Input', (r) => formatCount(r.inputTokens + r.cacheCreationInputTokens + r.cacheReadInputTokens)],
    ['Output', (r) => formatCount(r.outputTokens)], ['Credits', (r) => formatCredits(r.credits)], ['Duration', (r) => formatDuration(r.durationMs)],
    ['Start (UTC)', (r) => r.start.replace('T', ' ').slice(0, 19)]];
  const rows = sessions.slice(0, SESSION_TABLE_ROWS).map((row) => el('tr', { 'data-session-id': row.sessionId },
    ...columns.map(([label, cell]) => el(label === 'Session' ? 'th' : 'td', { 'data-label': label, ...(label === 'Session' ? { scope: 'row' } : {}) }, cell(row))),
    el('td', {}, Object.assign(el('button', { type: 'button', class: 'secondary', 'aria-label': `Requests of session ${row.sessionId}` }, 'Requests'), {
      onclick: () => showRequests(row, dayValue),
    }))));
  $('#sessions-result').replaceChildren(el('table', { class: 'log-table', id: 'sessions-table' },
    el('caption', { class: 'visually-hidden' }, `Sessions on ${dayValue}, by credits`),
    el('thead', {}, el('tr', {}, ...columns.map(([label]) => el('th', { scope: 'col' }, label)), el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Actions')))),
    el('tbody', {}, ...rows)));
}

/** Wire the sessions panel; `run(region, action)` is the dashboard's API call wrapper. */
export function initSessions(run) {
  attempt = run;
  if (!$('#sessions-day').value) $('#sessions-day').value = new Date().toISOString().slice(0, 10);
  $('#sessions-form').addEventListener('submit', showSessions);
}
