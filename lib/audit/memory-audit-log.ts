/**
 * The memory store's audit log: the entries in order and the head, kept in the state file with the
 * rest of the store (lib/store/memory-persistence.ts). One process appends, one at a time, so the
 * chain needs no lock here.
 */
import { sealAuditEntry } from './audit-chain';
import type { AuditDraft, AuditEntry, AuditHead } from './audit-types';

/** What the state file keeps of the audit log. */
export interface MemoryAuditSnapshot {
  entries: AuditEntry[];
  head: AuditHead | null;
}

export class MemoryAuditLog {
  private entries: AuditEntry[] = [];
  private head: AuditHead | null = null;

  /** Append `draft` after the head, at `now` (epoch ms). @returns the entry as kept */
  append(draft: AuditDraft, now: number): AuditEntry {
    const entry = sealAuditEntry(draft, this.head, now);
    this.entries.push(entry);
    this.head = { id: entry.id, hash: entry.hash };
    return structuredClone(entry);
  }

  /** The entries at positions `after + 1` on (ids, in an untouched log), at most `limit`, as copies. */
  read(after: number, limit: number): AuditEntry[] {
    const start = Math.max(0, Math.floor(after));
    return structuredClone(this.entries.slice(start, start + Math.max(0, Math.floor(limit))));
  }

  readHead(): AuditHead | null {
    return this.head && { ...this.head };
  }

  /** The entries themselves, not copies (an entry is never changed once kept): the state file's periodic write stays cheap. */
  snapshot(): MemoryAuditSnapshot {
    return { entries: [...this.entries], head: this.head && { ...this.head } };
  }

  /** Replace the log with a snapshot's (an absent one, from a file written before the log existed: empty). */
  restore(snapshot: MemoryAuditSnapshot | undefined): void {
    this.entries = structuredClone(snapshot?.entries ?? []);
    this.head = snapshot?.head ? { ...snapshot.head } : null;
  }
}
