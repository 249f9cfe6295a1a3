// The dashboard's UI: sign-in, the keys table (restore of a revoked key), the key dialogs (create, edit, rotate, revoke, the
// show-once secret) and the usage chart. Every API error is shown next to the control that caused it.
import { api, ApiError, callApi, forgetToken, readToken, storeToken } from './api.js';
import { drawBarChart, formatCount, formatCredits } from './chart.js';
import { initSessions, updateSessionKeys } from './sessions.js';
import { initSpend, refreshSpend, updateSpendKeys } from './spend.js';
import { $, el } from './dom.js';


const state = { keys: [], models: [], keyGroups: [], month: '', alertDefaults: [50, 80, 100] };

function showError(region, err) {
  region.textContent = err ? (err instanceof Error ? err.message : String(err)) : '';
}

/** Run an API action; a 401 ends the session, any other error is shown in `region`. */
async function attempt(region, action) {
  showError(region, '');
  try {
    return await action();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && readToken()) {
      signOut('The admin token was refused (it may have changed). Sign in again.');
      return undefined;
    }
    showError(region, err);
    return undefined;
  }
}

// ---- session ------------------------------------------------------------------------------------

function signOut(message = '') {
  forgetToken();
  $('#signed-in').hidden = true;
  $('#sign-out').hidden = true;
  $('#sign-in').hidden = false;
  showError($('#sign-in [data-error]'), message);
  $('#admin-token').value = '';
  $('#admin-token').focus();
}

async function enter() {
  $('#sign-in').hidden = true;
  $('#signed-in').hidden = false;
  $('#sign-out').hidden = false;
  const models = await attempt($('#keys-error'), () => api.models());
  if (models) {
    state.models = models.data;
    state.keyGroups = models.keyGroups ?? [];
  }
  await loadKeys();
}

async function signIn(event) {
  event.preventDefault();
  const token = $('#admin-token').value.trim();
  const region = $('#sign-in [data-error]');
  if (!token) return showError(region, 'Enter the admin token.');
  try {
    // Check the token just typed before keeping it.
    await callApi('GET', '/keys', undefined, token);
  } catch (err) {
    showError(region, err instanceof ApiError && err.status === 401 ? 'That admin token was refused.' : err);
    return;
  }
  storeToken(token);
  await enter();
  $('#new-key').focus();
}

// ---- keys table ---------------------------------------------------------------------------------

function spendCell(key) {
  const spent = key.spend.credits;
  const cap = key.monthlyCreditCap;
  if (cap === null) return el('td', { 'data-label': 'Spend' }, el('div', {}, el('span', {}, `${formatCredits(spent)} credits`), el('span', { class: 'subtle' }, ' · no cap')));
  const share = cap > 0 ? Math.min(1, spent / cap) : 1;
  const level = share >= 0.9 ? 'high' : share >= 0.6 ? 'mid' : 'low';
  const fill = el('div', { class: 'spend-fill' });
  // Through the CSSOM: the page's content policy forbids inline style attributes.
  fill.style.width = `${(share * 100).toFixed(1)}%`;
  const bar = el('div', {
    class: `spend-bar ${level}`, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': cap, 'aria-valuenow': spent,
    'aria-label': `Spend of ${key.name}`, 'aria-valuetext': `${formatCredits(spent)} of ${formatCredits(cap)} credits`,
  }, fill);
  return el('td', { 'data-label': 'Spend' }, el('div', {}, bar, el('span', { class: 'spend-text' }, `${formatCredits(spent)} / ${formatCredits(cap)} credits`)));
}

function keyRow(key) {
  const actions = el('div', { class: 'row-actions' });
  const button = (label, action, extra = {}) => {
    const b = el('button', { type: 'button', class: 'small secondary', 'data-action': action, 'data-key-id': key.id, 'aria-label': `${label} ${key.name}`, ...extra }, label);
    actions.append(b);
  };
  button('Usage', 'usage');
  if (key.status === 'active') {
    button('Edit', 'edit');
    // config.json sets a declared key's secret: changed there, not here.
    if (!key.declaredIn) button('Rotate', 'rotate');
    button('Revoke', 'revoke', { class: 'small danger-outline' });
  } else {
    button('Restore', 'restore');
  }
  const models = key.allowedModels === null ? 'all' : key.allowedModels.join(', ');
  return el('tr', { 'data-key-id': key.id },
    el('th', { scope: 'row', 'data-label': 'Name' }, el('div', {}, el('span', { class: 'key-name' }, key.name), key.id === key.name ? '' : el('span', { class: 'subtle key-id' }, key.id))),
    el('td', { 'data-label': 'Key' }, el('code', {}, key.last4 ? `${prefixOf(key.keyGroup)}…${key.last4}` : 'hash in config'),
      key.declaredIn ? el('span', { class: 'subtle key-id' }, `declared in ${key.declaredIn}`) : ''),
    el('td', { 'data-label': 'Status' }, el('span', { class: `badge ${key.status}` }, key.status)),
    el('td', { 'data-label': 'Rate limit' }, `${formatCount(key.rateLimitPerMinute)}/min`),
    el('td', { 'data-label': 'Models', class: 'models-cell' }, models),
    spendCell(key),
    el('td', { 'data-label': 'Actions' }, actions),
  );
}

async function loadKeys() {
  const list = await attempt($('#keys-error'), () => api.listKeys());
  if (!list) return;
  state.keys = list.data;
  state.month = list.month;
  $('#keys-caption').textContent = `Every key, with its spend in ${list.month} (UTC) against its cap`;
  $('#keys-table tbody').replaceChildren(...state.keys.map(keyRow));
  $('#keys-empty').hidden = state.keys.length > 0;
  const select = $('#usage-key');
  const chosen = select.value;
  select.replaceChildren(...state.keys.map((key) => el('option', { value: key.id }, `${key.name}${key.last4 ? ` (…${key.last4})` : ''}`)));
  if (chosen && state.keys.some((key) => key.id === chosen)) select.value = chosen;
  if (!$('#usage-month').value) $('#usage-month').value = list.month;
  state.alertDefaults = list.alerts?.defaultThresholds ?? state.alertDefaults;
  $('#key-alerts-default').textContent = state.alertDefaults.join(', ');
  updateSpendKeys(state.keys);
  updateSessionKeys(state.keys);
  await refreshSpend(list.month);
}

/** The secret prefix of a key group (`sk-cs4-` for the basic group). */
function prefixOf(keyGroup) {
  return state.keyGroups.find((group) => group.id === keyGroup)?.keyPrefix ?? 'sk-cs4-';
}

function keyById(id) {
  return state.keys.find((key) => key.id === id);
}

// ---- dialogs ------------------------------------------------------------------------------------

let returnFocusTo = null;

function openDialog(dialog, opener) {
  returnFocusTo = opener ?? document.activeElement;
  showError($('[data-error]', dialog), '');
  dialog.showModal();
}

function closeDialog(dialog) {
  dialog.close();
}

function restoreFocus() {
  if (returnFocusTo && document.contains(returnFocusTo)) returnFocusTo.focus();
  else $('#new-key').focus();
}

/** The model checkboxes for a key of `keyGroup` (only its model family can be allowed). */
function renderModelChoices(selected, keyGroup = 'default') {
  const list = $('#key-models');
  const family = state.models.filter((model) => (model.keyGroup ?? 'default') === keyGroup);
  list.replaceChildren(...family.map((model) => {
    const id = `model-choice-${model.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const aliases = model.aliases.length ? ` (${model.aliases.join(', ')})` : '';
    return el('div', { class: 'check' },
      el('input', { type: 'checkbox', id, name: 'allowedModels', value: model.id, checked: selected?.includes(model.id) ?? false }),
      el('label', { for: id }, model.id, el('span', { class: 'subtle' }, aliases)));
  }));
}

/** Fields of the key form as an API body; `original` (when editing) limits it to what changed. */
function readKeyForm(original) {
  const form = $('#key-form');
  const body = {};
  const name = form.elements.name.value.trim();
  if (!name) throw new Error('Give the key a name.');
  const rate = form.elements.rateLimitPerMinute.value.trim();
  const cap = form.elements.monthlyCreditCap.value.trim();
  const models = [...form.querySelectorAll('input[name="allowedModels"]:checked')].map((box) => box.value);
  body.name = name;
  const keyId = form.elements.keyId.value.trim();
  if (!original && keyId !== '') {
    // The admin API's rule (lib/admin/admin-schemas.ts), checked here to name the field.
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(keyId)) throw new Error('Write the id with letters, digits, ".", "_" and "-" only, at most 64.');
    body.id = keyId;
  }
  if (rate !== '') body.rateLimitPerMinute = Number(rate);
  if (!original && state.keyGroups.length > 1) body.keyGroup = form.elements.keyGroup.value;
  body.monthlyCreditCap = cap === '' ? null : Number(cap);
  body.allowedModels = models.length ? models : null;
  const alerts = form.elements.alertThresholds.value.trim();
  if (alerts !== '' && !/^\d+(\s*,\s*\d+)*$/.test(alerts)) throw new Error('Write the alert thresholds as whole percentages separated by commas, e.g. 50, 80, 100.');
  const thresholds = alerts === '' ? null : alerts.split(',').map(Number).sort((a, b) => a - b);
  if (original || thresholds !== null) body.alertThresholds = thresholds;
  if (!original) return body;
  const changed = {};
  for (const [field, value] of Object.entries(body)) {
    if (JSON.stringify(value) !== JSON.stringify(original[field])) changed[field] = value;
  }
  return changed;
}

function openKeyDialog(key, opener) {
  const form = $('#key-form');
  form.dataset.keyId = key?.id ?? '';
  $('#key-dialog-title').textContent = key ? `Edit ${key.name}` : 'New key';
  $('#key-submit').textContent = key ? 'Save changes' : 'Create key';
  form.elements.name.value = key?.name ?? '';
  // The id is chosen at creation only (every record, label and alert names the key by it).
  form.elements.keyId.value = '';
  $('#key-id-field').hidden = Boolean(key);
  form.elements.rateLimitPerMinute.value = key ? String(key.rateLimitPerMinute) : '';
  form.elements.monthlyCreditCap.value = key?.monthlyCreditCap ?? '';
  form.elements.alertThresholds.value = key?.alertThresholds?.join(', ') ?? '';
  // The key group is chosen at creation only (it decides the secret's prefix).
  const groupSelect = $('#key-group');
  groupSelect.replaceChildren(...state.keyGroups.map((group) => el('option', { value: group.id }, `${group.id} (${group.keyPrefix}…)`)));
  $('#key-group-field').hidden = Boolean(key) || state.keyGroups.length < 2;
  renderModelChoices(key?.allowedModels ?? null, key?.keyGroup ?? (groupSelect.value || 'default'));
  // config.json sets a declared key's name and limits (the API answers 409): only its alerts are edited here.
  const declared = Boolean(key?.declaredIn);
  for (const field of [form.elements.name, form.elements.rateLimitPerMinute, form.elements.monthlyCreditCap, $('fieldset.models', form)]) field.disabled = declared;
  if (declared) $('#key-dialog-title').textContent = `Edit ${key.name} (declared in ${key.declaredIn}: its name and limits are set there)`;
  openDialog($('#key-dialog'), opener);
}

async function submitKeyForm(event) {
  event.preventDefault();
  const dialog = $('#key-dialog');
  const region = $('[data-error]', dialog);
  const id = $('#key-form').dataset.keyId;
  const original = id ? keyById(id) : undefined;
  let body;
  try {
    body = readKeyForm(original);
  } catch (err) {
    return showError(region, err);
  }
  if (id && Object.keys(body).length === 0) return closeDialog(dialog);
  const result = await attempt(region, () => (id ? api.updateKey(id, body) : api.createKey(body)));
  if (!result) return;
  closeDialog(dialog);
  await loadKeys();
  if (id) {
    $('#keys-status').textContent = `Saved ${result.name}.`;
  } else {
    showSecret(result.key, result.secret);
  }
}

function showSecret(key, secret, graceUntil) {
  $('#secret-key-name').textContent = key.name;
  $('#secret-value').value = secret;
  $('#copy-status').textContent = '';
  const grace = $('#secret-grace');
  grace.hidden = !graceUntil;
  grace.textContent = graceUntil ? `The previous secret keeps working until ${new Date(graceUntil).toUTCString()}.` : '';
  returnFocusTo = $(`#keys-table tr[data-key-id="${CSS.escape(key.id)}"] button`) ?? $('#new-key');
  $('#secret-dialog').showModal();
  $('#secret-value').select();
}

async function copySecret() {
  const input = $('#secret-value');
  try {
    await navigator.clipboard.writeText(input.value);
    $('#copy-status').textContent = 'Copied to the clipboard.';
  } catch {
    input.select();
    $('#copy-status').textContent = 'Copying was blocked by the browser: the secret is selected, press Ctrl+C (⌘C).';
  }
}

function clearSecret() {
  // The secret leaves the page as soon as the dialog closes.
  $('#secret-value').value = '';
  restoreFocus();
}

function openConfirm(dialogSelector, key, opener) {
  const dialog = $(dialogSelector);
  dialog.dataset.keyId = key.id;
  for (const slot of dialog.querySelectorAll('[data-key-name]')) slot.textContent = `${key.name}${key.last4 ? ` (…${key.last4})` : ''}`;
  openDialog(dialog, opener);
}

async function submitRotate(event) {
  event.preventDefault();
  const dialog = $('#rotate-dialog');
  const region = $('[data-error]', dialog);
  const hours = Number($('#rotate-grace').value);
  if (!Number.isFinite(hours) || hours < 0 || hours > 720) return showError(region, 'The grace period is 0 to 720 hours.');
  const result = await attempt(region, () => api.rotateKey(dialog.dataset.keyId, Math.round(hours * 3600)));
  if (!result) return;
  closeDialog(dialog);
  await loadKeys();
  showSecret(result.key, result.secret, hours > 0 ? result.previousSecretExpiresAt : undefined);
}

/** Undo a revocation at once (no confirmation: it only gives back what the key had). */
async function restoreKey(key, button) {
  const result = await attempt($('#keys-error'), () => api.restoreKey(key.id));
  if (!result) return;
  await loadKeys();
  $('#keys-status').textContent = `Restored ${result.name}.`;
  returnFocusTo = $(`#keys-table tr[data-key-id="${CSS.escape(result.id)}"] button`) ?? button;
  restoreFocus();
}

async function submitRevoke(event) {
  event.preventDefault();
  const dialog = $('#revoke-dialog');
  const result = await attempt($('[data-error]', dialog), () => api.revokeKey(dialog.dataset.keyId));
  if (!result) return;
  closeDialog(dialog);
  await loadKeys();
  $('#keys-status').textContent = `Revoked ${result.name}.`;
  returnFocusTo = $(`#keys-table tr[data-key-id="${CSS.escape(result.id)}"] button`);
  restoreFocus();
}

// ---- usage --------------------------------------------------------------------------------------

function usageTable(usage) {
  const header = el('tr', {}, ...['Model', 'Requests', 'Input tokens', 'Output tokens', 'Credits'].map((label) => el('th', { scope: 'col' }, label)));
  const rows = usage.models.map((row) => el('tr', {},
    el('th', { scope: 'row', 'data-label': 'Model' }, row.model),
    el('td', { 'data-label': 'Requests' }, formatCount(row.requests)),
    el('td', { 'data-label': 'Input tokens' }, formatCount(row.inputTokens + row.cacheCreationInputTokens + row.cacheReadInputTokens)),
    el('td', { 'data-label': 'Output tokens' }, formatCount(row.outputTokens)),
    el('td', { 'data-label': 'Credits' }, formatCredits(row.credits))));
  const t = usage.totals;
  const total = el('tr', { class: 'total' },
    el('th', { scope: 'row', 'data-label': 'Model' }, 'Total'),
    el('td', { 'data-label': 'Requests' }, formatCount(t.requests)),
    el('td', { 'data-label': 'Input tokens' }, formatCount(t.inputTokens + t.cacheCreationInputTokens + t.cacheReadInputTokens)),
    el('td', { 'data-label': 'Output tokens' }, formatCount(t.outputTokens)),
    el('td', { 'data-label': 'Credits' }, formatCredits(t.credits)));
  return el('table', { class: 'usage-table' },
    el('caption', {}, `Usage in ${usage.month} (UTC)`),
    el('thead', {}, header), el('tbody', {}, ...rows, total));
}

async function showUsage(event) {
  event?.preventDefault();
  const id = $('#usage-key').value;
  const month = $('#usage-month').value;
  const region = $('#usage-error');
  if (!id) return showError(region, 'Choose a key.');
  if (!/^\d{4}-\d{2}$/.test(month)) return showError(region, 'Choose a month.');
  const usage = await attempt(region, () => api.usage(id, month));
  if (!usage) return;
  const key = keyById(id);
  const result = $('#usage-result');
  if (usage.models.length === 0) {
    result.replaceChildren(el('p', { class: 'hint' }, `No usage for ${key?.name ?? id} in ${usage.month}.`));
    return;
  }
  const capText = usage.monthlyCreditCap === null ? 'no cap' : `cap ${formatCredits(usage.monthlyCreditCap)} credits`;
  result.replaceChildren(
    el('p', { class: 'usage-summary' }, `${key?.name ?? id}: ${formatCredits(usage.totals.credits)} credits in ${usage.month} (${capText}), ${formatCount(usage.totals.requests)} ${usage.totals.requests === 1 ? 'request' : 'requests'}.`),
    drawBarChart(usage.models.map((row) => ({ label: row.model, value: row.credits })), {
      title: `Credits by model for ${key?.name ?? id} in ${usage.month}`,
      format: (value) => `${formatCredits(value)} cr`,
      width: result.clientWidth,
    }),
    usageTable(usage),
  );
}

// ---- wiring -------------------------------------------------------------------------------------

function onTableClick(event) {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const key = keyById(button.dataset.keyId);
  if (!key) return;
  switch (button.dataset.action) {
    case 'usage':
      $('#usage-key').value = key.id;
      void showUsage().then(() => $('#usage-title').scrollIntoView({ block: 'start' }));
      break;
    case 'edit':
      openKeyDialog(key, button);
      break;
    case 'rotate':
      openConfirm('#rotate-dialog', key, button);
      break;
    case 'revoke':
      openConfirm('#revoke-dialog', key, button);
      break;
    case 'restore':
      void restoreKey(key, button);
      break;
  }
}

function wire() {
  $('#sign-in-form').addEventListener('submit', signIn);
  $('#sign-out').addEventListener('click', () => signOut());
  $('#refresh').addEventListener('click', () => loadKeys());
  $('#new-key').addEventListener('click', (event) => openKeyDialog(undefined, event.currentTarget));
  $('#keys-table').addEventListener('click', onTableClick);
  $('#key-form').addEventListener('submit', submitKeyForm);
  $('#key-group').addEventListener('change', (event) => renderModelChoices(null, event.currentTarget.value));
  $('#rotate-form').addEventListener('submit', submitRotate);
  $('#revoke-form').addEventListener('submit', submitRevoke);
  $('#usage-form').addEventListener('submit', showUsage);
  $('#copy-secret').addEventListener('click', copySecret);
  $('#secret-dialog').addEventListener('close', clearSecret);
  for (const dialog of document.querySelectorAll('dialog')) {
    if (dialog.id !== 'secret-dialog') dialog.addEventListener('close', restoreFocus);
    for (const button of dialog.querySelectorAll('[data-close]')) button.addEventListener('click', () => closeDialog(dialog));
  }
}

wire();
initSpend(attempt);
initSessions(attempt);
if (readToken()) void enter();
else $('#admin-token').focus();
// Sign-in through the company's identity provider, when the gateway has it (`auth.oidc`).
void fetch('/dashboard/sign-in.json', { cache: 'no-store' }).then((response) => { $('#oidc-sign-in').hidden = !response.ok; }, () => undefined);
