/**
 * Loaded before spec/setup.ts by `npm run test:unit` (.mocharc.unit.json): marks the run as the unit
 * run, which needs neither redis-server nor chromium (spec/setup.ts `isUnitScope`).
 */
process.env.GATEWAY_TEST_SCOPE = 'unit';
