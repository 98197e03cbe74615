// What a soak run found: violations (a documented guarantee broken: the run fails) and notes (documented
// behaviour worth a count: the run passes). Each kind is counted in full and keeps a few examples.

/** How many examples a kind keeps: enough to start from, short enough to read. */
const EXAMPLES_PER_KIND = 5;

export interface Finding {
  kind: string;
  count: number;
  /** Why it is a violation or a note: the guarantee or the documented behaviour it is held to. */
  rule: string;
  examples: unknown[];
}

class FindingList {
  private readonly byKind = new Map<string, Finding>();

  add(kind: string, rule: string, example?: unknown, count = 1): void {
    let finding = this.byKind.get(kind);
    if (!finding) this.byKind.set(kind, (finding = { kind, count: 0, rule, examples: [] }));
    finding.count += count;
    if (example !== undefined && finding.examples.length < EXAMPLES_PER_KIND) finding.examples.push(example);
  }

  list(): Finding[] {
    return [...this.byKind.values()];
  }
}

export class Findings {
  private readonly violations = new FindingList();
  private readonly notes = new FindingList();

  /** A broken guarantee of docs/algorithms.md: `rule` names it. */
  violation(kind: string, rule: string, example?: unknown): void {
    this.violations.add(kind, rule, example);
  }

  /** Documented behaviour, counted: `count` occurrences at once (a lane count, a job count). */
  note(kind: string, rule: string, example?: unknown, count = 1): void {
    this.notes.add(kind, rule, example, count);
  }

  get violated(): boolean {
    return this.violations.list().length > 0;
  }

  report(): { violations: Finding[]; notes: Finding[] } {
    return { violations: this.violations.list(), notes: this.notes.list() };
  }
}
