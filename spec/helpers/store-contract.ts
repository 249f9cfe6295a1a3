/**
 * The behaviour every GatewayStore owes, run against each implementation (memory and Redis): one suite
 * per role of lib/store/types.ts (store-contract/), each typed with the roles it uses.
 */
import { describeAlertQueueStoreContract } from './store-contract/alert-queue';
import { describeAuditLogStoreContract } from './store-contract/audit-log';
import { describeDeclaredKeyContract } from './store-contract/declared-keys';
import { describeKeyStoreContract } from './store-contract/keys';
import { describeLedgerStoreContract } from './store-contract/ledger';
import { describeRequestLogStoreContract } from './store-contract/request-log';
import { describeResponseStoreContract } from './store-contract/responses';
import { describeTeamCapsContract } from './store-contract/team-caps';
import { describeTeamStoreContract } from './store-contract/teams';
import { T0, type ContractFixture } from './store-contract/shared';
import type { GatewayStore } from '../../lib/store/types';
import type { WithTeamStore } from '../../lib/store/people-types';

export { expectRejection } from './store-contract/shared';

export type StoreFixture = ContractFixture<GatewayStore>;

/** Register the contract tests; `open` makes a fresh, empty store whose clock starts at `T0`. */
export function describeStoreContract(open: () => Promise<StoreFixture>, close: (fixture: StoreFixture) => Promise<void>): void {
  let f: StoreFixture;
  beforeEach(async () => {
    f = await open();
    f.setNow(T0);
  });
  afterEach(async () => close(f));
  const current = () => f;

  describe('KeyStore', () => describeKeyStoreContract(current));
  describe('KeyStore: keys declared in config.json', () => describeDeclaredKeyContract(current));
  describe('LedgerStore (admission and ledger)', () => describeLedgerStoreContract(current));
  describe('LedgerStore: caps at every level (key, member, team)', () => describeTeamCapsContract(current));
  describe('RequestLogStore', () => describeRequestLogStoreContract(current));
  describe('AlertQueueStore', () => describeAlertQueueStoreContract(current));
  describe('ResponseStore (stored responses and pins)', () => describeResponseStoreContract(current));
  describe('AuditLogStore', () => describeAuditLogStoreContract(current));
  describe('TeamStore (teams made through the admin API)', () => describeTeamStoreContract(current as () => ContractFixture<WithTeamStore>));
}
