/**
 * The dashboard's team and member spend in a real browser (Debian's chromium, playwright-core): with
 * keys in a team, the spend panel shows the month's teams (share of the team cap) and members (share
 * of the member cap), from GET /admin/v1/usage?groupBy=team and user, summed over every day of the
 * gateway's month, also when that month (the gateway's clock) is one the browser has left.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { openTestBrowser, type TestBrowser } from '../helpers/browser';

const ALICE = 'sk-cs4-test-dash-alice-00044';
const BOB = 'sk-cs4-test-dash-bob-000044';

/** One team of two members, a key each (the config both dashboards below are started with). */
const TEAM_CONFIG = {
  teams: [{ id: 'core', name: 'Core team', monthlyCreditCap: 100, memberMonthlyCreditCap: 10 }],
  keys: [
    { id: 'alice-1', key: ALICE, team: 'core', owner: 'alice', rateLimitPerMinute: 1000 },
    { id: 'bob-1', key: BOB, team: 'core', owner: 'bob', rateLimitPerMinute: 1000 },
  ],
};

describe('dashboard: teams and members in a real browser', function () {
  this.timeout(120_000);
  let gateway: TestGateway;
  let page: Page;
  let browser: TestBrowser;
  let consoleErrors: string[];

  before(async () => {
    gateway = await startTestGateway({
      env: { ADMIN_TOKEN },
      overrides: TEAM_CONFIG,
    });
    browser = await openTestBrowser('gateway-dashboard-teams-');
    ({ page, consoleErrors } = browser);
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('shows the month\'s teams and members with their share of the team and member caps', async () => {
    expect(await sendMessage(gateway, ALICE)).to.equal(200);
    expect(await sendMessage(gateway, ALICE)).to.equal(200);
    expect(await sendMessage(gateway, BOB)).to.equal(200);
    await page.goto(`${gateway.url}/dashboard/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByLabel('Admin token').press('Enter');
    const teams = page.locator('#top-teams-table');
    await teams.locator('tbody tr', { hasText: 'Core team' }).waitFor();
    expect(await page.locator('#top-teams-title').isVisible()).to.equal(true);
    const teamRow = await teams.locator('tbody tr').first().locator('th, td').allTextContents();
    expect(teamRow.slice(0, 3)).to.deep.equal(['Core team', '2', '3']);
    expect(teamRow[4]).to.match(/%$/);
    const members = page.locator('#top-members-table tbody tr');
    expect(await members.count()).to.equal(2);
    const alice = await members.filter({ hasText: 'alice' }).locator('th, td').allTextContents();
    expect(alice.slice(0, 3)).to.deep.equal(['alice', 'core', '2']);
    expect(consoleErrors).to.deep.equal([]);
  });
});

describe('dashboard: a month the browser has left, in a real browser', function () {
  this.timeout(120_000);
  // The gateway's clock (its store's too) is in June 2025; the browser's is today's.
  let now = Date.parse('2025-06-01T10:00:00Z');
  let gateway: TestGateway;
  let browser: TestBrowser;

  before(async () => {
    gateway = await startTestGateway({
      env: { ADMIN_TOKEN },
      clock: () => now,
      overrides: TEAM_CONFIG,
    });
    browser = await openTestBrowser('gateway-dashboard-past-month-');
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('sums the teams, members and top keys over every day of the month, not its first day only', async () => {
    expect(await sendMessage(gateway, ALICE)).to.equal(200); // 1 June
    now = Date.parse('2025-06-12T09:00:00Z');
    expect(await sendMessage(gateway, ALICE)).to.equal(200);
    expect(await sendMessage(gateway, BOB)).to.equal(200);
    now = Date.parse('2025-06-30T23:00:00Z');
    expect(await sendMessage(gateway, BOB)).to.equal(200);
    // Settlement runs once each reply has closed: wait until the month holds all four.
    let usage = await admin(gateway, 'GET', '/usage?from=2025-06-01&to=2025-06-30&groupBy=team');
    for (let i = 0; i < 50 && usage.body.totals.requests < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      usage = await admin(gateway, 'GET', '/usage?from=2025-06-01&to=2025-06-30&groupBy=team');
    }
    expect(usage.body.totals.requests).to.equal(4);

    const { page, consoleErrors } = browser;
    await page.goto(`${gateway.url}/dashboard/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByLabel('Admin token').press('Enter');
    const teams = page.locator('#top-teams-table');
    await teams.locator('tbody tr', { hasText: 'Core team' }).waitFor();
    expect(await teams.locator('caption').textContent()).to.equal('Teams in 2025-06 (UTC), by credits');
    const teamRow = await teams.locator('tbody tr').first().locator('th, td').allTextContents();
    expect(teamRow.slice(0, 3), 'both members, all four requests').to.deep.equal(['Core team', '2', '4']);
    const members = page.locator('#top-members-table tbody tr');
    expect(await members.filter({ hasText: 'alice' }).locator('td').nth(1).textContent()).to.equal('2');
    expect(await members.filter({ hasText: 'bob' }).locator('td').nth(1).textContent()).to.equal('2');
    const keys = page.locator('#top-keys-table tbody tr');
    expect(await keys.count()).to.equal(2);
    expect(await keys.locator('td[data-label="Requests"]').allTextContents()).to.deep.equal(['2', '2']);
    expect(consoleErrors).to.deep.equal([]);
  });
});
