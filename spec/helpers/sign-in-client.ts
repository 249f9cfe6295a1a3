/**
 * A browser stand-in for the sign-in tests: follows redirects by hand with one cookie jar per origin,
 * and fills in the provider's development login and consent forms, as a user would. Requests go
 * through node:http so a request for the gateway's public base URL can be sent to another instance
 * (same Host header: what a load balancer in front of several instances does).
 */
import http from 'node:http';

export interface SignedIn {
  /** The `gateway_session` cookie's value. */
  sessionCookie: string;
  /** The statuses and URLs the sign-in went through, for messages. */
  trail: string[];
  /** The callback's `Set-Cookie` headers. */
  setCookie: string[];
}

export interface HttpReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTP request to `url`, connected to `connectTo` (an origin) when given, else to the URL's own host. */
export function request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; connectTo?: string } = {}): Promise<HttpReply> {
  const target = new URL(url);
  const connect = new URL(init.connectTo ?? target.origin);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: connect.hostname, port: connect.port, method: init.method ?? 'GET', path: target.pathname + target.search,
      headers: { host: target.host, ...init.headers, ...(init.body !== undefined ? { 'content-length': String(Buffer.byteLength(init.body)) } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Cookies per origin (host and port, as this test needs: the provider and the gateway share 127.0.0.1). */
export class CookieJar {
  private readonly jars = new Map<string, Map<string, string>>();

  store(url: string, setCookie: string[] | undefined): void {
    const jar = this.jars.get(new URL(url).host) ?? new Map<string, string>();
    this.jars.set(new URL(url).host, jar);
    for (const line of setCookie ?? []) {
      const [pair, ...attributes] = line.split(';');
      const cut = pair.indexOf('=');
      const name = pair.slice(0, cut).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]) < Date.now()));
      if (expired) jar.delete(name);
      else jar.set(name, pair.slice(cut + 1).trim());
    }
  }

  header(url: string): string {
    return [...(this.jars.get(new URL(url).host) ?? new Map()).entries()].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(url: string, name: string): string | undefined {
    return this.jars.get(new URL(url).host)?.get(name);
  }
}

const formOf = (html: string) => {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
  return action && prompt ? { action: action.replace(/&amp;/g, '&'), prompt } : null;
};

/**
 * Sign in as `login` from `<baseUrl>/dashboard/login` through the provider's forms to the callback.
 * @param options.connectCallbackTo the origin of the instance that gets the callback (default: the base URL's)
 * @param options.connectLoginTo the origin of the instance that starts the sign-in (default: the base URL's)
 * @throws Error with the trail when no session cookie comes back
 */
export async function signIn(baseUrl: string, login: string, options: { connectLoginTo?: string; connectCallbackTo?: string; jar?: CookieJar } = {}): Promise<SignedIn> {
  const jar = options.jar ?? new CookieJar();
  const trail: string[] = [];
  let url = `${baseUrl}/dashboard/login`;
  let method = 'GET';
  let body: string | undefined;
  for (let step = 0; step < 20; step++) {
    const connectTo = url.startsWith(`${baseUrl}/dashboard/callback`) ? options.connectCallbackTo : url.startsWith(baseUrl) ? options.connectLoginTo : undefined;
    const headers: Record<string, string> = { cookie: jar.header(url) };
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const reply = await request(url, { method, headers, body, connectTo });
    jar.store(url, reply.headers['set-cookie']);
    trail.push(`${reply.status} ${method} ${url.split('?')[0]}`);
    const session = jar.get(baseUrl, 'gateway_session');
    if (session) return { sessionCookie: session, trail, setCookie: reply.headers['set-cookie'] ?? [] };
    if (reply.status >= 300 && reply.status < 400 && reply.headers.location) {
      url = new URL(reply.headers.location, url).href;
      method = 'GET';
      body = undefined;
      continue;
    }
    const form = reply.status === 200 ? formOf(reply.body) : null;
    if (!form) throw new Error(`sign-in of ${login} stopped: ${trail.join(' -> ')}: ${reply.body.slice(0, 300)}`);
    url = new URL(form.action, url).href;
    method = 'POST';
    body = new URLSearchParams(form.prompt === 'login' ? { prompt: 'login', login, password: 'any' } : { prompt: form.prompt }).toString();
  }
  throw new Error(`sign-in of ${login} did not finish: ${trail.join(' -> ')}`);
}
