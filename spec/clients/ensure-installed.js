#!/usr/bin/env node
/**
 * Installs the client matrix (the SDKs and CLIs of spec/clients/package.json, about 1.3 GB with the
 * Claude Code and Codex binaries) when it is missing or stale, so the gateway's own `npm ci` stays
 * light and `npm test` still finds every client. Run by `npm test` / `npm run build` (their pre-scripts)
 * and by .ci/run; plain Node, because it runs before anything is compiled.
 *
 * Stale means: the lockfile's SHA-256 differs from the one written after the last install
 * (node_modules/.installed-lock). Exits with npm's status when the install fails.
 *
 * `node spec/clients/ensure-installed.js DIR` does the same for another package of its own kept out of the
 * gateway's install: the bench's peers (bench/peers, the gateways measured side by side), run by `npm run bench`.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.argv[2] ? path.resolve(process.argv[2]) : __dirname;
const stamp = path.join(dir, 'node_modules', '.installed-lock');
const lockHash = createHash('sha256').update(fs.readFileSync(path.join(dir, 'package-lock.json'))).digest('hex');

const installed = fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8').trim() : '';
if (installed !== lockHash) {
  process.stderr.write(dir === __dirname
    ? 'installing the test clients (spec/clients: SDKs and CLIs the client tests drive)...\n'
    : `installing ${path.relative(process.cwd(), dir) || dir} (its package.json, kept out of the gateway's install)...\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
  fs.writeFileSync(stamp, `${lockHash}\n`);
}
