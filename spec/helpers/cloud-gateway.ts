/**
 * A gateway process (`dist/lib/server.js`, as a deployment runs it) whose upstream pool has targets on
 * the three clouds, each a local fake that checks what its cloud checks: Amazon Bedrock (SigV4
 * recomputed with the AWS SDK's signer; credentials from the AWS SDK's default chain, here the
 * environment keys), Google Vertex AI (only OAuth tokens its token endpoint issued for a test-made
 * service-account key, fetched by google-auth-library through an HTTPS proxy: google-token-proxy.ts)
 * and Microsoft Foundry (its API key header). Each fake answers with one native FakeHandler (e.g.
 * agent-upstream.ts's tool loop), so usage reported and usage billed can be compared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ADMIN_TOKEN } from './admin';
import { startFakeBedrock, type FakeBedrock } from './fake-bedrock';
import { nativeBedrockScript } from './fake-bedrock-native';
import { startFakeFoundry, type FakeFoundry } from './fake-foundry';
import { createServiceAccount, startFakeVertex, type FakeVertex } from './fake-vertex';
import { defaultHandler, type FakeHandler } from './fake-upstream';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from './gateway-process';
import { KEYS, testConfigObject } from './gateway';
import { startGoogleTokenProxy, type GoogleTokenProxy } from './google-token-proxy';
import { tempDir } from './temp-dir';

/** The test's AWS credentials (what the default chain finds in the gateway's environment). */
export const AWS_CREDENTIALS = { accessKeyId: 'AKIAGATEWAYTEST00001', secretAccessKey: 'gateway-test-aws-secret-never-shown', sessionToken: 'gateway-test-aws-session-token' };
export const AWS_REGION = 'us-east-1';
export const FOUNDRY_SECRET = 'gateway-test-foundry-secret-never-shown';
/** A Bedrock API key (bearer token) the fake also accepts, for a target with `apiKeyEnv: "BEDROCK_API_KEY"`. */
export const BEDROCK_API_KEY = 'ABSKgateway-test-bedrock-api-key-never-shown';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const CATALOGUE: Array<{ id: string; upstreamModel: string }> = require('../../../config.json').models;
const dashed = (id: string) => id.replace(/\./g, '-');

/** Each cloud's model ID of every catalogue model (a cloud target alone serves its whole key group). */
export const MODEL_IDS = {
  /** Cross-region inference profiles (CountTokens is sent the base model ID, `anthropic.` + the rest). */
  bedrock: Object.fromEntries(CATALOGUE.map((m) => [m.id, `us.anthropic.${dashed(m.id)}-v1:0`])),
  vertex: Object.fromEntries(CATALOGUE.map((m) => [m.id, dashed(m.id)])),
  foundry: Object.fromEntries(CATALOGUE.map((m) => [m.id, `deploy-${dashed(m.id)}`])),
};
/** A cloud's model ID -> the native model name a handler sees. */
const nativeNames = (ids: Record<string, string>) =>
  Object.fromEntries(CATALOGUE.map((m) => [ids[m.id], m.upstreamModel]));

export type Cloud = 'bedrock' | 'vertex' | 'foundry';

export interface CloudFakes {
  bedrock: FakeBedrock;
  vertex: FakeVertex;
  foundry: FakeFoundry;
  tokenProxy: GoogleTokenProxy;
  /** Answer every cloud's accepted requests with `handler` (native requests, native replies). */
  setHandler(handler: FakeHandler): void;
  /** The config of a target on `cloud` (`id` = the cloud's name unless `extra` says otherwise). */
  target(cloud: Cloud, extra?: Record<string, unknown>): Record<string, unknown>;
  /** The gateway env its targets need: AWS keys, the Foundry key, ADC's key file, the token proxy. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Start the three fakes, a service account for Vertex AI and the proxy to its token endpoint. */
export async function startCloudFakes(handler: FakeHandler = defaultHandler): Promise<CloudFakes> {
  const dir = tempDir('cloud-fakes-');
  const bedrockModels = Object.values(MODEL_IDS.bedrock);
  const [bedrock, vertex, foundry] = await Promise.all([
    startFakeBedrock({ region: AWS_REGION, credentials: AWS_CREDENTIALS, apiKey: BEDROCK_API_KEY, models: [...bedrockModels, ...bedrockModels.map((id) => id.replace(/^us\./, ''))] }),
    startFakeVertex({ models: nativeNames(MODEL_IDS.vertex) }),
    startFakeFoundry({ apiKey: FOUNDRY_SECRET, deployments: Object.values(MODEL_IDS.foundry) }),
  ]);
  const account = createServiceAccount(dir, vertex);
  const tokenProxy = await startGoogleTokenProxy(vertex.tokenUri);
  const setHandler = (next: FakeHandler) => {
    bedrock.setScript(nativeBedrockScript(next, nativeNames(MODEL_IDS.bedrock)));
    vertex.setHandler(next);
    foundry.setHandler(next);
  };
  setHandler(handler);
  const urls: Record<Cloud, string> = { bedrock: bedrock.url, vertex: vertex.url, foundry: foundry.endpoint };
  const cloudFields: Record<Cloud, Record<string, unknown>> = {
    bedrock: { region: AWS_REGION },
    vertex: { region: 'us-east5', projectId: vertex.projectId },
    foundry: { apiKeyEnv: 'FOUNDRY_API_KEY' },
  };
  return {
    bedrock, vertex, foundry, tokenProxy, setHandler,
    target: (cloud, extra = {}) => ({ id: cloud, provider: cloud, url: urls[cloud], modelIds: MODEL_IDS[cloud], ...cloudFields[cloud], ...extra }),
    env: {
      AWS_ACCESS_KEY_ID: AWS_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: AWS_CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: AWS_CREDENTIALS.sessionToken,
      // Nothing but the environment keys: no shared files of the machine's, no instance metadata.
      AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'no-aws-credentials'), AWS_CONFIG_FILE: path.join(dir, 'no-aws-config'), AWS_EC2_METADATA_DISABLED: 'true',
      GOOGLE_APPLICATION_CREDENTIALS: account.keyFile, HOME: dir,
      FOUNDRY_API_KEY: FOUNDRY_SECRET, BEDROCK_API_KEY,
      ...tokenProxy.env,
    },
    async close() {
      await Promise.all([bedrock.close(), vertex.close(), foundry.close(), tokenProxy.close()]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Usage totals of a key this month, as the admin API reports them. */
export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens?: number;
  cacheReadInputTokens?: number;
  credits?: number;
  [field: string]: unknown;
}

export interface CloudGateway extends GatewayProcess {
  /** `GET /admin/v1/keys/{keyId}/usage` totals, once `requests` have been billed (waits up to 5 s for the finish steps). */
  usage(requests: number, keyId?: string): Promise<UsageTotals>;
}

/**
 * Start a gateway process whose top-level upstream is `targets` (fakes.target(...) entries), with the
 * test keys (KEYS) and the admin token (admin.ts ADMIN_TOKEN).
 * @param upstream more fields of the `upstream` section (breaker, retries, timeouts)
 * @param env more env of the gateway (a first-party target's `apiKeyEnv`)
 */
export async function startCloudGateway(
  fakes: CloudFakes, targets: Array<Record<string, unknown>>, upstream: Record<string, unknown> = {}, env: Record<string, string> = {},
): Promise<CloudGateway> {
  const base = testConfigObject('http://127.0.0.1:1');
  const file = writeTempConfig({ ...base, upstream: { targets, timeoutMs: 10_000, retryBaseDelayMs: 5, ...upstream } });
  const gateway = await startGatewayProcess({ GATEWAY_CONFIG: file, ADMIN_TOKEN, REDIS_URL: '', WEB_CONCURRENCY: '1', ...fakes.env, ...env });
  return {
    ...gateway,
    async usage(requests, keyId = 'team-all') {
      let totals: UsageTotals = { requests: -1, inputTokens: 0, outputTokens: 0 };
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        const response = await fetch(`${gateway.url}/admin/v1/keys/${keyId}/usage`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        totals = ((await response.json()) as { totals: UsageTotals }).totals;
        if (totals.requests >= requests) break;
      }
      return totals;
    },
  };
}

export { KEYS };
