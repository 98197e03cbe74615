// Descriptors and the Envoy-style match of one descriptor against a domain's rule tree.
import type { Policy } from '../limiters/policy.js';

/** One entry of a request descriptor: a key and the value the request has for it. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** A rule: a descriptor node that limits (or is explicitly unlimited). */
export interface Rule {
  /** Where the rule sits: `<domain>/<key>[=<value>]/...`. Stable while the tree keeps its shape. */
  readonly id: string;
  /** Metric label, log field and limiter key namespace: the node's `name`, or derived from the id. */
  readonly name: string;
  readonly domain: string;
  /** The validated policy (camelCase), named after the rule; null for an `unlimited` rule. */
  readonly policy: Policy | null;
  /** Decide and count, but never refuse. */
  readonly shadowMode: boolean;
  /** Matched requests are not limited by this rule (nor by anything it shadows in the tree). */
  readonly unlimited: boolean;
  /** The plan the limit came from, if any. */
  readonly plan?: string;
  /** Where the rule is written. */
  readonly source: { readonly file: string; readonly line: number; readonly column: number };
}

/** A node of a compiled descriptor tree. */
export interface TreeNode {
  readonly key: string;
  /** Exact value, prefix (without its `*`), or neither (any value of the key). */
  readonly match: { readonly kind: 'exact' | 'prefix'; readonly text: string } | { readonly kind: 'any' };
  readonly rule: Rule | undefined;
  readonly children: TreeLevel;
}

/** The nodes of one tree level, indexed for lookup by key. */
export class TreeLevel {
  private readonly byKey = new Map<string, { exact: Map<string, TreeNode>; prefixes: TreeNode[]; any?: TreeNode }>();

  constructor(nodes: readonly TreeNode[]) {
    for (const node of nodes) {
      let slot = this.byKey.get(node.key);
      if (!slot) this.byKey.set(node.key, (slot = { exact: new Map(), prefixes: [] }));
      if (node.match.kind === 'exact') slot.exact.set(node.match.text, node);
      else if (node.match.kind === 'prefix') slot.prefixes.push(node);
      else slot.any = node;
    }
    // Longest prefix first: the most specific wildcard wins.
    for (const slot of this.byKey.values()) {
      slot.prefixes.sort((a, b) => prefixText(b).length - prefixText(a).length);
    }
  }

  /** The node for one entry: an exact value beats a prefix wildcard (longest first), which beats a key-only node. */
  find(entry: DescriptorEntry): TreeNode | undefined {
    const slot = this.byKey.get(entry.key);
    if (!slot) return undefined;
    return slot.exact.get(entry.value) ?? slot.prefixes.find((n) => entry.value.startsWith(prefixText(n))) ?? slot.any;
  }
}

function prefixText(node: TreeNode): string {
  return node.match.kind === 'prefix' ? node.match.text : '';
}

/**
 * Envoy semantics: walk the tree level by level, one entry per level, taking the best node at each
 * (no backtracking). The descriptor matches a rule only when every entry was consumed and the
 * last node reached carries a rule.
 */
export function walkTree(root: TreeLevel, entries: readonly DescriptorEntry[]): Rule | undefined {
  if (entries.length === 0) return undefined;
  let level = root;
  let node: TreeNode | undefined;
  for (const entry of entries) {
    node = level.find(entry);
    if (!node) return undefined;
    level = node.children;
  }
  return node?.rule;
}

/**
 * The identity a rule counts a descriptor under: `key=value` pairs joined by `&`, values
 * percent-encoded so that no choice of values (a client can set some, e.g. headers) makes two
 * descriptors one identity. Values from secret sources are hashes already; the key builder hashes
 * the whole string when it is long or has characters Redis keys must not carry.
 */
export function descriptorIdentity(entries: readonly DescriptorEntry[]): string {
  // A loop, not map().join(): this runs for every matched rule of every request.
  let out = '';
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    out += i === 0 ? `${e.key}=${encodeURIComponent(e.value)}` : `&${e.key}=${encodeURIComponent(e.value)}`;
  }
  return out;
}

/** The identity of one entry alone: descriptorIdentity([entry]) without the array. */
export function entryIdentity(entry: DescriptorEntry): string {
  return `${entry.key}=${encodeURIComponent(entry.value)}`;
}
