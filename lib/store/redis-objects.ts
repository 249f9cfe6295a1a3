/**
 * The Redis store's roles beside keys, admission and the ledger (redis-store.ts): the pins of Message
 * Batches and Files and the stored responses (`ResponseStore`), and the queue of budget alerts
 * (`AlertQueueStore`), as JSON text under the store's prefix (redis-keys.ts). Each alert step is one
 * Lua script (redis-scripts.ts); a pin or response is one key with its expiry.
 */
import type { Clock } from './month';
import type { RedisConnection } from './redis-connection';
import { BUCKET_RETENTION_MS, type RedisKeys } from './redis-keys';
import { CLAIM_ALERT, LEASE_ALERT, RETRY_ALERT } from './redis-scripts';
import type { AlertQueueStore, BudgetAlert, PendingBudgetAlert, PinnedObject, ResponseStore, StoredResponse } from './types';

export class RedisObjects implements ResponseStore, AlertQueueStore {
  constructor(
    private readonly connection: RedisConnection,
    private readonly keys: RedisKeys,
    private readonly clock: Clock,
  ) {}

  async claimBudgetAlert(alert: BudgetAlert): Promise<boolean> {
    const pending: PendingBudgetAlert = { alert, attempts: 0 };
    const claimed = await this.connection.run(
      CLAIM_ALERT,
      [this.keys.alertFired(alert.id), this.keys.alertsDue, this.keys.alertsPending],
      [alert.id, JSON.stringify(pending), String(this.clock()), String(BUCKET_RETENTION_MS)],
    );
    return Number(claimed) === 1;
  }

  async leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null> {
    const json = await this.connection.run(LEASE_ALERT, [this.keys.alertsDue, this.keys.alertsPending], [String(now), String(leaseMs)]);
    return typeof json === 'string' ? (JSON.parse(json) as PendingBudgetAlert) : null;
  }

  async retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void> {
    await this.connection.run(RETRY_ALERT, [this.keys.alertsDue, this.keys.alertsPending], [pending.alert.id, JSON.stringify(pending), String(dueAt)]);
  }

  async finishBudgetAlert(id: string): Promise<void> {
    await this.connection.commands.multi().zRem(this.keys.alertsDue, id).hDel(this.keys.alertsPending, id).exec();
  }

  async savePin(pin: PinnedObject, ttlMs: number): Promise<void> {
    await this.connection.commands.set(this.keys.pin(pin.kind, pin.id), JSON.stringify(pin), { PX: ttlMs });
  }

  async getPin(kind: PinnedObject['kind'], id: string): Promise<PinnedObject | null> {
    const text = await this.connection.commands.get(this.keys.pin(kind, id));
    return text === null ? null : (JSON.parse(text) as PinnedObject);
  }

  async getPins(kind: PinnedObject['kind'], ids: readonly string[]): Promise<Array<PinnedObject | null>> {
    // One GET per pin, sent together (each in its own slot on a cluster, so not one MGET).
    const texts = await Promise.all(ids.map((id) => this.connection.commands.get(this.keys.pin(kind, id))));
    return texts.map((text) => (text === null ? null : (JSON.parse(text) as PinnedObject)));
  }

  async deletePin(kind: PinnedObject['kind'], id: string): Promise<boolean> {
    return (await this.connection.commands.del(this.keys.pin(kind, id))) > 0;
  }

  async saveResponse(record: StoredResponse, ttlMs: number, maxKeyBytes?: number): Promise<boolean> {
    const json = JSON.stringify(record);
    if (maxKeyBytes !== undefined) {
      // Bytes this key stored in the current window of ttlMs, which starts at its first save (NX: a
      // save never pushes the window's end back, so a key that stores every day is never locked out;
      // at most twice the bound is alive at once). Counted up front, given back when refused.
      const bytes = Buffer.byteLength(json);
      const counter = this.keys.responseBytes(record.keyId);
      const [held] = await this.connection.commands.multi().incrBy(counter, bytes).pExpire(counter, ttlMs, 'NX').exec() as unknown as [number];
      if (Number(held) > maxKeyBytes) {
        await this.connection.commands.decrBy(counter, bytes);
        return false;
      }
    }
    await this.connection.commands.set(this.keys.response(record.id), json, { PX: ttlMs });
    return true;
  }

  async getResponse(id: string): Promise<StoredResponse | null> {
    const text = await this.connection.commands.get(this.keys.response(id));
    return text === null ? null : (JSON.parse(text) as StoredResponse);
  }

  async deleteResponse(id: string): Promise<boolean> {
    return (await this.connection.commands.del(this.keys.response(id))) > 0;
  }
}
