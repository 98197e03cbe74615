// Path normalisation and route groups: aliases of one route count as one.
import { describe, expect, it } from 'vitest';
import { checkRoutePattern, normalizePath, RouteGroups } from '../../../src/request/route-groups.js';

describe('normalizePath', () => {
  it.each([
    ['/v1/orders', '/v1/orders'],
    ['/v1/Orders/', '/v1/Orders'],
    ['/v1//orders', '/v1/orders'],
    ['/v1/orders%2F', '/v1/orders'],
    ['/v1%2Forders', '/v1/orders'],
    ['/v1/./orders', '/v1/orders'],
    ['/v1/x/../orders', '/v1/orders'],
    ['/v1/%2E%2E/v1/orders', '/v1/orders'],
    ['/../../etc', '/etc'],
    ['/v1/orders?page=2#top', '/v1/orders'],
    ['/v1/orders%252F', '/v1/orders%2F'],
    ['/v1/caf%C3%A9', '/v1/café'],
    ['/v1/bad%zz', '/v1/bad%zz'],
    ['/v1/half%C3', '/v1/halfÃ'],
    ['', '/'],
    ['/', '/'],
    ['///', '/'],
  ])('%j -> %j', (raw, expected) => {
    expect(normalizePath(raw)).toBe(expected);
  });
});

describe('RouteGroups', () => {
  const groups = new RouteGroups({
    export: { paths: ['/v1/export'], methods: ['POST'] },
    order: { paths: ['/v1/orders/:id'] },
    orders: { paths: ['/v1/orders', '/v1/orders/**'] },
    search: { paths: ['/v1/*/search'] },
  });

  it.each([
    ['GET', '/v1/orders', 'orders'],
    ['GET', '/v1/Orders/', 'orders'],
    ['GET', '/v1//orders', 'orders'],
    ['GET', '/v1/orders%2F', 'orders'],
    ['GET', '/v1/./orders', 'orders'],
    ['GET', '/V1/ORDERS?x=1', 'orders'],
    ['get', '/v1/orders/42', 'order'],
    ['GET', '/v1/orders/42/items/7', 'orders'],
    ['POST', '/v1/export', 'export'],
    ['post', '/v1/Export/', 'export'],
    ['GET', '/v1/export', undefined],
    ['GET', '/v1/books/search', 'search'],
    ['GET', '/v1/search', undefined],
    ['GET', '/v2/orders', undefined],
    ['GET', '/', undefined],
  ])('%s %s -> %s', (method, path, group) => {
    expect(groups.match(method, path)).toBe(group);
  });

  it('tries groups in order', () => {
    expect(groups.names).toEqual(['export', 'order', 'orders', 'search']);
    const greedy = new RouteGroups({ all: { paths: ['/**'] }, orders: { paths: ['/v1/orders'] } });
    expect(greedy.match('GET', '/v1/orders')).toBe('all');
  });
});

describe('checkRoutePattern', () => {
  it.each([
    ['/v1/orders/**', undefined],
    ['/v1/:id', undefined],
    ['v1/orders', "pattern 'v1/orders' must start with '/'"],
    ['/v1/**/items', "'**' may only be the last segment of '/v1/**/items'"],
  ])('%s', (pattern, problem) => {
    expect(checkRoutePattern(pattern)).toBe(problem);
  });
});
