// The dashboard of a signed-in person (sign-in through the company's identity provider, `auth.oidc`):
// their own keys (create, rotate, revoke, this month's spend) and, for a team admin, the keys of their
// teams' members (revoke). The session is an HttpOnly cookie the page never reads; every call that
// changes something carries the session's CSRF token (from GET /admin/v1/me) in `x-csrf-token`.
import { callWithSession } from './api.js';
import { $, el } from './dom.js';

const state = { me: null, csrf: '' };

/** Call the admin API with the session cookie (api.js); rejects with an ApiError carrying the API's message and `status`. */
const call = (method, path, body) => callWithSession(method, path, body, state.csrf);

/** Run `action`, showing its error in `region`; a 401 shows the sign-in panel. */
async function attempt(region, action) {
  region.textContent = '';
  try {
    return await action();
  } catch (err) {
    if (err.status === 401) showSignedOut(err.message);
    else region.textContent = err.message;
    return undefined;
  }
}

function showSignedOut(message = '') {
  $('#people-signed-in').hidden = true;
  $('#people-sign-out').hidden = true;
  $('#people-signed-out').hidden = false;
  $('#people-signed-out-error').textContent = message;
}

const spendText = (key) => `${key.spend.credits.toFixed(4)} of ${key.monthlyCreditCap === null ? 'no cap' : `${key.monthlyCreditCap} credits`}`;

function keyRow(key, columns, actions) {
  const row = el('tr', { 'data-key-id': key.id });
  for (const text of columns) row.append(el('td', {}, text));
  const cell = el('td', { class: 'row-actions' });
  if (key.status === 'active') {
    for (const [action, label] of actions) cell.append(el('button', { type: 'button', class: 'secondary', 'data-action': action, 'aria-label': `${label} ${key.name}` }, label));
  }
  row.append(cell);
  return row;
}

async function loadOwnKeys() {
  const keys = await attempt($('#own-keys-error'), () => call('GET', '/me/keys'));
  if (!keys) return;
  $('#own-keys-table tbody').replaceChildren(...keys.data.map((key) =>
    keyRow(key, [key.name, `…${key.last4}`, key.team ?? '', key.status, spendText(key)], [['rotate', 'Rotate'], ['revoke', 'Revoke']])));
}

async function loadTeamKeys() {
  if (!state.me.roles.includes('team-admin')) return;
  $('#team-keys').hidden = false;
  const keys = await attempt($('#team-keys-error'), () => call('GET', '/keys'));
  if (!keys) return;
  const ofTeams = keys.data.filter((key) => key.team && state.me.teams.some((team) => team.id === key.team && team.role === 'team-admin'));
  $('#team-keys-table tbody').replaceChildren(...ofTeams.map((key) =>
    keyRow(key, [key.name, key.owner ?? '', key.team, key.status, spendText(key)], [['revoke', 'Revoke']])));
}

function showSecret(secret) {
  $('#own-key-secret').textContent = secret;
  $('#own-key-secret-line').hidden = false;
}

async function createOwnKey(event) {
  event.preventDefault();
  const body = {};
  const name = $('#own-key-name').value.trim();
  if (name) body.name = name;
  if ($('#own-key-team').value) body.team = $('#own-key-team').value;
  const cap = $('#own-key-cap').value.trim();
  if (cap !== '') body.monthlyCreditCap = Number(cap);
  const created = await attempt($('#own-keys-error'), () => call('POST', '/me/keys', body));
  if (!created) return;
  showSecret(created.secret);
  $('#own-key-form').reset();
  await loadOwnKeys();
  await loadTeamKeys();
}

async function onOwnKeyAction(event) {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const id = button.closest('tr').dataset.keyId;
  const path = `/me/keys/${encodeURIComponent(id)}/${button.dataset.action}`;
  const reply = await attempt($('#own-keys-error'), () => call('POST', path, button.dataset.action === 'rotate' ? { gracePeriodSeconds: 0 } : {}));
  if (!reply) return;
  if (reply.secret) showSecret(reply.secret);
  await loadOwnKeys();
  await loadTeamKeys();
}

async function onTeamKeyAction(event) {
  const button = event.target.closest('button[data-action="revoke"]');
  if (!button) return;
  const id = button.closest('tr').dataset.keyId;
  if (await attempt($('#team-keys-error'), () => call('POST', `/keys/${encodeURIComponent(id)}/revoke`, {}))) {
    await loadTeamKeys();
    await loadOwnKeys();
  }
}

async function signOut() {
  await fetch('/dashboard/logout', { method: 'POST', headers: { 'x-csrf-token': state.csrf }, credentials: 'same-origin' });
  showSignedOut('You are signed out.');
}

async function start() {
  $('#own-key-form').addEventListener('submit', createOwnKey);
  $('#own-keys-table').addEventListener('click', onOwnKeyAction);
  $('#team-keys-table').addEventListener('click', onTeamKeyAction);
  $('#people-sign-out').addEventListener('click', signOut);
  const me = await attempt($('#people-signed-out-error'), () => call('GET', '/me'));
  // A refused call (401) has shown the sign-in panel with its reason already.
  if (!me) return;
  if (!me.user) return showSignedOut('Signed in with the admin token: use the main dashboard.');
  state.me = me;
  state.csrf = me.csrfToken;
  $('#me-name').textContent = me.user.name ?? me.user.email ?? me.user.subject;
  $('#me-roles').textContent = me.roles.join(', ');
  $('#me-teams').textContent = me.teams.map((team) => `${team.name} (${team.role})`).join(', ') || 'none';
  $('#own-key-team').replaceChildren(...me.teams.map((team) => el('option', { value: team.id }, team.name)));
  $('#people-signed-out').hidden = true;
  $('#people-signed-in').hidden = false;
  $('#people-sign-out').hidden = false;
  await loadOwnKeys();
  await loadTeamKeys();
}

void start();
