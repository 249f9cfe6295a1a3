/**
 * The dashboard end to end in a real browser: Debian's chromium, driven by playwright-core, against a
 * test gateway (fake upstream on 127.0.0.1). Sign in, create a key, use it, see its usage, rotate it,
 * revoke it, see it refused, restore it. Saves a screenshot (env DASHBOARD_SCREENSHOT, default
 * dist/dashboard.png; `npm run screenshot:dashboard` refreshes docs/dashboard.png).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { openTestBrowser, type TestBrowser } from '../helpers/browser';

const SCREENSHOT = path.resolve(process.env.DASHBOARD_SCREENSHOT ?? path.join(__dirname, '..', '..', 'dashboard.png'));

/** Resolves when `check` passes, retrying while the gateway settles the usage of the last reply. */
async function eventually(check: () => Promise<void>, attempts = 100): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await check();
    } catch (err) {
      if (attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('dashboard in a real browser', function () {
  this.timeout(180_000);
  let gateway: TestGateway;
  let page: Page;
  let browser: TestBrowser;
  let consoleErrors: string[];

  before(async () => {
    gateway = await startTestGateway({ env: { ADMIN_TOKEN } });
    browser = await openTestBrowser('gateway-dashboard-');
    ({ page, consoleErrors } = browser);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway.url });
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('signs in, creates, uses, rotates, revokes and restores a key', async () => {
    await page.goto(`${gateway.url}/dashboard/`);

    // A wrong token is refused in place; the right one (typed, then Enter) signs in.
    await page.getByLabel('Admin token').fill('not-the-admin-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#sign-in [role="alert"]').filter({ hasText: 'That admin token was refused.' }).waitFor();
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByLabel('Admin token').press('Enter');
    const table = page.locator('#keys-table');
    await table.locator('tr', { hasText: 'team-all' }).waitFor();
    expect(await table.locator('tbody tr').count()).to.equal(3);
    expect(await table.locator('tr', { hasText: 'team-revoked' }).locator('.badge').textContent()).to.equal('revoked');
    expect(page.url()).not.to.include(ADMIN_TOKEN);
    expect(await page.evaluate("sessionStorage.getItem('model-gateway.adminToken')")).to.equal(ADMIN_TOKEN);
    expect(await page.evaluate('localStorage.length')).to.equal(0);

    // Create: name, cap, two allowed models from the catalogue.
    await page.getByRole('button', { name: 'New key' }).click();
    const keyDialog = page.locator('#key-dialog');
    await keyDialog.getByLabel('Name').fill('Browser team');
    await keyDialog.getByLabel('Rate limit (requests per minute)').fill('120');
    await keyDialog.getByLabel('Monthly credit cap').fill('2');
    await keyDialog.getByLabel('model-sonnet-4.6').check();
    await keyDialog.getByLabel('model-haiku-4.5').check();
    await keyDialog.getByRole('button', { name: 'Create key' }).click();

    // The secret, once, with a warning and a copy button.
    const secretDialog = page.locator('#secret-dialog');
    await secretDialog.waitFor({ state: 'visible' });
    expect(await secretDialog.textContent()).to.include('it will not be shown again');
    const secret = await secretDialog.getByLabel(/Secret for Browser team/).inputValue();
    expect(secret).to.match(/^sk-cs4-[A-Za-z0-9]{40}$/);
    // The clipboard API needs a focused document.
    await page.bringToFront();
    await secretDialog.getByRole('button', { name: 'Copy' }).click();
    await secretDialog.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).to.equal(secret);
    await secretDialog.getByRole('button', { name: 'I have stored it' }).click();
    await secretDialog.waitFor({ state: 'hidden' });
    // The dialog's close event (which wipes the secret from the page) fires just after it hides.
    await page.waitForFunction("document.getElementById('secret-value').value === ''");
    const row = table.locator('tr', { hasText: 'Browser team' });
    expect(await row.textContent()).to.include(`…${secret.slice(-4)}`);
    expect(await row.textContent()).to.include('120/min');
    expect(await row.textContent()).to.include('model-sonnet-4.6, model-haiku-4.5');
    expect(await page.content()).not.to.include(secret);

    // An API error is shown in place, in the dialog that caused it.
    await row.getByRole('button', { name: 'Edit Browser team' }).click();
    await keyDialog.getByLabel('Rate limit (requests per minute)').fill('0');
    await keyDialog.getByRole('button', { name: 'Save changes' }).click();
    await keyDialog.locator('[role="alert"]').filter({ hasText: 'rateLimitPerMinute: must be >= 1' }).waitFor();
    await keyDialog.getByLabel('Rate limit (requests per minute)').fill('90');
    await keyDialog.getByRole('button', { name: 'Save changes' }).click();
    await keyDialog.waitFor({ state: 'hidden' });
    await row.filter({ hasText: '90/min' }).waitFor();

    // Use the key; its usage appears by model, and the spend bar moves.
    expect(await sendMessage(gateway, secret, 'sonnet')).to.equal(200);
    expect(await sendMessage(gateway, secret, 'model-sonnet-4.6')).to.equal(200);
    expect(await sendMessage(gateway, secret, 'model-opus-4.8')).to.equal(403);
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      const spent = Number(await row.getByRole('meter').getAttribute('aria-valuenow'));
      expect(spent).to.be.greaterThan(0);
    });
    await row.getByRole('button', { name: 'Usage Browser team' }).click();
    const usage = page.locator('#usage-result');
    await usage.locator('svg[role="img"]').waitFor();
    const usageRow = usage.locator('table tbody tr', { hasText: 'model-sonnet-4.6' });
    expect(await usageRow.locator('td').first().textContent()).to.equal('2');
    expect(await usage.locator('svg title').first().textContent()).to.equal(`Credits by model for Browser team in ${new Date().toISOString().slice(0, 7)}`);
    expect(await usage.locator('svg .chart-bar').count()).to.equal(1);
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // Rotate with a one-hour grace period: both secrets work.
    await row.getByRole('button', { name: 'Rotate Browser team' }).click();
    const rotateDialog = page.locator('#rotate-dialog');
    await rotateDialog.getByLabel('Grace period (hours)').fill('1');
    await rotateDialog.getByRole('button', { name: 'Rotate' }).click();
    await secretDialog.waitFor({ state: 'visible' });
    const rotated = await page.locator('#secret-value').inputValue();
    expect(rotated).to.match(/^sk-cs4-/).and.not.equal(secret);
    expect(await secretDialog.textContent()).to.include('The previous secret keeps working until');
    await page.keyboard.press('Escape');
    await secretDialog.waitFor({ state: 'hidden' });
    await row.filter({ hasText: `…${rotated.slice(-4)}` }).waitFor();
    expect(await sendMessage(gateway, rotated)).to.equal(200);
    expect(await sendMessage(gateway, secret)).to.equal(200);

    // Revoke, confirmed from the keyboard: Cancel has the focus, Tab reaches "Revoke key".
    await row.getByRole('button', { name: 'Revoke Browser team' }).click();
    const revokeDialog = page.locator('#revoke-dialog');
    await revokeDialog.waitFor({ state: 'visible' });
    expect(await revokeDialog.textContent()).to.include('until the key is restored');
    expect(await page.evaluate('document.activeElement?.textContent')).to.equal('Cancel');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).to.equal('Revoke key');
    await page.keyboard.press('Enter');
    await revokeDialog.waitFor({ state: 'hidden' });
    await row.locator('.badge', { hasText: 'revoked' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Revoked Browser team.' }).waitFor();
    expect(await row.getByRole('button', { name: 'Rotate Browser team' }).count()).to.equal(0);
    expect(await sendMessage(gateway, rotated)).to.equal(401);
    expect(await sendMessage(gateway, secret)).to.equal(401);
    expect(await sendMessage(gateway, 'sk-cs4-test-all-models-0001')).to.equal(200);

    // Restore undoes the revocation: the secrets work again (the previous one is still in its grace period).
    await row.getByRole('button', { name: 'Restore Browser team' }).click();
    await row.locator('.badge', { hasText: 'active' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Restored Browser team.' }).waitFor();
    expect(await sendMessage(gateway, rotated)).to.equal(200);
    expect(await sendMessage(gateway, secret)).to.equal(200);
    expect(await row.getByRole('button', { name: 'Restore Browser team' }).count()).to.equal(0);

    expect(consoleErrors).to.deep.equal([]);
  });

  it('shows spend over time by model, the top keys, the request log with filters and a CSV download; sets alert thresholds', async () => {
    expect(await sendMessage(gateway, KEYS.all, 'haiku')).to.equal(200);
    expect(await sendMessage(gateway, KEYS.all, 'sonnet')).to.equal(200);
    expect(await sendMessage(gateway, KEYS.haikuOnly, 'haiku')).to.equal(200);
    const today = new Date().toISOString().slice(0, 10);
    const todayBar = page.locator(`#daily-result .chart-day[data-day="${today}"] rect.chart-segment`);
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.locator('#top-keys-table tr', { hasText: 'team-haiku' }).waitFor({ timeout: 1000 });
    });
    // All keys: today's bar is stacked by model (sonnet from the first test and now, haiku).
    expect(await page.locator('#daily-result svg title').first().textContent()).to.match(/^Credits per day by model for all keys, /);
    expect(await page.locator('#daily-result .chart-day').count()).to.equal(30);
    expect(await todayBar.evaluateAll((rects) => rects.map((rect) => rect.getAttribute('data-model')).sort())).to.deep.equal(['model-haiku-4.5', 'model-sonnet-4.6']);
    expect(await page.locator('#daily-result .chart-legend').textContent()).to.include('model-haiku-4.5');
    // One key.
    await page.getByLabel('Key', { exact: true }).and(page.locator('#daily-key')).selectOption('team-haiku');
    await page.getByRole('button', { name: 'Show spend' }).click();
    await page.locator('#daily-result svg title', { hasText: 'for team-haiku' }).waitFor({ state: 'attached' });
    expect(await todayBar.evaluateAll((rects) => rects.map((rect) => rect.getAttribute('data-model')))).to.deep.equal(['model-haiku-4.5']);
    expect(await page.locator('#top-keys-table tbody tr').count()).to.equal(3);

    // The request log, filtered by key, then downloaded as CSV.
    const log = page.locator('#request-log');
    await log.getByLabel('Key').selectOption('team-all');
    await log.getByRole('button', { name: 'Show requests' }).click();
    await page.locator('#log-table tbody tr').first().waitFor();
    const keysShown = await page.locator('#log-table tbody tr td[data-label="Key"]').allTextContents();
    expect(keysShown.length, 'one request in the first test, two here').to.equal(3);
    expect(new Set(keysShown)).to.deep.equal(new Set(['team-all']));
    expect(await page.locator('#log-table').textContent()).not.to.include('Hi');
    // The screenshot (docs/dashboard.png) shows every key's spend by model.
    await page.locator('#daily-key').selectOption('');
    await page.getByRole('button', { name: 'Show spend' }).click();
    await page.locator('#daily-result svg title', { hasText: 'for all keys' }).waitFor({ state: 'attached' });
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    const [download] = await Promise.all([page.waitForEvent('download'), log.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).to.equal(`requests-${today}-${today}.csv`);
    const csv = fs.readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
    expect(csv[0]).to.match(/^time,requestId,keyId,/);
    expect(csv.slice(1).every((line) => line.includes(',team-all,'))).to.equal(true);
    expect(csv).to.have.length(4);

    // Alert thresholds per key, in the key dialog.
    const row = page.locator('#keys-table tr', { hasText: 'team-all' });
    // A key declared in config.json: the file sets its secret, name and limits; its alerts are edited here.
    expect(await row.textContent()).to.include('declared in config.json');
    expect(await row.getByRole('button', { name: 'Rotate team-all' }).count()).to.equal(0);
    await row.getByRole('button', { name: 'Edit team-all' }).click();
    const keyDialog = page.locator('#key-dialog');
    expect(await keyDialog.getByLabel('Name').isDisabled()).to.equal(true);
    expect(await keyDialog.locator('#key-cap').isDisabled()).to.equal(true);
    expect(await keyDialog.textContent()).to.include('50, 80, 100');
    await keyDialog.getByLabel('Budget alerts (% of the cap)').fill('ninety');
    await keyDialog.getByRole('button', { name: 'Save changes' }).click();
    await keyDialog.locator('[role="alert"]').filter({ hasText: 'whole percentages' }).waitFor();
    await keyDialog.getByLabel('Budget alerts (% of the cap)').fill('90, 75');
    await keyDialog.getByRole('button', { name: 'Save changes' }).click();
    await keyDialog.waitFor({ state: 'hidden' });
    const saved = await fetch(`${gateway.url}/admin/v1/keys/team-all`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(((await saved.json()) as any).alertThresholds).to.deep.equal([75, 90]);
    expect(consoleErrors).to.deep.equal([]);
  });

  it('lists the day\'s agent sessions of a key with requests, tokens, credits and duration, and opens a session\'s requests', async () => {
    const session = 'c0ffee00-1111-4222-8333-944445555666';
    const send = (headers: Record<string, string>) => fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
    }).then(async (response) => (await response.arrayBuffer(), response.status));
    expect(await send({ 'x-claude-code-session-id': session })).to.equal(200);
    expect(await send({ 'x-claude-code-session-id': session, 'x-claude-code-agent-id': 'agent-explore' })).to.equal(200);
    expect(await send({ 'session-id': 'codex-session-2' })).to.equal(200);
    const panel = page.locator('#sessions');
    await panel.getByLabel('Key').selectOption('team-all');
    const sessionRow = page.locator(`#sessions-table tr[data-session-id="${session}"]`);
    await eventually(async () => {
      await panel.getByRole('button', { name: 'Show sessions' }).click();
      await page.locator('#sessions-table tr[data-session-id="codex-session-2"]').waitFor({ timeout: 1000 });
      expect(await sessionRow.locator('td[data-label="Requests"]').textContent()).to.equal('2');
    });
    expect(await page.locator('#sessions-table tbody tr').count()).to.equal(2);
    expect(await sessionRow.locator('td[data-label="Agents"]').textContent()).to.equal('agent-explore');
    expect(await sessionRow.locator('td[data-label="Credits"]').textContent()).to.match(/\d/);
    expect(await sessionRow.locator('td[data-label="Duration"]').textContent()).to.match(/^\d+ s$/);
    expect(await page.locator('#sessions-status').textContent()).to.match(/^2 sessions on \d{4}-\d{2}-\d{2} \(UTC\); \d+ requests? sent no session id\.$/);
    // "Requests" opens the session's requests in the request log.
    await sessionRow.getByRole('button', { name: `Requests of session ${session}` }).click();
    await eventually(async () => {
      expect(await page.locator('#log-table tbody tr td[data-label="Session"]').allTextContents()).to.deep.equal([session, session]);
    });
    expect(await page.locator('#log-session').inputValue()).to.equal(session);
    await page.locator('#log-session').fill('');
    expect(consoleErrors).to.deep.equal([]);
  });

  it('is legible on a narrow screen: no sideways scrolling, rows become cards', async () => {
    await page.setViewportSize({ width: 360, height: 800 });
    await page.reload();
    await page.locator('#keys-table tbody tr').first().waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).to.be.at.most(0);
    expect(await page.locator('#keys-table thead').evaluate((head) => head.getBoundingClientRect().height)).to.be.at.most(1);
    await page.getByRole('button', { name: 'New key' }).click();
    const box = await page.locator('#key-dialog').boundingBox();
    expect(box!.x).to.be.at.least(0);
    expect(box!.x + box!.width).to.be.at.most(360);
    await page.keyboard.press('Escape');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('signs out, forgetting the token, and a refused token sends the operator back to sign-in', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('model-gateway.adminToken')")).to.equal(null);
    // A token stored earlier that the gateway no longer accepts (ADMIN_TOKEN changed).
    await page.evaluate("sessionStorage.setItem('model-gateway.adminToken', 'an-old-admin-token-value')");
    await page.reload();
    await page.locator('#sign-in [role="alert"]').filter({ hasText: 'The admin token was refused' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('model-gateway.adminToken')")).to.equal(null);
  });
});
