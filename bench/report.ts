/**
 * Turning bench figures into text: the machine and versions, the results table, the targets, and
 * the generated section of bench/RESULTS.md (between markers, so the hand-written notes stay).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median } from './measure';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  os: string;
  commit: string;
  /** 1-minute load average when the run started (other work on the machine skews absolute figures). */
  loadAverage: number;
  packages: Record<string, string>;
}

const PACKAGES = ['express', 'http-proxy', 'winston', 'ajv', 'eventsource-parser', 'redis', 'express-rate-limit', 'autocannon'];

/** The machine the run happened on, and the versions of what it ran. */
export function describeMachine(repoRoot: string): Machine {
  const packages: Record<string, string> = {};
  for (const name of PACKAGES) {
    try {
      packages[name] = JSON.parse(fs.readFileSync(path.join(repoRoot, 'node_modules', name, 'package.json'), 'utf8')).version;
    } catch {
      // not installed in this build
    }
  }
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain', '--', 'lib', 'middleware', 'routes', 'translators'], { cwd: repoRoot, encoding: 'utf8' }).trim()) commit += ' (+ local changes)';
  } catch {
    // not a git checkout
  }
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    commit,
    loadAverage: Math.round(os.loadavg()[0] * 10) / 10,
    packages,
  };
}

/** A fixed-width text table (for the terminal); the first row is the header. */
export function formatTextTable(rows: string[][]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** A Markdown table; the first row is the header, columns after the first are right-aligned. */
export function formatMarkdownTable(rows: string[][]): string {
  const line = (row: string[]) => `| ${row.join(' | ')} |`;
  const rule = `|${rows[0].map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`;
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].join('\n');
}

/** `n` with `digits` decimals, or `-` when not a number. */
export function fixed(n: number | undefined, digits = 1): string {
  return n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);
}

/**
 * A ratio target's figure: the median of the repeats' ratios to the forwarder, and their spread when
 * there are several (on a shared machine one repeat can sit well off the others), e.g.
 * `0.59 x (repeats 0.53 to 0.60)`; `-` when there are none.
 */
export function formatRatio(ratios: number[]): string {
  if (ratios.length === 0) return '-';
  const shown = `${fixed(median(ratios), 2)} x`;
  return ratios.length > 1 ? `${shown} (repeats ${fixed(Math.min(...ratios), 2)} to ${fixed(Math.max(...ratios), 2)})` : shown;
}

export const START_MARKER = '<!-- bench:results:start (written by `npm run bench`; edit outside these markers) -->';
export const END_MARKER = '<!-- bench:results:end -->';

/**
 * Put `generated` between the markers of `file`, keeping everything outside them. A file without
 * markers gets the section appended; a missing file is created with a title.
 */
export function writeResultsSection(file: string, generated: string): void {
  const section = `${START_MARKER}\n${generated.trim()}\n${END_MARKER}`;
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n\n';
  const start = text.indexOf(START_MARKER);
  const end = text.indexOf(END_MARKER);
  if (start !== -1 && end > start) text = text.slice(0, start) + section + text.slice(end + END_MARKER.length);
  else text = `${text.trimEnd()}\n\n${section}\n`;
  fs.writeFileSync(file, text);
}

export function describeMachineMarkdown(machine: Machine, settings: string, loadAtEnd: number): string {
  const packages = Object.entries(machine.packages).map(([name, version]) => `${name} ${version}`).join(', ');
  return [
    `- Machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB memory, ${machine.os}; load generator, upstream, forwarder and gateway all on it; 1-minute load average ${machine.loadAverage} at the start, ${loadAtEnd.toFixed(1)} at the end (other work on the machine).`,
    `- Node ${machine.node}; ${packages}.`,
    `- Code: commit ${machine.commit}. Settings: ${settings}.`,
  ].join('\n');
}
