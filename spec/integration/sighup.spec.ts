/** The server process re-reads its config file on SIGHUP (npm start / the Procfile's web process). */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { KEYS, testConfigObject } from '../helpers/gateway';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { eventually } from '../helpers/library';
import { tempDir } from '../helpers/temp-dir';

describe('SIGHUP', () => {
  let upstream: FakeUpstream;
  let child: ChildProcess | undefined;
  before(async () => {
    upstream = await startFakeUpstream();
  });
  after(async () => {
    child?.kill('SIGTERM');
    await upstream.close();
  });

  it('reloads a valid config and keeps the old one when the new one is invalid', async () => {
    const file = path.join(tempDir('gw-sighup-'), 'config.json');
    const config = testConfigObject(upstream.url);
    fs.writeFileSync(file, JSON.stringify(config));
    const lines: Array<Record<string, any>> = [];
    child = spawn(process.execPath, [path.resolve(__dirname, '..', '..', 'lib', 'server.js')], {
      env: {
        ...process.env, GATEWAY_CONFIG: file, PORT: '0', REDIS_URL: '', WEB_CONCURRENCY: '1', METRICS_TOKEN: '',
        GATEWAY_STATE_FILE: path.join(path.dirname(file), 'state.json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      for (const part of parts) if (part.trim().startsWith('{')) lines.push(JSON.parse(part));
    });
    await eventually(() => lines.some((l) => l.message === 'gateway listening'), 15000);
    const port = lines.find((l) => l.message === 'gateway listening')!.port;
    const models = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { 'x-api-key': KEYS.all } })).json()) as any).data.map((m: any) => m.id);
    expect(await models()).to.include('model-opus-5');

    fs.writeFileSync(file, JSON.stringify({ ...config, models: (config.models as any[]).filter((m) => m.id !== 'model-opus-5') }));
    child.kill('SIGHUP');
    await eventually(() => lines.some((l) => l.message === 'configuration reloaded'), 10000);
    expect(await models()).to.not.include('model-opus-5');

    fs.writeFileSync(file, '{"models": "not a list"');
    child.kill('SIGHUP');
    await eventually(() => lines.some((l) => l.message === 'configuration reload refused; the current configuration stays'), 10000);
    expect(lines.find((l) => l.message === 'configuration reload refused; the current configuration stays')!.reason).to.contain('not valid JSON');
    expect(await models()).to.have.length(7);
  });
});
