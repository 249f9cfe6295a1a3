/**
 * The dashboard's team and member spend in a real browser (Debian's chromium, playwright-core): with
 * keys in a team, the spend panel shows the month's teams (share of the team cap) and members (share
 * of the member cap), from GET /admin/v1/usage?groupBy=team and user.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { openTestBrowser, type TestBrowser } from '../helpers/browser';

const ALICE = 'sk-cs4-test-dash-alice-00044';
const BOB = 'sk-cs4-test-dash-bob-000044';

describe('dashboard: teams and members in a real browser', function () {
  this.timeout(120_000);
  let gateway: TestGateway;
  let page: Page;
  let browser: TestBrowser;
  let consoleErrors: string[];

  before(async () => {
    gateway = await startTestGateway({
      env: { ADMIN_TOKEN },
      overrides: {
        teams: [{ id: 'core', name: 'Core team', monthlyCreditCap: 100, memberMonthlyCreditCap: 10 }],
        keys: [
          { id: 'alice-1', key: ALICE, team: 'core', owner: 'alice', rateLimitPerMinute: 1000 },
          { id: 'bob-1', key: BOB, team: 'core', owner: 'bob', rateLimitPerMinute: 1000 },
        ],
      },
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
