/**
 * Keeps the in-memory store across a restart of a single instance, a crash (`kill -9`) included: the
 * state (keys, secret hashes, spend, usage ledger) is written to a JSON file and read back at start.
 * It is written when the server stops, at once after every key change (created, revoked, changed,
 * rotated: on disk before the admin call answers), and every MEMORY_FLUSH_INTERVAL_MS while spend
 * changes (longer when one write takes more than a tenth of that, see MEMORY_FLUSH_MAX_SHARE), so a
 * crash loses at most that much settled spend. Several instances never see each other's
 * state: that needs the Redis store.
 *
 * The request log (up to 100,000 records) goes to a JSON-lines file beside it, to which each write
 * appends only the records written since the last (a whole rewrite of the log every second cost up to
 * a tenth of the CPU; bench/RESULTS.md, "Mechanisms kept for speed"). The state file names that file
 * and how many of its bytes belong to the state, so a crash between the two writes leaves the log and
 * the spend totals equal; the log file is rewritten, under a new name, once most of it is records the
 * log has dropped. A state file written before this holds its log inline, and is read as before.
 *
 * The audit log (lib/audit/) is kept the same way, in `<state file>.audit.ndjson`: each write appends
 * the entries made since the last (entries are never dropped or changed), and the state file names
 * how many of its bytes and entries belong to the state, and the head.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MemoryStore, type MemorySnapshot } from './memory-store';
import type { AuditEntry, AuditHead, RequestLogRecord } from './types';

/**
 * Fill `store` from the state file, when there is one.
 * @returns whether a file was read
 * @throws Error when the file exists but is not a snapshot (refusing to start beats silently
 *   forgetting a month of usage)
 */
export function loadMemoryState(store: MemoryStore, file: string): boolean {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  try {
    const snapshot = JSON.parse(text) as StateFile;
    const logFile = snapshot.requestLogFile;
    const logged = logFile ? readRequestLogFile(path.join(path.dirname(file), logFile.name), logFile.bytes) : [];
    if (logFile) snapshot.spendState = { ...snapshot.spendState, requestLog: logged.slice(logFile.dropped ?? 0) };
    const auditFile = snapshot.auditLogFile;
    if (auditFile) snapshot.audit = { entries: readAuditLogFile(path.join(path.dirname(file), auditFile.name), auditFile.bytes), head: auditFile.head };
    store.restore(snapshot);
    auditFiles.set(store, auditFile ? { bytes: auditFile.bytes, entries: auditFile.entries } : null);
    logFiles.set(store, logFile ? { name: logFile.name, bytes: logFile.bytes, lines: logged.length, seq: store.requestLogSince(Infinity).next } : null);
  } catch (err) {
    throw new Error(`state file ${file} cannot be read back (${(err as Error).message}); move it away to start empty`);
  }
  removeStaleLogFiles(file, logFiles.get(store)?.name);
  return true;
}

/** Remove the request log files of `file` other than `kept` (left by a process that stopped between writes). */
function removeStaleLogFiles(file: string, kept: string | undefined): void {
  const prefix = `${path.basename(file)}.requests.`;
  for (const name of fs.readdirSync(path.dirname(file))) {
    if (name.startsWith(prefix) && name.endsWith('.jsonl') && name !== kept) fs.rmSync(path.join(path.dirname(file), name), { force: true });
  }
}

/**
 * The first `bytes` bytes of a request log file, one record per line; what lies past them (appended
 * by a write whose state file never replaced the old one) is cut off, so the next append follows them.
 * @throws Error when the file is missing or shorter than `bytes`
 */
function readRequestLogFile(file: string, bytes: number): RequestLogRecord[] {
  const data = fs.readFileSync(file);
  if (data.length < bytes) throw new Error(`request log file ${file} is shorter than the state says`);
  if (data.length > bytes) fs.truncateSync(file, bytes);
  const text = data.subarray(0, bytes).toString('utf8');
  return text === '' ? [] : text.slice(0, -1).split('\n').map((line) => JSON.parse(line) as RequestLogRecord);
}

/**
 * The first `bytes` bytes of an audit log file, one entry per line; what lies past them is cut off.
 * @throws Error when the file is missing or shorter than `bytes`
 */
function readAuditLogFile(file: string, bytes: number): AuditEntry[] {
  const data = fs.readFileSync(file);
  if (data.length < bytes) throw new Error(`audit log file ${file} is shorter than the state says`);
  if (data.length > bytes) fs.truncateSync(file, bytes);
  const text = data.subarray(0, bytes).toString('utf8');
  return text === '' ? [] : text.slice(0, -1).split('\n').map((line) => JSON.parse(line) as AuditEntry);
}

/**
 * Each store's audit log file as last written (bytes, entries; `torn` after a failed append, whose
 * part-written text the next write cuts off first); null or absent: none yet, the next write writes it whole.
 */
const auditFiles = new WeakMap<MemoryStore, { bytes: number; entries: number; torn?: boolean } | null>();

/**
 * Append the audit entries made since the last write to `<file>.audit.ndjson` (the whole log when this
 * process has written or read none: a fresh state). The bytes a state file names are never rewritten.
 * @returns what the state file records of it
 * @throws Error when the file cannot be written (the next write tries again from the same point)
 */
function saveAuditLog(store: MemoryStore, file: string): NonNullable<StateFile['auditLogFile']> {
  const name = `${path.basename(file)}.audit.ndjson`;
  const target = path.join(path.dirname(file), name);
  const known = auditFiles.get(store) ?? null;
  const { entries: fresh, head } = store.auditSince(known?.entries ?? 0);
  const text = formatLines(fresh);
  try {
    if (!known) fs.writeFileSync(target, text, { mode: 0o600 });
    else {
      if (known.torn) fs.truncateSync(target, known.bytes);
      if (text) fs.appendFileSync(target, text, { mode: 0o600 });
    }
  } catch (err) {
    if (known) auditFiles.set(store, { ...known, torn: true });
    throw err;
  }
  const written = { bytes: (known?.bytes ?? 0) + Buffer.byteLength(text), entries: (known?.entries ?? 0) + fresh.length };
  auditFiles.set(store, written);
  return { name, ...written, head };
}

/** How often settled spend is written to the state file while it changes, in ms (what a crash can lose at most). */
export const MEMORY_FLUSH_INTERVAL_MS = 1000;

/**
 * The periodic write takes at most this share of the time: after a write that took `d` ms, the next
 * waits at least `d / MEMORY_FLUSH_MAX_SHARE` (a state with a large request log takes longer to write).
 */
export const MEMORY_FLUSH_MAX_SHARE = 0.1;

/**
 * Keep the state file current while the gateway runs (see the module comment).
 * @param onError called when a periodic write fails (the next one tries again); a write after a key
 *   change that fails throws from the store call that changed the key, so the admin call fails loudly
 * @returns stop(): no more writes (the caller writes the last state itself)
 */
export function keepMemoryState(store: MemoryStore, file: string, onError: (err: Error) => void, intervalMs = MEMORY_FLUSH_INTERVAL_MS): () => void {
  let saved = store.changes;
  const save = () => {
    saved = store.changes;
    saveMemoryState(store, file);
  };
  store.onKeysChanged = save;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (delayMs: number) => {
    timer = setTimeout(tick, delayMs);
    timer.unref();
  };
  function tick() {
    if (store.changes === saved) return schedule(intervalMs);
    const started = performance.now();
    try {
      save();
    } catch (err) {
      onError(err as Error);
    }
    schedule(Math.max(intervalMs, (performance.now() - started) / MEMORY_FLUSH_MAX_SHARE));
  }
  schedule(intervalMs);
  return () => {
    clearTimeout(timer);
    timer = undefined;
    store.onKeysChanged = undefined;
  };
}

/** What the state file holds: the store's snapshot and, once written so, where its request log is. */
interface StateFile extends MemorySnapshot {
  /**
   * The request log file (a name in the state file's directory), its bytes that belong to this state,
   * and how many of its first lines are records the log has dropped since.
   */
  requestLogFile?: { name: string; bytes: number; dropped?: number };
  /** The audit log file (a name in the state file's directory), its bytes and entries that belong to this state, and its head. */
  auditLogFile?: { name: string; bytes: number; entries: number; head: AuditHead | null };
}

/** A store's request log file as last written: name, bytes and lines, and the sequence number of the next record to append. */
interface RequestLogFile {
  name: string;
  bytes: number;
  lines: number;
  seq: number;
}

/** Each store's request log file (null or absent: none yet, the next write starts one). */
const logFiles = new WeakMap<MemoryStore, RequestLogFile | null>();

/** Request log files started by this process (part of a new file's name). */
let logFileCount = 0;

/**
 * Write the store's state to `file` (through a temporary file and a rename, so a reader never sees
 * half), after appending the request log's new records to its file (see the module comment).
 */
export function saveMemoryState(store: MemoryStore, file: string): void {
  const dir = path.dirname(file);
  let log = logFiles.get(store) ?? null;
  const previous = log?.name;
  const fresh = store.requestLogSince(log?.seq ?? 0);
  // A new file when there is none yet, or when records the log has dropped would be most of the old one.
  if (!log || log.lines + fresh.records.length - fresh.kept > fresh.kept + 1024) {
    const name = `${path.basename(file)}.requests.${process.pid}-${Date.now()}-${(logFileCount += 1)}.jsonl`;
    const all = store.requestLogSince(0);
    const text = formatLines(all.records);
    fs.writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    log = { name, bytes: Buffer.byteLength(text), lines: all.records.length, seq: all.next };
  } else if (fresh.records.length > 0) {
    const text = formatLines(fresh.records);
    try {
      fs.appendFileSync(path.join(dir, log.name), text, { mode: 0o600 });
    } catch (err) {
      // Part of the text may be in the file: the next write starts a new one.
      logFiles.set(store, null);
      throw err;
    }
    log = { name: log.name, bytes: log.bytes + Buffer.byteLength(text), lines: log.lines + fresh.records.length, seq: fresh.next };
  }
  logFiles.set(store, log);
  const audit = saveAuditLog(store, file);
  const state: StateFile = store.snapshot();
  if (state.spendState) state.spendState.requestLog = [];
  delete state.audit;
  state.auditLogFile = audit;
  state.requestLogFile = { name: log.name, bytes: log.bytes, dropped: log.lines - fresh.kept };
  const temporary = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(temporary, JSON.stringify(state), { mode: 0o600 });
  fs.renameSync(temporary, file);
  if (previous !== undefined && previous !== log.name) fs.rmSync(path.join(dir, previous), { force: true });
}

/** Records as JSON lines, each ending in a newline (JSON.stringify escapes the newlines inside strings). */
function formatLines(records: ReadonlyArray<RequestLogRecord | AuditEntry>): string {
  let text = '';
  for (const record of records) text += `${JSON.stringify(record)}\n`;
  return text;
}
