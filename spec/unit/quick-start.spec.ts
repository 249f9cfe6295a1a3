/**
 * The README's quick start gives the working lines for Claude Code and Codex on the embedded default:
 * Claude Code with a full catalogue ID (its own aliases would replace the gateway's), Codex with the
 * provider block; docs/clients.md says why an alias does not work for Claude Code. (The Claude Code
 * line itself is run by spec/integration/clients/claude-code.spec.ts, "on the embedded default".)
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

describe('README quick start: Claude Code and Codex on the embedded default', () => {
  const readme = read('README.md');
  const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 5));
  const shipped = JSON.parse(read('config.json')) as { models: Array<{ id: string }>; aliases: Record<string, string> };

  it('runs claude -p with ANTHROPIC_BASE_URL, a key and ANTHROPIC_MODEL set to a catalogue ID, not an alias', () => {
    const line = quickStart.split('\n').find((l) => /\bclaude -p\b/.test(l));
    expect(line, 'a claude -p line in the quick start').to.be.a('string');
    expect(line).to.match(/ANTHROPIC_BASE_URL=http:\/\/localhost:8080 /).and.match(/ANTHROPIC_API_KEY=\$KEY /);
    const model = /ANTHROPIC_MODEL=(\S+)/.exec(line!)?.[1];
    expect(shipped.models.map((m) => m.id)).to.include(model);
    expect(Object.keys(shipped.aliases)).to.not.include(model);
  });

  it('runs codex exec with the key in the provider variable', () => {
    expect(quickStart).to.match(/GATEWAY_API_KEY=\$KEY codex exec /);
    expect(readme).to.contain('env_key = "GATEWAY_API_KEY"').and.contain('wire_api = "responses"');
  });

  it('docs/clients.md says why an alias does not work with Claude Code', () => {
    const clients = read('docs/clients.md');
    expect(clients).to.contain('**Why not an alias.**').and.contain('ANTHROPIC_MODEL=sonnet');
  });
});
