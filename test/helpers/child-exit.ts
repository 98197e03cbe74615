// Ends a helper child process once what it wrote to stdout has been handed to the pipe. A bare
// process.exit() right after a large stdout.write() (a report of thousands of job ids) cut the message
// short, and the parent saw "child exited before sending 'done'". Writes complete in order, so the
// callback of an empty write comes after every earlier one.
export function exitWhenFlushed(code: number): void {
  process.stdout.write('', () => process.exit(code));
}
