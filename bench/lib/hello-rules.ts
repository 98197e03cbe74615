// The rules files of the HTTP edge benches (bench/http.ts, bench/middleware-cpu.ts): what a GET /hello
// from one client matches.

/** Two rules match every /hello request: a token bucket per IP and a sliding counter per route group and IP. */
export const RULES_YAML = `
domains:
  - domain: bench
    descriptors:
      - key: ip
        name: bench-ip
        policy: { algorithm: token-bucket, capacity: 1000000000, refill_per_second: 1000000 }
      - key: route
        value: hello
        descriptors:
          - key: ip
            name: bench-route-ip
            policy: { algorithm: sliding-counter, limit: 1000000000, window: 1m }
route_groups:
  hello: ["/hello"]
http:
  domain: bench
  descriptors: [[ip], [route, ip]]
queues:
  - name: bench
    rate_per_second: 10
    capacity: 100
    key: body
    handler: { type: http, url: "http://127.0.0.1:9/never-called" }
`;

/**
 * Three rules match every /hello request: the two above and a fixed window per route group, on the
 * `route: hello` entry itself (a sibling `key: route` entry without a value never matched: the entry
 * with the value wins, and it had no policy, so rules3 decided two limits until 2026-12-01).
 */
export const RULES3_YAML = RULES_YAML.replace(
  `      - key: route
        value: hello
        descriptors:`,
  `      - key: route
        value: hello
        name: bench-route
        policy: { algorithm: fixed-window, limit: 1000000000, window: 1m }
        descriptors:`,
).replace('descriptors: [[ip], [route, ip]]', 'descriptors: [[ip], [route, ip], [route]]');
