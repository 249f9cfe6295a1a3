/** Admin API helpers for tests: the test admin token, an admin call, an API call with a key. */
import type { TestGateway } from './gateway';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Call the admin API of `gateway` (as the admin unless `token` says otherwise). */
export async function admin(gateway: TestGateway, method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN) {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}/admin/v1${path}`, {
    method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

/** A native request with `secret`; resolves with the status. */
export async function sendMessage(gateway: TestGateway, secret: string, model = 'model-sonnet-4.6'): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}
