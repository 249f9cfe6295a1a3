/** What the browser tests (spec/browser/) launch chromium with, and how. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM } from '../setup';

/**
 * Loopback only: every host name resolves to nothing but the gateway's 127.0.0.1 (which also stops
 * the IPv6 reachability probe), and the browser's own services (updates, sync, safe browsing, DNS
 * prefetch, DNS over HTTPS, metrics) are off.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  '--disable-features=AsyncDns,DnsOverHttps,MediaRouter,OptimizationHints,Translate,NetworkTimeServiceQuerying',
  '--dns-prefetch-disable', '--no-pings', '--disable-domain-reliability', '--disable-client-side-phishing-detection',
  '--disable-default-apps', '--disable-breakpad', '--metrics-recording-only', '--safebrowsing-disable-auto-update',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp', '--force-webrtc-ip-handling-policy',
];

/** A chromium on a fresh profile, with the errors its page reports. */
export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /**
   * The page's console errors and uncaught exceptions, in order. `Failed to load resource` lines are
   * left out: the calls a test makes refused on purpose (401, 400) are logged by the browser too.
   */
  consoleErrors: string[];
  /** Close the browser and delete its profile. */
  close(): Promise<void>;
}

/**
 * Launch Debian's chromium (CHROMIUM, spec/setup.ts) headless with CHROMIUM_ARGS and a 1280 x 900
 * viewport on a new profile under the system's temporary folder (`prefix` names it).
 * @throws AssertionError when chromium is missing (apt-get install -y chromium)
 */
export async function openTestBrowser(prefix: string): Promise<TestBrowser> {
  expect(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`).to.equal(true);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 900 } });
  const page = context.pages()[0] ?? (await context.newPage());
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  return {
    context, page, consoleErrors,
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
