// A counting semaphore: at most `size` holders at once, the rest wait in FIFO order.

export class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  /** True when acquire() would not wait. */
  get hasFree(): boolean {
    return this.held < this.size;
  }

  acquire(): Promise<void> {
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}
