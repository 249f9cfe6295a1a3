/**
 * Sign-in, self-service and team-admin flows in a real browser (issue 44): Debian's chromium driven by
 * playwright-core, a test gateway with `auth.oidc`, and a real OpenID provider (`oidc-provider` on
 * loopback, spec/helpers/oidc-provider.ts) whose login and consent forms the browser fills in. A member
 * signs in from the dashboard's button, creates and rotates a key in dashboard/people.html; the team
 * admin signs in and revokes it there; the key is refused at once; sign-out ends the session.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { CHROMIUM } from '../setup';
import { CHROMIUM_ARGS } from '../helpers/browser';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider';
import { CLIENT, PEOPLE, signInOverrides } from '../helpers/people';
import { freePort } from '../helpers/ports';

describe('people: sign-in, own keys and team keys in a real browser', function () {
  this.timeout(180_000);
  let provider: TestOidcProvider;
  let gateway: TestGateway;
  const contexts: BrowserContext[] = [];
  const userDataDirs: string[] = [];
  const pageErrors: string[] = [];
  /** The member's key's secret, as the first test leaves it. */
  let bobSecret = '';

  /** A fresh browser profile (its own cookies: one person). */
  const openBrowser = async (): Promise<Page> => {
    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-people-'));
    userDataDirs.push(userDataDir);
    const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    return page;
  };

  /** From the dashboard's sign-in button through the provider's login and consent forms, back to people.html. */
  const signInAs = async (page: Page, login: string) => {
    await page.goto(`${gateway.url}/dashboard/`);
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${gateway.url}/dashboard/people.html`);
    await page.locator('#me-name').filter({ hasText: PEOPLE[login].name }).waitFor();
  };

  before(async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`).to.equal(true);
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider({ users: PEOPLE, clientId: CLIENT.id, clientSecret: CLIENT.secret, redirectUris: [`${baseUrl}/dashboard/callback`] });
    gateway = await startTestGateway({ overrides: signInOverrides(baseUrl, provider.issuer), env: { PORT: String(port), ADMIN_TOKEN, TEST_OIDC_CLIENT_SECRET: CLIENT.secret } });
  });

  after(async () => {
    for (const context of contexts) await context.close();
    await gateway?.close();
    await provider?.close();
    for (const dir of userDataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a member signs in and makes, rotates and sees their key; a cap above the member cap is refused', async () => {
    const page = await openBrowser();
    await signInAs(page, 'bob');
    expect(await page.locator('#me-roles').textContent()).to.equal('member');
    expect(await page.locator('#me-teams').textContent()).to.equal('Payments (member)');
    expect(await page.locator('#team-keys').isHidden()).to.equal(true);
    // The session cookie is out of the page's reach (HttpOnly).
    expect(await page.evaluate('document.cookie')).not.to.include('gateway_session');

    await page.getByLabel('Monthly credit cap').fill('50');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#own-keys-error').filter({ hasText: 'monthlyCreditCap: the member cap of team "payments" is 5' }).waitFor();

    await page.getByLabel('Monthly credit cap').fill('');
    await page.getByLabel('Name').fill('bob laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#own-keys-table tr', { hasText: 'bob laptop' }).waitFor();
    const secret = (await page.locator('#own-key-secret').textContent())!;
    expect(secret).to.match(/^sk-cs4-/);
    expect(await sendMessage(gateway, secret, 'model-haiku-4.5')).to.equal(200);
    expect(await page.locator('#own-keys-table tr', { hasText: 'bob laptop' }).textContent()).to.include('of 5 credits');

    await page.getByRole('button', { name: 'Rotate bob laptop' }).click();
    await page.locator('#own-key-secret').filter({ hasNotText: secret }).waitFor();
    const rotated = (await page.locator('#own-key-secret').textContent())!;
    expect(await sendMessage(gateway, secret, 'model-haiku-4.5')).to.equal(401);
    expect(await sendMessage(gateway, rotated, 'model-haiku-4.5')).to.equal(200);
    bobSecret = rotated;
  });

  it('the team admin sees the member\'s key and revokes it, refused at once; sign-out ends the session', async () => {
    const page = await openBrowser();
    await signInAs(page, 'dana');
    expect(await page.locator('#me-roles').textContent()).to.equal('team-admin, member');
    const row = page.locator('#team-keys-table tr', { hasText: 'bob laptop' });
    await row.waitFor();
    expect(await row.textContent()).to.include('bob');
    await page.getByRole('button', { name: 'Revoke bob laptop' }).click();
    await row.filter({ hasText: 'revoked' }).waitFor();
    expect(await sendMessage(gateway, bobSecret, 'model-haiku-4.5')).to.equal(401);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#people-signed-out-error').filter({ hasText: 'You are signed out.' }).waitFor();
    await page.reload();
    await page.locator('#people-signed-out').waitFor({ state: 'visible' });
    expect(await page.locator('#people-signed-out-error').textContent()).to.match(/or sign in at \/dashboard\/login/);
    expect(pageErrors).to.deep.equal([]);
  });
});
