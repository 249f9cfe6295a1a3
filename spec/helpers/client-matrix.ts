/**
 * What the client-matrix specs (spec/integration/clients/) share: one gateway per spec file in front
 * of the agent-like fake upstream, one key per client (so each client's ledger is its own), the
 * ledger check, a probe that notices traffic to any address but the gateway, and ESM loading.
 */
import http from 'node:http';
import type net from 'node:net';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { listenOnLoopback } from '../../lib/http/loopback';
import { ADMIN_TOKEN, admin } from './admin';
import { createAgentUpstream, type AgentUpstream, type ReportedUsage } from './agent-upstream';
import { startTestGateway, type TestGateway } from './gateway';

export interface ClientGateway {
  gw: TestGateway;
  agent: AgentUpstream;
  /** The secret of each client's key, by key id. */
  keys: Record<string, string>;
  close(): Promise<void>;
}

/** A gateway with one key per id in `keyIds` (`sk-cs4-` + the id, padded), on the agent-like fake. */
export async function startClientGateway(keyIds: string[]): Promise<ClientGateway> {
  const agent = createAgentUpstream();
  const keys = Object.fromEntries(keyIds.map((id) => [id, `sk-cs4-client-${id}-${'0'.repeat(12)}`]));
  const gw = await startTestGateway({
    handler: agent.handler,
    overrides: { keys: keyIds.map((id) => ({ id, key: keys[id], rateLimitPerMinute: 100000 })) },
    // The admin API, for the usage by session of a client's run.
    env: { ADMIN_TOKEN },
  });
  return { gw, agent, keys, close: () => gw.close() };
}

/** The ledger fields the fake reports, summed over models. */
interface Totals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
}

function sumReported(reported: ReportedUsage[]): Totals {
  return {
    requests: reported.length,
    inputTokens: reported.reduce((s, u) => s + u.input_tokens, 0),
    outputTokens: reported.reduce((s, u) => s + u.output_tokens, 0),
    cacheCreationInputTokens: reported.reduce((s, u) => s + u.cache_creation_input_tokens, 0),
    cacheReadInputTokens: reported.reduce((s, u) => s + u.cache_read_input_tokens, 0),
  };
}

async function ledgerTotals(gw: TestGateway, keyId: string): Promise<Totals> {
  const rows = await gw.gateway.store.getUsage(keyId, new Date().toISOString().slice(0, 7));
  const sum = (field: keyof Totals) => rows.reduce((s, row) => s + row[field], 0);
  return { requests: sum('requests'), inputTokens: sum('inputTokens'), outputTokens: sum('outputTokens'), cacheCreationInputTokens: sum('cacheCreationInputTokens'), cacheReadInputTokens: sum('cacheReadInputTokens') };
}

/**
 * Asserts the key's ledger for this month equals the sum of `reported` (the fake's replies to this
 * key's requests), with at least one request. A reply is settled when its response closes, which
 * may be just after the client has read it, so the ledger is read again for up to 5 s until it
 * matches.
 */
/**
 * The hooks of one client's tests: before them, note where its usage starts in the fake upstream's
 * reports (the returned `index`, for expectLedgerEquals); before each, clear the recorded requests and
 * the upstream's script.
 */
export function trackClientTests(gateway: () => ClientGateway): { index: number } {
  const billedFrom = { index: 0 };
  before(() => {
    billedFrom.index = gateway().agent.reported.length;
  });
  beforeEach(() => {
    gateway().gw.upstream.requests.length = 0;
    gateway().agent.setScript({});
  });
  return billedFrom;
}

export async function expectLedgerEquals(gw: TestGateway, keyId: string, reported: ReportedUsage[]): Promise<void> {
  const expected = sumReported(reported);
  expect(expected.requests, 'the upstream was asked at least once').to.be.greaterThan(0);
  const deadline = Date.now() + 5000;
  let actual = await ledgerTotals(gw, keyId);
  while (JSON.stringify(actual) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    actual = await ledgerTotals(gw, keyId);
  }
  expect(actual).to.deep.equal(expected);
}

/**
 * Asserts that the request log holds exactly `requests` records of session `sessionId` for `keyId`
 * today, and that `/admin/v1/usage?groupBy=session` shows them as one session whose requests, tokens
 * and credits are their sums (records are written as each response closes: read again for up to 5 s).
 * @returns the session's row
 */
export async function expectOneSession(gw: TestGateway, keyId: string, sessionId: string, requests: number): Promise<Record<string, any>> {
  const today = new Date().toISOString().slice(0, 10);
  const readRecords = async () => {
    const response = await fetch(`${gw.url}/admin/v1/requests?from=${today}&to=${today}&keyId=${keyId}&sessionId=${encodeURIComponent(sessionId)}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const text = (await response.text()).trim();
    return text === '' ? [] : text.split('\n').map((line) => JSON.parse(line) as Record<string, any>);
  };
  const deadline = Date.now() + 5000;
  let records = await readRecords();
  while (records.length < requests && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    records = await readRecords();
  }
  expect(records, 'request log records of the session').to.have.length(requests);
  const usage = await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session&keyId=${keyId}`);
  expect(usage.status).to.equal(200);
  const rows = (usage.body.rows as Array<Record<string, any>>).filter((row) => row.sessionId === sessionId);
  expect(rows, 'one session row').to.have.length(1);
  const units = (credits: number) => Math.round(credits * 1e9);
  const sum = (field: string) => records.reduce((total, record) => total + record[field], 0);
  expect(rows[0]).to.include({ keyId, requests, inputTokens: sum('inputTokens'), outputTokens: sum('outputTokens') });
  expect(units(rows[0].credits)).to.equal(records.reduce((total, record) => total + units(record.credits), 0));
  expect(rows[0].credits).to.be.greaterThan(0);
  return rows[0];
}

/**
 * An HTTP(S) proxy that refuses everything and remembers what was asked of it. Given to a client
 * as HTTPS_PROXY / HTTP_PROXY (with NO_PROXY for loopback), it shows whether the client tried to
 * reach any address other than the gateway (telemetry, update checks, ...).
 */
export async function startRefusingProxy(): Promise<{ url: string; attempts: string[]; close(): Promise<void> }> {
  const attempts: string[] = [];
  const server = http.createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on('connect', (req: http.IncomingMessage, socket: net.Socket) => {
    attempts.push(`CONNECT ${req.url}`);
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  const { url, close } = await listenOnLoopback(server);
  return { url, attempts, close };
}

const dynamicImport = new Function('url', 'return import(url)') as (url: string) => Promise<any>;

/**
 * `import()` of an ES module from this CommonJS build: TypeScript would turn a written `import()`
 * into `require()`, which cannot load the ESM-only packages (ai, @ai-sdk/*, the agent SDK). The
 * package is resolved from this file first, so the import does not depend on the working directory.
 */
export function importEsm<T = any>(specifier: string): Promise<T> {
  return dynamicImport(pathToFileURL(require.resolve(specifier)).href);
}
