/** What the browser tests (spec/browser/) launch chromium with. */

/**
 * Loopback only: every host name resolves to nothing but the gateway's 127.0.0.1 (which also stops
 * the IPv6 reachability probe), and the browser's own services (updates, sync, safe browsing, DNS
 * prefetch, DNS over HTTPS, metrics) are off.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  '--disable-features=AsyncDns,DnsOverHttps,MediaRouter,OptimizationHints,Translate,NetworkTimeServiceQuerying',
  '--dns-prefetch-disable', '--no-pings', '--disable-domain-reliability', '--disable-client-side-phishing-detection',
  '--disable-default-apps', '--disable-breakpad', '--metrics-recording-only', '--safebrowsing-disable-auto-update',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp', '--force-webrtc-ip-handling-policy',
];
